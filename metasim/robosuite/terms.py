"""robomimic's observation conventions that metasim's own terms do not state:
`hand_quat_xyzw` (B, 4), a `policy` term: the hand body's quaternion in robosuite's
x y z w order (`robot0_eef_quat`: `convert_quat(body_xquat(right_hand), to="xyzw")`)."""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from metasim.envs.terms import OBS_TERMS, Layout, ObsTerm
from metasim.sim.base import Kinematics


def _xyzw(layout: Layout) -> Callable[[Kinematics], np.ndarray]:
    hand = layout.compiled.index.hand_body
    return lambda kin: kin.body_quat[:, hand][:, [1, 2, 3, 0]]


OBS_TERMS.register("hand_quat_xyzw", ObsTerm("policy", lambda lay: (4,), make=_xyzw))
