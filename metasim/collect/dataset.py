"""The LeRobot dataset `metasim collect` writes, through LeRobot's own dataset API.

DIR/meta/info.json, stats.json, tasks.parquet, episodes/...   LeRobot's (format v3.0)
DIR/data/chunk-XXX/file-XXX.parquet                          frames, images embedded (PNG)
DIR/meta/metasim_collect.json    what was collected (features, convention, config): a
                                 resume must match it
DIR/meta/metasim_episodes.jsonl  one line per episode run: task, cell, factor values, seed,
                                 success, progress, steps, error and `dataset_episode` (its
                                 episode_index in the dataset, or null when not kept)
DIR/run.lock                     one writer at a time (metasim.evaluate.store.RunLock)

Frames: `observation.images.<camera>` uint8 (H, W, 3), `observation.state` float32
(n_arm + 1,) = [joint_pos, gripper (1 = open)], `action` float32 (D,) in the declared
convention, `task` = the scene's instruction.

Episodes are committed per (task, cell) batch. Before a batch, the files LeRobot rewrites
are copied to DIR/.metasim_pending/ with the list of files that exist; the batch ends
with LeRobot's `finalize()` and the episode lines, then the copy is removed. A run killed
mid-batch leaves the copy, and the next run restores it (deleting the files of the
unfinished batch), so the folder always holds whole, committed batches.

LeRobot creates a dataset only in a folder that does not exist yet, and opens one only
once it holds an episode: until the first episode is kept, a batch is written into a new
dataset under .metasim_pending/new/ and its files are moved into DIR at commit.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import numpy as np

from metasim.errors import MetasimInputError
from metasim.evaluate.store import RunLock, make_run_dir

META = "meta"
COLLECT_FILE = "metasim_collect.json"
EPISODES_FILE = "metasim_episodes.jsonl"
PENDING = ".metasim_pending"
LOCK = "run.lock"
REWRITTEN = ("meta/info.json", "meta/stats.json", "meta/tasks.parquet", f"meta/{EPISODES_FILE}")


def features(
    cameras: dict[str, tuple[int, int]], state_names: list[str], action_names: list[str]
) -> dict[str, dict[str, Any]]:
    """LeRobot feature spec: an image per camera name -> (width, height), state, action."""
    out: dict[str, dict[str, Any]] = {}
    for cam, (w, h) in cameras.items():
        out[f"observation.images.{cam}"] = {
            "dtype": "image",
            "shape": [h, w, 3],
            "names": ["height", "width", "channels"],
        }
    out["observation.state"] = {
        "dtype": "float32",
        "shape": [len(state_names)],
        "names": state_names,
    }
    out["action"] = {"dtype": "float32", "shape": [len(action_names)], "names": action_names}
    return out


def _files(root: Path) -> list[str]:
    """Every file under root (relative), leaving out the pending copy and the lock."""
    return sorted(
        str(p.relative_to(root))
        for p in root.rglob("*")
        if p.is_file() and PENDING not in p.relative_to(root).parts and p.name != LOCK
    )


def _import_lerobot() -> None:
    from metasim.policies.lerobot_runner import import_lerobot

    try:
        import_lerobot()
    except ImportError as err:
        raise MetasimInputError("metasim collect", [str(err)]) from None
    import datasets

    datasets.disable_progress_bars()


class DatasetWriter:
    """Create or reopen a dataset folder (locked while open) and append committed batches
    of episodes. `spec` (JSON data) holds `features` and `fps`; a resume must match it."""

    def __init__(self, root: Path, repo_id: str, spec: dict[str, Any]) -> None:
        _import_lerobot()
        self.root, self.repo_id = root, repo_id
        self.spec: dict[str, Any] = json.loads(json.dumps(spec))  # tuples as lists
        self.ds: Any = None
        self.pending: list[dict[str, Any]] = []
        known = (root / META / COLLECT_FILE).is_file()
        if not known and root.is_dir() and any(p.name != LOCK for p in root.iterdir()):
            raise MetasimInputError(
                f"out={root}",
                ["the folder exists, is not empty and holds no dataset of metasim collect"],
                "Pick a new folder, or the folder of an earlier collect to resume it",
            )
        make_run_dir(root)
        self._lock = RunLock(root)
        try:
            self._restore()
            if known:
                self._check_same()
            else:
                (root / META).mkdir(exist_ok=True)
                (root / META / COLLECT_FILE).write_text(json.dumps(self.spec, indent=2) + "\n")
                (root / META / EPISODES_FILE).write_text("")
        except BaseException:
            self._lock.release()
            raise

    def close(self) -> None:
        """Release the folder (an unfinished batch stays pending, undone by the next run)."""
        self.ds = None
        self._lock.release()

    def _check_same(self) -> None:
        path = self.root / META / COLLECT_FILE
        try:
            held = json.loads(path.read_text())
        except (OSError, ValueError):
            raise MetasimInputError(
                f"out={self.root}", [f"{path} cannot be read as JSON: not a metasim dataset"]
            ) from None
        diff = sorted(k for k in set(held) | set(self.spec) if held.get(k) != self.spec.get(k))
        if diff:
            raise MetasimInputError(
                f"out={self.root}",
                [
                    f"the dataset there was collected with other settings ({', '.join(diff)}: "
                    f"{held.get(diff[0])!r} there, {self.spec.get(diff[0])!r} now)"
                ],
                "Resume with the same settings, or collect into a new folder",
            )

    def records(self) -> list[dict[str, Any]]:
        """The committed episode lines (every episode run, kept or not)."""
        text = (self.root / META / EPISODES_FILE).read_text()
        return [json.loads(line) for line in text.splitlines() if line.strip()]

    def kept(self) -> int:
        """Episodes in the LeRobot dataset (committed, and those of the open batch)."""
        if self.ds is not None:
            return int(self.ds.meta.total_episodes)
        info = self.root / META / "info.json"
        return int(json.loads(info.read_text())["total_episodes"]) if info.is_file() else 0

    # ------------------------------------------------------------ batches

    def begin(self) -> None:
        """Start a batch: remember the files, copy what LeRobot rewrites, open LeRobot's
        writer (a dataset continued in new files, or a new one under the pending copy)."""
        from lerobot.datasets.lerobot_dataset import LeRobotDataset

        pending = self.root / PENDING
        pending.mkdir()
        for rel in REWRITTEN:
            src = self.root / rel
            if src.is_file():
                dst = pending / rel
                dst.parent.mkdir(parents=True, exist_ok=True)
                shutil.copy2(src, dst)
        (pending / "files.json").write_text(json.dumps(_files(self.root)))
        if self.kept() > 0:
            self.ds = LeRobotDataset(self.repo_id, root=self.root)
        else:
            # LeRobot compares frame shapes with the features' as tuples
            feats = {k: {**v, "shape": tuple(v["shape"])} for k, v in self.spec["features"].items()}
            self.ds = LeRobotDataset.create(
                self.repo_id,
                self.spec["fps"],
                feats,
                root=pending / "new",
                use_videos=False,
            )

    def add(self, frames: list[dict[str, Any]], record: dict[str, Any], keep: bool) -> None:
        """One finished episode: its frames go in the dataset when `keep`."""
        index = None
        if keep and frames:
            index = int(self.ds.meta.total_episodes)
            for frame in frames:
                self.ds.add_frame(dict(frame))
            self.ds.save_episode()
            import datasets

            datasets.disable_progress_bars()  # LeRobot turns them back on after a save
        self.pending.append({**record, "dataset_episode": index})

    def commit(self) -> None:
        """End a batch: close LeRobot's writers, move a new dataset in, append the episode
        lines, drop the copy."""
        self.ds.finalize()
        self.ds = None
        new = self.root / PENDING / "new"
        if new.is_dir() and any(r["dataset_episode"] is not None for r in self.pending):
            for rel in _files(new):
                dst = self.root / rel
                dst.parent.mkdir(parents=True, exist_ok=True)
                shutil.move(new / rel, dst)
        with (self.root / META / EPISODES_FILE).open("a") as f:
            for rec in self.pending:
                f.write(json.dumps(rec, sort_keys=True) + "\n")
        self.pending = []
        shutil.rmtree(self.root / PENDING)

    def _restore(self) -> None:
        """Undo the unfinished batch of a killed run."""
        pending = self.root / PENDING
        if not pending.is_dir():
            return
        listing = pending / "files.json"
        if listing.is_file():  # else killed before the batch wrote anything
            held = set(json.loads(listing.read_text()))
            for rel in _files(self.root):
                if rel not in held:
                    (self.root / rel).unlink()
            for rel in REWRITTEN:
                if (pending / rel).is_file():
                    shutil.copy2(pending / rel, self.root / rel)
        shutil.rmtree(pending)


def frame_of(batch: dict[str, Any], j: int, action: np.ndarray, instruction: str) -> dict[str, Any]:
    """Row `j` of an observation batch (arrays (B, ...)) as one LeRobot frame, with the
    action (D,) the policy took from it."""
    frame: dict[str, Any] = {
        k: np.ascontiguousarray(v[j]) for k, v in batch.items() if k.startswith("observation.")
    }
    frame["observation.state"] = frame["observation.state"].astype(np.float32)
    frame["action"] = np.asarray(action, dtype=np.float32)
    frame["task"] = instruction
    return frame
