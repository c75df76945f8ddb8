"""Run rliable 1.2.0 on the job given as a JSON argument; print its estimates as JSON.

Runs in a separate virtualenv (rliable 1.2.0, arch 7.2.0, pandas < 3); see
test_rliable_agreement.py. One job per run, so the test can run jobs in parallel. The
argument is either
{"kind": "matrix", "scores": rows, "taus": [...], "reps": R, "seed": S} or
{"kind": "pair", "x": rows, "y": rows, "reps": R, "seed": S}.
"""

import json
import sys

import numpy as np
from rliable import library, metrics


def interval(scores, func, reps):
    point, ci = library.get_interval_estimates(
        {"a": scores}, lambda s: np.array([func(s)]), reps=reps
    )
    return {"point": float(point["a"][0]), "ci": [float(ci["a"][0, 0]), float(ci["a"][1, 0])]}


def matrix_job(req):
    s = np.asarray(req["scores"], dtype=float)
    reps = req["reps"]
    profile, profile_ci = library.create_performance_profile(
        {"a": s}, np.asarray(req["taus"]), reps=reps
    )
    return {
        "iqm": float(metrics.aggregate_iqm(s)),
        "mean": float(metrics.aggregate_mean(s)),
        "median": float(metrics.aggregate_median(s)),
        "optimality_gap": float(metrics.aggregate_optimality_gap(s)),
        "iqm_ci": interval(s, metrics.aggregate_iqm, reps),
        "mean_ci": interval(s, metrics.aggregate_mean, reps),
        "profile": profile["a"].tolist(),
        "profile_ci": profile_ci["a"].tolist(),
    }


def pair_job(req):
    x, y = np.asarray(req["x"], dtype=float), np.asarray(req["y"], dtype=float)
    point, ci = library.get_interval_estimates(
        {"a": [x, y]},
        lambda a, b: np.array([metrics.probability_of_improvement(a, b)]),
        reps=req["reps"],
    )
    return {"poi": float(point["a"][0]), "ci": [float(ci["a"][0, 0]), float(ci["a"][1, 0])]}


def main():
    req = json.loads(sys.argv[1])
    np.random.seed(req["seed"])  # noqa: NPY002 (rliable draws from the global generator)
    job = matrix_job if req["kind"] == "matrix" else pair_job
    json.dump(job(req), sys.stdout)


if __name__ == "__main__":
    main()
