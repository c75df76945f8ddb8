"""The native handler's pose buffers (metasim.sim.mujoco.poses): one copy per run of poses
adjacent in an MjData gives each array's own values, and a layout with no such runs
(injected: another order of the arrays) still copies every value, one array at a time."""

from __future__ import annotations

import mujoco
import numpy as np
import pytest

from metasim.sim.mujoco import poses
from metasim.sim.mujoco.poses import POSES, PoseBuffers


def _stepped(lift_scene) -> mujoco.MjData:
    m = lift_scene.model
    d = mujoco.MjData(m)
    d.qpos[:] += 0.01 * np.arange(m.nq)
    mujoco.mj_step(m, d, nstep=3)
    return d


def _copy_and_check(d: mujoco.MjData, buffers: PoseBuffers) -> None:
    for block, src in zip(buffers.blocks, buffers.sources(d), strict=True):
        block[1] = src
    for name, arr in zip(poses.POSES, buffers.arrays, strict=True):
        np.testing.assert_array_equal(arr[1], getattr(d, name), err_msg=name)
        assert not arr[0].any(), f"{name}: row 0 was never written"


def test_runs_copy_each_arrays_values(lift_scene) -> None:
    d = _stepped(lift_scene)
    buffers = PoseBuffers(d, 3)
    assert len(buffers.blocks) < len(POSES)  # MuJoCo keeps some of them side by side
    _copy_and_check(d, buffers)


def test_a_layout_without_runs_copies_array_by_array(lift_scene, monkeypatch) -> None:
    monkeypatch.setattr(poses, "POSES", ("xpos", "site_xpos", "xquat", "site_xmat"))
    d = _stepped(lift_scene)
    buffers = PoseBuffers(d, 3)
    assert len(buffers.blocks) == 4
    _copy_and_check(d, buffers)


def test_an_mjdata_laid_out_otherwise_is_refused(lift_scene) -> None:
    xml = "<mujoco><worldbody><body><geom size='1'/></body></worldbody></mujoco>"
    other = mujoco.MjModel.from_xml_string(xml)
    buffers = PoseBuffers(_stepped(lift_scene), 2)
    with pytest.raises(ValueError, match="laid out unlike"):
        buffers.sources(mujoco.MjData(other))
