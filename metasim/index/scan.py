"""Find every run folder under a root and describe it from its files, reading only.

A run folder is a folder holding `manifest.json` (written by `metasim eval` before its
first episode). Its description comes from manifest.json (config, versions, checkpoint,
renderer), summary.json (successes, when the run has finished once) and episodes.parquet
(episodes done), read through `evaluate.run_files.read_episode_table`: a table it refuses
makes the run "damaged" (its status says why) and keeps it out of the `episodes` view.
Nothing is opened for writing and nothing is locked: episodes.duckdb, which a running
eval holds, is never opened, and `run.lock` is never locked: the kernel's lock table
(/proc/locks) says whether an eval holds it now.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from metasim.errors import MetasimInputError

MAX_MANIFEST_BYTES = 16 << 20


@dataclass
class RunEntry:
    """One run folder: where it is, its manifest, and what was read about it."""

    path: Path
    run: str  # the folder relative to the root
    manifest: dict[str, Any]
    summary: dict[str, Any] | None = None
    episodes_done: int | None = None  # rows of episodes.parquet (None: no parquet yet)
    problems: list[str] = field(default_factory=list)

    @property
    def parquet(self) -> Path:
        return self.path / "episodes.parquet"

    @property
    def queryable(self) -> bool:
        """Whether the run's episodes join the `episodes` view of `runs --sql`: its
        episode table was accepted and its manifest could be read (a run whose manifest
        is damaged is not known to be the run its episodes belong to)."""
        return self.episodes_done is not None and bool(self.manifest)

    @property
    def config(self) -> dict[str, Any]:
        cfg = self.manifest.get("config")
        return cfg if isinstance(cfg, dict) else {}


def find_runs(root: str | Path) -> list[RunEntry]:
    """Every run folder under `root` (or `root` itself), sorted by path; an unreadable
    file of one run is noted in its `problems` rather than stopping the listing."""
    base = Path(root)
    if not base.is_dir():
        raise MetasimInputError(str(root), ["no such folder (expected a folder of run folders)"])
    out = []
    for d, dirs, files in os.walk(base):
        dirs.sort()
        if "manifest.json" in files:
            out.append(_entry(Path(d), base))
    return out


def _read_json(path: Path, problems: list[str]) -> dict[str, Any] | None:
    """A run file through the validating loaders (`evaluate.run_files.read_manifest` for
    the manifest, `guards.load_json` otherwise: bounded size and depth); what they refuse
    becomes one of the entry's problems instead of stopping the scan."""
    from metasim.evaluate.run_files import read_manifest
    from metasim.guards import load_json

    if not path.is_file():
        return None
    try:
        if path.stat().st_size > MAX_MANIFEST_BYTES:
            problems.append(f"{path.name}: larger than {MAX_MANIFEST_BYTES} bytes, skipped")
            return None
        data = read_manifest(path.parent) if path.name == "manifest.json" else load_json(path)
    except MetasimInputError as exc:
        problems.append(f"{path.name}: cannot be read ({'; '.join(exc.problems)})")
        return None
    if not isinstance(data, dict):
        problems.append(f"{path.name}: not a JSON object")
        return None
    return data


def _entry(path: Path, base: Path) -> RunEntry:
    problems: list[str] = []
    manifest = _read_json(path / "manifest.json", problems) or {}
    entry = RunEntry(path, path.relative_to(base).as_posix() or ".", manifest, problems=problems)
    entry.summary = _read_json(path / "summary.json", problems)
    if os.path.lexists(entry.parquet) and not entry.parquet.is_file():
        problems.append("episodes.parquet: not a regular file (a pipe, a device or a folder)")
    elif entry.parquet.is_file():
        from metasim.evaluate.run_files import read_episode_table

        # the one validating reader of episode tables: a damaged one (unreadable, a
        # column of the wrong type, a duplicated episode) makes the run damaged, and
        # it is left out of the `episodes` view (query.py), never counted
        try:
            entry.episodes_done = read_episode_table(entry.parquet).num_rows
        except MetasimInputError as exc:
            problems.append(f"episodes.parquet: refused ({'; '.join(exc.problems)})")
    return entry


def lock_held(path: Path) -> bool | None:
    """Whether some process holds the lock on RUN_DIR/run.lock (an eval writing the
    folder), read from the kernel's table of locks (/proc/locks) without taking it;
    None where that table cannot be read (not Linux)."""
    try:
        st = (path / "run.lock").stat()
    except OSError:
        return False
    try:
        table = Path("/proc/locks").read_text()
    except OSError:
        return None
    want = (os.major(st.st_dev), os.minor(st.st_dev), st.st_ino)
    for line in table.splitlines():
        # "1: FLOCK  ADVISORY  WRITE 4426 fe:00:2147840 0 EOF" (major:minor in hex)
        parts = line.split()
        if len(parts) > 5 and parts[1] == "FLOCK" and parts[5].count(":") == 2:
            major, minor, inode = parts[5].split(":")
            try:
                if (int(major, 16), int(minor, 16), int(inode)) == want:
                    return True
            except ValueError:
                continue
    return False
