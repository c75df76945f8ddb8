"""Compile a typed `Scene` into an `MjSpec` and an `MjModel` (MuJoCo 4.x).

The robot MJCF is attached under the prefix `robot/`; objects are bodies named as in
the scene; fixtures create bodies `<name>` (and `<name>/drawer`, joint `<name>/slide`,
sites `<name>/handle`, `<name>/inside` for a drawer). `CompiledScene` carries the model
and the index (ids and addresses) every layer above needs, so nothing above looks
names up again.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from pathlib import Path

import mujoco
import numpy as np

from metasim.errors import MetasimInputError
from metasim.rotations import look_at_quat, yaw_quat
from metasim.scene import fixtures, mjcf_fixtures
from metasim.scene.robots import RobotDescriptor, resolve_robot
from metasim.scene.schema import CameraSpec, MaterialSpec, ObjectSpec, Scene

ROBOT_PREFIX = "robot/"

_GEOM = {
    "box": mujoco.mjtGeom.mjGEOM_BOX,
    "sphere": mujoco.mjtGeom.mjGEOM_SPHERE,
    "cylinder": mujoco.mjtGeom.mjGEOM_CYLINDER,
    "capsule": mujoco.mjtGeom.mjGEOM_CAPSULE,
    "mesh": mujoco.mjtGeom.mjGEOM_MESH,
}
_INTEGRATOR = {
    "euler": mujoco.mjtIntegrator.mjINT_EULER,
    "rk4": mujoco.mjtIntegrator.mjINT_RK4,
    "implicit": mujoco.mjtIntegrator.mjINT_IMPLICIT,
    "implicitfast": mujoco.mjtIntegrator.mjINT_IMPLICITFAST,
}


@dataclass(frozen=True)
class SceneIndex:
    """Ids and addresses into the compiled model, resolved once.

    Arrays: `arm_qpos` (7,), `arm_dof` (7,), `arm_act` (7,), `object_body` (n_obj,),
    `object_qpos` (n_obj,) qpos address of each free joint (-1 if fixed),
    `object_half` (n_obj, 3) half-extents, `joint_qpos` per articulated fixture joint.
    """

    arm_qpos: np.ndarray
    arm_dof: np.ndarray
    arm_act: np.ndarray
    arm_range: np.ndarray  # (7, 2)
    home: np.ndarray  # (7,)
    gripper_act: int  # -1 without a gripper
    gripper_qpos: np.ndarray  # (k,) finger joint qpos addresses
    ee_site: int
    hand_body: int  # the body whose orientation is the hand's (descriptor hand_body)
    object_names: tuple[str, ...]
    object_body: np.ndarray
    object_qpos: np.ndarray
    object_half: np.ndarray
    joint_names: tuple[str, ...]  # articulated fixture joints, full names
    joint_qpos: np.ndarray
    joint_range: np.ndarray  # (n, 2)
    bodies: dict[str, int]
    sites: dict[str, int]


@dataclass(frozen=True)
class CompiledScene:
    scene: Scene
    source: Path | None
    robot: RobotDescriptor
    spec: mujoco.MjSpec
    model: mujoco.MjModel
    index: SceneIndex
    substeps: int

    @property
    def control_dt(self) -> float:
        return self.substeps * self.model.opt.timestep

    @property
    def max_steps(self) -> int:
        return max(1, math.ceil(self.scene.task.time_limit / self.control_dt))

    def camera_size(self, name: str) -> tuple[int, int]:
        """(width, height) declared for camera `name` (640x480 for cameras not in the YAML)."""
        for cam in self.scene.cameras:
            if cam.name == name:
                return cam.width, cam.height
        return 640, 480

    def joint_ref(self, name: str) -> int:
        """Index into `index.joint_names` for a fixture name or a full joint name."""
        full = name if name in self.index.joint_names else f"{name}/slide"
        return self.index.joint_names.index(full)


def compile_scene(
    scene: Scene, base_dir: Path | None = None, source: Path | None = None
) -> CompiledScene:
    """Build the MjSpec for `scene` and compile it; MuJoCo's own errors become input errors."""
    base_dir = base_dir or (source.parent if source else Path.cwd())
    robot = resolve_robot(scene.robot.name, base_dir)
    spec = mujoco.MjSpec()
    spec.modelname = scene.name
    _options(spec, scene)
    for mat in scene.materials:
        _material(spec, mat, base_dir)
    floor_z = _add_fixtures(spec, scene, base_dir)
    if scene.physics.floor:
        spec.worldbody.add_geom(
            name="floor",
            type=mujoco.mjtGeom.mjGEOM_PLANE,
            size=[3, 3, 0.05],
            pos=[0, 0, floor_z],
            rgba=[0.45, 0.47, 0.5, 1],
        )
    _attach_robot(spec, scene, robot)
    for ob in scene.objects:
        _add_object(spec, ob, base_dir)
    for cam in scene.cameras:
        _add_camera(spec, cam, robot)
    _add_lights(spec, scene)
    width = max([c.width for c in scene.cameras] + [640])
    height = max([c.height for c in scene.cameras] + [480])
    # Software GL (llvmpipe) spends most of a frame on 4096-texel shadow maps; 1024 keeps
    # soft shadows and renders several times faster.
    spec.visual.quality.shadowsize = 1024
    spec.visual.global_.offwidth = width
    spec.visual.global_.offheight = height
    try:
        model = spec.compile()
    except ValueError as exc:
        raise MetasimInputError(
            str(source or scene.name), [f"MuJoCo cannot compile it: {exc}"]
        ) from None
    if scene.render.hide_collision_geoms:
        model.geom_group[model.geom_group == 0] = 3
    if scene.render.hide_sites:
        model.site_group[:] = 3
    substeps = max(1, round(1.0 / (scene.task.control_hz * model.opt.timestep)))
    observe = scene.task.observe_substep
    if observe is not None and observe > substeps:
        msg = f"task.observe_substep: {observe} is past the last physics substep ({substeps})"
        raise MetasimInputError(str(source or scene.name), [msg])
    index = _index(model, scene, robot)
    return CompiledScene(scene, source, robot, spec, model, index, substeps)


def _options(spec: mujoco.MjSpec, scene: Scene) -> None:
    phys = scene.physics
    spec.option.timestep = phys.timestep
    spec.option.gravity = list(phys.gravity)
    spec.option.integrator = _INTEGRATOR[phys.integrator]
    spec.option.impratio = phys.impratio
    spec.option.density = phys.density
    spec.option.viscosity = phys.viscosity
    if phys.iterations is not None:
        spec.option.iterations = phys.iterations
    if phys.ls_iterations is not None:
        spec.option.ls_iterations = phys.ls_iterations
    if phys.tolerance is not None:
        spec.option.tolerance = phys.tolerance
    spec.option.jacobian = getattr(mujoco.mjtJacobian, f"mjJAC_{phys.jacobian.upper()}")
    spec.option.cone = (
        mujoco.mjtCone.mjCONE_ELLIPTIC
        if phys.cone == "elliptic"
        else mujoco.mjtCone.mjCONE_PYRAMIDAL
    )
    look = scene.render
    spec.visual.headlight.ambient = list(look.headlight_ambient)
    spec.visual.headlight.diffuse = list(look.headlight_diffuse)
    if look.znear is not None:
        spec.visual.map.znear = look.znear


def _material(spec: mujoco.MjSpec, mat: MaterialSpec, base_dir: Path) -> None:
    m = spec.add_material(name=mat.name)
    m.rgba = list(mat.rgba)
    m.specular = mat.specular
    m.shininess = mat.shininess
    m.reflectance = mat.reflectance
    m.texrepeat = list(mat.texrepeat)
    if mat.texture is None:
        return
    tex = spec.add_texture(name=f"{mat.name}/tex", type=mujoco.mjtTexture.mjTEXTURE_2D)
    if mat.texture.file:
        tex.file = str((base_dir / mat.texture.file).resolve())
    else:
        tex.builtin = {
            "checker": mujoco.mjtBuiltin.mjBUILTIN_CHECKER,
            "gradient": mujoco.mjtBuiltin.mjBUILTIN_GRADIENT,
            "flat": mujoco.mjtBuiltin.mjBUILTIN_FLAT,
        }[mat.texture.builtin or "flat"]
        tex.rgb1 = list(mat.texture.rgb1)
        tex.rgb2 = list(mat.texture.rgb2)
        tex.width = mat.texture.width
        tex.height = mat.texture.height
    textures = [""] * int(mujoco.mjtTextureRole.mjNTEXROLE)
    textures[int(mujoco.mjtTextureRole.mjTEXROLE_RGB)] = f"{mat.name}/tex"
    m.textures = textures


def _add_fixtures(spec: mujoco.MjSpec, scene: Scene, base_dir: Path) -> float:
    """Add every fixture (files relative to `base_dir`); return the floor height (under
    the first table, else 0)."""
    floor_z = 0.0
    for fx in scene.fixtures:
        z = fixtures.build(spec, fx, base_dir)
        if z is not None and floor_z == 0.0:
            floor_z = z
    return floor_z


def _attach_robot(spec: mujoco.MjSpec, scene: Scene, robot: RobotDescriptor) -> None:
    try:
        child = mujoco.MjSpec.from_file(str(robot.mjcf))
    except ValueError as exc:
        raise MetasimInputError(str(robot.mjcf), [f"robot MJCF does not load: {exc}"]) from None
    _absolute_mesh_files(child, robot.mjcf.parent)
    for site, (body, pos) in robot.extra_sites.items():
        child.body(body).add_site(name=site, pos=list(pos))
    frame = spec.worldbody.add_frame(
        pos=list(scene.robot.pos), quat=list(yaw_quat(scene.robot.yaw))
    )
    spec.attach(child, prefix=ROBOT_PREFIX, frame=frame)


def _absolute_mesh_files(child: mujoco.MjSpec, model_dir: Path) -> None:
    """Give the robot's meshes absolute paths before it is attached: an attached spec's
    files no longer resolve against its own folder. MuJoCo's loader tries `meshdir/file`,
    then `file` beside the model (Menagerie's MJX Panda names `assets/x.stl` and sets
    `meshdir="assets"`); so does this."""
    for mesh in child.meshes:
        if not mesh.file or Path(mesh.file).is_absolute():
            continue
        for cand in (model_dir / child.meshdir / mesh.file, model_dir / mesh.file):
            if cand.is_file():
                mesh.file = str(cand.resolve())
                break


def _add_object(spec: mujoco.MjSpec, ob: ObjectSpec, base_dir: Path) -> None:
    if ob.shape == "mjcf" and ob.mjcf_body:
        mjcf_fixtures.add_mjcf_object(spec, ob, base_dir)
        return
    body = spec.worldbody.add_body(name=ob.name, pos=list(ob.pos), quat=list(ob.quat))
    if ob.free:
        mjcf_fixtures.add_free_joint(body, ob)
    rgba = list(ob.rgba) if ob.rgba else [0.7, 0.7, 0.7, 1.0]
    col = 1 if ob.collide else 0
    if ob.shape == "mjcf":
        child = mujoco.MjSpec.from_file(str((base_dir / str(ob.mjcf)).resolve()))
        spec.attach(child, prefix=f"{ob.name}/", frame=body.add_frame())
        return
    geom = body.add_geom(
        name=ob.name,
        type=_GEOM[ob.shape],
        mass=ob.mass,
        friction=list(ob.friction),
        contype=col,
        conaffinity=col,
        condim=3,
        solref=[0.01, 1.0],
        solimp=[0.95, 0.99, 0.001, 0.5, 2.0],
        # Objects own their contact parameters: their friction (a perturbation axis)
        # governs contacts with the table and the fingers, not the max of both sides.
        priority=1,
    )
    if ob.material:
        geom.material = ob.material
    else:
        geom.rgba = rgba
    if ob.shape == "mesh":
        mesh_name = f"{ob.name}/mesh"
        spec.add_mesh(
            name=mesh_name, file=str((base_dir / str(ob.mesh)).resolve()), scale=list(ob.scale)
        )
        geom.meshname = mesh_name
    else:
        size = list(ob.size or [])
        geom.size = size + [0.0] * (3 - len(size))


def _add_camera(spec: mujoco.MjSpec, cam: CameraSpec, robot: RobotDescriptor) -> None:
    if cam.mount == "wrist":
        mount = robot.wrist_camera
        assert mount is not None  # checked when the scene was loaded
        parent = spec.body(ROBOT_PREFIX + mount.body)
        quat = look_at_quat(mount.pos, mount.look_at, mount.up)
        parent.add_camera(name=cam.name, pos=list(mount.pos), quat=list(quat), fovy=cam.fovy)
        return
    assert cam.pos is not None
    if cam.quat is not None:
        world_quat = list(cam.quat)
    else:
        world_quat = list(look_at_quat(cam.pos, cam.look_at or (0, 0, 0), cam.up))
    spec.worldbody.add_camera(name=cam.name, pos=list(cam.pos), quat=world_quat, fovy=cam.fovy)


def _add_lights(spec: mujoco.MjSpec, scene: Scene) -> None:
    lights = scene.lights
    if not lights:
        spec.worldbody.add_light(
            name="key",
            pos=[0.6, -0.4, 2.0],
            dir=[-0.1, 0.2, -1.0],
            diffuse=[0.6, 0.6, 0.6],
            castshadow=True,
        )
        return
    for li in lights:
        kind = (
            mujoco.mjtLightType.mjLIGHT_DIRECTIONAL
            if li.directional
            else mujoco.mjtLightType.mjLIGHT_SPOT
        )
        spec.worldbody.add_light(
            name=li.name,
            pos=list(li.pos),
            dir=list(li.dir),
            diffuse=list(li.diffuse),
            ambient=list(li.ambient),
            specular=list(li.specular),
            castshadow=li.castshadow,
            type=kind,
        )


def _index(model: mujoco.MjModel, scene: Scene, robot: RobotDescriptor) -> SceneIndex:
    def jid(name: str) -> int:
        return int(model.joint(ROBOT_PREFIX + name).id)

    arm_j = [jid(n) for n in robot.arm_joints]
    grip_act, grip_q = -1, np.zeros(0, dtype=np.int64)
    if robot.gripper is not None:
        grip_act = int(model.actuator(ROBOT_PREFIX + robot.gripper.actuator).id)
        grip_q = np.array([model.jnt_qposadr[jid(n)] for n in robot.gripper.joints])
    names = tuple(o.name for o in scene.objects)
    obj_body = np.array([model.body(n).id for n in names], dtype=np.int64)
    obj_q = np.array(
        [
            model.jnt_qposadr[model.joint(f"{o.name}/free").id] if o.free else -1
            for o in scene.objects
        ],
        dtype=np.int64,
    )
    fixture_joints = tuple(
        model.joint(i).name for i in range(model.njnt) if model.joint(i).name.endswith("/slide")
    )
    fj = [model.joint(n).id for n in fixture_joints]
    return SceneIndex(
        arm_qpos=model.jnt_qposadr[arm_j].astype(np.int64),
        arm_dof=model.jnt_dofadr[arm_j].astype(np.int64),
        arm_act=np.array(
            [model.actuator(ROBOT_PREFIX + n).id for n in robot.arm_actuators], dtype=np.int64
        ),
        arm_range=model.jnt_range[arm_j].copy(),
        home=np.array(scene.robot.init_qpos or robot.home, dtype=np.float64),
        gripper_act=grip_act,
        gripper_qpos=grip_q,
        ee_site=int(model.site(ROBOT_PREFIX + robot.ee_site).id),
        hand_body=int(
            model.body(ROBOT_PREFIX + robot.hand_body).id
            if robot.hand_body
            else model.site_bodyid[model.site(ROBOT_PREFIX + robot.ee_site).id]
        ),
        object_names=names,
        object_body=obj_body,
        object_qpos=obj_q,
        object_half=np.array([_half_extent(model, b) for b in obj_body]).reshape(-1, 3),
        joint_names=fixture_joints,
        joint_qpos=model.jnt_qposadr[fj].astype(np.int64),
        joint_range=model.jnt_range[fj].copy().reshape(-1, 2),
        bodies={model.body(i).name: i for i in range(model.nbody)},
        sites={model.site(i).name: i for i in range(model.nsite)},
    )


def _half_extent(model: mujoco.MjModel, body: int) -> np.ndarray:
    """Half-extents of the union of a body's geom boxes, in the body frame. Each geom's
    box is rotated by the geom's frame (MuJoCo turns mesh geoms to their principal axes),
    so a mesh box reads with its axes in the body's order."""
    lo: np.ndarray = np.full(3, np.inf)
    hi: np.ndarray = np.full(3, -np.inf)
    for g in np.flatnonzero(model.geom_bodyid == body):
        flat = np.zeros(9)
        mujoco.mju_quat2Mat(flat, model.geom_quat[g])
        rot = flat.reshape(3, 3)
        center = model.geom_pos[g] + rot @ model.geom_aabb[g, :3]
        half = np.abs(rot) @ model.geom_aabb[g, 3:]
        lo, hi = np.minimum(lo, center - half), np.maximum(hi, center + half)
    if not np.all(np.isfinite(lo)):
        return np.zeros(3)
    return np.asarray((hi - lo) / 2.0)
