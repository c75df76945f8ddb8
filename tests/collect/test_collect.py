"""`metasim collect` writes a LeRobot dataset that LeRobot's dataset class loads as
declared; the same settings give the same dataset for any num_envs; a resume adds only
what is missing and undoes a killed batch; bad options exit 2."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import numpy as np
import pytest

from metasim.cli.main import main
from metasim.collect.dataset import COLLECT_FILE, PENDING, DatasetWriter
from metasim.collect.recording import frame_of
from metasim.envs.vec_env import episode_seed
from metasim.paths import SCENES
from tests.collect.collect_helpers import REPO, SIZE, collect, columns, lines, load

# Real collects with LeRobot's dataset writer (~20 s each here): the slow lane.
pytestmark = pytest.mark.slow


def test_lerobot_loads_the_dataset_as_declared(demos: Path) -> None:
    ds = load(demos)
    assert ds.num_episodes == 4 and ds.fps == 20  # lift_cube's control rate
    feats = ds.features
    for cam in ("front", "wrist"):
        key = f"observation.images.{cam}"
        assert feats[key]["dtype"] == "image" and tuple(feats[key]["shape"]) == (SIZE, SIZE, 3)
    assert tuple(feats["observation.state"]["shape"]) == (8,)
    assert feats["observation.state"]["names"][-1] == "gripper"
    assert feats["action"]["names"] == ["x", "y", "z", "r0", "r1", "r2", "gripper"]
    item = ds[0]
    assert tuple(item["observation.images.front"].shape) == (3, SIZE, SIZE)
    assert tuple(item["observation.state"].shape) == (8,) and tuple(item["action"].shape) == (7,)
    assert item["task"] == "pick up the red cube"
    cols = columns(demos)
    assert set(np.unique(cols["action"][:, 6])) <= {0.0, 1.0}  # the expert's gripper, 1 open
    assert np.abs(cols["action"][:, :3]).max() > 1e-3  # the arm moves
    assert cols["image"].std() > 1.0  # rendered pixels, not a blank image
    state0 = cols["observation.state"][cols["frame_index"] == 0]
    assert np.allclose(state0[:, -1], 1.0, atol=0.05)  # every episode starts gripper open
    rows = lines(demos)
    assert [r["episode"] for r in rows] == [0, 1, 2, 3]
    assert [r["seed"] for r in rows] == [episode_seed(0, k) for k in range(4)]
    assert all(r["success"] and r["factors"] == {} and r["cell"] == "nominal" for r in rows)
    assert [r["dataset_episode"] for r in rows] == [0, 1, 2, 3]
    lengths = [int(n) for n in ds.meta.episodes["length"]]
    assert lengths == [r["steps"] for r in rows]  # one frame per step the expert took
    spec = json.loads((demos / "meta" / COLLECT_FILE).read_text())
    assert spec["action_convention"]["gripper"] == "open1" and spec["fps"] == 20


@pytest.mark.slow  # a second collect (~30 s on the shared CPU)
def test_same_seeds_same_dataset_whatever_num_envs(demos: Path, five: Path) -> None:
    a, b = columns(demos), columns(five)  # 2 envs for 4 episodes, 3 envs for 5
    first4 = b["episode_index"] < 4
    assert first4.sum() == len(a["index"]) and not first4.all()
    for key in a:
        np.testing.assert_array_equal(a[key], b[key][first4], err_msg=key)


@pytest.fixture(scope="module")
def resumed(demos: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A copy of `demos`, resumed after a killed batch and asked for 5 episodes."""
    root = tmp_path_factory.mktemp("resume") / "demos"
    shutil.copytree(demos, root)
    before = sorted(p.stat().st_mtime_ns for p in (root / "data").rglob("*.parquet"))
    assert collect(root) == 0  # everything there: nothing runs, nothing changes
    assert len(lines(root)) == 4 and load(root).num_episodes == 4
    assert sorted(p.stat().st_mtime_ns for p in (root / "data").rglob("*.parquet")) == before
    # A run killed mid-batch: an episode saved by LeRobot, the batch never committed.
    spec = json.loads((root / "meta" / COLLECT_FILE).read_text())
    writer = DatasetWriter(root, REPO, spec)
    writer.begin()
    obs = {
        "observation.images.front": np.zeros((1, SIZE, SIZE, 3), np.uint8),
        "observation.images.wrist": np.zeros((1, SIZE, SIZE, 3), np.uint8),
        "observation.state": np.zeros((1, 8)),
    }
    frame = frame_of(obs, 0, np.zeros(7), "pick up the red cube")
    writer.add([frame] * 3, {"task": "lift_cube", "cell": "nominal", "episode": 99}, keep=True)
    writer.ds.finalize()
    writer.close()
    assert (root / PENDING).is_dir() and len(list((root / "data").rglob("*.parquet"))) == 2
    assert collect(root, episodes=5) == 0  # restores, then runs episode 4 only
    return root


def test_resume_adds_only_what_is_missing_and_undoes_a_killed_batch(
    demos: Path, resumed: Path
) -> None:
    assert not (resumed / PENDING).exists()
    rows = lines(resumed)
    assert [r["episode"] for r in rows] == [0, 1, 2, 3, 4]
    assert lines(demos) == rows[:4]  # the committed lines untouched
    ds = load(resumed)
    assert ds.num_episodes == 5 and len(ds) == sum(r["steps"] for r in rows)
    old, new = columns(demos), columns(resumed)
    first4 = new["episode_index"] < 4
    for key in old:  # the committed episodes untouched, the killed one's frames gone
        np.testing.assert_array_equal(old[key], new[key][first4], err_msg=key)


@pytest.mark.slow  # needs the 5-episode collect of `five`
def test_a_resumed_dataset_equals_a_fresh_one(resumed: Path, five: Path) -> None:
    new, fresh = columns(resumed), columns(five)
    for key in fresh:
        np.testing.assert_array_equal(new[key], fresh[key], err_msg=key)


def test_commits_every_n_episodes_give_the_same_dataset(tmp_path: Path, five: Path) -> None:
    """commit_every=2: episodes 0-4 committed as 0-1, 2-3, 4 (a run cut off keeps the
    chunks before), the dataset the same as one commit's."""
    root = tmp_path / "chunks"
    commits: list[int] = []
    real = DatasetWriter.commit

    def counted(self: DatasetWriter) -> None:
        commits.append(len(self.records()))
        real(self)

    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(DatasetWriter, "commit", counted)
        assert collect(root, "commit_every=2", episodes=5, num_envs=2) == 0
    assert commits == [0, 2, 4]  # the lines committed before each commit
    assert [r["episode"] for r in lines(root)] == [0, 1, 2, 3, 4]
    new, fresh = columns(root), columns(five)
    for key in fresh:
        np.testing.assert_array_equal(new[key], fresh[key], err_msg=key)


def test_failed_episodes_are_left_out_unless_keep_all(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    text = (SCENES / "lift_cube.yaml").read_text()
    assert "time_limit: 8.0" in text
    scene = tmp_path / "lift_short.yaml"  # 0.5 s: the expert cannot lift in time
    scene.write_text(text.replace("time_limit: 8.0", "time_limit: 0.5"))
    base = ["collect", "--quiet", f"suite.tasks=[{scene}]", "episodes=2", f"image_size={SIZE}"]
    assert main([*base, f"out={tmp_path / 'ok'}"]) == 1  # nothing kept: no dataset
    err = capsys.readouterr().err
    assert "no episode is in the dataset (2 run, none kept with keep=success)" in err
    assert "keep=all" in err and "Traceback" not in err
    rows = lines(tmp_path / "ok")
    assert [r["success"] for r in rows] == [False, False]
    assert [r["dataset_episode"] for r in rows] == [None, None]
    assert not (tmp_path / "ok" / "data").exists()  # no episode kept: no LeRobot data yet
    assert main([*base, "keep=all", f"out={tmp_path / 'all'}"]) == 0
    assert [r["dataset_episode"] for r in lines(tmp_path / "all")] == [0, 1]
    ds = load(tmp_path / "all")
    assert ds.num_episodes == 2 and len(ds) == 2 * 10  # 0.5 s at 20 Hz


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["keep=maybe"], "keep"),
        (["image_size=0"], "image_size"),
        (["commit_every=-1"], "commit_every"),
        (["cameras=[nope]"], "nope"),
        (["cameras=[front"], "cameras=[front"),
        (["executor=ray"], "executor"),
        (["adaptive=true"], "adaptive"),
        (["policy.nonsense=1"], "policy.nonsense"),
        # issue #33 item 6: refused before the dataset's folder is written
        (["policy=lerobot", "policy.path=/nonexistent"], "/nonexistent: folder does not exist"),
        (["policy=metaworld_expert"], "'mocap_delta' cannot drive a 'position' robot"),
    ],
)
def test_bad_options_exit_2(
    args: list[str], message: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert collect(tmp_path / "d", *args, episodes=1) == 2
    err = capsys.readouterr().err
    assert message in err and "Traceback" not in err
    assert not (tmp_path / "d").exists()  # refused before anything is written


def test_a_run_refused_as_it_starts_leaves_no_folder(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A policy that refuses the scene when it is made (after the dataset's folder was
    opened) leaves no folder, and the corrected rerun into the same out= collects
    (issue #33 item 6)."""
    out = tmp_path / "d"
    assert collect(out, "policy=libero_expert", episodes=1) == 2
    err = capsys.readouterr().err
    assert "the libero_expert drives LIBERO's osc_pose controller" in err, err
    assert not out.exists()
    assert collect(out, episodes=1) == 0
    assert load(out).meta.total_episodes == 1


def test_out_is_required(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["collect", "--quiet", "suite.tasks=[lift_cube]", "episodes=1"]) == 2
    assert "out=DIR" in capsys.readouterr().err


def test_refuses_a_folder_that_is_not_a_dataset(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    (tmp_path / "d").mkdir()
    (tmp_path / "d" / "notes.txt").write_text("mine")
    assert collect(tmp_path / "d", episodes=1) == 2
    assert "not empty" in capsys.readouterr().err
    assert sorted(p.name for p in (tmp_path / "d").iterdir()) == ["notes.txt"]


def test_refuses_other_settings_and_a_second_writer(
    demos: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    root = tmp_path / "demos"
    shutil.copytree(demos, root)
    assert collect(root, "image_size=48") == 2
    assert "other settings (features" in capsys.readouterr().err
    spec = json.loads((root / "meta" / COLLECT_FILE).read_text())
    writer = DatasetWriter(root, REPO, spec)  # holds the folder's lock
    try:
        assert collect(root, episodes=5) == 2
        assert "another metasim collect is writing this folder" in capsys.readouterr().err
    finally:
        writer.close()
    assert len(lines(root)) == 4


def _info_list(root: Path) -> str:
    (root / "meta" / "info.json").write_text("[]\n")
    return "meta/info.json"


def _truncate(root: Path) -> str:
    data = sorted((root / "data").rglob("*.parquet"))[0]
    data.write_bytes(data.read_bytes()[: data.stat().st_size // 2])
    return str(data.relative_to(root))


def _bad_line(root: Path) -> str:
    with (root / "meta" / "metasim_episodes.jsonl").open("a") as f:
        f.write('{"task": "lift_cube", "cell": \n')
    return "meta/metasim_episodes.jsonl: line 5"


@pytest.mark.parametrize(
    "damage",
    [_info_list, _truncate, _bad_line],
    ids=["info_is_a_list", "truncated_parquet", "bad_episode_line"],
)
def test_a_damaged_dataset_is_refused_and_kept(
    damage, demos: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A resume (here with nothing left to run) from a dataset LeRobot cannot load is
    refused with exit 2 naming the file, and changes nothing (issue #33 item 2: it
    exited 0 and printed the dataset's path)."""
    root = tmp_path / "demos"
    shutil.copytree(demos, root)
    named = damage(root)
    before = {p: p.read_bytes() for p in root.rglob("*") if p.is_file() and p.name != "run.lock"}
    assert collect(root) == 2
    err = capsys.readouterr().err
    assert err.startswith(f"error: {root / named.split(':')[0]}") and named in err, err
    assert "Restore the file" in err and "Traceback" not in err
    assert len(err.strip().splitlines()) == 1, err
    after = {p: p.read_bytes() for p in root.rglob("*") if p.is_file() and p.name != "run.lock"}
    assert after == before


def test_an_episodes_file_that_is_a_symlink_is_refused_and_its_target_kept(
    demos: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A resume that would append episodes to meta/metasim_episodes.jsonl when that file
    is a symlink to a file outside the dataset: exit 2 naming the file, the target
    unchanged (issue 47: the append followed the link)."""
    root = tmp_path / "demos"
    shutil.copytree(demos, root)
    precious = tmp_path / "precious.txt"
    precious.write_bytes((root / "meta" / "metasim_episodes.jsonl").read_bytes())
    before = precious.read_bytes()
    episodes = root / "meta" / "metasim_episodes.jsonl"
    episodes.unlink()
    episodes.symlink_to(precious)
    assert collect(root, episodes=5) == 2
    err = capsys.readouterr().err
    assert err.startswith(f"error: {episodes}: expected the append-only results file"), err
    assert "symbolic link" in err and len(err.strip().splitlines()) == 1, err
    assert precious.read_bytes() == before and episodes.is_symlink()


def test_a_run_that_leaves_a_damaged_dataset_does_not_report_success(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """What a run leaves is verified too: a data file damaged after its batch commits (an
    injected fault: a full disk, another process) fails the run with exit 2 naming it."""
    commit = DatasetWriter.commit

    def commit_then_damage(self: DatasetWriter) -> None:
        commit(self)
        _truncate(self.root)

    monkeypatch.setattr(DatasetWriter, "commit", commit_then_damage)
    assert collect(tmp_path / "d", episodes=1, num_envs=1) == 2
    err = capsys.readouterr().err
    assert "data/chunk-000/file-000.parquet: not a readable parquet file" in err, err
