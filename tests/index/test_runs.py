"""`metasim runs`: a folder of real runs from three suites of three benchmarks (tabletop,
LIBERO, Meta-World), listed and queried with SQL, read only: no file of a run folder
changes, a run whose lock is held (a running eval) is listed as running, and a query can
neither write nor read files."""

from __future__ import annotations

import csv
import io
import json
import shutil
from pathlib import Path
from typing import Any

import pyarrow.parquet as pq
import pytest

from metasim.cli.main import main
from metasim.evaluate.checkpoint import checkpoint_record
from metasim.evaluate.config import compose
from metasim.evaluate.runner import run_eval
from metasim.evaluate.store import RunLock

GRID = "name: tiny\ndesign: ofat\nfactors:\n  - {name: lat, axis: action_latency, levels: [0, 5]}\n"
RUNS = {
    "tt_expert": ["suite.tasks=[lift_cube]", "episodes=2"],
    "tt_noop": ["policy=noop", "suite.tasks=[lift_cube,push_to_region]", "episodes=2"],
    "sweep/tt_grid": ["suite.tasks=[lift_cube]", "episodes=2", "perturbation={grid}"],
    "libero": ["suite=libero_spatial", "policy=noop", "suite.tasks=[libero:libero_spatial/0]"],
    "metaworld": [
        "suite=metaworld_mt10",
        "policy=metaworld_expert",
        "suite.tasks=[metaworld:reach-v3]",
    ],
}


@pytest.fixture(scope="module")
def root(tmp_path_factory: pytest.TempPathFactory) -> Path:
    base = tmp_path_factory.mktemp("runs")
    grid = base / "tiny.yaml"
    grid.write_text(GRID)
    for name, args in RUNS.items():
        args = [a.format(grid=grid) for a in args]
        run_eval(compose(["num_envs=2", "episodes=1", "seed=5", *args, f"out={base / name}"]))
    (base / "notes").mkdir()
    (base / "notes" / "readme.txt").write_text("not a run")
    shutil.copytree(base / "tt_expert", base / "damaged")
    (base / "damaged" / "manifest.json").write_text('{"config": {"suite"')  # truncated
    return base


def snapshot(base: Path) -> dict[str, tuple[int, int]]:
    return {str(p): (p.stat().st_size, p.stat().st_mtime_ns) for p in base.rglob("*")}


def listing(capsys: pytest.CaptureFixture[str], base: Path) -> tuple[list[dict[str, Any]], str]:
    assert main(["runs", str(base), "--json"]) == 0
    out = capsys.readouterr()
    return json.loads(out.out), out.err


def sql(capsys: pytest.CaptureFixture[str], base: Path, query: str) -> list[dict[str, str]]:
    assert main(["runs", str(base), "--sql", query]) == 0
    return list(csv.DictReader(io.StringIO(capsys.readouterr().out)))


@pytest.mark.reference
def test_lists_every_run_with_its_manifest_fields(root: Path, capsys) -> None:
    rows, err = listing(capsys, root)
    by = {r["run"]: r for r in rows}
    assert set(by) == {*RUNS, "damaged"}
    assert {by[n]["suite"] for n in RUNS} == {"tabletop", "libero_spatial", "metaworld_mt10"}
    assert by["damaged"]["status"].startswith("damaged: manifest.json")
    assert "damaged" in err and "Traceback" not in err
    for name in RUNS:
        r = by[name]
        summary = json.loads((root / name / "summary.json").read_text())
        k = sum(t["successes"] for t in summary["tasks"].values())
        n = sum(t["n"] for t in summary["tasks"].values())
        assert (r["successes"], r["success_rate"]) == (k, k / n)
        assert r["episodes_done"] == r["episodes_planned"] == n
        assert r["status"] == "complete" and r["seed"] == 5 and r["backend"] == "mujoco"
        assert r["git_commit"] and r["metasim_version"]
        assert "MuJoCo offscreen OpenGL" in r["renderer"]
        assert r["manifest"]["config"]["suite"]["name"] == r["suite"]
    assert by["sweep/tt_grid"]["cells"] == 2 and by["sweep/tt_grid"]["perturbation"].endswith(
        "tiny.yaml"
    )
    assert (
        by["tt_noop"]["policy_kind"] == "noop"
        and by["metaworld"]["policy_kind"] == "metaworld_expert"
    )


@pytest.mark.reference
def test_table_listing(root: Path, capsys) -> None:
    assert main(["runs", str(root)]) == 0
    text = capsys.readouterr().out
    assert "6 run folder(s)" in text and "libero_spatial" in text and "sweep/tt_grid" in text


@pytest.mark.reference
def test_sql_over_all_runs_episodes_and_manifests(root: Path, capsys) -> None:
    got = sql(
        capsys,
        root,
        "SELECT r.run, r.suite, r.manifest->>'$.config.policy.kind' AS kind, "
        "count(*) AS n, sum(e.success::INT) AS k "
        "FROM runs r JOIN episodes e USING (run) GROUP BY ALL ORDER BY r.run",
    )
    # The damaged run's manifest is unreadable: its episodes are left out (issue 47), not
    # counted as some run's whose config nobody can read.
    assert [g["run"] for g in got] == sorted(RUNS)
    for g in got:
        table = pq.read_table(root / g["run"] / "episodes.parquet")
        assert int(g["n"]) == table.num_rows
        assert int(g["k"]) == sum(table.column("success").to_pylist())
        if g["run"] in RUNS:
            manifest = json.loads((root / g["run"] / "manifest.json").read_text())
            assert g["kind"] == manifest["config"]["policy"]["kind"]
    rows = sql(
        capsys, root, "SELECT count(DISTINCT suite) AS suites FROM runs WHERE suite IS NOT NULL"
    )
    assert rows == [{"suites": "3"}]


@pytest.mark.reference
def test_never_writes_or_locks_a_run_folder(root: Path, capsys) -> None:
    """While a writer holds tt_expert's lock (as a running eval does), listing and
    querying work, list it as running, and leave every file as it was; the lock is
    still held afterwards (no reader took or broke it)."""
    before = snapshot(root)
    lock = RunLock(root / "tt_expert")
    try:
        rows, _ = listing(capsys, root)
        assert {r["run"]: r["status"] for r in rows}["tt_expert"] == "running"
        assert sql(capsys, root, "SELECT count(*) AS n FROM episodes WHERE run = 'tt_expert'")
        with pytest.raises(Exception, match="another metasim eval"):
            RunLock(root / "tt_expert")
    finally:
        lock.release()
    after = snapshot(root)
    changed = {p for p in before if before[p] != after.get(p)} - {
        str(root / "tt_expert" / "run.lock")
    }
    assert changed == set() and set(after) == set(before)


@pytest.mark.reference
@pytest.mark.parametrize(
    "query, fragment",
    [
        ("COPY (SELECT 1) TO '{root}/tt_expert/out.csv'", "disabled"),
        ("SELECT * FROM read_csv('{root}/notes/readme.txt')", "disabled"),
        ("SET enable_external_access = true", "locked"),
        ("SELEC 1", "syntax error"),
    ],
)
def test_queries_cannot_touch_files_and_bad_sql_is_one_paragraph(
    root: Path, capsys, query: str, fragment: str
) -> None:
    assert main(["runs", str(root), "--sql", query.format(root=root)]) == 2
    err = capsys.readouterr().err
    *warnings, error = err.strip().splitlines()
    # the root holds a damaged run, whose episodes are left out with a warning
    assert all(line.startswith("warning: ") for line in warnings), err
    assert error.startswith("error: --sql:") and fragment in error and "Traceback" not in err
    assert len(warnings) == 1 and "damaged" in warnings[0], err  # one paragraph each
    assert not (root / "tt_expert" / "out.csv").exists()


def test_missing_root_is_refused(tmp_path: Path, capsys) -> None:
    assert main(["runs", str(tmp_path / "nope")]) == 2
    assert "nope" in capsys.readouterr().err


def test_checkpoint_hash_depends_on_content_not_location(tmp_path: Path) -> None:
    one, two = tmp_path / "one", tmp_path / "two"
    (one / "sub").mkdir(parents=True)
    (one / "model.safetensors").write_bytes(b"weights")
    (one / "sub" / "config.json").write_text("{}")
    shutil.copytree(one, two)
    a, b = checkpoint_record({"path": str(one)}), checkpoint_record({"path": str(two)})
    assert a is not None and b is not None and a["sha256"] == b["sha256"] and a["path"] != b["path"]
    (two / "model.safetensors").write_bytes(b"weightz")
    assert checkpoint_record({"path": str(two)})["sha256"] != a["sha256"]  # type: ignore[index]
    assert checkpoint_record({"kind": "openpi"}) is None
    assert checkpoint_record({"args": {"checkpoint": str(tmp_path / "gone")}}) == {
        "path": str(tmp_path / "gone"),
        "sha256": None,
    }


@pytest.mark.parametrize(
    ("manifest", "says"),
    [
        ("[]", "expected the JSON object metasim eval writes"),
        ('{"policy": "noop"}', "expected the JSON object metasim eval writes"),
        ("[" * 200 + "]" * 200, "nested more than"),
    ],
)
def test_a_manifest_the_loader_refuses_is_listed_as_damaged(
    tmp_path: Path, capsys, manifest: str, says: str
) -> None:
    run = tmp_path / "runs" / "odd"
    run.mkdir(parents=True)
    (run / "manifest.json").write_text(manifest)
    rows, err = listing(capsys, tmp_path / "runs")
    (row,) = rows
    assert row["status"].startswith("damaged: manifest.json: cannot be read") and says in err
    assert "Traceback" not in err
