"""`metasim eval` configuration: Hydra composition over eval/, then a typed model.

eval/config.yaml is the root; suites (eval/<name>.yaml with a `tasks:` list) form the
group `suite`, policy configs (policies/<name>.yaml) the group `policy`. The composed
config is validated into `EvalConfig`, so a bad override is reported like a bad scene
field (exit 2, the key and what was expected).
"""

from __future__ import annotations

from collections.abc import Callable
from functools import cache, cached_property, lru_cache
from pathlib import Path
from typing import Annotated, Any, Literal, Union

from omegaconf import OmegaConf
from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    PrivateAttr,
    SerializationInfo,
    TypeAdapter,
    ValidationError,
    create_model,
    field_validator,
    model_serializer,
    model_validator,
)
from pydantic_core import PydanticCustomError, to_jsonable_python

from metasim.errors import MetasimInputError, validation_problems
from metasim.evaluate.capacity import Capacity
from metasim.evaluate.spec import RolloutSpec
from metasim.paths import EVAL, POLICIES
from metasim.policies.base import PolicyOptions
from metasim.scene.sources import (
    NoSuchTask,
    Task,
    TaskOption,
    all_suites,
    resolve,
    suite_description,
    with_options,
)
from metasim.yamlio import Loc, dotted, line_of, load_yaml, node_at, plain

Locate = Callable[[tuple[int | str, ...]], str]  # a field's location -> 'file line N, '

MAX_EPISODES = 1_000_000  # per task and cell: a DuckDB row each, summarized in memory


class SuiteConfig(BaseModel):
    model_config = ConfigDict(extra="forbid")
    name: str
    description: str = ""
    tasks: Annotated[list[str], Field(min_length=1)]


HARNESS = ("kind", "action_space", "execute", "ensemble")  # what the harness owns


class PolicyConfig(BaseModel):
    """A policy config: `kind` picks the adapter; the harness's fields here, the kind's
    options (its registered model) beside them, flat as written in policies/*.yaml.

    Validated through `typed_policy`, the discriminated union on `kind` of one model per
    registered kind (`PolicyConfig` + the kind's options model), so `compose` yields the
    kind's typed options and `options()` hands exactly those down. The harness owns chunk
    execution: `execute` actions of each chunk (null: all of it), or temporal ensembling
    with weight exp(ensemble * j) on the prediction made j steps ago (ACT's rule; a new
    chunk every step). `actions` (the action convention, see
    metasim.policies.conventions) decides the env's action space.
    """

    model_config = ConfigDict(extra="forbid", frozen=True)
    kind: str
    # the env's canonical space; set from `actions` when declared, else it declares them
    action_space: Literal["ee_delta", "joint_pos", "mocap_delta"] = "ee_delta"
    execute: Annotated[int, Field(ge=1)] | None = None
    ensemble: Annotated[float, Field(ge=0)] | None = None

    @model_validator(mode="before")
    @classmethod
    def _space_and_convention(cls, data: Any) -> Any:
        """`action_space` from a declared `actions`, else `actions` from `action_space`."""
        if not isinstance(data, dict):
            return data
        from metasim.policies.conventions import ActionConvention

        if data.get("actions") is not None:
            try:
                conv = ActionConvention.model_validate(data["actions"])
            except ValidationError:
                return data  # reported with its path (policy.actions.*) by the kind's model
            return {**data, "action_space": conv.env_space}
        if data.get("action_space", "ee_delta") != "ee_delta":
            return {**data, "actions": {"space": data["action_space"]}}
        return data

    @model_serializer(mode="plain")
    def _as_given(self, info: SerializationInfo) -> dict[str, Any]:
        """The harness's fields and the options as given (nested ones without their
        defaults): what the run's manifest and summary record, as before options were
        typed, so a resumed run compares equal and the dump validates back."""
        out: dict[str, Any] = {}
        for key in type(self).model_fields:
            if key not in HARNESS and key not in self.model_fields_set:
                continue
            value = getattr(self, key)
            if isinstance(value, BaseModel):
                value = value.model_dump(mode=info.mode, exclude_unset=True)
            elif info.mode == "json":
                value = to_jsonable_python(value)
            out[key] = value
        return out

    def options(self) -> PolicyOptions:
        """The kind's typed options (its registered model; the harness's fields left out)."""
        from metasim.policies.base import policy_kind

        model = policy_kind(self.kind).options
        if type(self) is model:
            return self
        names = [n for n in model.model_fields if n not in HARNESS]
        given = {n: getattr(self, n) for n in names}
        return model.model_construct(self.model_fields_set & set(names), **given)


@cache
def _kind_config(name: str, options: type[PolicyOptions]) -> type[PolicyConfig]:
    """The config model of one kind: the harness's fields + the kind's options."""
    bases: Any = (PolicyConfig, options)
    tag: Any = Literal[name]
    model: type[PolicyConfig] = create_model(
        f"{options.__name__}Config", __base__=bases, __module__=__name__, kind=(tag, ...)
    )
    return model


@lru_cache(maxsize=8)
def _union(kinds: tuple[tuple[str, type[PolicyOptions]], ...]) -> TypeAdapter[PolicyConfig]:
    members = tuple(_kind_config(name, options) for name, options in kinds)
    union: Any = Union[members] if len(members) > 1 else members[0]  # noqa: UP007
    if len(members) > 1:
        union = Annotated[union, Field(discriminator="kind")]
    return TypeAdapter(union)


def typed_policy(data: Any) -> PolicyConfig:
    """A policy config validated into its kind's model: the discriminated union on `kind`
    over every registered kind (built from the registry when asked, so a kind a plug-in
    registers later is a member). Errors name the field as written (`port`, not the tag)."""
    from metasim.policies.base import POLICY_KINDS

    if isinstance(data, PolicyConfig):
        return data
    kinds = tuple((name, kind.options) for name, kind in POLICY_KINDS.items())
    kind = data.get("kind") if isinstance(data, dict) else None
    if isinstance(kind, str) and kind not in POLICY_KINDS:
        raise ValidationError.from_exception_data(
            "PolicyConfig",
            [
                {
                    "type": PydanticCustomError(
                        "unknown_kind",
                        "unknown policy kind {kind}; expected one of {known}",
                        {"kind": repr(kind), "known": str([n for n, _ in kinds])},
                    ),
                    "loc": ("kind",),
                    "input": kind,
                }
            ],
        )
    try:
        return _union(kinds).validate_python(data)
    except ValidationError as exc:
        raise _untagged(exc, kind) from None


def _untagged(exc: ValidationError, tag: object) -> ValidationError:
    """`exc` with the union's tag (the kind) dropped from each error's location."""
    errors: list[Any] = []
    for e in exc.errors():
        loc = e["loc"][1:] if e["loc"][:1] == (tag,) else e["loc"]
        detail: dict[str, Any] = {"type": e["type"], "loc": loc, "input": e["input"]}
        if "ctx" in e:
            detail["ctx"] = e["ctx"]
        errors.append(detail)
    return ValidationError.from_exception_data(exc.title, errors)


class EvalConfig(BaseModel):
    model_config = ConfigDict(extra="forbid")
    suite: SuiteConfig
    policy: PolicyConfig  # the kind's config model (`typed_policy`)
    backend: str = "mujoco"
    # the camera renderer; None: each scene's render.renderer (opengl unless it says warp)
    render: Literal["opengl", "warp"] | None = None
    # render=warp: samples per pixel per axis (None: the scene's render.raytrace, 2)
    render_spp: Annotated[int, Field(ge=1, le=4)] | None = None
    nconmax: Capacity = None  # backend=warp: contacts and constraint rows per world
    njmax: Capacity = None  # (None: the backend's default; metasim.evaluate.capacity)
    num_envs: Annotated[int, Field(ge=1, le=4096)] = 8
    episodes: Annotated[int, Field(ge=1, le=MAX_EPISODES)] = 10  # per task and cell
    seed: Annotated[int, Field(ge=0)] = 0
    perturbation: str = "none"
    out: str | None = None
    device: str = "cpu"  # only cpu: see _cpu_only
    threads: Annotated[int, Field(ge=1)] | None = None
    adaptive: bool = False  # stop each cell once its 95% interval is narrow enough
    adaptive_width: Annotated[float, Field(gt=0, le=1)] = 0.14
    adaptive_min: Annotated[int, Field(ge=1)] = 10
    executor: Literal["local", "ray"] = "local"
    ray_address: str | None = None  # default: RAY_ADDRESS, else a local Ray instance
    shard_episodes: Annotated[int, Field(ge=1)] = 8  # episodes per Ray task
    batch_cells: bool = False  # cells differing only per world: one batch (cell_batches)
    # options of the tasks' sources (`TaskSource.options`, e.g. `fixture_draw`; `with_options`)
    task_options: dict[str, TaskOption] = Field(default_factory=dict)

    _locate: Locate | None = PrivateAttr(default=None)  # set by compose(): file lines

    @model_serializer(mode="wrap")
    def _without_unset_options(self, handler: Any) -> dict[str, Any]:
        """No `task_options` or `batch_cells` key while unset: runs recorded before the
        fields existed, and runs that set neither, dump the same config."""
        data = handler(self)
        for key in [k for k in ("task_options", "batch_cells") if not data.get(k, True)]:
            data.pop(key)
        return data

    @field_validator("policy", mode="before")
    @classmethod
    def _typed_policy(cls, v: Any) -> PolicyConfig:
        return typed_policy(v)

    @field_validator("device")
    @classmethod
    def _cpu_only(cls, v: str) -> str:
        if v != "cpu":
            raise ValueError(
                "only 'cpu': the harness hands policies numpy observations in host memory "
                "(the MJX backend runs on the JAX device by itself); put a policy's model "
                "on a GPU with its own option, e.g. policy.device=cuda for policy=lerobot"
            )
        return v

    @cached_property
    def rollout(self) -> RolloutSpec:
        """The typed rollout spec of this config: the kind's options (validated with the
        config) and the harness's settings."""
        p = self.policy
        return RolloutSpec(
            policy=p.kind,
            options=p.options(),
            seed=self.seed,
            num_envs=self.num_envs,
            backend=self.backend,
            render=self.render,
            render_spp=self.render_spp,
            nconmax=self.nconmax,
            njmax=self.njmax,
            execute=p.execute,
            ensemble=p.ensemble,
            # One physics thread per Ray task: the cluster parallelizes across tasks.
            threads=self.threads or (1 if self.executor == "ray" else None),
        )

    def tasks(self) -> list[Task]:
        """The suite's task references resolved through the task-source registry
        (metasim.scene.sources): a scene name in scenes/, a scene file, or a reference
        with a registered prefix, each with the `task_options` its source takes. A missing
        task is an input error naming `tasks[i]`, a bad option one naming
        `task_options.<name>`."""
        tasks = []
        for i, ref in enumerate(self.suite.tasks):
            try:
                tasks.append(resolve(ref))
            except NoSuchTask as exc:
                raise MetasimInputError(
                    f"suite {self.suite.name!r}", [f"tasks[{i}]: {exc}"]
                ) from None
        return with_options(tasks, self.task_options)


Sources = dict[tuple[str, str], tuple[Path, Any]]  # (group, name) -> (file, YAML data)


def _register_groups() -> Sources:
    """Suites and policy configs, each read through `load_yaml` (bounded; a syntax error
    names file and line), stored as Hydra config groups; their YAML data, for lines.
    The suites the task sources list join the `suite` group too (eval/'s files first)."""
    from hydra.core.config_store import ConfigStore

    store = ConfigStore.instance()
    sources: Sources = {}
    load_yaml(EVAL / "config.yaml", "eval config")  # bounds and syntax; Hydra reads it
    groups = [("suite", p, "suite file") for p in sorted(EVAL.glob("*.yaml")) if p.stem != "config"]
    groups += [("policy", p, "policy config") for p in sorted(POLICIES.glob("*.yaml"))]
    for group, path, what in groups:
        data = load_yaml(path, what)
        if not isinstance(data, dict):
            raise MetasimInputError(str(path), [f"(top level): expected a mapping, got {data!r}"])
        store.store(group=group, name=path.stem, node=OmegaConf.create(plain(data)))
        sources[(group, path.stem)] = (path, data)
    for name, refs in all_suites().items():  # a task source's suites, unless eval/ has one
        if ("suite", name) not in sources:
            node = {"name": name, "description": suite_description(name), "tasks": refs}
            store.store(group="suite", name=name, node=OmegaConf.create(node))
    return sources


def _locator(sources: Sources, choices: dict[str, str], overrides: list[str]) -> Locate:
    """Where a config field came from: `<file> line N, ` when the chosen suite or policy
    file sets it, '' when it came from the command line (or is not set anywhere)."""
    given = {o.lstrip("+~").split("=", 1)[0] for o in overrides}
    given -= {"suite", "policy"}  # `policy=NAME` picks the file; it sets no field

    def locate(loc: Loc) -> str:
        key = dotted(loc)
        if (
            not loc
            or loc[0] not in ("suite", "policy")
            or any(key == g or key.startswith(g + ".") or key.startswith(g + "[") for g in given)
        ):
            return ""
        group = str(loc[0])
        path, data = sources.get((group, choices.get(group, "")), (None, None))
        if path is None or node_at(data, loc[1:]) is None:
            return ""
        line = line_of(data, loc[1:])
        return f"{_rel(path)} line {line}, " if line else f"{_rel(path)}, "

    return locate


def _rel(path: Path) -> str:
    try:
        return str(path.resolve().relative_to(Path.cwd()))
    except ValueError:
        return str(path)


def compose(overrides: list[str]) -> EvalConfig:
    """Compose eval/config.yaml with command-line `overrides`, validate the result and
    build its rollout spec (policy options validated): a bad value is an input error
    naming the key (and the file and line that set it), before anything is written."""
    from hydra import compose as hydra_compose
    from hydra import initialize_config_dir
    from hydra.core.global_hydra import GlobalHydra
    from hydra.errors import HydraException
    from omegaconf.errors import OmegaConfBaseException

    sources = _register_groups()
    GlobalHydra.instance().clear()
    try:
        with initialize_config_dir(config_dir=str(EVAL.resolve()), version_base=None):
            cfg = hydra_compose(config_name="config", overrides=overrides, return_hydra_config=True)
    except (HydraException, OmegaConfBaseException, ValueError) as exc:
        msg = " ".join(str(exc).split()).split(" Config search path")[0]
        raise MetasimInputError("command line", [msg], _choices_hint()) from None
    choices = {k: str(cfg.hydra.runtime.choices.get(k)) for k in ("suite", "policy")}
    OmegaConf.set_struct(cfg, False)
    del cfg["hydra"]
    locate = _locator(sources, choices, overrides)
    raw: Any = OmegaConf.to_container(cfg, resolve=True)
    try:
        config = EvalConfig.model_validate(raw)
    except ValidationError as exc:
        problems = [
            locate(tuple(p for p in err["loc"] if isinstance(p, int | str))) + text
            for err, text in zip(exc.errors(), validation_problems(exc), strict=True)
        ]
        raise MetasimInputError("command line", problems) from None
    from metasim.sim import get_backend
    from metasim.sim.cameras import check_renderer

    try:
        get_backend(config.backend)
    except KeyError as exc:
        raise MetasimInputError("command line", [f"backend: {exc.args[0]}"]) from None
    try:
        check_renderer(config.render)
    except KeyError as exc:
        raise MetasimInputError("command line", [f"render: {exc.args[0]}"]) from None
    config._locate = locate
    config.rollout  # noqa: B018 -- policy options checked now, before any folder is written
    if config.task_options:
        config.tasks()  # the task sources' options too
    return config


def _choices_hint() -> str:
    suites = sorted(p.stem for p in EVAL.glob("*.yaml") if p.stem != "config")
    listed = sorted(set(all_suites()) - set(suites))
    if listed:  # the task sources' own (LIBERO's 47, Meta-World's 6, ...): a few named
        shown = ", ".join(listed[:4])
        suites.append(f"and the task sources' {len(listed)} ({shown}, ...)")
    policies = sorted(p.stem for p in POLICIES.glob("*.yaml"))
    return f"Suites: {', '.join(suites)}; policies: {', '.join(policies)}"
