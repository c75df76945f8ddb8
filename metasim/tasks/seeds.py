"""Where an episode's randomness comes from: one seed per episode, one named stream per use.

Episode k of a run seeded `base` has the seed `episode_seed(base, k)`, whatever env slot
it runs in and however many envs run: the env derives it (`MetasimVectorEnv.reset` with
`options={"episodes": [...]}`), so results never depend on `num_envs`. Each use of that
seed draws from its own generator, named in `STREAMS`; a new use gets a new entry here,
never a generator of its own elsewhere.
"""

from __future__ import annotations

import numpy as np

# use -> the generator of episode seed s: default_rng(s) for None, else
# default_rng([s, n]). Fixed forever: stored runs were drawn with them.
STREAMS: dict[str, int | None] = {
    "initial_state": None,  # robot joint noise, object poses, fixture openings (tasks/task.py)
    "runtime_noise": 1,  # observation/action noise and latency draws (envs/noise.py)
    "fixture_poses": 2,  # re-placed fixtures' poses (tasks/fixture_placement.py)
}


def episode_seed(base_seed: int, episode: int) -> int:
    """Seed of episode `episode` in a run seeded `base_seed` (independent streams)."""
    return int(np.random.SeedSequence([base_seed, episode]).generate_state(1)[0])


def episode_rng(seed: int, stream: str) -> np.random.Generator:
    """The generator of `stream` (a key of `STREAMS`) for the episode seeded `seed`."""
    n = STREAMS[stream]
    return np.random.default_rng(int(seed) if n is None else [int(seed), n])


__all__ = ["STREAMS", "episode_rng", "episode_seed"]
