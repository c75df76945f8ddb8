"""Perturbation grids: designs expand to seeded cells; every axis changes what it says."""

from __future__ import annotations

import json

import numpy as np
import pyarrow.parquet as pq
import pytest

from metasim.cli.main import main
from metasim.envs.noise import RuntimeNoise
from metasim.envs.vec_env import MetasimVectorEnv
from metasim.paths import PERTURBATIONS, SCENES
from metasim.perturb import RUNTIME_AXES, SCENE_AXES, Grid, apply_cell, expand, load_grid
from metasim.scene import compile_scene, load_scene

LEVELS = {"levels": [0.0, 0.1, 0.2]}


def _grid(design, factors, **kw):
    return Grid.model_validate({"name": "t", "design": design, "factors": factors, **kw})


def test_factorial_and_ofat_sizes():
    factors = [
        {"name": "a", "axis": "object_x", "levels": [0.0, 0.1, 0.2]},
        {"name": "b", "axis": "mass", "levels": [1.0, 2.0]},
        {"name": "c", "axis": "action_latency", "levels": [0, 1, 2, 3]},
    ]
    assert len(expand(_grid("factorial", factors))) == 3 * 2 * 4
    ofat = expand(_grid("ofat", factors))
    assert len(ofat) == 1 + 2 + 1 + 3
    assert ofat[0].id == "nominal" and ofat[0].values == {"a": 0.0, "b": 1.0, "c": 0}
    # Off-nominal cells change exactly one factor.
    for cell in ofat[1:]:
        assert sum(cell.values[k] != ofat[0].values[k] for k in "abc") == 1


@pytest.mark.parametrize("design", ["random", "lhs", "sobol"])
def test_sampled_designs_are_seeded_and_in_range(design):
    factors = [
        {"name": "x", "axis": "object_x", "range": [-0.05, 0.05], "nominal": 0.0},
        {"name": "f", "axis": "friction", "range": [0.2, 1.0], "nominal": 1.0},
        {"name": "lat", "axis": "action_latency", "levels": [0, 1, 2]},
    ]
    a = expand(_grid(design, factors, samples=16, seed=3))
    b = expand(_grid(design, factors, samples=16, seed=3))
    c = expand(_grid(design, factors, samples=16, seed=4))
    assert [x.values for x in a] == [x.values for x in b]
    assert [x.values for x in a] != [x.values for x in c]
    assert a[0].id == "nominal" and len(a) == 17
    xs = np.array([cell.values["x"] for cell in a])
    assert xs.min() >= -0.05 and xs.max() <= 0.05 and np.ptp(xs) > 0.05
    assert {cell.values["lat"] for cell in a} <= {0, 1, 2}
    assert len({cell.seed for cell in a}) == len(a)


SCENE_VALUES = {
    "object_x": 0.05,
    "object_y": -0.05,
    "object_yaw_range": 1.2,
    "object_color": "yellow",
    "object_scale": 1.3,
    "friction": 0.3,
    "mass": 4.0,
    "distractors": 3,
    "table_color": "white",
    "drawer_damping": 3.0,
    "light_intensity": 0.3,
    "light_direction": [0.3, 0.2, -1.0],
    "light_color": "orange",
    "camera_shift": [0.05, 0.02, 0.0],
    "camera_look_shift": 0.05,
    "camera_fovy": 10.0,
    "robot_init_noise": 0.1,
    "instruction": "lift the red block",
    "instruction_template": "please {instruction}",
    "object_pos_range": 0.03,
    "control_hz": 10.0,
}
# Axes that need a scene with an MJCF arena, tested on LIBERO scenes there.
TESTED_ON_LIBERO = {"background_texture"}  # tests/perturb/test_libero_axes.py
# Axes that need splat files: tests/perturb/test_background_axis.py.
TESTED_WITH_SPLATS = {"background"}


def test_every_axis_is_covered():
    assert set(SCENE_VALUES) | TESTED_ON_LIBERO | TESTED_WITH_SPLATS == set(SCENE_AXES.names())
    assert set(RUNTIME_AXES.names()) == {
        "state_noise",
        "image_noise",
        "image_blur",
        "action_noise",
        "action_latency",
    }


@pytest.mark.parametrize("axis", sorted(SCENE_VALUES))
def test_scene_axis_changes_the_scene_and_compiles(axis):
    scene = load_scene(
        SCENES / "open_drawer.yaml" if axis == "drawer_damping" else SCENES / "lift_cube.yaml"
    )
    grid = _grid(
        "ofat", [{"name": "f", "axis": axis, "levels": ["__nominal__", SCENE_VALUES[axis]]}]
    )
    cell = expand(grid)[1]
    changed, noise = apply_cell(scene, grid, cell)
    assert changed.model_dump() != scene.model_dump()
    assert noise == RuntimeNoise()
    compiled = compile_scene(changed)
    assert compiled.model.nbody >= 3


def test_action_latency_delays_execution(lift_scene):
    env = MetasimVectorEnv(lift_scene, num_envs=1, noise=RuntimeNoise(action_latency=3))
    obs, _ = env.reset(seed=0)
    start = obs["policy"]["ee_pos"][0].copy()
    push = np.array([[0.02, 0, 0, 0, 0, 0, 1.0]])
    for step in range(3):
        obs, *_ = env.step(push)
        assert np.linalg.norm(obs["policy"]["ee_pos"][0] - start) < 2e-3, step
    for _ in range(6):
        obs, *_ = env.step(push)
    assert obs["policy"]["ee_pos"][0][0] - start[0] > 0.03


def test_noise_is_seeded_per_episode(lift_scene):
    noise = RuntimeNoise(state_noise=0.01, action_noise=0.01)
    runs = []
    for _ in range(2):
        env = MetasimVectorEnv(lift_scene, num_envs=2, noise=noise)
        obs, _ = env.reset(options={"env_ids": [0, 1], "seeds": [5, 5]})
        for _ in range(5):
            obs, *_ = env.step(np.tile([0.01, 0, 0, 0, 0, 0, 1.0], (2, 1)))
        runs.append(obs["policy"]["joint_pos"])
    np.testing.assert_array_equal(runs[0], runs[1])  # same seeds, same noise
    np.testing.assert_array_equal(runs[0][0], runs[0][1])  # noise follows the episode seed
    clean = MetasimVectorEnv(lift_scene, num_envs=1)
    obs, _ = clean.reset(options={"env_ids": [0], "seeds": [5]})
    for _ in range(5):
        obs, *_ = clean.step(np.array([[0.01, 0, 0, 0, 0, 0, 1.0]]))
    assert not np.allclose(obs["policy"]["joint_pos"][0], runs[0][0])


def test_builtin_grids_load():
    for path in PERTURBATIONS.glob("*.yaml"):
        grid = load_grid(path.stem)
        assert len(expand(grid)) >= 2
    assert len(load_grid("standard").factors) >= 5


def test_eval_over_a_grid_records_every_factor(tmp_path):
    grid = tmp_path / "g.yaml"
    grid.write_text(
        "name: g\ndesign: factorial\nfactors:\n"
        "  - {name: lat, axis: action_latency, levels: [0, 6]}\n"
        "  - {name: heavy, axis: mass, levels: [1.0, 2.0]}\n"
    )
    out = tmp_path / "run"
    args = ["eval", "--quiet", "suite.tasks=[lift_cube]", "episodes=3", "num_envs=3"]
    assert main([*args, f"perturbation={grid}", f"out={out}"]) == 0
    rows = pq.read_table(out / "episodes.parquet").to_pylist()
    assert len(rows) == 4 * 3
    assert {json.loads(r["factors"])["lat"] for r in rows} == {0, 6}
    summary = json.loads((out / "summary.json").read_text())
    assert len(summary["cells"]) == 4
    nominal = summary["cells"]["nominal"]["tasks"]["lift_cube"]
    slow = next(c for c in summary["cells"].values() if c["factors"] == {"lat": 6, "heavy": 1.0})
    assert nominal["success_rate"] >= slow["tasks"]["lift_cube"]["success_rate"]
    shares = summary["variance_shares"]
    assert set(shares["first_order"]) == {"lat", "heavy"}
    assert shares["first_order"]["lat"] >= shares["first_order"]["heavy"]
    assert nominal["mean_steps_to_success"] is None or nominal["mean_steps_to_success"] > 0


@pytest.mark.parametrize(
    "body, needle",
    [
        ("factors:\n  - {name: a, axis: warp_drive, levels: [1]}", "unknown axis"),
        ("factors:\n  - {name: a, axis: mass, levels: [1.0, -2.0]}", "cannot be applied"),
        ("design: magic", "design"),
        ("factors:\n  - {name: a, axis: mass}", "exactly one of"),
    ],
)
def test_bad_grids_exit_2(tmp_path, capsys, body, needle):
    grid = tmp_path / "bad.yaml"
    grid.write_text(f"name: bad\n{body}\n")
    code = main(
        [
            "eval",
            "--quiet",
            "suite.tasks=[lift_cube]",
            f"perturbation={grid}",
            f"out={tmp_path / 'r'}",
        ]
    )
    err = capsys.readouterr().err
    assert code == 2 and needle in err and "Traceback" not in err
