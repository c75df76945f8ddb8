"""A toy plug-in living outside `metasim/`: it registers a backend, a policy kind, a scene
axis, a runtime axis and a CLI verb with the same decorators metasim's own modules use.
Importing this module is the only step; tests/plugins/test_plugins.py shows each is found."""

from __future__ import annotations

import argparse
from dataclasses import replace
from typing import Any, ClassVar

import numpy as np

from metasim.cli.verbs import verb
from metasim.envs.noise import RuntimeNoise
from metasim.envs.vec_env import CameraView
from metasim.perturb.axes import RUNTIME_AXES, SCENE_AXES
from metasim.policies.base import PolicyContext, PolicyOptions, register_policy
from metasim.scene.schema import Scene
from metasim.sim import BACKENDS, Handler


@BACKENDS.register("toy_counting")
def load_counting() -> type[Handler]:
    """The native handler, counting the control steps it runs (proof it was the one used)."""
    from metasim.sim.mujoco.handler import BackendHandler

    class CountingHandler(BackendHandler):
        steps: ClassVar[list[int]] = COUNTING_STEPS

        def _step(self, ctrl: np.ndarray) -> None:
            self.steps.append(len(ctrl))
            super()._step(ctrl)

    return CountingHandler


COUNTING_STEPS: list[int] = []  # one entry per control step of any toy_counting env


class ToyOptions(PolicyOptions):
    """The toy kind's own option: the gripper command it holds (-1..1, open1 convention)."""

    grip: float = 1.0


INSTRUCTIONS: list[str] = []  # every instruction a toy_hold policy was reset with


@register_policy("toy_hold", options=ToyOptions)
class ToyHold:
    """Holds still with gripper command `grip`; records its instructions."""

    views: tuple[CameraView, ...] = ()

    def __init__(self, ctx: PolicyContext) -> None:
        self.options = ctx.typed(ToyOptions)
        self.action_space = ctx.action_space
        self.action = np.zeros(self.options.actions.dim(len(ctx.compiled.index.arm_qpos)))
        self.action[-1] = self.options.grip
        self.num_envs = ctx.num_envs

    def reset(self, instruction: str, env_ids: np.ndarray | None = None) -> None:
        INSTRUCTIONS.append(instruction)

    def act(self, obs: dict[str, Any], env_ids: np.ndarray | None = None) -> np.ndarray:
        return np.tile(self.action, (self.num_envs, 1, 1))

    def close(self) -> None:
        """Nothing to release."""


@SCENE_AXES.register("toy_shout")
def toy_shout(scene: Scene, value: Any, target: str | None) -> Scene:
    """Append `value` to the instruction (what the toy policy then records)."""
    task = scene.task.model_copy(update={"instruction": scene.task.instruction + str(value)})
    return scene.model_copy(update={"task": task})


@RUNTIME_AXES.register("toy_jitter")
def toy_jitter(noise: RuntimeNoise, value: Any) -> RuntimeNoise:
    """A second name for observation noise (a new runtime axis, nothing edited elsewhere)."""
    return replace(noise, state_noise=float(value))


def _add(verbs: Any) -> None:
    p = verbs.add_parser("toy", help="the toy plug-in's verb")
    p.add_argument("--code", type=int, default=0)


def _run(args: argparse.Namespace) -> int:
    print(f"toy verb ran with code {args.code}")
    return int(args.code)


verb("toy", _add, _run)

NAMES = {
    "backend": (BACKENDS, "toy_counting"),
    "scene axis": (SCENE_AXES, "toy_shout"),
    "runtime axis": (RUNTIME_AXES, "toy_jitter"),
}
