"""Matplotlib figures of the report, each returned as a PNG data URI (self-contained).

Every function takes plain numbers (see analysis.py) and one series per run, so the
same plot shows one run or two runs compared.
"""

from __future__ import annotations

import base64
import io
from collections.abc import Sequence

import matplotlib

matplotlib.use("Agg")

import matplotlib.pyplot as plt
import numpy as np
from matplotlib.figure import Figure

from metasim.report.analysis import LevelStat, fmt_level

COLORS = ("#1f77b4", "#d62728", "#2ca02c", "#9467bd")


def to_data_uri(fig: Figure) -> str:
    """The figure as a base64 PNG data URI (the figure is closed)."""
    buf = io.BytesIO()
    fig.savefig(buf, format="png", dpi=96, bbox_inches="tight")
    plt.close(fig)
    return "data:image/png;base64," + base64.b64encode(buf.getvalue()).decode("ascii")


def _errs(values: np.ndarray, low: np.ndarray, high: np.ndarray) -> np.ndarray:
    """(2, N) non-negative error-bar lengths for matplotlib."""
    return np.clip(np.stack([values - low, high - values]), 0.0, None)


def task_bars(series: Sequence[tuple[str, list[str], np.ndarray, np.ndarray]]) -> str:
    """Success rate per task with its 95% interval; series = (label, tasks, rates (T,),
    intervals (T, 2))."""
    tasks = list(dict.fromkeys(t for _, ts, _, _ in series for t in ts))
    fig, ax = plt.subplots(figsize=(max(4.0, 1.1 * len(tasks) + 2), 3.2))
    width = 0.8 / len(series)
    for i, (label, ts, rates, ci) in enumerate(series):
        x = np.asarray([tasks.index(t) for t in ts]) + (i - (len(series) - 1) / 2) * width
        ax.bar(
            x,
            rates,
            width,
            yerr=_errs(rates, ci[:, 0], ci[:, 1]),
            label=label,
            color=COLORS[i % len(COLORS)],
            capsize=3,
        )
    ax.set_xticks(range(len(tasks)), tasks, rotation=20, ha="right")
    ax.set_ylim(0, 1.05)
    ax.set_ylabel("success rate (95% CI)")
    ax.legend(fontsize=8, loc="lower right")
    return to_data_uri(fig)


def sensitivity_bars(series: Sequence[tuple[str, list[LevelStat]]]) -> str:
    """Worst-level success drop vs nominal per factor with its 95% interval."""
    factors = list(dict.fromkeys(s.factor for _, stats in series for s in stats))
    fig, ax = plt.subplots(figsize=(6.5, 0.45 * len(factors) * len(series) + 1.2))
    height = 0.8 / len(series)
    for i, (label, stats) in enumerate(series):
        by = {s.factor: s for s in stats}
        present = [f for f in factors if f in by]
        y = np.asarray([factors.index(f) for f in present]) + (i - (len(series) - 1) / 2) * height
        d = np.asarray([by[f].diff for f in present])
        lo = np.asarray([by[f].diff_low for f in present])
        hi = np.asarray([by[f].diff_high for f in present])
        ax.barh(
            y,
            d,
            height,
            xerr=_errs(d, lo, hi),
            color=COLORS[i % len(COLORS)],
            label=label,
            capsize=3,
        )
        for yy, f in zip(y, present, strict=True):
            ax.text(0.22, yy, f"at {fmt_level(by[f].level)}", va="center", fontsize=7)
    ax.axvline(0, color="k", lw=0.8)
    ax.set_yticks(range(len(factors)), factors)
    ax.invert_yaxis()
    ax.set_xlim(-1.05, 0.6)
    ax.set_xlabel("success at worst level − success at nominal (95% CI)")
    ax.legend(fontsize=8, loc="lower left")
    return to_data_uri(fig)


def heatmap(matrix: np.ndarray, factors: Sequence[str], tasks: Sequence[str], title: str) -> str:
    """(F, T) worst-level drop per factor and task, annotated, red = worse."""
    fig, ax = plt.subplots(figsize=(1.2 * len(tasks) + 2.5, 0.45 * len(factors) + 1.4))
    im = ax.imshow(np.ma.masked_invalid(matrix), cmap="RdBu", vmin=-1, vmax=1, aspect="auto")
    for (i, j), v in np.ndenumerate(matrix):
        text = "–" if np.isnan(v) else f"{v:+.2f}"
        ax.text(
            j,
            i,
            text,
            ha="center",
            va="center",
            fontsize=8,
            color="white" if abs(np.nan_to_num(v)) > 0.6 else "black",
        )
    ax.set_xticks(range(len(tasks)), tasks, rotation=20, ha="right")
    ax.set_yticks(range(len(factors)), factors)
    ax.set_title(title, fontsize=9)
    fig.colorbar(im, ax=ax, label="Δ success vs nominal")
    return to_data_uri(fig)


def factor_curves(series: Sequence[tuple[str, dict[str, list[LevelStat]]]]) -> str:
    """One panel per factor: success rate (95% CI) against the factor's level."""
    factors = list(dict.fromkeys(f for _, by in series for f in by))
    cols = min(3, max(1, len(factors)))
    rows = -(-len(factors) // cols)
    fig, axes = plt.subplots(rows, cols, figsize=(3.4 * cols, 2.6 * rows), squeeze=False)
    for ax, factor in zip(axes.flat, factors, strict=False):
        for i, (label, by) in enumerate(series):
            stats = by.get(factor, [])
            if not stats:
                continue
            x, numeric = _positions([s.level for s in stats])
            order = np.argsort(x)
            rate = np.asarray([s.rate for s in stats])[order]
            lo = np.asarray([s.low for s in stats])[order]
            hi = np.asarray([s.high for s in stats])[order]
            ax.errorbar(
                x[order],
                rate,
                yerr=_errs(rate, lo, hi),
                marker="o",
                capsize=3,
                color=COLORS[i % len(COLORS)],
                label=label,
            )
            if not numeric:
                ax.set_xticks(x, [fmt_level(s.level) for s in stats])
        ax.set_title(factor, fontsize=9)
        ax.set_ylim(-0.05, 1.05)
        ax.set_ylabel("success", fontsize=8)
    for ax in list(axes.flat)[len(factors) :]:
        ax.set_visible(False)
    axes.flat[0].legend(fontsize=7)
    fig.tight_layout()
    return to_data_uri(fig)


def _positions(levels: Sequence[object]) -> tuple[np.ndarray, bool]:
    """x positions of levels: their values when all are numbers, else their indices."""
    if all(isinstance(v, int | float) and not isinstance(v, bool) for v in levels):
        return np.asarray(levels, dtype=np.float64), True
    return np.arange(len(levels), dtype=np.float64), False


def profile_plot(series: Sequence[tuple[str, np.ndarray]], what: str) -> str:
    """Performance profiles F(tau) = fraction of scores > tau, one curve per run."""
    from metasim.report.analysis import profile

    taus = np.linspace(0.0, 1.0, 101)
    fig, ax = plt.subplots(figsize=(5.0, 3.2))
    for i, (label, scores) in enumerate(series):
        ax.step(
            taus,
            profile(scores, taus),
            where="post",
            color=COLORS[i % len(COLORS)],
            label=f"{label} ({scores.size} scores)",
        )
    ax.set_xlabel("success-rate threshold τ")
    ax.set_ylabel(f"fraction of {what} > τ")
    ax.set_ylim(-0.02, 1.02)
    ax.legend(fontsize=8)
    return to_data_uri(fig)
