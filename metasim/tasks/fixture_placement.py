"""Per-episode fixture poses: fixtures of a kind that is re-placed at every reset
(`FixtureBase.placed`, e.g. a benchmark's cabinets with a placement region) get a pose
drawn by their kind (`FixtureBase.draw_pose`).

Episode k's poses are drawn from its own generator, the "fixture_poses" stream of its
episode seed (`metasim.tasks.seeds`): they depend only on the run's seed, the task and k,
never on `num_envs` or on the env slot the episode runs in.
`episode_fixture_poses(compiled, seed)` recomputes an episode's poses from its seed
(what a cross-check with a reference simulator needs to put the reference's fixtures
where metasim had them); the env also reports the poses it applied
(`MetasimVectorEnv.fixture_poses`).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from metasim.scene.compile import CompiledScene
from metasim.scene.schema_base import FixtureBase
from metasim.tasks.seeds import episode_rng


@dataclass(frozen=True)
class FixturePoses:
    """Poses of the placed fixtures' root bodies for a batch of episodes: `names` (n,)
    fixture names, `bodies` (n,) their body ids, `pos` (B, n, 3) world positions and
    `quat` (B, n, 4) orientations (w, x, y, z), the values of model fields body_pos and
    body_quat (the roots are children of the world)."""

    names: tuple[str, ...]
    bodies: np.ndarray
    pos: np.ndarray
    quat: np.ndarray

    def of(self, row: int) -> dict[str, tuple[np.ndarray, np.ndarray]]:
        """Episode `row`'s poses by fixture name: (pos (3,), quat (4,))."""
        return {n: (self.pos[row, j], self.quat[row, j]) for j, n in enumerate(self.names)}


def placed_fixtures(compiled: CompiledScene) -> list[FixtureBase]:
    """The scene's fixtures that are re-placed at reset, in scene order."""
    return [f for f in compiled.scene.fixtures if f.placed()]


def sample_fixture_poses(
    compiled: CompiledScene, seeds: Sequence[int], episodes: Sequence[int] | None = None
) -> FixturePoses | None:
    """The placed fixtures' poses of one episode per seed (B = len(seeds)); a fixture
    whose kind gives episode k's pose (`episode_pose`, e.g. a harness's draw) takes it
    where `episodes` (B,) names k. None when the scene places none."""
    placed = placed_fixtures(compiled)
    if not placed:
        return None
    n, b = len(placed), len(seeds)
    pos, quat = np.zeros((b, n, 3)), np.zeros((b, n, 4))
    for row, seed in enumerate(seeds):
        rng = episode_rng(seed, "fixture_poses")
        for j, fx in enumerate(placed):
            given = None if episodes is None else fx.episode_pose(int(episodes[row]))
            pos[row, j], quat[row, j] = fx.draw_pose(rng) if given is None else given
    bodies = np.array([compiled.index.bodies[fx.name] for fx in placed], dtype=np.int64)
    return FixturePoses(tuple(fx.name for fx in placed), bodies, pos, quat)


def nominal_fixture_poses(compiled: CompiledScene, b: int) -> FixturePoses | None:
    """The placed fixtures at their nominal poses (the compiled model's), for `b` envs."""
    placed = placed_fixtures(compiled)
    if not placed:
        return None
    poses = [fx.nominal_pose() for fx in placed]
    pos = np.array([[p for p, _ in poses]] * b, dtype=np.float64)
    quat = np.array([[q for _, q in poses]] * b, dtype=np.float64)
    bodies = np.array([compiled.index.bodies[fx.name] for fx in placed], dtype=np.int64)
    return FixturePoses(tuple(fx.name for fx in placed), bodies, pos, quat)


def episode_fixture_poses(
    compiled: CompiledScene, seed: int, episode: int | None = None
) -> dict[str, tuple[np.ndarray, np.ndarray]]:
    """The fixture poses of the episode seeded `seed` (`episode_seed(run seed, k)`): by
    fixture name, (pos (3,), quat (4,) w first) of its root body; empty when the scene
    places no fixture."""
    poses = sample_fixture_poses(compiled, [seed], None if episode is None else [episode])
    return {} if poses is None else poses.of(0)
