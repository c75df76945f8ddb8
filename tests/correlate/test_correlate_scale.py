"""`metasim correlate` at LIBERO-90 size: linear in the rows (no N × N arrays for the
pooled sample), bounded replicates and memory, and one-line refusals of bad arguments."""

from __future__ import annotations

import json
import time
import tracemalloc
from pathlib import Path

import numpy as np
import pytest

from metasim.cli.main import main
from metasim.correlate import metrics as M
from metasim.correlate.analysis import BootstrapSpec, analyze
from metasim.correlate.study import load_study_csv
from tests.cli_refusal import refused


def write_study(path: Path, tasks: int, policies: int, seed: int = 1) -> Path:
    """A study CSV of tasks × policies rows with episode counts (sim 50, real 20)."""
    rng = np.random.default_rng(seed)
    lines = ["task,policy,sim_success,real_success,sim_n,real_n"]
    for t in range(tasks):
        q = rng.random(policies)
        real = np.clip(q + rng.normal(0, 0.1, policies), 0, 1)
        for p in range(policies):
            sim_rate, real_rate = rng.binomial(50, q[p]) / 50, rng.binomial(20, real[p]) / 20
            lines.append(f"task{t},pol{p},{sim_rate},{real_rate},50,20")
    path.write_text("\n".join(lines) + "\n")
    return path


@pytest.mark.parametrize("n", [2, 3, 20, 65, 300])
def test_linear_forms_equal_the_pairwise_definitions(n: int, monkeypatch) -> None:
    """Kendall's τ-b and MMRV above _PAIRWISE_MAX_N equal the (B, N, N) forms, ties included."""
    rng = np.random.default_rng(n)
    sim, real = rng.integers(0, 6, (40, n)) / 5, rng.integers(0, 6, (40, n)) / 5
    monkeypatch.setattr(M, "_PAIRWISE_MAX_N", 10**9)
    pair_tau, pair_mmrv = M.kendall_batch(sim, real), M.mmrv_batch(sim=sim, real=real)
    monkeypatch.setattr(M, "_PAIRWISE_MAX_N", 0)
    np.testing.assert_allclose(M.kendall_batch(sim, real), pair_tau, atol=1e-12)
    np.testing.assert_allclose(M.mmrv_batch(sim=sim, real=real), pair_mmrv, atol=1e-12)


@pytest.mark.parametrize("reps", [500, pytest.param(2000, marks=pytest.mark.slow)])
def test_libero90_by_20_policies_is_fast_and_small(tmp_path: Path, reps: int) -> None:
    """90 tasks × 20 policies (1,800 rows): the pooled sample was reps × 1,800² pairwise
    cells (85 s at 200 replicates, about 4 min at 2,000 before); now seconds of CPU and
    under 300 MiB of Python allocations (CI runs 500 replicates, slow runs the default)."""
    study = load_study_csv(write_study(tmp_path / "s.csv", 90, 20))
    tracemalloc.start()
    cpu = time.process_time()
    result = analyze(study, BootstrapSpec(reps=reps))
    cpu = time.process_time() - cpu
    peak = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()
    assert result["pooled"]["n_points"] == 1800 and result["pooled"]["ci95"]["kendall"]
    assert cpu < 60, f"{cpu:.1f} s of CPU"  # 2,000 reps: about 5 s untraced on the dev machine
    assert peak < 300 * 2**20, f"{peak / 2**20:.0f} MiB"


@pytest.fixture
def study_csv(tmp_path: Path) -> Path:
    return write_study(tmp_path / "s.csv", 2, 3)


@pytest.mark.parametrize(
    ("extra", "expected"),
    [
        (["--seed", "-1"], "--seed"),
        (["--seed", str(2**32)], "--seed"),
        (["--reps", "1000000000"], "--reps"),
        (["--prior", "inf"], "--prior"),
        (["--plot", "{blocker}/p.png"], "is a file"),
        (["--html", "{blocker}/p.html"], "is a file"),
        (["--html", "{tmp}"], "is a folder"),
    ],
)
def test_bad_arguments(capsys, tmp_path, study_csv, extra, expected) -> None:
    (tmp_path / "blocker").write_text("x")
    extra = [e.format(blocker=tmp_path / "blocker", tmp=tmp_path) for e in extra]
    assert expected in refused(capsys, ["correlate", "--input", str(study_csv), *extra])


def test_replicates_times_rows_is_bounded(capsys, tmp_path, monkeypatch) -> None:
    csv = write_study(tmp_path / "s.csv", 10, 10)
    monkeypatch.setenv("METASIM_CORRELATE_MAX_CELLS", "50000")
    err = refused(capsys, ["correlate", "--input", str(csv), "--reps", "1000"])
    assert "--reps × rows is 100000" in err and "METASIM_CORRELATE_MAX_CELLS" in err


def test_episode_count_too_large(capsys, tmp_path) -> None:
    csv = tmp_path / "s.csv"
    csv.write_text("task,policy,sim_success,real_success,sim_n\nt,a,0.5,0.5,1e30\nt,b,0.2,0.1,10\n")
    err = refused(capsys, ["correlate", "--input", str(csv), "--reps", "10"])
    assert "sim_n" in err and "1e30" in err


def test_json_output_unchanged_in_shape(capsys, study_csv) -> None:
    assert main(["correlate", "--input", str(study_csv), "--json", "--reps", "50"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert set(out["pooled"]["ci95"]) == {"pearson", "spearman", "kendall", "mmrv"}
