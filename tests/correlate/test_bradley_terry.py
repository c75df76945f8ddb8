"""Bradley–Terry: recovers a known ranking from synthetic head-to-head outcomes."""

from __future__ import annotations

import numpy as np
import pytest
from scipy import special

from metasim.correlate import Pairwise, fit_bradley_terry, load_pairwise_csv
from metasim.errors import MetasimInputError

TRUE_THETA = np.array([1.2, 0.6, 0.0, -0.5, -1.3])
NAMES = ["alpha", "bravo", "charlie", "delta", "echo"]


def _simulate(games_per_pair: int, seed: int) -> Pairwise:
    rng = np.random.default_rng(seed)
    wins = np.zeros((5, 5))
    for i in range(5):
        for j in range(i + 1, 5):
            k = rng.binomial(games_per_pair, special.expit(TRUE_THETA[i] - TRUE_THETA[j]))
            wins[i, j] += k
            wins[j, i] += games_per_pair - k
    return Pairwise(NAMES, wins)


def test_recovers_known_ranking_and_strengths():
    fit = fit_bradley_terry(_simulate(200, seed=0))
    assert [NAMES[i] for i in np.argsort(-fit.theta)] == NAMES
    assert fit.theta.sum() == pytest.approx(0.0, abs=1e-9)
    truth = TRUE_THETA - TRUE_THETA.mean()
    z = np.abs(fit.theta - truth) / fit.se
    assert np.all(z < 3.5)
    assert np.all(fit.se > 0) and np.all(fit.se < 0.2)


def test_intervals_cover_truth_in_most_repeats():
    truth = TRUE_THETA - TRUE_THETA.mean()
    inside = 0
    for seed in range(30):
        fit = fit_bradley_terry(_simulate(40, seed))
        inside += int(np.sum(np.abs(fit.theta - truth) <= 1.96 * fit.se))
    assert inside / (30 * 5) >= 0.85


def test_mle_is_a_stationary_point():
    """At the MLE each policy's expected wins equal its observed wins."""
    data = _simulate(30, seed=5)
    fit = fit_bradley_terry(data)
    p = special.expit(fit.theta[:, None] - fit.theta[None, :])
    expected = ((data.wins + data.wins.T) * p).sum(axis=1)
    np.testing.assert_allclose(expected, data.wins.sum(axis=1), atol=1e-6)


def test_undefeated_policy_needs_a_prior():
    wins = np.array([[0.0, 3.0, 2.0], [0.0, 0.0, 1.0], [0.0, 1.0, 0.0]])
    data = Pairwise(["a", "b", "c"], wins)
    with pytest.raises(ValueError, match="does not exist"):
        fit_bradley_terry(data)
    fit = fit_bradley_terry(data, prior=1.0)
    assert int(np.argmax(fit.theta)) == 0


def test_csv_winner_and_count_forms_agree(tmp_path):
    rows = [("a", "b", "a")] * 7 + [("a", "b", "b")] * 3 + [("b", "c", "b")] * 6
    rows += [("b", "c", "c")] * 4 + [("a", "c", "tie")] * 2 + [("c", "a", "c")] * 2
    rows += [("c", "a", "a")] * 5
    one = tmp_path / "winner.csv"
    one.write_text("policy_a,policy_b,winner\n" + "".join(f"{a},{b},{w}\n" for a, b, w in rows))
    counts = tmp_path / "counts.csv"
    counts.write_text("policy_a,policy_b,wins_a,wins_b,ties\na,b,7,3,\nb,c,6,4,0\na,c,5,2,2\n")
    fa = fit_bradley_terry(load_pairwise_csv(one))
    fb = fit_bradley_terry(load_pairwise_csv(counts))
    assert fa.policies == fb.policies == ["a", "b", "c"]
    np.testing.assert_allclose(fa.theta, fb.theta, atol=1e-8)
    np.testing.assert_allclose(fa.se, fb.se, atol=1e-8)
    ranking = fa.to_dict()["ranking"]
    assert [r["policy"] for r in ranking] == ["a", "b", "c"]
    lo, hi = ranking[0]["ci95"]
    assert lo < ranking[0]["theta"] < hi


def test_bad_pairwise_csv(tmp_path):
    path = tmp_path / "pairs.csv"
    path.write_text("policy_a,policy_b,winner\na,b,zed\na,a,a\n")
    with pytest.raises(MetasimInputError) as err:
        load_pairwise_csv(path)
    text = err.value.render()
    assert "pairs.csv" in text and "line 2" in text and "'winner'" in text and "line 3" in text
    path.write_text("policy_a,policy_b\na,b\n")
    with pytest.raises(MetasimInputError, match="winner or wins_a"):
        load_pairwise_csv(path)
