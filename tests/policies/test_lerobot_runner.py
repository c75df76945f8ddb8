"""LeRobotRunner on a small random ACT checkpoint built with LeRobot's own API."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest

pytest.importorskip("lerobot")

import torch

from metasim.errors import MetasimInputError
from metasim.policies.lerobot_runner import (
    CONFIG_FILE,
    MODEL_FILE,
    POSTPROCESSOR_FILE,
    PREPROCESSOR_FILE,
    LeRobotRunner,
)
from metasim.policies.lerobot_testing import (
    DELTA_STD,
    GRIPPER_MEAN,
    GRIPPER_STD,
    IMAGENET_MEAN,
    IMAGENET_STD,
    build_random_act_checkpoint,
    main,
)

FRONT = "observation.images.front"
WRIST = "observation.images.wrist"
STATE = "observation.state"
CAMERAS = {"front": (32, 32), "wrist": (24, 40)}  # small images keep the ResNet cheap


@pytest.fixture(scope="module", autouse=True)
def one_thread() -> Iterator[None]:
    """Tiny convolutions: one thread avoids OpenMP waits on a busy 2-core machine."""
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(threads)


@pytest.fixture(scope="module")
def ckpt(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return build_random_act_checkpoint(tmp_path_factory.mktemp("act"), cameras=CAMERAS, seed=0)


@pytest.fixture(scope="module")
def other_ckpt(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Seed 1, same shapes, written by the command-line entry point."""
    out = tmp_path_factory.mktemp("other")
    cams = [f"--camera={name}={h}x{w}" for name, (h, w) in CAMERAS.items()]
    assert main([str(out), "--seed", "1", *cams]) == 0
    return out


@pytest.fixture(scope="module")
def runner(ckpt: Path) -> LeRobotRunner:
    return LeRobotRunner(ckpt)


def make_batch(size: int = 4, seed: int = 0) -> dict[str, np.ndarray]:
    rng = np.random.default_rng(seed)
    return {
        FRONT: rng.integers(0, 256, (size, 32, 32, 3), dtype=np.uint8),
        WRIST: rng.integers(0, 256, (size, 24, 40, 3), dtype=np.uint8),
        STATE: rng.normal(size=(size, 8)).astype(np.float32),
    }


def linked_copy(src: Path, dst: Path, *, skip: str = "") -> Path:
    """`src` as symlinks in `dst` (no 45 MB copies), leaving out the file `skip`."""
    dst.mkdir()
    for f in src.iterdir():
        if f.name != skip:
            (dst / f.name).symlink_to(f)
    return dst


@pytest.mark.slow
def test_properties(runner: LeRobotRunner) -> None:
    assert runner.policy_type == "act"
    assert runner.image_keys == (FRONT, WRIST)
    assert runner.image_shapes == {FRONT: (3, 32, 32), WRIST: (3, 24, 40)}
    assert runner.state_dim == 8
    assert runner.env_state_dim is None
    assert runner.action_dim == 7
    assert runner.chunk_size == 10
    assert runner.n_action_steps == 5
    assert runner.input_shapes == {FRONT: (32, 32, 3), WRIST: (24, 40, 3), STATE: (8,)}


def test_select_action_pops_the_chunk_and_reset_clears_the_queue(runner: LeRobotRunner) -> None:
    b1, b2 = make_batch(seed=1), make_batch(seed=2)
    chunk1, chunk2 = runner.predict_chunk(b1), runner.predict_chunk(b2)
    assert chunk1.shape == (4, 10, 7) and chunk1.dtype == np.float32
    assert not np.allclose(chunk1, chunk2)

    runner.reset()
    steps = [runner.select_action(b1)] + [runner.select_action(b2) for _ in range(4)]
    assert steps[0].shape == (4, 7) and steps[0].dtype == np.float32
    # n_action_steps=5 actions come from b1's chunk even though b2 was passed after it
    np.testing.assert_allclose(np.stack(steps, axis=1), chunk1[:, :5], atol=1e-6)
    # the queue is empty now: the next call predicts from b2
    np.testing.assert_allclose(runner.select_action(b2), chunk2[:, 0], atol=1e-6)

    runner.select_action(b2)  # queue holds b2's actions 2..4
    runner.reset()
    np.testing.assert_allclose(runner.select_action(b1), chunk1[:, 0], atol=1e-6)
    runner.reset()


def test_normalization_is_applied(runner: LeRobotRunner) -> None:
    batch = make_batch(seed=3)
    # preprocessor: uint8 HWC -> float CHW / 255, then ImageNet mean/std; state mean 0 std 1
    obs = runner._to_lerobot(batch)
    with torch.inference_mode():
        pre = runner.preprocessor(obs)
        raw = runner.policy.predict_action_chunk(pre).numpy()
    image = batch[FRONT].transpose(0, 3, 1, 2) / 255.0
    mean = np.array(IMAGENET_MEAN).reshape(1, 3, 1, 1)
    std = np.array(IMAGENET_STD).reshape(1, 3, 1, 1)
    np.testing.assert_allclose(pre[FRONT].numpy(), (image - mean) / std, atol=1e-5)
    np.testing.assert_allclose(pre[STATE].numpy(), batch[STATE], atol=1e-6)

    # postprocessor: action * std + mean
    act_mean = np.array([0.0] * 6 + [GRIPPER_MEAN])
    act_std = np.array([DELTA_STD] * 6 + [GRIPPER_STD])
    chunk = runner.predict_chunk(batch)
    np.testing.assert_allclose(chunk, raw * act_std + act_mean, atol=1e-6)
    assert np.abs(raw).max() > 0.05  # the model's output is at its own scale...
    assert np.abs(chunk[..., :6]).max() < 10 * DELTA_STD  # ...the actions at the stats'
    assert np.abs(chunk[..., 6] - GRIPPER_MEAN).max() < 10 * GRIPPER_STD


def test_rows_are_independent_of_batch_size(runner: LeRobotRunner) -> None:
    batch = make_batch(seed=4)
    one = {key: value[2:3] for key, value in batch.items()}
    np.testing.assert_allclose(
        runner.predict_chunk(one)[0], runner.predict_chunk(batch)[2], atol=1e-5
    )


def test_same_seed_same_policy(
    ckpt: Path, other_ckpt: Path, runner: LeRobotRunner, tmp_path: Path
) -> None:
    from safetensors.torch import load_file

    batch = make_batch(seed=5)
    again = LeRobotRunner(ckpt)
    np.testing.assert_array_equal(again.predict_chunk(batch), runner.predict_chunk(batch))

    same = build_random_act_checkpoint(tmp_path / "same", cameras=CAMERAS, seed=0)
    weights, same_weights = load_file(ckpt / MODEL_FILE), load_file(same / MODEL_FILE)
    assert weights.keys() == same_weights.keys()
    assert all(torch.equal(weights[k], same_weights[k]) for k in weights)

    other = LeRobotRunner(other_ckpt)
    assert other.image_shapes == runner.image_shapes
    assert not np.allclose(other.predict_chunk(batch), runner.predict_chunk(batch))


def test_act_needs_state(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="state_dim"):
        build_random_act_checkpoint(tmp_path, state_dim=0)


def test_pretrained_backbone_is_never_downloaded(
    ckpt: Path, runner: LeRobotRunner, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A trained ACT's config names ImageNet weights; the checkpoint's own weights are used."""
    import torchvision.models._api as tv_api

    def no_download(*args: object, **kwargs: object) -> None:
        raise AssertionError("tried to download backbone weights")

    monkeypatch.setattr(tv_api, "load_state_dict_from_url", no_download)
    monkeypatch.setattr(torch.hub, "load_state_dict_from_url", no_download)
    folder = linked_copy(ckpt, tmp_path / "ck", skip=CONFIG_FILE)
    config = json.loads((ckpt / CONFIG_FILE).read_text())
    config["pretrained_backbone_weights"] = "ResNet18_Weights.IMAGENET1K_V1"
    (folder / CONFIG_FILE).write_text(json.dumps(config))
    batch = make_batch(seed=6)
    np.testing.assert_array_equal(
        LeRobotRunner(folder).predict_chunk(batch), runner.predict_chunk(batch)
    )


@pytest.mark.parametrize(
    ("change", "message"),
    [
        (lambda b: b.pop(WRIST), f"missing input '{WRIST}'"),
        (lambda b: b.update({STATE: b[STATE][:, :7]}), f"input '{STATE}' has shape (4, 7)"),
        (lambda b: b.update({FRONT: b[FRONT][:, :, :30]}), f"input '{FRONT}' has shape"),
        (lambda b: b.update({FRONT: b[FRONT][0]}), f"input '{FRONT}' has shape (32, 32, 3)"),
        (lambda b: b.update({FRONT: b[FRONT] / 255.0}), f"input '{FRONT}' must be uint8"),
        (lambda b: b.update({STATE: b[STATE][:3]}), f"input '{STATE}' has batch size 3"),
        (lambda b: b.update({"observation.images.top": b[FRONT]}), "unexpected input"),
    ],
)
def test_bad_inputs_name_the_key(runner: LeRobotRunner, change, message: str) -> None:
    batch = make_batch()
    change(batch)
    with pytest.raises(ValueError) as info:
        runner.predict_chunk(batch)
    assert message in str(info.value)


def test_batch_size_change_needs_reset(runner: LeRobotRunner) -> None:
    runner.reset()
    runner.select_action(make_batch(4))
    with pytest.raises(ValueError, match="without reset"):
        runner.select_action(make_batch(2))
    runner.reset()
    assert runner.select_action(make_batch(2)).shape == (2, 7)
    runner.reset()


@pytest.mark.parametrize("name", [CONFIG_FILE, MODEL_FILE, PREPROCESSOR_FILE, POSTPROCESSOR_FILE])
def test_missing_file(ckpt: Path, tmp_path: Path, name: str) -> None:
    folder = linked_copy(ckpt, tmp_path / "ck", skip=name)
    with pytest.raises(MetasimInputError) as info:
        LeRobotRunner(folder)
    assert info.value.source == str(folder)
    assert info.value.problems == [f"{name} is missing"]


def test_missing_processor_state(ckpt: Path, tmp_path: Path) -> None:
    state = next(ckpt.glob("policy_postprocessor_*.safetensors")).name
    folder = linked_copy(ckpt, tmp_path / "ck", skip=state)
    with pytest.raises(MetasimInputError) as info:
        LeRobotRunner(folder)
    assert info.value.problems == [f"{state} is missing (named by {POSTPROCESSOR_FILE})"]


def test_not_a_checkpoint(tmp_path: Path) -> None:
    with pytest.raises(MetasimInputError, match="folder does not exist"):
        LeRobotRunner(tmp_path / "nope")
    (tmp_path / "empty").mkdir()
    with pytest.raises(MetasimInputError) as info:
        LeRobotRunner(tmp_path / "empty")
    assert len(info.value.problems) == 4
    (tmp_path / "file").write_text("x")
    with pytest.raises(MetasimInputError, match="not a folder"):
        LeRobotRunner(tmp_path / "file")


@pytest.mark.parametrize("kind", ["other model", "not safetensors"])
def test_wrong_weights(ckpt: Path, tmp_path: Path, kind: str) -> None:
    """A model.safetensors that does not fit: a clear error, never a silent partial load."""
    from safetensors.torch import save_file

    folder = linked_copy(ckpt, tmp_path / "ck", skip=MODEL_FILE)
    if kind == "other model":
        save_file({"model.action_head.weight": torch.zeros(5, 32)}, str(folder / MODEL_FILE))
    else:
        (folder / MODEL_FILE).write_bytes(b"not a safetensors file")
    with pytest.raises(MetasimInputError) as info:
        LeRobotRunner(folder)
    assert info.value.problems[0].startswith(
        "model.safetensors: cannot load it into the policy config.json describes"
    )


def test_old_checkpoint_gets_the_migration_hint(ckpt: Path, tmp_path: Path) -> None:
    folder = tmp_path / "ck"
    folder.mkdir()
    for name in (CONFIG_FILE, MODEL_FILE):
        (folder / name).symlink_to(ckpt / name)
    with pytest.raises(MetasimInputError) as info:
        LeRobotRunner(folder)
    assert info.value.problems == [
        f"{PREPROCESSOR_FILE} is missing",
        f"{POSTPROCESSOR_FILE} is missing",
    ]
    assert "migrate_policy_normalization" in str(info.value)


def test_the_task_text_reaches_lerobot_as_its_eval_sends_it(
    runner: LeRobotRunner, monkeypatch: pytest.MonkeyPatch
) -> None:
    """`task` (one string per row) goes into LeRobot's preprocessor with the tensors, as
    lerobot_eval's `add_envs_task` adds it for every policy; without it, "" per row. ACT
    ignores it: the same chunk either way."""
    seen: list[list[str]] = []
    pre = runner.preprocessor

    def spy(obs: dict) -> dict:
        seen.append(list(obs["task"]))
        return pre(obs)

    monkeypatch.setattr(runner, "preprocessor", spy)
    texts = ["put the cube", "in the bin", "", "now"]
    with_task = runner.predict_chunk({**make_batch(), "task": texts})
    without = runner.predict_chunk(make_batch())
    assert seen == [texts, [""] * 4]
    np.testing.assert_array_equal(with_task, without)
    with pytest.raises(ValueError, match="'task' has 3 texts"):
        runner.predict_chunk({**make_batch(), "task": texts[:3]})
