"""Issue 47 finding 10: backend=warp's contact capacity as eval options. A pile of boxes
overflowing MuJoCo Warp's contacts was a RuntimeError traceback advising options that
`metasim eval` did not have; now `nconmax`/`njmax` are eval options (recorded in the
manifest, raised on resume) and the overflow is exit 2 naming them."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from metasim.cli.main import main
from metasim.evaluate.capacity import record_capacity
from tests.cli_refusal import refused

SCENES = Path(__file__).resolve().parents[2] / "scenes"


def _pile(tmp_path: Path) -> Path:
    """lift_cube with 8 more boxes dropped on the table, 0.3 s long."""
    text = (SCENES / "lift_cube.yaml").read_text()
    boxes = "".join(
        f"  - {{name: box{i}, shape: box, size: [0.02, 0.02, 0.02], mass: 0.05, "
        f"pos: [{0.4 + 0.05 * (i % 4):.2f}, {-0.1 + 0.05 * (i // 4):.2f}, "
        f"{0.03 + 0.01 * i:.2f}]}}\n"
        for i in range(8)
    )
    text = text.replace("cameras:", boxes + "cameras:", 1).replace(
        "time_limit: 8.0", "time_limit: 0.3"
    )
    path = tmp_path / "box_pile.yaml"
    path.write_text(text.replace("name: lift_cube", "name: box_pile"))
    return path


def test_capacity_options_are_for_backend_warp_only(capsys: pytest.CaptureFixture[str]) -> None:
    err = refused(capsys, ["eval", "--quiet", "nconmax=64"])
    assert "nconmax=64: MuJoCo Warp's capacity, for backend=warp only (got backend=mujoco)" in err
    err = refused(capsys, ["eval", "--quiet", "backend=warp", "njmax=0"])
    assert "njmax" in err and "greater than or equal to 1" in err


def test_a_resume_records_the_raised_capacity() -> None:
    held = {"config": {"nconmax": 4, "njmax": None, "seed": 0}}
    same = record_capacity(held, {"config": {"nconmax": 4, "njmax": None, "seed": 0}})
    assert same is held
    raised = record_capacity(held, {"config": {"nconmax": 64, "njmax": None, "seed": 0}})
    assert raised["config"] == {"nconmax": 64, "njmax": None, "seed": 0}
    assert raised["capacity_changes"] == [{"nconmax": 4, "njmax": None}]


@pytest.mark.slow
def test_a_contact_overflow_exits_2_naming_the_options_and_passes_when_raised(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """On Warp's CPU device: nconmax=4 overflows on the pile (exit 2, one paragraph, no
    traceback, no folder: no episode had finished); nconmax=64 runs, and the manifest
    records it."""
    scene = _pile(tmp_path)
    out = tmp_path / "run"
    args = ["eval", "--quiet", "backend=warp", "policy=noop", f"suite.tasks=[{scene}]"]
    args += ["num_envs=1", "episodes=1", f"out={out}"]
    err = refused(capsys, [*args, "nconmax=4"])
    assert "error: scene 'box_pile': backend=warp ran out of room for contacts" in err, err
    assert "(nconmax=4, njmax=1024 per world)" in err and "nconmax=8" in err
    assert not out.exists()
    assert main([*args, "nconmax=64"]) == 0, capsys.readouterr().err
    assert json.loads((out / "manifest.json").read_text())["config"]["nconmax"] == 64
