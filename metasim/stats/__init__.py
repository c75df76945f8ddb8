"""Statistics of evaluation results: intervals (aggregates and sensitivity follow)."""

from metasim.stats.intervals import success_interval

__all__ = ["success_interval"]
