"""Statistics of evaluation results: intervals, cells, aggregates, sensitivity, stopping.

The stable API is what ``__all__`` lists; see shared METRICS.md for the definitions.
"""

from metasim.stats.adaptive import (
    AdaptiveResult,
    Savings,
    StoppingRule,
    episodes_saved,
    run_adaptive,
)
from metasim.stats.aggregates import (
    Bands,
    Interval,
    Profile,
    aggregate_summary,
    iqm,
    mean,
    median,
    optimality_gap,
    performance_profile,
    probability_of_improvement,
    probability_of_improvement_ci,
    score_distribution,
    stratified_bootstrap_bands,
    stratified_bootstrap_ci,
)
from metasim.stats.cells import CellSummary, cell_summary, summarize_cells
from metasim.stats.intervals import success_interval, success_intervals
from metasim.stats.sensitivity import (
    FactorEffect,
    LevelDifference,
    VarianceShares,
    level_differences,
    main_effects,
    newcombe_interval,
    rank_factors,
    sensitivity_summary,
    variance_shares,
)

__all__ = [
    "AdaptiveResult",
    "Bands",
    "CellSummary",
    "FactorEffect",
    "Interval",
    "LevelDifference",
    "Profile",
    "Savings",
    "StoppingRule",
    "VarianceShares",
    "aggregate_summary",
    "cell_summary",
    "episodes_saved",
    "iqm",
    "level_differences",
    "main_effects",
    "mean",
    "median",
    "newcombe_interval",
    "optimality_gap",
    "performance_profile",
    "probability_of_improvement",
    "probability_of_improvement_ci",
    "rank_factors",
    "run_adaptive",
    "score_distribution",
    "sensitivity_summary",
    "stratified_bootstrap_bands",
    "stratified_bootstrap_ci",
    "success_interval",
    "success_intervals",
    "summarize_cells",
    "variance_shares",
]
