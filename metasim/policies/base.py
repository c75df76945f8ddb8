"""The policy protocol and the policy registry.

A policy is reset with the task's instruction (for all envs, or for `env_ids` when
envs restart at different times) and maps an observation batch to an action chunk
(B, H, D) in its declared action convention. The harness owns chunk execution (execute
k of H, or temporal ensembling) and converts actions into the env's canonical space.

`act(obs, env_ids)` names the envs that need a fresh chunk; a policy may compute every
row anyway (rows outside `env_ids` are ignored). A chunk shorter than H for some env is
padded with rows that are all NaN. A policy that fails for some envs only raises
`PolicyFailure` carrying the chunk for the others and the reason per failed env.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any, Protocol, TypeVar

import numpy as np
from pydantic import BaseModel, ConfigDict, Field, ValidationError

from metasim.envs.vec_env import CameraView
from metasim.errors import MetasimInputError, validation_problems
from metasim.policies.conventions import ActionConvention
from metasim.policies.observation import ObservationSpec
from metasim.registry import Registry
from metasim.scene.compile import CompiledScene


class PolicyOptions(BaseModel):
    """The options every policy kind takes (`policy.<name>` on the command line): its
    action convention and observation spec. A kind with more options registers a
    subclass (`register_policy(name, options=Model)`); unknown keys are refused."""

    model_config = ConfigDict(extra="forbid", frozen=True)
    actions: ActionConvention = Field(default_factory=ActionConvention)
    observation: ObservationSpec = Field(default_factory=ObservationSpec)

    def preflight(self) -> None:
        """Cheap checks of what the policy needs on this machine (a checkpoint folder's
        files), run by eval and collect before any run folder is written; a problem is
        a `MetasimInputError`. Default: none (a kind overrides it)."""


OptionsT = TypeVar("OptionsT", bound=PolicyOptions)

_NAMES_CODE = "names_code"


def code_field(**kw: Any) -> Any:
    """A policy option that names code the policy imports and runs (`module:Name`).
    A config read from a file someone else wrote (a run folder's manifest or summary)
    is not built while such an option names code the user has not allowed by name
    (`code_named`, `check_code_allowed`)."""
    return Field(json_schema_extra={_NAMES_CODE: True}, **kw)


def code_named(options: PolicyOptions) -> list[str]:
    """The code the policy of `options` would import and run: each option declared with
    `code_field` that is set (e.g. `policy.target` of kind python)."""
    out = []
    for name, info in type(options).model_fields.items():
        extra = info.json_schema_extra
        value = getattr(options, name)
        if isinstance(extra, dict) and extra.get(_NAMES_CODE) and value:
            out.append(str(value))
    return out


def add_allow_code(parser: Any, when: str) -> None:
    """The `--allow-code MODULE:NAME` option (repeatable) of a verb that may build a policy
    named by a run folder's files: `when` says when it applies (e.g. "--resume: build
    the manifest's policy")."""
    parser.add_argument(
        "--allow-code",
        action="append",
        default=[],
        metavar="MODULE:NAME",
        help=f"{when} even though it imports and runs this code (named by the run folder's "
        "files; never run otherwise); repeat for each",
    )


def code_refusal(options: PolicyOptions, allowed: Sequence[str], source: str, flag: str) -> str:
    """Why the policy of `options`, read from `source` (a file), must not be built: it
    names code not in `allowed` (the user's `flag` arguments); "" when nothing is named
    or all of it is allowed."""
    refused = [ref for ref in code_named(options) if ref not in set(allowed)]
    if not refused:
        return ""
    names = ", ".join(repr(r) for r in refused)
    allow = " ".join(f"{flag} {r}" for r in refused)
    return (
        f"{source} names a policy that imports and runs code ({names}); code named by a "
        f"file is never run unless allowed by name: add {allow} if you trust it"
    )


def check_code_allowed(
    options: PolicyOptions, allowed: Sequence[str], source: str, flag: str
) -> None:
    """Refuse (exit 2) to build the policy of `options` read from `source` while it
    names code not in `allowed` (see `code_refusal`)."""
    why = code_refusal(options, allowed, source, flag)
    if why:
        raise MetasimInputError("", [why])


@dataclass(frozen=True)
class PolicyContext:
    """What a policy may know about the env it drives, fixed for the env's lifetime."""

    compiled: CompiledScene
    num_envs: int
    action_space: str
    object_names: tuple[str, ...]
    fixture_bodies: tuple[str, ...]
    fixture_sites: tuple[str, ...]
    control_dt: float
    options: PolicyOptions = field(default_factory=PolicyOptions)

    def typed(self, model: type[OptionsT]) -> OptionsT:
        """The options as `model`, the kind's own model (`make_policy` hands each kind its
        own; anything else is a programming error, not bad user input)."""
        if not isinstance(self.options, model):
            raise TypeError(
                f"policy options are {type(self.options).__name__}, not {model.__name__}"
            )
        return self.options

    @classmethod
    def of(
        cls,
        compiled: CompiledScene,
        num_envs: int,
        action_space: str,
        options: PolicyOptions | None = None,
    ) -> PolicyContext:
        """The context of a policy driving `num_envs` envs of `compiled`."""
        from metasim.envs.vec_env import scene_parts

        objects, bodies, sites = scene_parts(compiled)
        return cls(
            compiled=compiled,
            num_envs=num_envs,
            action_space=action_space,
            object_names=objects,
            fixture_bodies=bodies,
            fixture_sites=sites,
            control_dt=compiled.control_dt,
            options=options if options is not None else PolicyOptions(),
        )


class Policy(Protocol):
    """What the harness drives. `views`: camera views the policy needs rendered beyond
    its observation spec's (LeRobot derives them from the checkpoint); `close()` releases
    connections, threads or models when the task's episodes are done. A policy with a
    true `device_images` attribute takes images as torch tensors on the device where the
    backend and the camera rig share one (`metasim.envs.device_images`)."""

    action_space: str

    @property
    def views(self) -> Sequence[CameraView]: ...

    def close(self) -> None: ...

    def reset(self, instruction: str, env_ids: np.ndarray | None = None) -> None: ...

    def act(self, obs: dict[str, Any], env_ids: np.ndarray | None = None) -> np.ndarray:
        """(B, H, D) action chunk for the observation batch (rows `env_ids` needed)."""
        ...


class PolicyFailure(Exception):
    """Some envs got no usable actions: `failed` maps env index -> reason, `chunk` holds
    the (B, H, D) actions of the others."""

    def __init__(self, chunk: np.ndarray, failed: dict[int, str]) -> None:
        self.chunk = chunk
        self.failed = failed
        first = next(iter(failed.items()), (None, ""))
        super().__init__(f"{len(failed)} env(s) failed, e.g. env {first[0]}: {first[1]}")


PolicyFactory = Callable[[PolicyContext], Policy]


@dataclass(frozen=True)
class PolicyKind:
    """A registered policy kind: its factory, the model of its options, and whether it
    is a client of a policy running elsewhere (`metasim serve` refuses to re-serve one)."""

    name: str
    factory: PolicyFactory
    options: type[PolicyOptions]
    client: bool = False

    def __post_init__(self) -> None:
        # Named after its factory, so the registry tells two kinds claiming one name apart.
        object.__setattr__(self, "__module__", self.factory.__module__)
        object.__setattr__(self, "__qualname__", self.factory.__qualname__)


# Kind name -> PolicyKind; every module of metasim.policies (and of each plug-in) that
# defines a kind registers it with `register_policy`.
POLICY_KINDS: Registry[PolicyKind] = Registry("policy kind", packages=("metasim.policies",))


def register_policy(
    name: str, options: type[PolicyOptions] = PolicyOptions, client: bool = False
) -> Callable[[PolicyFactory], PolicyFactory]:
    """Register `factory(ctx) -> Policy` as kind `name`, taking the options `options`
    (`client`: the kind talks to a policy served elsewhere)."""

    def deco(factory: PolicyFactory) -> PolicyFactory:
        POLICY_KINDS.register(name, PolicyKind(name, factory, options, client))
        return factory

    return deco


def policy_kind(name: str) -> PolicyKind:
    """The registered kind `name` (an input error naming the known kinds if none)."""
    kind = POLICY_KINDS.get(name)
    if kind is None:
        raise MetasimInputError(
            "policy config",
            [f"kind: unknown policy kind {name!r}; expected one of {POLICY_KINDS.names()}"],
        )
    return kind


def policy_options(name: str, options: Mapping[str, Any]) -> PolicyOptions:
    """`options` (plain data) validated into the model kind `name` registered; a bad or
    unknown key is an input error naming it (`policy.<key>`)."""
    model = policy_kind(name).options
    try:
        return model.model_validate(dict(options))
    except ValidationError as exc:
        problems = validation_problems(exc, prefix="policy.")
        raise MetasimInputError(f"policy config (kind {name})", problems) from None


def make_policy(name: str, ctx: PolicyContext) -> Policy:
    """A policy of kind `name`. Options of the common model only (`PolicyOptions`, what a
    caller driving any kind passes) become the kind's model with its defaults; options of
    another kind's model are refused."""
    kind = policy_kind(name)
    if not isinstance(ctx.options, kind.options):
        if type(ctx.options) is not PolicyOptions:
            raise TypeError(
                f"policy kind {name!r} takes {kind.options.__name__}, "
                f"not {type(ctx.options).__name__}"
            )
        common = ctx.options.model_dump(exclude_unset=True)
        ctx = replace(ctx, options=kind.options.model_validate(common))
    return kind.factory(ctx)


def registered_policies() -> list[str]:
    """Every registered policy kind."""
    return POLICY_KINDS.names()
