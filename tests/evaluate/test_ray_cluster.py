"""The Ray cluster of docs/scale_out.md, as a user types it, with Ray's token authentication.

Each test runs its shell steps in a sandbox of its own (`unshare`: a user, network and PID
namespace): the only network is loopback, so the cluster can use nothing but 127.0.0.1
(Ray rewrites `--address=127.0.0.1:...` to the machine's outward address otherwise), its
default ports collide with no other Ray on the machine, and `ray stop` there stops only
this sandbox's processes. HOME and Ray's temp dirs are temporary: `~/.ray` is untouched.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import pyarrow.parquet as pq
import pytest

from metasim.evaluate.config import compose
from metasim.evaluate.runner import run_eval

pytest.importorskip("ray", reason="the [ray] extra is not installed (CI installs it)")

SANDBOX = ["unshare", "--user", "--map-root-user", "--net", "--pid", "--fork", "--mount-proc"]
ARGS = ["suite.tasks=[lift_cube,close_drawer]", "episodes=8", "num_envs=2", "seed=3"]
COLS = ["task", "cell", "episode", "seed", "success", "progress", "steps", "error"]
REPO = Path(__file__).resolve().parents[2]
BIN = Path(sys.executable).parent

# Shared by both scripts: loopback up, `ray stop` on any exit, a local Ray run's helper.
PRELUDE = """
set -uf
ip link set lo up
trap 'ray stop --force >/dev/null 2>&1' EXIT
HEAD="--port=6379 --num-cpus=1 --include-dashboard=false --temp-dir=$T/h"
EVAL="python -m metasim.cli eval executor=ray ray_address=127.0.0.1:6379 shard_episodes=3"
"""

# docs/scale_out.md's steps after a local Ray run (which leaves ~/.ray/auth_token behind).
README_CLUSTER = """
python -c "import ray; ray.init(num_cpus=1, include_dashboard=False, _temp_dir='$T/l')
ray.shutdown()"
test -s ~/.ray/auth_token || { echo "no token after a local Ray run"; exit 3; }
ray get-auth-token --generate >/dev/null          # once, on the head (keeps an existing one)
export RAY_AUTH_MODE=token                         # on every node and for metasim eval
ray start --head $HEAD || exit 4
# a second node on this machine needs its own temp dir and ports
ray start --address=127.0.0.1:6379 --num-cpus=1 --temp-dir=$T/w \
  --dashboard-agent-listen-port=52366 --min-worker-port=20000 --max-worker-port=20100 || exit 5
python -c "import ray; ray.init(address='127.0.0.1:6379', log_to_driver=False)
alive = [n['NodeManagerAddress'] for n in ray.nodes() if n['Alive']]
assert alive == ['127.0.0.1'] * 2, alive" || exit 6
$EVAL $ARGS out=$T/ray
"""

# A head with one token; the driver's machine holds another (as a local Ray run leaves),
# then gets the head's token in RAY_AUTH_TOKEN. RAY_AUTH_MODE stays unset for the driver.
WRONG_THEN_RIGHT = """
HOME=$T/head ray get-auth-token --generate >/dev/null
mkdir -p ~/.ray && python -c "import secrets; print(secrets.token_hex(32))" > ~/.ray/auth_token
HOME=$T/head RAY_AUTH_MODE=token ray start --head $HEAD || exit 4
# a refusal is final: 3 connection tries (Ray's default is 20, one a second) keep it short
RAY_NUM_REDIS_GET_RETRIES=3 $EVAL $ARGS out=$T/refused > $T/refused.log 2>&1
echo $? > $T/refused.rc
RAY_AUTH_TOKEN=$(cat $T/head/.ray/auth_token) $EVAL $ARGS out=$T/ray
"""


def _sandbox_ok() -> bool:
    if shutil.which("unshare") is None or shutil.which("ip") is None:
        return False
    probe = subprocess.run([*SANDBOX, "ip", "link", "set", "lo", "up"], capture_output=True)
    return probe.returncode == 0


pytestmark = pytest.mark.skipif(
    not _sandbox_ok(), reason="needs unshare with user+net+pid namespaces (loopback-only sandbox)"
)


def _run_sandboxed(script: str, tmp: Path, timeout: float) -> subprocess.CompletedProcess[str]:
    env = {
        **os.environ,
        "HOME": str(tmp / "home"),
        "T": str(tmp),
        "ARGS": " ".join(ARGS),
        "PATH": f"{BIN}{os.pathsep}{os.environ['PATH']}",
        "PYTHONPATH": str(REPO),
        "RAY_USAGE_STATS_ENABLED": "0",
    }
    for key in ("RAY_AUTH_MODE", "RAY_AUTH_TOKEN", "RAY_AUTH_TOKEN_PATH", "RAY_ADDRESS"):
        env.pop(key, None)
    (tmp / "home").mkdir()
    return subprocess.run(
        [*SANDBOX, "bash", "-c", PRELUDE + script],
        env=env,
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=timeout,
    )


@pytest.fixture
def short_tmp():
    """A temp dir with a short path: Ray's unix sockets live under its temp dirs."""
    path = Path(tempfile.mkdtemp(prefix="rc", dir="/tmp"))
    yield path
    shutil.rmtree(path, ignore_errors=True)


def _rows(run_dir: Path) -> list[dict[str, object]]:
    return pq.read_table(run_dir / "episodes.parquet").select(COLS).to_pylist()


def _local_rows(tmp: Path) -> list[dict[str, object]]:
    return _rows(run_eval(compose([*ARGS, f"out={tmp / 'local'}"])).run_dir)


@pytest.mark.slow
def test_readme_cluster_after_local_ray_run(short_tmp):
    t0 = time.monotonic()
    done = _run_sandboxed(README_CLUSTER, short_tmp, timeout=400)
    print(f"README cluster steps: {time.monotonic() - t0:.1f} s")
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    assert _rows(short_tmp / "ray") == _local_rows(short_tmp)


@pytest.mark.slow
def test_wrong_token_is_one_paragraph_and_right_token_runs(short_tmp):
    t0 = time.monotonic()
    done = _run_sandboxed(WRONG_THEN_RIGHT, short_tmp, timeout=300)
    print(f"wrong then right token: {time.monotonic() - t0:.1f} s")
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    refused = (short_tmp / "refused.log").read_text()
    assert (short_tmp / "refused.rc").read_text().strip() == "2", refused
    assert "Traceback" not in refused, refused
    assert "refused this driver's authentication token" in refused, refused
    assert "RAY_AUTH_TOKEN" in refused and "ray get-auth-token" in refused, refused
    assert _rows(short_tmp / "ray") == _local_rows(short_tmp)


@pytest.mark.slow
def test_token_mode_without_a_token_is_one_paragraph(short_tmp):
    """RAY_AUTH_MODE=token with no token anywhere: Ray refuses before connecting."""
    script = "RAY_AUTH_MODE=token $EVAL suite.tasks=[lift_cube] episodes=1 out=$T/o 2>&1\n"
    done = _run_sandboxed(script, short_tmp, timeout=120)
    assert done.returncode == 2, done.stdout[-3000:] + done.stderr[-3000:]
    assert "Traceback" not in done.stdout, done.stdout
    assert "refused this driver's authentication token" in done.stdout, done.stdout
    assert "RAY_AUTH_MODE=token; token: no token found" in done.stdout, done.stdout
