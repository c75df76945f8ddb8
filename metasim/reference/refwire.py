"""The wire format and serving loop of the reference simulators' workers (LIBERO's,
Meta-World's): stdlib + numpy only, because it runs INSIDE a benchmark's own reference
venv, where metasim is not installed.

A worker runs as `python -P refwire.py <worker.py> [<module.py> ...]`: this file loads each
module by path, calls the first one's `commands(*the others)` (name -> callable) and serves
them, so a worker is handed the worker-side modules it builds on (a peer harness: the
shared `peerwire.py` and its benchmark's reference worker) instead of finding them itself.

Protocol (JSON lines): one request {"cmd": ..., ...} per line on stdin, one reply
{"ok": true, ...} or {"ok": false, "error": ...} per line on the original stdout (whatever
the libraries print goes to stderr, so it can never corrupt a reply). The first line is
{"ok": true, "ready": true}; {"cmd": "close"} ends the loop. Arrays travel both ways as
{"__nd__": [dtype, shape, base64 of the C-order bytes]}; never pickle.

metasim's client side (`metasim.reference.refvenv`) imports `decode` from here, so the codec
lives in one file for both directions.
"""

from __future__ import annotations

import base64
import importlib.util
import json
import os
import sys
import traceback
from collections.abc import Callable
from typing import IO, Any

import numpy as np

Commands = dict[str, Callable[..., dict[str, Any]]]


def encode(value: Any) -> Any:
    """JSON-able form of a reply value; numpy arrays as {"__nd__": [dtype, shape, b64]}."""
    if isinstance(value, np.ndarray):
        data = np.ascontiguousarray(value)
        return {
            "__nd__": [data.dtype.str, list(data.shape), base64.b64encode(data.tobytes()).decode()]
        }
    if isinstance(value, dict):
        return {str(k): encode(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [encode(v) for v in value]
    if isinstance(value, np.generic):
        return value.item()
    return value


def decode(value: Any) -> Any:
    """Inverse of `encode`: {"__nd__": [dtype, shape, b64]} -> ndarray (read-only view)."""
    if isinstance(value, dict):
        if "__nd__" in value:
            dtype, shape, data = value["__nd__"]
            return np.frombuffer(base64.b64decode(data), dtype=np.dtype(dtype)).reshape(shape)
        return {k: decode(v) for k, v in value.items()}
    if isinstance(value, list):
        return [decode(v) for v in value]
    return value


def answer(commands: Commands, request: dict[str, Any]) -> dict[str, Any]:
    """The reply to one request; an exception becomes {"ok": false, "error": ...} (its
    traceback goes to stderr, where the client reads it when the worker dies)."""
    cmd = request.pop("cmd", "")
    try:
        if cmd not in commands:
            raise ValueError(f"unknown command {cmd!r}")
        return {"ok": True, **encode(commands[cmd](**decode(request)))}
    except Exception as exc:
        traceback.print_exc()
        return {"ok": False, "error": f"{type(exc).__name__}: {exc}"}


def serve(commands: Commands, proto: IO[str]) -> None:
    """Answer requests from stdin on `proto` until "close" or the end of stdin."""
    proto.write(json.dumps({"ok": True, "ready": True}) + "\n")
    proto.flush()
    for line in sys.stdin:
        request = json.loads(line)
        if request.get("cmd") == "close":
            break
        proto.write(json.dumps(answer(commands, request)) + "\n")
        proto.flush()


def load(path: str) -> Any:
    """The module at `path`, loaded by path (the venv has no metasim package) under the name
    `metasim_ref_<file stem>`."""
    stem = os.path.splitext(os.path.basename(path))[0]
    spec = importlib.util.spec_from_file_location(f"metasim_ref_{stem}", path)
    assert spec is not None and spec.loader is not None, path
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # as an import would (dataclasses, pickle need it)
    spec.loader.exec_module(module)
    return module


def main(argv: list[str]) -> None:
    # Never let this folder shadow an installed package (metasim/sim, its old home, holds
    # a `mujoco` package; metasim/reference holds none, but the rule costs nothing).
    here = os.path.dirname(os.path.abspath(__file__))
    sys.path[:] = [p for p in sys.path if os.path.abspath(p or ".") != here]
    proto = os.fdopen(os.dup(1), "w", encoding="utf-8")
    os.dup2(2, 1)
    sys.stdout = sys.stderr
    worker, *given = (load(path) for path in argv[1:])
    serve(worker.commands(*given), proto)


if __name__ == "__main__":
    main(sys.argv)
