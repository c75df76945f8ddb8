"""One contract over every registered benchmark (`metasim.reference.benchmark`): what a
benchmark plug-in declares is true of its tasks. For the first task of each suite its
task source lists: it loads and compiles, resets from its recorded initial states and
steps 10 control steps without NaN on every backend the benchmark claims; every preset
its checkpoints are evaluated with fits its robot and cameras; its scripted expert runs
an episode through `metasim eval`. Per benchmark: each declared check is a verb that
exists, and its reference simulator's worker starts and answers (skipped, with the reason,
only where the reference venv cannot be built).

The sample: per benchmark, the first task of two suites drawn with a fixed seed
(the benchmark's headline suite among them); every suite in the sweep lane.
A benchmark whose extra is not installed lists no suites and is skipped with the reason.
"""

from __future__ import annotations

import json
import random
from pathlib import Path

import numpy as np
import pytest

from metasim.paths import POLICIES
from metasim.reference.benchmark import BENCHMARKS, Benchmark
from metasim.yamlio import load_yaml

HEADLINE = {"libero": "libero_goal", "metaworld": "metaworld_mt10", "robosuite": "robosuite"}
# Benchmarks whose tasks load from a reference venv (Meta-World's XMLs and recorded reset
# states: metasim/metaworld/importer/paths.py; robosuite's placement draws, recorded in
# LIBERO's reference venv): their cases are in the reference lane.
FROM_REFERENCE = {"metaworld", "robosuite"}


def _cases() -> list[tuple[str, str, str]]:
    out: list[tuple[str, str, str]] = []
    for name, entry in BENCHMARKS.items():
        suites = entry.suites()
        if not suites:
            out.append((name, "", ""))  # the extra is missing: skipped with the reason
            continue
        out += [(name, s, suites[s][0]) for s in sorted(suites)]
    return out


def _sample() -> set[tuple[str, str]]:
    """Per benchmark, its headline suite and one more drawn with a fixed seed."""
    out = set()
    for name, entry in BENCHMARKS.items():
        suites = sorted(entry.suites())
        if not suites:
            out.add((name, ""))
            continue
        rng = random.Random(f"contract-{name}")
        head = HEADLINE.get(name, suites[0])
        names = [head if head in suites else suites[0]]
        rest = [s for s in suites if s not in names]
        names += rng.sample(rest, min(1, len(rest)))  # a one-suite benchmark: just it
        out |= {(name, s) for s in names}
    return out


def _params(cases: list[tuple[str, ...]]) -> list[object]:
    """The cases in their lanes: every suite beyond the sample in the sweep lane, the
    benchmarks of FROM_REFERENCE in the reference lane, the warp backend in the slow lane."""
    sample = _sample()
    out = []
    for case in cases:
        marks = [] if case[:2] in sample else [pytest.mark.sweep]
        if case[3:] == ("warp",):
            marks.append(pytest.mark.slow)  # the kernels' compile and a LIBERO task on warp
        if case[0] in FROM_REFERENCE and case[2]:
            marks.append(pytest.mark.reference)
        out.append(
            pytest.param(
                *case, marks=marks, id="-".join(c or "not-installed" for c in case[:2] + case[3:])
            )
        )
    return out


CASES = _cases()


def _entry(name: str, ref: str) -> Benchmark:
    if not ref:
        pytest.skip(f"benchmark {name!r} lists no suite here (its extra is not installed)")
    return BENCHMARKS[name]


@pytest.fixture(scope="module")
def compiled_of():
    from metasim.scene.sources import compile_task

    cache: dict[str, object] = {}  # the last one only: a LIBERO task holds ~200 MB

    def get(ref: str):
        if ref not in cache:
            cache.clear()
            cache[ref] = compile_task(ref)
        return cache[ref]

    return get


def _backends() -> list[tuple[str, str, str, str]]:
    return [
        (b, s, r, backend)
        for b, s, r in CASES
        for backend in (BENCHMARKS[b].backends if r else ("mujoco",))
    ]


@pytest.mark.parametrize(
    ("bench", "suite", "ref", "backend"),
    _params(_backends()),
)
def test_first_task_resets_from_its_init_states_and_steps(
    bench: str, suite: str, ref: str, backend: str, compiled_of
) -> None:
    entry = _entry(bench, ref)
    if backend == "warp":
        pytest.importorskip("mujoco_warp", reason="the warp extra is not installed")
    from metasim.envs.vec_env import MetasimVectorEnv

    compiled = compiled_of(ref)
    assert compiled.substeps >= 1 and compiled.model.nu > 0
    env = MetasimVectorEnv(compiled, num_envs=2, backend=backend, autoreset=False)
    try:
        episodes = [3, 4]
        obs, _ = env.reset(seed=0, options={"seeds": [11, 12], "episodes": episodes})
        first = env.handler.get_state().qpos.copy()
        init = env.task.init_states
        if init is not None:  # episode k starts from recorded row k mod N (the raw table)
            nq = len(init.qpos_index)
            for i, k in enumerate(episodes):
                row = init.rows[k % len(init.rows)]
                np.testing.assert_allclose(
                    first[i, init.qpos_index], row[1 : 1 + nq], atol=1e-6,
                    err_msg=f"{entry.name}: {ref} env {i} is not init state {k}",
                )  # fmt: skip
        hold = np.zeros((env.num_envs, env.controller.dim))
        for _ in range(10):
            obs, reward, *_ = env.step(hold)
        state = env.handler.get_state()
        assert np.isfinite(state.qpos).all() and np.isfinite(state.qvel).all()
        assert np.isfinite(np.asarray(reward, dtype=np.float64)).all()
        for key, value in obs.items() if isinstance(obs, dict) else ():
            arr = np.asarray(value)
            if arr.dtype.kind == "f":
                assert np.isfinite(arr).all(), f"{key} has a NaN after 10 steps"
        assert not np.array_equal(state.qpos, first) or compiled.model.nv == 0
    finally:
        env.close()


@pytest.mark.parametrize(("bench", "suite", "ref"), _params(CASES))
def test_presets_fit_the_first_task(bench: str, suite: str, ref: str, compiled_of) -> None:
    from metasim.evaluate.policy_io import converter_for
    from metasim.policies.conventions import ActionConvention
    from metasim.policies.observation import ObservationSpec

    entry = _entry(bench, ref)
    compiled = compiled_of(ref)
    assert entry.presets, f"benchmark {bench!r} declares no preset"
    for preset in entry.presets:
        data = load_yaml(POLICIES / f"{preset}.yaml", f"preset {preset}")
        spec = ObservationSpec.model_validate(data.get("observation", {}))
        views = spec.views(compiled)  # every camera it names is the scene's
        assert len(views) == len(spec.images)
        for key in spec.state:
            assert spec.state_dim(key, compiled) > 0
        conv = converter_for(compiled, ActionConvention.model_validate(data["actions"]))
        assert conv.dim > 0


@pytest.mark.parametrize(("bench", "suite", "ref"), _params(CASES))
def test_the_expert_runs_an_episode(
    bench: str, suite: str, ref: str, tmp_path: Path, capsys
) -> None:
    """The first task of the suite its expert takes on: a task outside the expert's
    scope (LIBERO's expert moves one object; it opens no drawer and its goals name one
    target) is refused before any work with one paragraph and exit 2, and the next task
    is tried. A suite with no task in the expert's scope is skipped, with the refusal
    (LIBERO's libero_10 family and libero_study_table: two-object goals)."""
    from metasim.cli.main import main

    entry = _entry(bench, ref)
    refused = []
    for task in BENCHMARKS[bench].suites()[suite]:
        out = tmp_path / task.replace(":", "_").replace("/", "_")
        argv = ["eval", "--quiet", f"suite={suite}", f"suite.tasks=[{task}]"]
        code = main([*argv, f"policy={entry.expert}", "episodes=1", f"out={out}"])
        if code == 2:
            err = capsys.readouterr().err.strip()
            assert err.startswith("error:") and "Traceback" not in err
            assert not out.exists(), "a refused run wrote its folder"
            refused.append(err)
            continue
        assert code == 0
        summary = json.loads((out / "summary.json").read_text())
        (row,) = summary["tasks"].values()
        assert row["n"] == 1
        return
    pytest.skip(f"{entry.expert} takes on no task of {suite} (it says: {refused[0]})")


@pytest.mark.parametrize("bench", BENCHMARKS.names())
def test_each_declared_check_is_a_verb(bench: str, capsys) -> None:
    from metasim.cli.main import main

    entry = BENCHMARKS[bench]
    assert entry.checks, f"benchmark {bench!r} declares no reference check"
    for check, argv in entry.checks.items():
        assert main(["check", check, "--benchmark", bench, "--help"]) == 0, f"{bench} {check}"
        usage = f"usage: metasim check {check} --benchmark {bench}"
        assert capsys.readouterr().out.startswith(usage), f"{bench} {check}: {argv}"


@pytest.mark.reference
@pytest.mark.parametrize("bench", BENCHMARKS.names())
def test_the_reference_worker_starts(bench: str) -> None:
    entry = BENCHMARKS[bench]
    if entry.reference is None:
        pytest.skip(f"benchmark {bench!r} has no reference simulator")
    if not entry.suites():
        pytest.skip(f"benchmark {bench!r}: its extra is not installed")
    why = entry.reference_ready()
    if why:
        pytest.skip(why)
    answer = entry.probe_reference()
    assert answer and all(v not in (None, "") for v in answer.values())


@pytest.mark.reference
def test_check_runs_the_plugin_verb_and_old_spellings_are_refused(capsys) -> None:
    """`metasim check` runs the plug-in's verb (its own options after CHECK, even one
    named --benchmark; --benchmark before or after CHECK); the plug-ins' own spellings
    (`metasim metaworld modeldiff`, ...) were removed and are refused as unknown verbs, in
    one line with exit 2."""
    pytest.importorskip("metaworld", reason="the metaworld extra is not installed")
    from metasim.cli.main import main

    task = ["--task", "reach-v3", "--benchmark", "MT10", "--json"]
    assert main(["check", "--benchmark", "metaworld", "modeldiff", *task]) == 0
    first = capsys.readouterr()
    assert main(["check", "modeldiff", "--benchmark", "metaworld", *task[:2], "--json"]) == 0
    again = capsys.readouterr()
    assert "note:" not in first.err + again.err and json.loads(first.out)
    assert main(["metaworld", "modeldiff", *task]) == 2
    old = capsys.readouterr().err
    assert "invalid choice: 'metaworld'" in old and old.count("\n") == 1
    argv = ["--policy", "noop", "--tasks", "libero_goal/99"]
    assert main(["check", "--benchmark", "libero", "xcheck", *argv]) == 2
    refused = capsys.readouterr().err
    assert refused.startswith("error: --tasks") and refused.count("\n") == 1
    assert main(["check", "xcheck", "--benchmark", "nope"]) == 2
    assert "known: libero, metaworld" in capsys.readouterr().err
