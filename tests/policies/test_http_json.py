"""OpenVLA-style POST /act transport: json-numpy codec, client <-> server, faults."""

from __future__ import annotations

import base64
import contextlib
import json
import socket
import threading
import time
import urllib.error
import urllib.request
from collections.abc import Callable, Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import numpy as np
import pytest

from metasim.policies.transport import (
    DecodeError,
    HttpActClient,
    HttpActServer,
    PolicyAuthError,
    PolicyBadResponse,
    PolicyConnectionError,
    PolicyServerError,
    PolicyTimeout,
)
from metasim.policies.transport.http_json import dumps, loads


def _act(payload: dict[str, Any]) -> np.ndarray:
    """Deterministic: mean pixel, instruction length, and the unnorm key's length."""
    image = payload["image"]
    assert isinstance(image, np.ndarray) and image.dtype == np.uint8 and image.ndim == 3
    key = payload.get("unnorm_key") or ""
    return np.array(
        [image.mean(), len(payload["instruction"]), len(key), 0, 0, 0, 1], dtype=np.float32
    )


def _payload(fill: int = 3) -> dict[str, Any]:
    return {"image": np.full((16, 16, 3), fill, np.uint8), "instruction": "pick up the cube"}


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@contextlib.contextmanager
def _fake_server(handle: Callable[[BaseHTTPRequestHandler], None]) -> Iterator[str]:
    """A raw HTTP test double answering every POST with ``handle``."""

    class H(BaseHTTPRequestHandler):
        def do_POST(self) -> None:
            self.rfile.read(int(self.headers.get("Content-Length", "0")))
            handle(self)

        def log_message(self, format: str, *args: Any) -> None:
            pass

    httpd = ThreadingHTTPServer(("127.0.0.1", 0), H)
    httpd.daemon_threads = True
    thread = threading.Thread(target=httpd.serve_forever, kwargs={"poll_interval": 0.05})
    thread.start()
    try:
        yield f"http://127.0.0.1:{httpd.server_address[1]}"
    finally:
        httpd.shutdown()
        httpd.server_close()
        thread.join(5)


def _send(handler: BaseHTTPRequestHandler, status: int, body: bytes) -> None:
    handler.send_response(status)
    handler.send_header("Content-Length", str(len(body)))
    handler.end_headers()
    handler.wfile.write(body)


# -- json-numpy codec ----------------------------------------------------------------------


def test_json_numpy_wire_format() -> None:
    arr = np.arange(6, dtype="<i2").reshape(2, 3)
    doc = json.loads(dumps({"a": arr}))
    assert doc["a"] == {
        "__numpy__": base64.b64encode(arr.tobytes()).decode(),
        "dtype": "<i2",
        "shape": [2, 3],
    }


@pytest.mark.parametrize("dtype", ["|u1", "<f4", ">f8", "<i8", "|b1", "<c16", "|S3"])
def test_json_numpy_round_trip(dtype: str) -> None:
    arr = (np.arange(12) % 5).astype(dtype).reshape(3, 4)
    out = loads(dumps({"x": arr, "nested": [arr[0], {"s": "t"}]}))
    np.testing.assert_array_equal(out["x"], arr)
    assert out["x"].dtype == arr.dtype
    np.testing.assert_array_equal(out["nested"][0], arr[0])
    assert out["nested"][1] == {"s": "t"}


def test_json_numpy_scalars_and_non_contiguous() -> None:
    out = loads(dumps({"f": np.float32(1.5), "i": np.int64(-2), "v": np.eye(3)[:, 1]}))
    assert out["f"] == np.float32(1.5) and out["f"].dtype == np.float32
    assert out["i"] == -2 and out["i"].dtype == np.int64
    np.testing.assert_array_equal(out["v"], [0, 1, 0])


def test_json_numpy_refusals_and_malformed() -> None:
    with pytest.raises(ValueError, match="unsupported numpy dtype"):
        dumps({"x": np.array([None], dtype=object)})
    with pytest.raises(TypeError):
        dumps({"x": object()})
    good = json.loads(dumps(np.arange(4, dtype="<f4")))
    bad_docs = [
        {**good, "__numpy__": "!!not base64!!"},
        {**good, "shape": [5]},
        {**good, "shape": "4"},
        {**good, "dtype": "|O"},
        {**good, "dtype": [["a", "<f4"]]},
        {**good, "dtype": "no-such-dtype"},
        {**good, "__numpy__": 12},
    ]
    for doc in bad_docs:
        with pytest.raises(DecodeError):
            loads(json.dumps(doc))
    with pytest.raises(DecodeError, match="invalid JSON"):
        loads("{not json")


# -- client <-> server ---------------------------------------------------------------------


def test_round_trip_and_healthz() -> None:
    with HttpActServer(_act) as srv:
        assert srv.url == f"http://127.0.0.1:{srv.port}"
        client = HttpActClient(srv.url, timeout=5.0)
        assert client.url.endswith("/act")
        action = client.act({**_payload(3), "unnorm_key": "bridge_orig"})
        assert action.dtype == np.float64 and action.shape == (7,)
        np.testing.assert_allclose(action, [3, 16, 11, 0, 0, 0, 1])
        # the full /act URL works too
        np.testing.assert_allclose(HttpActClient(srv.url + "/act").act(_payload(5))[:3], [5, 16, 0])
        with urllib.request.urlopen(srv.url + "/healthz", timeout=2) as resp:
            assert resp.status == 200 and resp.read().decode().strip() == "OK"


def test_openvla_double_encoded_request() -> None:
    """OpenVLA's server accepts {"encoded": "<json-numpy text>"}: so does ours."""
    with HttpActServer(_act) as srv:
        body = json.dumps({"encoded": dumps(_payload(7))}).encode()
        req = urllib.request.Request(
            srv.url + "/act", data=body, headers={"Content-Type": "application/json"}
        )
        with urllib.request.urlopen(req, timeout=5) as resp:
            action = loads(resp.read())
        np.testing.assert_allclose(action[:2], [7, 16])


def test_concurrent_requests() -> None:
    def slow_act(payload: dict[str, Any]) -> np.ndarray:
        time.sleep(0.2)
        return _act(payload)

    results: list[np.ndarray] = []
    with HttpActServer(slow_act) as srv:
        t0 = time.monotonic()
        threads = [
            threading.Thread(
                target=lambda k=k: results.append(HttpActClient(srv.url).act(_payload(k)))
            )
            for k in range(5)
        ]
        for t in threads:
            t.start()
        for t in threads:
            t.join(5)
        assert time.monotonic() - t0 < 5 * 0.2
    assert sorted(float(r[0]) for r in results) == [0, 1, 2, 3, 4]


def test_api_key() -> None:
    with HttpActServer(_act, api_key="k3y") as srv:
        np.testing.assert_allclose(HttpActClient(srv.url, api_key="k3y").act(_payload(1))[0], 1)
        for bad in ("nope", None):
            with pytest.raises(PolicyAuthError) as info:
                HttpActClient(srv.url, api_key=bad).act(_payload())
            assert info.value.status == 401
        # healthz needs no key
        with urllib.request.urlopen(srv.url + "/healthz", timeout=2) as resp:
            assert resp.status == 200


def test_act_fn_exception_is_500_with_traceback() -> None:
    def broken(payload: dict[str, Any]) -> np.ndarray:
        raise KeyError("unnorm key 'nope' not in norm_stats")

    with HttpActServer(broken) as srv:
        with pytest.raises(PolicyServerError) as info:
            HttpActClient(srv.url, timeout=5).act(_payload())
    assert info.value.status == 500
    assert "Traceback" in info.value.server_text
    assert "not in norm_stats" in info.value.server_text


def test_server_rejects_bad_bodies() -> None:
    with HttpActServer(_act) as srv:
        for body in (b"{not json", b"[1, 2]", json.dumps({"image": {"__numpy__": 1}}).encode()):
            req = urllib.request.Request(srv.url + "/act", data=body)
            with pytest.raises(urllib.error.HTTPError) as info:
                urllib.request.urlopen(req, timeout=5)
            assert info.value.code == 400
            info.value.close()
        with pytest.raises(PolicyServerError) as err:
            HttpActClient(srv.url + "/nope/act").act(_payload())
        assert err.value.status == 404


def test_server_down_is_refused_fast() -> None:
    t0 = time.monotonic()
    with pytest.raises(PolicyConnectionError, match="cannot reach"):
        HttpActClient(f"http://127.0.0.1:{_free_port()}", timeout=5).act(_payload())
    assert time.monotonic() - t0 < 1.0


def test_slow_server_times_out() -> None:
    release = threading.Event()

    def slow(handler: BaseHTTPRequestHandler) -> None:
        release.wait(5)
        with contextlib.suppress(OSError):
            _send(handler, 200, dumps(np.zeros(7)).encode())

    with _fake_server(slow) as url:
        t0 = time.monotonic()
        with pytest.raises(PolicyTimeout):
            HttpActClient(url, timeout=0.5).act(_payload())
        assert time.monotonic() - t0 < 0.5 + 1.0
        release.set()


def test_server_dropping_the_connection_is_a_connection_error() -> None:
    def drop(handler: BaseHTTPRequestHandler) -> None:
        handler.close_connection = True
        handler.connection.shutdown(socket.SHUT_RDWR)

    with _fake_server(drop) as url, pytest.raises(PolicyConnectionError):
        HttpActClient(url, timeout=2).act(_payload())


@pytest.mark.parametrize(
    ("status", "body", "error", "match"),
    [
        (502, b"upstream exploded", PolicyServerError, "upstream exploded"),
        (200, b"\x00\xffnot json", PolicyBadResponse, "undecodable"),
        (200, b'"error"', PolicyServerError, "error"),  # OpenVLA's failure answer
        (200, b'"model not loaded"', PolicyServerError, "model not loaded"),
        (200, b'{"x": 1}', PolicyBadResponse, "not an array"),
        (200, b"[[1, 2], [3]]", PolicyBadResponse, "ragged"),
        (200, dumps(np.array(["a", "b"])).encode(), PolicyBadResponse, "non-numeric"),
        (200, dumps(np.array([1.0, np.nan])).encode(), PolicyBadResponse, "non-finite"),
        (200, dumps(np.zeros((2, 2, 2))).encode(), PolicyBadResponse, "shape"),
        (200, dumps(np.zeros(0)).encode(), PolicyBadResponse, "shape"),
        (
            200,
            json.dumps({"__numpy__": "AAAA", "dtype": "<f8", "shape": [7]}).encode(),
            PolicyBadResponse,
            "needs 56",
        ),
    ],
)
def test_garbage_answers_are_typed(status: int, body: bytes, error: type, match: str) -> None:
    with _fake_server(lambda h: _send(h, status, body)) as url:
        with pytest.raises(error, match=match):
            HttpActClient(url, timeout=2).act(_payload())


def test_accepted_answer_variants() -> None:
    """A plain list, a {"action": ...} dict and a double-encoded string all decode."""
    action = np.arange(7, dtype=np.float32)
    for body in (
        json.dumps(action.tolist()).encode(),
        dumps({"action": action}).encode(),
        json.dumps(dumps(action)).encode(),
    ):

        def answer(h: BaseHTTPRequestHandler, body: bytes = body) -> None:
            _send(h, 200, body)

        with _fake_server(answer) as url:
            np.testing.assert_allclose(HttpActClient(url, timeout=2).act(_payload()), action)
