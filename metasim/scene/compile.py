"""Compile a typed `Scene` into an `MjSpec` and an `MjModel` (MuJoCo 4.x).

The robot MJCF is attached under the prefix `robot/`; objects are bodies named as in
the scene; fixtures create bodies `<name>` (and `<name>/drawer`, joint `<name>/slide`,
sites `<name>/handle`, `<name>/inside` for a drawer). `CompiledScene` carries the model
and the index (ids and addresses) every layer above needs, so nothing above looks
names up again.
"""

from __future__ import annotations

import dataclasses
import math
from dataclasses import dataclass
from pathlib import Path

import mujoco

from metasim.errors import MetasimInputError
from metasim.rotations import look_at_quat, yaw_quat
from metasim.scene import fixtures, mjcf_fixtures, prebuilt_format
from metasim.scene.references import check_references
from metasim.scene.robots import RobotDescriptor, RobotError, resolve_robot
from metasim.scene.scene_index import ROBOT_PREFIX, SceneIndex, index_of
from metasim.scene.schema import CameraSpec, MaterialSpec, ObjectSpec, Scene

__all__ = ["ROBOT_PREFIX", "CompiledScene", "SceneIndex", "compile_scene", "index_of"]


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
class CompiledScene:
    scene: Scene
    source: Path | None
    robot: RobotDescriptor
    spec: mujoco.MjSpec | None  # None: a prebuilt scene (metasim.scene.prebuilt)
    model: mujoco.MjModel
    index: SceneIndex
    substeps: int
    # a prebuilt scene saved without its textures (state-only runs): cameras refuse
    untextured: bool = False
    # the folder the scene's relative file names resolve against (its background's splats)
    base_dir: Path | None = None

    @property
    def control_dt(self) -> float:
        return self.substeps * self.model.opt.timestep

    @property
    def max_steps(self) -> int:
        return max(1, math.ceil(self.scene.task.time_limit / self.control_dt))

    def observed_at(self, substep: int | None) -> CompiledScene:
        """This scene (the same model) observed after physics substep `substep` of every
        control step (`task.observe_substep`, which a handler reads when it is built; None:
        at the step's end)."""
        task = self.scene.task.model_copy(update={"observe_substep": substep})
        return dataclasses.replace(self, scene=self.scene.model_copy(update={"task": task}))

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
    """Build the MjSpec for `scene` and compile it; MuJoCo's own errors become input errors.
    A scene whose source is a prebuilt file gets its saved model (`metasim.scene.prebuilt`)."""
    if source is not None and source.name.endswith(prebuilt_format.SUFFIX):
        return load_prebuilt(source, scene)
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
    substeps = substeps_of(scene, model)
    observe = scene.task.observe_substep
    if observe is not None and observe > substeps:
        msg = f"task.observe_substep: {observe} is past the last physics substep ({substeps})"
        raise MetasimInputError(str(source or scene.name), [msg])
    index = index_of(model, scene, robot)
    return CompiledScene(scene, source, robot, spec, model, index, substeps, base_dir=base_dir)


def load_prebuilt(path: Path, scene: Scene) -> CompiledScene:
    """The saved model of the prebuilt scene `path` (`metasim.scene.prebuilt`) as the
    CompiledScene of `scene`, which must be the exported scene (else the model would
    not be the scene's)."""
    held = prebuilt_format.load_scene(path)
    if held.model_dump(mode="json", by_alias=True) != scene.model_dump(mode="json", by_alias=True):
        raise MetasimInputError(
            str(path),
            [
                "the scene to compile differs from the prebuilt one (a perturbation axis "
                "that rebuilds the model, such as object scale or a texture, needs the "
                "benchmark's package to recompile); prebuilt scenes run as exported, with "
                "physics perturbations applied as per-env model edits"
            ],
        )
    issues = check_references(
        scene, path.parent, files=False
    )  # the checks of a YAML scene's loader
    if issues:
        raise MetasimInputError(str(path), [f"scene.{_dotted(loc)}: {msg}" for loc, msg in issues])
    model, textured = prebuilt_format.load_model(path)
    try:
        robot = resolve_robot(scene.robot.name, path.parent)
    except RobotError as exc:
        raise MetasimInputError(str(path), [f"robot.name: {exc}"]) from None
    try:
        index = index_of(model, scene, robot)
    except (KeyError, ValueError, IndexError) as exc:  # MuJoCo: "Invalid name 'cube'. ..."
        raise MetasimInputError(
            str(path),
            [f"its saved model is not this scene's (a model from another scene?): {exc}"],
            "Export the task again with `metasim scene prebuild`",
        ) from None
    substeps = substeps_of(scene, model)
    return CompiledScene(
        scene, path, robot, None, model, index, substeps, not textured, base_dir=path.parent
    )


def _dotted(loc: tuple[int | str, ...]) -> str:
    """`("objects", 0, "mass")` -> `objects[0].mass`."""
    return "".join(f"[{p}]" if isinstance(p, int) else f".{p}" for p in loc).lstrip(".")


def substeps_of(scene: Scene, model: mujoco.MjModel) -> int:
    """Physics steps per control step."""
    return max(1, round(1.0 / (scene.task.control_hz * model.opt.timestep)))


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
