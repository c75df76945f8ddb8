"""The warp rig's OpenGL features on small self-made scenes, against MuJoCo's OpenGL
(EGL/OSMesa) images of the same state: planar reflection (`reflections`), the separate
pass of a shadow-casting light (part of `shading: opengl`, with `shadows`), and mipmapped
texture filtering (`mipmaps`). Each scene is one the feature changes: with the feature the
ray-traced image is close to OpenGL's, without it clearly not (the figures measured here
are in the comments; docs/rendering.md has the benchmark cameras').
"""

from __future__ import annotations

import numpy as np
import pytest

pytest.importorskip("warp", reason="the warp extra (mujoco-warp, warp-lang) is not installed")
pytest.importorskip("mujoco_warp", reason="the warp extra (mujoco-warp) is not installed")

import mujoco

from metasim.reference.images import psnr
from metasim.sim.warp.gl_reflection import Mirror, find_mirror
from tests.sim.gl_controls import opengl, scene, warp

SIZE = (96, 96)

# A grey floor of reflectance 0.5 under a red box and a blue ball: OpenGL shows them
# mirrored in the floor at half their colour.
MIRROR = """<mujoco><visual><headlight ambient=".3 .3 .3" diffuse=".4 .4 .4"/></visual>
<asset><material name="floor" rgba=".6 .6 .6 1" reflectance="0.5"/></asset>
<worldbody><light directional="true" dir="0 0.3 -1" diffuse=".5 .5 .5" castshadow="false"/>
<geom type="plane" size="2 2 .1" material="floor"/>
<geom type="box" pos="0 0 .3" size=".15 .15 .15" rgba="1 .2 .1 1"/>
<geom type="sphere" pos=".4 .2 .2" size=".12" rgba=".1 .4 1 1"/>
<camera name="c" pos="0 -1.6 .7" xyaxes="1 0 0 0 .4 1" fovy="45"/></worldbody></mujoco>"""

# A floor textured in one colour under a headlight and two directional lights, one casting
# the shadow of a pillar: the others saturate the floor, and OpenGL adds the shadow-casting
# light in a pass of its own, so the lit floor is brighter than its texture.
TEXTURE = np.array([0.5, 0.4, 0.3]) * 255
SHADOW = """<mujoco><visual><headlight ambient=".6 .6 .6" diffuse=".6 .6 .6"/></visual>
<asset><texture name="t" type="2d" builtin="checker" rgb1=".5 .4 .3" rgb2=".5 .4 .3"
width="64" height="64"/><material name="floor" texture="t" texrepeat="2 2"/></asset>
<worldbody>
<light directional="true" pos="1 -1 1" dir="-.577 .577 -.577" diffuse=".3 .3 .3"
castshadow="true"/>
<light directional="true" pos="-1 -1 1" dir=".577 .577 -.577" diffuse=".3 .3 .3"
castshadow="false"/>
<geom type="plane" size="2 2 .1" material="floor"/>
<geom type="box" pos="0 0 .3" size=".1 .1 .3" rgba=".3 .8 .3 1"/>
<camera name="c" pos="0 -1.6 1.2" xyaxes="1 0 0 0 .6 1" fovy="45"/></worldbody></mujoco>"""

# A fine checker floor seen at a grazing angle: OpenGL's mipmaps blur it to grey in the
# distance, where the full-size texture aliases.
GRAZING = """<mujoco><visual><headlight ambient=".4 .4 .4" diffuse=".5 .5 .5"/></visual>
<asset><texture name="t" type="2d" builtin="checker" rgb1=".9 .9 .9" rgb2=".1 .1 .1"
width="256" height="256"/><material name="floor" texture="t" texrepeat="24 24"/></asset>
<worldbody><geom type="plane" size="4 4 .1" material="floor"/>
<camera name="c" pos="0 -3 .5" xyaxes="1 0 0 0 .15 1" fovy="45"/></worldbody></mujoco>"""


def test_the_first_reflective_plane_or_box_is_the_mirror() -> None:
    m, _ = scene(MIRROR)
    assert find_mirror(m) == Mirror(geom=0, lift=0.0, reflectance=0.5, half=(2.0, 2.0))
    spec = mujoco.MjSpec.from_string(MIRROR)
    spec.materials[0].reflectance = 0.0  # no reflective material: no mirror
    assert find_mirror(spec.compile()) is None
    box = MIRROR.replace('type="plane" size="2 2 .1"', 'type="box" size="2 2 .05"')
    assert find_mirror(scene(box)[0]) == Mirror(0, lift=0.05, reflectance=0.5, half=(2.0, 2.0))


def test_reflection_matches_opengl() -> None:
    m, d = scene(MIRROR)
    gl = opengl(m, d, SIZE)
    on, off = warp(m, d, SIZE), warp(m, d, SIZE, reflections=False)
    # measured 39.1 dB with the reflection, 23.3 dB without
    assert psnr(gl, on) > 35.0
    assert psnr(gl, off) < 28.0


def test_shadow_casting_light_drawn_in_its_own_pass() -> None:
    m, d = scene(SHADOW)
    gl, rt = opengl(m, d, SIZE), warp(m, d, SIZE)
    floor = (slice(80, 96), slice(0, 16))  # a corner of lit floor, far from the pillar
    # The other lights alone saturate: in one pass the floor would show its texture.
    assert (gl[floor].reshape(-1, 3).mean(0) > TEXTURE + 10).all()
    assert np.abs(gl[floor].astype(float) - rt[floor]).mean() < 3.0
    # measured 37.3 dB (OpenGL's shadow_fraction 0; 37.0 at 0.3); without shadows the
    # light joins the others' pass and the floor shows its texture: 24.6 dB
    assert psnr(gl, rt) > 35.0
    assert psnr(gl, warp(m, d, SIZE, shadows=False)) < 28.0


def test_mipmaps_match_opengl_at_a_grazing_angle() -> None:
    m, d = scene(GRAZING)
    gl = opengl(m, d, SIZE)
    # measured 31.4 dB with mipmaps, 25.4 dB with the full-size texture
    assert psnr(gl, warp(m, d, SIZE)) > 30.0
    assert psnr(gl, warp(m, d, SIZE, mipmaps=False)) < 27.0
