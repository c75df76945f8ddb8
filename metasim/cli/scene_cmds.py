"""`metasim scene validate | render | schema`."""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from metasim.errors import MetasimInputError


def run(args: argparse.Namespace) -> int:
    if args.scene_verb == "schema":
        from metasim.scene.schema import Scene

        print(json.dumps(Scene.model_json_schema(by_alias=True), indent=2))
        return 0
    if args.scene_verb == "validate":
        return validate(args.files)
    return render(Path(args.file), Path(args.out))


def validate(files: list[str]) -> int:
    """Load and compile every file; report every bad one; exit 2 if any was bad."""
    from metasim.scene import compile_file

    bad = 0
    for f in files:
        try:
            compiled = compile_file(f)
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


def render(file: Path, out: Path) -> int:
    """Write `<out>/<scene>_<camera>.png` for every camera, at the scene's reset state."""
    from PIL import Image

    from metasim.envs.vec_env import MetasimVectorEnv
    from metasim.scene import compile_file

    compiled = compile_file(str(file))
    cams = [c.name for c in compiled.scene.cameras]
    if not cams:
        raise MetasimInputError(str(file), ["cameras: the scene declares no camera to render"])
    env = MetasimVectorEnv(compiled, num_envs=1)
    env.reset(seed=0)
    out.mkdir(parents=True, exist_ok=True)
    for cam in cams:
        img = env.handler.render(cam)[0]
        path = out / f"{compiled.scene.name}_{cam}.png"
        Image.fromarray(img).save(path)
        print(f"wrote {path} ({img.shape[1]}x{img.shape[0]})")
    env.close()
    return 0
