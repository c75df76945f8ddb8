"""Verbs refuse what would hang, exhaust memory or end in a traceback (issue #23 items 4
and 5): exit 2 with one line naming the argument. Run in-process, as `metasim` would."""

from __future__ import annotations

import socket
from pathlib import Path

import pytest

from metasim.cli.main import main
from metasim.errors import MetasimInputError


def exit2(capsys, argv: list[str]) -> str:
    """Run the CLI in-process; it must exit 2 with one line and no traceback."""
    with pytest.raises(SystemExit) as info:
        code = main(argv)
        raise SystemExit(code)
    err = capsys.readouterr().err
    assert info.value.code == 2, err
    assert err.startswith("error: ") and "Traceback" not in err
    assert len(err.strip().splitlines()) == 1, err
    return err


@pytest.mark.parametrize(
    "argv",
    [
        ["bench", "physics", "--num-envs", "100000000"],
        ["bench", "physics", "--steps", "100000000"],
        ["bench", "physics", "--num-envs", "4096", "--steps", "10000"],  # memory budget
        ["bench", "peers", "--num-envs", "100000000"],
        ["bench", "render", "--frames", "100000000"],
        ["bench", "cameras", "--num-envs", "100000000"],
        ["serve", "--max-frame-mb", "inf"],
        ["serve", "--port", "70000"],
        ["report", "RUN", "--videos", "1000000000"],
        ["recon", "IN", "--out", "OUT", "--voxel", "nan"],
        ["compare", "A", "B", "--reps", "100000000"],
        ["compare", "A", "B", "--videos", "1000"],
    ],
)
def test_huge_or_non_finite_numbers_exit_2(capsys, argv: list[str]) -> None:
    err = exit2(capsys, argv)
    assert "expected" in err or "limit" in err


def test_output_under_a_file_exits_2(capsys, tmp_path: Path) -> None:
    blocker = tmp_path / "f"
    blocker.write_text("x")
    for argv in (
        ["bench", "physics", "--profile", str(blocker / "p.prof")],
        ["scene", "render", "scenes/lift_cube.yaml", "--out", str(blocker / "d")],
        ["scene", "render", "scenes/lift_cube.yaml", "--out", str(blocker)],
        ["compare", "A", "B", "--plot", str(blocker / "p.png")],
        ["compare", "A", "B", "--html", str(blocker / "c.html")],
    ):
        assert "is a file" in exit2(capsys, argv)


def test_profile_outputs_are_checked_for_what_they_hold(capsys, tmp_path: Path) -> None:
    """`bench physics --profile P --num-envs 1 2` writes P.1, P.1.txt, P.2, P.2.txt: a
    user's file at any of them is refused before any work, and kept (issue #33 item 1)."""
    prof = tmp_path / "p.prof"
    mine = tmp_path / "p.prof.2.txt"
    mine.write_text("my notes\n")
    argv = ["bench", "physics", "--profile", str(prof), "--num-envs", "1", "2", "--steps", "2"]
    assert f"{mine} exists and is not a profile text" in exit2(capsys, argv)
    assert mine.read_text() == "my notes\n"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["p.prof.2.txt"]


def test_serve_on_a_port_in_use_exits_2(capsys) -> None:
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        err = exit2(capsys, ["serve", "policy=scripted", "--port", str(port)])
    assert f"--port {port}" in err and "cannot listen" in err


@pytest.mark.parametrize(
    ("target", "expected"),
    [
        ("math:pi", "not a class"),
        ("collections:OrderedDict", "no infer"),
        ("json:JSONDecoder.decode", "with policy.args"),
        ("metasim.no_such_module:X", "cannot load"),
    ],
)
def test_python_policy_with_a_bad_target_is_an_input_error(target: str, expected: str) -> None:
    from metasim.policies.remote import PythonOptions, _instance, load_target

    with pytest.raises(MetasimInputError, match=expected):
        _instance(load_target(target), PythonOptions(target=target, args={}))


def test_csv_over_its_size_limit_exits_2(capsys, tmp_path: Path, monkeypatch) -> None:
    csv = tmp_path / "s.csv"
    csv.write_text("task,policy,sim_success,real_success\nt,a,0.5,0.5\nt,b,0.2,0.1\n")
    monkeypatch.setenv("METASIM_CSV_MAX_BYTES", "16")
    err = exit2(capsys, ["correlate", "--input", str(csv), "--reps", "10"])
    assert "s.csv" in err and "METASIM_CSV_MAX_BYTES" in err


def test_parquet_over_its_size_limit_exits_2(capsys, tmp_path: Path, monkeypatch) -> None:
    import json

    import pyarrow as pa
    import pyarrow.parquet as pq

    task = {"success_rate": 1.0, "n": 1, "successes": 1, "ci95": [0, 1]}
    task |= {"mean_progress": 1.0, "mean_steps": 1, "errors": 0}
    (tmp_path / "summary.json").write_text(json.dumps({"tasks": {"t": task}, "config": {}}))
    pq.write_table(pa.table({"task": ["t"]}), tmp_path / "episodes.parquet")
    monkeypatch.setenv("METASIM_PARQUET_MAX_BYTES", "16")
    err = exit2(capsys, ["report", str(tmp_path)])
    assert "episodes.parquet" in err and "METASIM_PARQUET_MAX_BYTES" in err


def test_outputs_in_new_folders_are_made(capsys, tmp_path: Path) -> None:
    """A --plot/--html in a folder that does not exist yet is written, not a traceback."""
    csv = tmp_path / "s.csv"
    csv.write_text("task,policy,sim_success,real_success\nt,a,0.5,0.4\nt,b,0.2,0.1\nt,c,0.9,0.7\n")
    plot, html = tmp_path / "new" / "p.png", tmp_path / "other" / "deep" / "p.html"
    argv = ["correlate", "--input", str(csv), "--reps", "20", "--json"]
    assert main([*argv, "--plot", str(plot), "--html", str(html)]) == 0
    assert plot.stat().st_size > 0 and html.stat().st_size > 0


def test_an_action_space_that_does_not_fit_the_robot_names_the_field(
    capsys, tmp_path: Path
) -> None:
    """Meta-World's expert (mocap_delta) on a position-controlled robot: one readable
    line naming policy.actions.space (issue #33 item 6: it read "policy.a mocap-driven")."""
    argv = ["eval", "--quiet", "suite.tasks=[lift_cube]", "policy=metaworld_expert"]
    err = exit2(capsys, [*argv, "episodes=1", f"out={tmp_path / 'run'}"])
    assert "policy.actions.space 'mocap_delta' cannot drive a 'position' robot: a " in err, err


VERBS_NOW = [
    "bench", "check", "collect", "compare", "correlate", "eval",
    "recon", "report", "runs", "scene", "schema", "serve",
]  # fmt: skip


def test_one_name_per_verb() -> None:
    """`metasim --help` lists the 12 verbs; the plug-ins' check verbs are reached only as
    `metasim check CHECK --benchmark NAME` (docs/release_notes.md)."""
    from metasim.cli.check_cmd import check_verbs
    from metasim.cli.main import build_parser

    verbs = set(next(a for a in build_parser()._actions if a.dest == "verb").choices)
    assert set(VERBS_NOW) <= verbs  # (a test's own plug-in may add a verb of its own)
    assert {"libero", "metaworld", "robosuite"} <= set(check_verbs())
    assert not set(check_verbs()) & verbs and "metaworld-compare" not in verbs


@pytest.mark.parametrize(
    "argv",
    [
        ["metaworld-compare", "--suite", "metaworld_mt10"],
        ["metaworld", "parity", "--pairs", "1"],
        ["libero", "xcheck", "--policy", "noop"],
        ["robosuite", "modeldiff"],
    ],
)
def test_old_spellings_are_refused_as_unknown_verbs(capsys, argv: list[str]) -> None:
    """The removed spellings fail as any unknown verb does: exit 2, one line naming it and
    the verbs there are (`check` among them)."""
    err = exit2(capsys, argv)
    assert f"invalid choice: '{argv[0]}'" in err and "'check'" in err, err
