"""Connecting the Ray executor to a cluster, with Ray's token authentication.

Ray 2.60 turns token authentication on for every local `ray.init()` and writes the token
to `~/.ray/auth_token`; from then on `ray start --head` on that machine enables it too,
while `ray start --address=...` and a driver given an explicit address do not (they need
`RAY_AUTH_MODE=token`), so they are refused. Ray finds a token in `RAY_AUTH_TOKEN`, in the
file named by `RAY_AUTH_TOKEN_PATH`, or in `~/.ray/auth_token`.

Here, when an address is given, `RAY_AUTH_MODE` is unset and a token is available, the
driver turns token mode on for the run (as `ray start --head` does), so a token copied to
this machine is all `metasim eval` needs. A token-mode driver still joins a cluster
started without authentication (checked on 2.60.0). A refused connection becomes one
paragraph (exit 2) that names the fix, not Ray's traceback.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from metasim.errors import MetasimInputError

AUTH_MODE = "RAY_AUTH_MODE"
_AUTH_MARKERS = ("InvalidAuthToken", "AuthenticationError", "Authentication token")


def token_source() -> str | None:
    """Where Ray would read this machine's token from, in Ray's order; None if nowhere."""
    if os.environ.get("RAY_AUTH_TOKEN", "").strip():
        return "RAY_AUTH_TOKEN"
    path = os.environ.get("RAY_AUTH_TOKEN_PATH")
    if path:
        return f"RAY_AUTH_TOKEN_PATH={path}" if _nonempty(Path(path)) else None
    default = Path.home() / ".ray" / "auth_token"
    return str(default) if _nonempty(default) else None


def _nonempty(path: Path) -> bool:
    try:
        return bool(path.read_text().strip())
    except OSError:
        return False


def _refresh(ray_config: Any) -> None:
    ray_config.initialize("")  # Ray caches RAY_AUTH_MODE in its C++ config


@contextmanager
def token_mode_if_available(address: str | None) -> Iterator[None]:
    """For an explicit address with `RAY_AUTH_MODE` unset and a token here: token mode
    for the duration (restored after). Otherwise Ray's own behavior is left alone."""
    if address is None or AUTH_MODE in os.environ or token_source() is None:
        yield
        return
    from ray._raylet import Config  # type: ignore[attr-defined]  # ray==2.60.0 pin, tested

    os.environ[AUTH_MODE] = "token"
    _refresh(Config)
    try:
        yield
    finally:
        os.environ.pop(AUTH_MODE, None)
        _refresh(Config)


def _chain_text(exc: BaseException) -> str:
    parts: list[str] = []
    seen: BaseException | None = exc
    while seen is not None and len(parts) < 8:
        parts.append(f"{type(seen).__name__}: {seen}")
        seen = seen.__cause__ or seen.__context__
    return " ".join(parts)


def connect_error(target: str | None, exc: BaseException) -> MetasimInputError:
    """The one-paragraph error for a failed `ray.init(address=target)`."""
    text = _chain_text(exc)
    if not any(m in text for m in _AUTH_MARKERS):
        first = (str(exc).splitlines() or [type(exc).__name__])[0]
        return MetasimInputError(
            "executor=ray", [f"cannot reach the Ray cluster at {target!r}: {first}"]
        )
    mode = os.environ.get(AUTH_MODE, "unset")
    source = token_source() or "no token found"
    return MetasimInputError(
        "executor=ray",
        [
            f"the Ray cluster at {target!r} refused this driver's authentication token "
            f"(RAY_AUTH_MODE={mode}; token: {source})"
        ],
        hint=(
            "The cluster uses Ray token authentication: copy the head node's token "
            "(`ray get-auth-token` there) to ~/.ray/auth_token on this machine, or set "
            "RAY_AUTH_TOKEN (or RAY_AUTH_TOKEN_PATH), with RAY_AUTH_MODE=token or unset; "
            "every node must have been started with the same token and RAY_AUTH_MODE=token "
            "(README, 'Scale out on Ray')"
        ),
    )
