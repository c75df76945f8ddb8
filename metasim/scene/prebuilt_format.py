"""The files of a prebuilt task scene (`metasim.scene.prebuilt` writes them): names,
the folder `prebuilt:<name>` resolves in, reading the scene and the saved model back.
Reading only: it imports neither the compiler nor the task sources, both of which read
prebuilt scenes through it."""

from __future__ import annotations

import hashlib
import os
from pathlib import Path
from typing import Any

import mujoco

from metasim.errors import MetasimInputError, validation_problems
from metasim.guards import OutKind, load_json, stamped_json
from metasim.inputs import read_gzip
from metasim.scene.schema import Scene

SUFFIX = ".prebuilt.json"
PREFIX = "prebuilt:"
ENV = "METASIM_PREBUILT"
SUITES = "suites.json"
FORMAT = 1
MODEL_HASH = "model_sha256"  # of the decompressed .mjb (files exported before it: unchecked)
STAMP = "metasim scene prebuild"
PREBUILT = OutKind("a prebuilt scene written by metasim", stamped_json(STAMP))
SUITES_KIND = OutKind("a prebuilt suite list written by metasim", stamped_json(STAMP + " suites"))


def folders() -> list[Path]:
    """The prebuilt folders `prebuilt:<name>` references resolve in (a name in two of
    them is refused, see `locate`):
    $METASIM_PREBUILT, one folder or several joined by the path separator (":"), so
    that folders carried separately (each under a transfer limit) run as one."""
    return [Path(p) for p in os.environ.get(ENV, "").split(os.pathsep) if p]


def read_suites(out: Path) -> dict[str, list[str]]:
    path = out / SUITES
    if not path.is_file():
        return {}
    doc = load_json(path, "prebuilt suite list")
    data = doc.get("suites") if isinstance(doc, dict) else None
    if not isinstance(data, dict) or not all(isinstance(v, list) for v in data.values()):
        raise MetasimInputError(str(path), ["suites: expected suite name -> [references]"])
    return {str(k): [str(r) for r in v] for k, v in data.items()}


def suites() -> dict[str, list[str]]:
    """The suites of the prebuilt folders, merged ({} when $METASIM_PREBUILT is unset)."""
    out: dict[str, list[str]] = {}
    for where in folders():
        if where.is_dir():
            for name, refs in read_suites(where).items():
                have = out.setdefault(name, [])
                have += [r for r in refs if r not in have]
    return out


def locate(ref: str) -> Path:
    """The `.prebuilt.json` file of `prebuilt:<name>` or `prebuilt:<path>` (LookupError
    saying why not).

    A name is a file name inside the folders of $METASIM_PREBUILT (no folder part, no
    `..`: it never reaches outside them). A name found in two of the folders is refused,
    naming both: which one ran would depend on the order of the folders, and a suite
    listed by one folder would silently run the other's task. (A warning would be
    missed in a long run's log, and first-wins is exactly what made a suite of one
    folder run another's task.) Give the path of the one meant, or remove the other."""
    body = ref.removeprefix(PREFIX)
    if body.endswith(SUFFIX):
        return _existing(ref, Path(body))
    where = folders()
    if not where:
        raise LookupError(
            f"{ref!r}: set ${ENV} to the folder `metasim scene prebuild` wrote, or give "
            f"the path of a {SUFFIX} file"
        )
    if not body or body in (".", "..") or "/" in body or os.sep in body or "\0" in body:
        raise LookupError(
            f"{ref!r}: a prebuilt name is a file name in the folders of ${ENV} (no folder "
            f"part, no '..'); give the path of a {SUFFIX} file to use one elsewhere"
        )
    found = [w / f"{body}{SUFFIX}" for w in where if (w / f"{body}{SUFFIX}").is_file()]
    unique: dict[Path, Path] = {}
    for path in found:  # one folder given twice is one folder
        unique.setdefault(path.resolve(), path)
    found = list(unique.values())
    if len(found) > 1:
        raise LookupError(
            f"{ref!r}: the prebuilt scene {body!r} is in several folders of ${ENV} "
            f"({', '.join(str(p.parent) for p in found)}); which one ran would depend on the "
            f"folders' order. Remove it from all but one, or give the path of its {SUFFIX} file"
        )
    return _existing(ref, found[0] if found else where[0] / f"{body}{SUFFIX}")


def _existing(ref: str, path: Path) -> Path:
    if not path.is_file():
        raise LookupError(f"{ref!r}: no such prebuilt scene ({path})")
    return path


def document(path: Path) -> dict[str, Any]:
    doc = load_json(path, "prebuilt scene")
    if not isinstance(doc, dict) or doc.get("format") != FORMAT or "scene" not in doc:
        raise MetasimInputError(
            str(path), [f"format: expected a prebuilt scene of format {FORMAT} with a scene"]
        )
    return doc


def load_scene(path: Path) -> Scene:
    """The typed scene of a `.prebuilt.json` file."""
    from pydantic import ValidationError

    try:
        return Scene.model_validate(document(path)["scene"])
    except ValidationError as exc:
        raise MetasimInputError(
            str(path), validation_problems(exc, "scene.", show_input=False)
        ) from None


def load_model(path: Path) -> tuple[mujoco.MjModel, bool]:
    """The saved model of the `.prebuilt.json` file `path`, and whether it has its
    textures."""
    doc = document(path)
    mjb = path.with_name(path.name.removesuffix(SUFFIX) + ".mjb.gz")
    raw = read_gzip(mjb, "METASIM_MODEL_MAX_BYTES", "saved model")
    want = doc.get(MODEL_HASH)
    if want is not None and hashlib.sha256(raw).hexdigest() != want:
        raise MetasimInputError(
            str(mjb),
            [
                f"not the model exported with {path.name} (its SHA-256 differs from the "
                f"{MODEL_HASH} there): a model from another scene, or one file of the pair "
                "replaced"
            ],
            "Export the task again with `metasim scene prebuild`",
        )
    try:
        model = mujoco.MjModel.from_binary_path("model.mjb", {"model.mjb": raw})
    except (OSError, ValueError, EOFError, RuntimeError) as exc:
        raise MetasimInputError(str(mjb), [f"MuJoCo cannot load it: {exc}"]) from None
    return model, bool(doc.get("textures", True))
