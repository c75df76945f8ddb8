"""A policy server speaking openpi's websocket protocol (a counterpart of ``serve_policy.py``).

Each connection gets its own session from ``session_factory()``; the server sends the metadata
frame first, then answers each binary msgpack-numpy frame with ``session.infer(obs)`` plus
``server_timing``. An exception sends its type and message as a text frame (the traceback
only with ``debug``; it is always logged) and closes the connection, as openpi does. A frame
over ``max_frame_bytes`` is refused unread (close code 1009). ``GET /healthz`` answers 200;
with an ``api_key`` every other request must carry ``Authorization: Api-Key <key>`` or the
handshake is refused with 401. Never unpickles.
"""

from __future__ import annotations

import hmac
import http
import logging
import threading
import time
import traceback
from collections.abc import Callable, Mapping
from types import TracebackType
from typing import Any, Protocol

import websockets.exceptions as wsx
from websockets.frames import CloseCode
from websockets.http11 import Request, Response
from websockets.sync.server import Server, ServerConnection, serve

from metasim.policies.transport import msgpack_numpy

__all__ = ["MAX_FRAME_BYTES", "PolicyServer", "PolicySession"]

# Eight 224x224 RGB images are 1.2 MB; 16 MiB leaves room for large cameras and state.
MAX_FRAME_BYTES = 16 * 2**20

logger = logging.getLogger(__name__)


class PolicySession(Protocol):
    """One connection's policy: ``infer(obs) -> dict``; an optional ``close()`` is called at
    the end of the connection."""

    def infer(self, obs: dict[str, Any]) -> Mapping[str, Any]: ...


def _format_host(host: str) -> str:
    return f"[{host}]" if ":" in host and not host.startswith("[") else host


class PolicyServer:
    """Websocket policy server running in a background thread (several connections at once).

    ``port=0`` binds a free port; read the bound one from ``.port`` after :meth:`start`.
    """

    def __init__(
        self,
        session_factory: Callable[[], PolicySession],
        metadata: Mapping[str, Any] | None = None,
        host: str = "127.0.0.1",
        port: int = 0,
        api_key: str | None = None,
        max_frame_bytes: int = MAX_FRAME_BYTES,
        debug: bool = False,
        idle_timeout: float | None = 300.0,
    ) -> None:
        self._idle_timeout = idle_timeout
        self._session_factory = session_factory
        self._max_size = max_frame_bytes
        self._debug = debug
        self._metadata_frame = msgpack_numpy.packb(dict(metadata or {}))  # fail early if bad
        self.host = host
        self._requested_port = port
        self._api_key = api_key
        self._server: Server | None = None
        self._thread: threading.Thread | None = None

    # -- lifecycle -------------------------------------------------------------------------

    @property
    def port(self) -> int:
        """The bound port (after :meth:`start`)."""
        if self._server is None:
            raise RuntimeError("server not started")
        return int(self._server.socket.getsockname()[1])

    @property
    def url(self) -> str:
        """``ws://host:port`` of the running server."""
        return f"ws://{_format_host(self.host)}:{self.port}"

    def _bind(self) -> Server:
        if self._server is not None:
            raise RuntimeError("server already started")
        self._server = serve(
            self._handle,
            self.host,
            self._requested_port,
            compression=None,
            max_size=self._max_size,  # larger frames are closed with 1009, never buffered
            process_request=self._process_request,
            close_timeout=2.0,
        )
        return self._server

    def start(self) -> PolicyServer:
        """Bind and serve in a background thread; returns self."""
        server = self._bind()
        self._thread = threading.Thread(
            target=server.serve_forever, name=f"policy-server:{self.port}", daemon=True
        )
        self._thread.start()
        logger.info("policy server listening on %s", self.url)
        return self

    def serve_forever(self) -> None:
        """Serve in the calling thread until interrupted (Ctrl-C), for a CLI."""
        server = self._bind()
        logger.info("policy server listening on %s", self.url)
        try:
            server.serve_forever()
        except KeyboardInterrupt:
            pass
        finally:
            self.stop()

    def stop(self, timeout: float = 10.0) -> None:
        """Stop accepting, close open connections, wait (bounded) for their handlers."""
        server, self._server = self._server, None
        if server is None:
            return
        closer = threading.Thread(target=server.shutdown, name="policy-server-stop", daemon=True)
        closer.start()
        closer.join(timeout)
        if closer.is_alive():
            logger.warning("policy server: handlers still busy %.1f s after stop()", timeout)
        if self._thread is not None:
            self._thread.join(timeout)
            self._thread = None

    def __enter__(self) -> PolicyServer:
        if self._server is None:
            self.start()
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.stop()

    # -- protocol --------------------------------------------------------------------------

    def _process_request(self, conn: ServerConnection, request: Request) -> Response | None:
        if request.path.split("?", 1)[0] == "/healthz":
            return conn.respond(http.HTTPStatus.OK, "OK\n")
        if self._api_key is not None:
            given = request.headers.get("Authorization", "")
            expected = f"Api-Key {self._api_key}"
            if not hmac.compare_digest(given.encode(), expected.encode()):
                response = conn.respond(http.HTTPStatus.UNAUTHORIZED, "Missing or bad API key\n")
                response.headers["WWW-Authenticate"] = "Api-Key"
                return response
        return None

    def _error_text(self, exc: BaseException) -> str:
        """What a client is told: the exception's type and message (the traceback, with
        the server's paths, stays in the server log unless `debug`)."""
        if self._debug:
            return traceback.format_exc()
        return f"{type(exc).__name__}: {exc}"

    @staticmethod
    def _fail(conn: ServerConnection, text: str, code: CloseCode, reason: str) -> None:
        """Send an error text frame then close, as openpi's server does."""
        try:
            conn.send(text)
            conn.close(code=code, reason=reason)
        except (wsx.ConnectionClosed, OSError):
            pass

    def _handle(self, conn: ServerConnection) -> None:
        peer = conn.remote_address
        logger.info("policy connection from %s", peer)
        try:
            session = self._session_factory()
        except Exception as exc:
            logger.exception("session_factory failed for %s", peer)
            self._fail(conn, self._error_text(exc), CloseCode.INTERNAL_ERROR, "session failed")
            return
        try:
            conn.send(self._metadata_frame)
            self._serve_session(conn, session)
        except (wsx.ConnectionClosed, OSError):
            pass
        finally:
            close = getattr(session, "close", None)
            if callable(close):
                try:
                    close()
                except Exception:
                    logger.exception("session.close() failed")
            logger.info("policy connection from %s closed", peer)

    def _serve_session(self, conn: ServerConnection, session: PolicySession) -> None:
        prev_total_ms: float | None = None
        while True:
            try:
                frame = conn.recv(timeout=self._idle_timeout)
            except wsx.ConnectionClosed:
                return
            except TimeoutError:
                logger.info("closing %s: idle for %s s", conn.remote_address, self._idle_timeout)
                conn.close(code=CloseCode.GOING_AWAY, reason="idle timeout")
                return
            start = time.monotonic()
            if isinstance(frame, str):
                self._fail(
                    conn,
                    "expected a binary msgpack frame, got a text frame",
                    CloseCode.UNSUPPORTED_DATA,
                    "text frame",
                )
                return
            try:
                obs = msgpack_numpy.unpackb(frame)
                if not isinstance(obs, dict):
                    raise TypeError(f"observation is a {type(obs).__name__}, expected a dict")
                t0 = time.monotonic()
                result = session.infer(obs)
                infer_ms = (time.monotonic() - t0) * 1000.0
                if not isinstance(result, Mapping):
                    raise TypeError(f"session.infer returned {type(result).__name__}, not a dict")
                out = dict(result)
                timing = dict(out.get("server_timing") or {})
                timing["infer_ms"] = infer_ms
                if prev_total_ms is not None:
                    timing["prev_total_ms"] = prev_total_ms
                out["server_timing"] = timing
                payload = msgpack_numpy.packb(out)
            except Exception as exc:
                logger.exception("policy inference failed for %s", conn.remote_address)
                self._fail(
                    conn,
                    self._error_text(exc),
                    CloseCode.INTERNAL_ERROR,
                    "Internal server error. Error included in previous frame.",
                )
                return
            conn.send(payload)
            prev_total_ms = (time.monotonic() - start) * 1000.0
