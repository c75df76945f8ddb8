"""`metasim correlate` end to end: CSV or run folders in, JSON or a table out, PNG written."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from PIL import Image

from metasim.cli.main import main
from metasim.correlate import kendall, mmrv, pearson, spearman

STUDY = """task,policy,sim_success,real_success,sim_n,real_n
lift,a,0.9,0.8,50,20
lift,b,0.6,0.5,50,20
lift,c,0.3,0.4,50,20
lift,d,0.1,0.05,50,20
drawer,a,0.7,0.6,50,20
drawer,b,0.5,0.7,50,20
drawer,c,0.2,0.1,50,20
"""


def _write(tmp_path: Path, text: str, name: str = "study.csv") -> Path:
    path = tmp_path / name
    path.write_text(text)
    return path


def test_csv_to_json_and_png(tmp_path, capsys):
    csv = _write(tmp_path, STUDY)
    png = tmp_path / "plots" / "scatter.png"
    code = main(["correlate", "--input", str(csv), "--json", "--plot", str(png), "--reps", "300"])
    assert code == 0
    out = json.loads(capsys.readouterr().out)
    lift = out["tasks"]["lift"]
    sim, real = [0.9, 0.6, 0.3, 0.1], [0.8, 0.5, 0.4, 0.05]
    assert lift["n_policies"] == 4
    assert lift["pearson"] == pytest.approx(pearson(sim, real))
    assert lift["spearman"] == pytest.approx(spearman(sim, real)) == pytest.approx(1.0)
    assert lift["kendall"] == pytest.approx(kendall(sim, real))
    assert lift["mmrv"] == pytest.approx(mmrv(sim=sim, real=real)) == 0.0
    assert out["tasks"]["drawer"]["mmrv"] == pytest.approx(0.2 / 3)
    for name in ("pearson", "spearman", "kendall", "mmrv"):
        lo, hi = lift["ci95"][name]
        assert lo <= hi
    assert out["pooled"]["n_points"] == 7
    assert out["method"]["reps"] == 300 and "Binomial" in out["method"]["resampling"]
    assert out["plot"] == str(png)
    image = np.asarray(Image.open(png).convert("RGB"))
    assert image.shape[0] > 300 and image.shape[1] > 300
    assert png.stat().st_size > 10_000
    assert len(np.unique(image.reshape(-1, 3), axis=0)) > 50  # points, bars, text: not blank


def test_table_output(tmp_path, capsys):
    csv = _write(tmp_path, STUDY + "solo,a,0.5,0.5,,\n")
    assert main(["correlate", "--input", str(csv), "--reps", "100"]) == 0
    captured = capsys.readouterr()
    for word in ("lift", "drawer", "Pearson", "MMRV", "pooled", "percentile bootstrap", "100"):
        assert word in captured.out
    assert "solo" in captured.err and "need 2" in captured.err


BAD = [
    ("task,policy,sim_success\nlift,a,0.5\n", ["'real_success'", "missing column"]),
    ("task,policy,sim_success,real_success\nlift,a,high,0.5\n", ["line 2", "'sim_success'"]),
    (
        "task,policy,sim_success,real_success\nlift,a,0.5,80\n",
        ["line 2", "'real_success'", "[0, 1]"],
    ),
    ("task,policy,sim_success,real_success,sim_n\nlift,a,0.5,0.5,-3\n", ["line 2", "'sim_n'"]),
    (
        "task,policy,sim_success,real_success\nl,a,0.5,0.5\nl,b,0.1,0.2\nl,a,0.3,0.3\n",
        ["line 4", "duplicate", "line 2"],
    ),
    ("task,policy,sim_success,real_success\n,a,0.5,0.5\n", ["line 2", "'task'"]),
    ("", ["empty file"]),
]


@pytest.mark.parametrize(("text", "expected"), BAD, ids=lambda v: str(v)[:24])
def test_bad_csv_exits_2_naming_file_and_column(tmp_path, capsys, text, expected):
    csv = _write(tmp_path, text, "bad_study.csv")
    assert main(["correlate", "--input", str(csv), "--reps", "10"]) == 2
    err = capsys.readouterr().err
    assert "bad_study.csv" in err and "Traceback" not in err
    for word in expected:
        assert word in err
    assert err.count("\n") == 1  # one paragraph


@pytest.mark.slow
def test_bad_csv_through_the_console_script(tmp_path):
    csv = _write(tmp_path, "task,policy,sim_success,real_success\nlift,a,0.5,nope\n", "x.csv")
    proc = subprocess.run(
        [sys.executable, "-m", "metasim.cli", "correlate", "--input", str(csv)],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert proc.returncode == 2
    assert "x.csv" in proc.stderr and "'real_success'" in proc.stderr
    assert "Traceback" not in proc.stderr


def _run_dir(root: Path, name: str, policy: dict, tasks: dict[str, tuple[int, int]]) -> Path:
    """A run folder shaped like `metasim eval`'s: summary.json only."""
    run = root / name
    run.mkdir()
    rows = {
        task: {"success_rate": k / n, "n": n, "successes": k, "ci95": [0.0, 1.0]}
        for task, (k, n) in tasks.items()
    }
    summary = {"tasks": rows, "config": {"policy": policy, "episodes": 10}, "versions": {}}
    (run / "summary.json").write_text(json.dumps(summary))
    return run


def test_run_folders_and_real_csv(tmp_path, capsys):
    a = _run_dir(tmp_path, "a", {"kind": "scripted"}, {"lift": (9, 10), "drawer": (6, 10)})
    b = _run_dir(
        tmp_path, "b", {"kind": "http", "name": "pi0"}, {"lift": (4, 10), "drawer": (8, 10)}
    )
    c = _run_dir(tmp_path, "c", {"kind": "lerobot"}, {"lift": (1, 10), "drawer": (2, 10)})
    real = _write(
        tmp_path,
        "task,policy,real_success,real_n\nlift,scripted,0.7,10\nlift,pi0,0.5,10\n"
        "lift,lerobot,0.0,10\ndrawer,scripted,0.5,10\ndrawer,pi0,0.6,10\ndrawer,lerobot,0.1,10\n",
        "real.csv",
    )
    argv = ["correlate", "--sim", str(a), str(b), str(c), "--real", str(real), "--json"]
    assert main([*argv, "--reps", "200"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["tasks"]["lift"]["policies"] == ["scripted", "pi0", "lerobot"]
    assert out["tasks"]["lift"]["kendall"] == pytest.approx(1.0)
    assert out["tasks"]["drawer"]["pearson"] == pytest.approx(
        pearson([0.6, 0.8, 0.2], [0.5, 0.6, 0.1])
    )
    assert out["method"]["episode_counts_known"] == {"sim": "6 of 6", "real": "6 of 6"}


def test_run_folders_unmatched_names(tmp_path, capsys):
    a = _run_dir(tmp_path, "a", {"kind": "scripted"}, {"lift": (9, 10)})
    b = _run_dir(tmp_path, "b", {"kind": "lerobot"}, {"lift": (3, 10)})
    real = _write(
        tmp_path, "task,policy,real_success\nlift,scripted,0.7\nlift,pi0,0.2\n", "real.csv"
    )
    assert main(["correlate", "--sim", str(a), str(b), "--real", str(real)]) == 2
    err = capsys.readouterr().err
    assert "real.csv" in err and "lift/lerobot" in err and "lift/pi0" in err
    assert "Traceback" not in err


def test_not_a_run_folder(tmp_path, capsys):
    real = _write(tmp_path, "task,policy,real_success\nlift,a,0.7\n", "real.csv")
    assert main(["correlate", "--sim", str(tmp_path / "nowhere"), "--real", str(real)]) == 2
    assert "summary.json" in capsys.readouterr().err


def test_sim_needs_real(tmp_path, capsys):
    run = _run_dir(tmp_path, "a", {"kind": "scripted"}, {"lift": (9, 10)})
    assert main(["correlate", "--sim", str(run)]) == 2
    assert "--real" in capsys.readouterr().err


def test_pairs_ranking(tmp_path, capsys):
    pairs = _write(
        tmp_path, "policy_a,policy_b,wins_a,wins_b\na,b,8,2\nb,c,7,3\na,c,9,1\nc,a,1,1\n", "p.csv"
    )
    assert main(["correlate", "--pairs", str(pairs), "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert [r["policy"] for r in out["ranking"]] == ["a", "b", "c"]
    assert out["n_comparisons"] == 32
    assert main(["correlate", "--pairs", str(pairs)]) == 0
    assert "Bradley–Terry" in capsys.readouterr().out


def test_pairs_without_mle_exit_2(tmp_path, capsys):
    pairs = _write(tmp_path, "policy_a,policy_b,winner\na,b,a\na,b,a\n", "p.csv")
    assert main(["correlate", "--pairs", str(pairs)]) == 2
    err = capsys.readouterr().err
    assert "p.csv" in err and "--prior" in err
    assert main(["correlate", "--pairs", str(pairs), "--prior", "1", "--json"]) == 0


def test_html_page_has_the_table_and_the_scatter(tmp_path, capsys):
    csv = _write(tmp_path, STUDY)
    page = tmp_path / "study.html"
    assert main(["correlate", "--input", str(csv), "--html", str(page), "--reps", "200"]) == 0
    text = page.read_text()
    assert '<img src="data:image/png;base64,' in text
    for needle in ("lift", "drawer", "pooled", "Pearson r", "MMRV", "Binomial"):
        assert needle in text
    assert "http://" not in text and "https://" not in text
