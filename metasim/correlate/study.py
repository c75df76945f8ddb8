"""A sim-to-real study: per (task, policy), the simulated and real success rates.

Loaded from one CSV (`load_study_csv`) with columns task, policy, sim_success,
real_success and optional sim_n, real_n (episode counts behind each rate), or built from
`metasim eval` run folders plus a CSV of real results (`metasim.correlate.runs`).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import numpy as np
from numpy.typing import NDArray

from metasim.correlate.tables import Problems, Row, parse_count, parse_name, parse_rate, read_rows

STUDY_COLUMNS = ["task", "policy", "sim_success", "real_success"]
STUDY_OPTIONAL = ["sim_n", "real_n"]


@dataclass(frozen=True)
class Entry:
    """One policy on one task: success rates in [0, 1] and, if known, episode counts."""

    task: str
    policy: str
    sim: float
    real: float
    sim_n: int | None = None
    real_n: int | None = None


@dataclass(frozen=True)
class TaskData:
    """The N policies of one task as arrays of shape (N,); counts are 0 where unknown."""

    task: str
    policies: list[str]
    sim: NDArray[np.float64]
    real: NDArray[np.float64]
    sim_n: NDArray[np.int64]
    real_n: NDArray[np.int64]


@dataclass(frozen=True)
class Study:
    """Every entry of a study, in input order, and where it came from."""

    source: str
    entries: list[Entry]

    def tasks(self) -> list[TaskData]:
        """Per task (in first-seen order), its policies' rates and counts."""
        groups: dict[str, list[Entry]] = {}
        for e in self.entries:  # one pass: linear in the rows, not rows × tasks
            groups.setdefault(e.task, []).append(e)
        out = []
        for task, rows in groups.items():
            out.append(
                TaskData(
                    task=task,
                    policies=[e.policy for e in rows],
                    sim=np.array([e.sim for e in rows], dtype=np.float64),
                    real=np.array([e.real for e in rows], dtype=np.float64),
                    sim_n=np.array([e.sim_n or 0 for e in rows], dtype=np.int64),
                    real_n=np.array([e.real_n or 0 for e in rows], dtype=np.int64),
                )
            )
        return out


def _entry(row: Row, problems: Problems) -> Entry | None:
    task = parse_name(row, "task", problems)
    policy = parse_name(row, "policy", problems)
    sim = parse_rate(row, "sim_success", problems)
    real = parse_rate(row, "real_success", problems)
    sim_n = parse_count(row, "sim_n", problems)
    real_n = parse_count(row, "real_n", problems)
    if task is None or policy is None or sim is None or real is None:
        return None
    return Entry(task, policy, sim, real, sim_n, real_n)


def check_unique(keyed: list[tuple[tuple[str, str], Row]], problems: Problems) -> None:
    """Record a problem for every (task, policy) seen a second time."""
    first: dict[tuple[str, str], int] = {}
    for key, row in keyed:
        if key in first:
            problems.add(row, None, f"duplicate (task, policy) {key}, first on line {first[key]}")
        else:
            first[key] = row.line


def load_study_csv(path: str | Path) -> Study:
    """Read a study CSV; every bad cell, missing column and duplicate is reported at once."""
    problems = Problems(str(path))
    entries: list[Entry] = []
    keyed: list[tuple[tuple[str, str], Row]] = []
    for row in read_rows(path, STUDY_COLUMNS, STUDY_OPTIONAL):
        entry = _entry(row, problems)
        if entry is not None:
            entries.append(entry)
            keyed.append(((entry.task, entry.policy), row))
    check_unique(keyed, problems)
    if not entries and not problems.items:
        problems.add(None, None, "no data rows")
    problems.check()
    return Study(str(path), entries)
