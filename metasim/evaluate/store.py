"""The results store of a run: an append-only DuckDB table, one row per finished episode.

RUN_DIR/episodes.duckdb   written as each episode ends (one committed insert each), so a
                          killed run keeps every episode it finished
RUN_DIR/manifest.json     config, package versions, git commit, seeds, each scene's
                          content hash: what a resume must match and what reproduces
                          the run (metasim.evaluate.content)
RUN_DIR/episodes.parquet  exported from the table when the run completes
RUN_DIR/.metasim-run      the marker that says the folder is a run folder (written
                          first, atomically; a format version): `metasim eval out=`
                          writes only into an empty (or new) folder or one holding
                          this marker, see `claim_run_folder`

The key (task, cell, episode) is unique: a resumed run skips what is recorded and the
table refuses a duplicate, so no episode is counted twice.

RUN_DIR/run.lock          one writer at a time: the process that opens the store holds an
                          exclusive lock on this file (the OS drops it when the process
                          ends, even on kill -9); a second process is refused with exit 2
                          naming the holder's pid and host
A store DuckDB cannot read is never deleted: it is moved aside and what survives is
recovered into a new store (metasim.evaluate.salvage). Every other file of the folder is
written through `metasim.guards.replacing` (a new file renamed over the old one, never
through a symlink); a store or lock that is a symlink is refused.
"""

from __future__ import annotations

import errno
import fcntl
import json
import os
import re
import socket
from collections.abc import Iterable
from dataclasses import asdict, fields
from pathlib import Path
from typing import Any

import duckdb

from metasim.errors import MetasimInputError
from metasim.evaluate.capacity import record_capacity
from metasim.evaluate.content import check_content
from metasim.evaluate.records import EpisodeRecord, decode_factors, encode_factors
from metasim.evaluate.resume import differing, mismatch, normalized
from metasim.evaluate.run_files import read_manifest
from metasim.evaluate.salvage import salvage
from metasim.evaluate.table import COLUMNS, TABLE, create_table
from metasim.guards import load_json, replacing, stamp_json, stamped_json, write_atomic

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
        self.made_dir = claim_run_folder(run_dir)  # refused before anything is written
        self.fresh = not (run_dir / "manifest.json").exists()  # a new run, not a resume
        self._lock = RunLock(run_dir)
        self.path = run_dir / "episodes.duckdb"
        if self.path.is_symlink():
            self._lock.release()
            raise MetasimInputError(
                f"out={run_dir}",
                [
                    "episodes.duckdb is a symbolic link; the store is written only as a "
                    "regular file of the run folder (a link would write elsewhere)"
                ],
                "Replace the link by the file it points to, or choose another out=",
            )
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
        held = read_manifest(self.run_dir)
        was = held["config"]
        recorded = {k: was.get(k, ABSENT.get(k)) for k in OUTCOME_FIELDS}
        now = normalized({k: manifest["config"].get(k, ABSENT.get(k)) for k in OUTCOME_FIELDS})
        changed = differing(recorded, now)
        if changed and not (extend and changed == ["episodes"]):
            raise mismatch(self.run_dir, changed, "out=")
        old = check_content(held, manifest, self.run_dir)  # the scenes' content, by task
        old = record_capacity(old, manifest)  # backend=warp's nconmax/njmax, if raised
        if extend and changed:
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
            old = {**old, "config": {**was, "episodes": now["episodes"]}, "extended": extended}
        if old is not held:  # a new count, or content hashes an older manifest lacked
            self._write_manifest(old)

    def _write_manifest(self, manifest: dict[str, Any]) -> None:
        write_atomic(self.run_dir / "manifest.json", json.dumps(manifest, indent=2) + "\n")

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

        with replacing(out) as tmp:
            self.con.execute(
                f"COPY (SELECT * FROM {TABLE} ORDER BY {rank('task', tasks)}, "
                f"{rank('cell', cells)}, episode) TO {_quote(str(tmp))} (FORMAT parquet)"
            )
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
        for name in ("episodes.duckdb", "episodes.duckdb.wal", "manifest.json", "run.lock", MARKER):
            (self.run_dir / name).unlink(missing_ok=True)
        if self.made_dir:
            try:
                self.run_dir.rmdir()  # only if nothing else was put there meanwhile
            except OSError:
                pass
        return True


# The marker of a run folder: written first (atomically) into a folder `metasim eval`
# takes, so that only a folder metasim made is ever written as one. FORMAT is the layout
# version of the folder; a marker of a newer one is refused (this metasim would not know
# its files).
MARKER = ".metasim-run"
MARKER_STAMP = "metasim run folder"
MARKER_FORMAT = 1
_IS_MARKER = stamped_json(MARKER_STAMP)
_LOCK_TEXT = re.compile(rb"(pid \d+ on host [^\n]*\n?)?")  # what RunLock writes


def claim_run_folder(run_dir: Path) -> bool:
    """Take `run_dir` as a run folder, or refuse it (exit 2) before anything is written
    in it; returns whether the folder was created here.

    A run folder is one whose marker (`.metasim-run`) says so. Taken too, and given the
    marker: a new or empty folder (or one holding only a lock metasim wrote), and a
    folder of a metasim from before the marker (a *legacy* run folder), recognised
    only when it holds both `episodes.duckdb` and `manifest.json` as regular files and
    the manifest is the object metasim eval has always written (its `config` and
    `versions` objects and its `episode_seeds` sentence): a user's own `manifest.json`,
    `episodes.duckdb` (a database or not) or `summary.json` is never enough. Every other
    non-empty folder (a dataset, a user's files) is refused: a run would write its files
    among them and replace a `summary.json`."""
    try:
        names = sorted(p.name for p in run_dir.iterdir()) if run_dir.is_dir() else []
    except OSError:
        names = []  # unreadable: make_run_dir, the marker or the lock says why
    if MARKER in names:
        problem = _marker_problem(run_dir / MARKER)
        if problem is not None:
            raise MetasimInputError(
                f"out={run_dir}", [problem], "Choose a new out= (or an empty folder)"
            )
        make_run_dir(run_dir)
        return False
    if names and not _legacy_run(run_dir, names) and not _only_our_lock(run_dir, names):
        raise MetasimInputError(
            f"out={run_dir}",
            [
                "the folder exists, is not empty and holds no run of metasim eval (no "
                f"{MARKER} marker, nor the manifest.json and episodes.duckdb an earlier "
                "metasim eval wrote): a run would write its files among yours and could "
                "replace a summary.json; nothing was written"
            ],
            "Choose a new out= (or an empty folder), or the folder of an earlier eval to resume it",
        )
    made = not _exists(run_dir)
    make_run_dir(run_dir)  # a path that cannot be a folder is refused here
    write_atomic(run_dir / MARKER, stamp_json(MARKER_STAMP, {"format": MARKER_FORMAT}) + "\n")
    return made


def _marker_problem(path: Path) -> str | None:
    """Why the marker at `path` does not make its folder a run folder this metasim
    writes, or None."""
    if path.is_symlink() or not path.is_file():
        return f"{path} is not the marker file metasim eval writes (a link or a folder)"
    try:
        with open(path, "rb") as f:
            head = f.read(4096)
        data = json.loads(head) if _IS_MARKER(head) else None
    except (OSError, ValueError):
        data = None
    if not isinstance(data, dict) or not isinstance(data.get("format"), int):
        return f"{path} is not the marker metasim eval writes; the folder is not a run folder"
    if data["format"] > MARKER_FORMAT:
        return (
            f"{path} says the run folder is of format {data['format']}, newer than this "
            f"metasim's ({MARKER_FORMAT}); resume it with the metasim that wrote it"
        )
    return None


def _legacy_run(run_dir: Path, names: list[str]) -> bool:
    """A run folder written before the marker existed (see `claim_run_folder`)."""
    files = [run_dir / "manifest.json", run_dir / "episodes.duckdb"]
    if not all(p.name in names and p.is_file() and not p.is_symlink() for p in files):
        return False
    try:
        data = load_json(files[0], "manifest")
    except MetasimInputError:
        return False
    return (
        isinstance(data, dict)
        and isinstance(data.get("config"), dict)
        and isinstance(data.get("versions"), dict)
        and str(data.get("episode_seeds", "")).startswith("episode k ")
    )


def _only_our_lock(run_dir: Path, names: list[str]) -> bool:
    """The folder holds only a `run.lock` as RunLock writes it (a run of an earlier
    metasim stopped between taking the folder and writing its store)."""
    path = run_dir / "run.lock"
    if names != [path.name] or path.is_symlink() or not path.is_file():
        return False
    try:
        with open(path, "rb") as f:
            text = f.read(1024)
    except OSError:
        return False
    return _LOCK_TEXT.fullmatch(text) is not None


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
            self._fd: int | None = os.open(self.path, os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW, 0o644)
        except OSError as exc:
            why = (
                "it is a symbolic link (the lock is never written through one)"
                if exc.errno == errno.ELOOP
                else exc.strerror or str(exc)
            )
            raise MetasimInputError(
                f"out={run_dir}", [f"cannot write {self.path.name} ({why})"]
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
