"""Synchronous client for openpi's websocket policy protocol.

Protocol: the server sends one msgpack frame of metadata right after the handshake; then each
request is one binary msgpack-numpy frame and each answer one binary frame back. A *text* frame
back is the server's error (usually a traceback), after which the server closes the socket.
The API key, when any, goes in the ``Authorization: Api-Key <key>`` header as in
``openpi-client``. Every network call is bounded by a timeout.
"""

from __future__ import annotations

import socket
import struct
import threading
import time
from collections.abc import Mapping
from types import TracebackType
from typing import Any
from urllib.parse import urlsplit

import websockets.exceptions as wsx
from websockets.sync.client import ClientConnection, connect

from metasim.policies.transport import msgpack_numpy
from metasim.policies.transport.errors import (
    DecodeError,
    PolicyAuthError,
    PolicyBadResponse,
    PolicyConnectionError,
    PolicyServerError,
    PolicyTimeout,
)

__all__ = ["OpenpiClient", "api_key_header"]

_CLOSE_TIMEOUT = 1.0


def api_key_header(api_key: str) -> dict[str, str]:
    """The HTTP header carrying an API key, as openpi-client sends it."""
    return {"Authorization": f"Api-Key {api_key}"}


def _make_uri(host: str, port: int | None) -> str:
    if host.startswith(("ws://", "wss://")):
        parts = urlsplit(host)
        if parts.port is not None or port is None:
            return host
        netloc = f"{parts.netloc}:{port}"
        return parts._replace(netloc=netloc).geturl()
    if ":" in host and not host.startswith("["):
        host = f"[{host}]"  # bare IPv6 literal
    return f"ws://{host}" if port is None else f"ws://{host}:{port}"


def _set_send_timeout(sock: socket.socket, timeout: float) -> None:
    """Bound blocking sends at the OS level (the receive thread keeps its blocking socket)."""
    secs = max(timeout, 0.001)
    try:
        sock.setsockopt(
            socket.SOL_SOCKET,
            socket.SO_SNDTIMEO,
            struct.pack("ll", int(secs), int((secs - int(secs)) * 1e6)),
        )
    except (OSError, struct.error):  # platform without SO_SNDTIMEO: best effort
        pass


def _closed_text(exc: wsx.ConnectionClosed) -> str:
    rcvd = exc.rcvd
    if rcvd is None:
        return "no close frame (connection dropped)"
    return f"close code {int(rcvd.code)}" + (f" ({rcvd.reason})" if rcvd.reason else "")


class OpenpiClient:
    """Client of an openpi-protocol policy server (``serve_policy.py`` or :class:`PolicyServer`).

    Connects on construction and reads the metadata frame (``.metadata``). ``timeout`` bounds
    each :meth:`infer` round trip and the metadata frame; ``connect_timeout`` bounds the TCP and
    websocket handshakes. After a timeout, a server error or a dropped connection the client
    is closed; call :meth:`reconnect` to start a new session.
    """

    def __init__(
        self,
        host: str = "127.0.0.1",
        port: int | None = 8000,
        *,
        api_key: str | None = None,
        timeout: float = 30.0,
        connect_timeout: float = 10.0,
    ) -> None:
        if timeout <= 0 or connect_timeout <= 0:
            raise ValueError("timeout and connect_timeout must be positive")
        self.url = _make_uri(host, port)
        self.timeout = float(timeout)
        self.connect_timeout = float(connect_timeout)
        self._api_key = api_key
        self._ws: ClientConnection | None = None
        self._metadata: dict[str, Any] = {}
        self._lock = threading.Lock()
        self._connect()

    # -- connection ------------------------------------------------------------------------

    @property
    def metadata(self) -> dict[str, Any]:
        """The metadata dict the server sent first."""
        return self._metadata

    @property
    def closed(self) -> bool:
        """Whether the client has no open connection (call :meth:`reconnect`)."""
        return self._ws is None

    def _connect(self) -> None:
        headers = api_key_header(self._api_key) if self._api_key else None
        try:
            ws = connect(
                self.url,
                compression=None,
                max_size=None,
                additional_headers=headers,
                proxy=None,
                open_timeout=self.connect_timeout,
                ping_interval=None,  # liveness comes from the per-call timeouts
                close_timeout=_CLOSE_TIMEOUT,
                legacy=True,
            )
        except wsx.InvalidStatus as exc:
            status = exc.response.status_code
            body = exc.response.body.decode("utf-8", "replace").strip() if exc.response.body else ""
            msg = f"{self.url} refused the websocket handshake: HTTP {status} {body}".strip()
            if status in (401, 403):
                raise PolicyAuthError(msg + " (missing or wrong API key?)", status) from None
            raise PolicyConnectionError(msg) from None
        except TimeoutError:
            raise PolicyTimeout(
                f"could not connect to {self.url} within {self.connect_timeout:g} s"
            ) from None
        except (OSError, wsx.WebSocketException) as exc:
            raise PolicyConnectionError(
                f"could not connect to {self.url}: {type(exc).__name__}: {exc}"
            ) from None
        _set_send_timeout(ws.socket, self.timeout)
        self._ws = ws
        try:
            first = self._recv(self.timeout, what="the metadata frame")
            try:
                meta = msgpack_numpy.unpackb(first)
            except DecodeError as exc:
                raise PolicyBadResponse(f"undecodable metadata frame: {exc}") from None
            if not isinstance(meta, dict):
                raise PolicyBadResponse(
                    f"metadata frame is a {type(meta).__name__}, expected a dict"
                )
        except BaseException:
            self.close()
            raise
        self._metadata = meta

    def _recv(self, timeout: float, *, what: str) -> bytes:
        """Receive one frame; text frames, timeouts and closes become typed errors."""
        ws = self._ws
        if ws is None:
            raise PolicyConnectionError("client is closed; call reconnect()")
        try:
            msg = ws.recv(timeout=max(timeout, 0.0))
        except TimeoutError:
            self.close()
            raise PolicyTimeout(
                f"no answer from {self.url} for {what} within {self.timeout:g} s"
            ) from None
        except wsx.ConnectionClosed as exc:
            self.close()
            raise PolicyConnectionError(
                f"{self.url} closed the connection while waiting for {what}: {_closed_text(exc)}"
            ) from None
        if isinstance(msg, str):
            self.close()
            raise PolicyServerError(msg)
        return msg

    def close(self) -> None:
        """Close the connection (idempotent, bounded by a short close timeout)."""
        ws, self._ws = self._ws, None
        if ws is not None:
            try:
                ws.close()
            except Exception:  # closing a broken socket must not raise
                pass

    def reconnect(self) -> None:
        """Close any connection and open a new one (reads a fresh metadata frame)."""
        with self._lock:
            self.close()
            self._connect()

    def __enter__(self) -> OpenpiClient:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()

    # -- inference -------------------------------------------------------------------------

    def infer(self, obs: Mapping[str, Any]) -> dict[str, Any]:
        """Send one observation dict, return the server's answer dict.

        Raises PolicyTimeout, PolicyConnectionError, PolicyServerError (the server's text) or
        PolicyBadResponse (undecodable / not a dict); ValueError/TypeError if ``obs`` cannot be
        encoded (nothing is sent then). Check the actions with ``check_actions``.
        """
        if not isinstance(obs, Mapping):
            raise TypeError(f"obs must be a dict, got {type(obs).__name__}")
        payload = msgpack_numpy.packb(dict(obs))
        with self._lock:
            ws = self._ws
            if ws is None:
                raise PolicyConnectionError("client is closed; call reconnect()")
            deadline = time.monotonic() + self.timeout
            try:
                ws.send(payload)
            except wsx.ConnectionClosed as exc:
                self.close()
                if isinstance(exc.__cause__, BlockingIOError | TimeoutError):
                    raise PolicyTimeout(
                        f"could not send the observation to {self.url} within {self.timeout:g} s"
                    ) from None
                raise PolicyConnectionError(
                    f"{self.url} closed the connection: {_closed_text(exc)}"
                ) from None
            except OSError as exc:
                self.close()
                raise PolicyConnectionError(f"sending to {self.url} failed: {exc}") from None
            answer = self._recv(deadline - time.monotonic(), what="the inference answer")
        try:
            resp = msgpack_numpy.unpackb(answer)
        except DecodeError as exc:
            raise PolicyBadResponse(f"undecodable answer from {self.url}: {exc}") from None
        if not isinstance(resp, dict):
            raise PolicyBadResponse(f"answer is a {type(resp).__name__}, expected a dict")
        return resp
