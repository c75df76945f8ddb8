"""eval/libero*.yaml list LIBERO's tasks in LIBERO's order, as `libero:` references that
resolve, and `libero` is the four 10-task suites."""

from __future__ import annotations

import pytest
from omegaconf import OmegaConf

from metasim.evaluate.config import SuiteConfig
from metasim.libero import paths
from metasim.libero import scene as libero_scene
from metasim.paths import EVAL


def _suite(name: str) -> SuiteConfig:
    raw = OmegaConf.to_container(OmegaConf.load(EVAL / f"{name}.yaml"))
    return SuiteConfig.model_validate(raw)


@pytest.mark.parametrize("suite", paths.LIBERO_SUITES)
def test_suite_lists_libero_tasks_in_order(suite: str) -> None:
    cfg = _suite(suite)
    assert cfg.name == suite
    refs = [libero_scene.parse_ref(t) for t in cfg.tasks]
    assert refs == [(suite, i) for i in range(len(paths.suite_tasks(suite)))]


def test_libero_is_the_four_ten_task_suites() -> None:
    tasks = _suite("libero").tasks
    assert tasks == [t for s in paths.LIBERO_SUITES[:4] for t in _suite(s).tasks]
    assert len(tasks) == 40
