"""Meta-World's kinds, registered with the scene schema's open kinds:

- fixture `metaworld_world`: the task XML's world without the Sawyer (table, walls, floor,
  lights, the task's objects and fixtures, the goal site), attached at the origin with
  the names it has in the XML, plus the site `mw_target` that each episode's initial
  state moves to the package's `_target_pos`;
- predicate `metaworld_success`: the package's own success test of a task
  (`evaluate_state`'s `success`), restated in `metasim.metaworld.success`.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Literal

import mujoco
import numpy as np

from metasim.metaworld.state import WORLD_PREFIX
from metasim.scene.compile import CompiledScene
from metasim.scene.fixtures import builder
from metasim.scene.kinds import FIXTURE_KINDS, PREDICATE_KINDS
from metasim.scene.predicate_base import PredicateBase
from metasim.scene.schema_base import FixtureBase, Strict
from metasim.sim.base import Kinematics
from metasim.tasks.predicates import PredFn, TaskView, predicate


@FIXTURE_KINDS.register("metaworld_world")
class MetaworldWorld(FixtureBase):
    """The world of Meta-World task `task` (an env name, e.g. `pick-place-v3`).

    `partially_observable`: the goal is hidden from the observation (`metaworld_goal` and
    the package's 39-D observation read zeros there), as the package's ML benchmarks
    (ML1/ML10/ML45, train and test) set it; the MT benchmarks show it."""

    type: Literal["metaworld_world"]
    name: str
    task: str
    partially_observable: bool = False

    def bodies(self) -> tuple[str, ...]:
        return ()

    def sites(self) -> tuple[str, ...]:
        from metasim.metaworld.importer.model import TARGET_SITE

        return (WORLD_PREFIX + TARGET_SITE,)


@builder(MetaworldWorld)
def _world(spec: mujoco.MjSpec, fx: MetaworldWorld, base_dir: Path) -> float | None:
    from metasim.metaworld.importer.model import world_spec

    spec.attach(world_spec(fx.task), prefix=WORLD_PREFIX, frame=spec.worldbody.add_frame())
    return None


class SuccessArgs(Strict):
    task: str


@PREDICATE_KINDS.register("metaworld_success")
class MetaworldSuccess(PredicateBase):
    """Meta-World's `info['success']` of task `task`, from the state alone (and, for
    stick-push, the contacts of the finger pads)."""

    metaworld_success: SuccessArgs

    def uses_contacts(self) -> bool:
        return self.metaworld_success.task == "stick-push-v3"


@predicate(MetaworldSuccess)
def _success(node: MetaworldSuccess, c: CompiledScene) -> PredFn:
    from metasim.metaworld.importer.model import TARGET_SITE
    from metasim.metaworld.state import MwState
    from metasim.metaworld.success import SUCCESS

    check = SUCCESS[node.metaworld_success.task]  # an unknown name lists the 50
    target = c.model.site(WORLD_PREFIX + TARGET_SITE).id
    touching = _pads_touching(c) if node.metaworld_success.task == "stick-push-v3" else None

    def fn(v: TaskView) -> np.ndarray:
        init = Kinematics(v.kin.qpos, v.kin.qvel, v.init_body_pos, v.kin.body_quat,
                          v.kin.site_pos, v.kin.site_mat)  # fmt: skip
        touch = None if touching is None else touching(v)
        state = MwState(c.model, v.kin, v.kin.site_pos[:, target], init=init, touching=touch)
        return np.asarray(check(state), dtype=bool)

    return fn


def _pads_touching(c: CompiledScene) -> Callable[[TaskView], np.ndarray]:
    """(B,) whether the stick (geom `objGeom`) is in contact with both finger pads. The
    package also asks the contacts' summed normal force to be positive, which the contact
    list alone does not carry (an active contact nearly always pushes)."""
    obj = c.model.geom(WORLD_PREFIX + "objGeom").id
    pads = [c.model.geom(f"robot/{n}").id for n in ("leftpad_geom", "rightpad_geom")]

    def touching(v: TaskView) -> np.ndarray:
        assert v.contacts is not None
        out = []
        for pairs in v.contacts:
            with_obj = np.any(pairs == obj, axis=1)
            out.append(all(bool(np.any(with_obj & np.any(pairs == p, axis=1))) for p in pads))
        return np.array(out, dtype=bool)

    return touching
