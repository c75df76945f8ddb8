"""The results store of a run: an append-only DuckDB table, one row per finished episode.

RUN_DIR/episodes.duckdb   written as each episode ends (one committed insert each), so a
                          killed run keeps every episode it finished
RUN_DIR/manifest.json     config, package versions, git commit, seeds: what a resume
                          must match and what reproduces the run
RUN_DIR/episodes.parquet  exported from the table when the run completes

The key (task, cell, episode) is unique: a resumed run skips what is recorded and the
table refuses a duplicate, so no episode is counted twice.

RUN_DIR/run.lock          one writer at a time: the process that opens the store holds an
                          exclusive lock on this file (the OS drops it when the process
                          ends, even on kill -9); a second process is refused with exit 2
                          naming the holder's pid and host
A store DuckDB cannot read is never deleted: it is moved aside and what survives is
recovered into a new store (metasim.evaluate.salvage).
"""

from __future__ import annotations

import fcntl
import json
import os
import socket
from collections.abc import Iterable
from dataclasses import asdict, fields
from pathlib import Path
from typing import Any

import duckdb

from metasim.errors import MetasimInputError
from metasim.evaluate.records import EpisodeRecord, decode_factors, encode_factors
from metasim.evaluate.resume import differing, mismatch, normalized
from metasim.evaluate.run_files import read_manifest
from metasim.evaluate.salvage import salvage
from metasim.evaluate.table import COLUMNS, TABLE, create_table

# The config fields of a run that change its outcomes: a resume must match every one
# (the policy with all its options, chunk execution and action conventions; the tasks
# and their sources' options).
OUTCOME_FIELDS = (
    "suite",
    "policy",
    "seed",
    "episodes",
    "backend",
    "render",
    "render_spp",
    "perturbation",
    "task_options",
)
# What a field a manifest does not hold (one written before the field existed) was.
ABSENT: dict[str, Any] = {"task_options": {}}


def _more(new: Any, old: Any) -> bool:
    return isinstance(new, int) and isinstance(old, int) and new > old


class RunStore:
    """Open (or create) the store of one run folder."""

    def __init__(self, run_dir: Path) -> None:
        self.run_dir = run_dir
        refuse_foreign_folder(run_dir)
        make = not _exists(run_dir)
        make_run_dir(run_dir)  # a path that cannot be a folder is refused here
        self.made_dir = make
        self.fresh = not (run_dir / "manifest.json").exists()  # a new run, not a resume
        self._lock = RunLock(run_dir)
        self.path = run_dir / "episodes.duckdb"
        try:
            self.con = open_checked(self.path)
        except duckdb.Error as exc:
            self._lock.release()
            raise salvage(self.path, exc) from None

    # ------------------------------------------------------------ manifest

    def check_manifest(self, manifest: dict[str, Any], extend: bool = False) -> None:
        """Write the manifest of a new run, or check that a resumed run is the same run.
        With `extend` (`metasim eval --resume RUN_DIR episodes=N`), a resumed run may ask
        for more episodes per task and cell than it had (episode k keeps its seed, so the
        first ones stay as they were): the manifest then records the new count and, under
        `extended`, each earlier one."""
        path = self.run_dir / "manifest.json"
        if not path.exists():
            self._write_manifest(manifest)
            return
        old = read_manifest(self.run_dir)
        was = old["config"]
        recorded = {k: was.get(k, ABSENT.get(k)) for k in OUTCOME_FIELDS}
        now = normalized({k: manifest["config"].get(k, ABSENT.get(k)) for k in OUTCOME_FIELDS})
        changed = differing(recorded, now)
        if extend and changed == ["episodes"]:
            if not _more(now["episodes"], recorded["episodes"]):
                raise MetasimInputError(
                    str(self.run_dir),
                    [
                        f"this run folder holds {recorded['episodes']} episodes per task and "
                        "cell; a resume may keep or raise that count, not lower it to "
                        f"{now['episodes']}"
                    ],
                )
            prior = old.get("extended")
            extended = [
                *(prior if isinstance(prior, list) else []),
                {"episodes": recorded["episodes"]},
            ]
            self._write_manifest(
                {**old, "config": {**was, "episodes": now["episodes"]}, "extended": extended}
            )
            return
        if changed:
            raise mismatch(self.run_dir, changed, "out=")

    def _write_manifest(self, manifest: dict[str, Any]) -> None:
        path = self.run_dir / "manifest.json"
        tmp = path.with_suffix(".tmp")
        tmp.write_text(json.dumps(manifest, indent=2) + "\n")
        tmp.replace(path)

    # ------------------------------------------------------------ episodes

    def done(self) -> set[tuple[str, str, int]]:
        rows = self.con.execute(f"SELECT task, cell, episode FROM {TABLE}").fetchall()
        return {(str(t), str(c), int(e)) for t, c, e in rows}

    def append(self, record: EpisodeRecord) -> None:
        """Insert one finished episode (committed before returning)."""
        row = {**asdict(record), "factors": encode_factors(record.factors)}
        names = list(COLUMNS)
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
        self._lock.release()

    def discard_unused(self) -> bool:
        """Close the store and remove what this run wrote when it is a new run that
        recorded no episode (refused as it started): a refused run leaves no folder to
        block the corrected rerun into the same `out=`. True when removed."""
        if not self.fresh or self.done():
            return False
        self.close()
        for name in ("episodes.duckdb", "episodes.duckdb.wal", "manifest.json", "run.lock"):
            (self.run_dir / name).unlink(missing_ok=True)
        if self.made_dir:
            try:
                self.run_dir.rmdir()  # only if nothing else was put there meanwhile
            except OSError:
                pass
        return True


# What only a run folder holds: its store (or one moved aside by salvage) or its manifest.
_RUN_FILES = ("episodes.duckdb", "manifest.json")


def refuse_foreign_folder(run_dir: Path) -> None:
    """Refuse an `out=` that exists, is not empty and is no run folder (a dataset, a
    user's files): a run would mix its files in and replace a `summary.json`. An empty
    folder, one holding only the lock, and a run folder (to resume) are fine."""
    try:
        names = [p.name for p in run_dir.iterdir()] if run_dir.is_dir() else []
    except OSError:
        return  # unreadable: make_run_dir and the lock say why
    if not names or any(n in _RUN_FILES or n.startswith("episodes.damaged-") for n in names):
        return
    if names == ["run.lock"]:
        return
    raise MetasimInputError(
        f"out={run_dir}",
        [
            "the folder exists, is not empty and holds no run of metasim eval (no "
            "episodes.duckdb or manifest.json): a run would write its files among yours "
            "and could replace a summary.json; nothing was written"
        ],
        "Choose a new out= (or an empty folder), or the folder of an earlier eval to resume it",
    )


def make_run_dir(run_dir: Path) -> None:
    """Create the run folder; a path that cannot be one is an input error (exit 2)."""
    try:
        run_dir.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        blocker = next((p for p in [run_dir, *run_dir.parents] if _is_file(p)), None)
        why = (
            f"{blocker} is a file, not a folder"
            if blocker is not None
            else f"cannot create the folder ({exc.strerror or exc})"
        )
        raise MetasimInputError(f"out={run_dir}", [why], "Choose another out=") from None


def _exists(path: Path) -> bool:
    try:
        return path.exists()
    except OSError:  # a name too long: make_run_dir says why
        return False


def _is_file(path: Path) -> bool:
    try:
        return path.is_file()
    except OSError:  # a name too long, a loop of links: not a file
        return False


def open_checked(path: Path) -> duckdb.DuckDBPyConnection:
    """Connect to the store and read every stored value once (DuckDB checks each block's
    checksum), so a damaged file is found before the run starts; raises duckdb.Error."""
    con = duckdb.connect(str(path))
    try:
        create_table(con)
        con.execute(f"SELECT count(*), sum(hash({', '.join(COLUMNS)})) FROM {TABLE}").fetchall()
    except duckdb.Error:
        con.close()
        raise
    return con


class RunLock:
    """An exclusive lock on RUN_DIR/run.lock for as long as this process writes the
    folder. The file is left in place (removing it would let a third process lock a
    different file); it says who holds or last held the lock."""

    def __init__(self, run_dir: Path, verb: str = "eval") -> None:
        """`verb`: the metasim command that writes folders like this one (its message
        names it)."""
        where = "run folder" if verb == "eval" else "folder"
        self.path = run_dir / "run.lock"
        try:
            self._fd: int | None = os.open(self.path, os.O_RDWR | os.O_CREAT, 0o644)
        except OSError as exc:
            raise MetasimInputError(
                f"out={run_dir}", [f"cannot write {self.path.name} ({exc.strerror or exc})"]
            ) from None
        try:
            fcntl.flock(self._fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            holder = os.pread(self._fd, 512, 0).decode(errors="replace").strip() or "unknown"
            self.release()
            raise MetasimInputError(
                f"out={run_dir}",
                [f"another metasim {verb} is writing this {where} ({holder})"],
                "Wait for it to finish (then run this command again to add what it lacks), "
                "or choose another out=",
            ) from None
        os.ftruncate(self._fd, 0)
        os.pwrite(self._fd, f"pid {os.getpid()} on host {socket.gethostname()}\n".encode(), 0)

    def release(self) -> None:
        if self._fd is not None:
            os.close(self._fd)  # closing the descriptor drops the lock
            self._fd = None


def _quote(text: str) -> str:
    """A SQL string literal."""
    return "'" + text.replace("'", "''") + "'"
