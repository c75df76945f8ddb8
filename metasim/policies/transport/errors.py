"""Typed errors of the policy transports, and the check of an `actions` answer.

Every failure of a remote policy surfaces as a subclass of :class:`PolicyTransportError`, so a
harness can tell a slow server from a dead one, a crashed one or one that answers garbage.
Malformed encoded payloads (either direction) raise :class:`DecodeError`.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np

__all__ = [
    "DecodeError",
    "PolicyAuthError",
    "PolicyBadResponse",
    "PolicyConnectionError",
    "PolicyServerError",
    "PolicyTimeout",
    "PolicyTransportError",
    "check_actions",
]


class DecodeError(ValueError):
    """An encoded payload (msgpack-numpy or json-numpy) is malformed."""


class PolicyTransportError(RuntimeError):
    """Base class of every error talking to a remote policy."""


class PolicyTimeout(PolicyTransportError):
    """The server did not answer (or accept the connection) within the timeout."""


class PolicyConnectionError(PolicyTransportError):
    """The connection was refused, could not be opened, or was closed mid-episode."""


class PolicyAuthError(PolicyConnectionError):
    """The server refused the handshake because of a missing or wrong API key."""

    def __init__(self, message: str, status: int | None = None) -> None:
        super().__init__(message)
        self.status = status


class PolicyServerError(PolicyTransportError):
    """The server reported an error; ``server_text`` holds its text (often a traceback)."""

    def __init__(self, server_text: str, status: int | None = None) -> None:
        head = f"HTTP {status}: " if status is not None else ""
        super().__init__(f"policy server error: {head}{server_text}")
        self.server_text = server_text
        self.status = status


class PolicyBadResponse(PolicyTransportError):
    """The server answered something that cannot be used (undecodable, wrong type or shape)."""


_NUMERIC_KINDS = "iuf"


def check_actions(resp: Any, dim: int | None = None, drop_extra: bool = False) -> np.ndarray:
    """Validate ``resp["actions"]`` and return it as a float64 ``(H, D)`` array; with
    ``drop_extra``, wider actions are cut to their first ``dim`` columns first.

    Raises :class:`PolicyBadResponse` naming what is wrong: not a dict, missing key,
    non-numeric dtype, wrong ndim, empty chunk, wrong width (when ``dim`` is given), NaN/inf.
    """
    if not isinstance(resp, Mapping):
        raise PolicyBadResponse(f"response is a {type(resp).__name__}, expected a dict")
    if "actions" not in resp:
        keys = sorted(str(k) for k in resp)
        raise PolicyBadResponse(f"response has no 'actions' key (keys: {keys})")
    raw = resp["actions"]
    if isinstance(raw, np.ndarray):
        arr = raw
    elif isinstance(raw, list | tuple):
        try:
            arr = np.asarray(raw)
        except (ValueError, TypeError) as exc:
            raise PolicyBadResponse(f"'actions' is a ragged or invalid list: {exc}") from None
    else:
        raise PolicyBadResponse(f"'actions' is a {type(raw).__name__}, expected an array")
    if arr.dtype.kind not in _NUMERIC_KINDS:
        raise PolicyBadResponse(
            f"'actions' has non-numeric dtype {arr.dtype} (expected integer or float)"
        )
    if arr.ndim != 2:
        raise PolicyBadResponse(
            f"'actions' has ndim {arr.ndim} (shape {arr.shape}), expected 2: (horizon, dim)"
        )
    if arr.shape[0] == 0:
        raise PolicyBadResponse(f"'actions' is an empty chunk (shape {arr.shape})")
    if dim is not None and drop_extra and arr.shape[1] > dim:
        arr = arr[:, :dim]
    if dim is not None and arr.shape[1] != dim:
        raise PolicyBadResponse(
            f"'actions' has width {arr.shape[1]} (shape {arr.shape}), expected {dim}"
        )
    out = arr.astype(np.float64, copy=True)
    bad = ~np.isfinite(out)
    if bad.any():
        first = tuple(int(i) for i in np.argwhere(bad)[0])
        raise PolicyBadResponse(
            f"'actions' has {int(bad.sum())} non-finite value(s) (NaN/inf), first at {first}"
        )
    return out
