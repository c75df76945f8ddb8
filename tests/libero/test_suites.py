"""LIBERO's suites list its tasks in LIBERO's order, as `libero:` references that resolve:
the five base suites straight from the `libero:` task source (no eval/ file repeats them),
`libero` (eval/libero.yaml) the four 10-task suites, `libero_pro*` their variants."""

from __future__ import annotations

import pytest
from omegaconf import OmegaConf

from metasim.evaluate.config import SuiteConfig, compose
from metasim.libero.importer import paths
from metasim.libero.importer import scene as libero_scene
from metasim.paths import EVAL


def _suite(name: str) -> SuiteConfig:
    """The suite `suite=NAME` composes: an eval/ file's, else the task source's."""
    if (EVAL / f"{name}.yaml").is_file():
        raw = OmegaConf.to_container(OmegaConf.load(EVAL / f"{name}.yaml"))
        return SuiteConfig.model_validate(raw)
    return compose([f"suite={name}"]).suite


@pytest.mark.parametrize("suite", paths.LIBERO_SUITES)
def test_suite_lists_libero_tasks_in_order(suite: str) -> None:
    assert not (EVAL / f"{suite}.yaml").exists()  # one list: the task source's
    cfg = _suite(suite)
    assert cfg.name == suite and cfg.description
    refs = [libero_scene.parse_ref(t) for t in cfg.tasks]
    assert refs == [(suite, i) for i in range(len(paths.suite_tasks(suite)))]


def test_libero_is_the_four_ten_task_suites() -> None:
    tasks = _suite("libero").tasks
    assert tasks == [t for s in paths.LIBERO_SUITES[:4] for t in _suite(s).tasks]
    assert len(tasks) == 40


@pytest.mark.parametrize("kind", ["swap", "object", "lan", "task"])
def test_libero_pro_suites_list_the_resource_complete_variants(kind: str) -> None:
    cfg = _suite(f"libero_pro_{kind}")
    variants = [f"{s}_{kind}" for s in paths.LIBERO_SUITES[:4]]
    assert all(paths.resource_complete(v) for v in variants)
    expected = [(v, i) for v in variants for i in range(len(paths.suite_tasks(v)))]
    assert [libero_scene.parse_ref(t) for t in cfg.tasks] == expected
    assert len(cfg.tasks) == 40


def test_libero_pro_is_the_four_kinds() -> None:
    kinds = ("swap", "object", "lan", "task")
    assert _suite("libero_pro").tasks == [t for k in kinds for t in _suite(f"libero_pro_{k}").tasks]
