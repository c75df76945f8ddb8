"""Prebuilt task scenes: a task's compiled model and the files it reads at run time,
exported on a machine that has the task's benchmark package, so that a machine without
it (a lent GPU device, a cluster node) evaluates the task as it is.

`export(refs, out)` writes, per task reference, into one folder:

- `<name>.mjb.gz`: the compiled MjModel (meshes and textures inside), gzipped; with
  `textures=False` saved without its textures (a LIBERO task's are ~190 MB; state-only
  runs do not read them, and its cameras then refuse to render);
- `<name>.prebuilt.json`: the typed scene, with its run-time files renamed into the
  folder (the recorded initial states, the robot's descriptor), plus the reference and
  MuJoCo version it was compiled from;
- `<name>.init.npz`, `<name>.robot.yaml`: those files;
- `suites.json`: suite name -> prebuilt references (`prebuilt_<suite>` for each suite
  given, and `prebuilt`, every task of the folder; prefixed so that they never shadow
  the benchmark's own suites, whose tasks need the package).

Every file is written through `metasim.guards.replacing` (a new file renamed over the
old one: a symlink in the folder is replaced, never written through). Two references
whose file names would be the same (`a/b.yaml` and `a_b.yaml`), in one export or against
a prebuilt already in the folder, are refused naming both, before anything is written.

`prebuilt:<name>` then resolves a task in the folder `$METASIM_PREBUILT` (several
joined by ":"; a name is a file name of one of them, never a path out of them, and a
name two of them hold is refused naming both: `prebuilt_format.locate`) (or
`prebuilt:<path>.prebuilt.json`), and every tool that compiles a task's scene (eval's
workers included) gets the saved model back instead of compiling: `compile_scene` calls
`compile.load_prebuilt` for a scene whose source is a `.prebuilt.json` file. A scene that differs
from the exported one (a perturbation axis that rebuilds the model) is refused with the
reason; physics perturbations (per-env model edits) apply as usual. Nothing executable is
stored: JSON, a MuJoCo binary model, numpy arrays without pickles, a YAML descriptor.
"""

from __future__ import annotations

import gzip
import hashlib
import json
import os
import shutil
import tempfile
from pathlib import Path

import mujoco

from metasim.errors import MetasimInputError
from metasim.guards import check_out_dir, held_problem, replacing, stamp_json, write_atomic
from metasim.scene.compile import CompiledScene
from metasim.scene.compile import load_prebuilt as load_compiled
from metasim.scene.prebuilt_format import (
    ENV,
    FORMAT,
    MODEL_HASH,
    PREBUILT,
    PREFIX,
    STAMP,
    SUFFIX,
    SUITES,
    SUITES_KIND,
    load_scene,
    read_suites,
)
from metasim.scene.schema import Scene

__all__ = ["ENV", "PREFIX", "STAMP", "SUFFIX", "export", "load_compiled", "load_scene", "slug"]


def slug(ref: str) -> str:
    """The file name stem of a task reference (`libero:libero_spatial/0` ->
    `libero_libero_spatial_0`)."""
    return "".join(c if c.isalnum() or c in "-_" else "_" for c in ref).strip("_")


def export(
    refs: list[str],
    out: Path,
    suites: dict[str, list[str]] | None = None,
    textures: bool = True,
) -> list[Path]:
    """Compile each task reference and write its prebuilt files into `out`; merge
    `suites` (suite -> task references; every task joins `prebuilt`) into
    `out/suites.json` as prebuilt references. Returns the `.prebuilt.json` files."""
    from metasim.scene.sources import resolve_input

    check_out_dir(out, "--out")
    refs = list(dict.fromkeys(refs))  # a reference given twice is exported once
    names = {ref: slug(ref) for ref in refs}
    for problem in [
        *_clashes(names, out),
        *[_target_problem(out, name) for name in names.values()],
        held_problem(out / SUITES, SUITES_KIND),
    ]:
        if problem is not None:
            raise MetasimInputError(f"--out {out}", [problem], "Choose another --out")
    first: dict[str, str] = {}
    for ref in refs:  # one scene file spelled two ways: exported once
        first.setdefault(names[ref], ref)
    written: list[Path] = []
    for ref in first.values():
        task = resolve_input(ref, ref)
        name = names[ref]
        scene = task.scene()
        compiled = task.compile(scene)
        scene = _localise(scene, compiled, out, name)
        model = compiled.model if textures else _untextured(compiled)
        with tempfile.TemporaryDirectory() as tmp:
            mujoco.mj_saveModel(model, str(Path(tmp) / "m.mjb"))
            raw = (Path(tmp) / "m.mjb").read_bytes()
        write_atomic(out / f"{name}.mjb.gz", gzip.compress(raw, compresslevel=6, mtime=0))
        doc = {
            "format": FORMAT,
            "ref": ref,
            "mujoco": mujoco.__version__,
            "textures": textures,
            MODEL_HASH: hashlib.sha256(raw).hexdigest(),
            "scene": scene.model_dump(mode="json", by_alias=True),
        }
        path = out / f"{name}{SUFFIX}"
        write_atomic(path, stamp_json(STAMP, doc) + "\n")
        written.append(path)
    held = read_suites(out)
    wanted = {f"prebuilt_{k.removeprefix('prebuilt_')}": v for k, v in (suites or {}).items()}
    wanted["prebuilt"] = list(refs)
    for suite, members in wanted.items():
        have = held.setdefault(suite, [])
        for ref in members:
            entry = f"{PREFIX}{names.get(ref, slug(ref))}"
            if entry not in have:  # each task once, whatever was given twice
                have.append(entry)
    write_atomic(out / SUITES, stamp_json(STAMP + " suites", {"suites": held}) + "\n")
    return written


def _clashes(names: dict[str, str], out: Path) -> list[str]:
    """Two references that would write the same files: two given here, or one given
    here and the one a prebuilt already in `out` was exported from."""
    problems: list[str] = []
    first: dict[str, str] = {}
    for ref, name in names.items():
        if name in first and not _same_ref(first[name], ref):
            problems.append(
                f"{first[name]!r} and {ref!r} would both be written as {name}{SUFFIX}; "
                "export them into separate folders"
            )
            continue
        first.setdefault(name, ref)
        doc = out / f"{name}{SUFFIX}"
        held = _held_ref(doc)
        if held is not None and not _same_ref(held, ref):
            problems.append(
                f"{doc} holds the prebuilt of {held!r}; exporting {ref!r} would replace it "
                "(the same file name); export it into another folder"
            )
    return problems


def _held_ref(doc: Path) -> str | None:
    """The reference the prebuilt file `doc` was exported from, or None (no such file,
    or not one metasim wrote: `_target_problem` says so)."""
    if doc.is_symlink() or not doc.is_file() or held_problem(doc, PREBUILT) is not None:
        return None
    try:
        data = json.loads(doc.read_bytes())
    except (OSError, ValueError):
        return None
    ref = data.get("ref") if isinstance(data, dict) else None
    return ref if isinstance(ref, str) else None


def _same_ref(a: str, b: str) -> bool:
    """The same task: the same reference, or two spellings of one scene file."""
    if a == b:
        return True
    try:
        return Path(a).is_file() and Path(b).is_file() and os.path.samefile(a, b)
    except OSError:
        return False


def _target_problem(out: Path, name: str) -> str | None:
    """Why the files of task `name` must not be written into `out`, or None: files of
    that name are replaced only where they are a prebuilt scene metasim wrote."""
    doc = out / f"{name}{SUFFIX}"
    why = held_problem(doc, PREBUILT)
    if why is not None:
        return why
    if doc.is_file() and doc.stat().st_size:
        return None  # a prebuilt of this task: its files are replaced together
    for tail in (".mjb.gz", ".init.npz", ".robot.yaml"):
        other = out / f"{name}{tail}"
        if other.exists():
            return f"{other} exists and is not part of a prebuilt scene; it would be overwritten"
    return None


def _localise(scene: Scene, compiled: CompiledScene, out: Path, name: str) -> Scene:
    """`scene` with its run-time files copied into `out` and named relative to it."""
    robot = compiled.robot.name
    if robot.startswith("mjcf:"):  # a generated or user descriptor: copy the YAML
        src = Path(robot[5:])
        src = src if src.is_absolute() else (compiled.source or Path("x")).parent / src
        if src.suffix in (".yaml", ".yml"):
            with replacing(out / f"{name}.robot.yaml") as tmp:
                shutil.copyfile(src, tmp)
            scene = scene.model_copy(
                update={"robot": scene.robot.model_copy(update={"name": f"mjcf:{name}.robot.yaml"})}
            )
    init = scene.task.init_states
    if init is not None:
        src = Path(init.file)
        if not src.is_absolute() and compiled.source is not None:
            src = compiled.source.parent / src
        with replacing(out / f"{name}.init.npz") as tmp:
            shutil.copyfile(src, tmp)
        task = scene.task.model_copy(
            update={"init_states": init.model_copy(update={"file": f"{name}.init.npz"})}
        )
        scene = scene.model_copy(update={"task": task})
    return scene


def _untextured(compiled: CompiledScene) -> mujoco.MjModel:
    """The scene's model compiled without textures: the same bodies, geoms, joints and
    physics (checked), materials without texture maps."""
    assert compiled.spec is not None, "exported scenes are compiled here"
    spec = compiled.spec.copy()
    for mat in spec.materials:
        mat.textures = [""] * len(mat.textures)
    for tex in list(spec.textures):
        spec.delete(tex)
    model = spec.compile()
    ref = compiled.model
    for field in ("nq", "nv", "nu", "nbody", "ngeom", "nsite", "neq", "ncam", "nmesh"):
        if getattr(model, field) != getattr(ref, field):
            raise RuntimeError(f"dropping textures changed {field}")
    for field in ("body_mass", "geom_size", "geom_friction", "qpos0", "dof_damping"):
        if not (getattr(model, field) == getattr(ref, field)).all():
            raise RuntimeError(f"dropping textures changed {field}")
    model.geom_group[:] = ref.geom_group  # compile_scene's edits after compiling
    model.site_group[:] = ref.site_group
    return model
