"""MuJoCo Warp's capacity as eval options: `nconmax` contacts and `njmax` constraint rows
per world (backend=warp; None: the backend's default, 16 and 8 times the scene's
reference configuration's, at least 512 and 1,024: `metasim.sim.warp.support`).

A step that runs out of either drops contacts, so the warp handler raises instead of
stepping wrong physics; `overflow_errors` turns that into an input error (exit 2) naming
the options and their values, with the episodes recorded so far kept in the run folder.
The options are recorded with the run's config in its manifest. They are no outcome
field of a resume: below the capacity a world's physics does not depend on it, and a
world that would exceed it stops the run rather than record an episode, so a run
stopped by an overflow resumes with the options raised (`--resume RUN nconmax=N`).
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import Annotated, Any

from pydantic import Field

from metasim.errors import MetasimInputError

CAPACITY_MAX = 1_000_000
Capacity = Annotated[int, Field(ge=1, le=CAPACITY_MAX)] | None
OVERFLOW = "MuJoCo Warp ran out of"  # how the warp handler's overflow error begins


def backend_options(backend: str, nconmax: int | None, njmax: int | None) -> dict[str, Any]:
    """The handler options of these settings; set for a backend without them, an input
    error naming the option."""
    given = {k: v for k, v in (("nconmax", nconmax), ("njmax", njmax)) if v is not None}
    if given and backend != "warp":
        raise MetasimInputError(
            "command line",
            [f"{k}={v}: MuJoCo Warp's capacity, for backend=warp only (got backend={backend})"
             for k, v in given.items()],
        )  # fmt: skip
    return given


@contextmanager
def overflow_errors(handler: Any, scene: str) -> Iterator[None]:
    """The warp handler's capacity overflow (a RuntimeError) as an input error naming
    the eval options that raise the capacity."""
    try:
        yield
    except RuntimeError as exc:
        if not str(exc).startswith(OVERFLOW):
            raise
        ncon, njmax = getattr(handler, "nconmax", "?"), getattr(handler, "njmax", "?")
        raise MetasimInputError(
            f"scene {scene!r}",
            [
                f"backend=warp ran out of room for contacts or constraint rows (nconmax={ncon}, "
                f"njmax={njmax} per world), so the physics would not be MuJoCo's; the run "
                "stopped (episodes it finished are kept in its folder)"
            ],
            f"Raise them with the eval options nconmax=<n> and njmax=<n> (e.g. nconmax="
            f"{_twice(ncon)} njmax={_twice(njmax)}); a run folder that holds episodes resumes "
            "with `metasim eval --resume <run folder> nconmax=<n>`",
        ) from None


def _twice(value: Any) -> str:
    return str(2 * value) if isinstance(value, int) else "<n>"


FIELDS = ("nconmax", "njmax")


def record_capacity(held: dict[str, Any], manifest: dict[str, Any]) -> dict[str, Any]:
    """The held manifest of a resumed run with the capacity the resume runs at (under
    `capacity_changes`, each earlier one); `held` itself when it is unchanged."""
    was, now = held.get("config", {}), manifest.get("config", {})
    if all(was.get(k) == now.get(k) for k in FIELDS):
        return held
    prior = held.get("capacity_changes")
    changes = [*(prior if isinstance(prior, list) else []), {k: was.get(k) for k in FIELDS}]
    config = {**was, **{k: now.get(k) for k in FIELDS}}
    return {**held, "config": config, "capacity_changes": changes}
