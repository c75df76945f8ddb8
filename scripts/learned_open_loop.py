"""A LeRobot checkpoint's open-loop error on its own demonstrations: each episode's
recorded frames go through the checkpoint as `metasim eval` feeds them (metasim's
`LeRobotRunner`: the checkpoint's own pre- and post-processors, `select_action` with its
action queue), and each action is set against the one recorded at that frame.

It tells a policy that has not fit its data (large errors on the frames it was trained
on) from one that fits them but fails in closed loop (small errors here, failures in
`metasim eval`). No simulator runs; a few seconds per episode.

  .venv/bin/python scripts/learned_open_loop.py CHECKPOINT DATASET_ROOT \
      --episodes 0,60,120 --frames 40 [--repo-id metasim/libero_90]

Prints one JSON object: per episode and in all, the mean absolute error per action
dimension next to the mean |action| recorded there.
"""

from __future__ import annotations

import argparse
import json
import os

import numpy as np

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("HF_DATASETS_OFFLINE", "1")


def _frame(item: dict, image_keys: tuple[str, ...], state_key: str | None) -> dict:
    """One dataset frame as a one-row numpy batch in metasim's policy layout."""
    batch: dict = {}
    for key in image_keys:
        chw = item[key].numpy()  # (C, H, W) float in [0, 1]
        batch[key] = np.round(chw.transpose(1, 2, 0) * 255.0).astype(np.uint8)[None]
    if state_key is not None:
        batch[state_key] = item[state_key].numpy().astype(np.float32)[None]
    batch["task"] = [str(item.get("task", ""))]
    return batch


def _r(values: np.ndarray) -> list[float]:
    return [round(float(v), 3) for v in values]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("checkpoint", help="a pretrained_model folder")
    parser.add_argument("dataset", help="the LeRobot dataset's root folder")
    parser.add_argument("--repo-id", default="metasim/dataset", help="any name (local root)")
    parser.add_argument("--episodes", default="0", help="comma-separated episode indices")
    parser.add_argument("--frames", type=int, default=40, help="first frames per episode")
    args = parser.parse_args()

    from lerobot.datasets.lerobot_dataset import LeRobotDataset

    from metasim.policies.lerobot_runner import OBS_STATE, LeRobotRunner

    runner = LeRobotRunner(args.checkpoint, any_image_size=True)
    dataset = LeRobotDataset(args.repo_id, root=args.dataset)
    state_key = OBS_STATE if runner.state_dim is not None else None
    starts = dataset.meta.episodes["dataset_from_index"]
    ends = dataset.meta.episodes["dataset_to_index"]
    out: dict = {"checkpoint": args.checkpoint, "episodes": {}}
    errors_all, actions_all = [], []
    for ep in (int(e) for e in args.episodes.split(",")):
        runner.reset()
        errors, actions = [], []
        for idx in range(int(starts[ep]), min(int(ends[ep]), int(starts[ep]) + args.frames)):
            item = dataset[idx]
            predicted = runner.select_action(_frame(item, runner.image_keys, state_key))[0]
            recorded = item["action"].numpy()
            errors.append(np.abs(predicted - recorded))
            actions.append(np.abs(recorded))
        err, act = np.mean(errors, axis=0), np.mean(actions, axis=0)
        out["episodes"][ep] = {"mae": _r(err), "mean_abs_action": _r(act)}
        errors_all += errors
        actions_all += actions
    out["all"] = {
        "mae": _r(np.mean(errors_all, axis=0)),
        "mean_abs_action": _r(np.mean(actions_all, axis=0)),
        "frames": len(errors_all),
    }
    print(json.dumps(out))


if __name__ == "__main__":
    main()
