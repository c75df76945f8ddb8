"""A collect killed at any step of a batch's commit loses nothing (issue #23, item 1).

Each case forks a child that writes a batch of episodes through `DatasetWriter` (the
real LeRobot writer underneath) and is killed (`os._exit`, no cleanup, its lock dropped
by the kernel) at the i-th file-system change of `commit()`, for every i. The parent
then reruns the batch as `metasim collect` does (episodes whose lines are committed are
not run again) and the folder must equal the one an uninterrupted run writes: the same
files, the same JSON and Parquet contents, and LeRobot's dataset class loads it.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import time
import traceback
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import pytest

pytest.importorskip("lerobot")

import pyarrow.parquet as pq

from metasim.collect.dataset import LOCK, OURS, DatasetWriter, features
from tests.collect.collect_helpers import load
from tests.collect.commit_faults import KILLED, kill_at

SPEC = {
    "features": features(
        {"observation.images.front": (6, 8, 3)},
        {"observation.state": ["q", "gripper"]},
        ["x", "gripper"],
    ),
    "fps": 20,
}
REPO = "metasim/kills"
FIRST = {0: True, 1: False, 2: True}  # episode -> kept: the batch that creates the dataset
NEXT = {3: True, 4: True}  # the batch that continues it


def _frames(episode: int) -> list[dict[str, Any]]:
    """3 + episode frames, every value tied to (episode, frame)."""
    out = []
    for t in range(3 + episode):
        out.append(
            {
                "observation.images.front": np.full((6, 8, 3), 10 * episode + t, np.uint8),
                "observation.state": np.array([episode, t], np.float32),
                "action": np.array([t / 10, episode % 2], np.float32),
                "task": f"task {episode % 2}",
            }
        )
    return out


def _batch(
    root: Path, batch: dict[int, bool], kill: int | None = None, reverse: bool = False
) -> int:
    """Run a batch's episodes not committed yet; with `kill`, die at that change of the
    commit (-1: count the changes; `reverse`: folders listed in reverse order). Returns
    the changes the commit made."""
    writer = DatasetWriter(root, REPO, SPEC)
    try:
        done = {r["episode"] for r in writer.records()}
        todo = [e for e in batch if e not in done]
        if not todo:
            return 0
        writer.begin()
        for e in todo:
            writer.add(_frames(e), {"task": "t", "cell": "nominal", "episode": e}, batch[e])
        if kill is None:
            writer.commit()
            return -1
        with kill_at(kill, reverse) as counter:
            writer.commit()
        return counter.n
    finally:
        writer.close()


def _in_child(fn: Callable[[], object]) -> int:
    """Run `fn` in a forked child; its exit status (KILLED when the fault struck)."""
    pid = os.fork()
    if pid == 0:
        try:
            fn()
        except BaseException:
            traceback.print_exc()
            os._exit(1)
        os._exit(0)
    deadline = time.monotonic() + 120  # a child stuck on a lock a thread held at fork
    while time.monotonic() < deadline:
        done, status = os.waitpid(pid, os.WNOHANG)
        if done:
            return os.waitstatus_to_exitcode(status)
        time.sleep(0.005)
    os.kill(pid, signal.SIGKILL)
    os.waitpid(pid, 0)
    pytest.fail("the child writing the batch hung")


def _files(root: Path) -> list[str]:
    return sorted(
        str(p.relative_to(root))
        for p in root.rglob("*")
        if p.is_file() and p.name != LOCK and not p.name.endswith(".tmp")
    )


def _assert_same(got: Path, want: Path) -> None:
    """The same files with the same contents (JSON and Parquet compared as data)."""
    assert not [n for n in OURS if (got / n).exists()], "a batch copy is left over"
    assert _files(got) == _files(want)
    for rel in _files(want):
        a, b = got / rel, want / rel
        if rel.endswith(".parquet"):
            assert pq.read_table(a).equals(pq.read_table(b)), rel
        elif rel.endswith(".json"):
            assert json.loads(a.read_text()) == json.loads(b.read_text()), rel
        else:
            assert a.read_bytes() == b.read_bytes(), rel


def _commit_steps(root: Path, batch: dict[int, bool], reverse: bool) -> int:
    """How many file-system changes the batch's commit makes (counted in a child)."""
    probe = root.with_name(root.name + "-probe")
    if root.exists():
        shutil.copytree(root, probe)
    count = probe.with_suffix(".count")

    def child() -> None:
        n = _batch(probe, batch, kill=-1, reverse=reverse)
        count.write_text(str(n))

    assert _in_child(child) == 0
    return int(count.read_text())


@pytest.fixture(scope="module")
def reference(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """Uninterrupted runs: after the first batch, and after both."""
    base = tmp_path_factory.mktemp("reference")
    first, both = base / "first", base / "both"
    _batch(first, FIRST)
    shutil.copytree(first, both)
    _batch(both, NEXT)
    return {"first": first, "both": both}


@pytest.mark.slow  # a real collect killed at every step of its commit (12-16 s each)
@pytest.mark.parametrize("order", ["listed", "reversed"])
@pytest.mark.parametrize(
    "which", ["first", "next"]
)  # first: ~30 kills of the batch that creates the dataset (~30 s); next: ~10 (~15 s)
def test_a_kill_at_every_step_of_the_commit_loses_nothing(
    which: str, order: str, reference: dict[str, Path], tmp_path: Path
) -> None:
    batch = FIRST if which == "first" else NEXT
    want = reference["first" if which == "first" else "both"]
    start = tmp_path / "start"  # the folder before the batch
    if which == "next":
        shutil.copytree(reference["first"], start)
    reverse = order == "reversed"
    steps = _commit_steps(start, batch, reverse)
    assert steps >= 5  # finalize's files, the moves, the lines, the commit rename, cleanup
    results = []
    for i in range(steps):
        root = tmp_path / f"kill{i}"
        if start.exists():
            shutil.copytree(start, root)
        assert _in_child(lambda r=root, i=i: _batch(r, batch, i, reverse)) == KILLED
        if which == "next":
            _batch(root, FIRST)  # the rerun asks for every batch again
        _batch(root, batch)
        _assert_same(root, want)
        results.append(root)
    expected = load(want)
    for root in results:  # LeRobot's own reader agrees
        ds = load(root)
        assert ds.num_episodes == expected.num_episodes and len(ds) == len(expected)
        np.testing.assert_array_equal(
            np.stack(ds.hf_dataset.with_format("numpy")["observation.state"]),
            np.stack(expected.hf_dataset.with_format("numpy")["observation.state"]),
        )


DRIVER = """
import sys
import metasim.collect.dataset as dataset
from metasim.cli.main import main
from tests.collect.commit_faults import kill_at

commit = dataset.DatasetWriter.commit


def killed_commit(self):
    with kill_at(int(sys.argv[1]), reverse=True):
        commit(self)


dataset.DatasetWriter.commit = killed_commit
sys.exit(main(sys.argv[2:]))
"""


@pytest.mark.slow  # two real collects in a subprocess and their reruns (~2 min)
@pytest.mark.parametrize("step", [5, 20])
def test_a_killed_collect_process_reruns_to_the_uninterrupted_dataset(
    step: int, demos: Path, tmp_path: Path
) -> None:
    """`metasim collect` itself, killed inside its commit (folders listed in reverse),
    then run again: the dataset equals the uninterrupted one (`demos`, same settings)."""
    import subprocess
    import sys

    from tests.collect.collect_helpers import SIZE, collect, columns, lines

    root = tmp_path / "demos"
    args = ["collect", "--quiet", "suite.tasks=[lift_cube]", f"image_size={SIZE}"]
    args += ["episodes=4", "num_envs=2", f"out={root}"]
    path = [str(Path(__file__).resolve().parents[2]), os.environ.get("PYTHONPATH", "")]
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(path)}
    proc = subprocess.run(
        [sys.executable, "-c", DRIVER, str(step), *args], env=env, capture_output=True, text=True
    )
    assert proc.returncode == KILLED, proc.stderr[-2000:]
    assert collect(root) == 0

    def runs(folder: Path) -> list[dict[str, Any]]:
        return [{k: v for k, v in r.items() if k != "wall_time_s"} for r in lines(folder)]

    assert runs(root) == runs(demos)
    got, want = columns(root), columns(demos)
    for key in want:
        np.testing.assert_array_equal(got[key], want[key], err_msg=key)
    assert not [n for n in OURS if (root / n).exists()]


def _reopen(root: Path, kill: int) -> int:
    """Open the folder (which finishes or undoes what a killed run left), dying at change
    `kill` (-1: count them). Returns the changes made."""
    with kill_at(kill, reverse=True) as counter:
        DatasetWriter(root, REPO, SPEC).close()
    return counter.n


@pytest.mark.slow
def test_a_kill_at_every_step_of_undoing_a_batch_loses_nothing(
    reference: dict[str, Path], tmp_path: Path
) -> None:
    """A batch killed before its commit point is undone by the next run; that run killed
    at any step of the undo leaves a folder the run after it still undoes right."""
    open_batch = tmp_path / "open"
    shutil.copytree(reference["first"], open_batch)
    assert _in_child(lambda: _batch(open_batch, NEXT, 0, True)) == KILLED  # batch open
    count = tmp_path / "count"
    assert _in_child(lambda: count.write_text(str(_reopen(open_batch, -1)))) == 0
    steps = int(count.read_text())  # measured on the folder left by the kill, undone since
    assert steps >= 3
    for j in range(steps):
        root = tmp_path / f"undo{j}"
        shutil.copytree(reference["first"], root)
        assert _in_child(lambda r=root: _batch(r, NEXT, 0, True)) == KILLED
        assert _in_child(lambda r=root, j=j: _reopen(r, j)) == KILLED
        _batch(root, FIRST)
        _batch(root, NEXT)
        _assert_same(root, reference["both"])
