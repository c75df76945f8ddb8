"""`Plan.of`: the one run plan of eval, collect and report's replays (tasks from their
sources in suite order x cells in grid order, each cell applied when its item is
reached, the config's episode indices)."""

from __future__ import annotations

from pathlib import Path

import pytest

from metasim.errors import MetasimInputError
from metasim.evaluate.config import compose
from metasim.evaluate.plan import Plan
from metasim.evaluate.spec import RolloutSpec

GRID = """name: two
design: ofat
factors:
  - {name: latency, axis: action_latency, levels: [0, 3]}
  - {name: light, axis: light_intensity, levels: [1.0, 0.5]}
"""


@pytest.fixture
def plan(tmp_path: Path) -> Plan:
    grid = tmp_path / "two.yaml"
    grid.write_text(GRID)
    cfg = compose(["suite.tasks=[lift_cube,stack_cube]", "episodes=3", f"perturbation={grid}"])
    return Plan.of(cfg)


def test_items_are_tasks_by_cells_in_order(plan: Plan) -> None:
    items = list(plan.items())
    assert plan.names == ["lift_cube", "stack_cube"]
    assert len(plan.cells) == 3  # ofat: nominal, latency 3, light 0.5
    assert [(i.name, i.cell.id) for i in items] == [
        (t, c.id) for t in plan.names for c in plan.cells
    ]
    assert all(i.episodes == range(3) for i in items)
    assert items[0].task.path.name == "lift_cube.yaml"


def test_cells_are_applied_lazily_and_split_scene_from_runtime(plan: Plan) -> None:
    by_values = {
        (i.cell.values["latency"], i.cell.values["light"]): i
        for i in plan.items()
        if i.name == "lift_cube"
    }
    late, dim = by_values[(3, 1.0)], by_values[(0, 0.5)]
    assert "_applied" not in late.__dict__  # nothing applied until asked
    assert late.noise.action_latency == 3 and dim.noise.action_latency == 0
    full = [lt.diffuse[0] for lt in late.scene.lights]  # light at 1.0: the default light
    assert [lt.diffuse[0] for lt in dim.scene.lights] == pytest.approx([0.5 * d for d in full])


def test_shard_carries_the_item(plan: Plan) -> None:
    item = next(plan.items())
    spec = RolloutSpec.of("scripted", seed=0, num_envs=2)
    shard = item.shard((0, 2), spec)
    assert shard.episodes == (0, 2) and shard.cell == item.cell.id
    assert shard.source == str(item.task.path) and shard.scene["name"] == "lift_cube"
    assert shard.factors == item.cell.values and shard.spec is spec


def test_item_of_a_recorded_cell(plan: Plan) -> None:
    """A replay asks for (task, cell); a cell no longer in the grid comes back from the
    factors recorded on the episode's row."""
    cell = plan.cells[1]
    assert plan.item("stack_cube", cell.id).cell == cell
    gone = plan.item("lift_cube", "latency=7", {"latency": 7, "light": 1.0})
    assert gone.noise.action_latency == 7
    with pytest.raises(KeyError, match="no task 'nope'"):
        plan.item("nope", cell.id)


def test_missing_task_is_refused_before_anything_runs() -> None:
    cfg = compose(["suite.tasks=[lift_cube,not_a_scene]"])
    with pytest.raises(MetasimInputError, match=r"tasks\[1\]: no scene file for 'not_a_scene'"):
        Plan.of(cfg)
