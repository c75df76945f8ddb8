"""OpenpiClient <-> PolicyServer over real sockets on 127.0.0.1, with fault injection."""

from __future__ import annotations

import base64
import contextlib
import hashlib
import socket
import subprocess
import sys
import threading
import time
import urllib.error
import urllib.request
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any, ClassVar

import numpy as np
import pytest
from websockets.sync.client import connect as ws_connect
from websockets.sync.server import ServerConnection, serve

from metasim.policies.transport import (
    OpenpiClient,
    PolicyAuthError,
    PolicyBadResponse,
    PolicyConnectionError,
    PolicyServer,
    PolicyServerError,
    PolicyTimeout,
    PolicyTransportError,
    check_actions,
)
from metasim.policies.transport.msgpack_numpy import packb, unpackb
from metasim.policies.transport.server import MAX_FRAME_BYTES

H, D = 4, 3


class EchoSession:
    """Deterministic: actions[h] = 2 * state + h; counts calls, records close()."""

    instances: ClassVar[list[EchoSession]] = []

    def __init__(self) -> None:
        self.calls = 0
        self.closed = False
        EchoSession.instances.append(self)

    def infer(self, obs: dict[str, Any]) -> dict[str, Any]:
        self.calls += 1
        state = np.asarray(obs["observation/state"], dtype=np.float64)
        actions = 2.0 * state[None, :] + np.arange(H, dtype=np.float64)[:, None]
        return {"actions": actions.astype(np.float32), "calls": self.calls}

    def close(self) -> None:
        self.closed = True


def _obs(i: float = 1.0) -> dict[str, Any]:
    return {
        "observation/image": np.full((8, 8, 3), 7, np.uint8),
        "observation/state": np.array([i, -i, 0.5], dtype=np.float32),
        "prompt": "lift the cube",
    }


def _expected(i: float = 1.0) -> np.ndarray:
    return 2.0 * np.array([i, -i, 0.5])[None, :] + np.arange(H)[:, None]


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@contextlib.contextmanager
def _server(factory: Callable[[], Any], **kw: Any) -> Iterator[PolicyServer]:
    srv = PolicyServer(factory, **kw).start()
    try:
        yield srv
    finally:
        srv.stop(timeout=5.0)


@contextlib.contextmanager
def _raw_ws_server(handler: Callable[[ServerConnection], object]) -> Iterator[int]:
    """A bare websocket server running ``handler``: the test double for each fault."""

    def safe(conn: ServerConnection) -> None:
        with contextlib.suppress(Exception):
            handler(conn)

    server = serve(safe, "127.0.0.1", 0, compression=None, max_size=None)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield int(server.socket.getsockname()[1])
    finally:
        server.shutdown()
        thread.join(5)


# -- happy path ----------------------------------------------------------------------------


def test_round_trip_values_metadata_and_timing() -> None:
    EchoSession.instances.clear()
    meta = {"policy": "echo", "action_dim": D, "norm": np.ones(2)}
    with _server(EchoSession, metadata=meta) as srv:
        assert srv.url == f"ws://127.0.0.1:{srv.port}"
        with OpenpiClient("127.0.0.1", srv.port, timeout=5.0) as client:
            assert client.metadata["policy"] == "echo"
            assert client.metadata["action_dim"] == D
            np.testing.assert_array_equal(client.metadata["norm"], np.ones(2))
            for i in range(5):
                resp = client.infer(_obs(float(i)))
                acts = check_actions(resp, D)
                np.testing.assert_allclose(acts, _expected(float(i)))
                assert resp["calls"] == i + 1  # same session across the episode
                assert resp["server_timing"]["infer_ms"] >= 0.0
            assert "prev_total_ms" in resp["server_timing"]
        assert client.closed
        # A new connection is a new session; the old one was closed by the server.
        with OpenpiClient(srv.url, None, timeout=5.0) as client2:
            assert client2.infer(_obs())["calls"] == 1
        deadline = time.monotonic() + 3
        while not all(s.closed for s in EchoSession.instances) and time.monotonic() < deadline:
            time.sleep(0.01)
    assert len(EchoSession.instances) == 2
    assert all(s.closed for s in EchoSession.instances)


def test_metadata_is_the_first_frame() -> None:
    with _server(EchoSession, metadata={"hello": "world"}) as srv:
        with ws_connect(srv.url, compression=None, max_size=None, proxy=None) as ws:
            first = ws.recv(timeout=2)
            assert isinstance(first, bytes)
            assert unpackb(first) == {"hello": "world"}
            ws.send(packb(_obs(3.0)))
            answer = ws.recv(timeout=2, decode=False)
            np.testing.assert_allclose(unpackb(answer)["actions"], _expected(3.0))


def test_default_metadata_is_empty_dict() -> None:
    with _server(EchoSession) as srv, OpenpiClient(port=srv.port, timeout=5.0) as client:
        assert client.metadata == {}


def test_healthz() -> None:
    with _server(EchoSession, api_key="secret") as srv:
        url = f"http://127.0.0.1:{srv.port}/healthz"
        with urllib.request.urlopen(url, timeout=2) as resp:
            assert resp.status == 200
            assert resp.read().decode().strip() == "OK"


def test_api_key_accepted_and_refused() -> None:
    with _server(EchoSession, api_key="secret") as srv:
        with OpenpiClient(port=srv.port, api_key="secret", timeout=5.0) as client:
            np.testing.assert_allclose(check_actions(client.infer(_obs())), _expected())
        for bad in ("wrong", None):
            t0 = time.monotonic()
            with pytest.raises(PolicyAuthError) as info:
                OpenpiClient(port=srv.port, api_key=bad, timeout=5.0)
            assert info.value.status == 401
            assert isinstance(info.value, PolicyConnectionError)
            assert time.monotonic() - t0 < 2.0
        # The header sent is openpi-client's: Authorization: Api-Key <key>.
        headers = {"Authorization": "Api-Key secret"}
        with ws_connect(srv.url, additional_headers=headers, proxy=None) as ws:
            assert unpackb(ws.recv(timeout=2, decode=False)) == {}


def test_concurrent_connections() -> None:
    class SlowEcho(EchoSession):
        def infer(self, obs: dict[str, Any]) -> dict[str, Any]:
            time.sleep(0.2)
            return super().infer(obs)

    errors: list[BaseException] = []

    def worker(k: int) -> None:
        try:
            with OpenpiClient(port=srv.port, timeout=5.0) as client:
                for j in range(3):
                    x = float(10 * k + j)
                    np.testing.assert_allclose(check_actions(client.infer(_obs(x))), _expected(x))
        except BaseException as exc:
            errors.append(exc)

    with _server(SlowEcho) as srv:
        t0 = time.monotonic()
        threads = [threading.Thread(target=worker, args=(k,)) for k in range(4)]
        for t in threads:
            t.start()
        for t in threads:
            t.join(10)
        elapsed = time.monotonic() - t0
    assert not errors, errors
    assert elapsed < 4 * 3 * 0.2  # served in parallel, not one after the other


def test_server_refuses_text_frames_and_non_dict_observations() -> None:
    with _server(EchoSession) as srv:
        with ws_connect(srv.url, proxy=None) as ws:
            ws.recv(timeout=2)
            ws.send("hello")
            assert "binary msgpack" in ws.recv(timeout=2)
        with ws_connect(srv.url, proxy=None) as ws:
            ws.recv(timeout=2)
            ws.send(packb([1, 2, 3]))
            text = ws.recv(timeout=2)
            assert isinstance(text, str) and "expected a dict" in text
        with ws_connect(srv.url, proxy=None) as ws:
            ws.recv(timeout=2)
            ws.send(b"\xc1 not msgpack")
            text = ws.recv(timeout=2)
            assert isinstance(text, str) and "DecodeError" in text


def test_obs_that_cannot_be_encoded_is_refused_before_sending() -> None:
    with _server(EchoSession) as srv, OpenpiClient(port=srv.port, timeout=5.0) as client:
        with pytest.raises(ValueError, match="unsupported numpy dtype"):
            client.infer({"x": np.array([object()])})
        assert not client.closed
        check_actions(client.infer(_obs()))


# -- faults --------------------------------------------------------------------------------


def test_server_down_is_refused_fast() -> None:
    port = _free_port()
    t0 = time.monotonic()
    with pytest.raises(PolicyConnectionError, match="could not connect"):
        OpenpiClient(port=port, connect_timeout=5.0)
    assert time.monotonic() - t0 < 1.0


def test_handshake_never_completes_times_out() -> None:
    """A TCP listener that never speaks HTTP: bounded by connect_timeout."""
    with socket.socket() as lst:
        lst.bind(("127.0.0.1", 0))
        lst.listen(4)
        t0 = time.monotonic()
        with pytest.raises(PolicyTimeout):
            OpenpiClient(port=lst.getsockname()[1], connect_timeout=0.5, timeout=0.5)
        assert time.monotonic() - t0 < 2.0


def test_metadata_never_sent_times_out() -> None:
    stop = threading.Event()
    with _raw_ws_server(lambda conn: stop.wait(5)) as port:
        t0 = time.monotonic()
        with pytest.raises(PolicyTimeout, match="metadata"):
            OpenpiClient(port=port, timeout=0.5)
        assert time.monotonic() - t0 < 2.0
        stop.set()


def test_slow_server_times_out_then_reconnects() -> None:
    release = threading.Event()

    class Slow(EchoSession):
        def infer(self, obs: dict[str, Any]) -> dict[str, Any]:
            if obs.get("slow"):
                release.wait(5)
            return super().infer(obs)

    with _server(Slow) as srv:
        client = OpenpiClient(port=srv.port, timeout=0.5)
        check_actions(client.infer(_obs()))
        t0 = time.monotonic()
        with pytest.raises(PolicyTimeout, match=r"within 0\.5 s"):
            client.infer({**_obs(), "slow": True})
        assert 0.45 < time.monotonic() - t0 < 0.5 + 1.5
        assert client.closed
        with pytest.raises(PolicyConnectionError, match="reconnect"):
            client.infer(_obs())
        release.set()
        client.reconnect()
        assert not client.closed
        np.testing.assert_allclose(check_actions(client.infer(_obs(2.0))), _expected(2.0))
        client.close()


def test_server_crash_mid_episode_sends_traceback_and_closes() -> None:
    class Crashy(EchoSession):
        def infer(self, obs: dict[str, Any]) -> dict[str, Any]:
            if self.calls == 2:
                raise RuntimeError("boom in the policy")
            return super().infer(obs)

    with _server(Crashy) as srv, OpenpiClient(port=srv.port, timeout=5.0) as client:
        client.infer(_obs())
        client.infer(_obs())
        with pytest.raises(PolicyServerError) as info:
            client.infer(_obs())
        # type and message only: the traceback, with server paths, stays in the server log
        assert info.value.server_text == "RuntimeError: boom in the policy"
        assert client.closed
        with pytest.raises(PolicyConnectionError):
            client.infer(_obs())
    with _server(Crashy, debug=True) as srv, OpenpiClient(port=srv.port, timeout=5.0) as client:
        client.infer(_obs())
        client.infer(_obs())
        with pytest.raises(PolicyServerError) as info:
            client.infer(_obs())
        assert "Traceback" in info.value.server_text  # --debug sends the rest


def test_oversized_frame_is_refused_and_the_server_keeps_serving() -> None:
    with _server(EchoSession, max_frame_bytes=2**20) as srv:
        with OpenpiClient(port=srv.port, timeout=10.0) as client:
            with pytest.raises((PolicyConnectionError, PolicyServerError)):
                client.infer({**_obs(), "big": np.zeros(2**21, np.uint8)})
            assert client.closed
        with OpenpiClient(port=srv.port, timeout=5.0) as client:
            assert "actions" in client.infer({**_obs(), "ok": np.zeros(2**19, np.uint8)})
        client.reconnect()  # a fresh session works again
        assert client.infer(_obs())["calls"] == 1


_MEMORY_SERVER = """
import sys
import numpy as np
from metasim.policies.transport import PolicyServer

class Zeros:
    def infer(self, obs):
        return {"actions": np.zeros((4, 3), np.float32)}

srv = PolicyServer(Zeros, max_frame_bytes=int(sys.argv[1])).start()
print(srv.port, flush=True)
sys.stdin.read()  # serve until the test closes stdin
srv.stop(timeout=5.0)
"""


def _peak_bytes(pid: int) -> int:
    """The process's high-water resident memory (VmHWM): it counts a frame read then freed."""
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1]) * 1024
    raise AssertionError(f"no VmHWM in /proc/{pid}/status")


def _server_peak_growth(
    max_frame_bytes: int, frames: int, log: Path
) -> tuple[int, list[int | None]]:
    """Start a policy server in a process of its own, warm it up with one inference, then
    send ``frames`` 64 MB frames from clients without a size limit. Returns how much the
    server process's peak memory grew and the close code of each connection. Measuring the
    server's own process keeps the test process's allocations (the 64 MB frame it sends,
    whatever earlier tests left behind) out of the figure."""
    big = np.zeros(64 * 2**20, np.uint8).tobytes()
    with log.open("w") as err:
        proc = subprocess.Popen(
            [sys.executable, "-c", _MEMORY_SERVER, str(max_frame_bytes)],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=err,
            text=True,
        )
    try:
        assert proc.stdout is not None and proc.stdin is not None
        port = int(proc.stdout.readline() or 0)
        assert port, f"the server process did not start: {log.read_text()}"
        with OpenpiClient(port=port, timeout=10.0) as client:
            assert "actions" in client.infer(_obs())
        before = _peak_bytes(proc.pid)
        codes: list[int | None] = []
        for _ in range(frames):
            with ws_connect(f"ws://127.0.0.1:{port}", max_size=None) as ws:
                ws.recv(timeout=10)  # the metadata frame
                with contextlib.suppress(Exception):
                    ws.send(big)
                with contextlib.suppress(Exception):
                    ws.recv(timeout=10)
                codes.append(ws.close_code)
        grown = _peak_bytes(proc.pid) - before
        with OpenpiClient(port=port, timeout=10.0) as client:  # still serving
            assert "actions" in client.infer(_obs())
        return grown, codes
    finally:
        with contextlib.suppress(Exception):
            proc.stdin.close()  # type: ignore[union-attr]
        try:
            proc.wait(15)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(5)


@pytest.mark.skipif(not Path("/proc/self/status").exists(), reason="needs Linux /proc")
def test_oversized_frames_are_closed_1009_and_server_memory_stays_bounded(tmp_path: Path) -> None:
    """Six 64 MB frames from clients without a size limit: each is closed with 1009
    (message too big) from its header, before the server reads it, so the server process's
    peak memory grows by less than the 16 MiB limit itself. The control, the same server
    with a limit above the frame, reads one frame and its peak grows by more than 64 MB
    (129 MB measured), so the measurement sees a frame that is read."""
    grown, codes = _server_peak_growth(MAX_FRAME_BYTES, 6, tmp_path / "limited.log")
    assert codes == [1009] * 6
    assert grown < MAX_FRAME_BYTES, f"server peak memory grew by {grown / 2**20:.0f} MB"
    grown, _ = _server_peak_growth(2**30, 1, tmp_path / "unlimited.log")
    assert grown > 64 * 2**20, f"control: server peak grew by only {grown / 2**20:.0f} MB"


def test_session_factory_failure_is_a_server_error_at_connect() -> None:
    def factory() -> EchoSession:
        raise OSError("checkpoint not found")

    with _server(factory) as srv:
        with pytest.raises(PolicyServerError, match="checkpoint not found"):
            OpenpiClient(port=srv.port, timeout=2.0)


def test_session_returning_non_dict_is_a_server_error() -> None:
    class Bad:
        def infer(self, obs: dict[str, Any]) -> Any:
            return [1, 2, 3]

    with _server(Bad) as srv, OpenpiClient(port=srv.port, timeout=5.0) as client:
        with pytest.raises(PolicyServerError, match="not a dict"):
            client.infer(_obs())


def test_server_closing_the_socket_is_a_connection_error() -> None:
    def handler(conn: ServerConnection) -> None:
        conn.send(packb({}))
        conn.recv()
        conn.close()

    with _raw_ws_server(handler) as port, OpenpiClient(port=port, timeout=5.0) as client:
        t0 = time.monotonic()
        with pytest.raises(PolicyConnectionError, match="closed the connection"):
            client.infer(_obs())
        assert time.monotonic() - t0 < 2.0
        assert client.closed


def test_tcp_drop_without_close_frame_is_a_connection_error() -> None:
    def handler(conn: ServerConnection) -> None:
        conn.send(packb({}))
        conn.recv()
        conn.socket.shutdown(socket.SHUT_RDWR)
        conn.socket.close()

    with _raw_ws_server(handler) as port, OpenpiClient(port=port, timeout=5.0) as client:
        with pytest.raises(PolicyConnectionError):
            client.infer(_obs())


def test_server_stopped_mid_episode_is_a_connection_error() -> None:
    srv = PolicyServer(EchoSession).start()
    client = OpenpiClient(port=srv.port, timeout=5.0)
    client.infer(_obs())
    srv.stop()
    with pytest.raises(PolicyConnectionError):
        client.infer(_obs())
    client.close()


@pytest.mark.parametrize(
    ("answer", "error", "match"),
    [
        (b"\xc1\xc1 definitely not msgpack", PolicyBadResponse, "undecodable"),
        (packb([1, 2, 3]), PolicyBadResponse, "expected a dict"),
        (
            packb({"__ndarray__": True, "data": b"\x00", "dtype": "<f4", "shape": [3]}),
            PolicyBadResponse,
            "needs 12",
        ),
        (b"\x81\xc4\x0b__ndarray__\xc3", PolicyBadResponse, "lacks the 'dtype'"),
        ("a text error frame", PolicyServerError, "a text error frame"),
    ],
)
def test_garbage_answers_are_typed(
    answer: bytes | str, error: type[PolicyTransportError], match: str
) -> None:
    def handler(conn: ServerConnection) -> None:
        conn.send(packb({}))
        while True:
            conn.recv()
            conn.send(answer)

    with _raw_ws_server(handler) as port, OpenpiClient(port=port, timeout=5.0) as client:
        with pytest.raises(error, match=match):
            client.infer(_obs())


def test_garbage_metadata_is_typed() -> None:
    for frame, match in ((b"\xc1", "undecodable metadata"), (packb([1]), "expected a dict")):

        def handler(conn: ServerConnection, frame: bytes = frame) -> None:
            conn.send(frame)
            conn.recv()

        with _raw_ws_server(handler) as port:
            with pytest.raises(PolicyBadResponse, match=match):
                OpenpiClient(port=port, timeout=2.0)


@pytest.mark.parametrize(
    ("actions", "dim", "match"),
    [
        (None, None, "no 'actions' key"),
        (np.zeros((H, D + 1)), D, "width 4"),
        (np.zeros(D), D, "ndim 1"),
        (np.zeros((2, H, D)), D, "ndim 3"),
        (np.zeros((0, D)), D, "empty chunk"),
        (np.array([[0.0, np.nan, 1.0]]), D, "non-finite"),
        (np.array([[0.0, np.inf, 1.0]]), D, "non-finite"),
        (np.array([["a", "b", "c"]]), D, "non-numeric dtype"),
        (np.ones((H, D), dtype=bool), D, "non-numeric dtype"),
        ("not an array", D, "expected an array"),
    ],
)
def test_bad_actions_through_check_actions(actions: Any, dim: int | None, match: str) -> None:
    class Returns:
        def infer(self, obs: dict[str, Any]) -> dict[str, Any]:
            return {} if actions is None else {"actions": actions}

    with _server(Returns) as srv, OpenpiClient(port=srv.port, timeout=5.0) as client:
        resp = client.infer(_obs())
        with pytest.raises(PolicyBadResponse, match=match):
            check_actions(resp, dim)


def test_check_actions_accepts_ints_and_lists() -> None:
    out = check_actions({"actions": [[1, 2], [3, 4]]}, 2)
    assert out.dtype == np.float64 and out.shape == (2, 2)
    out = check_actions({"actions": np.ones((1, 7), np.int32)})
    assert out.dtype == np.float64
    with pytest.raises(PolicyBadResponse, match="is a list"):
        check_actions([1, 2])


def _manual_handshake_server(lst: socket.socket, hold: threading.Event) -> None:
    """Complete the websocket handshake by hand, send {} metadata, then never read."""
    conn, _ = lst.accept()
    with conn:
        data = b""
        while b"\r\n\r\n" not in data:
            data += conn.recv(4096)
        key = next(
            line.split(b":", 1)[1].strip()
            for line in data.split(b"\r\n")
            if line.lower().startswith(b"sec-websocket-key:")
        )
        accept = base64.b64encode(
            hashlib.sha1(key + b"258EAFA5-E914-47DA-95CA-C5AB0DC85B11").digest()
        )
        conn.sendall(
            b"HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\n"
            b"Connection: Upgrade\r\nSec-WebSocket-Accept: " + accept + b"\r\n\r\n"
        )
        meta = packb({})
        conn.sendall(bytes([0x82, len(meta)]) + meta)
        hold.wait(10)


def test_send_to_a_server_that_stops_reading_times_out() -> None:
    hold = threading.Event()
    with socket.socket() as lst:
        lst.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
        lst.bind(("127.0.0.1", 0))
        lst.listen(1)
        thread = threading.Thread(target=_manual_handshake_server, args=(lst, hold), daemon=True)
        thread.start()
        client = OpenpiClient(port=lst.getsockname()[1], timeout=0.5)
        big = {"observation/image": np.zeros(16 * 2**20, np.uint8)}
        t0 = time.monotonic()
        with pytest.raises(PolicyTimeout, match="could not send"):
            client.infer(big)
        assert time.monotonic() - t0 < 5.0
        assert client.closed
        hold.set()
        thread.join(5)


def test_idle_connection_is_closed_and_the_server_keeps_serving() -> None:
    with _server(EchoSession, idle_timeout=0.5) as srv:
        with ws_connect(srv.url, compression=None, max_size=None) as idle:
            unpackb(idle.recv(timeout=5))  # the metadata frame, then silence
            time.sleep(1.5)
            with pytest.raises(Exception) as info:
                idle.recv(timeout=5)
            assert getattr(info.value, "rcvd", None) is not None
            assert info.value.rcvd.code == 1001 and info.value.rcvd.reason == "idle timeout"
        with OpenpiClient(port=srv.port, timeout=5.0) as client:
            assert "actions" in client.infer(_obs())
