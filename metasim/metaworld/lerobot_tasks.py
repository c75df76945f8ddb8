"""LeRobot's Meta-World task descriptions (`TASK_DESCRIPTIONS` of
`lerobot/envs/metaworld_config.json`), read from the installed LeRobot at run time, never
copied: the language a LeRobot checkpoint trained on Meta-World was conditioned on
("Pick and place a puck to a goal"), where metasim's own instruction is the env name's
words ("pick place"). The file is read by path: importing `lerobot.envs.metaworld` would
import the metaworld package, which lives only in the reference venv.
"""

from __future__ import annotations

import functools
import importlib.util
import json
from pathlib import Path

from metasim.errors import MetasimInputError
from metasim.metaworld.importer.scene import scene_name
from metasim.scene.schema import Scene

CONFIG = ("envs", "metaworld_config.json")  # inside the lerobot package
SCENE_PREFIX = scene_name("")  # "metaworld_": the imported scenes' names


def config_path() -> Path:
    """The installed LeRobot's metaworld_config.json (an input error when LeRobot is not
    installed or ships no such file)."""
    spec = importlib.util.find_spec("lerobot")  # finds the package without importing it
    roots = list(spec.submodule_search_locations or []) if spec is not None else []
    for root in roots:
        path = Path(root).joinpath(*CONFIG)
        if path.is_file():
            return path
    raise MetasimInputError(
        "policy=lerobot_metaworld",
        ["LeRobot's Meta-World task descriptions (lerobot/envs/metaworld_config.json) were "
         "not found: LeRobot is not installed, or is older than its Meta-World env"],
        "Install it with scripts/install_lerobot.sh",
    )  # fmt: skip


@functools.cache
def task_descriptions() -> dict[str, str]:
    """Env name (`pick-place-v3`) -> LeRobot's description of the task."""
    data = json.loads(config_path().read_text())
    return {str(k): str(v) for k, v in data["TASK_DESCRIPTIONS"].items()}


def task_description(task: str) -> str:
    """LeRobot's description of `task` (an input error naming the known tasks otherwise)."""
    known = task_descriptions()
    if task not in known:
        raise MetasimInputError(
            "policy=lerobot_metaworld", [f"LeRobot describes no task {task!r}: {sorted(known)}"]
        )
    return known[task]


def lerobot_task_text(scene: Scene, instruction: str) -> str:
    """`policy.task_text` of `policies/lerobot_metaworld.yaml`: for the scene's own
    instruction, LeRobot's description of its Meta-World task (what LeRobot's
    MetaworldEnv hands a policy as `task`); any other instruction (a language
    perturbation's) as it is."""
    if instruction != scene.task.instruction or not scene.name.startswith(SCENE_PREFIX):
        return instruction
    return task_description(scene.name.removeprefix(SCENE_PREFIX))
