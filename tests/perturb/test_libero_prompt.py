"""The prompt a policy receives on LIBERO is the task's instruction (LIBERO's
`task.language`; a LIBERO-PRO `_lan` task's own `:language`), or its rephrasing by the
language factor, never a factor name, a level tag, a cell id or a BDDL file-name
fragment (LIBERO-PRO evaluated `_lan` variants with the file name's instruction;
LIBERO-Plus leaked perturbation tags into prompts).

The probe is a `policy=python` object behind openpi's LIBERO conventions
(policies/openpi_libero.yaml, the `prompt` key of the request): it logs the prompt and
raises, so every episode ends at its first policy call (recorded as an error) and the
run stays short.
"""

from __future__ import annotations

import json
import os
import re
from pathlib import Path
from typing import Any

import pyarrow.parquet as pq
import pytest
import yaml

from metasim.evaluate.config import EvalConfig
from metasim.evaluate.runner import run_eval
from metasim.libero.importer import paths
from metasim.libero.importer.bddl import parse_bddl
from metasim.libero.importer.language import harness_language
from metasim.paths import PERTURBATIONS, POLICIES
from metasim.perturb import expand, load_grid

LOG = "METASIM_TEST_PROMPT_LOG"


class PromptProbe:
    """Logs the request's `prompt` to the file named by $METASIM_TEST_PROMPT_LOG, then
    fails the call (the episode ends with an error)."""

    def infer(self, obs: dict[str, Any]) -> dict[str, Any]:
        with open(os.environ[LOG], "a") as f:
            f.write(json.dumps(obs["prompt"]) + "\n")
        raise RuntimeError("prompt captured")


def _run(
    tmp: Path, tasks: list[str], grid: str, monkeypatch: pytest.MonkeyPatch, **options: Any
) -> list[str]:
    log = tmp / "prompts.jsonl"
    monkeypatch.setenv(LOG, str(log))
    policy = yaml.safe_load((POLICIES / "openpi_libero.yaml").read_text())
    for key in ("host", "port", "api_key", "timeout_s"):
        policy.pop(key)
    policy.update(kind="python", target="test_libero_prompt:PromptProbe", retries=0, **options)
    cfg = EvalConfig.model_validate(
        {"suite": {"name": "probe", "tasks": tasks}, "policy": policy, "episodes": 1,
         "num_envs": 1, "perturbation": grid, "out": str(tmp / "run")}
    )  # fmt: skip
    run_eval(cfg)
    rows = pq.read_table(tmp / "run" / "episodes.parquet").to_pylist()
    assert all("prompt captured" in (r["error"] or "") for r in rows)
    return [json.loads(line) for line in log.read_text().splitlines()]


def _bad_fragments(grid_name: str, ref: str) -> set[str]:
    """Strings no prompt may hold: factor and axis names, string level tags other than
    language templates, cell ids, the suite name and the BDDL file name's underscored
    fragments."""
    grid = load_grid(grid_name)
    suite, index = ref.removeprefix("libero:").split("/")
    task = paths.suite_tasks(suite)[int(index)]
    bad = {suite, task, "{", "}", *re.findall(r"[A-Za-z0-9]+(?:_[A-Za-z0-9]+)+", task)}
    for f in grid.factors:
        bad |= {f.name, f.axis}
        bad |= {v for v in f.levels or [] if isinstance(v, str) and "{instruction}" not in v}
    return bad | {c.id for c in expand(grid)}


def _expected(ref: str, template: str = "{instruction}") -> str:
    suite, index = ref.removeprefix("libero:").split("/")
    language = parse_bddl(paths.bddl_file(suite, int(index))).language
    if not suite.endswith("_lan"):  # LIBERO's task.language: the file name's sentence
        language = harness_language(paths.task_name(suite, int(index)))
    return template.replace("{instruction}", language)


def _language_grid(tmp: Path, levels: list[str]) -> str:
    grid = tmp / "lang.yaml"
    grid.write_text(
        "name: lang\ndesign: ofat\nfactors:\n"
        f"  - {{name: language, axis: instruction_template, levels: {json.dumps(levels)}}}\n"
    )
    return str(grid)


def _check(prompts: list[str], allowed: set[str], bad: set[str]) -> None:
    for p in prompts:
        assert p in allowed, p
        words = set(p.split())
        for b in bad:
            assert (b not in words) if b.isalpha() else (b not in p), (p, b)
        assert "_" not in p, p


@pytest.mark.slow
def test_prompt_of_a_lan_task_is_its_language_in_every_language_cell(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A LIBERO-PRO `_lan` task: its rephrased `:language` (not its file name's words),
    as is and as the language factor rephrases it."""
    levels = ["{instruction}", "please {instruction}"]
    grid = _language_grid(tmp_path, levels)
    ref = "libero:libero_goal_lan/1"
    prompts = _run(tmp_path, [ref], grid, monkeypatch)
    assert sorted(prompts) == sorted(_expected(ref, t) for t in levels)
    _check(prompts, {_expected(ref, t) for t in levels}, _bad_fragments(grid, ref))
    assert _expected(ref).replace(" ", "_") != paths.suite_tasks("libero_goal_lan")[1]


@pytest.mark.slow
def test_task_text_sends_the_bddl_language_in_every_language_cell(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """`policy.task_text=...:bddl_task_text` on a task whose BDDL `:language` is not
    LIBERO's `task.language`: the BDDL text, as is and as the language factor rephrases it."""
    levels = ["{instruction}", "please {instruction}"]
    ref = "libero:libero_spatial/0"
    bddl = parse_bddl(paths.bddl_file("libero_spatial", 0)).language
    assert bddl != _expected(ref)
    prompts = _run(
        tmp_path, [ref], _language_grid(tmp_path, levels), monkeypatch,
        task_text="metasim.libero.importer.language:bddl_task_text",
    )  # fmt: skip
    assert sorted(prompts) == sorted(t.replace("{instruction}", bddl) for t in levels)


@pytest.mark.sweep
def test_prompt_in_every_cell_of_libero_plus(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Every cell of perturbations/libero_plus.yaml on a LIBERO task and a `_lan` task."""
    grid = load_grid("libero_plus")
    templates = next(f.levels for f in grid.factors if f.axis == "instruction_template")
    refs = ["libero:libero_spatial/0", "libero:libero_goal_lan/1"]
    prompts = _run(tmp_path, refs, str(PERTURBATIONS / "libero_plus.yaml"), monkeypatch)
    assert len(prompts) == 2 * len(expand(grid)) == 30
    allowed = {_expected(ref, str(t)) for ref in refs for t in templates or []}
    bad = set().union(*(_bad_fragments("libero_plus", ref) for ref in refs))
    _check(prompts, allowed, bad)
    for ref in refs:  # each cell once per task, the nominal prompt in 13 of the 15 cells
        assert prompts.count(_expected(ref)) == 13
