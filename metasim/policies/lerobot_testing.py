"""A small random-weight LeRobot ACT checkpoint, built and saved with LeRobot's own API.

For tests and for trying `policy=lerobot` without a trained model:

    python -m metasim.policies.lerobot_testing OUT_DIR [--seed 0]

writes `config.json`, `model.safetensors` and the pre/post-processor pipelines to OUT_DIR,
laid out like the `pretrained_model/` folder of a LeRobot training checkpoint. The weights
are random (nothing is downloaded: the ResNet backbone has no pretrained weights), the
normalization statistics plausible: images ImageNet mean/std, state mean 0 std 1, and
actions mean 0 std 0.01 except the last (gripper) dimension, mean 0.5 std 0.1, so that the
unnormalized actions are small deltas and a gripper command near 0.5.
"""

from __future__ import annotations

import argparse
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from metasim.policies.lerobot_runner import OBS_STATE, import_lerobot

DEFAULT_CAMERAS: Mapping[str, tuple[int, int]] = {"front": (96, 96)}
IMAGENET_MEAN = (0.485, 0.456, 0.406)
IMAGENET_STD = (0.229, 0.224, 0.225)
DELTA_STD = 0.01
GRIPPER_MEAN = 0.5
GRIPPER_STD = 0.1


def act_stats(
    cameras: Mapping[str, tuple[int, int]], state_dim: int, action_dim: int
) -> dict[str, dict[str, Any]]:
    """Dataset-like statistics (mean, std, min, max per feature) as LeRobot stores them."""
    import torch

    def entry(mean: torch.Tensor, std: torch.Tensor) -> dict[str, torch.Tensor]:
        return {"mean": mean, "std": std, "min": mean - 3 * std, "max": mean + 3 * std}

    stats: dict[str, dict[str, Any]] = {}
    for cam in cameras:
        stats[f"observation.images.{cam}"] = entry(
            torch.tensor(IMAGENET_MEAN).view(3, 1, 1), torch.tensor(IMAGENET_STD).view(3, 1, 1)
        )
    stats[OBS_STATE] = entry(torch.zeros(state_dim), torch.ones(state_dim))
    mean = torch.zeros(action_dim)
    std = torch.full((action_dim,), DELTA_STD)
    mean[-1], std[-1] = GRIPPER_MEAN, GRIPPER_STD
    stats["action"] = entry(mean, std)
    return stats


def build_random_act_checkpoint(
    folder: str | Path,
    *,
    cameras: Mapping[str, tuple[int, int]] | None = None,
    state_dim: int = 8,
    action_dim: int = 7,
    chunk_size: int = 10,
    n_action_steps: int = 5,
    seed: int = 0,
) -> Path:
    """Build a small random ACT policy and save it as a LeRobot checkpoint in `folder`.

    `cameras` maps a camera name to its (H, W) (default {"front": (96, 96)}); each becomes
    the input `observation.images.<name>`. Same arguments and seed give the same weights.
    `state_dim` must be >= 1: LeRobot's ACT reads `observation.state` at inference even
    when its config has no state input.
    """
    import_lerobot()
    import torch
    from lerobot.configs.types import FeatureType, PolicyFeature
    from lerobot.policies.act.configuration_act import ACTConfig
    from lerobot.policies.act.modeling_act import ACTPolicy
    from lerobot.policies.factory import make_pre_post_processors

    cameras = dict(DEFAULT_CAMERAS if cameras is None else cameras)
    if not cameras:
        raise ValueError("ACT needs at least one camera")
    if state_dim < 1:
        raise ValueError(f"state_dim must be >= 1 for LeRobot's ACT, got {state_dim}")
    inputs = {
        f"observation.images.{cam}": PolicyFeature(type=FeatureType.VISUAL, shape=(3, h, w))
        for cam, (h, w) in cameras.items()
    }
    inputs[OBS_STATE] = PolicyFeature(type=FeatureType.STATE, shape=(state_dim,))
    config = ACTConfig(
        device="cpu",
        input_features=inputs,
        output_features={"action": PolicyFeature(type=FeatureType.ACTION, shape=(action_dim,))},
        chunk_size=chunk_size,
        n_action_steps=n_action_steps,
        pretrained_backbone_weights=None,  # random ResNet18, no download
        dim_model=32,
        n_heads=2,
        dim_feedforward=64,
        n_encoder_layers=1,
        n_decoder_layers=1,
        latent_dim=8,
        n_vae_encoder_layers=1,
    )
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(seed)
        policy = ACTPolicy(config)
    preprocessor, postprocessor = make_pre_post_processors(
        config, dataset_stats=act_stats(cameras, state_dim, action_dim)
    )
    out = Path(folder)
    out.mkdir(parents=True, exist_ok=True)
    policy.save_pretrained(out)
    preprocessor.save_pretrained(out)
    postprocessor.save_pretrained(out)
    return out


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m metasim.policies.lerobot_testing",
        description="Write a small random-weight LeRobot ACT checkpoint (for tests, no training).",
    )
    parser.add_argument("out_dir", type=Path, help="folder to write the checkpoint to")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--state-dim", type=int, default=8)
    parser.add_argument("--action-dim", type=int, default=7)
    parser.add_argument("--chunk-size", type=int, default=10)
    parser.add_argument("--n-action-steps", type=int, default=5)
    parser.add_argument(
        "--camera",
        action="append",
        metavar="NAME=HxW",
        help="a camera input, e.g. front=96x96 (repeatable; default front=96x96)",
    )
    args = parser.parse_args(argv)
    cameras: dict[str, tuple[int, int]] | None = None
    if args.camera:
        cameras = {}
        for spec in args.camera:
            try:
                name, size = spec.split("=", 1)
                h, w = (int(n) for n in size.lower().split("x"))
            except ValueError:
                parser.error(f"--camera {spec!r}: expected NAME=HxW, e.g. front=96x96")
            cameras[name] = (h, w)
    out = build_random_act_checkpoint(
        args.out_dir,
        cameras=cameras,
        state_dim=args.state_dim,
        action_dim=args.action_dim,
        chunk_size=args.chunk_size,
        n_action_steps=args.n_action_steps,
        seed=args.seed,
    )
    print(out)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
