"""Meta-World's kinds, registered with the scene schema's open kinds:

- fixture `metaworld_world`: the task XML's world without the Sawyer (table, walls, floor,
  lights, the task's objects and fixtures, the goal site), attached at the origin with
  the names it has in the XML, plus the site `mw_target` that each episode's initial
  state moves to the package's `_target_pos`;
- predicate `metaworld_success`: the package's own success test of a task
  (`evaluate_state`'s `success`), restated in `metasim.metaworld.success`.
"""

from __future__ import annotations

from pathlib import Path
from typing import Literal

import mujoco
import numpy as np

from metasim.scene.compile import CompiledScene
from metasim.scene.fixtures import builder
from metasim.scene.kinds import FIXTURE_KINDS, PREDICATE_KINDS
from metasim.scene.predicate_base import PredicateBase
from metasim.scene.schema_base import FixtureBase, Strict
from metasim.tasks.predicates import PredFn, TaskView, predicate


@FIXTURE_KINDS.register("metaworld_world")
class MetaworldWorld(FixtureBase):
    """The world of Meta-World task `task` (an env name, e.g. `pick-place-v3`)."""

    type: Literal["metaworld_world"]
    name: str
    task: str

    def bodies(self) -> tuple[str, ...]:
        return ()

    def sites(self) -> tuple[str, ...]:
        from metasim.metaworld.importer.model import TARGET_SITE, WORLD_PREFIX

        return (WORLD_PREFIX + TARGET_SITE,)


@builder(MetaworldWorld)
def _world(spec: mujoco.MjSpec, fx: MetaworldWorld, base_dir: Path) -> float | None:
    from metasim.metaworld.importer.model import WORLD_PREFIX, world_spec

    spec.attach(world_spec(fx.task), prefix=WORLD_PREFIX, frame=spec.worldbody.add_frame())
    return None


class SuccessArgs(Strict):
    task: str


@PREDICATE_KINDS.register("metaworld_success")
class MetaworldSuccess(PredicateBase):
    """Meta-World's `info['success']` of task `task`, from the state alone."""

    metaworld_success: SuccessArgs


@predicate(MetaworldSuccess)
def _success(node: MetaworldSuccess, c: CompiledScene) -> PredFn:
    from metasim.metaworld import success
    from metasim.metaworld.importer.model import TARGET_SITE, WORLD_PREFIX
    from metasim.metaworld.state import MwState

    task = node.metaworld_success.task
    check = success.check_for(task)
    target = c.model.site(WORLD_PREFIX + TARGET_SITE).id

    def fn(v: TaskView) -> np.ndarray:
        state = MwState.of(c.model, v.kin, v.kin.site_pos[:, target])
        return np.asarray(check(state), dtype=bool)

    return fn
