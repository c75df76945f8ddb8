"""A study from `metasim eval` run folders (simulated) and a CSV of real results.

Each run folder's summary.json gives, per task, the simulated success rate and episode
count of one policy, named by `config.policy.name` if the policy config has one, else
`config.policy.kind`. real.csv has columns task, policy, real_success and optional
real_n. Tasks and policies are matched by name; anything on one side only is an error.
"""

from __future__ import annotations

from pathlib import Path

from metasim.correlate.study import Entry, Study, check_unique
from metasim.correlate.tables import Problems, Row, parse_count, parse_name, parse_rate, read_rows
from metasim.errors import MetasimInputError
from metasim.evaluate.run_files import read_summary

REAL_COLUMNS = ["task", "policy", "real_success"]

SimRow = tuple[float, int | None, str]  # rate, episodes, run folder


def load_sim_runs(run_dirs: list[str | Path]) -> dict[tuple[str, str], SimRow]:
    """(task, policy) -> (sim rate, episodes, run folder) over every run folder."""
    out: dict[tuple[str, str], SimRow] = {}
    for run_dir in map(Path, run_dirs):
        if not run_dir.is_dir() or not (run_dir / "summary.json").is_file():
            hint = "expected a run folder written by `metasim eval`"
            raise MetasimInputError(str(run_dir), [f"no summary.json ({hint})"])
        summary = read_summary(run_dir)
        problems = Problems(str(run_dir / "summary.json"))
        policy = summary.policy_name
        if policy is None:
            problems.add(None, None, "config.policy: no 'name' or 'kind' to name the policy")
        for task, row in summary.tasks.items():
            if row.n < 1:
                where = f"tasks.{task}.n"
                problems.add(None, None, f"{where}: expected a whole number ≥ 1, got {row.n}")
                continue
            if policy is None:
                continue
            if (task, policy) in out:
                other = out[(task, policy)][2]
                problems.add(None, None, f"task {task!r} of policy {policy!r} is also in {other}")
            rate = row.successes / row.n if row.successes is not None else row.success_rate
            out[(task, policy)] = (rate, row.n, str(run_dir))
        problems.check()
    return out


def load_real_csv(path: str | Path) -> dict[tuple[str, str], tuple[float, int | None]]:
    """(task, policy) -> (real rate, episodes) from a CSV of real results."""
    problems = Problems(str(path))
    out: dict[tuple[str, str], tuple[float, int | None]] = {}
    keyed: list[tuple[tuple[str, str], Row]] = []
    for row in read_rows(path, REAL_COLUMNS, ["real_n"]):
        task = parse_name(row, "task", problems)
        policy = parse_name(row, "policy", problems)
        rate = parse_rate(row, "real_success", problems)
        n = parse_count(row, "real_n", problems)
        if task is not None and policy is not None and rate is not None:
            keyed.append(((task, policy), row))
            out.setdefault((task, policy), (rate, n))
    check_unique(keyed, problems)
    problems.check()
    return out


def _unmatched(keys: list[tuple[str, str]]) -> str:
    return ", ".join(f"{t}/{p}" for t, p in keys)


def load_study_runs(run_dirs: list[str | Path], real_csv: str | Path) -> Study:
    """Match simulated results from run folders with real results by task and policy."""
    sim = load_sim_runs(run_dirs)
    real = load_real_csv(real_csv)
    only_sim = [k for k in sim if k not in real]
    only_real = [k for k in real if k not in sim]
    problems = []
    if only_sim:
        problems.append(f"no real result for (task/policy) {_unmatched(only_sim)}")
    if only_real:
        runs = sorted({f"{t}/{p}" for t, p in sim})
        problems.append(
            f"no run folder has (task/policy) {_unmatched(only_real)}; the run folders have {runs}"
        )
    if problems:
        hint = "Policies are named by config.policy.name, else config.policy.kind"
        raise MetasimInputError(f"{real_csv} vs {len(run_dirs)} run folder(s)", problems, hint)
    entries = [
        Entry(task, policy, s[0], real[(task, policy)][0], s[1], real[(task, policy)][1])
        for (task, policy), s in sim.items()
    ]
    return Study(f"{len(run_dirs)} run folder(s) + {real_csv}", entries)
