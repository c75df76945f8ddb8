"""The LeRobot dataset `metasim collect` writes, through LeRobot's own dataset API.

DIR/meta/info.json, stats.json, tasks.parquet, episodes/...   LeRobot's (format v3.0)
DIR/data/chunk-XXX/file-XXX.parquet                          frames, images embedded (PNG)
DIR/meta/metasim_collect.json    what was collected (features, convention, config): a
                                 resume must match it
DIR/meta/metasim_episodes.jsonl  one line per episode run: task, cell, factor values, seed,
                                 success, progress, steps, error and `dataset_episode` (its
                                 episode_index in the dataset, or null when not kept)
DIR/run.lock                     one writer at a time (metasim.evaluate.store.RunLock)

Frames: `observation.images.<camera>` uint8 (H, W, 3) ('/' in a camera's name as '_'),
`observation.state` float32 (n_arm + 1,) = [joint_pos, gripper (1 = open)], `action`
float32 (D,) in the declared convention, `task` = the scene's instruction; or, with
`record=PRESET`, the preset's own keys, images, state and task text
(metasim.collect.recording).

Episodes are committed per (task, cell) batch, and one rename is the commit point:

1. begin: the files LeRobot rewrites are copied, with the list of every file there, into
   DIR/.metasim_begin/, which is then renamed DIR/.metasim_pending/ (the batch is open);
2. the batch: LeRobot writes its files, `finalize()` closes them, a new dataset is moved
   in, the episode lines are appended;
3. commit: DIR/.metasim_pending/ is renamed DIR/.metasim_trash/ (the commit point), which
   is then deleted.

A run killed at any step leaves the folder in one of three states, and the next run
sees which: `.metasim_begin` (or none) -- no batch was open, the copy is deleted;
`.metasim_pending` -- the batch is undone (its files deleted, the copies put back, then
the copy renamed away as in 3); `.metasim_trash` -- the batch was committed, the leftover
copy is deleted. So the folder always holds whole, committed batches, whatever order the
file system deletes files in.

LeRobot creates a dataset only in a folder that does not exist yet, and opens one only
once it holds an episode: until the first episode is kept, a batch is written into a new
dataset under .metasim_pending/new/ and its files are moved into DIR at commit.

What a resume starts from, and what a run leaves, is verified (`verify`): every parquet
file's footer reads, `meta/info.json` is LeRobot's object and counts the episodes the
episode lines say were kept, and LeRobot's own `LeRobotDataset` loads the folder with
that many episodes and frames. A folder that fails is refused (exit 2) naming the file,
and nothing in it is changed.
"""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path
from typing import Any

from metasim.appends import append_text
from metasim.errors import MetasimInputError, one_line
from metasim.evaluate.resume import differing
from metasim.evaluate.run_files import read_records
from metasim.evaluate.store import RunLock, make_run_dir
from metasim.guards import load_json, write_atomic

META = "meta"
COLLECT_FILE = "metasim_collect.json"
EPISODES_FILE = "metasim_episodes.jsonl"
BEGIN = ".metasim_begin"  # the copy being made: no batch open yet
PENDING = ".metasim_pending"  # the copy of an open batch: undo it if found
TRASH = ".metasim_trash"  # the copy of a committed batch: delete it if found
OURS = (BEGIN, PENDING, TRASH)
LOCK = "run.lock"
REWRITTEN = ("meta/info.json", "meta/stats.json", "meta/tasks.parquet", f"meta/{EPISODES_FILE}")


def image_key(camera: str) -> str:
    """The feature name of a camera's images. LeRobot refuses '/' in feature names, and
    the model names a robot-mounted camera `robot/<name>`: '/' becomes '_'."""
    return f"observation.images.{camera.replace('/', '_')}"


def features(
    images: dict[str, tuple[int, int, int]],
    state: dict[str, list[str]],
    action_names: list[str],
) -> dict[str, dict[str, Any]]:
    """LeRobot feature spec: images (feature key -> (H, W, 3)), state vectors (feature key
    -> column names), the action's column names."""
    out: dict[str, dict[str, Any]] = {}
    for key, shape in images.items():
        out[key] = {
            "dtype": "image",
            "shape": list(shape),
            "names": ["height", "width", "channels"],
        }
    for key, names in state.items():
        out[key] = {"dtype": "float32", "shape": [len(names)], "names": names}
    out["action"] = {"dtype": "float32", "shape": [len(action_names)], "names": action_names}
    return out


def _files(root: Path) -> list[str]:
    """Every file under root (relative), leaving out the batch copies and the lock."""
    return sorted(
        str(p.relative_to(root))
        for p in root.rglob("*")
        if p.is_file() and p.relative_to(root).parts[0] not in OURS and p.name != LOCK
    )


def _drop_empty_dirs(root: Path) -> None:
    """Remove the folders an undone batch leaves empty (deepest first)."""
    for path in sorted(root.rglob("*"), key=lambda p: len(p.parts), reverse=True):
        if path.is_dir() and path.name not in OURS and path != root / META:
            if not any(path.iterdir()):
                path.rmdir()


def _holds_only_ours(root: Path) -> bool:
    """Whether a folder with no dataset yet holds only what a killed first run of this
    writer leaves (its lock, a copy, the dataset spec not yet renamed into place)."""
    for p in root.iterdir():
        if p.name == META and p.is_dir():
            if any(x.name != COLLECT_FILE + ".tmp" for x in p.iterdir()):
                return False
        elif p.name not in (LOCK, BEGIN):
            return False
    return True


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
        self.fresh, self.made_dir = not known, not root.exists()
        if not known and root.is_dir() and not _holds_only_ours(root):
            raise MetasimInputError(
                f"out={root}",
                ["the folder exists, is not empty and holds no dataset of metasim collect"],
                "Pick a new folder, or the folder of an earlier collect to resume it",
            )
        make_run_dir(root)
        self._lock = RunLock(root, "collect")
        try:
            self._restore()
            if known:
                self._check_same()
                self.verify()
            else:  # the episode lines file appears with the first commit
                (root / META).mkdir(exist_ok=True)
                write_atomic(root / META / COLLECT_FILE, json.dumps(self.spec, indent=2) + "\n")
        except BaseException:
            self._lock.release()
            raise

    def discard_unused(self) -> bool:
        """Remove what this writer put in a new folder that got no episode (a run refused
        as it started), so the corrected rerun into the same `out=` is not refused as
        other settings: the folder held nothing but a killed first run's files (checked
        when it was opened). True when removed."""
        try:
            if not self.fresh or self.records():
                return False
        except MetasimInputError:  # a damaged episode file: left for the user to see
            return False
        self.ds = None
        for p in list(self.root.iterdir()):
            shutil.rmtree(p) if p.is_dir() and not p.is_symlink() else p.unlink()
        self._lock.release()
        if self.made_dir:
            try:
                self.root.rmdir()
            except OSError:
                pass
        return True

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
        if not isinstance(held, dict):
            raise MetasimInputError(str(path), ["expected the JSON object metasim collect writes"])
        diff = sorted({name.split(".")[0] for name in differing(held, self.spec)})
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
        """The committed episode lines (every episode run, kept or not); a line that is
        not one is an input error naming the file and line."""
        return read_records(self.root / META / EPISODES_FILE, EPISODE_KEYS, "an episode line")

    def verify(self) -> None:
        """The folder loads as a LeRobot dataset holding the kept episodes (module doc);
        else an input error naming the file (exit 2). Nothing is changed."""
        kept = sum(r["dataset_episode"] is not None for r in self.records())
        info_path = self.root / META / "info.json"
        if kept == 0 and not info_path.exists():
            return
        for path in sorted(self.root.rglob("*.parquet")):
            _check_parquet(path)
        info = load_json(info_path, "LeRobot info.json") if info_path.is_file() else None
        total = info.get("total_episodes") if isinstance(info, dict) else None
        if not isinstance(info, dict) or total != kept:
            got = f"total_episodes {total!r}" if isinstance(info, dict) else type(info).__name__
            raise damaged(
                info_path,
                f"expected LeRobot's info object with total_episodes {kept} (the episodes "
                f"kept), got {got}",
            )
        _load_dataset(self.root, self.repo_id, kept, info.get("total_frames"))

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

        copy = self.root / BEGIN
        copy.mkdir()
        for rel in REWRITTEN:
            src = self.root / rel
            if src.is_file():
                dst = copy / rel
                dst.parent.mkdir(parents=True, exist_ok=True)
                shutil.copy2(src, dst)
        (copy / "files.json").write_text(json.dumps(_files(self.root)))
        pending = self.root / PENDING
        os.rename(copy, pending)  # the batch is open: from here a killed run undoes it
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
        lines, then rename the copy away: that one rename is the commit point."""
        self.ds.finalize()
        self.ds = None
        new = self.root / PENDING / "new"
        if new.is_dir() and any(r["dataset_episode"] is not None for r in self.pending):
            for rel in _files(new):
                dst = self.root / rel
                dst.parent.mkdir(parents=True, exist_ok=True)
                os.rename(new / rel, dst)
        lines = "".join(json.dumps(rec, sort_keys=True) + "\n" for rec in self.pending)
        append_text(self.root / META / EPISODES_FILE, lines)  # never through a symlink
        self.pending = []
        os.rename(self.root / PENDING, self.root / TRASH)  # committed
        shutil.rmtree(self.root / TRASH)

    def _restore(self) -> None:
        """Finish what a killed run left: drop a copy that never opened a batch or that
        of a committed batch; undo an open batch (see the module's docstring)."""
        for name in (BEGIN, TRASH):
            if (self.root / name).exists():
                shutil.rmtree(self.root / name)
        pending = self.root / PENDING
        if not pending.is_dir():
            return
        held = set(json.loads((pending / "files.json").read_text()))
        for rel in _files(self.root):
            if rel not in held:
                (self.root / rel).unlink()
        _drop_empty_dirs(self.root)
        for rel in REWRITTEN:
            if (pending / rel).is_file():
                shutil.copy2(pending / rel, self.root / rel)
        os.rename(pending, self.root / TRASH)  # undone
        shutil.rmtree(self.root / TRASH)


EPISODE_KEYS = frozenset({"task", "cell", "episode", "dataset_episode"})


def damaged(path: Path, why: str) -> MetasimInputError:
    """The refusal of a dataset whose file `path` is not what metasim collect wrote."""
    return MetasimInputError(
        str(path),
        [f"{why}; the dataset there cannot be loaded or resumed"],
        "Restore the file, or collect into a new out=",
    )


def _check_parquet(path: Path) -> None:
    """The parquet file's footer reads (a truncated file's does not)."""
    import pyarrow.parquet as pq

    try:
        pq.read_metadata(path)
    except (OSError, ValueError) as exc:
        raise damaged(path, f"not a readable parquet file ({one_line(str(exc))})") from None


def _load_dataset(root: Path, repo_id: str, episodes: int, frames: Any) -> None:
    """LeRobot's `LeRobotDataset` loads `root` with `episodes` episodes and `frames`
    frames (an input error naming the folder otherwise)."""
    from lerobot.datasets.lerobot_dataset import LeRobotDataset

    try:
        ds = LeRobotDataset(repo_id, root=root)
        got = (int(ds.num_episodes), len(ds))
    except Exception as exc:  # LeRobot, datasets and pyarrow raise many kinds
        raise damaged(
            root, f"LeRobot cannot load it ({type(exc).__name__}: {one_line(str(exc))})"
        ) from None
    if got != (episodes, frames):
        raise damaged(
            root,
            f"LeRobot loads {got[0]} episodes and {got[1]} frames, expected {episodes} and "
            f"{frames}",
        )
