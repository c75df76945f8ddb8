"""`metasim eval --resume RUN_DIR [episodes=N]`: the config of a run, from its manifest.

The manifest holds the run's whole validated config, so a run is resumed (after a crash)
or extended (a larger `episodes`, e.g. as `metasim compare --plan` suggests) without
repeating its overrides. Only settings that do not change what an episode is may be
given: `episodes` (at least the run's own; the store refuses fewer), and how the work is
spread (`num_envs`, `threads`, `executor`, `ray_address`, `shard_episodes`).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import yaml
from pydantic import ValidationError

from metasim.errors import MetasimInputError, validation_problems
from metasim.evaluate.config import EvalConfig
from metasim.guards import load_json

ALLOWED = ("episodes", "num_envs", "threads", "executor", "ray_address", "shard_episodes")


def _overrides(items: list[str]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for item in items:
        key, sep, value = item.partition("=")
        if not sep or key not in ALLOWED:
            raise MetasimInputError(
                "--resume",
                [f"{item!r}: only {', '.join(k + '=' for k in ALLOWED)} may be given"],
                "Everything else comes from the run's manifest.json",
            )
        out[key] = yaml.safe_load(value)
    return out


def resume_config(run_dir: str | Path, overrides: list[str]) -> EvalConfig:
    """The validated config of the run in `run_dir` with `overrides` applied (module doc)."""
    path = Path(run_dir) / "manifest.json"
    if not path.is_file():
        raise MetasimInputError(str(run_dir), ["no manifest.json: not a run folder to resume"])
    manifest = load_json(path, "manifest.json")
    config = manifest.get("config") if isinstance(manifest, dict) else None
    if not isinstance(config, dict):
        raise MetasimInputError(str(path), ["config: missing or not a mapping"])
    raw = {**config, **_overrides(overrides), "out": str(run_dir)}
    try:
        cfg = EvalConfig.model_validate(raw)
    except ValidationError as exc:
        raise MetasimInputError(str(path), validation_problems(exc, "config.")) from None
    cfg.rollout  # noqa: B018 -- policy options checked before anything runs
    return cfg
