"""The scene schema: typed models that a scene YAML file loads into.

One schema for everything a scene declares: the robot, objects, fixtures, cameras,
lights, materials, initial-state ranges and the task (instruction, success predicate
tree, subgoals, time limit, control frequency). Units are SI: metres, kilograms,
seconds, radians (fovy in degrees, as MuJoCo has it). Quaternions are (w, x, y, z).

Fixtures and predicates are open kinds (metasim.scene.kinds): the core's are here and in
task_schema, registered by name; a benchmark package registers its own.
"""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import (
    ConfigDict,
    Field,
    SerializerFunctionWrapHandler,
    field_validator,
    model_serializer,
    model_validator,
)
from pydantic_core import PydanticCustomError

from metasim.scene.kinds import FIXTURE_KINDS, KindUnion, fixture_union, holds_kinds
from metasim.scene.physics_schema import PhysicsSpec
from metasim.scene.render_schema import BackgroundSpec, RenderSpec
from metasim.scene.schema_base import (
    RGBA,
    FixtureBase,
    NonNegFloat,
    PositiveFloat,
    Quat,
    Strict,
    UnitQuat,
    Vec3,
)
from metasim.scene.task_schema import (
    AllOf,
    AnyOf,
    ExpertSpec,
    Grasped,
    GraspedArgs,
    InRegion,
    InRegionArgs,
    JointClosed,
    JointFractionArgs,
    JointOpen,
    Lifted,
    LiftedArgs,
    Not,
    On,
    OnArgs,
    Predicate,
    Region,
    TaskSpec,
)

# ---------------------------------------------------------------- appearance


class TextureSpec(Strict):
    """A texture: a built-in MuJoCo pattern or an image file (PNG), relative to the scene."""

    builtin: Literal["checker", "gradient", "flat"] | None = None
    file: str | None = None
    rgb1: Vec3 = (0.8, 0.8, 0.8)
    rgb2: Vec3 = (0.5, 0.5, 0.5)
    width: Annotated[int, Field(gt=0, le=4096)] = 256
    height: Annotated[int, Field(gt=0, le=4096)] = 256

    @model_validator(mode="after")
    def _one_source(self) -> TextureSpec:
        if (self.builtin is None) == (self.file is None):
            raise PydanticCustomError(
                "texture_source", "a texture needs exactly one of 'builtin' or 'file'"
            )
        return self


class MaterialSpec(Strict):
    name: str
    rgba: RGBA = (1.0, 1.0, 1.0, 1.0)
    texture: TextureSpec | None = None
    texrepeat: tuple[float, float] = (1.0, 1.0)
    specular: Annotated[float, Field(ge=0, le=1)] = 0.3
    shininess: Annotated[float, Field(ge=0, le=1)] = 0.3
    reflectance: Annotated[float, Field(ge=0, le=1)] = 0.0


# ---------------------------------------------------------------- robot


class RobotSpec(Strict):
    """The robot: `panda` (built in), `mjcf:<path>` or `menagerie:<name>`.

    `init_qpos` overrides the robot's home arm configuration; `init_noise` adds uniform
    noise of that half-width (rad) to every arm joint at reset.
    """

    name: str = "panda"
    pos: Vec3 = (0.0, 0.0, 0.0)
    yaw: float = 0.0
    init_qpos: list[float] | None = None
    init_noise: NonNegFloat = 0.0
    gripper_init: Annotated[float, Field(ge=0, le=1)] = 1.0


# ---------------------------------------------------------------- objects


class InitRange(Strict):
    """Uniform initial-state range added to the nominal pose at every reset."""

    pos_low: Vec3 = (0.0, 0.0, 0.0)
    pos_high: Vec3 = (0.0, 0.0, 0.0)
    yaw_low: float = 0.0
    yaw_high: float = 0.0

    @model_validator(mode="after")
    def _ordered(self) -> InitRange:
        if any(lo > hi for lo, hi in zip(self.pos_low, self.pos_high, strict=True)):
            raise PydanticCustomError("range_order", "pos_low must be <= pos_high on every axis")
        if self.yaw_low > self.yaw_high:
            raise PydanticCustomError("range_order", "yaw_low must be <= yaw_high")
        return self


ShapeName = Literal["box", "sphere", "cylinder", "capsule", "mesh", "mjcf"]
_SIZE_LEN = {"box": 3, "sphere": 1, "cylinder": 2, "capsule": 2}


class ObjectSpec(Strict):
    """A rigid object. `size` follows MuJoCo: box half-extents (3), sphere radius (1),
    cylinder/capsule (radius, half-length). `mesh` and `mjcf` name a file relative to
    the scene file. `free: false` welds the object to the world."""

    name: str
    shape: ShapeName
    size: list[PositiveFloat] | None = None
    mesh: str | None = None
    mjcf: str | None = None
    mjcf_body: str | None = None
    """With `mjcf`: the body of the file that becomes the object (robosuite's objects use
    `object`); the object's free body is that body, its names prefixed `<name>_`."""
    scale: Vec3 = (1.0, 1.0, 1.0)
    pos: Vec3 = (0.0, 0.0, 0.0)
    quat: UnitQuat = (1.0, 0.0, 0.0, 0.0)
    free: bool = True
    free_damping: NonNegFloat = 0.0
    """Damping of the free joint, the same on its six dofs (N s/m, N m s/rad); imported
    scenes set their simulator's (LIBERO's objects: 0.0005)."""
    mass: PositiveFloat = 0.1
    friction: tuple[NonNegFloat, NonNegFloat, NonNegFloat] = (1.0, 0.005, 0.0001)
    rgba: RGBA | None = None
    material: str | None = None
    collide: bool = True
    init: InitRange = InitRange()

    @model_validator(mode="after")
    def _shape_fields(self) -> ObjectSpec:
        if self.shape in _SIZE_LEN:
            want = _SIZE_LEN[self.shape]
            if self.size is None or len(self.size) != want:
                raise PydanticCustomError(
                    "shape_size",
                    "a {shape} needs 'size' with {want} positive number(s)",
                    {"shape": self.shape, "want": want},
                )
        if self.shape == "mesh" and not self.mesh:
            raise PydanticCustomError("shape_file", "shape 'mesh' needs 'mesh: <file>'")
        if self.shape == "mjcf" and not self.mjcf:
            raise PydanticCustomError("shape_file", "shape 'mjcf' needs 'mjcf: <file>'")
        if self.rgba is not None and self.material is not None:
            raise PydanticCustomError("color", "give either 'rgba' or 'material', not both")
        return self


# ---------------------------------------------------------------- fixtures


@FIXTURE_KINDS.register("table")
class TableSpec(FixtureBase):
    """A table whose top surface is at `height` (z), centred at `pos` (x, y)."""

    type: Literal["table"]
    name: str
    pos: tuple[float, float] = (0.55, 0.0)
    height: float = 0.0
    half_size: tuple[PositiveFloat, PositiveFloat] = (0.45, 0.6)
    thickness: PositiveFloat = 0.04
    leg_length: PositiveFloat = 0.71
    rgba: RGBA | None = None
    material: str | None = None
    friction: tuple[NonNegFloat, NonNegFloat, NonNegFloat] = (1.0, 0.005, 0.0001)


@FIXTURE_KINDS.register("drawer")
class DrawerSpec(FixtureBase):
    """A cabinet with one drawer on a slide joint; the front faces -x rotated by `yaw`.

    The joint `<name>/slide` is 0 when closed and `travel` when fully open. The handle
    is a tab with an end cap that a parallel gripper can hook (site `<name>/handle`).
    """

    type: Literal["drawer"]
    name: str
    pos: Vec3 = (0.75, 0.0, 0.0)
    yaw: float = 0.0
    outer: tuple[PositiveFloat, PositiveFloat, PositiveFloat] = (0.3, 0.32, 0.12)
    travel: PositiveFloat = 0.2
    init_open: Annotated[float, Field(ge=0, le=1)] = 0.0
    init_open_range: tuple[float, float] | None = None
    damping: NonNegFloat = 4.0
    rgba: RGBA = (0.55, 0.42, 0.3, 1.0)
    material: str | None = None

    def bodies(self) -> tuple[str, ...]:
        return (self.name, f"{self.name}/drawer")

    def sites(self) -> tuple[str, ...]:
        return (f"{self.name}/handle", f"{self.name}/inside")

    def joints(self) -> tuple[str, ...]:
        return (self.name, f"{self.name}/slide")


@FIXTURE_KINDS.register("bin")
class BinSpec(FixtureBase):
    """An open box fixed to the table: inner half-extents `half_size`, walls `wall` thick."""

    type: Literal["bin"]
    name: str
    pos: Vec3 = (0.55, 0.25, 0.0)
    half_size: Vec3 = (0.08, 0.08, 0.04)
    wall: PositiveFloat = 0.008
    rgba: RGBA = (0.3, 0.35, 0.45, 1.0)
    material: str | None = None


@FIXTURE_KINDS.register("marker")
class MarkerSpec(FixtureBase):
    """A flat, non-colliding coloured patch on the table (a goal region shown to cameras)."""

    type: Literal["marker"]
    name: str
    pos: Vec3 = (0.6, 0.0, 0.0)
    half_size: tuple[PositiveFloat, PositiveFloat] = (0.05, 0.05)
    rgba: RGBA = (0.1, 0.7, 0.2, 1.0)


# A fixture of any registered kind (typed as their base for the type checker).
FixtureSpec = Annotated[FixtureBase, KindUnion(fixture_union)]


# ---------------------------------------------------------------- cameras and lights


class CameraSpec(Strict):
    """A camera: fixed (`pos` with `look_at` or `quat`) or on the robot (`mount: wrist`)."""

    name: str
    mount: Literal["world", "wrist"] = "world"
    pos: Vec3 | None = None
    look_at: Vec3 | None = None
    up: Vec3 = (0.0, 0.0, 1.0)
    quat: UnitQuat | None = None
    fovy: Annotated[float, Field(gt=0, lt=180)] = 45.0
    width: Annotated[int, Field(gt=0, le=4096)] = 256
    height: Annotated[int, Field(gt=0, le=4096)] = 256

    @model_validator(mode="after")
    def _pose(self) -> CameraSpec:
        if self.mount == "world":
            if self.pos is None:
                raise PydanticCustomError("camera_pose", "a world camera needs 'pos'")
            if (self.look_at is None) == (self.quat is None):
                raise PydanticCustomError(
                    "camera_pose", "a world camera needs exactly one of 'look_at' or 'quat'"
                )
        return self


class LightSpec(Strict):
    name: str
    pos: Vec3 = (0.5, 0.0, 2.0)
    dir: Vec3 = (0.0, 0.0, -1.0)
    diffuse: Vec3 = (0.7, 0.7, 0.7)
    ambient: Vec3 = (0.1, 0.1, 0.1)
    specular: Vec3 = (0.3, 0.3, 0.3)
    directional: bool = False
    castshadow: bool = True


@holds_kinds
class Scene(Strict):
    """A complete scene with its task. Loaded from YAML by `metasim.scene.load_scene`."""

    # Built when first used: its fixture and predicate unions come from the registries.
    model_config = ConfigDict(defer_build=True)

    name: Annotated[str, Field(pattern=r"^[A-Za-z0-9_\-]+$")]
    description: str = ""
    robot: RobotSpec = RobotSpec()
    physics: PhysicsSpec = PhysicsSpec()
    render: RenderSpec = RenderSpec()
    background: BackgroundSpec | None = None
    """A scanned background drawn behind the meshes (splats; render_schema)."""
    materials: list[MaterialSpec] = []
    fixtures: list[FixtureSpec] = []
    objects: list[ObjectSpec] = []
    cameras: list[CameraSpec] = []
    lights: list[LightSpec] = []
    shuffle_positions: list[Annotated[list[str], Field(min_length=2)]] = []
    """Groups of objects whose nominal positions are permuted at every reset (so that
    which object sits where is random, e.g. which coloured cube is in the middle)."""
    task: TaskSpec

    @field_validator("objects", "fixtures", "cameras", "lights", "materials")
    @classmethod
    def _unique_names(cls, items: list[Any]) -> list[Any]:
        seen: set[str] = set()
        for item in items:
            if item.name in seen:
                raise PydanticCustomError(
                    "duplicate_name", "the name {name!r} is used twice", {"name": item.name}
                )
            seen.add(item.name)
        return items

    @model_serializer(mode="wrap")
    def _dump(self, handler: SerializerFunctionWrapHandler) -> dict[str, Any]:
        """The fields, without `background` when there is none: a scene without one dumps
        (and so hashes, `metasim.evaluate.content`) as it did before the field existed."""
        data = handler(self)
        if isinstance(data, dict) and data.get("background") is None:
            data.pop("background", None)
        return data


# The schema's models, the building blocks and the task models included (re-exported).
__all__ = [
    "RGBA",
    "AllOf",
    "AnyOf",
    "BackgroundSpec",
    "BinSpec",
    "CameraSpec",
    "DrawerSpec",
    "ExpertSpec",
    "FixtureBase",
    "FixtureSpec",
    "Grasped",
    "GraspedArgs",
    "InRegion",
    "InRegionArgs",
    "InitRange",
    "JointClosed",
    "JointFractionArgs",
    "JointOpen",
    "Lifted",
    "LiftedArgs",
    "LightSpec",
    "MarkerSpec",
    "MaterialSpec",
    "NonNegFloat",
    "Not",
    "ObjectSpec",
    "On",
    "OnArgs",
    "PhysicsSpec",
    "PositiveFloat",
    "Predicate",
    "Quat",
    "Region",
    "RenderSpec",
    "RobotSpec",
    "Scene",
    "Strict",
    "TableSpec",
    "TaskSpec",
    "TextureSpec",
    "UnitQuat",
    "Vec3",
]
