"""`metasim libero xcheck`: the rollout's applied-action hook, the reference's set_state
and goal check, and one (task, init) cross-checked end to end against LIBERO itself.

One task (libero_spatial 0, "put the black bowl between the plate and the ramekin on the
plate"), init state 0, the scripted expert (about 95 steps, settle steps included)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import mujoco
import numpy as np
import pytest

from metasim.envs.noise import RuntimeNoise
from metasim.envs.vec_env import MetasimVectorEnv
from metasim.evaluate.hooks import Hooks
from metasim.evaluate.rollout import run_task
from metasim.evaluate.spec import RolloutSpec
from metasim.libero.checks.xcheck import MetasimEpisode, Replay, classify, object_fate, run_metasim
from metasim.libero.checks.xcheck_run import JSONL, SUMMARY, ClosedLoop, run_xcheck
from metasim.libero.importer import init_states as libero_init_states
from metasim.libero.importer import scene as libero_scene
from metasim.libero.reference.simulator import ReferenceSim
from metasim.robosuite.success import goal_holds
from metasim.scene.compile import compile_scene
from metasim.tasks.fixture_placement import episode_fixture_poses

# `metasim check CHECK --benchmark NAME`: the one spelling of a benchmark's checks.
XCHECK_ARGV = ["check", "--benchmark", "libero", "xcheck"]

SUITE, TASK = "libero_spatial", 0
EXPERT = RolloutSpec.of(
    "libero_expert", {"actions": {"space": "osc_pose", "gripper": "pm1_open_neg"}}, num_envs=2
)


@pytest.fixture(scope="module")
def spatial(ref: ReferenceSim) -> dict[str, Any]:
    """libero_spatial task 0 loaded state-only in the reference."""
    return ref.load(SUITE, TASK, cameras=False)


@pytest.mark.slow
def test_hook_reports_exactly_the_applied_actions() -> None:
    """Two episodes on two env slots with runtime action noise: per episode, the hook's
    actions are the ones the env's controller received (spied on the real controller),
    settle steps included (the first 10: hold still, gripper open), one per env step."""
    compiled = compile_scene(libero_scene.load_task(f"libero:{SUITE}/{TASK}").scene)
    received: list[np.ndarray] = []
    applied: dict[int, list[np.ndarray]] = {0: [], 1: []}
    slot_episodes: list[np.ndarray] = []

    class Spy(Hooks):
        def on_env(self, env: MetasimVectorEnv) -> None:
            original = env.controller.to_ctrl

            def spy(action: np.ndarray, *args: Any) -> np.ndarray:
                received.append(np.array(action))
                return original(action, *args)

            env.controller.to_ctrl = spy  # type: ignore[method-assign]

        def on_applied(self, episodes: np.ndarray, actions: np.ndarray) -> None:
            slot_episodes.append(episodes.copy())
            for slot, k in enumerate(episodes):
                if k >= 0:
                    applied[int(k)].append(actions[slot].copy())

    noise = RuntimeNoise(action_noise=0.01)
    records = list(run_task(compiled, EXPERT, [0, 1], noise=noise, hooks=Spy()))
    assert len(received) == len(slot_episodes) > 0
    for k in (0, 1):
        rows = [r[s] for r, eps in zip(received, slot_episodes, strict=True)
                for s in np.flatnonzero(eps == k)]  # fmt: skip
        assert np.array_equal(np.array(applied[k]), np.array(rows))
        steps = next(r.steps for r in records if r.episode == k)
        assert len(applied[k]) == steps
        settle = np.array(applied[k][: libero_scene.SETTLE_STEPS])
        assert np.abs(settle[:, :6]).max() < 0.05 and np.all(settle[:, 6] == -1.0)
        assert np.abs(settle[:, :6]).max() > 0.0  # the noise is in: these were applied


@pytest.mark.reference
def test_set_state_round_trips(ref: ReferenceSim, spatial: dict[str, Any]) -> None:
    states = libero_scene.load_task(f"libero:{SUITE}/{TASK}").init_states
    nq = spatial["nq"]
    ref.reset(init=0)
    row = states[7]
    qvel = np.linspace(-0.01, 0.01, spatial["nv"])
    back = ref.set_state(row[1 : 1 + nq], qvel)
    assert np.array_equal(back["qpos"], row[1 : 1 + nq]) and np.array_equal(back["qvel"], qvel)
    state, _ = ref.state()
    assert np.array_equal(state["qpos"], row[1 : 1 + nq]) and np.array_equal(state["qvel"], qvel)


def _bowl_on_plate(compiled: Any, data: mujoco.MjData) -> None:
    """Drop the bowl 6 cm above the plate and let it settle, the arm held still."""
    m = compiled.model
    free = m.joint("akita_black_bowl_1/free")
    data.qpos[free.qposadr[0] : free.qposadr[0] + 3] = data.xpos[m.body("plate_1").id] + [
        0,
        0,
        0.06,
    ]
    data.qvel[:] = 0.0
    robot = [j for j in range(m.njnt) if m.joint(j).name.startswith("robot/")]
    hold = data.qpos[m.jnt_qposadr[robot]].copy()
    for _ in range(300):
        data.qpos[m.jnt_qposadr[robot]], data.qvel[m.jnt_dofadr[robot]] = hold, 0.0
        mujoco.mj_step(m, data)
    mujoco.mj_forward(m, data)


@pytest.mark.reference
def test_goal_check_agrees_with_metasims_predicates(
    ref: ReferenceSim, spatial: dict[str, Any]
) -> None:
    """A failure state (init 0) and a success state (the bowl settled on the plate in
    metasim), each set in both simulators (fixtures at metasim's poses): LIBERO's
    `_check_success` and metasim's imported goal give the same answer."""
    task = libero_scene.load_task(f"libero:{SUITE}/{TASK}")
    compiled = compile_scene(task.scene)
    mapping = libero_init_states.init_state_map(task.problem, compiled)
    data = mujoco.MjData(compiled.model)
    mapping.apply(compiled.model, data, task.init_states[0])
    ref.reset(init=0)
    m = compiled.model
    ref.place_fixtures({
        root: np.concatenate([data.xpos[m.body(inst).id], data.xquat[m.body(inst).id]])
        for inst, root in spatial["fixtures"].items()
    })  # fmt: skip
    answers = []
    for make in (lambda: None, lambda: _bowl_on_plate(compiled, data)):
        make()
        ref.set_state(data.qpos[mapping.qpos_index], data.qvel[mapping.qvel_index])
        answers.append((goal_holds(compiled, data), ref.goal()))
    assert answers == [(False, False), (True, True)]


def test_object_fate_and_classify() -> None:
    start = np.array([0.0, 0.0, 0.9])
    still = np.tile(start, (5, 1))
    dropped = start + np.array([[0, 0, 0.0], [0, 0, 0.05], [0.1, 0, 0.08], [0.12, 0, 0.0]])
    aside = start + np.array([[0.0, 0, 0], [0.05, 0, 0.0], [0.1, 0, 0.0]])
    assert object_fate(still, start) == "not reached"
    assert object_fate(dropped, start) == "object dropped"
    assert object_fate(aside, start) == "placed off target"
    settle = libero_scene.SETTLE_STEPS
    # The object drops 5 cm into place during the settle steps, then lies still: the
    # policy never moved it ("not reached"), the settle-step drop is not counted.
    falling = np.tile(start, (settle, 1))
    falling[:, 2] += 0.05 - 0.05 * np.arange(1, settle + 1) / settle
    rest = np.vstack([falling, still])
    ep = MetasimEpisode(
        SUITE, TASK, 0, 0, True, len(rest), None, np.zeros((len(rest), 7)), np.zeros(1),
        np.zeros(1), {}, np.zeros((len(rest), 3)), {"bowl": rest},
    )  # fmt: skip
    rep = Replay(np.zeros((len(rest), 3)), {"bowl": rest}, np.zeros(len(rest), bool),
                 {"bowl": falling[0]})  # fmt: skip
    assert classify(ep, rep) == "LIBERO: not reached"
    assert classify(ep, rep, part_step=4) == "parted while settling; LIBERO: not reached"
    rep.objects = {"bowl": np.vstack([rest[:settle], rest[settle - 1] + dropped - start])}
    assert classify(ep, rep) == "LIBERO: object dropped"
    rep.release_steps, rep.release_success_step = 20, 3
    assert classify(ep, rep) == "LIBERO success within 20 release steps"
    rep.release_success_step = 1
    assert classify(ep, rep) == "LIBERO success 2 steps later at most"
    ep.success = False
    assert classify(ep, rep) == "agree"  # both failed within the recorded actions


@pytest.mark.reference
def test_xcheck_one_task_one_init_end_to_end(
    ref: ReferenceSim, spatial: dict[str, Any], tmp_path: Path
) -> None:
    """The expert's metasim episode replayed in LIBERO from the same reset, and the
    expert run closed-loop in LIBERO: both succeed, the runs stay within a centimetre,
    the jsonl holds both, and a rerun into the folder resumes (runs nothing)."""
    summary = run_xcheck([(SUITE, TASK)], [0], EXPERT, tmp_path, closed_loop=True, ref=ref)
    lines = [json.loads(x) for x in (tmp_path / JSONL).read_text().splitlines()]
    assert [c["mode"] for c in lines] == ["replay", "closed_loop"]
    for c in lines:
        assert c["metasim_success"] and c["reference_success"] and c["cause"] == "agree"
        assert c["eef_max_m"] < 0.01 and c["part_step"] is None
        assert c["reference_success_step"] <= c["steps"] + 5
    # closed loop: metasim's goal check on the state LIBERO's done reads (entering each
    # step's last substep) holds at the same step as LIBERO's
    loop = lines[1]
    assert loop["metasim_check_step"] == loop["reference_success_step"]
    assert summary["closed_loop"]["pooled"]["goal_checks_agree"] == "1/1"
    replay = summary["replay"]["tasks"][f"{SUITE}/{TASK}"]
    assert replay["n"] == 1 and replay["table"] == {"a": 1, "b": 0, "c": 0, "d": 0}
    assert json.loads((tmp_path / SUMMARY).read_text()) == summary
    calls: list[str] = []
    again = run_xcheck([(SUITE, TASK)], [0], EXPERT, tmp_path, closed_loop=True, ref=ref,
                       on_episode=lambda c: calls.append(c.mode))  # fmt: skip
    assert calls == [] and again == summary
    assert len((tmp_path / JSONL).read_text().splitlines()) == 2


@pytest.mark.slow
def test_recorded_start_is_metasims_reset() -> None:
    """The start record is metasim's state after its reset: init state k in LIBERO's
    layout, and the fixtures' poses the episode ran with (drawn from its seed as LIBERO's
    placement sampler draws them, not the compiled region centres), which the closed
    loop's shadow env has too."""
    ep = next(run_metasim(SUITE, TASK, [3], RolloutSpec.of("noop")))
    task = libero_scene.load_task(f"libero:{SUITE}/{TASK}")
    nq = len(ep.qpos)
    assert np.array_equal(ep.qpos, task.init_states[3, 1 : 1 + nq])
    compiled = compile_scene(task.scene)
    drawn = episode_fixture_poses(compiled, ep.seed)
    assert ep.fixtures and set(ep.fixtures) == set(drawn)
    for name, pose in ep.fixtures.items():
        pos, quat = drawn[name]
        assert np.allclose(pose[:3], pos) and np.allclose(pose[3:], quat)
        assert not np.allclose(pose[:3], compiled.model.body(name).pos)
    # the closed loop's shadow env starts its episode with the same fixture poses
    shadow = ClosedLoop(task, RolloutSpec.of("noop"))
    shadow.reset_shadow(ep)
    kin = shadow.env.handler.kinematics()
    for name, pose in ep.fixtures.items():
        body = shadow.compiled.model.body(name).id
        assert np.array_equal(kin.body_pos[0, body], pose[:3]), name
        assert np.array_equal(kin.body_quat[0, body], pose[3:]), name
    shadow.env.close()


@pytest.mark.parametrize(
    ("argv", "says"),
    [
        (["--tasks", "libero_nope/0"], "--tasks: 'libero_nope/0': 'libero_nope' is not a LIBERO"),
        # issue #33 item 6: the refusal names this verb's flags, not parity's --suite/--init
        (["--tasks", "libero_goal_lan/0"], "error: --tasks: 'libero_goal_lan/0': 'libero_goal"),
        (["--tasks", "libero_spatial/12"], "out of range"),
        (["--tasks", "libero_spatial/0", "--inits", "0-60"], "--inits: 'libero_spatial/0': 60 is"),
        (["--tasks", "libero_spatial/0", "--inits", "a-b"], "--inits"),
        (["--tasks", "libero_spatial/0", "--shard", "2/2"], "--shard"),
        # issue #33: checked before expanding (1.75 GB, or a MemoryError), never empty
        (["--tasks", "libero_spatial/0", "--inits", "0-20000000"], "expected 0..9999"),
        (["--tasks", "libero_spatial/0", "--inits", "0-999999999"], "expected 0..9999"),
        (["--tasks", "libero_spatial/0", "--inits", "4-2"], "low before high"),
        (["--tasks", "libero_spatial/5-2"], "low before high"),
        (["--tasks", "libero_spatial/5-20"], "task 20 is out of range 0..9"),
        # a harness whose fixture draw metasim does not reproduce, named by its flag
        (["--tasks", "libero_spatial/0", "--fixture-draw", "lerobot_eval"], "--fixture-draw: "),
    ],
)
def test_bad_input_exits_2_with_one_paragraph(
    argv: list[str], says: str, capsys: pytest.CaptureFixture[str]
) -> None:
    from metasim.cli.main import main

    assert main([*XCHECK_ARGV, "--policy", "libero_expert", *argv]) == 2
    err = capsys.readouterr().err
    assert says in err and "Traceback" not in err and err.count("\n") == 1


def test_needs_exactly_one_policy_source(tmp_path: Path, capsys: pytest.CaptureFixture) -> None:
    from metasim.cli.main import main

    assert main([*XCHECK_ARGV, "--tasks", "libero_spatial/0"]) == 2
    assert "exactly one of --policy or --run" in capsys.readouterr().err
    assert main([*XCHECK_ARGV, "--run", str(tmp_path), "--tasks", "libero_spatial/0"]) == 2
    assert "no manifest.json" in capsys.readouterr().err


def _seed_folder(out: Path, spec: RolloutSpec, release: int = 20) -> str:
    """A folder as an earlier xcheck of `spec` leaves it: its key and one episode."""
    from metasim.libero.checks.xcheck_run import KEY, check_folder

    check_folder(out, spec, release)
    assert (out / KEY).is_file()
    line = json.dumps({"suite": SUITE, "task": TASK, "init": 0, "mode": "replay"}) + "\n"
    (out / JSONL).write_text(line)
    return line


@pytest.mark.parametrize(
    ("argv", "differs"),
    [
        (["--policy", "noop"], "policy"),
        (["--policy", "libero_expert", "--release", "5"], "release"),
        (["--policy", "libero_expert", "+policy.execute=3"], "execute"),
        (["--policy", "libero_expert", "seed=7"], "seed"),
        # pairs at openpi's episode k are not metasim's own episode k
        (["--policy", "libero_expert", "--fixture-draw", "openpi"], "fixture_draw"),
    ],
)
def test_resume_with_other_settings_is_refused(
    argv: list[str], differs: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A folder of libero_expert results resumed with another policy, option, seed or
    release is refused before any work, and its episodes are kept (issue #33 item 2: noop
    was reported at 1.00 from the expert's episodes)."""
    from metasim.cli.main import main
    from metasim.evaluate.config import compose

    expert = compose(["policy=libero_expert"]).rollout
    line = _seed_folder(tmp_path, expert)
    tail = ["--tasks", f"{SUITE}/{TASK}", "--inits", "0", "--out", str(tmp_path)]
    assert main([*XCHECK_ARGV, *argv, *tail]) == 2
    err = capsys.readouterr().err
    assert err.startswith(f"error: {tmp_path}: this folder holds results of a run with a different")
    assert differs in err and "Traceback" not in err and err.count("\n") == 1, err
    assert (tmp_path / JSONL).read_text() == line


def test_results_without_their_key_are_refused(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from metasim.cli.main import main

    (tmp_path / JSONL).write_text('{"suite": "libero_spatial"}\n')
    tail = ["--tasks", f"{SUITE}/{TASK}", "--inits", "0", "--out", str(tmp_path)]
    assert main([*XCHECK_ARGV, "--policy", "noop", *tail]) == 2
    assert f"holds {JSONL} but no xcheck_key.json" in capsys.readouterr().err


def test_run_naming_code_is_not_run_without_allow_code(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """`xcheck --run DIR` whose manifest names a python policy (subprocess:Popen) refuses
    with exit 2 and says how to allow it; nothing is imported or called (issue #33 item 3)."""
    from metasim.cli.main import main
    from metasim.evaluate.config import compose

    marker = tmp_path / "pwned"
    cfg = compose(["suite=libero_spatial", "policy=python", "policy.target=subprocess:Popen",
                   f"+policy.args={{args: [touch, {marker}]}}"])  # fmt: skip
    run = tmp_path / "run"
    run.mkdir()
    (run / "manifest.json").write_text(json.dumps({"config": cfg.model_dump(mode="json")}))
    argv = [*XCHECK_ARGV, "--run", str(run), "--tasks", "libero_spatial/0", "--inits", "0"]
    assert main([*argv, "--out", str(tmp_path / "out")]) == 2
    err = capsys.readouterr().err
    assert "'subprocess:Popen'" in err and "add --allow-code subprocess:Popen" in err, err
    assert "Traceback" not in err and err.count("\n") == 1
    assert not marker.exists() and not (tmp_path / "out").exists()


def test_a_killed_runs_partial_line_is_cut_and_a_bad_line_named(tmp_path: Path) -> None:
    """Resuming from xcheck.jsonl: a last line cut short by a kill is dropped from the
    file (never a finished record), so the next append starts its own line; a bad line
    elsewhere is an input error naming the file and line (issue #33 item 5)."""
    from dataclasses import asdict

    from metasim.errors import MetasimInputError
    from metasim.libero.checks.xcheck import Comparison, load_done

    c = Comparison(SUITE, TASK, 0, 1, 90, True, True, True, 80, 81, 0.0, 0.0, 0.0, 0.0,
                   None, "agree")  # fmt: skip
    good = json.dumps(asdict(c)) + "\n"
    path = tmp_path / JSONL
    path.write_text(good + good.replace('"init": 0', '"init": 1')[:40])
    assert list(load_done(path)) == [(SUITE, TASK, 0, "replay")]
    assert path.read_text() == good
    path.write_text('{"suite": "libero_spatial"}\n' + good)
    with pytest.raises(MetasimInputError, match=f"{JSONL}: line 1: expected an xcheck"):
        load_done(path)


@pytest.mark.parametrize("manifest", ["[]", "{oops", "{}", '{"config": {"seed": 0}}'])
def test_a_damaged_run_manifest_exits_2(
    manifest: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from metasim.cli.main import main

    (tmp_path / "manifest.json").write_text(manifest)
    argv = [*XCHECK_ARGV, "--run", str(tmp_path), "--tasks", "libero_spatial/0"]
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert err.startswith(f"error: {tmp_path / 'manifest.json'}") and "Traceback" not in err
    assert err.count("\n") == 1, err
