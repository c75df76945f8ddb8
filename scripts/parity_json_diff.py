"""Two `metasim check parity --json` outputs (or any two JSON files) field by field, timings
left out: every leaf is compared exactly, except those under a `seconds` key.

  .venv/bin/python scripts/parity_json_diff.py BEFORE.json AFTER.json [...pairs]

Prints, per pair, the number of leaves compared and those that differ; exits 1 if any does.
Used to show that a refactor left the reference parity figures as they were (run the check
on a checkout of the commit before and of the commit after, with the same arguments).
"""

from __future__ import annotations

import json
import sys
from typing import Any


def leaves(value: Any, path: str = "") -> dict[str, Any]:
    """Every leaf of a JSON value by its path; subtrees under a `seconds` key dropped."""
    if isinstance(value, dict):
        out: dict[str, Any] = {}
        for key, sub in value.items():
            if key != "seconds":
                out.update(leaves(sub, f"{path}.{key}"))
        return out
    if isinstance(value, list):
        out = {}
        for i, sub in enumerate(value):
            out.update(leaves(sub, f"{path}[{i}]"))
        return out
    return {path: value}


def main(paths: list[str]) -> int:
    if not paths or len(paths) % 2:
        print("usage: parity_json_diff.py BEFORE.json AFTER.json [BEFORE AFTER ...]")
        return 2
    differ = 0
    for before, after in zip(paths[::2], paths[1::2], strict=True):
        with open(before) as f:
            a = leaves(json.load(f))
        with open(after) as f:
            b = leaves(json.load(f))
        bad = [k for k in sorted(set(a) | set(b)) if a.get(k, ...) != b.get(k, ...)]
        print(f"{before} vs {after}: {len(a)} fields, {len(bad)} differ {bad[:10]}")
        differ += len(bad)
    return 1 if differ else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
