"""`metasim scene validate | render | schema | prebuild`."""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

from metasim.cli.verbs import verb
from metasim.errors import MetasimInputError
from metasim.guards import OUT_DIR, PIXELS, PNG, check_out_dir, check_out_file, save_png


def add_parser(verbs: Any) -> None:
    scene = verbs.add_parser("scene", help="validate, render or describe scene files")
    sv = scene.add_subparsers(dest="scene_verb", required=True, parser_class=type(scene))
    val = sv.add_parser("validate", help="check scene files or tasks; exit 2 if any is bad")
    val.add_argument("files", nargs="+", help="scene files, scene names or PREFIX:REF tasks")
    ren = sv.add_parser("render", help="write a PNG per camera")
    ren.add_argument("file", help="a scene file, a scene name or a PREFIX:REF task")
    ren.add_argument("--out", type=OUT_DIR, required=True)
    ren.add_argument(
        "--render",
        choices=["opengl", "warp"],
        default=None,
        help="camera renderer (default: the scene's render.renderer, opengl unless set)",
    )
    ren.add_argument(
        "--size",
        type=PIXELS,
        nargs=2,
        default=None,
        metavar=("W", "H"),
        help="image size of every camera (default: each camera's own)",
    )
    sv.add_parser("schema", help="print the JSON Schema of scene files")
    pre = sv.add_parser(
        "prebuild",
        help="save tasks' compiled models and run-time files for a machine without their "
        "benchmark package (prebuilt:<name> with METASIM_PREBUILT=DIR)",
    )
    pre.add_argument("refs", nargs="*", help="task references (default: the --suite's tasks)")
    pre.add_argument("--out", type=OUT_DIR, required=True, help="the prebuilt folder")
    pre.add_argument("--suite", help="list them as suite prebuilt_<SUITE> (and take its tasks)")
    pre.add_argument(
        "--no-textures",
        action="store_true",
        help="leave the textures out (state-only runs; a LIBERO task's are ~190 MB)",
    )


def schema() -> int:
    from metasim.scene.schema import Scene

    print(json.dumps(Scene.model_json_schema(by_alias=True), indent=2))
    return 0


SUBVERBS: dict[str, Callable[[argparse.Namespace], int]] = {
    "validate": lambda args: validate(args.files),
    "render": lambda args: render(Path(args.file), Path(args.out), args.render, args.size),
    "schema": lambda args: schema(),
    "prebuild": lambda args: prebuild(args.refs, Path(args.out), args.suite, args.no_textures),
}


def run(args: argparse.Namespace) -> int:
    return SUBVERBS[args.scene_verb](args)


def validate(files: list[str]) -> int:
    """Load and compile every task (scene file, or any task source's reference, see
    metasim.scene.sources); report every bad one; exit 2 if any was bad."""
    from metasim.scene.sources import compile_task

    bad = 0
    for f in files:
        try:
            compiled = compile_task(f)
        except MetasimInputError as exc:
            sys.stderr.write(exc.render() + "\n")
            bad += 1
            continue
        m = compiled.model
        print(
            f"ok: {f} ({compiled.scene.name}: {len(compiled.scene.objects)} objects, "
            f"{m.nbody} bodies, {m.ngeom} geoms, {compiled.substeps} substeps per control step)"
        )
    return 2 if bad else 0


def render(
    file: Path, out: Path, renderer: str | None = None, size: list[int] | None = None
) -> int:
    """Write `<out>/<scene>_<camera>.png` for every camera of the scene (the same names
    whichever renderer draws them), at the scene's reset state, at `size` (W, H) or each
    camera's own size. All cameras come from one render of the rig."""
    from metasim.envs.vec_env import CameraView, MetasimVectorEnv
    from metasim.scene.sources import compile_task
    from metasim.sim.cameras import check_renderer

    compiled = compile_task(str(file))
    cams = [c.name for c in compiled.scene.cameras]
    if not cams:
        raise MetasimInputError(str(file), ["cameras: the scene declares no camera to render"])
    try:
        check_renderer(renderer or compiled.scene.render.renderer)
    except KeyError as exc:
        raise MetasimInputError("--render", [str(exc.args[0])]) from None
    check_out_dir(out, "--out")
    paths = [check_out_file(out / f"{compiled.scene.name}_{cam}.png", "--out", PNG) for cam in cams]
    w, h = size if size else (None, None)
    views = [CameraView(c, w, h) for c in cams]
    env = MetasimVectorEnv(compiled, num_envs=1, cameras=views, render=renderer)
    try:
        env.reset(seed=0)
        images = env.images()
        for view, path in zip(views, paths, strict=True):
            img = images[f"{view.key}_rgb"][0]
            save_png(path, img)
            print(f"wrote {path} ({img.shape[1]}x{img.shape[0]}, {env.renderer})")
    finally:
        env.close()
    return 0


def prebuild(refs: list[str], out: Path, suite: str | None, no_textures: bool) -> int:
    """Export the tasks (`metasim.scene.prebuilt`); one line per task written."""
    from metasim.scene import prebuilt
    from metasim.scene.sources import all_suites

    if not refs:
        if suite is None:
            raise MetasimInputError("scene prebuild", ["give task references or --suite NAME"])
        known = all_suites()
        if suite not in known:
            raise MetasimInputError(
                "--suite", [f"no task source lists a suite {suite!r} (known: {sorted(known)})"]
            )
        refs = known[suite]
    groups = {suite: refs} if suite else {}
    for path in prebuilt.export(refs, out, groups, textures=not no_textures):
        stem = path.name.removesuffix(prebuilt.SUFFIX)
        size = sum(p.stat().st_size for p in out.glob(f"{stem}.*"))
        print(f"wrote {path} ({size / 1e6:.1f} MB with its files)")
    return 0


verb("scene", add_parser, run)
