"""A scene's scanned background (`background:`): loading, refusals naming the field, the
fallback's geoms, and the record a run writes of it."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from metasim.errors import MetasimInputError
from metasim.scene import compile_file, load_scene
from metasim.scene.background import background_record, fallback_geoms, load_background
from metasim.splats import REQUIRED
from tests.cli_refusal import refused
from tests.scene.splat_scenes import write_scene


def test_a_scene_without_background_dumps_as_before(tmp_path: Path) -> None:
    scene = load_scene(write_scene(tmp_path, None))
    assert scene.background is None
    assert "background" not in scene.model_dump()  # its content hash is unchanged
    assert "background" not in json.loads(scene.model_dump_json())


def test_the_background_is_placed_in_the_scene_frame(tmp_path: Path) -> None:
    scene = load_scene(write_scene(tmp_path))
    assert scene.background is not None and scene.background.fallback == "wall"
    splats = load_background(scene.background, tmp_path)
    np.testing.assert_allclose(splats.position, [[0.0, 6.0, 2.0]])
    again = type(scene).model_validate(scene.model_dump())
    assert again.background == scene.background


def test_fallback_geoms_are_the_objects(tmp_path: Path) -> None:
    compiled = compile_file(str(write_scene(tmp_path)))
    m = compiled.model
    geoms = fallback_geoms(m, "wall")
    assert len(geoms) == 1 and m.geom_bodyid[geoms[0]] == m.body("wall").id
    assert len(fallback_geoms(m, None)) == 0
    assert compiled.base_dir == tmp_path


def _ply_with_sh_rest(path: Path, n: int, rest: int) -> None:
    names = list(REQUIRED) + [f"f_rest_{i}" for i in range(rest)]
    rec = np.zeros(n, dtype=[(k, "<f4") for k in names])
    rec["rot_0"], rec["opacity"] = 1.0, 2.0
    head = f"ply\nformat binary_little_endian 1.0\nelement vertex {n}\n"
    head += "".join(f"property float {k}\n" for k in names) + "end_header\n"
    path.write_bytes(head.encode() + rec.tobytes())


def test_the_record_says_which_background_and_what_was_dropped(tmp_path: Path) -> None:
    write_scene(tmp_path)
    _ply_with_sh_rest(tmp_path / "sh3.ply", 5, 45)
    text = (tmp_path / "scene.yaml").read_text().replace("green.ply", "sh3.ply")
    (tmp_path / "scene.yaml").write_text(text)
    scene = load_scene(tmp_path / "scene.yaml")
    warp = background_record(scene, tmp_path, "warp")
    gl = background_record(scene, tmp_path, "opengl")
    assert warp is not None and gl is not None
    assert warp["kind"] == "splats" and gl["kind"] == "mesh"
    assert warp["n_splats"] == 5 and warp["sh_rest_dropped"] == 45
    assert warp["file"] == str((tmp_path / "sh3.ply").resolve()) and len(warp["sha256"]) == 64
    assert warp["fallback"] == "wall"
    assert background_record(load_scene(write_scene(tmp_path, None)), tmp_path, "warp") is None


@pytest.mark.parametrize(
    ("content", "field", "why"),
    [
        (b"not a ply at all\n", "background.splats", "not a PLY file"),
        (
            b"ply\nformat ascii 1.0\nelement vertex 1\nproperty float x\nend_header\n0\n",
            "background.splats",
            "f_dc_0",
        ),
        (None, "background.splats", "does not exist"),
    ],
)
def test_a_malformed_splat_file_is_refused_naming_the_field(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], content: bytes | None, field: str, why: str
) -> None:
    path = write_scene(tmp_path, "bad.ply")
    if content is not None:
        (tmp_path / "bad.ply").write_bytes(content)
    with pytest.raises(MetasimInputError, match=field):
        load_scene(path)
    for argv in (
        ["scene", "validate", str(path)],
        ["scene", "render", str(path), "--out", str(tmp_path / "out"), "--render", "warp"],
    ):
        err = refused(capsys, argv)
        assert field in err and why in err and "bad.ply" in err


def test_a_fallback_naming_no_object_is_refused(tmp_path: Path, capsys) -> None:
    path = write_scene(tmp_path)
    path.write_text(path.read_text().replace("fallback: wall", "fallback: nowhere"))
    err = refused(capsys, ["scene", "validate", str(path)])
    assert "background.fallback" in err and "nowhere" in err


@pytest.mark.slow
@pytest.mark.parametrize(("render", "kind"), [("opengl", "mesh"), ("warp", "splats")])
def test_eval_records_each_cells_background(tmp_path: Path, monkeypatch, render, kind) -> None:
    """`metasim eval` over a background grid: manifest and summary name, per cell, the
    background its images had; a resume with the same files is accepted."""
    from metasim.cli.main import main

    if render == "warp":
        pytest.importorskip("mujoco_warp", reason="the warp extra is not installed")
    monkeypatch.chdir(tmp_path)
    scene = write_scene(tmp_path)
    (tmp_path / "rooms.yaml").write_text(
        "name: rooms\ndesign: factorial\n"
        "factors: [{name: room, axis: background, levels: [none, blue.ply]}]\n"
    )
    argv = ["eval", f"suite.tasks=[{scene}]", "policy=noop", "episodes=1", f"render={render}",
            "perturbation=rooms.yaml", "out=run"]  # fmt: skip
    assert main(argv) == 0
    manifest = json.loads((tmp_path / "run" / "manifest.json").read_text())
    summary = json.loads((tmp_path / "run" / "summary.json").read_text())
    cells = manifest["backgrounds"]["splat_probe"]
    assert summary["backgrounds"] == manifest["backgrounds"]
    assert sorted(r["kind"] for r in cells.values()) == sorted(["none", kind])
    blue = next(r for r in cells.values() if r["kind"] == kind)
    assert blue["file"] == str(tmp_path / "blue.ply") and blue["n_splats"] == 1
    assert main(argv) == 0  # resumed: the same manifest
