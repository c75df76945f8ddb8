"""The task part of the scene schema: regions, success predicates (a tree of
kinds, each a tagged mapping), the scripted expert's parameters and the task itself."""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import (
    BaseModel,
    ConfigDict,
    Discriminator,
    Field,
    Tag,
)

from metasim.scene.predicate_base import PredicateBase, Ref
from metasim.scene.schema_base import NonNegFloat, PositiveFloat, Strict, Vec3
from metasim.scene.schema_libero import LIBERO_KINDS, JointValue, RestingOn, SiteIn, SiteOn

# ---------------------------------------------------------------- task


class Region(Strict):
    """An axis-aligned box, in the world frame or in the frame of body `frame`."""

    center: Vec3
    half_size: tuple[PositiveFloat, PositiveFloat, PositiveFloat]
    frame: str | None = None


class InRegionArgs(Strict):
    object: str
    region: Region


class OnArgs(Strict):
    object: str
    support: str
    xy_margin: NonNegFloat = 0.0
    z_tolerance: PositiveFloat = 0.015


class LiftedArgs(Strict):
    object: str
    height: PositiveFloat


class JointFractionArgs(Strict):
    joint: str
    fraction: Annotated[float, Field(ge=0, le=1)]


class GraspedArgs(Strict):
    object: str


class InRegion(PredicateBase):
    in_region: InRegionArgs

    def references(self) -> list[Ref]:
        a = self.in_region
        refs = [Ref(("in_region", "object"), "object", "object ", a.object)]
        if a.region.frame is not None:
            refs.append(Ref(("in_region", "region", "frame"), "body", "body ", a.region.frame))
        return refs


class On(PredicateBase):
    on: OnArgs

    def references(self) -> list[Ref]:
        return [
            Ref(("on", "object"), "object", "object ", self.on.object),
            Ref(("on", "support"), "body", "", self.on.support),
        ]


class Lifted(PredicateBase):
    lifted: LiftedArgs

    def references(self) -> list[Ref]:
        return [Ref(("lifted", "object"), "object", "object ", self.lifted.object)]


class JointOpen(PredicateBase):
    joint_open: JointFractionArgs

    def references(self) -> list[Ref]:
        return [Ref(("joint_open", "joint"), "joint", "joint ", self.joint_open.joint)]


class JointClosed(PredicateBase):
    joint_closed: JointFractionArgs

    def references(self) -> list[Ref]:
        return [Ref(("joint_closed", "joint"), "joint", "joint ", self.joint_closed.joint)]


class Grasped(PredicateBase):
    grasped: GraspedArgs

    def references(self) -> list[Ref]:
        return [Ref(("grasped", "object"), "object", "object ", self.grasped.object)]


class AllOf(PredicateBase):
    all: Annotated[list[Predicate], Field(min_length=1)]

    def children(self) -> list[tuple[tuple[int | str, ...], Predicate]]:
        return [(("all", i), c) for i, c in enumerate(self.all)]


class AnyOf(PredicateBase):
    any: Annotated[list[Predicate], Field(min_length=1)]

    def children(self) -> list[tuple[tuple[int | str, ...], Predicate]]:
        return [(("any", i), c) for i, c in enumerate(self.any)]


class Not(PredicateBase):
    model_config = ConfigDict(extra="forbid", frozen=True, populate_by_name=True)
    not_: Predicate = Field(alias="not")

    def children(self) -> list[tuple[tuple[int | str, ...], Predicate]]:
        return [(("not",), self.not_)]


PREDICATE_KINDS = (
    "all",
    "any",
    "not",
    "in_region",
    "on",
    "lifted",
    "joint_open",
    "joint_closed",
    "grasped",
    *LIBERO_KINDS,
)


def _predicate_tag(value: Any) -> str | None:
    if isinstance(value, dict) and len(value) == 1:
        key = next(iter(value))
        return key if key in PREDICATE_KINDS else None
    if isinstance(value, BaseModel):
        return next(iter(type(value).model_fields)).rstrip("_")
    return None


Predicate = Annotated[
    Annotated[AllOf, Tag("all")]
    | Annotated[AnyOf, Tag("any")]
    | Annotated[Not, Tag("not")]
    | Annotated[InRegion, Tag("in_region")]
    | Annotated[On, Tag("on")]
    | Annotated[Lifted, Tag("lifted")]
    | Annotated[JointOpen, Tag("joint_open")]
    | Annotated[JointClosed, Tag("joint_closed")]
    | Annotated[Grasped, Tag("grasped")]
    | Annotated[RestingOn, Tag("resting_on")]
    | Annotated[SiteOn, Tag("site_on")]
    | Annotated[SiteIn, Tag("site_in")]
    | Annotated[JointValue, Tag("joint_value")],
    Field(
        discriminator=Discriminator(
            _predicate_tag,
            custom_error_type="predicate",
            custom_error_message=(
                "a predicate is a mapping with exactly one key, one of: "
                + ", ".join(PREDICATE_KINDS)
            ),
            custom_error_context={},
        )
    ),
]

AllOf.model_rebuild()
AnyOf.model_rebuild()
Not.model_rebuild()


class ExpertSpec(Strict):
    """Parameters of the built-in scripted expert for this task (state-based, IK)."""

    skill: Literal["pick_lift", "pick_place", "push", "open_drawer", "close_drawer"]
    object: str | None = None
    target: str | None = None
    target_offset: Vec3 = (0.0, 0.0, 0.0)
    fixture: str | None = None
    lift: PositiveFloat = 0.15


class StateJoint(Strict):
    """One joint of a recorded state row: its name in the compiled model and its widths."""

    name: Annotated[str, Field(min_length=1)]
    nq: Annotated[int, Field(ge=1, le=7)]
    nv: Annotated[int, Field(ge=1, le=6)]


class InitStatesSpec(Strict):
    """Recorded initial states: episode k starts from row k mod N of array `key` in the
    `.npz` file `file`, whatever env slot runs it. Each row is [time, qpos, qvel] over
    `joints` in order (LIBERO's layout); joints not listed keep the model's qpos0 and rest.
    `controller: stale` makes an `osc_pose` controller start as LIBERO's does (built at
    the robot's home pose, not refreshed after the state is written)."""

    file: Annotated[str, Field(min_length=1)]
    key: str = "states"
    joints: Annotated[list[StateJoint], Field(min_length=1)]
    controller: Literal["stale", "fresh"] = "stale"


class TaskSpec(Strict):
    instruction: Annotated[str, Field(min_length=1)]
    success: Predicate
    subgoals: list[Predicate] = []
    time_limit: PositiveFloat = 10.0  # includes the settle steps
    control_hz: Annotated[float, Field(gt=0, le=1000)] = 20.0
    expert: ExpertSpec | None = None
    init_states: InitStatesSpec | None = None
    # Control steps after every reset in which the robot holds still with the gripper open
    # before the policy is asked (LIBERO's clients wait 10 for objects to settle).
    settle_steps: Annotated[int, Field(ge=0, le=1000)] = 0
