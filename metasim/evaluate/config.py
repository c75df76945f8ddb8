"""`metasim eval` configuration: Hydra composition over eval/, then a typed model.

eval/config.yaml is the root; suites (eval/<name>.yaml with a `tasks:` list) form the
group `suite`, policy configs (policies/<name>.yaml) the group `policy`. The composed
config is validated into `EvalConfig`, so a bad override is reported like a bad scene
field (exit 2, the key and what was expected).
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Any, Literal

from omegaconf import OmegaConf
from pydantic import BaseModel, ConfigDict, Field, ValidationError, model_validator

from metasim.errors import MetasimInputError, validation_problems
from metasim.paths import EVAL, POLICIES, SCENES

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
    action_space: str = "ee_delta"
    execute: Annotated[int, Field(ge=1)] | None = None
    ensemble: Annotated[float, Field(ge=0)] | None = None

    def adapter_options(self) -> dict[str, Any]:
        """The options the policy itself gets (everything but what the harness owns)."""
        harness = ("kind", "action_space", "execute", "ensemble")
        return {k: v for k, v in self.model_dump().items() if k not in harness}

    @model_validator(mode="after")
    def _space_from_convention(self) -> PolicyConfig:
        actions = (self.model_extra or {}).get("actions")
        if actions is not None:
            from metasim.policies.conventions import ActionConvention

            conv = ActionConvention.model_validate(actions)
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
    device: str = "cpu"
    threads: Annotated[int, Field(ge=1)] | None = None
    adaptive: bool = False  # stop each cell once its 95% interval is narrow enough
    adaptive_width: Annotated[float, Field(gt=0, le=1)] = 0.14
    adaptive_min: Annotated[int, Field(ge=1)] = 10
    executor: Literal["local", "ray"] = "local"
    ray_address: str | None = None  # default: RAY_ADDRESS, else a local Ray instance
    shard_episodes: Annotated[int, Field(ge=1)] = 8  # episodes per Ray task

    def task_files(self) -> list[Path]:
        """Scene files of the suite's tasks: a scene name in scenes/, or a path."""
        files = []
        for i, task in enumerate(self.suite.tasks):
            path = Path(task)
            if path.suffix not in (".yaml", ".yml"):
                path = SCENES / f"{task}.yaml"
            if not path.is_file():
                raise MetasimInputError(
                    f"suite {self.suite.name!r}",
                    [f"tasks[{i}]: no scene file for {task!r} (looked at {path})"],
                )
            files.append(path)
        return files


def _register_groups() -> None:
    from hydra.core.config_store import ConfigStore

    store = ConfigStore.instance()
    for path in sorted(EVAL.glob("*.yaml")):
        if path.stem != "config":
            store.store(group="suite", name=path.stem, node=OmegaConf.load(path))
    for path in sorted(POLICIES.glob("*.yaml")):
        store.store(group="policy", name=path.stem, node=OmegaConf.load(path))


def compose(overrides: list[str]) -> EvalConfig:
    """Compose eval/config.yaml with command-line `overrides` and validate the result."""
    from hydra import compose as hydra_compose
    from hydra import initialize_config_dir
    from hydra.core.global_hydra import GlobalHydra
    from hydra.errors import HydraException
    from omegaconf.errors import OmegaConfBaseException

    _register_groups()
    GlobalHydra.instance().clear()
    try:
        with initialize_config_dir(config_dir=str(EVAL.resolve()), version_base=None):
            cfg = hydra_compose(config_name="config", overrides=overrides)
    except (HydraException, OmegaConfBaseException, ValueError) as exc:
        msg = " ".join(str(exc).split()).split(" Config search path")[0]
        raise MetasimInputError("command line", [msg], _choices_hint()) from None
    raw: Any = OmegaConf.to_container(cfg, resolve=True)
    try:
        config = EvalConfig.model_validate(raw)
    except ValidationError as exc:
        raise MetasimInputError("command line", validation_problems(exc)) from None
    from metasim.sim import get_backend

    try:
        get_backend(config.backend)
    except KeyError as exc:
        raise MetasimInputError("command line", [f"backend: {exc.args[0]}"]) from None
    return config


def _choices_hint() -> str:
    suites = sorted(p.stem for p in EVAL.glob("*.yaml") if p.stem != "config")
    policies = sorted(p.stem for p in POLICIES.glob("*.yaml"))
    return f"Suites: {', '.join(suites)}; policies: {', '.join(policies)}"
