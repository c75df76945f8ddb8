"""Adaptive evaluation: stop a cell once its success interval is narrow enough.

RoboLab's rule (after the TRI LBM protocol): keep adding episodes until the 95% interval
width is at most ``width`` (0.14), never fewer than ``min_episodes`` (10) nor more than
``max_episodes`` (200). Cells whose success rate is near 0 or 1 stop early; cells near
1/2 need about 193 episodes for a Wilson width of 0.14, nearly the whole budget.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Literal

from metasim.stats.intervals import Method, success_interval

StopReason = Literal["width", "max_episodes", "exhausted"]


@dataclass(frozen=True)
class StoppingRule:
    """When to stop adding episodes to a cell."""

    width: float = 0.14
    min_episodes: int = 10
    max_episodes: int = 200
    level: float = 0.95
    method: Method = "wilson"

    def __post_init__(self) -> None:
        if not 0 < self.width <= 1:
            raise ValueError(f"width must be in (0, 1], got {self.width}")
        if not 1 <= self.min_episodes <= self.max_episodes:
            raise ValueError(
                f"need 1 <= min_episodes <= max_episodes, got "
                f"{self.min_episodes} and {self.max_episodes}"
            )

    def interval(self, k: int, n: int) -> tuple[float, float]:
        """The interval this rule measures after k successes in n episodes."""
        return success_interval(k, n, self.level, self.method)

    def should_stop(self, k: int, n: int) -> bool:
        """True once n reaches the maximum, or reaches the minimum with a narrow interval."""
        if n >= self.max_episodes:
            return True
        if n < self.min_episodes:
            return False
        lo, hi = self.interval(k, n)
        return hi - lo <= self.width


@dataclass(frozen=True)
class AdaptiveResult:
    """Outcome of one adaptively evaluated cell."""

    k: int
    n: int
    low: float
    high: float
    reason: StopReason
    max_episodes: int

    @property
    def rate(self) -> float:
        return self.k / self.n if self.n else float("nan")

    @property
    def saved(self) -> int:
        """Episodes not run compared with always running ``max_episodes``."""
        return self.max_episodes - self.n


def run_adaptive(outcomes: Iterable[bool], rule: StoppingRule | None = None) -> AdaptiveResult:
    """Consume a stream of episode outcomes until ``rule`` says stop.

    Draws no more outcomes than needed, so ``outcomes`` may be a generator that runs an
    episode per item. If the stream ends first the reason is ``"exhausted"``.
    """
    rule = rule or StoppingRule()
    k = n = 0
    reason: StopReason = "exhausted"
    for outcome in outcomes:
        k += bool(outcome)
        n += 1
        if rule.should_stop(k, n):
            reason = "max_episodes" if n >= rule.max_episodes else "width"
            break
    lo, hi = rule.interval(k, n)
    return AdaptiveResult(k, n, lo, hi, reason, rule.max_episodes)


def stopping_point(outcomes: Sequence[bool], rule: StoppingRule | None = None) -> int:
    """Number of episodes the rule would use on this recorded sequence of outcomes."""
    return run_adaptive(iter(outcomes), rule).n


@dataclass(frozen=True)
class Savings:
    """Episodes used and saved across cells compared with ``max_episodes`` each."""

    cells: int
    used: int
    budget: int

    @property
    def saved(self) -> int:
        return self.budget - self.used

    @property
    def fraction_saved(self) -> float:
        return self.saved / self.budget if self.budget else 0.0


def episodes_saved(results: Iterable[AdaptiveResult]) -> Savings:
    """Total episodes used and saved over cells, against running each to its maximum."""
    rows = list(results)
    return Savings(
        cells=len(rows),
        used=sum(r.n for r in rows),
        budget=sum(r.max_episodes for r in rows),
    )
