"""`metasim check xcheck --benchmark metaworld --suite S [--episodes N] [--run DIR |
--out DIR] [--tasks T ...] [--num-envs B] [--json]`: `policy=metaworld_expert` in metasim
next to the package's own scripted policies in the package's own loop, on the same variations.

Episode k of a task is variation k of the benchmark (seed 0) on both sides: metasim's
episode k starts from the recorded reset state of variation k (`task.init_states`), the
package's is `MetaWorldRef.expert(benchmark, task, k, until_success=True)` (its gymnasium
loop, 500 steps at most). Per task: metasim's successes k/n next to the package's, the
difference of the two rates with Newcombe's paired interval (`metasim.stats.paired`,
method 10: the outcomes of one variation are paired), and the per-episode agreement (both
succeed, only metasim, only the package, neither; of the episodes both solve, how many at
the same first-success step). The metasim side is read from a finished `metasim eval` run
folder (`--run`) or run here (`--out`, default under runs/).
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import sys
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from metasim.errors import MetasimInputError
from metasim.guards import (
    NUM_ENVS,
    OUT_DIR,
    OutKind,
    bounded_int,
    check_out_file,
    load_json,
    out_file,
    stamp_json,
    stamped_json,
)
from metasim.stats.paired import PairedTable, paired_difference_interval

DEFAULT_SUITE = "metaworld_mt50"
HELP = (
    "Meta-World: metasim's expert success per task next to the package's own scripted "
    "policies on the same variations, with a paired interval on the difference"
)
# `--package FILE`: the package's outcomes, a JSON object stamped as this command's, so a
# file that is not one (a user's settings named by mistake) is refused, never replaced.
# Files stamped with the verb's old name (`metaworld-compare`) still load and are replaced.
PACKAGE_STAMP = "metasim check xcheck --benchmark metaworld: package outcomes"
OLD_PACKAGE_STAMP = "metasim metaworld-compare package outcomes"
PACKAGE_FILE = OutKind(
    f"a JSON file of {PACKAGE_STAMP}", stamped_json(PACKAGE_STAMP, OLD_PACKAGE_STAMP)
)


@dataclass(frozen=True)
class Outcome:
    """One episode: success, and its first-success step (1-based; 0 when it failed)."""

    success: bool
    steps: int


@dataclass(frozen=True)
class TaskRef:
    """A task of a suite: its reference (`metaworld:MT10/reach-v3`), the benchmark and
    split its variations come from, the env name and metasim's scene name."""

    ref: str
    benchmark: str
    split: str
    task: str
    scene: str


@dataclass(frozen=True)
class TaskComparison:
    """One task's paired outcomes (episode k: variation k on both sides)."""

    task: TaskRef
    metasim: tuple[Outcome, ...]
    package: tuple[Outcome, ...]
    errors: int = 0  # metasim episodes that ended with an error (counted as failures)

    @property
    def table(self) -> PairedTable:
        """first = metasim, second = the package."""
        return PairedTable.of([o.success for o in self.metasim], [o.success for o in self.package])

    @property
    def interval(self) -> tuple[float, float]:
        """95% interval of metasim's rate minus the package's (paired)."""
        return paired_difference_interval(self.table)

    @property
    def within(self) -> bool:
        """The paired interval contains 0: no difference the episodes can show."""
        lo, hi = self.interval
        return lo <= 0.0 <= hi

    @property
    def same_steps(self) -> int:
        """Episodes both solve at the same first-success step."""
        pairs = zip(self.metasim, self.package, strict=True)
        return sum(m.success and p.success and m.steps == p.steps for m, p in pairs)

    def row(self) -> dict[str, Any]:
        t, (lo, hi) = self.table, self.interval
        return {
            "task": self.task.task,
            "n": t.n,
            "metasim": t.a + t.b,
            "package": t.a + t.c,
            "difference": t.difference,
            "interval": [lo, hi],
            "within": self.within,
            "both": t.a,
            "only_metasim": t.b,
            "only_package": t.c,
            "neither": t.d,
            "same_steps": self.same_steps,
            "errors": self.errors,
            "metasim_steps": [o.steps for o in self.metasim],
            "package_steps": [o.steps for o in self.package],
        }


def suite_tasks(suite: str) -> list[TaskRef]:
    """The tasks of a Meta-World suite (`metaworld_mt50`, ...) in suite order."""
    from metasim.metaworld.importer.source import MetaworldSource

    suites = MetaworldSource().suites()
    if suite not in suites:
        raise MetasimInputError("--suite", [f"{suite!r}: expected one of {sorted(suites)}"])
    return [task_ref(r) for r in suites[suite]]


def task_ref(ref: str) -> TaskRef:
    """`metaworld:MT10/reach-v3` -> its TaskRef (an input error for a malformed one)."""
    from metasim.metaworld.importer.scene import scene_name
    from metasim.metaworld.importer.source import parse_ref

    bench, split, task = parse_ref(ref)
    return TaskRef(ref, bench, split, task, scene_name(task))


def select(tasks: list[TaskRef], names: Sequence[str] | None) -> list[TaskRef]:
    """The tasks named in `names` (env names, e.g. reach-v3), in suite order; all if None."""
    if not names:
        return tasks
    known = {t.task for t in tasks}
    unknown = [n for n in names if n not in known]
    if unknown:
        raise MetasimInputError("--tasks", [f"{unknown} not in the suite: {sorted(known)}"])
    return [t for t in tasks if t.task in set(names)]


def package_outcomes(ref: Any, task: TaskRef, episodes: int, seed: int = 0) -> list[Outcome]:
    """The package's scripted policy on variations 0..episodes-1 in its own loop."""
    out = []
    for k in range(episodes):
        ep = ref.expert(task.benchmark, task.task, k, split=task.split, seed=seed,
                        until_success=True)  # fmt: skip
        out.append(Outcome(bool(ep["success"]), int(ep["steps"])))
    return out


def run_metasim(
    tasks: list[TaskRef],
    episodes: int,
    out: Path,
    num_envs: int = 10,
    seed: int = 0,
    backend: str = "mujoco",
) -> Path:
    """`metasim eval` of `policy=metaworld_expert` on `tasks` on `backend` into `out`."""
    from metasim.evaluate.config import compose
    from metasim.evaluate.runner import run_eval

    refs = ",".join(t.ref for t in tasks)
    cfg = compose(
        [f"suite={DEFAULT_SUITE}", f"suite.tasks=[{refs}]", "policy=metaworld_expert",
         f"episodes={episodes}", f"num_envs={num_envs}", f"seed={seed}", f"out={out}",
         f"backend={backend}"]
    )  # fmt: skip
    run_eval(cfg)
    return out


def run_outcomes(run_dir: Path) -> tuple[list[TaskRef], dict[str, dict[int, tuple[Outcome, bool]]]]:
    """A finished eval run's Meta-World tasks and, per scene name and episode, its outcome
    and whether it ended with an error (nominal cell only)."""
    from metasim.report.data import load_run

    run = load_run(run_dir)
    refs = run.summary.config.get("suite", {}).get("tasks", [])
    tasks = [task_ref(r) for r in refs if str(r).startswith("metaworld:")]
    if not tasks:
        raise MetasimInputError(str(run_dir), ["the run has no Meta-World task (metaworld:...)"])
    if not run.episodes:
        raise MetasimInputError(str(run_dir), ["the run has no episodes.parquet (not finished?)"])
    out: dict[str, dict[int, tuple[Outcome, bool]]] = {}
    for r in run.episodes:
        if r.cell == "nominal":
            steps = r.steps if r.success else 0
            out.setdefault(r.task, {})[r.episode] = (Outcome(r.success, steps), r.error is not None)
    return tasks, out


def package_table(
    ref: Any, tasks: list[TaskRef], episodes: int, cache: Path | None = None, seed: int = 0
) -> dict[str, list[Outcome]]:
    """The package's outcomes per env name; with `cache` (a JSON file written by an earlier
    call with the same tasks and episodes) read from it instead of rerun."""
    key = {"tasks": [t.ref for t in tasks], "episodes": episodes, "seed": seed}
    cached = read_package_file(cache, key) if cache is not None else None
    if cached is not None:
        return cached
    rows = {t.task: package_outcomes(ref, t, episodes, seed) for t in tasks}
    if cache is not None:
        out = {k: [[o.success, o.steps] for o in v] for k, v in rows.items()}
        cache.write_text(stamp_json(PACKAGE_STAMP, {"key": key, "rows": out}))
    return rows


def read_package_file(path: Path, key: dict[str, Any]) -> dict[str, list[Outcome]] | None:
    """The outcomes a `--package` file holds for `key`, or None (no file, another key, or
    rows that do not fit the key: rerun and replaced, as the file is this command's)."""
    if not path.is_file() or path.stat().st_size == 0:
        return None
    data = load_json(path, "--package file")
    if not isinstance(data, dict) or data.get("key") != key:
        return None
    rows, names = data.get("rows"), [task_ref(t).task for t in key["tasks"]]
    if not isinstance(rows, dict):
        return None
    try:
        out = {n: [Outcome(bool(s), int(k)) for s, k in rows[n][: key["episodes"]]] for n in names}
    except (KeyError, TypeError, ValueError):
        return None
    return out if all(len(v) == key["episodes"] for v in out.values()) else None


def compare(
    tasks: list[TaskRef],
    metasim: dict[str, dict[int, tuple[Outcome, bool]]],
    package: dict[str, list[Outcome]],
    episodes: int,
) -> list[TaskComparison]:
    """Pair metasim's episodes 0..episodes-1 of each task with the package's."""
    rows = []
    for t in tasks:
        mine = metasim.get(t.scene, {})
        missing = [k for k in range(episodes) if k not in mine]
        if missing:
            raise MetasimInputError(
                t.scene, [f"the run lacks episodes {missing} (it has {sorted(mine)})"]
            )
        ours = tuple(mine[k][0] for k in range(episodes))
        errors = sum(mine[k][1] for k in range(episodes))
        rows.append(TaskComparison(t, ours, tuple(package[t.task][:episodes]), errors))
    return rows


def summary(rows: list[TaskComparison]) -> dict[str, Any]:
    """Totals over the tasks: rates on both sides, tasks within the interval, agreement."""
    tables = [r.table for r in rows]
    n = sum(t.n for t in tables)
    return {
        "tasks": len(rows),
        "episodes": n,
        "metasim_rate": sum(t.a + t.b for t in tables) / n if n else 0.0,
        "package_rate": sum(t.a + t.c for t in tables) / n if n else 0.0,
        "within": sum(r.within for r in rows),
        "identical_outcomes": sum(t.b == t.c == 0 for t in tables),
        "episodes_agree": sum(t.a + t.d for t in tables),
        "same_steps": sum(r.same_steps for r in rows),
        "both_succeed": sum(t.a for t in tables),
        "errors": sum(r.errors for r in rows),
    }


def markdown(rows: list[TaskComparison]) -> str:
    """The comparison as a Markdown table, one row per task, and a totals line."""
    lines = [
        "| task | metasim | package | difference | 95% paired interval | within | both / "
        "only metasim / only package / neither | same first-success step |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for r in rows:
        d = r.row()
        lo, hi = d["interval"]
        lines.append(
            f"| {d['task']} | {d['metasim']}/{d['n']} | {d['package']}/{d['n']} | "
            f"{d['difference']:+.1f} | [{lo:+.2f}, {hi:+.2f}] | {'yes' if d['within'] else 'NO'}"
            f" | {d['both']} / {d['only_metasim']} / {d['only_package']} / {d['neither']} | "
            f"{d['same_steps']}/{d['both']} |"
        )
    s = summary(rows)
    lines.append(
        f"\n{s['tasks']} tasks, {s['episodes']} episodes: metasim {s['metasim_rate']:.3f}, the "
        f"package {s['package_rate']:.3f}; difference within the paired 95% interval (it "
        f"contains 0) in {s['within']}/{s['tasks']} tasks; identical outcomes in "
        f"{s['identical_outcomes']} tasks; {s['episodes_agree']}/{s['episodes']} episodes "
        f"agree; {s['same_steps']}/{s['both_succeed']} of those both solve at the same step."
    )
    return "\n".join(lines)


def add_arguments(p: argparse.ArgumentParser) -> None:
    """The command's arguments (shared by the `metasim` verb and `main`)."""
    p.add_argument("--suite", default=DEFAULT_SUITE, help="metaworld_mt10|mt50|ml10_train|...")
    p.add_argument(
        "--episodes", type=bounded_int(1, 50), default=10, help="episodes (variations) per task"
    )
    p.add_argument("--tasks", nargs="+", metavar="ENV", help="only these env names (reach-v3)")
    p.add_argument("--run", metavar="DIR", help="read metasim's episodes from this eval run")
    p.add_argument("--out", type=OUT_DIR, metavar="DIR", help="run folder for the eval run here")
    p.add_argument("--num-envs", type=NUM_ENVS, default=10, help="batched envs of the eval run")
    p.add_argument(
        "--backend",
        default="mujoco",
        help="backend of the eval run (mujoco|mjx|warp; the run manifest states its fidelity)",
    )
    p.add_argument("--json", action="store_true", help="print the rows and totals as JSON")
    p.add_argument(
        "--package",
        type=out_file(PACKAGE_FILE),
        metavar="FILE",
        help="JSON of the package's outcomes: read if it holds the same tasks and episodes, "
        "else written after running them (an existing file must be one this command wrote)",
    )


def run(args: argparse.Namespace) -> int:
    """Run the comparison: 0 done, 1 the reference failed, 2 bad input."""
    from metasim.metaworld.reference.simulator import SPEC, MetaWorldRef, MetaWorldRefError
    from metasim.reference.checkcli import reference_failed

    if not 1 <= args.episodes <= 50:
        raise MetasimInputError("--episodes", [f"{args.episodes}: expected 1..50 (variations)"])
    if args.run and args.out:
        raise MetasimInputError("metaworld xcheck", ["give --run or --out, not both"])
    if args.run and args.backend != "mujoco":
        raise MetasimInputError("--backend", ["a --run's backend is the run's own; omit it"])
    cache = check_out_file(args.package, "--package", PACKAGE_FILE) if args.package else None
    if args.run:
        tasks, outcomes = run_outcomes(Path(args.run))
        tasks = select(tasks, args.tasks)
    else:
        tasks = select(suite_tasks(args.suite), args.tasks)
        stamp = dt.datetime.now().strftime("%Y%m%d-%H%M%S")
        out = Path(args.out or f"runs/metaworld-xcheck-{stamp}")
        run_dir = run_metasim(tasks, args.episodes, out, args.num_envs, backend=args.backend)
        _, outcomes = run_outcomes(run_dir)
    try:
        with MetaWorldRef() as ref:
            package = package_table(ref, tasks, args.episodes, cache)
    except MetaWorldRefError as exc:
        return reference_failed(SPEC, exc)
    rows = compare(tasks, outcomes, package, args.episodes)
    if args.json:
        print(json.dumps({"rows": [r.row() for r in rows], "summary": summary(rows)}))
    else:
        print(markdown(rows))
    return 0


def main(argv: Sequence[str] | None = None) -> int:
    """`python -m metasim.metaworld.xcheck ...` (the same as `metasim check xcheck
    --benchmark metaworld ...`)."""
    parser = argparse.ArgumentParser(prog="python -m metasim.metaworld.xcheck", description=__doc__)
    add_arguments(parser)
    try:
        return run(parser.parse_args(argv))
    except MetasimInputError as exc:
        sys.stderr.write(exc.render() + "\n")
        return exc.exit_code


if __name__ == "__main__":
    raise SystemExit(main())
