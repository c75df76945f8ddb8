"""`policy=lerobot`: a LeRobot checkpoint folder evaluated through the harness.

    metasim eval policy=lerobot policy.path=/ckpts/act_lift

The checkpoint's inputs are mapped from the scene: `observation.images.<cam>` is the
scene camera `<cam>` (or what `observation.images` maps it to) rendered at the
checkpoint's image size (with `resize: none`, at the size the images declare or the
camera's, unresized, as LeRobot's own eval hands its env's frames to the policy, whose
processors and model resize them: the LIBERO and Meta-World presets);
`observation.state` is built from the declared state parts.
Every input the checkpoint takes must be mapped, and every width must match (state
width, action width against the declared action convention): checked at start-up, and
a mismatch is a one-paragraph error naming both sides.

Every request also carries `task`, the instruction as a list of strings, as LeRobot's
own evaluation adds it for every policy (language-conditioned ones such as SmolVLA read
it; the others ignore it). `task_text` (an option of every adapter) rewrites it, e.g.
into the descriptions LeRobot's env of a benchmark gives
(`metasim.metaworld.lerobot_tasks:lerobot_task_text`).

`mode: chunk` (default) predicts a chunk per env and lets the harness execute
`n_action_steps` of it (or ensemble), so envs that reset at different times stay
independent; `mode: per_env` calls LeRobot's own `select_action` step by step, each env
on its own queues (the observation history of policies with `n_obs_steps > 1`, such as
diffusion, which cannot predict a chunk from one observation, and the queued actions), as
LeRobot's eval does for every policy, whatever num_envs; `mode: select_action` calls one
`select_action` queue for all envs (one batch; use it with num_envs equal to the
episodes in flight).
"""

from __future__ import annotations

from typing import Any, Literal

import numpy as np
from pydantic import Field

from metasim.errors import MetasimInputError
from metasim.policies.adapter import AdapterOptions, AdapterPolicy
from metasim.policies.base import PolicyContext, register_policy
from metasim.policies.images import ImageSpec
from metasim.policies.observation import ObservationSpec

IMAGE_PREFIX = "observation.images."
TASK_KEY = "task"  # LeRobot's key of the language instruction (a list of strings)


class LeRobotOptions(AdapterOptions):
    path: str
    device: str = "cpu"
    mode: Literal["chunk", "per_env", "select_action"] = "chunk"
    resize: Literal["resize_with_pad", "resize", "center_crop", "none"] = "resize"
    n_action_steps: int | None = Field(default=None, ge=1)  # default: the checkpoint's

    def preflight(self) -> None:
        """The checkpoint folder holds LeRobot's files (what `LeRobotRunner` checks)."""
        from metasim.policies.lerobot_runner import checkpoint_problems

        checkpoint_problems(self.path)


class LeRobotPolicy(AdapterPolicy):
    batched = True

    def __init__(self, ctx: PolicyContext, opts: LeRobotOptions) -> None:
        from metasim.policies.lerobot_runner import LeRobotRunner

        self.runner = LeRobotRunner(
            opts.path, device=opts.device, any_image_size=opts.resize == "none"
        )
        opts = opts.model_copy(update={"observation": self._map(ctx, opts)})
        super().__init__(ctx, opts)
        self.o = opts
        self.steps = opts.n_action_steps or self.runner.n_action_steps
        n_arm = len(ctx.compiled.index.arm_qpos)
        if self.runner.action_dim != opts.actions.dim(n_arm):
            raise MetasimInputError(
                opts.path,
                [
                    f"the checkpoint outputs {self.runner.action_dim}-D actions, the declared "
                    f"policy.actions convention is {opts.actions.describe(n_arm)}"
                ],
                "Set policy.actions.space/rotation to what the checkpoint was trained on",
            )

    def _map(self, ctx: PolicyContext, opts: LeRobotOptions) -> ObservationSpec:
        spec = opts.observation
        images = dict(spec.images)
        cams = [ctx.compiled.model.camera(i).name for i in range(ctx.compiled.model.ncam)]
        for key, (_, h, w) in self.runner.image_shapes.items():
            cam = key.removeprefix(IMAGE_PREFIX)
            if key not in images:
                if cam not in cams:
                    raise MetasimInputError(
                        opts.path,
                        [
                            f"the checkpoint takes {key!r} but the scene "
                            f"{ctx.compiled.scene.name!r} has no camera {cam!r} (it has "
                            f"{', '.join(cams)})"
                        ],
                        f"Map it: policy.observation.images.{key}.camera=<one of them>",
                    )
                images[key] = ImageSpec(camera=cam)
                if opts.resize != "none":
                    images[key] = images[key].model_copy(update={"resize": opts.resize})
            if opts.resize != "none":
                images[key] = images[key].model_copy(update={"size": (w, h)})
        extra = sorted(set(images) - set(self.runner.image_shapes))
        if extra:
            raise MetasimInputError(
                opts.path,
                [f"policy.observation.images.{extra[0]}: the checkpoint takes no such image"],
            )
        state = {k: v for k, v in spec.state.items() if k in self.runner.input_shapes}
        out = spec.model_copy(update={"images": images, "state": state, "prompt": TASK_KEY})
        for key, shape in self.runner.input_shapes.items():
            if key in images:
                continue
            if key not in state:
                raise MetasimInputError(
                    opts.path,
                    [
                        f"the checkpoint takes {key!r} {shape}; "
                        "policy.observation.state maps no such key"
                    ],
                )
            got = out.state_dim(key, ctx.compiled)
            if got != shape[0]:
                raise MetasimInputError(
                    opts.path,
                    [
                        f"the checkpoint takes {key!r} of width {shape[0]}, "
                        f"policy.observation.state.{key} = {state[key]} is {got} wide"
                    ],
                )
        return out

    def reset_env(self, env: int) -> None:
        if self.o.mode == "select_action":
            self.runner.reset()
        elif self.o.mode == "per_env":
            self.runner.reset_env(env)

    def infer_batch(self, env_ids: np.ndarray, batch: dict[str, Any]) -> np.ndarray:
        inputs: dict[str, Any] = {k: v for k, v in batch.items() if k in self.runner.input_shapes}
        task = list(batch.get(TASK_KEY, [""] * len(env_ids)))
        if self.o.mode == "select_action":
            full: dict[str, Any] = {
                k: np.zeros((self.ctx.num_envs, *np.shape(v)[1:]), np.asarray(v).dtype)
                for k, v in inputs.items()
            }
            for k, v in inputs.items():
                full[k][env_ids] = v
            texts = [""] * self.ctx.num_envs
            for i, text in zip(env_ids, task, strict=True):
                texts[int(i)] = text
            full[TASK_KEY] = texts
            return self.runner.select_action(full)[env_ids][:, None, :]
        if self.o.mode == "per_env":
            rows = []
            for j, env in enumerate(env_ids):
                row: dict[str, Any] = {k: np.asarray(v)[j : j + 1] for k, v in inputs.items()}
                row[TASK_KEY] = task[j : j + 1]
                rows.append(self.runner.select_action_of(int(env), row))
            return np.concatenate(rows)[:, None, :]
        inputs[TASK_KEY] = task
        return self.runner.predict_chunk(inputs)[:, : self.steps]

    def act(self, obs: dict[str, Any], env_ids: np.ndarray | None = None) -> np.ndarray:
        if self.o.mode == "select_action":  # LeRobot's queue steps every env together
            env_ids = np.arange(self.ctx.num_envs)
        return super().act(obs, env_ids)


@register_policy("lerobot", options=LeRobotOptions)
def _lerobot(ctx: PolicyContext) -> LeRobotPolicy:
    return LeRobotPolicy(ctx, ctx.typed(LeRobotOptions))
