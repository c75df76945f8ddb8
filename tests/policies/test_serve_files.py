"""`metasim serve` opens only regular files inside its assets folder (issue #23, item 3).

Every way out is tried -- a relative name that exists beside the server's working
directory, `..`, an absolute path, a link inside assets that points outside, a fixture's
`textures:`, a FIFO, an `mjcf:` robot, a robot name with a path -- each once with its
target there and once without: both are refused with the same message, and no FIFO is
ever opened. The scenes compile against a real assets folder made for the test."""

from __future__ import annotations

import json
import os
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from metasim.paths import SCENES
from metasim.policies.serving import SceneCache
from metasim.scene import load_scene

ARENA = """<mujoco>
  <asset>
    <texture name="tex" type="2d" file="tex.png"/>
    <material name="mat" texture="tex"/>
  </asset>
  <worldbody>
    <body name="slab" pos="0 0 -0.05"><geom type="box" size="0.5 0.5 0.01" material="mat"/></body>
  </worldbody>
</mujoco>
"""


def _png(path: Path, value: int) -> None:
    import imageio.v3 as iio
    import numpy as np

    iio.imwrite(path, np.full((4, 4, 3), value, np.uint8))


@pytest.fixture()
def assets(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """tmp/assets (arena.xml, tex.png, other.png, links out); tmp/cwd is the working
    directory; tmp/ holds the files a client must not reach."""
    root = tmp_path / "assets"
    root.mkdir()
    (root / "arena.xml").write_text(ARENA)
    _png(root / "tex.png", 10)
    _png(root / "other.png", 200)
    (root / "link.xml").symlink_to(tmp_path / "outside.xml")
    (root / "link.png").symlink_to(tmp_path / "outside.png")
    cwd = tmp_path / "cwd"
    cwd.mkdir()
    monkeypatch.chdir(cwd)
    return root


def _scene(fixture: dict[str, Any] | None = None, robot: str = "panda") -> str:
    scene = load_scene(SCENES / "lift_cube.yaml")
    data = scene.model_dump(by_alias=True)
    if fixture is not None:
        data["fixtures"].append({"type": "mjcf", "name": "arena", "prefix": "arena_", **fixture})
    data["robot"]["name"] = robot
    return type(scene).model_validate(data).model_dump_json()


def _refusal(cache: SceneCache, text: str) -> str:
    """The message a client gets, from a thread: a compile that blocks (a FIFO opened)
    fails the test instead of hanging it."""
    out: list[BaseException] = []

    def run() -> None:
        try:
            cache.get(text)
        except Exception as exc:
            out.append(exc)

    thread = threading.Thread(target=run, daemon=True)
    thread.start()
    thread.join(60)
    assert not thread.is_alive(), "the server blocked opening the file"
    assert out, "the scene was accepted"
    assert isinstance(out[0], ValueError)
    return str(out[0])


def _outside(tmp: Path, name: str) -> Callable[[], None]:
    def make() -> None:
        path = tmp / name
        if name.endswith(".png"):
            _png(path, 99)
        else:
            path.write_text(ARENA.replace("tex.png", str(tmp / "assets" / "tex.png")))

    return make


A = "arena.xml"
ESCAPES = [  # (what, scene args, target relative to tmp/)
    ("relative name, found from the working dir", {"file": "secret.xml"}, "cwd/secret.xml"),
    ("..", {"file": "../outside.xml"}, "outside.xml"),
    ("absolute", {"file": "{tmp}/outside.xml"}, "outside.xml"),
    ("link out of assets", {"file": "link.xml"}, "outside.xml"),
    ("texture ..", {"file": A, "textures": {"tex": "../outside.png"}}, "outside.png"),
    ("texture absolute", {"file": A, "textures": {"tex": "{tmp}/outside.png"}}, "outside.png"),
    ("texture link", {"file": A, "textures": {"tex": "link.png"}}, "outside.png"),
    ("texture from the cwd", {"file": A, "textures": {"tex": "../cwd/x.png"}}, "cwd/x.png"),
]  # fmt: skip


@pytest.mark.parametrize(("what", "fixture", "target"), ESCAPES, ids=[e[0] for e in ESCAPES])
def test_every_escape_is_refused_alike_whether_the_target_exists_or_not(
    assets: Path, what: str, fixture: dict[str, Any], target: str
) -> None:
    tmp = assets.parent
    args = {
        k: ({n: p.format(tmp=tmp) for n, p in v.items()} if isinstance(v, dict) else v)
        for k, v in fixture.items()
    }
    args = {k: v.format(tmp=tmp) if isinstance(v, str) else v for k, v in args.items()}
    text = _scene(args)
    cache = SceneCache(root=assets)
    _outside(tmp, target)()
    there = _refusal(cache, text)
    (tmp / target).unlink()
    gone = _refusal(cache, text)
    assert there == gone, what  # nothing tells whether the file exists
    assert "refused" in there and "scene.fixtures[" in there and "assets folder" in there
    assert len(cache) == 0


def test_a_fifo_is_refused_unopened_and_alike(assets: Path) -> None:
    os.mkfifo(assets / "pipe.xml")
    os.mkfifo(assets / "pipe.png")
    cache = SceneCache(root=assets)
    for args in ({"file": "pipe.xml"}, {"file": A, "textures": {"tex": "pipe.png"}}):
        text = _scene(args)
        fifo = _refusal(cache, text)
        name = args["textures"]["tex"] if "textures" in args else args["file"]  # type: ignore[index]
        (assets / name).unlink()
        assert _refusal(cache, text) == fifo and "refused" in fifo


@pytest.mark.parametrize(
    "robot", ["mjcf:../outside.xml", "mjcf:link.xml", "../../../outside", "menagerie:../x"]
)
def test_robot_names_cannot_leave_the_assets(assets: Path, robot: str) -> None:
    _outside(assets.parent, "outside.xml")()
    message = _refusal(SceneCache(root=assets), _scene(robot=robot))
    assert "scene.robot.name" in message and "refused" in message


def test_files_inside_the_assets_still_compile_against_the_assets_folder(assets: Path) -> None:
    """A fixture's `file` is relative to the assets folder (not the working directory),
    and `textures:` swaps a texture for another file there."""
    (Path.cwd() / "arena.xml").write_text("<mujoco><worldbody/></mujoco>")  # never read
    cache = SceneCache(root=assets)
    plain = cache.get(_scene({"file": "arena.xml"}))
    swapped = cache.get(_scene({"file": A, "textures": {"tex": "other.png"}}))
    for compiled, value in ((plain, 10), (swapped, 200)):
        model = compiled.model
        adr = int(model.tex_adr[model.texture("arena_tex").id])
        assert model.tex_data[adr : adr + 3].tolist() == [value] * 3
    assert len(cache) == 2


def _bench_root(tmp: Path) -> Path:
    """tmp/bench: a benchmark's asset folder (arena.xml, tex.png, a link leading out)."""
    root = tmp / "bench"
    root.mkdir()
    (root / "arena.xml").write_text(ARENA)
    _png(root / "tex.png", 50)
    (root / "out.xml").symlink_to(tmp / "outside.xml")
    return root


@pytest.mark.parametrize(
    ("name", "ok"),
    [
        ("{bench}/arena.xml", True),  # an absolute name inside a benchmark's folder
        ("{tmp}/outside.xml", False),  # outside every folder
        ("{bench}/out.xml", False),  # a link from the benchmark's folder leading out
        ("{bench}/../outside.xml", False),  # '..' even where it would land inside
        ("{bench}/../bench/arena.xml", False),
        ("~/arena.xml", False),
    ],
)
def test_absolute_names_only_inside_a_benchmarks_asset_folders(
    assets: Path, name: str, ok: bool
) -> None:
    """The benchmarks' asset folders (`TaskSource.asset_roots`) take absolute names by the
    same resolved-path rule as the assets folder (issue #33 item 6)."""
    tmp = assets.parent
    bench = _bench_root(tmp)
    _outside(tmp, "outside.xml")()
    cache = SceneCache(root=assets, roots=[bench])
    text = _scene({"file": name.format(bench=bench, tmp=tmp)})
    if not ok:
        assert "refused" in _refusal(cache, text)
        return
    model = cache.get(text).model  # its texture relative to it, in the same folder
    adr = int(model.tex_adr[model.texture("arena_tex").id])
    assert model.tex_data[adr : adr + 3].tolist() == [50] * 3


def test_a_texture_beside_a_benchmark_file_stays_in_its_folder(assets: Path) -> None:
    """A benchmark fixture's textures are relative to its file, `..` included (LIBERO's
    `../textures/x.png`): resolved, they must stay in that benchmark's folder."""
    tmp = assets.parent
    bench = _bench_root(tmp)
    (bench / "sub").mkdir()
    (bench / "sub" / "arena.xml").write_text(ARENA)
    _outside(tmp, "outside.png")()
    cache = SceneCache(root=assets, roots=[bench])
    inside = {"file": f"{bench}/sub/arena.xml", "textures": {"tex": "../tex.png"}}
    model = cache.get(_scene(inside)).model
    adr = int(model.tex_adr[model.texture("arena_tex").id])
    assert model.tex_data[adr : adr + 3].tolist() == [50] * 3
    out = {"file": f"{bench}/sub/arena.xml", "textures": {"tex": "../../outside.png"}}
    assert "textures.tex: refused" in _refusal(cache, _scene(out))


@pytest.mark.parametrize(
    "ref",
    [
        pytest.param("metaworld:reach-v3", marks=pytest.mark.reference),  # its reference's files
        pytest.param("libero:libero_spatial/0", marks=pytest.mark.slow),
    ],
)
def test_a_benchmark_scene_is_served(ref: str) -> None:
    """A Meta-World or LIBERO task's scene names its robot, fixtures and init states by
    absolute path in the package's folders and metasim's files for it: the server
    compiles it (it refused every Meta-World scene), and the same scene with its robot
    moved outside them is refused."""
    from metasim.policies.observation import scene_payload
    from metasim.scene.sources import asset_roots, resolve

    compiled = resolve(ref).compile()
    text = scene_payload(compiled)
    cache = SceneCache()
    served = cache.get(text)
    assert (served.model.nbody, served.model.nq) == (compiled.model.nbody, compiled.model.nq)
    assert served.model.ntex == compiled.model.ntex
    assert any(
        compiled.scene.robot.name.removeprefix("mjcf:").startswith(str(r)) for r in asset_roots()
    )
    data = compiled.scene.model_dump(mode="json")
    data["robot"]["name"] = "mjcf:/etc/passwd"
    assert "scene.robot.name: refused" in _refusal(SceneCache(), json.dumps(data))
