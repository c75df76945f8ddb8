"""Sim-to-real correlation: do simulated success rates predict real ones?

Metrics (`pearson`, `spearman`, `kendall`, `mmrv`), study loading (CSV, or run folders
plus real results), bootstrap intervals that account for finite episodes, a scatter plot,
and a Bradley–Terry ranking from head-to-head outcomes. See shared METRICS.md.
"""

from metasim.correlate.analysis import BootstrapSpec, analyze
from metasim.correlate.bradley_terry import BTFit, Pairwise, fit_bradley_terry, load_pairwise_csv
from metasim.correlate.metrics import kendall, mmrv, pearson, spearman
from metasim.correlate.runs import load_study_runs
from metasim.correlate.study import Entry, Study, load_study_csv

__all__ = [
    "BTFit",
    "BootstrapSpec",
    "Entry",
    "Pairwise",
    "Study",
    "analyze",
    "fit_bradley_terry",
    "kendall",
    "load_pairwise_csv",
    "load_study_csv",
    "load_study_runs",
    "mmrv",
    "pearson",
    "spearman",
]
