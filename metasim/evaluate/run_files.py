"""The one validating loader of a results folder's files: every reader of a run's
manifest, summary, JSON-lines results and parquet export goes through here, so a file
that is missing, over its size limit, damaged or of another shape is an input error
naming the file, the line or the field (exit 2), never a traceback, whichever verb reads
it (eval's resume, `eval --resume`, report, compare, correlate, xcheck --run, collect).

RUN_DIR/manifest.json     `read_manifest` (the object eval writes, with its config),
                          `manifest_config` (that config validated: an `EvalConfig`)
RUN_DIR/summary.json      `read_summary` (a `RunSummary`, every field validated)
RUN_DIR/episodes.parquet  `read_episodes` (column types, nulls and duplicate keys checked
                          first: `read_episode_table`, which `metasim runs` uses too)
*.jsonl                   `read_records` (append-only results: xcheck.jsonl, collect's
                          meta/metasim_episodes.jsonl; one JSON object per line)
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from metasim.appends import HINT, cut_to
from metasim.errors import MetasimInputError
from metasim.evaluate.records import EpisodeRecord, RunSummary, decode_factors
from metasim.guards import check_size, limit, load_json
from metasim.yamlio import LIMITS

LIMITS["METASIM_JSONL_MAX_BYTES"] = 1 << 30  # one JSON-lines results file read whole


def read_manifest(run_dir: Path) -> dict[str, Any]:
    """The run folder's manifest.json, checked to be the object metasim eval writes (with
    its `config` object); missing, unreadable or another shape is an input error naming
    the file. Every reader of a run's manifest goes through here."""
    path = run_dir / "manifest.json"
    if not path.is_file():
        raise MetasimInputError(str(run_dir), ["not a run folder: it has no manifest.json"])
    data = load_json(path, "manifest")
    if not isinstance(data, dict) or not isinstance(data.get("config"), dict):
        raise MetasimInputError(
            str(path), ["expected the JSON object metasim eval writes, with its config"]
        )
    return data


def manifest_config(run_dir: Path) -> Any:
    """The run's config (`EvalConfig`) from its manifest, validated; a config that does
    not validate is an input error naming the file and field."""
    from pydantic import ValidationError

    from metasim.errors import validation_problems
    from metasim.evaluate.config import EvalConfig

    path = run_dir / "manifest.json"
    try:
        return EvalConfig.model_validate(read_manifest(run_dir)["config"])
    except ValidationError as exc:
        problems = validation_problems(exc, prefix="config.", show_input=False)
        raise MetasimInputError(str(path), problems) from None


def read_summary(run_dir: Path) -> RunSummary:
    """RUN_DIR/summary.json as a `RunSummary`; missing, unreadable or malformed is an
    input error naming the file and the field (`RunSummary.load`)."""
    return RunSummary.load(run_dir)


def read_records(
    path: Path, keys: frozenset[str], what: str, cut_partial_tail: bool = False
) -> list[dict[str, Any]]:
    """The records of an append-only JSON-lines results file (one object per line, each
    with `keys`); a missing file holds none. A line that is not one is an input error
    naming the file and line (exit 2), never a traceback. With `cut_partial_tail`, a last
    line without its newline (a process killed while appending it: never a finished
    record) is cut off the file, so the next append starts a line of its own. Such a file
    (metasim appends to it) must be a regular file, never a symlink (`appends`)."""
    if path.is_symlink() or (path.exists() and not path.is_file()):
        what_is = "a symbolic link" if path.is_symlink() else "a pipe, device or folder"
        raise MetasimInputError(
            str(path),
            [f"expected the append-only results file metasim writes, got {what_is}"],
            HINT,
        )
    if not path.is_file():
        return []
    check_size(path, limit("METASIM_JSONL_MAX_BYTES"), "METASIM_JSONL_MAX_BYTES")
    data = path.read_bytes()
    if cut_partial_tail and data and not data.endswith(b"\n"):
        keep = data.rfind(b"\n") + 1
        cut_to(path, keep)
        data = data[:keep]
    out = []
    for i, line in enumerate(data.decode("utf-8", errors="replace").splitlines(), 1):
        if not line.strip():
            continue
        try:
            rec = json.loads(line)
        except ValueError:
            rec = None
        if not isinstance(rec, dict) or not keys <= set(rec):
            raise MetasimInputError(
                str(path),
                [f"line {i}: expected {what} (a JSON object with {', '.join(sorted(keys))})"],
                "Restore the file, or choose another folder",
            )
        out.append(rec)
    return out


def read_episodes(run_dir: Path) -> list[EpisodeRecord]:
    """RUN_DIR/episodes.parquet's rows, checked by `read_episode_table` before any value
    is read; [] when the run has no parquet export (tables still work)."""
    path = run_dir / "episodes.parquet"
    if not path.is_file():
        return []
    return [_episode(row, str(path)) for row in read_episode_table(path).to_pylist()]


def read_episode_table(path: Path) -> Any:
    """An episodes.parquet as a pyarrow Table, refused (an input error naming the file,
    exit 2) when it is over METASIM_PARQUET_MAX_BYTES, unreadable, has a column missing
    or of the wrong type, or holds one (task, cell, episode) in more than one row (a
    duplicated episode would be counted twice, or paired with either copy). Every reader
    of a run's episode table goes through here: report, compare, runs."""
    import pyarrow.parquet as pq

    check_size(path, limit("METASIM_PARQUET_MAX_BYTES"), "METASIM_PARQUET_MAX_BYTES")
    try:
        table = pq.read_table(path)
    except Exception as exc:  # pyarrow raises several types for a corrupt file
        raise MetasimInputError(str(path), [f"cannot be read ({exc})"]) from None
    problems = column_problems(table) or duplicate_problems(table)
    if problems:
        raise MetasimInputError(
            str(path), problems, "It is not the episodes.parquet metasim eval writes"
        )
    return table


EpisodeKey = tuple[str, str, int]  # task, cell, episode: one row each in an episodes table


def duplicate_key(table: Any) -> EpisodeKey | None:
    """The first (task, cell, episode) that more than one row of an episodes table (its
    columns already checked) holds, in row order; None when every key is one row. A
    missing or empty cell is the nominal cell, as `read_episodes` reads it."""
    n = table.num_rows
    tasks = table.column("task").to_pylist()
    episodes = table.column("episode").to_pylist()
    cells = table.column("cell").to_pylist() if "cell" in table.column_names else [None] * n
    seen: set[EpisodeKey] = set()
    for task, cell, episode in zip(tasks, cells, episodes, strict=True):
        key = (str(task), str(cell or "nominal"), int(episode))
        if key in seen:
            return key
        seen.add(key)
    return None


def duplicate_problems(table: Any) -> list[str]:
    """`duplicate_key` as a problem line, or none."""
    key = duplicate_key(table)
    if key is None:
        return []
    task, cell, episode = key
    return [
        f"(task, cell, episode) ({task!r}, {cell!r}, {episode}) is in more than one row; "
        "each episode must be one row"
    ]


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
