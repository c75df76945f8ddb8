"""Per-stage cache in OUT/.recon/: a stage whose key (a hash of its inputs and options)
is unchanged and whose files exist is skipped on a rerun."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import Any

from metasim.guards import write_atomic


def digest(*parts: Any) -> str:
    """A short stable hash of JSON-able parts."""
    text = json.dumps(parts, sort_keys=True, default=str)
    return hashlib.sha256(text.encode()).hexdigest()[:16]


def files_signature(paths: list[Path]) -> list[tuple[str, int, int]]:
    """(name, size, mtime ns) per file: changes when an input file changes."""
    out = []
    for p in paths:
        st = p.stat()
        out.append((p.name, st.st_size, st.st_mtime_ns))
    return out


class StageCache:
    """Records which stages are done, under which key, in OUT/.recon/stages.json."""

    def __init__(self, out: Path) -> None:
        self.dir = out / ".recon"
        self.dir.mkdir(parents=True, exist_ok=True)
        self._file = self.dir / "stages.json"
        self._done: dict[str, str] = {}
        if self._file.is_file():
            try:
                self._done = dict(json.loads(self._file.read_text()))
            except (json.JSONDecodeError, ValueError):
                self._done = {}

    def fresh(self, stage: str, key: str, files: list[Path]) -> bool:
        """True when `stage` ran with this key and its files are still there."""
        return self._done.get(stage) == key and all(f.exists() for f in files)

    def mark(self, stage: str, key: str) -> None:
        self._done[stage] = key
        write_atomic(self._file, json.dumps(self._done, indent=1))

    def path(self, name: str) -> Path:
        return self.dir / name
