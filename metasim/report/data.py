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
from metasim.evaluate.records import CellSummary, EpisodeRecord, RunSummary, decode_factors
from metasim.guards import check_size, limit

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
    summary = RunSummary.load(run_dir)
    return Run(run_dir, summary, _load_episodes(run_dir / "episodes.parquet"))


def _load_episodes(path: Path) -> list[EpisodeRecord]:
    """The episode rows, or [] when the run has no parquet export (tables still work)."""
    if not path.is_file():
        return []
    import pyarrow.parquet as pq

    check_size(path, limit("METASIM_PARQUET_MAX_BYTES"), "METASIM_PARQUET_MAX_BYTES")
    try:
        table = pq.read_table(path)
    except Exception as exc:  # pyarrow raises several types for a corrupt file
        raise MetasimInputError(str(path), [f"cannot be read ({exc})"]) from None
    problems = column_problems(table)
    if problems:
        raise MetasimInputError(
            str(path), problems, "It is not the episodes.parquet metasim eval writes"
        )
    return [_episode(row, str(path)) for row in table.to_pylist()]


# Column -> (what it must be, whether it may be missing or hold nulls). Checked before
# any value is converted: bool("False") is True, so a text column would count successes.
_KINDS = {
    "task": ("text", False),
    "episode": ("integer", False),
    "seed": ("integer", False),
    "success": ("boolean", False),
    "cell": ("text", True),
    "progress": ("number", True),
    "steps": ("integer", True),
    "wall_time_s": ("number", True),
    "error": ("text", True),
    "factors": ("text", True),
}


def _is(kind: str, dtype: Any) -> bool:
    import pyarrow as pa

    checks = {
        "text": lambda t: pa.types.is_string(t) or pa.types.is_large_string(t),
        "integer": pa.types.is_integer,
        "boolean": pa.types.is_boolean,
        "number": lambda t: pa.types.is_integer(t) or pa.types.is_floating(t),
    }
    return bool(pa.types.is_null(dtype) or checks[kind](dtype))


def column_problems(table: Any) -> list[str]:
    """What is wrong with the columns of an episodes table (a pyarrow Table): a required
    column missing or holding nulls, a column of the wrong type."""
    out = []
    for name, (kind, optional) in _KINDS.items():
        if name not in table.column_names:
            if not optional:
                out.append(f"column {name!r} is missing")
            continue
        column = table.column(name)
        if not _is(kind, column.type):
            out.append(f"column {name!r} holds {column.type}, expected {kind}")
        elif not optional and column.null_count:
            out.append(f"column {name!r} has {column.null_count} empty value(s)")
    return out


def _episode(row: dict[str, Any], where: str) -> EpisodeRecord:
    return EpisodeRecord(
        task=str(row["task"]),
        cell=str(row.get("cell") or "nominal"),
        episode=int(row["episode"]),
        seed=int(row["seed"]),
        success=bool(row["success"]),
        progress=float(row.get("progress") or 0.0),
        steps=int(row.get("steps") or 0),
        wall_time_s=float(row.get("wall_time_s") or 0.0),
        error=row.get("error"),
        factors=decode_factors(row.get("factors"), where),
    )
