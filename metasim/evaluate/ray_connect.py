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

The connection is bounded: before `ray.init`, the address Ray would connect to (the one
given, `RAY_ADDRESS`, or without either the `ray_current_cluster` file a `ray start
--head` leaves in Ray's temp folder) must answer as a gRPC server (an HTTP/2 SETTINGS
frame for the client preface, as Ray's GCS sends) within METASIM_RAY_CONNECT_TIMEOUT_S
seconds, tried with plain sockets (Ctrl-C stops it), and Ray's own retries are cut to
that many seconds (`RAY_gcs_server_port_wait_time_s`, unless set). Ray alone retries
an address that refuses for about ten minutes, waits without end on one that accepts
and stays silent, and ignores Ctrl-C meanwhile. An address given that does not answer is one
paragraph (exit 2); a `ray_current_cluster` file naming a cluster that no longer answers
(a killed `ray start --head`) is ignored with a note, and a local Ray is started.
"""

from __future__ import annotations

import os
import socket
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from metasim.errors import MetasimInputError
from metasim.yamlio import LIMITS, limit

AUTH_MODE = "RAY_AUTH_MODE"
LIMITS["METASIM_RAY_CONNECT_TIMEOUT_S"] = 15  # one try of a Ray cluster's address
_WAIT = "RAY_gcs_server_port_wait_time_s"  # Ray's retries of the GCS, in seconds
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
            "(docs/scale_out.md)"
        ),
    )


# A gRPC server (Ray's GCS) answers an HTTP/2 client preface with a SETTINGS frame.
_H2_PREFACE = b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n" + bytes([0, 0, 0, 4, 0, 0, 0, 0, 0])
_H2_SETTINGS = 4  # the frame type byte


def _answers(address: str, timeout: float) -> str | None:
    """None when `host:port` answers as a gRPC server (Ray's GCS) within `timeout`
    seconds, else why not. Only sockets with timeouts: Ctrl-C stops it. Over TLS
    (RAY_USE_TLS) only the TCP connection is tried."""
    host, _, port = address.rpartition(":")
    deadline = time.monotonic() + timeout
    try:
        with socket.create_connection((host.strip("[]"), int(port)), timeout=timeout) as sock:
            if os.environ.get("RAY_USE_TLS", "0").lower() in ("1", "true"):
                return None
            sock.sendall(_H2_PREFACE)
            head = b""
            while len(head) < 9:
                sock.settimeout(max(0.01, deadline - time.monotonic()))
                chunk = sock.recv(9 - len(head))
                if not chunk:
                    break
                head += chunk
    except TimeoutError:
        return f"no answer within {timeout:g} s"
    except (OSError, ValueError) as exc:
        return getattr(exc, "strerror", None) or str(exc)
    if len(head) < 9 or head[3] != _H2_SETTINGS:
        return "something listens there, but it does not answer as a Ray cluster (gRPC)"
    return None


def bounded_target(address: str | None) -> str | None:
    """What to pass to `ray.init` so that it cannot hang: the address Ray would connect to,
    checked to answer (an input error naming it if it does not), or "local" in place of a
    stale `ray_current_cluster` file; None (start a local Ray) when there is nothing to
    connect to. See the module doc."""
    from ray._common.utils import get_ray_address_file  # ray==2.60.0 pin, tested
    from ray._private import services

    given = address or os.environ.get("RAY_ADDRESS") or None
    if os.environ.get(AUTH_MODE) == "token" and token_source() is None:
        # what Ray refuses before it connects anywhere (checked first, as Ray does)
        raise connect_error(given, RuntimeError("Authentication token not found"))
    timeout = limit("METASIM_RAY_CONNECT_TIMEOUT_S")
    try:
        resolved = services.canonicalize_bootstrap_address(given)  # type: ignore[arg-type]
    except (ValueError, ConnectionError) as exc:
        raise MetasimInputError("executor=ray", [f"ray_address {given!r}: {exc}"]) from None
    if resolved is None:
        return given
    why = _answers(resolved, timeout)
    if why is None:
        return given
    if given is None:
        stale = get_ray_address_file(None)
        sys.stderr.write(
            f"note: Ray's {stale} names a cluster at {resolved} that does not answer ({why}); "
            "starting a local Ray instead\n"
        )
        return "local"
    raise MetasimInputError(
        "executor=ray",
        [f"cannot reach the Ray cluster at {given!r} ({resolved}): {why}"],
        "Check the head's address and port (`ray status` on the head), or raise "
        "METASIM_RAY_CONNECT_TIMEOUT_S=<seconds> for a slow network",
    )


@contextmanager
def bounded_retries(target: str | None) -> Iterator[None]:
    """Ray's own retries of an existing cluster's GCS cut to METASIM_RAY_CONNECT_TIMEOUT_S
    seconds for the duration (unless `RAY_gcs_server_port_wait_time_s` or Ray's
    `RAY_NUM_REDIS_GET_RETRIES` is set); a local start keeps Ray's wait."""
    if (
        target in (None, "local")
        or _WAIT in os.environ
        or "RAY_NUM_REDIS_GET_RETRIES" in os.environ
    ):
        yield
        return
    os.environ[_WAIT] = str(limit("METASIM_RAY_CONNECT_TIMEOUT_S"))
    try:
        yield
    finally:
        os.environ.pop(_WAIT, None)
