"""Load a run folder of `metasim eval` into the typed records for the report.

RUN_DIR/summary.json      per-task and per-cell summaries, the config, versions
                          (a `RunSummary`)
RUN_DIR/episodes.parquet  one row per episode (an `EpisodeRecord` each)
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from metasim.errors import MetasimInputError
from metasim.evaluate.records import CellSummary, EpisodeRecord, RunSummary
from metasim.evaluate.run_files import read_episodes, read_summary

Episode = EpisodeRecord  # one row of episodes.parquet, factors decoded


@dataclass(frozen=True)
class Run:
    """A loaded run folder."""

    path: Path
    summary: RunSummary
    episodes: list[EpisodeRecord]

    @property
    def config(self) -> dict[str, Any]:
        return self.summary.config

    @property
    def tasks(self) -> list[str]:
        return list(self.summary.tasks)

    @property
    def cells(self) -> dict[str, CellSummary]:
        return self.summary.cells

    @property
    def has_grid(self) -> bool:
        return len(self.cells) > 1

    @property
    def nominal(self) -> dict[str, Any]:
        """The nominal value of every factor (from the nominal cell, else the first cell)."""
        cell = self.cells.get("nominal") or next(iter(self.cells.values()), None)
        return dict(cell.factors) if cell is not None else {}

    @property
    def label(self) -> str:
        cfg = self.config
        policy = nested(cfg, "policy", "kind")
        return f"{self.path.name} ({policy}, seed {cfg.get('seed', '?')})"


def nested(cfg: dict[str, Any], key: str, sub: str) -> str:
    """`cfg[key][sub]` as text, "?" when absent; a `key` that is not a mapping (a config
    edited by hand: `policy: scripted`) is shown as it is instead of failing."""
    value = cfg.get(key)
    if isinstance(value, dict):
        return str(value.get(sub, "?"))
    return "?" if value is None else str(value)


def load_run(path: str | Path) -> Run:
    """Read summary.json and episodes.parquet; bad input raises MetasimInputError."""
    run_dir = Path(path)
    if not run_dir.is_dir():
        raise MetasimInputError(str(run_dir), ["not a run folder (no such directory)"])
    return Run(run_dir, read_summary(run_dir), read_episodes(run_dir))
