"""The task part of the scene schema: regions, success predicates (a tree of
kinds, each a tagged mapping), the scripted expert's parameters and the task itself.

`Predicate` is the union of the registered predicate kinds (metasim.scene.kinds): the
core's below, each registered with `@PREDICATE_KINDS.register(<its key>)`, and those of
benchmark packages."""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import ConfigDict, Field, model_validator

from metasim.scene.kinds import PREDICATE_KINDS, KindUnion, holds_kinds, predicate_union
from metasim.scene.predicate_base import PredicateBase, Ref
from metasim.scene.schema_base import NonNegFloat, PositiveFloat, Strict, Vec3

# A predicate of any registered kind (typed as their base for the type checker).
Predicate = Annotated[PredicateBase, KindUnion(predicate_union)]

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


@PREDICATE_KINDS.register("all")
class AllOf(PredicateBase):
    all: Annotated[list[Predicate], Field(min_length=1)]

    def children(self) -> list[tuple[tuple[int | str, ...], Predicate]]:
        return [(("all", i), c) for i, c in enumerate(self.all)]


@PREDICATE_KINDS.register("any")
class AnyOf(PredicateBase):
    any: Annotated[list[Predicate], Field(min_length=1)]

    def children(self) -> list[tuple[tuple[int | str, ...], Predicate]]:
        return [(("any", i), c) for i, c in enumerate(self.any)]


@PREDICATE_KINDS.register("not")
class Not(PredicateBase):
    model_config = ConfigDict(extra="forbid", frozen=True, populate_by_name=True)
    not_: Predicate = Field(alias="not")

    def children(self) -> list[tuple[tuple[int | str, ...], Predicate]]:
        return [(("not",), self.not_)]


@PREDICATE_KINDS.register("in_region")
class InRegion(PredicateBase):
    in_region: InRegionArgs

    def references(self) -> list[Ref]:
        a = self.in_region
        refs = [Ref(("in_region", "object"), "object", "object ", a.object)]
        if a.region.frame is not None:
            refs.append(Ref(("in_region", "region", "frame"), "body", "body ", a.region.frame))
        return refs


@PREDICATE_KINDS.register("on")
class On(PredicateBase):
    on: OnArgs

    def references(self) -> list[Ref]:
        return [
            Ref(("on", "object"), "object", "object ", self.on.object),
            Ref(("on", "support"), "body", "", self.on.support),
        ]


@PREDICATE_KINDS.register("lifted")
class Lifted(PredicateBase):
    lifted: LiftedArgs

    def references(self) -> list[Ref]:
        return [Ref(("lifted", "object"), "object", "object ", self.lifted.object)]


@PREDICATE_KINDS.register("joint_open")
class JointOpen(PredicateBase):
    joint_open: JointFractionArgs

    def references(self) -> list[Ref]:
        return [Ref(("joint_open", "joint"), "joint", "joint ", self.joint_open.joint)]


@PREDICATE_KINDS.register("joint_closed")
class JointClosed(PredicateBase):
    joint_closed: JointFractionArgs

    def references(self) -> list[Ref]:
        return [Ref(("joint_closed", "joint"), "joint", "joint ", self.joint_closed.joint)]


@PREDICATE_KINDS.register("grasped")
class Grasped(PredicateBase):
    grasped: GraspedArgs

    def references(self) -> list[Ref]:
        return [Ref(("grasped", "object"), "object", "object ", self.grasped.object)]


class ExpertSpec(Strict):
    """Parameters of the built-in scripted expert for this task (state-based, IK)."""

    skill: Literal["pick_lift", "pick_place", "push", "open_drawer", "close_drawer", "open_door"]
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


class StateField(Strict):
    """A model field an initial state sets for its episode (a benchmark that moves
    fixtures or goals at reset, as Meta-World does): row `name` of `MjModel.<field>`
    takes, in episode k, row k mod N of the file's array `key` (N, width)."""

    field: Literal["body_pos", "body_quat", "site_pos", "site_quat", "geom_pos", "geom_quat",
                   "geom_size"]  # fmt: skip
    name: Annotated[str, Field(min_length=1)]
    key: Annotated[str, Field(min_length=1)]


class InitStatesSpec(Strict):
    """Recorded initial states: episode k starts from row k mod N of array `key` in the
    `.npz` file `file`, whatever env slot runs it. Each row is [time, qpos, qvel] over
    `joints` in order (LIBERO's layout); joints not listed keep the model's qpos0 and rest.
    `controller: stale` makes an `osc_pose` controller start as LIBERO's does (built at
    the robot's home pose, not refreshed after the state is written). `rows` [start, stop)
    keeps those rows of the file only: episode k then starts from row start + k mod
    (stop - start), so one split of the recorded states (demonstrations) never starts an
    episode of another (evaluation)."""

    file: Annotated[str, Field(min_length=1)]
    key: str = "states"
    joints: Annotated[list[StateJoint], Field(min_length=1)]
    controller: Literal["stale", "fresh"] = "stale"
    mocap: bool = False
    """The file also holds `mocap_pos` (N, nmocap, 3) and `mocap_quat` (N, nmocap, 4)."""
    state_fields: list[StateField] = []
    rows: tuple[Annotated[int, Field(ge=0)], Annotated[int, Field(ge=1)]] | None = None

    @model_validator(mode="after")
    def _rows_ordered(self) -> InitStatesSpec:
        if self.rows is not None and self.rows[0] >= self.rows[1]:
            raise ValueError(f"rows: [start, stop) needs start < stop, got {list(self.rows)}")
        return self


@holds_kinds
class TaskSpec(Strict):
    model_config = ConfigDict(defer_build=True)  # holds predicates: built when first used

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
    # Which poses success reads after a control step: `step`, those of the state the last
    # physics substep started from (what robosuite leaves, LIBERO reads); `forward`, those
    # of the state after it (Meta-World's env runs mj_forward after its substeps).
    success_reads: Literal["step", "forward"] = "step"
    # The instant observations (policy state, privileged state, camera images) are taken
    # at: None, the end of the control step (after every physics substep, kinematics
    # refreshed); k, what MuJoCo's data holds right after the control step's k-th physics
    # substep (1-based): joint state after k substeps, body/site poses (and so images) of
    # the state that substep started from. LIBERO declares 24 of its 25 (robosuite's
    # observables sample there under its harnesses' reset + set_init_state).
    observe_substep: Annotated[int, Field(ge=1)] | None = None
