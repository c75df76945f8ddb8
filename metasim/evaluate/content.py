"""The content part of a run's resume key: what each task's scene *is*, not only its
name, and the conventions the policy declared.

A task reference (`lift_cube`, `scenes/x.yaml`, `prebuilt:x`, `libero:...`) names a
scene whose content can change between a run and its resume (a scene file edited, a
prebuilt folder re-exported, another folder first in $METASIM_PREBUILT, a benchmark
package updated). The manifest therefore records, per task, a SHA-256 of its content
(`scenes: {task: {"ref", "file", "sha256"}}`), and a resume whose content differs is
refused (exit 2) naming the task, so the outcomes of two scenes are never mixed.

What is hashed (cheap, deterministic across processes and machines; no compile):

- the typed scene as its source loaded it (canonical JSON of `Scene`): every field of
  a YAML scene (an edit of `time_limit`, a predicate, an object), of an imported
  benchmark task (what metasim builds from its files), and of a prebuilt's scene; the
  folders of the installed task sources (`asset_roots`) and of metasim itself are
  written as placeholders, so the same scene hashes the same on another machine;
- the bytes of the files the scene runs from: a prebuilt's saved model (`.mjb.gz`),
  the recorded initial states (`init_states.file`) and a robot descriptor file
  (`robot.name: mjcf:<file>`).

Not hashed: mesh and texture files a scene names by path (their package's version is
in the manifest's `versions`); a YAML file's comments and layout (they change nothing).

A manifest written before this existed has no `scenes`: the resume goes on (its
episodes' scenes are unknown, not known to differ) with a note on stderr, and the
manifest records the content from then on, so a later change is refused.
"""

from __future__ import annotations

import hashlib
import json
import sys
from pathlib import Path
from typing import Any

from metasim.errors import MetasimInputError
from metasim.paths import ROOT
from metasim.scene.prebuilt_format import SUFFIX
from metasim.scene.schema import Scene
from metasim.scene.sources import Task, asset_roots

CHUNK = 1 << 20


def scene_files(task: Task, scene: Scene) -> list[Path]:
    """The files `scene` runs from besides its typed fields (module doc), those that exist."""
    base = task.path.parent
    out: list[Path] = []
    if task.path.name.endswith(SUFFIX):
        out.append(task.path.with_name(task.path.name.removesuffix(SUFFIX) + ".mjb.gz"))
    init = scene.task.init_states
    if init is not None:
        out.append(Path(init.file) if Path(init.file).is_absolute() else base / init.file)
    robot = scene.robot.name
    if robot.startswith("mjcf:"):
        path = Path(robot[5:])
        out.append(path if path.is_absolute() else base / path)
    return [p for p in out if p.is_file()]


def scene_sha256(task: Task, scene: Scene, roots: list[Path] | None = None) -> str:
    """SHA-256 of the scene's content (module doc)."""
    text = json.dumps(scene.model_dump(mode="json", by_alias=True), sort_keys=True)
    for i, root in enumerate(roots if roots is not None else asset_roots()):
        text = text.replace(str(root), f"<asset root {i}>")
    text = text.replace(str(ROOT.resolve()), "<metasim>")
    h = hashlib.sha256(text.encode())
    for path in scene_files(task, scene):
        h.update(b"\0" + path.name.encode() + b"\0")
        with path.open("rb") as f:
            while block := f.read(CHUNK):
                h.update(block)
    return h.hexdigest()


def scene_record(tasks: list[tuple[Task, Scene]]) -> dict[str, dict[str, str]]:
    """Per task (scene name): its reference, the file it resolved to and its content hash."""
    roots = asset_roots()
    return {
        scene.name: {
            "ref": task.ref,
            "file": str(task.path),
            "sha256": scene_sha256(task, scene, roots),
        }
        for task, scene in tasks
    }


def check_content(old: dict[str, Any], new: dict[str, Any], run_dir: Path) -> dict[str, Any]:
    """Refuse (exit 2) a resume whose scenes or policy conventions differ from the
    recorded ones, naming the tasks; returns `old` with the content it lacked (a
    manifest from before the content was recorded) taken from `new`."""
    problems: list[str] = []
    held = old.get("scenes")
    now = new.get("scenes") or {}
    if isinstance(held, dict):
        for name, rec in now.items():
            was = held.get(name)
            if not isinstance(was, dict) or was.get("sha256") in (None, rec["sha256"]):
                continue
            problems.append(
                f"the scene of task {name!r} ({rec['ref']}, file {rec['file']}) differs from "
                f"the one its recorded episodes ran (content sha256 now {rec['sha256'][:12]}, "
                f"recorded {str(was['sha256'])[:12]} from {was.get('file')})"
            )
    conv = old.get("policy_conventions")
    now_conv = new.get("policy_conventions") or {}
    if conv is not None and conv != now_conv:
        keys = sorted(k for k in {*conv, *now_conv} if conv.get(k) != now_conv.get(k))
        tasks = ", ".join(repr(n) for n in now) or "every task"
        problems.append(
            f"the policy's declared conventions differ from the recorded ones "
            f"({', '.join(keys)}), for every task of the run ({tasks})"
        )
    if problems:
        raise MetasimInputError(
            str(run_dir),
            problems,
            "Resuming would mix the outcomes of two scenes or two policies' conventions; "
            "restore the recorded ones or choose another out=",
        )
    if isinstance(held, dict) and all(isinstance(held.get(n), dict) for n in now):
        return old
    print(
        f"note: {run_dir}/manifest.json records no content hash of its scenes (written by an "
        "earlier metasim): the recorded episodes cannot be checked against the scenes of "
        "this resume; the manifest records them from now on",
        file=sys.stderr,
    )
    return {**old, "scenes": {**(held if isinstance(held, dict) else {}), **now}}
