"""The performance profile of the compared runs: F(tau) = fraction of tasks whose success
rate exceeds tau, one curve per run, with pointwise 95% bands from the bootstrap over
episodes within each task (`stats.episode_bootstrap`)."""

from __future__ import annotations

import io
from collections.abc import Sequence
from pathlib import Path

import numpy as np
from matplotlib.figure import Figure

from metasim.guards import PNG_SOFTWARE, write_atomic
from metasim.report.data import Run
from metasim.report.plots import COLORS, plt, to_data_uri
from metasim.stats.episode_bootstrap import profile_bands, resample_one

TAUS = np.linspace(0.0, 1.0, 101, dtype=np.float64)


def run_profile(
    run: Run, tasks: Sequence[str], reps: int = 2000, seed: int = 0
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """F(tau) on TAUS over `tasks` for one run, with its band: three ``(101,)`` arrays."""
    ks = [sum(e.success for e in run.episodes if e.task == t) for t in tasks]
    ns = [sum(1 for e in run.episodes if e.task == t) for t in tasks]
    point, boot = resample_one(ks, ns, reps, seed)
    return profile_bands(point, boot, TAUS, 0.95)


def profile_figure(
    runs: Sequence[Run], tasks: Sequence[str], reps: int = 2000, seed: int = 0
) -> Figure:
    """The matplotlib figure of every run's profile over `tasks`."""
    fig, ax = plt.subplots(figsize=(5.5, 3.4))
    for i, run in enumerate(runs):
        frac, lo, hi = run_profile(run, tasks, reps, seed)
        color = COLORS[i % len(COLORS)]
        ax.step(TAUS, frac, where="post", color=color, label=run.label)
        ax.fill_between(TAUS, lo, hi, step="post", color=color, alpha=0.15, linewidth=0)
    ax.set_xlabel("success-rate threshold τ")
    ax.set_ylabel(f"fraction of {len(tasks)} tasks > τ")
    ax.set_ylim(-0.02, 1.02)
    ax.legend(fontsize=8)
    return fig


def profile_png(runs: Sequence[Run], tasks: Sequence[str], path: Path, seed: int = 0) -> Path:
    """Write the profile figure as a PNG to `path` (`write_atomic`: a new file renamed
    over it, never written through a link or into a pipe)."""
    fig = profile_figure(runs, tasks, seed=seed)
    buf = io.BytesIO()
    fig.savefig(
        buf, format="png", dpi=110, bbox_inches="tight", metadata={"Software": PNG_SOFTWARE}
    )
    plt.close(fig)
    write_atomic(path, buf.getvalue())
    return path


def profile_uri(runs: Sequence[Run], tasks: Sequence[str], seed: int = 0) -> str:
    """The profile figure as a PNG data URI (for the report)."""
    return to_data_uri(profile_figure(runs, tasks, seed=seed))
