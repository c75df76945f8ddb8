"""`metasim check modeldiff --benchmark robosuite [--tasks Lift,Stack] [--json]`:
metasim's compiled robosuite tasks against robosuite's own MjModel (checks/modeldiff.py);
exit 1 on an unlisted difference.

`metasim check xcheck --benchmark robosuite [--policy robosuite_expert] [--tasks ...]
[--episodes 0-19] [--out FILE] [--json]`: the policy's episodes in metasim replayed in
robosuite, each outcome on both sides (checks/xcheck.py)."""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

from metasim.cli.verbs import verb
from metasim.errors import MetasimInputError
from metasim.guards import OUT_DIR, write_atomic
from metasim.inputs import index_list
from metasim.robosuite.tasks import TASKS

MAX_EPISODE = 9_999  # episode indexes xcheck takes (the bound it had as LIBERO's --inits)
EXPERT_TASKS = [t for t, f in TASKS.items() if f.expert is not None]


def add_parser(verbs: Any) -> None:
    rs = verbs.add_parser("robosuite", help="robosuite tools (checks against robosuite 1.4.0)")
    sub = rs.add_subparsers(dest="robosuite_verb", required=True, parser_class=type(rs))
    md = sub.add_parser("modeldiff", help="every model field against robosuite's own MjModel")
    md.add_argument("--tasks", default=",".join(TASKS), help="comma-separated task names")
    md.add_argument("--json", action="store_true", help="print the diff as JSON")
    x = sub.add_parser("xcheck", help="a policy's metasim episodes replayed in robosuite")
    x.add_argument("--policy", default="robosuite_expert", help="a policy config name")
    x.add_argument("overrides", nargs="*", help="config overrides, e.g. policy.execute=5")
    x.add_argument("--tasks", default=",".join(EXPERT_TASKS), help="comma-separated tasks")
    x.add_argument("--episodes", default="0-19", help="episodes: '0-19', '0,3,7'")
    x.add_argument("--out", type=OUT_DIR, help="folder for xcheck.jsonl and xcheck_summary.json")
    x.add_argument("--json", action="store_true", help="print the summary as JSON")


def _tasks(text: str) -> list[str]:
    tasks = [t for t in text.split(",") if t]
    unknown = [t for t in tasks if t not in TASKS]
    if unknown or not tasks:
        raise MetasimInputError("--tasks", [f"unknown {unknown}; known: {', '.join(TASKS)}"])
    return tasks


def run(args: argparse.Namespace) -> int:
    if args.robosuite_verb == "xcheck":
        return run_xcheck(args)
    from metasim.robosuite.checks.modeldiff import diff_task
    from metasim.robosuite.reference.simulator import RobosuiteRef

    tasks = _tasks(args.tasks)
    with RobosuiteRef() as ref:
        rows = [diff_task(ref, t) for t in tasks]
    if args.json:
        print(json.dumps(rows, indent=1))
    for r in rows if not args.json else ():
        print(f"{r['task']}: {r['fields']} fields, {r['values']} values; {r['differences']} "
              f"differences, {len(r['unlisted'])} unlisted")  # fmt: skip
        for u in r["unlisted"]:
            print(f"  UNLISTED {u['field']} {u['element']}: {u['metasim']} vs {u['reference']}")
    return 1 if any(r["unlisted"] for r in rows) else 0


def run_xcheck(args: argparse.Namespace) -> int:
    """`metasim check xcheck --benchmark robosuite`: 0 done, 1 the reference failed, 2 bad input."""
    from metasim.evaluate.config import compose
    from metasim.robosuite.checks.xcheck import row_json
    from metasim.robosuite.checks.xcheck import run_xcheck as run_both
    from metasim.robosuite.reference.simulator import RobosuiteRefError

    tasks, spec = _tasks(args.tasks), compose([f"policy={args.policy}", *args.overrides]).rollout
    episodes = index_list(args.episodes, "--episodes", "episode", MAX_EPISODE)

    def report(c: Any) -> None:
        sys.stderr.write(f"{c.task} episode {c.episode}: metasim {c.metasim_success}, "
                         f"robosuite {c.reference_success}\n")  # fmt: skip

    try:
        rows, summary = run_both(tasks, episodes, spec, report)
    except RobosuiteRefError as exc:
        sys.stderr.write(f"error: the robosuite reference failed: {exc}\n")
        return 1
    if args.out:
        out = Path(args.out)
        out.mkdir(parents=True, exist_ok=True)
        write_atomic(out / "xcheck.jsonl", "".join(json.dumps(row_json(r)) + "\n" for r in rows))
        write_atomic(out / "xcheck_summary.json", json.dumps(summary, indent=1))
    print(json.dumps(summary) if args.json else _format(summary))
    return 0


def _format(summary: dict[str, Any]) -> str:
    """One line per task, then all tasks together."""
    from metasim.robosuite.checks.xcheck import HOLD_STEPS

    def line(name: str, t: dict[str, Any]) -> str:
        n, ours = t["episodes"], t["metasim"]
        lo, hi = t["difference_95"]
        return (
            f"{name}: metasim {ours}/{n}, robosuite {t['robosuite']}/{n}; robosuite confirms "
            f"{t['both']} of metasim's {ours} successes ({t['confirmed']:.0%}; "
            f"{t['confirmed_with_hold']:.0%} with the last action held up to {HOLD_STEPS} "
            f"steps); difference 95% [{lo:+.2f}, {hi:+.2f}]"
        )

    rows = {**summary["tasks"], "all": summary["all"]}
    return "\n".join(line(name, t) for name, t in rows.items())


verb("robosuite", add_parser, run)
