"""Train a LeRobot policy with LeRobot's own training script (`lerobot-train`) on CPU.

    python scripts/train_lerobot.py --dataset.repo_id=metasim/tabletop \
        --dataset.root=runs/demos --policy.type=act --output_dir=runs/act ...

Every argument goes to `lerobot.scripts.lerobot_train` unchanged. This wrapper only makes
`import torchvision` work next to metasim's CPU torch first (see
metasim.policies.lerobot_runner._prepare_torchvision) and keeps everything offline.
The checkpoint lands in OUTPUT_DIR/checkpoints/<step>/pretrained_model, the folder
`metasim eval policy=lerobot policy.path=...` loads. scripts/train_act.sh has the command
used for docs/learned_policy.md.
"""

from __future__ import annotations

import os

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("HF_DATASETS_OFFLINE", "1")
os.environ.setdefault("WANDB_MODE", "disabled")


def main() -> None:
    from metasim.policies.lerobot_runner import import_lerobot

    import_lerobot()
    from lerobot.scripts.lerobot_train import main as lerobot_train

    lerobot_train()


if __name__ == "__main__":
    main()
