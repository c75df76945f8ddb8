"""One flat row per run folder: what `metasim runs` lists and the `runs` SQL view holds.

Fields missing from an older manifest (checkpoint, renderer) are None. `episodes_planned`
is episodes x tasks x cells (the maximum, for an adaptive run); `successes` and
`success_rate` pool every task and cell of summary.json.
"""

from __future__ import annotations

import json
from typing import Any

from metasim.index.scan import RunEntry, lock_held

# Column -> DuckDB type of the `runs` view, in order.
COLUMNS = {
    "run": "VARCHAR",
    "path": "VARCHAR",
    "suite": "VARCHAR",
    "tasks": "VARCHAR[]",
    "policy_kind": "VARCHAR",
    "policy_name": "VARCHAR",
    "checkpoint_path": "VARCHAR",
    "checkpoint_sha256": "VARCHAR",
    "backend": "VARCHAR",
    "renderer": "VARCHAR",
    "perturbation": "VARCHAR",
    "cells": "BIGINT",
    "seed": "BIGINT",
    "episodes_per_cell": "BIGINT",
    "num_envs": "BIGINT",
    "metasim_version": "VARCHAR",
    "mujoco_version": "VARCHAR",
    "python_version": "VARCHAR",
    "git_commit": "VARCHAR",
    "created": "VARCHAR",
    "episodes_done": "BIGINT",
    "episodes_planned": "BIGINT",
    "successes": "BIGINT",
    "success_rate": "DOUBLE",
    "status": "VARCHAR",
    "manifest": "JSON",
}


def _dict(value: Any) -> dict[str, Any]:
    return value if isinstance(value, dict) else {}


def _int(value: Any) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def _str(value: Any) -> str | None:
    return None if value is None else str(value)


def _pooled(summary: dict[str, Any] | None) -> tuple[int | None, float | None]:
    """Successes and rate over every task of summary.json (None without a summary)."""
    tasks = _dict(_dict(summary).get("tasks"))
    k = n = 0
    for row in tasks.values():
        row = _dict(row)
        rows_n, rows_k = _int(row.get("n")), _int(row.get("successes"))
        if rows_n is None or rows_k is None:
            return None, None
        k, n = k + rows_k, n + rows_n
    return (k, k / n) if n else (None, None)


def status(entry: RunEntry, done: int | None, planned: int | None) -> str:
    if entry.problems:
        return "damaged: " + "; ".join(entry.problems)
    held = lock_held(entry.path)
    if held:
        return "running"
    if entry.summary is None:
        return "incomplete (no summary.json)" if held is False else "unknown (no summary.json)"
    if done is not None and planned is not None and done < planned:
        adaptive = _dict(entry.config).get("adaptive") is True
        return "complete (adaptive)" if adaptive else "incomplete"
    return "complete"


def describe(entry: RunEntry) -> dict[str, Any]:
    """The row of one run folder (keys: COLUMNS)."""
    m, cfg = entry.manifest, entry.config
    suite, policy = _dict(cfg.get("suite")), _dict(cfg.get("policy"))
    versions, ckpt = _dict(m.get("versions")), _dict(m.get("checkpoint"))
    tasks = m.get("tasks") if isinstance(m.get("tasks"), list) else suite.get("tasks")
    tasks = [str(t) for t in tasks] if isinstance(tasks, list) else None
    cells = len(m["cells"]) if isinstance(m.get("cells"), list) else None
    per_cell = _int(cfg.get("episodes"))
    planned = per_cell * len(tasks) * cells if per_cell and tasks and cells else None
    successes, rate = _pooled(entry.summary)
    return {
        "run": entry.run,
        "path": str(entry.path),
        "suite": _str(suite.get("name")),
        "tasks": tasks,
        "policy_kind": _str(policy.get("kind")),
        "policy_name": _str(policy.get("name") or policy.get("kind")),
        "checkpoint_path": _str(ckpt.get("path")),
        "checkpoint_sha256": _str(ckpt.get("sha256")),
        "backend": _str(cfg.get("backend")),
        "renderer": _str(m.get("renderer")),
        "perturbation": _str(cfg.get("perturbation")),
        "cells": cells,
        "seed": _int(cfg.get("seed")),
        "episodes_per_cell": per_cell,
        "num_envs": _int(cfg.get("num_envs")),
        "metasim_version": _str(versions.get("metasim")),
        "mujoco_version": _str(versions.get("mujoco")),
        "python_version": _str(versions.get("python")),
        "git_commit": _str(versions.get("git_commit")),
        "created": _str(m.get("created")),
        "episodes_done": entry.episodes_done,
        "episodes_planned": planned,
        "successes": successes,
        "success_rate": rate,
        "status": status(entry, entry.episodes_done, planned),
        "manifest": json.dumps(m, default=str),
    }
