"""`metasim eval` configuration: Hydra composition over eval/, then a typed model.

eval/config.yaml is the root; suites (eval/<name>.yaml with a `tasks:` list) form the
group `suite`, policy configs (policies/<name>.yaml) the group `policy`. The composed
config is validated into `EvalConfig`, so a bad override is reported like a bad scene
field (exit 2, the key and what was expected).
"""

from __future__ import annotations

from collections.abc import Callable
from functools import cached_property
from pathlib import Path
from typing import Annotated, Any, Literal

from omegaconf import OmegaConf
from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    PrivateAttr,
    ValidationError,
    field_validator,
    model_validator,
)

from metasim.errors import MetasimInputError, validation_problems
from metasim.evaluate.spec import RolloutSpec
from metasim.paths import EVAL, POLICIES
from metasim.scene.sources import NoSuchTask, Task, all_suites, resolve
from metasim.yamlio import Loc, dotted, line_of, load_yaml, node_at, plain

Locate = Callable[[tuple[int | str, ...]], str]  # a field's location -> 'file line N, '

MAX_EPISODES = 1_000_000  # per task and cell: a DuckDB row each, summarized in memory


class SuiteConfig(BaseModel):
    model_config = ConfigDict(extra="forbid")
    name: str
    description: str = ""
    tasks: Annotated[list[str], Field(min_length=1)]


class PolicyConfig(BaseModel):
    """A policy config; `kind` picks the adapter, other keys are the adapter's options.

    The harness owns chunk execution: `execute` actions of each chunk (null: all of it),
    or temporal ensembling with weight exp(ensemble * j) on the prediction made j steps
    ago (ACT's rule; a new chunk every step). `actions` (the action convention, see
    metasim.policies.conventions) decides the env's action space.
    """

    model_config = ConfigDict(extra="allow")
    kind: str
    # the env's canonical space; set from `actions` when declared, else it declares them
    action_space: Literal["ee_delta", "joint_pos"] = "ee_delta"
    execute: Annotated[int, Field(ge=1)] | None = None
    ensemble: Annotated[float, Field(ge=0)] | None = None

    def adapter_options(self) -> dict[str, Any]:
        """The options the policy itself gets (everything but what the harness owns)."""
        harness = ("kind", "action_space", "execute", "ensemble")
        out = {k: v for k, v in self.model_dump().items() if k not in harness}
        if "actions" not in out and self.action_space != "ee_delta":
            out["actions"] = {"space": self.action_space}
        return out

    @model_validator(mode="after")
    def _space_from_convention(self) -> PolicyConfig:
        actions = (self.model_extra or {}).get("actions")
        if actions is not None:
            from metasim.policies.conventions import ActionConvention

            try:
                conv = ActionConvention.model_validate(actions)
            except ValidationError:
                return self  # reported with its path by the rollout spec (policy.actions.*)
            self.action_space = conv.env_space
        return self


class EvalConfig(BaseModel):
    model_config = ConfigDict(extra="forbid")
    suite: SuiteConfig
    policy: PolicyConfig
    backend: str = "mujoco"
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

    _locate: Locate | None = PrivateAttr(default=None)  # set by compose(): file lines

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
        """The typed rollout spec of this config: the policy options validated against
        the kind's registered model (an input error naming the key otherwise)."""
        p = self.policy
        return RolloutSpec.of(
            p.kind,
            p.adapter_options(),
            locate=self._locate,
            seed=self.seed,
            num_envs=self.num_envs,
            backend=self.backend,
            execute=p.execute,
            ensemble=p.ensemble,
            # One physics thread per Ray task: the cluster parallelizes across tasks.
            threads=self.threads or (1 if self.executor == "ray" else None),
        )

    def tasks(self) -> list[Task]:
        """The suite's task references resolved through the task-source registry
        (metasim.scene.sources): a scene name in scenes/, a scene file, or a reference
        with a registered prefix. A missing task is an input error naming `tasks[i]`."""
        tasks = []
        for i, ref in enumerate(self.suite.tasks):
            try:
                tasks.append(resolve(ref))
            except NoSuchTask as exc:
                raise MetasimInputError(
                    f"suite {self.suite.name!r}", [f"tasks[{i}]: {exc}"]
                ) from None
        return tasks


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
            store.store(
                group="suite", name=name, node=OmegaConf.create({"name": name, "tasks": refs})
            )
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

    try:
        get_backend(config.backend)
    except KeyError as exc:
        raise MetasimInputError("command line", [f"backend: {exc.args[0]}"]) from None
    config._locate = locate
    config.rollout  # noqa: B018 -- policy options checked now, before any folder is written
    return config


def _choices_hint() -> str:
    suites = sorted(p.stem for p in EVAL.glob("*.yaml") if p.stem != "config")
    policies = sorted(p.stem for p in POLICIES.glob("*.yaml"))
    return f"Suites: {', '.join(suites)}; policies: {', '.join(policies)}"
