"""One resume check for every verb that appends results to a folder and resumes into it
(`metasim eval`, `metasim check xcheck --benchmark libero`, `metasim collect`).

A resumable folder records its outcome key: every setting that changes an episode's
outcome, as JSON. The policy part is `rollout_key` (the policy kind with all its options,
chunk execution, seed, backend), which each verb extends with its own settings (the
suite, episodes and perturbation of an eval; xcheck's release steps). A resume
recomputes the key and refuses (exit 2) when any field differs, naming the fields, so the
results of two configurations are never mixed, and nothing recorded is touched.
"""

from __future__ import annotations

import json
import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from metasim.errors import MetasimInputError
from metasim.evaluate.spec import RolloutSpec
from metasim.guards import load_json

_MISSING = object()


def rollout_key(spec: RolloutSpec) -> dict[str, Any]:
    """What in `spec` changes an episode's outcome: the policy kind and every option,
    chunk execution, seed and backend (not num_envs or threads: an episode's outcome does
    not depend on its slot or the thread count)."""
    return {
        "policy": spec.policy,
        "options": spec.options.model_dump(mode="json"),
        "seed": spec.seed,
        "backend": spec.backend,
        "execute": spec.execute,
        "ensemble": spec.ensemble,
    }


def normalized(key: Mapping[str, Any]) -> dict[str, Any]:
    """`key` as it reads back from JSON (tuples become lists, keys strings)."""
    return dict(json.loads(json.dumps(key, sort_keys=True, default=str)))


def differing(old: Any, new: Any, path: str = "") -> list[str]:
    """The dotted names of the fields whose values differ between `old` and `new`
    (nested mappings compared field by field; a field only one side has differs)."""
    if isinstance(old, Mapping) and isinstance(new, Mapping):
        out: list[str] = []
        for k in sorted(set(old) | set(new), key=str):
            name = f"{path}.{k}" if path else str(k)
            out += differing(old.get(k, _MISSING), new.get(k, _MISSING), name)
        return out
    return [] if old == new else [path or "(all of it)"]


def mismatch(folder: Path | str, fields: list[str], flag: str) -> MetasimInputError:
    """The refusal of a resume whose outcome key differs in `fields`."""
    shown = ", ".join(fields[:8]) + (f" and {len(fields) - 8} more" if len(fields) > 8 else "")
    return MetasimInputError(
        str(folder),
        [
            f"this folder holds results of a run with a different {shown}; resuming would "
            "mix the outcomes of two configurations"
        ],
        f"Resume it with the same settings or choose another {flag}",
    )


def check_resume(path: Path, key: Mapping[str, Any], flag: str) -> None:
    """Record `key` in `path` (a JSON file in the results folder) when the folder is new,
    else refuse (exit 2) a resume whose key differs from the recorded one. Creating the
    file is atomic, so shards that start together agree on one key."""
    key = normalized(key)
    if not path.exists():
        tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
        text = json.dumps({"key": key}, indent=2, sort_keys=True) + "\n"
        tmp.unlink(missing_ok=True)  # a stale one of a killed process with this pid
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o666)
        with os.fdopen(fd, "w") as f:
            f.write(text)
        try:
            os.link(tmp, path)  # fails if another process made it meanwhile: compare then
            return
        except FileExistsError:
            pass
        finally:
            tmp.unlink()
    recorded = load_json(path, "resume key")
    if not isinstance(recorded, dict) or not isinstance(recorded.get("key"), dict):
        raise MetasimInputError(
            str(path), ['expected a JSON object {"key": {...}} written by metasim'],
            f"Choose another {flag}",
        )  # fmt: skip
    fields = differing(recorded["key"], key)
    if fields:
        raise mismatch(path.parent, fields, flag)
