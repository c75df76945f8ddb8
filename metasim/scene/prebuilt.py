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

`prebuilt:<name>` then resolves a task in the folder `$METASIM_PREBUILT` (or
`prebuilt:<path>.prebuilt.json`), and every tool that compiles a task's scene (eval's
workers included) gets the saved model back instead of compiling: `compile_scene` calls
`compile.load_prebuilt` for a scene whose source is a `.prebuilt.json` file. A scene that differs
from the exported one (a perturbation axis that rebuilds the model) is refused with the
reason; physics perturbations (per-env model edits) apply as usual. Nothing executable is
stored: JSON, a MuJoCo binary model, numpy arrays without pickles, a YAML descriptor.
"""

from __future__ import annotations

import gzip
import shutil
import tempfile
from pathlib import Path

import mujoco

from metasim.errors import MetasimInputError
from metasim.guards import check_out_dir, held_problem, stamp_json
from metasim.scene.compile import CompiledScene
from metasim.scene.compile import load_prebuilt as load_compiled
from metasim.scene.prebuilt_format import (
    ENV,
    FORMAT,
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
    names = {ref: slug(ref) for ref in refs}
    for problem in [_target_problem(out, name) for name in names.values()] + [
        held_problem(out / SUITES, SUITES_KIND)
    ]:
        if problem is not None:
            raise MetasimInputError(f"--out {out}", [problem], "Choose another --out")
    written: list[Path] = []
    for ref in refs:
        task = resolve_input(ref, ref)
        name = names[ref]
        scene = task.scene()
        compiled = task.compile(scene)
        scene = _localise(scene, compiled, out, name)
        model = compiled.model if textures else _untextured(compiled)
        with tempfile.TemporaryDirectory() as tmp:
            mujoco.mj_saveModel(model, str(Path(tmp) / "m.mjb"))
            raw = (Path(tmp) / "m.mjb").read_bytes()
        (out / f"{name}.mjb.gz").write_bytes(gzip.compress(raw, compresslevel=6, mtime=0))
        doc = {
            "format": FORMAT,
            "ref": ref,
            "mujoco": mujoco.__version__,
            "textures": textures,
            "scene": scene.model_dump(mode="json", by_alias=True),
        }
        path = out / f"{name}{SUFFIX}"
        path.write_text(stamp_json(STAMP, doc) + "\n")
        written.append(path)
    held = read_suites(out)
    wanted = {f"prebuilt_{k.removeprefix('prebuilt_')}": v for k, v in (suites or {}).items()}
    wanted["prebuilt"] = list(refs)
    for suite, members in wanted.items():
        have = held.setdefault(suite, [])
        have += [f"{PREFIX}{names[r]}" for r in members if f"{PREFIX}{names[r]}" not in have]
    (out / SUITES).write_text(stamp_json(STAMP + " suites", {"suites": held}) + "\n")
    return written


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
            shutil.copyfile(src, out / f"{name}.robot.yaml")
            scene = scene.model_copy(
                update={"robot": scene.robot.model_copy(update={"name": f"mjcf:{name}.robot.yaml"})}
            )
    init = scene.task.init_states
    if init is not None:
        src = Path(init.file)
        if not src.is_absolute() and compiled.source is not None:
            src = compiled.source.parent / src
        shutil.copyfile(src, out / f"{name}.init.npz")
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
