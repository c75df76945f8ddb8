"""The sentence a LIBERO task gives a policy, as LIBERO's harnesses give it.

openpi's LIBERO client (`examples/libero/main.py`) and LeRobot's LIBERO env
(`lerobot/envs/libero.py`) both send `task.language` of LIBERO's benchmark task map
(`libero/libero/benchmark/__init__.py`), which LIBERO derives from the BDDL file name, not
from the file's `:language` text: the name's words joined by spaces, and for LIBERO-100's
names (`KITCHEN_SCENE3_turn_on_the_stove`) the words after the scene prefix. The two differ
in 29 of the 130 tasks ("pick up the black bowl between ..." for "pick the akita black
bowl between ..."); a checkpoint finetuned on LIBERO was conditioned on the first.

LIBERO-PRO's language variants (`_lan`: rephrased `:language`; `_task`: a new goal) keep
their original file names, so there the name's sentence is the unperturbed task's: those
suites send their `:language` text, or the variant would never reach the policy (the
pitfall LIBERO-PRO's own evaluation fell into).

`bddl_task_text` is a `policy.task_text` function: it sends the BDDL `:language` text
instead, e.g. `policy.task_text=metasim.libero.importer.language:bddl_task_text`.
"""

from __future__ import annotations

import functools
import re

from metasim.errors import MetasimInputError
from metasim.libero.importer import paths
from metasim.libero.importer.bddl import parse_bddl
from metasim.scene.schema import Scene

# LIBERO-PRO suite suffixes whose BDDL `:language` is the variant (file names unchanged).
LANGUAGE_VARIANTS = ("_lan", "_task")
# LIBERO-100's task names start with their scene, e.g. `LIVING_ROOM_SCENE10_`.
_SCENE_PREFIX = re.compile(r"^[A-Z_]*SCENE\d+_")


def harness_language(task: str) -> str:
    """LIBERO's `task.language` of the task named `task` (its BDDL file name without
    `.bddl`): `pick_up_the_ketchup` -> "pick up the ketchup"; LIBERO-100's upper-case
    names lose their `<ROOM>_SCENE<n>_` prefix."""
    if task[:1].isupper():
        task = _SCENE_PREFIX.sub("", task, count=1)
    return " ".join(task.split("_"))


def is_language_variant(suite: str) -> bool:
    """Whether a suite's BDDL `:language` is its perturbation (LIBERO-PRO `_lan`, `_task`)."""
    return suite.endswith(LANGUAGE_VARIANTS)


def task_instruction(suite: str, task: str, bddl_language: str) -> str:
    """The instruction of `task` of `suite`: what LIBERO's harnesses send, except in a
    language variant, whose own `:language` text (`bddl_language`) is sent."""
    return bddl_language if is_language_variant(suite) else harness_language(task)


def scene_name(suite: str, index: int) -> str:
    """The name of an imported task's scene: `libero_spatial_3`."""
    return f"{suite}_{index}"


def scene_task(name: str) -> tuple[str, str] | None:
    """(suite, task name) of an imported task's scene name, None for any other scene."""
    suite, sep, index = name.rpartition("_")
    if not sep or not index.isdigit():
        return None
    try:
        tasks = paths.suite_tasks(suite)
    except MetasimInputError:  # not a LIBERO suite (or the `libero` extra is missing)
        return None
    return (suite, tasks[int(index)]) if int(index) < len(tasks) else None


@functools.cache
def _bddl_language(suite: str, task: str) -> str:
    return parse_bddl(paths.bddl_file(suite, task)).language


def bddl_task_text(scene: Scene, instruction: str) -> str:
    """`policy.task_text` that sends a LIBERO task's BDDL `:language` text in place of
    the sentence LIBERO's harnesses send, also inside a language factor's template
    ("please {instruction}"); an instruction that does not hold the task's sentence (an
    `instruction` factor's paraphrase, a language variant's, another benchmark's) goes
    through as it is."""
    found = scene_task(scene.name)
    if found is None or is_language_variant(found[0]):
        return instruction
    sentence = harness_language(found[1])
    if sentence not in instruction:
        return instruction
    return instruction.replace(sentence, _bddl_language(*found), 1)
