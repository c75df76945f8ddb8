"""The warp rig's translucent geoms (`render.raytrace.translucent`) on a small self-made
scene against MuJoCo's OpenGL: a box of alpha 0.4 in front of an opaque box, which OpenGL
blends (both its faces) and MuJoCo Warp draws opaque; and a scene without a translucent
geom, which keeps its kernels and its image. Compiles the translucency module's kernels
(slow on Warp's CPU device the first time).
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

pytest.importorskip("warp", reason="the warp extra (mujoco-warp, warp-lang) is not installed")
pytest.importorskip("mujoco_warp", reason="the warp extra (mujoco-warp) is not installed")

import mujoco

from metasim.reference.images import psnr
from metasim.scene.render_schema import RaytraceSpec
from metasim.sim.warp import probe
from metasim.sim.warp.gl_shading import render_module
from metasim.sim.warp.gl_translucent import find_glass
from metasim.sim.warp.trace import scene_glass
from tests.sim.gl_controls import opengl, scene, warp

pytestmark = pytest.mark.slow

SIZE = (96, 96)

# An opaque red box behind a green box of alpha ALPHA, on a grey floor.
GLASS = """<mujoco><visual><headlight ambient=".3 .3 .3" diffuse=".4 .4 .4"/></visual>
<worldbody><light directional="true" dir="0 0.3 -1" diffuse=".5 .5 .5" castshadow="false"/>
<geom type="plane" size="2 2 .1" rgba=".6 .6 .6 1"/>
<geom type="box" pos="0 .3 .3" size=".15 .15 .15" rgba="1 .1 .1 1"/>
<geom type="box" pos="0 -.3 .3" size=".25 .05 .25" rgba=".1 .9 .2 ALPHA" group="GROUP"/>
<camera name="c" pos="0 -1.6 .5" xyaxes="1 0 0 0 .2 1" fovy="45"/></worldbody></mujoco>"""


def _scene(alpha: float = 0.4, group: int = 1) -> tuple[mujoco.MjModel, mujoco.MjData]:
    xml = GLASS.replace("ALPHA", str(alpha)).replace("GROUP", str(group))
    return scene(xml)


def test_translucent_geoms_are_those_opengl_blends() -> None:
    glass = find_glass(_scene()[0])
    assert glass is not None and glass.geoms == (2,)
    assert glass.statics(1)[1] == (2,)  # one bounded geom: the bounding-sphere early out
    assert find_glass(_scene(alpha=1.0)[0]) is None  # opaque
    assert find_glass(_scene(alpha=0.0)[0]) is None  # not drawn at all
    assert find_glass(_scene(group=3)[0]) is None  # a group OpenGL does not show
    assert scene_glass(_scene()[0], RaytraceSpec(translucent=False)) is None
    assert scene_glass(_scene()[0], RaytraceSpec(shading="warp")) is None


def test_translucent_box_matches_opengl() -> None:
    m, d = _scene()
    gl = opengl(m, d, SIZE)
    # measured 38.2 dB blended (interior pixels within 1 level; the rest is the edges'
    # anti-aliasing), 21.8 dB drawn opaque
    assert psnr(gl, warp(m, d, SIZE)) > 35.0
    assert psnr(gl, warp(m, d, SIZE, translucent=False)) < 25.0


def test_scene_without_translucent_geoms_keeps_its_kernels_and_image(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    m, d = _scene(alpha=1.0)
    assert scene_glass(m, RaytraceSpec()) is None
    plain = render_module(False)
    assert plain is not None and "glass" not in Path(str(plain.__file__)).read_text()
    image = warp(m, d, SIZE)  # the module without the edits, as before them
    np.testing.assert_array_equal(image, warp(m, d, SIZE, translucent=False))
    # the edits are inert where a scene has no translucent geom: the edited module renders
    # the same image bit for bit
    monkeypatch.setattr(probe, "render_module", lambda translucent=False: render_module(True))
    np.testing.assert_array_equal(image, warp(m, d, SIZE))
