"""The checkpoint a run evaluated: its path and a SHA-256 of its files, for the manifest.

A policy config names a local checkpoint by `path` (LeRobot) or `args.checkpoint` /
`args.path` (`policy=python`); a server-side policy (openpi, HTTP) names none. The hash
covers every file under the checkpoint (relative name and content, in sorted order), so
two runs of the same weights have the same hash wherever the folder lives.
"""

from __future__ import annotations

import hashlib
import os
from pathlib import Path
from typing import Any

CHUNK = 1 << 20


def checkpoint_path(policy: dict[str, Any]) -> str | None:
    """The local checkpoint path a policy config names, if any (module doc)."""
    args = policy.get("args")
    args = args if isinstance(args, dict) else {}
    for value in (policy.get("path"), args.get("checkpoint"), args.get("path")):
        if isinstance(value, str) and value and value != "???":
            return value
    return None


def _file_hash(path: Path) -> bytes:
    h = hashlib.sha256()
    with path.open("rb") as f:
        while block := f.read(CHUNK):
            h.update(block)
    return h.digest()


def tree_sha256(root: Path) -> str:
    """SHA-256 over (relative name, content hash) of every file under `root` (or of the
    file `root`), in sorted order; symbolic links are followed."""
    if root.is_file():
        return hashlib.sha256(_file_hash(root)).hexdigest()
    h = hashlib.sha256()
    files = sorted(
        Path(d, name).relative_to(root)
        for d, _, names in os.walk(root, followlinks=True)
        for name in names
    )
    for rel in files:
        h.update(rel.as_posix().encode() + b"\0" + _file_hash(root / rel))
    return h.hexdigest()


def checkpoint_record(policy: dict[str, Any]) -> dict[str, Any] | None:
    """{"path", "sha256"} of the policy's checkpoint; sha256 is None when the path is
    not a readable local file or folder (a hub id, a path on another machine)."""
    path = checkpoint_path(policy)
    if path is None:
        return None
    local = Path(path).expanduser()
    try:
        digest = tree_sha256(local) if local.exists() else None
    except OSError:
        digest = None
    return {"path": path, "sha256": digest}
