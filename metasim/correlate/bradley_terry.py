"""Bradley–Terry ranking from head-to-head outcomes (RoboArena's approach).

P(A beats B) = σ(θ_A − θ_B). θ is fit by maximum likelihood (Newton's method with a
trust region, scipy.optimize) under Σθ = 0, and each θ gets a Wald interval from the
inverse Fisher information (the Moore–Penrose pseudo-inverse of the weighted Laplacian,
which is the covariance of the sum-to-zero parametrization).

Input CSV: columns policy_a, policy_b and either `winner` (one of the two names, or
`tie`) per comparison, or counts `wins_a`, `wins_b` (and optionally `ties`) per row.
A tie counts half a win for each side.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
from numpy.typing import NDArray
from scipy import optimize, sparse, special
from scipy.sparse.csgraph import connected_components

from metasim.correlate.tables import Problems, Row, read_rows

Array = NDArray[np.float64]
TIE_WORDS = {"tie", "draw"}


@dataclass(frozen=True)
class Pairwise:
    """Head-to-head outcomes: wins[i, j] = times policies[i] beat policies[j], (P, P)."""

    policies: list[str]
    wins: Array


@dataclass(frozen=True)
class BTFit:
    """Fitted strengths θ (Σθ = 0), their standard errors and 95% intervals, all (P,)."""

    policies: list[str]
    theta: Array
    se: Array
    level: float
    n_comparisons: float
    prior: float

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready, strongest first."""
        z = float(special.ndtri(0.5 + self.level / 2))
        order = np.argsort(-self.theta, kind="stable")
        rows = [
            {
                "rank": rank + 1,
                "policy": self.policies[i],
                "theta": float(self.theta[i]),
                "se": float(self.se[i]),
                "ci95": [
                    float(self.theta[i] - z * self.se[i]),
                    float(self.theta[i] + z * self.se[i]),
                ],
            }
            for rank, i in enumerate(order)
        ]
        method = {
            "model": "Bradley–Terry, P(A beats B) = sigmoid(theta_A - theta_B), sum(theta) = 0",
            "fit": "maximum likelihood (scipy.optimize trust-exact)",
            "interval": f"{self.level:.0%} Wald interval from the inverse Fisher information",
            "prior_ties_per_pair": self.prior,
        }
        return {"ranking": rows, "n_comparisons": self.n_comparisons, "method": method}


def _nll(theta: Array, wins: Array) -> tuple[float, Array]:
    """Negative log-likelihood (plus ½(Σθ)², which pins the sum at 0) and its gradient."""
    d = theta[:, None] - theta[None, :]
    nll = -float((wins * special.log_expit(d)).sum()) + 0.5 * float(theta.sum()) ** 2
    total = wins + wins.T
    grad = (total * special.expit(d) - wins).sum(axis=1) + theta.sum()
    return nll, grad


def _fisher(theta: Array, wins: Array) -> Array:
    """Fisher information (P, P): the Laplacian weighted by n_ij p_ij (1 − p_ij)."""
    p = special.expit(theta[:, None] - theta[None, :])
    w = (wins + wins.T) * p * (1.0 - p)
    return np.diag(w.sum(axis=1)) - w


def check_identifiable(data: Pairwise) -> list[str]:
    """Why the MLE does not exist, if it does not: the beat graph must be strongly connected."""
    graph = sparse.csr_matrix(data.wins > 0)
    count, labels = connected_components(graph, directed=True, connection="strong")
    if count <= 1:
        return []
    groups = [
        [p for p, lab in zip(data.policies, labels, strict=True) if lab == g] for g in range(count)
    ]
    return [
        "the maximum-likelihood θ does not exist: some group of policies never lost to (or never "
        f"beat) the rest; strongly connected groups: {groups}; add comparisons or a prior"
    ]


def fit_bradley_terry(data: Pairwise, level: float = 0.95, prior: float = 0.0) -> BTFit:
    """Maximum-likelihood θ with a Wald interval per policy.

    `prior` adds that many virtual ties between every pair of policies (½ win each way),
    which makes the fit exist when a policy won or lost every comparison.
    """
    wins = data.wins + prior / 2.0 * (1.0 - np.eye(len(data.policies)))
    problems = check_identifiable(Pairwise(data.policies, wins))
    if problems:
        raise ValueError(problems[0])
    result = optimize.minimize(
        _nll,
        np.zeros(len(data.policies)),
        args=(wins,),
        jac=True,
        hess=lambda t, w: _fisher(t, w) + 1.0,
        method="trust-exact",
        options={"gtol": 1e-10},
    )
    theta = result.x - result.x.mean()
    cov = np.linalg.pinv(_fisher(theta, wins), hermitian=True)
    se = np.sqrt(np.clip(np.diag(cov), 0.0, None))
    return BTFit(data.policies, theta, se, level, float(data.wins.sum()), prior)


def _count(row: Row, column: str, problems: Problems) -> float | None:
    text = row.cells.get(column, "") or ("0" if column == "ties" else "")
    try:
        value = float(text)
    except ValueError:
        value = math.nan
    if not math.isfinite(value) or value < 0:
        problems.add(row, column, f"expected a count ≥ 0, got {text!r}")
        return None
    return value


def _outcome(
    row: Row, a: str, b: str, counts: bool, problems: Problems
) -> tuple[float, float] | None:
    """(wins of a, wins of b) in one row; a tie is half a win each."""
    if counts:
        got = [_count(row, c, problems) for c in ("wins_a", "wins_b", "ties")]
        if None in got:
            return None
        wa, wb, ties = (float(g or 0.0) for g in got)
        return wa + ties / 2, wb + ties / 2
    winner = row.cells.get("winner", "")
    if winner == a:
        return 1.0, 0.0
    if winner == b:
        return 0.0, 1.0
    if winner.lower() in TIE_WORDS:
        return 0.5, 0.5
    problems.add(row, "winner", f"expected {a!r}, {b!r} or 'tie', got {winner!r}")
    return None


def load_pairwise_csv(path: str | Path) -> Pairwise:
    """Head-to-head outcomes from a CSV (see the module doc), every problem reported at once."""
    problems = Problems(str(path))
    rows = list(
        read_rows(
            path,
            ["policy_a", "policy_b"],
            ["winner", "wins_a", "wins_b", "ties"],
            one_of=[["winner"], ["wins_a", "wins_b"]],
        )
    )
    counts = bool(rows) and "wins_a" in rows[0].cells and "wins_b" in rows[0].cells
    outcomes: list[tuple[str, str, float, float]] = []
    for row in rows:
        a, b = row.cells.get("policy_a", ""), row.cells.get("policy_b", "")
        if not a or not b or a == b:
            problems.add(
                row, "policy_b", f"expected two different policy names, got {a!r} and {b!r}"
            )
            continue
        got = _outcome(row, a, b, counts, problems)
        if got is not None:
            outcomes.append((a, b, *got))
    if not rows:
        problems.add(None, None, "no data rows")
    problems.check()
    names = sorted({a for a, *_ in outcomes} | {b for _, b, *_ in outcomes})
    index = {name: i for i, name in enumerate(names)}
    wins = np.zeros((len(names), len(names)))
    for a, b, wa, wb in outcomes:
        wins[index[a], index[b]] += wa
        wins[index[b], index[a]] += wb
    return Pairwise(names, wins)
