"""The adaptive stopping rule: stop a cell once its interval is narrow enough."""

from __future__ import annotations

import itertools

import numpy as np
import pytest
from scipy import stats

from metasim.stats import StoppingRule, episodes_saved, run_adaptive, success_interval
from metasim.stats.adaptive import stopping_point


def _first_n_with_zero_successes(width: float) -> int:
    # With k = 0 the Wilson interval is (0, z² / (n + z²)); its width falls to w at
    # n = z² (1 - w) / w.
    z2 = stats.norm.ppf(0.975) ** 2
    return int(np.ceil(z2 * (1 - width) / width))


def test_all_failures_stop_early_and_save_episodes():
    result = run_adaptive(itertools.repeat(False))
    assert _first_n_with_zero_successes(0.14) == 24
    assert (result.k, result.n, result.reason) == (0, 24, "width")
    assert result.saved == 176
    assert result.high - result.low <= 0.14
    lo, hi = success_interval(0, 23)
    assert hi - lo > 0.14  # one episode earlier would not have stopped


def test_all_successes_stop_early_by_symmetry():
    result = run_adaptive(itertools.repeat(True))
    assert (result.k, result.n, result.rate) == (24, 24, 1.0)


def test_half_successes_need_almost_the_whole_budget():
    # At k = n / 2 the Wilson width first drops to 0.14 at n = 193 (k = 97 after 193).
    result = run_adaptive(itertools.cycle([True, False]))
    assert (result.k, result.n, result.reason, result.saved) == (97, 193, "width", 7)
    lo, hi = success_interval(96, 192)
    assert hi - lo > 0.14
    capped = run_adaptive(itertools.cycle([True, False]), StoppingRule(width=0.1))
    assert (capped.n, capped.reason, capped.saved) == (200, "max_episodes", 0)


def test_minimum_episodes_is_respected():
    rule = StoppingRule(width=1.0)  # any interval is narrow enough
    assert run_adaptive(itertools.repeat(True), rule).n == 10
    assert stopping_point([True] * 50, StoppingRule(width=1.0, min_episodes=3)) == 3


def test_stream_is_drawn_lazily_and_may_run_out():
    drawn = []

    def episodes():
        for i in itertools.count():
            drawn.append(i)
            yield False

    assert run_adaptive(episodes()).n == 24
    assert len(drawn) == 24  # no episode beyond the stopping point was run
    short = run_adaptive([True, False, True])
    assert (short.n, short.reason) == (3, "exhausted")


def test_beta_method_and_custom_limits():
    rule = StoppingRule(width=0.2, min_episodes=5, max_episodes=50, method="beta")
    result = run_adaptive(itertools.repeat(False), rule)
    lo, hi = success_interval(0, result.n, method="beta")
    assert hi - lo <= 0.2
    lo, hi = success_interval(0, result.n - 1, method="beta")
    assert hi - lo > 0.2


def test_episodes_saved_over_simulated_cells():
    # Near p = 0 or 1 the rule saves most of the budget; near 1/2 it saves almost nothing.
    rng = np.random.default_rng(0)
    extreme = [run_adaptive(rng.random(200) < p) for p in [0.01, 0.02, 0.98, 0.99] * 5]
    middle = [run_adaptive(rng.random(200) < 0.5) for _ in range(5)]
    saved = episodes_saved(extreme)
    assert saved.cells == 20 and saved.budget == 4000
    assert saved.fraction_saved > 0.6
    assert episodes_saved(middle).fraction_saved < 0.1
    both = episodes_saved(extreme + middle)
    assert both.used == saved.used + episodes_saved(middle).used
    assert episodes_saved([]).fraction_saved == 0.0


@pytest.mark.parametrize(
    "kwargs", [{"width": 0.0}, {"min_episodes": 0}, {"min_episodes": 20, "max_episodes": 10}]
)
def test_bad_rules(kwargs):
    with pytest.raises(ValueError):
        StoppingRule(**kwargs)
