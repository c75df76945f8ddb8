"""A study from `metasim eval` run folders (simulated) and a CSV of real results.

Each run folder's summary.json gives, per task, the simulated success rate and episode
count of one policy, named by `config.policy.name` if the policy config has one, else
`config.policy.kind`. real.csv has columns task, policy, real_success and optional
real_n. Tasks and policies are matched by name; anything on one side only is an error.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from metasim.correlate.study import Entry, Study, check_unique
from metasim.correlate.tables import Problems, Row, parse_count, parse_name, parse_rate, read_rows
from metasim.errors import MetasimInputError

REAL_COLUMNS = ["task", "policy", "real_success"]

SimRow = tuple[float, int | None, str]  # rate, episodes, run folder


def _summary(run_dir: Path) -> dict[str, Any]:
    path = run_dir / "summary.json"
    if not path.is_file():
        hint = "expected a run folder written by `metasim eval`"
        raise MetasimInputError(str(run_dir), [f"no summary.json ({hint})"])
    try:
        data = json.loads(path.read_text())
    except (OSError, ValueError) as exc:
        raise MetasimInputError(str(path), [f"not valid JSON ({exc})"]) from None
    if not isinstance(data, dict) or not isinstance(data.get("tasks"), dict):
        raise MetasimInputError(str(path), ["expected an object with a 'tasks' object"])
    return data


def policy_name(summary: dict[str, Any]) -> str | None:
    """The policy of a run: config.policy.name, else config.policy.kind."""
    config = summary.get("config")
    policy = config.get("policy") if isinstance(config, dict) else None
    if not isinstance(policy, dict):
        return None
    name = policy.get("name") or policy.get("kind")
    return str(name) if name else None


def _task_rate(row: Any, where: str, problems: Problems) -> tuple[float, int | None] | None:
    """(rate, episodes) of one summary task row: successes / n, else success_rate."""
    if not isinstance(row, dict):
        problems.add(None, None, f"{where}: expected an object")
        return None
    n, k, rate = row.get("n"), row.get("successes"), row.get("success_rate")
    if not isinstance(n, int) or isinstance(n, bool) or n < 1:
        problems.add(None, None, f"{where}.n: expected a whole number ≥ 1, got {n!r}")
        return None
    if isinstance(k, int) and not isinstance(k, bool) and 0 <= k <= n:
        return k / n, n
    if isinstance(rate, int | float) and 0.0 <= rate <= 1.0:
        return float(rate), n
    problems.add(None, None, f"{where}.success_rate: expected a number in [0, 1], got {rate!r}")
    return None


def load_sim_runs(run_dirs: list[str | Path]) -> dict[tuple[str, str], SimRow]:
    """(task, policy) -> (sim rate, episodes, run folder) over every run folder."""
    out: dict[tuple[str, str], SimRow] = {}
    for run_dir in map(Path, run_dirs):
        summary = _summary(run_dir)
        source = str(run_dir / "summary.json")
        problems = Problems(source)
        policy = policy_name(summary)
        if policy is None:
            problems.add(None, None, "config.policy: no 'name' or 'kind' to name the policy")
        for task, row in summary["tasks"].items():
            got = _task_rate(row, f"tasks.{task}", problems)
            if got is None or policy is None:
                continue
            if (task, policy) in out:
                other = out[(task, policy)][2]
                problems.add(None, None, f"task {task!r} of policy {policy!r} is also in {other}")
            out[(task, policy)] = (got[0], got[1], str(run_dir))
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
