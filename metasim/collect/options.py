"""`metasim collect` configuration: `metasim eval`'s config plus collect's own options.

The command line holds eval's Hydra overrides (suite, policy, episodes per task and cell,
seed, perturbation, num_envs, backend, out, ...) composed over the same root (eval/), and
collect's own `key=value` options, parsed with the same override grammar:

  keep=success|all   which episodes go in the dataset (default: the successful ones)
  image_size=96      width = height of every recorded camera image, in pixels
  cameras=[front]    the scene cameras to record (default: every camera of the first task)
  repo_id=NAME       the dataset's repo_id (default metasim/<suite>)
  record=PRESET      record what policy preset PRESET (policies/PRESET.yaml) hands a
                     checkpoint: its keys, images, state and task text (e.g.
                     record=lerobot_metaworld: LeRobot's Meta-World format); cameras
                     come from the preset, and image_size=N, if given, shrinks the
                     preset's unresized frames to N x N as a checkpoint that resizes them
                     itself does (PIL's antialiased bilinear = torchvision's Resize)
  render_size=N      with record=PRESET: render the preset's frames at N x N instead of
                     its declared size and record them unresized, as a harness that
                     renders at N hands them over (LeRobot's LiberoEnv with
                     observation_height=observation_width=N); not with image_size
  commit_every=N     commit the dataset every N episodes of a (task, cell) batch, so a
                     run cut off keeps all but the last N at most (default 0: one commit
                     per batch); the dataset is the same whatever N (episodes keep their
                     seeds and order)
"""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from metasim.errors import MetasimInputError, validation_problems
from metasim.evaluate.config import EvalConfig, compose


class CollectOptions(BaseModel):
    """Collect's own options (the rest of the command line is eval's config)."""

    model_config = ConfigDict(extra="forbid")
    keep: Literal["success", "all"] = "success"
    image_size: Annotated[int, Field(ge=8, le=1024)] = 96
    cameras: Annotated[list[str], Field(min_length=1)] | None = None
    repo_id: str | None = None
    record: Annotated[str, Field(pattern=r"^[\w-]+$")] | None = None
    commit_every: Annotated[int, Field(ge=0)] = 0
    render_size: Annotated[int, Field(ge=8, le=1024)] | None = None


OWN_KEYS = tuple(CollectOptions.model_fields)


def split_overrides(overrides: list[str]) -> tuple[dict[str, Any], list[str]]:
    """Collect's own options (values parsed by Hydra's override grammar) and the rest."""
    from hydra.core.override_parser.overrides_parser import OverridesParser
    from hydra.errors import HydraException

    own: dict[str, Any] = {}
    rest: list[str] = []
    parser = OverridesParser.create()
    for item in overrides:
        if item.split("=", 1)[0] not in OWN_KEYS:
            rest.append(item)
            continue
        try:
            (parsed,) = parser.parse_overrides([item])
        except HydraException as exc:
            msg = " ".join(str(exc).split()).split(" See https")[0]
            raise MetasimInputError("command line", [f"{item}: {msg}"]) from None
        own[parsed.key_or_group] = parsed.value()
    return own, rest


def compose_collect(overrides: list[str]) -> tuple[EvalConfig, CollectOptions]:
    """The validated eval config and collect options of a command line (input errors
    name the key), before anything is written."""
    own, rest = split_overrides(overrides)
    try:
        opts = CollectOptions.model_validate(own)
    except ValidationError as exc:
        raise MetasimInputError("command line", validation_problems(exc)) from None
    cfg = compose(rest)
    problems = []
    if not cfg.out:
        problems.append("out: the dataset folder is required (out=DIR)")
    if cfg.adaptive:
        problems.append("adaptive: collect runs every episode asked for (adaptive=false)")
    if cfg.executor != "local":
        problems.append("executor: collect records frames in this process (executor=local)")
    if problems:
        raise MetasimInputError("command line", problems)
    return cfg, opts
