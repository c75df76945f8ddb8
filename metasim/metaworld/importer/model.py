"""A Meta-World task XML split into the two parts metasim composes: the Sawyer (a robot
MJCF with its mocap body, the weld and the two finger actuators, written once to the
cache) and the task's world (table, walls, floor, lights, objects, goal; attached as a
fixture). Both come from one `MjSpec` of the package's own file, so every element keeps
the values the package's compiler gives it (its `compiler` block: radians, inertia from
group 4-5 geoms).

The Sawyer is what the task XML includes from `objects/assets/xyz_base.xml`: the world
children `base` and `mocap`, the mocap weld and the actuators. The world cameras of that
file (`topview`, `corner`...) become the scene's cameras (`cameras()`), at the poses the
package's compiler gives them.
"""

from __future__ import annotations

import functools
from pathlib import Path

import mujoco
import numpy as np

from metasim.metaworld.importer import paths

SAWYER_BODIES = ("base", "mocap")
ROBOT_TASK = "reach-v3"  # the task whose XML the robot file is cut from (all include the same)
TARGET_SITE = "mw_target"  # each episode's `_target_pos`, set per episode from the reference
# The package's reset observation's first 18 values (its frame), per episode, as the
# positions of six invisible sites (`reset_frame_sites`): in seven tasks that frame is
# read before reset's last kinematics, so it is not a function of the reset state.
RESET_FRAME_SITE = "mw_reset_frame"
# The mocap weld's data as the package's env sets it when built (`reset_mocap_welds`):
# anchor 0, relative pose identity (pos 0, quat -1 0 0 0), torque scale 5. The XML's weld
# has no relpose, which MuJoCo would fill with the hand's offset in the initial pose.
WELD_DATA = (0.0, 0.0, 0.0, 0.0, 0.0, 0.0, -1.0, 0.0, 0.0, 0.0, 5.0)


def load_task_spec(task: str) -> mujoco.MjSpec:
    """The task's XML as the package compiles it, with absolute asset paths."""
    path = paths.task_xml(task)
    spec = mujoco.MjSpec.from_file(str(path))
    folder = path.parent
    # user-data widths are the composed model's (auto), as in every other metasim part
    # User data (`user="1"` on some geoms and the finger actuators) is read by nothing
    # in the package's physics; dropped, so the parts compose without a size conflict.
    for field in ("nuser_body", "nuser_jnt", "nuser_geom", "nuser_site", "nuser_cam",
                  "nuser_tendon", "nuser_actuator", "nuser_sensor"):  # fmt: skip
        setattr(spec, field, -1)
    for el in (*spec.geoms, *spec.actuators):
        el.userdata = []
    for i, joint in enumerate(spec.joints):  # 21 tasks have an unnamed (free) joint
        joint.name = joint.name or unnamed_joint(i)
    for asset in (*spec.meshes, *spec.textures):
        if asset.file and not Path(asset.file).is_absolute():
            asset.file = str((folder / spec.meshdir / asset.file).resolve())
    return spec


def unnamed_joint(index: int) -> str:
    """The name metasim gives the task XML's unnamed joint `index` (its id in the
    package's model, which lists joints in the XML's order)."""
    return f"joint{index}"


def _delete_world_children(spec: mujoco.MjSpec, keep_sawyer: bool) -> None:
    """Keep the Sawyer's world bodies (keep_sawyer) or everything else."""
    world = spec.worldbody
    for body in list(world.bodies):
        if (body.name in SAWYER_BODIES) != keep_sawyer:
            spec.delete(body)
    for el in (*world.cameras, *world.lights):  # the scene declares them (`cameras`, `lights`)
        spec.delete(el)
    if keep_sawyer:
        for el in (*world.geoms, *world.sites):
            spec.delete(el)
    else:
        for el in (*spec.equalities, *spec.actuators):
            spec.delete(el)


def _prune_assets(spec: mujoco.MjSpec) -> None:
    """Delete meshes, materials and textures nothing uses any more (the skybox stays)."""
    geoms = spec.geoms
    used_meshes = {g.meshname for g in geoms}
    for mesh in list(spec.meshes):
        if mesh.name not in used_meshes:
            spec.delete(mesh)
    used_mats = {g.material for g in geoms} | {s.material for s in spec.sites}
    for mat in list(spec.materials):
        if mat.name not in used_mats:
            spec.delete(mat)
    used_tex = {t for m in spec.materials for t in m.textures if t}
    for tex in list(spec.textures):
        if tex.type != mujoco.mjtTexture.mjTEXTURE_SKYBOX and tex.name not in used_tex:
            spec.delete(tex)


def world_spec(task: str) -> mujoco.MjSpec:
    """The task's world without the Sawyer, plus the `mw_target` site."""
    spec = load_task_spec(task)
    _delete_world_children(spec, keep_sawyer=False)
    _prune_assets(spec)
    # Compiled away from the origin: a site at its body's origin is compiled as sharing
    # the body's frame (`site_sameframe`), and then its per-episode `site_pos` is ignored.
    for name in (TARGET_SITE, *reset_frame_sites()):
        spec.worldbody.add_site(
            name=name, pos=[0, 0, -1], size=[0.005, 0.005, 0.005], rgba=[0, 0, 0, 0], group=5
        )
    return spec


def reset_frame_sites() -> list[str]:
    """The six sites whose positions hold an episode's 18-value reset frame, in order."""
    return [f"{RESET_FRAME_SITE}{i}" for i in range(6)]


def robot_spec() -> mujoco.MjSpec:
    """The Sawyer of the task XMLs: arm, gripper, mocap body, weld, finger actuators."""
    spec = load_task_spec(ROBOT_TASK)
    _delete_world_children(spec, keep_sawyer=True)
    _prune_assets(spec)
    for tex in list(spec.textures):
        spec.delete(tex)  # the skybox is the world's
    for act in spec.actuators:
        act.name = act.name or act.target  # unnamed in the XMLs: named after their joint
    for eq in spec.equalities:  # what the env's constructor writes (`reset_mocap_welds`)
        if eq.type == mujoco.mjtEq.mjEQ_WELD:
            eq.data[: len(WELD_DATA)] = WELD_DATA
    return spec


@functools.cache
def lights(task: str) -> list[dict[str, object]]:
    """The task XML's world lights as scene `lights` entries (unnamed there: `light<i>`),
    their values as the XML gives them (MuJoCo normalizes `dir` when compiling)."""
    out = []
    for i, light in enumerate(load_task_spec(task).worldbody.lights):
        out.append({
            "name": light.name or f"light{i}",
            "pos": [float(x) for x in light.pos],
            "dir": [float(x) for x in light.dir],
            "diffuse": [float(x) for x in light.diffuse],
            "ambient": [float(x) for x in light.ambient],
            "specular": [float(x) for x in light.specular],
            "directional": light.type == mujoco.mjtLightType.mjLIGHT_DIRECTIONAL,
            "castshadow": bool(light.castshadow),
        })  # fmt: skip
    return out


@functools.cache
def cameras(task: str) -> dict[str, tuple[np.ndarray, np.ndarray, float]]:
    """The world cameras of the task XML: name -> (pos (3,), quat (4,) w-first, fovy deg)."""
    model = load_task_spec(task).compile()
    out = {}
    for i in range(model.ncam):
        if model.cam_bodyid[i] == 0:
            out[model.camera(i).name] = (
                model.cam_pos[i].copy(),
                model.cam_quat[i].copy(),
                float(model.cam_fovy[i]),
            )
    return out
