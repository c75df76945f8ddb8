"""Splat groups of the warp rig without rendering: arguments, refusals, the hidden model."""

from __future__ import annotations

import numpy as np
import pytest

pytest.importorskip("mujoco_warp", reason="the warp extra (mujoco-warp) is not installed")

import mujoco

from metasim.sim.warp.splat_groups import HIDDEN_GROUP, SplatGroups, hidden_model, invisible
from tests.scene.splat_scenes import one_splat


def test_groups_are_checked() -> None:
    with pytest.raises(ValueError, match="at least one splat"):
        SplatGroups([], [0])
    empty = one_splat((1, 0, 0))
    empty.position, empty.rotation = empty.position[:0], empty.rotation[:0]
    with pytest.raises(ValueError, match="at least one splat"):
        SplatGroups([one_splat((1, 0, 0)), empty], [0, 1])
    with pytest.raises(ValueError, match=r"outside 0\.\.1"):
        SplatGroups([one_splat((1, 0, 0)), one_splat((0, 1, 0))], [0, 2])
    groups = SplatGroups([one_splat((1, 0, 0)), invisible()], [1, 0, 1])
    args = groups.arguments()
    assert args["splat_adr"].tolist() == [0, 1, 2]
    assert args["splat_group_id"].tolist() == [1, 0, 1]
    assert args["splat_rgba"].shape == (2, 4) and args["splat_rgba"][1, 3] == 0.0
    with pytest.raises(ValueError, match="one group per world"):
        groups.select([], [0, 1])


def test_the_hidden_model_is_a_copy() -> None:
    m = mujoco.MjModel.from_xml_string(
        "<mujoco><worldbody><geom size='1'/><geom size='2'/></worldbody></mujoco>"
    )
    assert hidden_model(m, np.zeros(0, dtype=np.int64)) is m
    out = hidden_model(m, np.array([1]))
    assert out.geom_group.tolist() == [0, HIDDEN_GROUP] and m.geom_group.tolist() == [0, 0]
