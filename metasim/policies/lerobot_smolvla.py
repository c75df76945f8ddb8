"""A small random-weight SmolVLA checkpoint, built offline with LeRobot's own classes.

SmolVLA (LeRobot's `smolvla` policy) is a SmolVLM2 backbone plus an action expert. Its
config names the backbone (`vlm_model_name`, by default the Hub id
`HuggingFaceTB/SmolVLM2-500M-Video-Instruct`), and LeRobot builds from that name three
things: the backbone's architecture (`AutoConfig.from_pretrained`; its weights too when
`load_vlm_weights` is true), its processor (`AutoProcessor.from_pretrained`: the model
reads the tokenizer's image token ids) and, in the preprocessor pipeline, the tokenizer
that turns the instruction into `observation.language.tokens`. A name that is a local
folder works for all three, so nothing is downloaded when the folder holds them.

`save_tiny_backbone` writes such a folder: a SmolVLM config of SmolVLM2's shape but a few
layers wide, a byte-level BPE tokenizer trained here on a fixed corpus (SmolVLM2's special
tokens; any text tokenises), and SmolVLM's image/video processors. `build_random_smolvla_
checkpoint` then builds SmolVLA on it with LeRobot's API (`load_vlm_weights=False`: random
weights), and saves the checkpoint and its pre/post-processors next to it, laid out like
a training checkpoint's `pretrained_model/`; `policy=lerobot_libero policy.path=<it>`
loads it. A real SmolVLA checkpoint names the Hub backbone: it needs that backbone in the
Hugging Face cache (or its name pointed at a local copy), as LeRobot's own eval does.

    python -m metasim.policies.lerobot_smolvla OUT_DIR --preset libero|metaworld

Needs LeRobot and the `[smolvla]` extra (transformers < 5, LeRobot 0.4.4's pin).
"""

from __future__ import annotations

import argparse
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from metasim.policies.lerobot_runner import OBS_STATE, import_lerobot
from metasim.policies.lerobot_testing import act_stats

BACKBONE_DIR = "backbone"  # the tiny SmolVLM, inside the checkpoint folder
# SmolVLM2's special tokens (its tokenizer_config's extra_special_tokens) and its pad token
SPECIAL = {
    "fake_image_token": "<fake_token_around_image>",
    "image_token": "<image>",
    "end_of_utterance_token": "<end_of_utterance>",
    "global_image_token": "<global-img>",
}
PAD = "<|im_end|>"
VOCAB = 400
# The tokenizer's training text: instructions of the kind LIBERO and Meta-World give. Any
# text tokenises (byte-level); this only makes common words single tokens.
CORPUS = (
    "pick up the black bowl between the plate and the ramekin and place it on the plate\n",
    "open the top drawer and put the bowl inside\n",
    "put both the alphabet soup and the tomato sauce in the basket\n",
    "turn on the stove and put the moka pot on it\n",
    "push the puck to a goal. open a window by sliding it. pick and place a puck.\n",
    "reach a goal position. close a drawer. press a button from the top.\n",
)
# LIBERO's and Meta-World's LeRobot inputs (policies/lerobot_libero.yaml,
# lerobot_metaworld.yaml): (image key -> (H, W)), state width, action width
PRESETS: Mapping[str, tuple[dict[str, tuple[int, int]], int, int]] = {
    "libero": (
        {"observation.images.image": (256, 256), "observation.images.image2": (256, 256)},
        8,
        7,
    ),
    "metaworld": ({"observation.image": (480, 480)}, 4, 4),
}


def save_tiny_backbone(folder: str | Path) -> Path:
    """A SmolVLM2-shaped backbone folder (config, tokenizer, processors), a few layers wide;
    the name SmolVLA's `vlm_model_name` and tokenizer step read it by. Deterministic."""
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers
    from transformers import PreTrainedTokenizerFast
    from transformers.models.smolvlm import (
        SmolVLMConfig,
        SmolVLMImageProcessor,
        SmolVLMProcessor,
    )
    from transformers.models.smolvlm.video_processing_smolvlm import SmolVLMVideoProcessor

    folder = Path(folder)
    tok = Tokenizer(models.BPE())
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tok.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(
        vocab_size=VOCAB,
        special_tokens=[PAD, *SPECIAL.values()],
        initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
        show_progress=False,
    )
    tok.train_from_iterator(CORPUS, trainer)
    tokenizer = PreTrainedTokenizerFast(
        tokenizer_object=tok, pad_token=PAD, eos_token=PAD, extra_special_tokens=SPECIAL
    )
    image_size, patch = 64, 16  # 16 patches, 4 tokens per image after the pixel shuffle
    processor = SmolVLMProcessor(
        image_processor=SmolVLMImageProcessor(
            max_image_size={"longest_edge": image_size}, size={"longest_edge": image_size}
        ),
        tokenizer=tokenizer,
        video_processor=SmolVLMVideoProcessor(),
        image_seq_len=(image_size // patch) ** 2 // 4,
    )
    config = SmolVLMConfig(
        image_token_id=tokenizer.convert_tokens_to_ids(SPECIAL["image_token"]),
        pad_token_id=tokenizer.pad_token_id,
        scale_factor=2,
        vision_config={
            "hidden_size": 32, "intermediate_size": 64, "num_hidden_layers": 2,
            "num_attention_heads": 2, "image_size": image_size, "patch_size": patch,
        },
        text_config={
            "model_type": "llama", "vocab_size": len(tokenizer), "hidden_size": 64,
            "intermediate_size": 128, "num_hidden_layers": 4, "num_attention_heads": 4,
            "num_key_value_heads": 2, "head_dim": 16, "max_position_embeddings": 512,
            "pad_token_id": tokenizer.pad_token_id,
        },
    )  # fmt: skip
    folder.mkdir(parents=True, exist_ok=True)
    processor.save_pretrained(folder)
    config.save_pretrained(folder)
    return folder


def build_random_smolvla_checkpoint(
    folder: str | Path,
    *,
    preset: str = "libero",
    seed: int = 0,
    chunk_size: int = 10,
    n_action_steps: int = 5,
) -> Path:
    """A random SmolVLA checkpoint with `preset`'s LeRobot inputs (PRESETS), its backbone
    in `folder/backbone` (named by absolute path), its real pre/post-processors (the
    statistics of `act_stats`) saved next to it."""
    import_lerobot()
    import torch
    from lerobot.configs.types import FeatureType, PolicyFeature
    from lerobot.policies.factory import get_policy_class, make_pre_post_processors
    from lerobot.policies.smolvla.configuration_smolvla import SmolVLAConfig

    cameras, state_dim, action_dim = PRESETS[preset]
    folder = Path(folder).resolve()
    backbone = save_tiny_backbone(folder / BACKBONE_DIR)
    inputs = {
        key: PolicyFeature(type=FeatureType.VISUAL, shape=(3, h, w))
        for key, (h, w) in cameras.items()
    }
    inputs[OBS_STATE] = PolicyFeature(type=FeatureType.STATE, shape=(state_dim,))
    outputs = {"action": PolicyFeature(type=FeatureType.ACTION, shape=(action_dim,))}
    config: Any = SmolVLAConfig(
        device="cpu", input_features=inputs, output_features=outputs,
        vlm_model_name=str(backbone), load_vlm_weights=False, num_vlm_layers=4,
        resize_imgs_with_padding=(64, 64), chunk_size=chunk_size,
        n_action_steps=n_action_steps, num_steps=2, max_state_dim=16, max_action_dim=16,
    )  # fmt: skip
    torch.manual_seed(seed)
    policy = get_policy_class("smolvla")(config)
    stats = act_stats({"any": (1, 1)}, state_dim, action_dim)
    image_stats = stats.pop("observation.images.any")  # ImageNet's (SmolVLA: IDENTITY)
    stats.update({key: image_stats for key in cameras})
    pre, post = make_pre_post_processors(config, dataset_stats=stats)
    policy.save_pretrained(folder)
    pre.save_pretrained(folder)
    post.save_pretrained(folder)
    return folder


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("out", type=Path)
    parser.add_argument("--preset", choices=sorted(PRESETS), default="libero")
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args(argv)
    print(build_random_smolvla_checkpoint(args.out, preset=args.preset, seed=args.seed))


if __name__ == "__main__":
    main()
