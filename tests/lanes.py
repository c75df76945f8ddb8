"""The test lanes: markers that take a test out of the fast lane, the checks that a test
carries the marker it needs, and `--shard K/N` for CI's bounded samples.

- `reference`: needs a venv of its own (a benchmark's reference simulator, the LeRobot peer
  layer, openpi-client's or rliable's venv), built on first use under `.cache/`.
- `sweep`: every task, scene or cell of a benchmark; the fast lane keeps a sample.
- `slow`: one test over ~20 s here (a real collect, a compile, a long episode).
- `device`: needs a CUDA device (skipped, with the reason, where there is none).
- `learned`: trains a policy (`lerobot-train`) or scores what was trained.

`pytest` with no arguments runs the fast lane (FAST below, pyproject's addopts); `-m ""`
runs every lane; `-m reference` one lane. docs/install.md lists the command of each lane.

A test cannot slip out of its lane unnoticed:
1. A fixture that builds or starts what a lane needs is declared with `@needs(lane)`; at
   collection, a test whose fixture closure holds such a fixture without the lane's marker
   is a usage error naming the test, the fixture and the marker (`check_items`).
2. While a test runs (set-up included), a process it starts whose command line points into
   a reference venv (`.cache/<venv>`) or runs `lerobot-train` fails the test unless it
   carries the lane's marker (`LaneGuard`): a direct `ensure_venv()`, a Meta-World task
   loaded from its reference venv or a `subprocess.run` in a test body is caught as well
   as a fixture is.
3. One test function collected with more than `MAX_TASK_CASES` cases that name a
   benchmark's task or suite (a parameter value such as `libero:libero_10/5`,
   `metaworld:reach-v3`, `reach-v3` or `libero_spatial`) outside the `sweep` lane is a
   sweep without the marker (a usage error too).
"""

from __future__ import annotations

import functools
import subprocess
from collections import Counter
from collections.abc import Callable, Iterable, Sequence
from typing import Any, TypeVar

import pytest

LANES = ("reference", "sweep", "slow", "device", "learned")
FAST = "not (" + " or ".join(LANES) + ")"
MAX_TASK_CASES = 12  # cases naming a benchmark task one test function may hold outside sweep

# What a started process names when it uses a lane's resources (paths under .cache/, the
# console script that trains).
REFERENCE_PATHS = (
    ".cache/libero-ref",
    ".cache/metaworld-ref",
    ".cache/lerobot-peer",
    ".cache/openpi-client-venv",
    ".cache/rliable-venv",
)
LEARNED_COMMANDS = ("lerobot-train", "lerobot_train")

F = TypeVar("F", bound=Callable[..., Any])
ATTR = "__metasim_lane__"


def needs(lane: str) -> Callable[[F], F]:
    """Declare that a fixture function needs `lane` (put it under `@pytest.fixture`)."""
    if lane not in LANES:
        raise ValueError(f"unknown lane {lane!r}; lanes: {', '.join(LANES)}")

    def mark(func: F) -> F:
        setattr(func, ATTR, lane)
        return func

    return mark


def lanes_of(item: pytest.Item) -> set[str]:
    return {m.name for m in item.iter_markers() if m.name in LANES}


def fixture_lanes(item: pytest.Item) -> dict[str, str]:
    """Fixture name -> the lane it needs, over the item's whole fixture closure."""
    info = getattr(item, "_fixtureinfo", None)
    out: dict[str, str] = {}
    if info is None:
        return out
    for name, defs in info.name2fixturedefs.items():
        for d in defs:
            lane = getattr(getattr(d, "func", None), ATTR, None)
            if lane:
                out[name] = lane
    return out


def _function_key(item: pytest.Item) -> str:
    return item.nodeid.split("[", 1)[0]


def check_items(items: Sequence[pytest.Item]) -> list[str]:
    """The collected items' lane problems, one line each (empty: none)."""
    problems: list[str] = []
    for item in items:
        have = lanes_of(item)
        for fixture, lane in sorted(fixture_lanes(item).items()):
            if lane not in have:
                problems.append(
                    f"{item.nodeid} uses fixture {fixture!r}, which needs "
                    f"@pytest.mark.{lane} (on the test or the module's pytestmark)"
                )
    cases = Counter(
        _function_key(i) for i in items if "sweep" not in lanes_of(i) and _names_a_task(i)
    )
    for key, n in sorted(cases.items()):
        if n > MAX_TASK_CASES:
            problems.append(
                f"{key} has {n} cases of benchmark tasks outside the sweep lane (at most "
                f"{MAX_TASK_CASES}): mark all but a sample @pytest.mark.sweep (lanes.sampled)"
            )
    return problems


@functools.cache
def task_names() -> frozenset[str]:
    """Every registered benchmark's suite names, task refs and refs without their prefix."""
    from metasim.reference.benchmark import BENCHMARKS

    out: set[str] = set()
    for _, entry in BENCHMARKS.items():
        for suite, refs in entry.suites().items():
            out.add(suite)
            for ref in refs:
                out |= {ref, ref.split(":", 1)[-1]}
    return frozenset(out)


def _names_a_task(item: pytest.Item) -> bool:
    spec = getattr(item, "callspec", None)
    if spec is None:
        return False
    values = [v for p in spec.params.values() for v in (p if isinstance(p, tuple) else (p,))]
    return any(isinstance(v, str) and v in task_names() for v in values)


def _strings(value: Any) -> Iterable[str]:
    if isinstance(value, (str, bytes)):
        yield value.decode(errors="replace") if isinstance(value, bytes) else value
    elif isinstance(value, dict):
        for v in value.values():
            yield from _strings(v)
    elif isinstance(value, (list, tuple)):
        for v in value:
            yield from _strings(v)
    elif value is not None:
        yield str(value)


def process_lanes(args: Any) -> set[str]:
    """The lanes a process with this command line needs (its environment may name a venv
    that a stand-in for its python never uses: tests/libero/test_parity_limits.py)."""
    text = "\n".join(_strings(args)).replace("\\", "/")
    out = set()
    if any(p in text for p in REFERENCE_PATHS):
        out.add("reference")
    if any(c in text for c in LEARNED_COMMANDS):
        out.add("learned")
    return out


class LaneGuard:
    """Fails a running test that starts a process of a lane it is not marked with (see
    the module doc). Installed once per session; `current` is the test running now."""

    def __init__(self) -> None:
        self.current: pytest.Item | None = None
        self.hits: dict[str, str] = {}  # nodeid -> the first refusal (`hit`)
        self._init: Any = None

    def install(self) -> None:
        guard, init = self, subprocess.Popen.__init__
        self._init = init

        def checked_init(popen: Any, args: Any, *rest: Any, **kwargs: Any) -> None:
            guard.check(args)
            init(popen, args, *rest, **kwargs)

        subprocess.Popen.__init__ = checked_init  # type: ignore[method-assign]

    def uninstall(self) -> None:
        if self._init is not None:
            subprocess.Popen.__init__ = self._init  # type: ignore[method-assign]
            self._init = None

    def check(self, args: Any) -> None:
        item = self.current
        if item is None:
            return
        missing = process_lanes(args) - lanes_of(item)
        if missing:
            lane = sorted(missing)[0]
            shown = " ".join(_strings(args))[:200]
            message = (
                f"{item.nodeid} started a process of the {lane!r} lane ({shown}) without "
                f"@pytest.mark.{lane}; mark the test (tests/lanes.py)"
            )
            self.hits.setdefault(item.nodeid, message)
            raise RuntimeError(message)

    def hit(self, item: pytest.Item) -> str | None:
        """The refusal of `item`'s phase that just ran, if any (taken: asked once), so a
        test that caught the RuntimeError (and skipped or passed) still fails."""
        return self.hits.pop(item.nodeid, None)


def shard(items: list[pytest.Item], spec: str) -> tuple[list[pytest.Item], list[pytest.Item]]:
    """Items kept and dropped by `--shard K/N`: every N-th item from the K-th (0-based)."""
    try:
        k, n = (int(x) for x in spec.split("/"))
        if not 0 <= k < n:
            raise ValueError
    except ValueError:
        raise pytest.UsageError(f"--shard {spec!r}: expected K/N with 0 <= K < N") from None
    keep = [it for i, it in enumerate(items) if i % n == k]
    drop = [it for i, it in enumerate(items) if i % n != k]
    return keep, drop


def sampled(
    cases: Sequence[Any], keep: Iterable[Any], ids: Callable[[Any], str] = str
) -> list[Any]:
    """`cases` as pytest parameters: those in `keep` in the lane of the test, the rest in
    the sweep lane as well (a case may be a tuple of arguments or a pytest.param whose
    values are compared with `keep`)."""
    kept = list(keep)
    unknown = [k for k in kept if k not in [_values(c) for c in cases]]
    if unknown:
        raise ValueError(f"sample cases not among the cases: {unknown}")
    out = []
    for case in cases:
        values = _values(case)
        marks = list(getattr(case, "marks", ()))
        if values not in kept:
            marks.append(pytest.mark.sweep)
        args = values if isinstance(values, tuple) else (values,)
        out.append(pytest.param(*args, marks=marks, id=getattr(case, "id", None) or ids(values)))
    return out


def _values(case: Any) -> Any:
    values = getattr(case, "values", None)
    if values is None:
        return case
    return values if len(values) != 1 else values[0]
