"""The evaluation report: one self-contained HTML page for a run folder (or two)."""

from metasim.report.build import build_report
from metasim.report.data import Run, load_run

__all__ = ["Run", "build_report", "load_run"]
