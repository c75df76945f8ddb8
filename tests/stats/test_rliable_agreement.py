"""Agreement with rliable 1.2.0 itself, run in a separate virtualenv.

rliable's bootstrap (``rliable.library``) needs ``arch==7.2.0`` and ``pandas<3`` (shared
METRICS.md), which the project does not pin, so the reference runs in its own virtualenv,
built once under ``<repo>/.cache/rliable-venv`` (git-ignored) and reused. Without access to
a package index the test is skipped with the reason.

Point estimates (IQM, mean, median, optimality gap, performance profile, probability of
improvement) must agree to 1e-12. Bootstrap endpoints come from different random streams,
so they agree only up to Monte Carlo error: each endpoint must lie within
``5 * sqrt(2) * SE + gap`` of rliable's, where SE is the normal-approximation standard
error of a bootstrap quantile, sqrt(q (1 - q) / R) / phi(z_q) * sd (sd: the bootstrap
standard deviation, R: replications), sqrt(2) because both sides are estimates, and
``gap`` the local spacing of the bootstrap distribution's distinct values (statistics of
0/1 or tied scores move on a lattice, and a percentile can land on either neighbour).
With R = 20000 the continuous part is about 3.4% of the interval width.
"""

from __future__ import annotations

import fcntl
import json
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from scipy import stats

from metasim.stats import (
    iqm,
    mean,
    median,
    optimality_gap,
    performance_profile,
    probability_of_improvement,
)
from metasim.stats.aggregates import (
    bootstrap_distribution,
    interval_from_distribution,
    poi_bootstrap_distribution,
    profile_bootstrap_distribution,
)
from tests.lanes import needs

pytestmark = pytest.mark.reference

REPO = Path(__file__).resolve().parents[2]
VENV = REPO / ".cache" / "rliable-venv"
REQUIREMENTS = ["rliable==1.2.0", "arch==7.2.0", "pandas<3", "numpy", "scipy"]
SCRIPT = Path(__file__).with_name("rliable_reference.py")
REPS = 20_000  # bootstrap replications for IQM, mean and profiles, on both sides
POI_REPS = 2_000  # rliable's probability-of-improvement bootstrap is slow (scipy per task)
TAUS = [0.1, 0.25, 0.5, 0.75, 0.9]


def _build_venv() -> str | None:
    """Create the reference virtualenv if needed; return a reason to skip, or None."""
    marker = VENV / ".complete"
    if marker.exists() and marker.read_text() == " ".join(REQUIREMENTS):
        return None
    shutil.rmtree(VENV, ignore_errors=True)
    pip = [str(VENV / "bin" / "python"), "-m", "pip", "--disable-pip-version-check"]
    steps = [
        [sys.executable, "-m", "venv", str(VENV)],
        [*pip, "install", "-q", "--timeout", "60", "--retries", "3", *REQUIREMENTS],
    ]
    for step in steps:
        try:
            proc = subprocess.run(step, capture_output=True, text=True, timeout=900)
        except subprocess.TimeoutExpired:
            proc = subprocess.CompletedProcess(step, 1, "", "timed out after 900 s")
        if proc.returncode != 0:
            shutil.rmtree(VENV, ignore_errors=True)
            # pip's warnings about index locations it skips hide the error: drop them
            said = [ln for ln in proc.stderr.splitlines() if "is ignored: it is neither" not in ln]
            return "cannot build the rliable==1.2.0 test virtualenv: " + "\n".join(said)[-600:]
    marker.write_text(" ".join(REQUIREMENTS))
    return None


@pytest.fixture(scope="session")
@needs("reference")
def rliable_python() -> Path:
    """Path to the reference virtualenv's python, built once (file lock against races)."""
    VENV.parent.mkdir(parents=True, exist_ok=True)
    with open(VENV.parent / "rliable-venv.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        try:
            reason = _build_venv()
        finally:
            fcntl.flock(lock, fcntl.LOCK_UN)
    if reason:
        pytest.skip(reason)
    return VENV / "bin" / "python"


def _matrices() -> dict[str, np.ndarray]:
    rng = np.random.default_rng(2024)
    p = np.array([0.1, 0.35, 0.6, 0.8, 0.95])
    return {
        "continuous": rng.beta(2.0, 3.0, size=(10, 5)),
        "rates": rng.binomial(20, p, size=(8, 5)) / 20.0,  # success rates: many ties
    }


PAIRS = [("rates", "continuous")]  # different run counts (8 and 10), ties


def _jobs() -> dict[str, dict]:
    common = {"seed": 0}
    jobs = {
        name: {"kind": "matrix", "scores": s.tolist(), "taus": TAUS, "reps": REPS, **common}
        for name, s in _matrices().items()
    }
    for i, (x, y) in enumerate(PAIRS):
        m = _matrices()
        jobs[f"pair{i}"] = {
            "kind": "pair",
            "x": m[x].tolist(),
            "y": m[y].tolist(),
            "reps": POI_REPS,
            **common,
        }
    return jobs


@pytest.fixture(scope="module")
def reference(rliable_python: Path) -> dict[str, dict]:
    """rliable's results per job; the jobs run as parallel processes (each takes 5–15 s)."""
    procs = {}
    for name, job in _jobs().items():
        # The request travels as the one argument, so all jobs start at once.
        procs[name] = subprocess.Popen(
            [str(rliable_python), str(SCRIPT), json.dumps(job)],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
    out = {}
    for name, proc in procs.items():
        text, err = proc.communicate(timeout=600)
        assert proc.returncode == 0, err[-2000:]
        out[name] = json.loads(text)
    return out


def _tolerance(boot: np.ndarray, ours: np.ndarray, level: float = 0.95) -> np.ndarray:
    """Monte Carlo tolerance for each percentile endpoint, shape (2, *S); see module doc."""
    q = (1 - level) / 2
    se = np.sqrt(q * (1 - q) / len(boot)) / stats.norm.pdf(stats.norm.ppf(q)) * boot.std(0)
    tol = np.empty_like(ours)
    for idx in np.ndindex(ours.shape):
        rest = idx[1:]
        column = np.unique(boot[(slice(None), *rest)])
        pos = np.searchsorted(column, ours[idx])
        gaps = np.diff(column[max(pos - 2, 0) : pos + 2])
        tol[idx] = 5 * np.sqrt(2) * se[rest] + (gaps.max() if gaps.size else 0.0)
    return tol


def _check_interval(boot: np.ndarray, estimate: float, theirs: list) -> None:
    lo, hi = interval_from_distribution(boot, estimate)
    ours = np.array([lo, hi])
    tol = _tolerance(boot, ours)
    assert np.all(np.abs(ours - np.asarray(theirs)) <= tol), (ours, theirs, tol)


@pytest.mark.parametrize("name", list(_matrices()))
def test_point_estimates_match_exactly(reference, name):
    s = _matrices()[name]
    ref = reference[name]
    assert iqm(s) == pytest.approx(ref["iqm"], abs=1e-12, rel=0)
    assert mean(s) == pytest.approx(ref["mean"], abs=1e-12, rel=0)
    assert median(s) == pytest.approx(ref["median"], abs=1e-12, rel=0)
    assert optimality_gap(s) == pytest.approx(ref["optimality_gap"], abs=1e-12, rel=0)
    prof = performance_profile(s, TAUS, reps=10)
    np.testing.assert_allclose(prof.fraction, ref["profile"], rtol=0, atol=1e-12)


@pytest.mark.parametrize("name", list(_matrices()))
@pytest.mark.parametrize("stat", ["iqm", "mean"])
def test_bootstrap_intervals_within_monte_carlo_error(reference, name, stat):
    s = _matrices()[name]
    fn = {"iqm": iqm, "mean": mean}[stat]
    boot = bootstrap_distribution(s, fn, reps=REPS, seed=1)
    _check_interval(boot, fn(s), reference[name][f"{stat}_ci"]["ci"])


@pytest.mark.parametrize("name", list(_matrices()))
def test_performance_profile_bands_within_monte_carlo_error(reference, name):
    s = _matrices()[name]
    boot = profile_bootstrap_distribution(s, TAUS, reps=REPS, seed=1)
    prof = performance_profile(s, TAUS, reps=REPS, seed=1)
    ours = np.stack([prof.low, prof.high])
    theirs = np.asarray(reference[name]["profile_ci"])
    assert np.all(np.abs(ours - theirs) <= _tolerance(boot, ours)), (ours, theirs)


@pytest.mark.parametrize("pair", range(len(PAIRS)))
def test_probability_of_improvement_matches(reference, pair):
    x, y = (_matrices()[k] for k in PAIRS[pair])
    ref = reference[f"pair{pair}"]
    assert probability_of_improvement(x, y) == pytest.approx(ref["poi"], abs=1e-12, rel=0)
    boot = poi_bootstrap_distribution(x, y, reps=POI_REPS, seed=1)
    _check_interval(boot, probability_of_improvement(x, y), ref["ci"])
