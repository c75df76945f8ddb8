"""Scatter plot of a study: simulated success on x, real on y, one color per task."""

from __future__ import annotations

import io
from pathlib import Path

import numpy as np
from matplotlib.axes import Axes
from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.figure import Figure

from metasim.correlate.study import Study, TaskData
from metasim.guards import PNG_SOFTWARE, write_atomic
from metasim.stats import success_interval


def _errors(rate: np.ndarray, n: np.ndarray) -> np.ndarray:
    """Wilson 95% half-widths (2, N) for error bars; 0 where the episode count is unknown."""
    out = np.zeros((2, len(rate)))
    for i, (p, k) in enumerate(zip(rate, n, strict=True)):
        if k > 0:
            lo, hi = success_interval(round(float(p) * int(k)), int(k))
            out[:, i] = max(p - lo, 0.0), max(hi - p, 0.0)
    return out


def _draw_task(ax: Axes, data: TaskData, color: str, summary: str) -> None:
    ax.errorbar(
        data.sim,
        data.real,
        xerr=_errors(data.sim, data.sim_n),
        yerr=_errors(data.real, data.real_n),
        fmt="o",
        color=color,
        ecolor=color,
        elinewidth=0.8,
        alpha=0.85,
        capsize=2,
        label=f"{data.task} ({summary})",
    )


def scatter_plot(
    study: Study, path: str | Path, pearson: dict[str, float | None] | None = None
) -> Path:
    """Write a PNG: one point per (task, policy) with 95% bars, the identity line dashed.

    `pearson` (task -> r) is shown in the legend when given.
    """
    fig = Figure(figsize=(6.0, 5.5), dpi=120)
    FigureCanvasAgg(fig)
    ax = fig.add_subplot()
    ax.plot([0, 1], [0, 1], linestyle="--", color="0.5", linewidth=1, label="sim = real")
    for i, data in enumerate(study.tasks()):
        r = (pearson or {}).get(data.task)
        summary = f"N={len(data.policies)}" + (f", r={r:.2f}" if r is not None else "")
        _draw_task(ax, data, f"C{i % 10}", summary)  # C0..C9: the tab10 colors
    ax.set_xlim(-0.03, 1.03)
    ax.set_ylim(-0.03, 1.03)
    ax.set_aspect("equal")
    ax.set_xlabel("simulated success rate")
    ax.set_ylabel("real success rate")
    ax.set_title("Sim-to-real agreement (bars: 95% Wilson intervals)", fontsize=10)
    ax.grid(alpha=0.3)
    ax.legend(fontsize=7, loc="upper left")
    fig.tight_layout()
    out = Path(path)
    out.parent.mkdir(parents=True, exist_ok=True)
    buf = io.BytesIO()
    fig.savefig(buf, format="png", metadata={"Software": PNG_SOFTWARE})
    write_atomic(out, buf.getvalue())  # renamed over it: never into a link or a pipe
    return out
