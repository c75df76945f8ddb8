"""Interoperability with the real openpi packages from PyPI, run in their own venv.

``openpi-client`` 0.1.2 pins numpy<2, so it lives in ``.cache/openpi-client-venv`` (built on
first use, reused afterwards; the tests skip when it cannot be built, e.g. offline):

* openpi's ``WebsocketClientPolicy`` talks to our :class:`PolicyServer` (values, metadata,
  numpy scalars, API key header, error frames);
* our :class:`OpenpiClient` talks to ``openpi-server``'s ``WebsocketPolicyServer``.
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
import shutil
import socket
import subprocess
import sys
import time
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any, ClassVar

import numpy as np
import pytest

from metasim.policies.transport import (
    OpenpiClient,
    PolicyServer,
    PolicyServerError,
    check_actions,
)
from tests.lanes import needs

pytestmark = pytest.mark.reference

REPO = Path(__file__).resolve().parents[2]
VENV = REPO / ".cache" / "openpi-client-venv"
REQUIREMENTS = ["openpi-client==0.1.2", "openpi-server==0.1.0", "numpy<2", "typing_extensions"]
# openpi-client 0.1.2 imports typing_extensions without declaring it, hence the extra pin.
PROBE = (
    "import openpi_client.websocket_client_policy, openpi_server, numpy; print(numpy.__version__)"
)

H = 5


def _venv_python() -> Path:
    return VENV / "bin" / "python"


def _venv_ok() -> bool:
    py = _venv_python()
    if not py.exists():
        return False
    probe = subprocess.run([str(py), "-c", PROBE], capture_output=True, text=True, timeout=60)
    return probe.returncode == 0 and probe.stdout.strip().startswith("1.")


def _build_venv() -> None:
    shutil.rmtree(VENV, ignore_errors=True)  # a half-built venv from an interrupted run
    try:
        subprocess.run([sys.executable, "-m", "venv", str(VENV)], check=True, timeout=120)
        subprocess.run(
            [str(_venv_python()), "-m", "pip", "install", "-q", *REQUIREMENTS],
            check=True,
            timeout=600,
            capture_output=True,
            text=True,
        )
    except BaseException:
        shutil.rmtree(VENV, ignore_errors=True)
        raise


@pytest.fixture(scope="module")
@needs("reference")
def openpi_python() -> Path:
    """The venv's python, with openpi-client and openpi-server installed."""
    VENV.parent.mkdir(parents=True, exist_ok=True)
    with open(VENV.parent / "openpi-client-venv.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if not _venv_ok():
            try:
                _build_venv()
            except (subprocess.SubprocessError, OSError) as exc:
                detail = getattr(exc, "stderr", None) or ""
                pytest.skip(
                    f"cannot build the openpi-client venv (offline?): {exc} {detail[-500:]}"
                )
            if not _venv_ok():
                pytest.skip("openpi-client venv built but openpi_client does not import")
    return _venv_python()


def _clean_env() -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if "proxy" not in k.lower()}
    env["NO_PROXY"] = "127.0.0.1,localhost"
    env["PYTHONDONTWRITEBYTECODE"] = "1"
    return env


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


# -- openpi-client -> our PolicyServer -----------------------------------------------------

CLIENT_SCRIPT = r"""
import json, sys
import numpy as np
from openpi_client import websocket_client_policy as wcp

port, api_key = int(sys.argv[1]), (sys.argv[2] or None)
policy = wcp.WebsocketClientPolicy(host="127.0.0.1", port=port, api_key=api_key)
meta = policy.get_server_metadata()
out = {
    "metadata": {k: (v.tolist() if isinstance(v, np.ndarray) else v) for k, v in meta.items()},
    "meta_stats_dtype": meta["stats"].dtype.str,
    "results": [],
}
for i in range(3):
    obs = {
        "observation/image": np.full((224, 224, 3), 10 * i, np.uint8),
        "observation/wrist_image": np.zeros((224, 224, 3), np.uint8),
        "observation/state": (np.arange(8, dtype=np.float32) * (i + 1)),
        "prompt": "put the cube in the bowl",
        "step": np.int64(i),
        "scale": np.float32(0.25),
    }
    r = policy.infer(obs)
    out["results"].append({
        "actions": r["actions"].tolist(),
        "dtype": r["actions"].dtype.str,
        "scale": float(r["scale"]),
        "scale_type": type(r["scale"]).__name__,
        "timing_keys": sorted(r["server_timing"]),
    })
try:
    policy.infer({"crash": np.bool_(True)})
    out["crash"] = None
except RuntimeError as exc:
    out["crash"] = str(exc)
print("RESULT " + json.dumps(out))
"""


class DeterministicSession:
    """actions[h] = 0.5 * state + h + image[0, 0, 0]; checks the observation's types."""

    seen: ClassVar[list[dict[str, str]]] = []

    def infer(self, obs: dict[str, Any]) -> dict[str, Any]:
        if obs.get("crash"):
            raise ValueError("crash requested by the client")
        DeterministicSession.seen.append({k: type(v).__name__ for k, v in obs.items()})
        image = obs["observation/image"]
        assert image.dtype == np.uint8 and image.shape == (224, 224, 3)
        state = obs["observation/state"].astype(np.float64)
        actions = 0.5 * state[None, :] + np.arange(H)[:, None] + float(image[0, 0, 0])
        return {"actions": actions.astype(np.float32), "scale": np.float32(obs["scale"] * 2)}


def _expected(i: int) -> np.ndarray:
    state = np.arange(8, dtype=np.float64) * (i + 1)
    return 0.5 * state[None, :] + np.arange(H)[:, None] + 10 * i


@pytest.mark.parametrize("api_key", [None, "s3cret"])
def test_openpi_client_against_our_server(
    openpi_python: Path, tmp_path: Path, api_key: Any
) -> None:
    DeterministicSession.seen.clear()
    script = tmp_path / "client.py"
    script.write_text(CLIENT_SCRIPT)
    meta = {"policy": "deterministic", "action_horizon": H, "stats": np.arange(3, dtype="<f4")}
    with PolicyServer(DeterministicSession, metadata=meta, api_key=api_key) as srv:
        proc = subprocess.run(
            [str(openpi_python), str(script), str(srv.port), api_key or ""],
            capture_output=True,
            text=True,
            timeout=60,
            env=_clean_env(),
        )
    assert proc.returncode == 0, proc.stderr[-3000:]
    line = next(x for x in proc.stdout.splitlines() if x.startswith("RESULT "))
    out = json.loads(line[len("RESULT ") :])
    assert out["metadata"] == {"policy": "deterministic", "action_horizon": H, "stats": [0, 1, 2]}
    assert out["meta_stats_dtype"] == "<f4"
    for i, res in enumerate(out["results"]):
        np.testing.assert_allclose(np.array(res["actions"]), _expected(i), rtol=1e-6)
        assert res["dtype"] == "<f4"
        assert res["scale"] == 0.5 and res["scale_type"] == "float32"
        assert "infer_ms" in res["timing_keys"]
    # openpi-client turns our error text frame into its RuntimeError with the traceback.
    assert out["crash"] is not None
    assert "Error in inference server" in out["crash"]
    assert "crash requested by the client" in out["crash"]
    # openpi's encoder sent numpy scalars and strings that we decode to the same types.
    assert DeterministicSession.seen[0]["step"] == "int64"
    assert DeterministicSession.seen[0]["scale"] == "float32"
    assert DeterministicSession.seen[0]["prompt"] == "str"


def test_openpi_client_with_wrong_key_is_refused(openpi_python: Path, tmp_path: Path) -> None:
    script = tmp_path / "client.py"
    script.write_text(CLIENT_SCRIPT)
    with PolicyServer(DeterministicSession, api_key="right") as srv:
        proc = subprocess.run(
            [str(openpi_python), str(script), str(srv.port), "wrong"],
            capture_output=True,
            text=True,
            timeout=60,
            env=_clean_env(),
        )
    assert proc.returncode != 0
    assert "401" in proc.stderr


# -- our OpenpiClient -> openpi-server -----------------------------------------------------

SERVER_SCRIPT = r"""
import sys
import numpy as np
from openpi_server import WebsocketPolicyServer

class Policy:
    def infer(self, obs):
        if obs.get("crash"):
            raise ValueError("openpi-server policy crashed on request")
        state = np.asarray(obs["observation/state"], dtype=np.float64)
        actions = 0.5 * state[None, :] + np.arange(5)[:, None] + float(obs["offset"])
        return {"actions": actions.astype(np.float32), "n": np.int32(state.size)}

    def reset(self):
        pass

server = WebsocketPolicyServer(
    Policy(), host="127.0.0.1", port=int(sys.argv[1]),
    metadata={"server": "openpi-server", "horizon": 5},
)
server.serve_forever()
"""


@contextlib.contextmanager
def _openpi_server(python: Path, tmp_path: Path) -> Iterator[int]:
    script = tmp_path / "server.py"
    script.write_text(SERVER_SCRIPT)
    port = _free_port()
    proc = subprocess.Popen(
        [str(python), str(script), str(port)],
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        env=_clean_env(),
    )
    try:
        deadline = time.monotonic() + 30
        opener = urllib.request.build_opener(urllib.request.ProxyHandler({}))
        while True:
            if proc.poll() is not None:
                out = proc.stdout.read().decode() if proc.stdout else ""
                pytest.fail(f"openpi-server exited with {proc.returncode}:\n{out[-3000:]}")
            try:
                with opener.open(f"http://127.0.0.1:{port}/healthz", timeout=1) as resp:
                    if resp.status == 200:
                        break
            except OSError:
                pass
            if time.monotonic() > deadline:
                pytest.fail("openpi-server did not answer /healthz within 30 s")
            time.sleep(0.1)
        yield port
    finally:
        proc.terminate()
        try:
            proc.wait(5)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(5)
        if proc.stdout:
            proc.stdout.close()


def test_our_client_against_openpi_server(openpi_python: Path, tmp_path: Path) -> None:
    with _openpi_server(openpi_python, tmp_path) as port:
        with OpenpiClient("127.0.0.1", port, timeout=10.0) as client:
            assert client.metadata == {"server": "openpi-server", "horizon": 5}
            for i in range(3):
                state = np.arange(8, dtype=np.float32) * (i + 1)
                obs = {
                    "observation/image": np.zeros((224, 224, 3), np.uint8),
                    "observation/state": state,
                    "prompt": "open the drawer",
                    "offset": np.float32(i),
                }
                resp = client.infer(obs)
                acts = check_actions(resp, 8)
                expected = 0.5 * state.astype(np.float64)[None, :] + np.arange(5)[:, None] + i
                np.testing.assert_allclose(acts, expected, rtol=1e-6)
                assert resp["n"] == 8 and isinstance(resp["n"], np.int32)
                assert resp["server_timing"]["infer_ms"] >= 0
            with pytest.raises(PolicyServerError, match="crashed on request") as info:
                client.infer({"crash": True})
            assert "Traceback" in info.value.server_text
            assert client.closed
            client.reconnect()  # openpi-server keeps serving new connections after an error
            assert client.metadata["server"] == "openpi-server"
