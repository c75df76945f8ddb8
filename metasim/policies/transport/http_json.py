"""OpenVLA's ``deploy.py`` HTTP format: ``POST /act`` with a json-numpy body, one action back.

json-numpy encodes an array (or numpy scalar) as ``{"__numpy__": <base64 of C-order bytes>,
"dtype": dtype.str, "shape": [..]}``; an empty shape decodes to a scalar. The encoding is
implemented here (no dependency on ``json-numpy``); object and structured dtypes are refused.
OpenVLA's server also accepts a "double-encoded" body ``{"encoded": "<json text>"}`` and
answers the bare JSON string ``"error"`` when inference fails; both are handled.
"""

from __future__ import annotations

import base64
import binascii
import hmac
import json
import logging
import socket
import threading
import traceback
import urllib.error
import urllib.request
from collections.abc import Callable, Mapping
from http import HTTPStatus
from http.client import HTTPException
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from types import TracebackType
from typing import Any
from urllib.parse import urlsplit, urlunsplit

import numpy as np

from metasim.policies.transport.errors import (
    DecodeError,
    PolicyAuthError,
    PolicyBadResponse,
    PolicyConnectionError,
    PolicyServerError,
    PolicyTimeout,
)

__all__ = ["HttpActClient", "HttpActServer", "dumps", "loads"]

logger = logging.getLogger(__name__)

_REFUSED_KINDS = {"O": "object", "V": "void/structured"}
MAX_BODY_BYTES = 512 * 2**20


# -- json-numpy -----------------------------------------------------------------------------


def _encode(obj: Any) -> Any:
    if isinstance(obj, np.ndarray | np.generic):
        if obj.dtype.kind in _REFUSED_KINDS or obj.dtype.hasobject:
            raise ValueError(f"unsupported numpy dtype {obj.dtype} for json-numpy")
        return {
            "__numpy__": base64.b64encode(obj.tobytes()).decode("ascii"),
            "dtype": obj.dtype.str,
            "shape": list(np.shape(obj)),
        }
    raise TypeError(f"object of type {type(obj).__name__} is not JSON serializable")


def _decode(d: dict[str, Any]) -> Any:
    if "__numpy__" not in d:
        return d
    raw, dt, shape = d.get("__numpy__"), d.get("dtype"), d.get("shape")
    if not isinstance(raw, str):
        raise DecodeError("json-numpy '__numpy__' must be a base64 string")
    if not isinstance(dt, str):
        raise DecodeError(f"json-numpy dtype must be a string, got {dt!r}")
    if not isinstance(shape, list) or not all(type(n) is int and n >= 0 for n in shape):
        raise DecodeError(f"json-numpy shape must be a list of non-negative ints, got {shape!r}")
    try:
        dtype = np.dtype(dt)
    except (TypeError, ValueError, SyntaxError) as exc:
        raise DecodeError(f"bad json-numpy dtype {dt!r}: {exc}") from None
    if dtype.kind in _REFUSED_KINDS or dtype.hasobject or dtype.itemsize == 0:
        raise DecodeError(f"refused json-numpy dtype {dt!r}")
    try:
        data = base64.b64decode(raw, validate=True)
    except (binascii.Error, ValueError) as exc:
        raise DecodeError(f"bad base64 in json-numpy array: {exc}") from None
    count = 1
    for n in shape:
        count *= n
    if count * dtype.itemsize != len(data):
        raise DecodeError(
            f"json-numpy array has {len(data)} bytes, shape {tuple(shape)} of {dtype} needs "
            f"{count * dtype.itemsize}"
        )
    arr = np.frombuffer(data, dtype=dtype, count=count).copy()
    return arr[0] if not shape else arr.reshape(shape)


def dumps(obj: Any) -> str:
    """JSON text with numpy arrays/scalars in json-numpy form."""
    return json.dumps(obj, default=_encode)


def loads(text: str | bytes) -> Any:
    """Parse JSON text, decoding json-numpy arrays; raises DecodeError when malformed."""
    try:
        return json.loads(text, object_hook=_decode)
    except DecodeError:
        raise
    except (ValueError, RecursionError) as exc:  # JSONDecodeError and UnicodeDecodeError
        raise DecodeError(f"invalid JSON: {exc}") from None


# -- client ---------------------------------------------------------------------------------


def _act_url(url: str) -> str:
    parts = urlsplit(url if "://" in url else f"http://{url}")
    if parts.scheme not in ("http", "https"):
        raise ValueError(f"unsupported URL scheme in {url!r}")
    path = parts.path.rstrip("/")
    if not path.endswith("/act"):
        path += "/act"
    return urlunsplit((parts.scheme, parts.netloc, path, parts.query, ""))


def _is_timeout(exc: object) -> bool:
    return isinstance(exc, TimeoutError)


class HttpActClient:
    """Client of an OpenVLA-style ``POST /act`` server; :meth:`act` returns one action.

    ``url`` is the server's base URL or the full ``/act`` endpoint. ``timeout`` bounds the
    connection and each socket read. Environment proxies are ignored.
    """

    def __init__(self, url: str, *, api_key: str | None = None, timeout: float = 30.0) -> None:
        if timeout <= 0:
            raise ValueError("timeout must be positive")
        self.url = _act_url(url)
        self.timeout = float(timeout)
        self._api_key = api_key
        self._opener = urllib.request.build_opener(urllib.request.ProxyHandler({}))

    def act(self, payload: Mapping[str, Any]) -> np.ndarray:
        """POST ``payload`` (e.g. ``image`` uint8 HWC, ``instruction``, ``unnorm_key``) and
        return the action as a finite float64 array (usually shape (7,))."""
        if not isinstance(payload, Mapping):
            raise TypeError(f"payload must be a dict, got {type(payload).__name__}")
        body = dumps(dict(payload)).encode("utf-8")
        headers = {"Content-Type": "application/json", "Accept": "application/json"}
        if self._api_key:
            headers["Authorization"] = f"Api-Key {self._api_key}"
        request = urllib.request.Request(self.url, data=body, headers=headers, method="POST")
        try:
            with self._opener.open(request, timeout=self.timeout) as resp:
                raw = resp.read()
        except urllib.error.HTTPError as exc:
            text = _read_error_body(exc)
            if exc.code in (401, 403):
                raise PolicyAuthError(
                    f"{self.url} refused the request: HTTP {exc.code} {text}".strip(), exc.code
                ) from None
            raise PolicyServerError(text or exc.reason or "", status=exc.code) from None
        except urllib.error.URLError as exc:
            if _is_timeout(exc.reason):
                raise PolicyTimeout(
                    f"no answer from {self.url} within {self.timeout:g} s"
                ) from None
            raise PolicyConnectionError(f"cannot reach {self.url}: {exc.reason}") from None
        except TimeoutError:
            raise PolicyTimeout(f"no answer from {self.url} within {self.timeout:g} s") from None
        except (OSError, HTTPException) as exc:
            raise PolicyConnectionError(
                f"connection to {self.url} failed: {type(exc).__name__}: {exc}"
            ) from None
        return _parse_action(raw, self.url)


def _read_error_body(exc: urllib.error.HTTPError) -> str:
    try:
        data = exc.read()
    except (OSError, HTTPException):
        return ""
    return data.decode("utf-8", "replace").strip()


def _parse_action(raw: bytes, url: str) -> np.ndarray:
    try:
        value = loads(raw)
    except DecodeError as exc:
        raise PolicyBadResponse(f"undecodable answer from {url}: {exc}") from None
    if isinstance(value, str):
        try:
            value = loads(value)  # OpenVLA's double-encoded answer
        except DecodeError:
            raise PolicyServerError(value) from None  # e.g. OpenVLA's bare "error"
        if isinstance(value, str):
            raise PolicyServerError(value)
    if isinstance(value, Mapping) and "action" in value:
        value = value["action"]  # {"action": [...]} variant of some forks
    if isinstance(value, list):
        try:
            value = np.asarray(value)
        except (TypeError, ValueError):
            raise PolicyBadResponse(f"answer from {url} is a ragged list") from None
    if not isinstance(value, np.ndarray):
        raise PolicyBadResponse(f"answer from {url} is a {type(value).__name__}, not an array")
    if value.dtype.kind not in "iuf":
        raise PolicyBadResponse(f"action has non-numeric dtype {value.dtype}")
    if value.ndim not in (1, 2) or value.size == 0:
        raise PolicyBadResponse(f"action has shape {value.shape}, expected (D,) or (H, D)")
    out = value.astype(np.float64)
    if not np.isfinite(out).all():
        raise PolicyBadResponse(f"action has non-finite values: {out.tolist()}")
    return out


# -- server ---------------------------------------------------------------------------------


class HttpActServer:
    """``POST /act`` server (stdlib ThreadingHTTPServer in a background thread).

    ``act_fn(payload) -> action`` gets the decoded body (double-encoded bodies unwrapped).
    Errors: 400 undecodable body, 401 bad API key, 404 other paths, 500 with the traceback
    when ``act_fn`` raises. ``GET /healthz`` answers 200 "OK".
    """

    def __init__(
        self,
        act_fn: Callable[[dict[str, Any]], Any],
        host: str = "127.0.0.1",
        port: int = 0,
        api_key: str | None = None,
    ) -> None:
        self._act_fn = act_fn
        self.host = host
        self._requested_port = port
        self._api_key = api_key
        self._httpd: ThreadingHTTPServer | None = None
        self._thread: threading.Thread | None = None

    @property
    def port(self) -> int:
        """The bound port (after :meth:`start`)."""
        if self._httpd is None:
            raise RuntimeError("server not started")
        return int(self._httpd.server_address[1])

    @property
    def url(self) -> str:
        """``http://host:port`` of the running server."""
        host = f"[{self.host}]" if ":" in self.host else self.host
        return f"http://{host}:{self.port}"

    def _bind(self) -> ThreadingHTTPServer:
        if self._httpd is not None:
            raise RuntimeError("server already started")
        handler = _make_handler(self._act_fn, self._api_key)
        server_cls = type(
            "_ActHTTPServer",
            (ThreadingHTTPServer,),
            {
                "daemon_threads": True,
                "address_family": socket.AF_INET6 if ":" in self.host else socket.AF_INET,
            },
        )
        self._httpd = server_cls((self.host, self._requested_port), handler)
        return self._httpd

    def start(self) -> HttpActServer:
        """Bind and serve in a background thread; returns self."""
        httpd = self._bind()
        self._thread = threading.Thread(
            target=httpd.serve_forever, kwargs={"poll_interval": 0.1}, daemon=True
        )
        self._thread.start()
        return self

    def serve_forever(self) -> None:
        """Serve in the calling thread until interrupted (Ctrl-C), for a CLI."""
        httpd = self._bind()
        try:
            httpd.serve_forever(poll_interval=0.2)
        except KeyboardInterrupt:
            pass
        finally:
            self._httpd = None
            httpd.server_close()

    def stop(self) -> None:
        """Stop serving and close the listening socket."""
        httpd, self._httpd = self._httpd, None
        if httpd is None:
            return
        httpd.shutdown()
        httpd.server_close()
        if self._thread is not None:
            self._thread.join(5.0)
            self._thread = None

    def __enter__(self) -> HttpActServer:
        if self._httpd is None:
            self.start()
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.stop()


def _make_handler(
    act_fn: Callable[[dict[str, Any]], Any], api_key: str | None
) -> type[BaseHTTPRequestHandler]:
    class _Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"
        timeout = 60.0  # a stalled client cannot hold a handler thread forever

        def log_message(self, format: str, *args: Any) -> None:
            logger.debug("%s " + format, self.address_string(), *args)

        def _reply(self, status: int, body: str, ctype: str = "text/plain; charset=utf-8") -> None:
            data = body.encode("utf-8")
            self.send_response(status)
            self.send_header("Content-Type", ctype)
            self.send_header("Content-Length", str(len(data)))
            if status == HTTPStatus.UNAUTHORIZED:
                self.send_header("WWW-Authenticate", "Api-Key")
            self.end_headers()
            self.wfile.write(data)

        def do_GET(self) -> None:
            if self.path.split("?", 1)[0] == "/healthz":
                self._reply(HTTPStatus.OK, "OK\n")
            else:
                self._reply(HTTPStatus.NOT_FOUND, "not found; POST /act\n")

        def do_POST(self) -> None:
            if self.path.split("?", 1)[0].rstrip("/") != "/act":
                self._reply(HTTPStatus.NOT_FOUND, "not found; POST /act\n")
                return
            if api_key is not None:
                given = self.headers.get("Authorization", "")
                if not hmac.compare_digest(given.encode(), f"Api-Key {api_key}".encode()):
                    self.close_connection = True
                    self._reply(HTTPStatus.UNAUTHORIZED, "missing or bad API key\n")
                    return
            try:
                length = int(self.headers.get("Content-Length", ""))
            except ValueError:
                self.close_connection = True
                self._reply(HTTPStatus.LENGTH_REQUIRED, "Content-Length required\n")
                return
            if length < 0 or length > MAX_BODY_BYTES:
                self.close_connection = True
                self._reply(HTTPStatus.REQUEST_ENTITY_TOO_LARGE, "body too large\n")
                return
            try:
                payload = loads(self.rfile.read(length))
                if isinstance(payload, dict) and set(payload) == {"encoded"}:
                    payload = loads(payload["encoded"])
                if not isinstance(payload, dict):
                    raise DecodeError(f"body is a {type(payload).__name__}, expected an object")
            except DecodeError as exc:
                self._reply(HTTPStatus.BAD_REQUEST, f"bad request body: {exc}\n")
                return
            try:
                action = act_fn(payload)
                body = dumps(np.asarray(action) if isinstance(action, list) else action)
            except Exception:
                logger.exception("act_fn failed")
                self._reply(HTTPStatus.INTERNAL_SERVER_ERROR, traceback.format_exc())
                return
            self._reply(HTTPStatus.OK, body, "application/json")

    return _Handler
