"""`metasim collect` records Meta-World: the package's scripted expert (reference venv) on
reach-v3, its 4-D `mocap_delta` actions named by their convention, written as a LeRobot
dataset that LeRobot's own dataset class loads as declared (two episodes, one camera,
32 px: about 15 s)."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from metasim.cli.main import main
from metasim.collect.dataset import COLLECT_FILE, EPISODES_FILE

pytest.importorskip("lerobot")

TASK, CAMERA, SIZE = "reach-v3", "corner4", 32


@pytest.mark.reference
def test_collects_a_metaworld_dataset_lerobot_loads(mw_python: Path, tmp_path: Path) -> None:
    from lerobot.datasets.lerobot_dataset import LeRobotDataset

    out = tmp_path / "mw"
    args = [
        "collect", "--quiet", "suite=metaworld_mt10", "policy=metaworld_expert",
        f"suite.tasks=[metaworld:{TASK}]", "episodes=2", "num_envs=2", f"image_size={SIZE}",
        f"cameras=[{CAMERA}]", f"out={out}",
    ]  # fmt: skip
    assert main(args) == 0
    ds = LeRobotDataset("metasim/metaworld", root=out)
    assert ds.num_episodes == 2 and ds.fps == 80  # Meta-World's control rate
    assert ds.features["action"]["names"] == ["x", "y", "z", "gripper"]
    assert tuple(ds.features["action"]["shape"]) == (4,)
    key = f"observation.images.{CAMERA}"
    assert tuple(ds.features[key]["shape"]) == (SIZE, SIZE, 3)
    item = ds[0]
    assert tuple(item["action"].shape) == (4,) and tuple(item[key].shape) == (3, SIZE, SIZE)
    assert item["task"] == "reach"
    data = ds.hf_dataset.with_format("numpy")
    actions = np.stack(list(data["action"]))
    # the expert's actions as it gave them (the package's policies exceed [-1, 1]; the
    # env clips xyz to [-1, 1] when it applies them, as the package does)
    assert np.isfinite(actions).all() and np.abs(actions[:, :3]).max() > 0.1
    rows = [json.loads(x) for x in (out / "meta" / EPISODES_FILE).read_text().splitlines()]
    assert [r["success"] for r in rows] == [True, True]
    assert [int(n) for n in ds.meta.episodes["length"]] == [r["steps"] for r in rows]
    spec = json.loads((out / "meta" / COLLECT_FILE).read_text())
    assert spec["action_convention"]["space"] == "mocap_delta"


def _collect_drawer_close(out: Path, *extra: str) -> Path:
    args = [
        "collect", "--quiet", "suite=metaworld_mt10", "policy=metaworld_expert",
        "suite.tasks=[metaworld:drawer-close-v3]", "episodes=1", "num_envs=1",
        "record=lerobot_metaworld", f"out={out}", *extra,
    ]  # fmt: skip
    assert main(args) == 0
    return out


@pytest.fixture(scope="module")
def lerobot_mw(mw_python: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """One drawer-close episode recorded as `record=lerobot_metaworld` (480x480 frames)."""
    return _collect_drawer_close(tmp_path_factory.mktemp("mw") / "mw-lerobot")


@pytest.mark.reference
def test_record_lerobot_metaworld_is_lerobots_own_format(lerobot_mw: Path) -> None:
    """`record=lerobot_metaworld` writes LeRobot's Meta-World format: the policy features
    LeRobot derives from the dataset are the ones it derives from its own Meta-World env
    config (observation.image 3x480x480, observation.state 4, action 4), the task is
    LeRobot's description, and every frame is what the preset hands a checkpoint at that
    step: the image the 180-degree-rotated corner4 render, the state agent_pos."""
    from lerobot.datasets.lerobot_dataset import LeRobotDataset
    from lerobot.datasets.utils import dataset_to_policy_features
    from lerobot.envs.configs import MetaworldEnv
    from lerobot.envs.utils import env_to_policy_features

    out = lerobot_mw
    ds = LeRobotDataset("metasim/metaworld", root=out)
    theirs = env_to_policy_features(MetaworldEnv(task="metaworld-drawer-close-v3"))
    ours = dataset_to_policy_features(ds.features)
    assert {k: (v.type, v.shape) for k, v in ours.items()} == {
        k: (v.type, v.shape) for k, v in theirs.items()
    }
    item = ds[0]
    import lerobot.envs

    config = Path(lerobot.envs.__file__).parent / "metaworld_config.json"
    assert item["task"] == json.loads(config.read_text())["TASK_DESCRIPTIONS"]["drawer-close-v3"]
    spec = json.loads((out / "meta" / COLLECT_FILE).read_text())
    assert spec["record"] == "lerobot_metaworld" and "metaworld_agent_pos" in spec["state"]
    # the state is the hand position (the first 3 of agent_pos), not joint positions
    state = np.stack(list(ds.hf_dataset.with_format("numpy")["observation.state"]))
    assert state.shape[1] == 4 and np.all(np.abs(state[:, :3]).max(axis=0) < 1.0)
    assert abs(state[0, 2] - 0.2) < 0.1  # Meta-World's hand starts ~0.2 m above the table


@pytest.mark.reference
def test_record_image_size_is_what_the_policys_own_resize_computes(
    lerobot_mw: Path, tmp_path: Path
) -> None:
    """`record=lerobot_metaworld image_size=80`: each frame is the preset's 480x480 frame
    as torchvision's `Resize((80, 80))` (what LeRobot's diffusion `resize_shape` applies)
    shrinks it, to uint8 rounding, step for step of the same episode."""
    import torch
    import torchvision
    from lerobot.datasets.lerobot_dataset import LeRobotDataset

    small = _collect_drawer_close(tmp_path / "mw-80", "image_size=80")
    big_ds = LeRobotDataset("metasim/metaworld", root=lerobot_mw)
    small_ds = LeRobotDataset("metasim/metaworld", root=small)
    assert small_ds.num_frames == big_ds.num_frames  # the same episode
    assert tuple(small_ds.features["observation.image"]["shape"]) == (80, 80, 3)
    resize = torchvision.transforms.Resize((80, 80))
    worst = 0.0
    for i in range(0, big_ds.num_frames, 13):
        big, got = big_ds[i]["observation.image"], small_ds[i]["observation.image"]
        assert torch.equal(big_ds[i]["observation.state"], small_ds[i]["observation.state"])
        want = resize(big[None])[0]
        worst = max(worst, float((want - got).abs().max()) * 255)
    assert worst <= 2.0, worst  # PIL's two uint8 passes against torch's float resize


@pytest.mark.reference  # the task loads from the Meta-World reference venv
@pytest.mark.parametrize(
    ("extra", "words"),
    [
        (["record=lerobot_libero"], "record=lerobot_libero"),  # another action convention
        (["record=no_such_preset"], "no policy preset 'no_such_preset'"),
        (["record=lerobot_libero", "image_size=64"], "record=lerobot_libero"),
        (["record=lerobot_metaworld", "cameras=[corner4]"], "cameras: record="),
        (["record=openpi_libero"], "no LeRobot feature name"),
    ],
)
def test_record_refusals_exit_2(
    extra: list[str], words: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "refused"
    args = [
        "collect", "--quiet", "suite=metaworld_mt10", "policy=metaworld_expert",
        "suite.tasks=[metaworld:reach-v3]", "episodes=1", f"out={out}", *extra,
    ]  # fmt: skip
    assert main(args) == 2
    err = capsys.readouterr().err
    assert words in err and "Traceback" not in err
    assert not out.exists()
