"""The parity kit: what every trajectory-parity check (a backend against native MuJoCo,
an imported benchmark against its own simulator) shares.

- the actions: `smooth_actions`, a seeded low-pass filtered random walk inside the
  action box;
- the first contact: `robot_pairs` finds the contacts between the robot and anything
  else, `contact_step` the first step that had one, `free_steps` how many steps came
  before it, and `before_contact` the worst error over those steps (until the robot
  touches something, two simulators should agree closely; after it they may part);
- the objects at rest: `spread_touch` marks what the robot reached through a chain of
  contacts (an object knocked by a touched object is touched too), `untouched` lists the
  objects it never reached, and `worst` the largest error over a set of objects per step
  (an untouched object should stay where the reference has it);
- `PSNR_CAP`: the figure the checks report for equal first frames.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping

import numpy as np

PSNR_CAP = 100.0  # dB reported for identical frames (their MSE is 0)
# A gripper input (osc_pose's last) driven open, then closed, for this many steps each:
# LIBERO's parity runs and the backend parity check on a 7-D osc_pose action.
GRIPPER_BLOCK = 25


def smooth_actions(
    low: np.ndarray,
    high: np.ndarray,
    steps: int,
    rng: np.random.Generator | int,
    *,
    lead_zero: bool = True,
    gripper_block: int | None = None,
) -> np.ndarray:
    """(steps, dim) seeded smooth random actions inside [low, high] (dim,).

    A random walk x_t = 0.8 x_{t-1} + 0.5 n_t (n standard normal, x_0 = 0), clipped to
    [-1, 1] and scaled onto the box. With `lead_zero` the first row is x_0 (the box's
    centre); without it the rows are x_1 .. x_steps. `rng` is a generator (drawn from)
    or a seed. With `gripper_block` the last input (a gripper) holds `low` then `high`
    for that many steps each, in turn, instead of walking."""
    rng = np.random.default_rng(rng)
    dim = len(low)
    rows = steps if lead_zero else steps + 1
    raw = np.zeros((rows, dim))
    for t in range(1, rows):
        raw[t] = 0.8 * raw[t - 1] + 0.5 * rng.normal(size=dim)
    walk = raw if lead_zero else raw[1:]
    mid, half = 0.5 * (high + low), 0.5 * (high - low)
    out = np.clip(mid + half * np.clip(walk, -1.0, 1.0), low, high)
    if gripper_block:
        blocks = (np.arange(steps) // gripper_block) % 2 == 0
        out[:, -1] = np.where(blocks, low[-1], high[-1])
    return out


def robot_pairs(robot: np.ndarray, pairs: np.ndarray) -> np.ndarray:
    """The rows of `pairs` (n, 2) (contact pairs of ids: geoms or bodies) with the robot
    on one side only, (k, 2); `robot` is a bool per id (the id belongs to the robot)."""
    pairs = np.asarray(pairs).reshape(-1, 2).astype(np.intp, copy=False)
    side = robot[pairs]
    return pairs[side[:, 0] != side[:, 1]]


def contact_step(contact: np.ndarray) -> int:
    """The first step (1-based) flagged in `contact` (T,) bool; 0 when none is."""
    hits = np.flatnonzero(contact)
    return int(hits[0]) + 1 if len(hits) else 0


def free_steps(first: int, steps: int) -> int:
    """How many of `steps` steps came before the first contact at step `first`
    (1-based, 0: none: then all of them)."""
    return first - 1 if first else steps


def before_contact(error: np.ndarray, free: int) -> float:
    """The worst of `error` (T, ...) over its first `free` rows; 0 over none."""
    return float(error[:free].max(initial=0.0))


def spread_touch(pairs: np.ndarray, touched: set[int]) -> None:
    """Add to `touched` every id linked to a touched one through a chain of contact
    `pairs` (n, 2) (ids of the parts in contact: bodies or weld groups). Leave out the
    pairs through a part that passes no touch on (the world that every object rests on)."""
    links = np.asarray(pairs).reshape(-1, 2).tolist()
    changed = True
    while changed:
        changed = False
        for a, b in links:
            if (a in touched) != (b in touched):
                touched.update((a, b))
                changed = True


def untouched(touched: Mapping[str, bool]) -> list[str]:
    """The objects the robot never touched, in `touched`'s order."""
    return [name for name, hit in touched.items() if not hit]


def worst(errors: Mapping[str, np.ndarray], names: Iterable[str] | None, steps: int) -> np.ndarray:
    """(steps,) the worst of `errors[name]` (steps,) per step over `names` (all of them
    when None); zeros without any."""
    rows = [errors[name] for name in (errors if names is None else names)]
    return np.max(rows, axis=0) if rows else np.zeros(steps)


__all__ = [
    "GRIPPER_BLOCK",
    "PSNR_CAP",
    "before_contact",
    "contact_step",
    "free_steps",
    "robot_pairs",
    "smooth_actions",
    "spread_touch",
    "untouched",
    "worst",
]
