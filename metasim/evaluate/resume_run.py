"""`metasim eval --resume RUN_DIR [episodes=N]`: the config of a run, from its manifest.

The manifest holds the run's whole validated config, so a run is resumed (after a crash)
or extended (a larger `episodes`, e.g. as `metasim compare --plan` suggests) without
repeating its overrides. Only settings that do not change what an episode is may be
given: `episodes` (at least the run's own; the store refuses fewer), and how the work is
spread (`num_envs`, `threads`, `executor`, `ray_address`, `shard_episodes`).

The manifest is a file like any other in a run folder: a policy it names that imports
and runs code (`policy.target` of kind python, `task_text`) is refused (exit 2) unless
`--allow-code MODULE:NAME` names that code (`policies.base.check_code_allowed`).
(The resume key that refuses a resume with other outcome-changing settings is
`evaluate/resume.py`.)
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

import yaml
from pydantic import ValidationError

from metasim.errors import MetasimInputError, validation_problems
from metasim.evaluate.config import EvalConfig
from metasim.evaluate.run_files import read_manifest
from metasim.policies.base import check_code_allowed

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


def resume_config(
    run_dir: str | Path, overrides: list[str], allow_code: Sequence[str] = ()
) -> EvalConfig:
    """The validated config of the run in `run_dir` with `overrides` applied (module doc);
    its policy may import only the code `allow_code` names."""
    path = Path(run_dir) / "manifest.json"
    config = read_manifest(Path(run_dir))["config"]
    raw = {**config, **_overrides(overrides), "out": str(run_dir)}
    try:
        cfg = EvalConfig.model_validate(raw)
    except ValidationError as exc:
        raise MetasimInputError(str(path), validation_problems(exc, "config.")) from None
    options = cfg.rollout.options  # policy options checked before anything runs
    check_code_allowed(options, allow_code, str(path), "--allow-code")
    return cfg
