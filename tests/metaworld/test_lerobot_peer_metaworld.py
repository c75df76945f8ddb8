"""The peer-code convention test, LeRobot's Meta-World part (issue 31, scope 2): LeRobot
0.4.4's own `MetaworldEnv`, built and driven as `lerobot-eval` does (`make_env`,
`preprocess_observation`, `add_envs_task`, the env processors, actions through the env
postprocessor), running in the Meta-World reference venv (metaworld 3.1.1, MuJoCo 3.3.0;
torch and lerobot from the peer layer, `metasim.reference.peerlayer`), against metasim's
`lerobot_metaworld` preset on the same state: metasim's episode k and LeRobot's env given
variation k of MT10's train split (the worker's module doc), then the same random policy
actions on both.

Per observation: the image >= 40 dB PSNR, the 4-D state within 1e-6 while the hand
touches nothing (after a contact MuJoCo 3.3.0 and 4.0 part: docs/log/metaworld.md), the prompt
string equal to LeRobot's task description; per step: the array each env takes from the
same policy action equal (exactly), and the command it sets (the mocap target, the
gripper ctrl) equal.

The reference lane runs three MT10 tasks; the sweep lane all ten.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field

import numpy as np
import pytest

from metasim.envs.vec_env import MetasimVectorEnv
from metasim.evaluate.config import compose
from metasim.evaluate.policy_io import converter_for
from metasim.metaworld.importer.source import MetaworldSource
from metasim.metaworld.reference.peer import LeRobotMetaworldPeer
from metasim.metaworld.reference.simulator import MetaWorldRefError
from metasim.policies.adapter import load_task_text
from metasim.reference import peerlayer
from metasim.reference.images import psnr
from metasim.reference.parity import PSNR_CAP
from metasim.scene.compile import ROBOT_PREFIX
from metasim.scene.sources import compile_task
from tests.lanes import needs

pytestmark = pytest.mark.reference

pytest.importorskip("lerobot")  # metasim's side reads LeRobot's task descriptions

STEPS = 25
STATE_TOL = 1e-6
PSNR_DB = 40.0
MT10 = [r.rpartition("/")[2] for r in MetaworldSource().suites()["metaworld_mt10"]]
SAMPLE = ["push-v3", "door-open-v3", "window-open-v3"]
# The package's reset moves window-close's window (its slide joint) after the reset's
# last kinematics (`metasim.metaworld.obs.RESET_FRAME_STALE`), and LeRobot renders the
# reset frame without a forward pass: the window is drawn where it was before the reset
# (26.9 dB against metasim's frame of the reset state; 43.6 dB from the first step on).
# Control: the package's own env, reset and rendered after `mj_forward`, is 43.6 dB from
# metasim's reset frame and 27.0 dB from its own frame without it (docs/log/metaworld.md).
# Its reset image is not compared; every later one is.
STALE_FIRST_FRAME = {"window-close-v3"}
# drawer-close's left claw and pad touch the drawer from the reset on (variation 13, the
# one drawn): its state is compared at the reset (a recorded state, no physics yet)
# only; images, prompt and the action path at every step.
TOUCHING = {"drawer-close-v3"}


@pytest.fixture(scope="module")
@needs("reference")
def peer(mw_python: object) -> Iterator[LeRobotMetaworldPeer]:
    try:
        layer = peerlayer.ensure_layer()
    except peerlayer.PeerLayerError as exc:
        pytest.skip(f"cannot build the LeRobot peer layer (offline?): {exc}")
    try:
        with LeRobotMetaworldPeer(layer=layer) as worker:
            yield worker
    except MetaWorldRefError as exc:
        pytest.skip(f"cannot start LeRobot's Meta-World env: {exc}")


@dataclass
class Figures:
    """Per observation (reset + steps until LeRobot's env terminates): state difference,
    PSNR, prompt equal, hand contact; per step: the env's input, mocap target and ctrl
    differences."""

    state: list[float] = field(default_factory=list)
    psnr: list[float] = field(default_factory=list)
    prompt: list[bool] = field(default_factory=list)
    contact: list[bool] = field(default_factory=list)
    sent: list[float] = field(default_factory=list)
    mocap: list[float] = field(default_factory=list)
    ctrl: list[float] = field(default_factory=list)

    @property
    def free(self) -> int:
        hits = np.flatnonzero(self.contact)
        return int(hits[0]) if len(hits) else len(self.contact)


def compare(peer: LeRobotMetaworldPeer, task: str) -> Figures:
    rng = np.random.default_rng([MT10.index(task), 312])
    compiled = compile_task(f"metaworld:MT10/{task}")
    opts = compose(["suite=metaworld_mt10", "policy=lerobot_metaworld"]).rollout.options
    spec = opts.observation
    text = load_task_text(opts.task_text)
    prompt = text(compiled.scene, compiled.scene.task.instruction) if text else ""
    convert = converter_for(compiled, opts.actions)
    env = MetasimVectorEnv(
        compiled, 1, action_space="mocap_delta", cameras=spec.views(compiled), autoreset=False
    )
    model = compiled.model
    robot = np.array([model.body(b).name.startswith(ROBOT_PREFIX) for b in model.geom_bodyid])
    fig = Figures()
    (key,) = spec.images

    def observe(obs: dict, theirs: dict) -> None:
        sent = spec.batch(obs, np.arange(1), prompt, compiled)
        diff = sent["observation.state"][0] - theirs["observation.state"]
        fig.state.append(float(np.abs(diff).max()))
        fig.psnr.append(psnr(np.asarray(sent[key][0]), theirs[key], cap=PSNR_CAP))
        fig.prompt.append(sent[spec.prompt or "prompt"][0] == theirs["task"][0])
        pairs = env.handler.contacts()[0]
        fig.contact.append(bool(len(pairs) and (robot[pairs].sum(axis=1) == 1).any()))

    try:
        env.handler.track_contacts = True
        k, seed = int(rng.integers(50)), int(rng.integers(10_000))
        obs, _ = env.reset(options={"env_ids": [0], "seeds": [seed], "episodes": [k]})
        made = peer.make(task, "MT10", variation=k, seed=seed)
        observe(obs, made["obs"])
        rng_a = np.random.default_rng(seed)
        for _ in range(STEPS):
            a = rng_a.uniform(-1, 1, 4).astype(np.float32)  # a policy's float32 action
            ours = convert(a[None], obs["policy"])
            obs, *_ = env.step(ours)
            got = peer.step(a)
            fig.sent.append(float(np.abs(ours[0] - got["sent"]).max()))
            observe(obs, got["obs"])  # rendered by LeRobot before its own reset
            if got["terminated"]:  # success: LeRobot's env has reset itself
                break
            state = env.handler.get_state()
            fig.mocap.append(float(np.abs(state.mocap_pos[0] - got["mocap_pos"]).max()))
            fig.ctrl.append(float(np.abs(state.ctrl[0] - got["ctrl"]).max()))
    finally:
        env.close()
    return fig


def _check(peer: LeRobotMetaworldPeer, task: str) -> None:
    fig = compare(peer, task)
    n = max(fig.free, 1) if task in TOUCHING else fig.free
    psnr_from = 1 if task in STALE_FIRST_FRAME else 0
    print(
        f"{task} vs LeRobot's MetaworldEnv: {n} of {len(fig.contact)} observations before "
        f"contact; state max {max(fig.state[:n]):.2e} (all: {max(fig.state):.2e}), PSNR min "
        f"{min(fig.psnr[psnr_from:n]):.2f} "
        f"(all: {min(fig.psnr):.2f}); prompt equal {all(fig.prompt)}; action sent max "
        f"diff {max(fig.sent):.1e}; mocap max {max(fig.mocap[: max(n - 1, 1)], default=0):.1e}, "
        f"ctrl max {max(fig.ctrl, default=0):.1e}; {len(fig.sent)} steps"
    )
    # enough contact-free steps, unless LeRobot's episode ended first
    ok = n > 5 or len(fig.sent) < STEPS or task in TOUCHING
    assert ok, f"the hand touched something at observation {n}"
    assert all(fig.prompt), "the prompt is not LeRobot's task description"
    assert max(fig.sent) == 0.0, fig.sent  # the same array reaches both envs
    assert max(fig.ctrl, default=0.0) == 0.0, fig.ctrl
    assert max(fig.mocap[: max(n - 1, 1)], default=0.0) <= STATE_TOL, fig.mocap
    assert max(fig.state[:n]) <= STATE_TOL, fig.state[:n]
    img_to = len(fig.psnr) if task in TOUCHING else n
    assert min(fig.psnr[psnr_from:img_to]) >= PSNR_DB, fig.psnr


@pytest.mark.slow
@pytest.mark.parametrize("task", SAMPLE)
def test_lerobot_metaworld_preset_equals_lerobots_metaworld_env(
    peer: LeRobotMetaworldPeer, task: str
) -> None:
    _check(peer, task)


@pytest.mark.sweep
@pytest.mark.parametrize("task", MT10)
def test_every_mt10_task_equals_lerobots_metaworld_env(
    peer: LeRobotMetaworldPeer, task: str
) -> None:
    _check(peer, task)
