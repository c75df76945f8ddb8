"""The per-task and per-cell parts of a run's summary: success rates with their
intervals, each cell's per-task results, and what the adaptive stopping rule used and
saved per cell."""

from __future__ import annotations

from typing import Any

from metasim.evaluate.config import EvalConfig
from metasim.evaluate.records import CellSummary, EpisodeRecord, TaskSummary
from metasim.perturb import Cell
from metasim.stats import success_interval


def summarize(records: list[EpisodeRecord], tasks: list[str]) -> dict[str, TaskSummary]:
    """Per-task success rate with its 95% Wilson interval, progress and steps."""
    out: dict[str, TaskSummary] = {}
    for task in tasks:
        rows = [r for r in records if r.task == task]
        n = len(rows)
        k = sum(r.success for r in rows)
        lo, hi = success_interval(k, n)
        out[task] = TaskSummary(
            success_rate=k / n if n else 0.0,
            n=n,
            successes=k,
            ci95=(lo, hi),
            mean_progress=sum(r.progress for r in rows) / n if n else 0.0,
            mean_steps=sum(r.steps for r in rows) / n if n else 0.0,
            mean_steps_to_success=(sum(r.steps for r in rows if r.success) / k if k else None),
            errors=sum(r.error is not None for r in rows),
        )
    return out


def adaptive_summary(cfg: EvalConfig, cells: dict[str, Any]) -> dict[str, Any] | None:
    if not cfg.adaptive:
        return None
    used = sum(c["episodes"] for t in cells.values() for c in t.values())
    saved = sum(c["saved"] for t in cells.values() for c in t.values())
    return {
        "rule": {
            "width": cfg.adaptive_width,
            "min_episodes": cfg.adaptive_min,
            "max_episodes": cfg.episodes,
            "interval": "wilson 95%",
        },
        "episodes_used": used,
        "episodes_saved": saved,
        "cells": cells,
    }


def summarize_cells(
    records: list[EpisodeRecord], tasks: list[str], cells: list[Cell]
) -> dict[str, CellSummary]:
    """Per cell: its factor values and the per-task summary of its episodes."""
    return {
        cell.id: CellSummary(
            factors=cell.values,
            tasks=summarize([r for r in records if r.cell == cell.id], tasks),
        )
        for cell in cells
    }
