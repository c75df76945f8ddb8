"""The results store of a run: an append-only DuckDB table, one row per finished episode.

RUN_DIR/episodes.duckdb   written as each episode ends (one committed insert each), so a
                          killed run keeps every episode it finished
RUN_DIR/manifest.json     config, package versions, git commit, seeds: what a resume
                          must match and what reproduces the run
RUN_DIR/episodes.parquet  exported from the table when the run completes

The key (task, cell, episode) is unique: a resumed run skips what is recorded and the
table refuses a duplicate, so no episode is counted twice.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from dataclasses import asdict, fields
from pathlib import Path
from typing import Any

import duckdb

from metasim.errors import MetasimInputError
from metasim.evaluate.records import EpisodeRecord, decode_factors, encode_factors

TABLE = "episodes"
_COLUMNS = {
    "task": "VARCHAR NOT NULL",
    "cell": "VARCHAR NOT NULL",
    "episode": "BIGINT NOT NULL",
    "seed": "BIGINT NOT NULL",
    "success": "BOOLEAN NOT NULL",
    "progress": "DOUBLE NOT NULL",
    "steps": "BIGINT NOT NULL",
    "wall_time_s": "DOUBLE NOT NULL",
    "error": "VARCHAR",
    "factors": "VARCHAR NOT NULL",
}


class RunStore:
    """Open (or create) the store of one run folder."""

    def __init__(self, run_dir: Path) -> None:
        self.run_dir = run_dir
        run_dir.mkdir(parents=True, exist_ok=True)
        self.path = run_dir / "episodes.duckdb"
        self.con = duckdb.connect(str(self.path))
        cols = ", ".join(f"{k} {v}" for k, v in _COLUMNS.items())
        self.con.execute(
            f"CREATE TABLE IF NOT EXISTS {TABLE} ({cols}, PRIMARY KEY (task, cell, episode))"
        )

    # ------------------------------------------------------------ manifest

    def check_manifest(self, manifest: dict[str, Any]) -> None:
        """Write the manifest of a new run, or check that a resumed run is the same run."""
        path = self.run_dir / "manifest.json"
        if not path.exists():
            tmp = path.with_suffix(".tmp")
            tmp.write_text(json.dumps(manifest, indent=2) + "\n")
            tmp.replace(path)
            return
        try:
            old = json.loads(path.read_text())
        except (OSError, json.JSONDecodeError) as exc:
            raise MetasimInputError(str(path), [f"cannot be read ({exc})"]) from None
        keys = ("suite", "policy", "seed", "episodes", "backend", "perturbation")
        differ = [k for k in keys if old.get("config", {}).get(k) != manifest["config"].get(k)]
        if differ:
            raise MetasimInputError(
                str(self.run_dir),
                [
                    f"this run folder holds a run with a different {', '.join(differ)}; "
                    "resume it with the same settings or choose another out="
                ],
            )

    # ------------------------------------------------------------ episodes

    def done(self) -> set[tuple[str, str, int]]:
        rows = self.con.execute(f"SELECT task, cell, episode FROM {TABLE}").fetchall()
        return {(str(t), str(c), int(e)) for t, c, e in rows}

    def append(self, record: EpisodeRecord) -> None:
        """Insert one finished episode (committed before returning)."""
        row = {**asdict(record), "factors": encode_factors(record.factors)}
        names = list(_COLUMNS)
        self.con.execute(
            f"INSERT INTO {TABLE} ({', '.join(names)}) VALUES ({', '.join('?' * len(names))})",
            [row[n] for n in names],
        )

    def records(self) -> list[EpisodeRecord]:
        names = [f.name for f in fields(EpisodeRecord)]
        rows = self.con.execute(
            f"SELECT {', '.join(names)} FROM {TABLE} ORDER BY task, cell, episode"
        ).fetchall()
        out = []
        for r in rows:
            row = dict(zip(names, r, strict=True))
            row["factors"] = decode_factors(row["factors"], str(self.path))
            out.append(EpisodeRecord(**row))
        return out

    def export_parquet(self, tasks: Iterable[str], cells: Iterable[str] = ("nominal",)) -> Path:
        """Write episodes.parquet ordered by task (suite order), cell (grid order), episode."""
        out = self.run_dir / "episodes.parquet"

        def rank(column: str, names: Iterable[str]) -> str:
            cases = " ".join(f"WHEN {_quote(n)} THEN {i}" for i, n in enumerate(names))
            return f"CASE {column} {cases} ELSE 1e9 END" if cases else "0"

        tmp = out.with_suffix(".parquet.tmp")
        self.con.execute(
            f"COPY (SELECT * FROM {TABLE} ORDER BY {rank('task', tasks)}, "
            f"{rank('cell', cells)}, episode) TO {_quote(str(tmp))} (FORMAT parquet)"
        )
        tmp.replace(out)
        return out

    def close(self) -> None:
        self.con.close()


def _quote(text: str) -> str:
    """A SQL string literal."""
    return "'" + text.replace("'", "''") + "'"
