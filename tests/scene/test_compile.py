"""Valid scenes with every kind of element compile, step and render: mesh and MJCF
objects, textured materials, lights, cameras by quaternion, fixed objects, MJCF robots."""

from __future__ import annotations

import numpy as np
import pytest
from PIL import Image

from metasim.cli.main import main
from metasim.envs.vec_env import MetasimVectorEnv
from metasim.paths import ASSETS
from metasim.scene import compile_file, load_scene

CUBE_OBJ = """\
v -0.02 -0.02 -0.02
v 0.02 -0.02 -0.02
v 0.02 0.02 -0.02
v -0.02 0.02 -0.02
v -0.02 -0.02 0.02
v 0.02 -0.02 0.02
v 0.02 0.02 0.02
v -0.02 0.02 0.02
f 1 3 2
f 1 4 3
f 5 6 7
f 5 7 8
f 1 2 6
f 1 6 5
f 2 3 7
f 2 7 6
f 3 4 8
f 3 8 7
f 4 1 5
f 4 5 8
"""

PROP_XML = """\
<mujoco>
  <worldbody>
    <body name="handle">
      <geom type="capsule" size="0.01 0.03" rgba="0 0 1 1" mass="0.05"/>
    </body>
  </worldbody>
</mujoco>
"""

SCENE = """\
name: everything
robot: {{name: "{robot}", init_noise: 0.05}}
materials:
  - name: checker
    texture: {{builtin: checker, rgb1: [0.9, 0.9, 0.9], rgb2: [0.2, 0.2, 0.2]}}
    texrepeat: [4, 4]
  - {{name: photo, texture: {{file: tex.png}}}}
fixtures:
  - {{type: table, name: table, material: checker}}
  - {{type: marker, name: goal, pos: [0.6, -0.2, 0.0]}}
  - {{type: bin, name: bin, pos: [0.4, 0.3, 0.0], material: photo}}
  - {{type: drawer, name: cab, pos: [0.85, 0.2, 0.0], yaw: 0.3, init_open_range: [0.2, 0.6]}}
objects:
  - {{name: mug, shape: mesh, mesh: cube.obj, pos: [0.5, 0.0, 0.03], mass: 0.2}}
  - {{name: prop, shape: mjcf, mjcf: prop.xml, pos: [0.45, -0.15, 0.05]}}
  - {{name: ball, shape: sphere, size: [0.025], pos: [0.55, 0.1, 0.025], rgba: [0, 1, 0, 1]}}
  - {{name: can, shape: cylinder, size: [0.03, 0.05], pos: [0.6, 0.2, 0.05]}}
  - {{name: pill, shape: capsule, size: [0.015, 0.03], pos: [0.65, -0.1, 0.05]}}
  - {{name: post, shape: box, size: [0.01, 0.01, 0.05], pos: [0.35, -0.3, 0.05], free: false}}
cameras:
  - {{name: top, pos: [0.5, 0, 1.2], quat: [0.7071, 0, 0, 0.7071], width: 96, height: 64}}
  - {{name: side, pos: [0.5, -1.0, 0.5], look_at: [0.5, 0, 0], fovy: 60}}
lights:
  - {{name: sun, directional: true, dir: [0.2, 0.1, -1]}}
  - {{name: lamp, pos: [0.5, 0.5, 1.5], dir: [0, -0.3, -1], diffuse: [0.9, 0.8, 0.7]}}
task:
  instruction: open the drawer
  success: {{joint_open: {{joint: cab, fraction: 0.9}}}}
  subgoals:
    - in_region:
        object: ball
        region: {{center: [0, 0, 0], half_size: [0.1, 0.1, 0.1], frame: goal}}
  time_limit: 2.0
"""


def _write(tmp_path, robot="panda"):
    (tmp_path / "cube.obj").write_text(CUBE_OBJ)
    (tmp_path / "prop.xml").write_text(PROP_XML)
    Image.fromarray((np.indices((32, 32)).sum(0) % 2 * 255).astype(np.uint8)).convert("RGB").save(
        tmp_path / "tex.png"
    )
    path = tmp_path / "scene.yaml"
    path.write_text(SCENE.format(robot=robot))
    return path


@pytest.mark.slow
@pytest.mark.parametrize(
    "robot", ["panda", "mjcf:" + str(ASSETS / "robots" / "panda" / "robot.yaml")]
)
def test_every_element_compiles_steps_and_renders(tmp_path, robot):
    path = _write(tmp_path, robot)
    compiled = compile_file(str(path))
    m = compiled.model
    assert {"mug", "prop", "ball", "can", "pill", "post", "cab/drawer"} <= set(
        compiled.index.bodies
    )
    assert compiled.index.object_qpos[compiled.index.object_names.index("post")] == -1
    assert m.ntex >= 2 and m.nlight == 2 and m.ncam == 2
    env = MetasimVectorEnv(compiled, num_envs=2, cameras=("top", "side"))
    obs, _ = env.reset(seed=1)
    frac = obs["privileged"]["fixture_qpos"][:, 0] / 0.2
    assert np.all((frac >= 0.2) & (frac <= 0.6))
    assert obs["policy"]["top_rgb"].shape == (2, 64, 96, 3)
    for _ in range(20):
        obs, _, _, _, extras = env.step(np.tile([0, 0, 0, 0, 0, 0, 1.0], (2, 1)))
        assert not extras["unstable"].any()
    assert obs["policy"]["side_rgb"].std() > 1
    env.close()


def test_render_cli_writes_a_png_per_camera(tmp_path, capsys):
    path = _write(tmp_path)
    out = tmp_path / "renders"
    assert main(["scene", "render", str(path), "--out", str(out)]) == 0
    files = sorted(p.name for p in out.glob("*.png"))
    assert files == ["everything_side.png", "everything_top.png"]
    img = np.asarray(Image.open(out / "everything_top.png"))
    assert img.shape == (64, 96, 3) and img.std() > 1
    assert main(["scene", "render", str(path), "--out", str(out)]) == 0  # its own: replaced
    capsys.readouterr()
    Image.new("RGB", (2, 2)).save(out / "everything_side.png")  # a picture of the user's
    before = (out / "everything_side.png").read_bytes()
    (out / "everything_top.png").unlink()
    assert main(["scene", "render", str(path), "--out", str(out)]) == 2
    assert (
        "everything_side.png exists and is not a PNG written by metasim" in capsys.readouterr().err
    )
    assert (out / "everything_side.png").read_bytes() == before
    assert not (out / "everything_top.png").exists()  # refused before rendering any


def test_initial_state_ranges_and_robot_noise(tmp_path):
    compiled = compile_file(str(_write(tmp_path)))
    env = MetasimVectorEnv(compiled, num_envs=4)
    obs, _ = env.reset(seed=0)
    q = obs["policy"]["joint_pos"]
    assert np.all(np.abs(q - compiled.index.home) <= 0.05 + 1e-9)
    assert np.ptp(q, axis=0).max() > 0.01  # different noise per env
    obs2, _ = env.reset(seed=0)
    np.testing.assert_array_equal(obs2["policy"]["joint_pos"], q)


def test_load_scene_returns_typed_models(tmp_path):
    scene = load_scene(_write(tmp_path))
    assert scene.objects[0].shape == "mesh"
    assert scene.fixtures[3].type == "drawer"


def test_mesh_half_extents_are_in_the_body_frame(tmp_path):
    """MuJoCo turns a mesh geom to its principal axes; the object's half-extents (what
    predicates and the expert read) must still follow the body's axes."""
    flat = "\n".join(
        f"v {x * 0.05} {y * 0.04} {z * 0.01}" for x in (-1, 1) for y in (-1, 1) for z in (-1, 1)
    )
    faces = "f 1 2 4 3\nf 5 7 8 6\nf 1 5 6 2\nf 3 4 8 7\nf 1 3 7 5\nf 2 6 8 4\n"
    (tmp_path / "slab.obj").write_text(flat + "\n" + faces)
    (tmp_path / "s.yaml").write_text(
        "name: slab\nrobot: {name: panda}\nfixtures: [{type: table, name: table}]\n"
        "objects: [{name: slab, shape: mesh, mesh: slab.obj, pos: [0.5, 0, 0.01]}]\n"
        "task: {instruction: lift, success: {lifted: {object: slab, height: 0.1}}}\n"
    )
    compiled = compile_file(str(tmp_path / "s.yaml"))
    half = compiled.index.object_half[compiled.index.object_names.index("slab")]
    np.testing.assert_allclose(half, [0.05, 0.04, 0.01], atol=1e-6)
