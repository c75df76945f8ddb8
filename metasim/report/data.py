"""Load a run folder of `metasim eval` into plain records for the report.

RUN_DIR/summary.json      per-task and per-cell summaries, the config, versions
RUN_DIR/episodes.parquet  one row per episode (task, cell, episode, seed, success, ...)
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from metasim.errors import MetasimInputError


@dataclass(frozen=True)
class Episode:
    """One row of episodes.parquet; `factors` is the cell's factor values (decoded)."""

    task: str
    cell: str
    episode: int
    seed: int
    success: bool
    progress: float
    steps: int
    error: str | None
    factors: dict[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class Run:
    """A loaded run folder."""

    path: Path
    summary: dict[str, Any]
    episodes: list[Episode]

    @property
    def config(self) -> dict[str, Any]:
        cfg = self.summary.get("config", {})
        return cfg if isinstance(cfg, dict) else {}

    @property
    def tasks(self) -> list[str]:
        return list(self.summary.get("tasks", {}))

    @property
    def cells(self) -> dict[str, Any]:
        cells = self.summary.get("cells", {})
        return cells if isinstance(cells, dict) else {}

    @property
    def has_grid(self) -> bool:
        return len(self.cells) > 1

    @property
    def nominal(self) -> dict[str, Any]:
        """The nominal value of every factor (from the nominal cell, else the first cell)."""
        cells = self.cells
        cell: Any = cells.get("nominal") or next(iter(cells.values()), {})
        factors = cell.get("factors", {}) if isinstance(cell, dict) else {}
        return dict(factors)

    @property
    def label(self) -> str:
        cfg = self.config
        policy = cfg.get("policy", {}).get("kind", "?")
        return f"{self.path.name} ({policy}, seed {cfg.get('seed', '?')})"


def load_run(path: str | Path) -> Run:
    """Read summary.json and episodes.parquet; bad input raises MetasimInputError."""
    run_dir = Path(path)
    if not run_dir.is_dir():
        raise MetasimInputError(str(run_dir), ["not a run folder (no such directory)"])
    summary_path = run_dir / "summary.json"
    if not summary_path.is_file():
        raise MetasimInputError(
            str(run_dir),
            ["not a run folder: summary.json is missing (run `metasim eval out=...` first)"],
        )
    try:
        summary = json.loads(summary_path.read_text())
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise MetasimInputError(str(summary_path), [f"cannot be read ({exc})"]) from None
    if not isinstance(summary, dict) or not isinstance(summary.get("tasks"), dict):
        raise MetasimInputError(str(summary_path), ["has no 'tasks' table; not a run summary"])
    return Run(run_dir, summary, _load_episodes(run_dir / "episodes.parquet"))


def _load_episodes(path: Path) -> list[Episode]:
    """The episode rows, or [] when the run has no parquet export (tables still work)."""
    if not path.is_file():
        return []
    import pyarrow.parquet as pq

    try:
        rows = pq.read_table(path).to_pylist()
    except Exception as exc:  # pyarrow raises several types for a corrupt file
        raise MetasimInputError(str(path), [f"cannot be read ({exc})"]) from None
    return [_episode(row) for row in rows]


def _episode(row: dict[str, Any]) -> Episode:
    try:
        factors = json.loads(row.get("factors") or "{}")
    except json.JSONDecodeError:
        factors = {}
    return Episode(
        task=str(row["task"]),
        cell=str(row.get("cell") or "nominal"),
        episode=int(row["episode"]),
        seed=int(row["seed"]),
        success=bool(row["success"]),
        progress=float(row.get("progress") or 0.0),
        steps=int(row.get("steps") or 0),
        error=row.get("error"),
        factors=factors if isinstance(factors, dict) else {},
    )
