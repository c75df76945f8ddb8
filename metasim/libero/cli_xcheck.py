"""`metasim check xcheck --benchmark libero (--policy NAME [policy.key=value ...] |
--run DIR) --tasks SUITE/INDEX ... --inits SPEC [--fixture-draw HARNESS] [--closed-loop] [--out DIR]
[--release N] [--shard I/N] [--json]`:
does a policy's metasim success mean a LIBERO success? (metasim.libero.checks.xcheck).
With `--fixture-draw openpi` a pair is openpi's episode k: metasim's episode k takes the
fixture poses of openpi's (`metasim.libero.harness_draw`), and LIBERO starts from them."""

from __future__ import annotations

import argparse
import datetime as dt
import sys
from pathlib import Path
from typing import Any

from metasim.errors import MetasimInputError
from metasim.guards import OUT_DIR, bounded_int
from metasim.reference.checkcli import add_check, print_summary, reference_failed


def add_parser(sub: Any) -> None:
    """Add the `xcheck` sub-verb to `metasim libero`'s sub-parsers `sub`."""
    from metasim.policies.base import add_allow_code

    x = add_check(
        sub,
        "xcheck",
        "run a policy in metasim on (task, init) pairs, replay each episode's applied actions "
        "in LIBERO from the same reset (and with --closed-loop run the policy in LIBERO "
        "itself); per-task success rates with a paired interval on their difference",
    )
    x.add_argument("--policy", help="a policy config (policies/<name>.yaml), e.g. libero_expert")
    x.add_argument("--run", metavar="DIR", help="a run folder of `metasim eval`: its policy")
    x.add_argument("overrides", nargs="*", help="config overrides, e.g. policy.execute=5")
    x.add_argument(
        "--tasks",
        nargs="+",
        metavar="SUITE/I",
        help="libero_spatial/0, libero_object/2-4, libero_goal (all)",
    )
    x.add_argument("--inits", default="0-4", help="init states: '0-4', '0,3,7' (default 0-4)")
    x.add_argument(
        "--fixture-draw",
        metavar="HARNESS",
        help="episode k's fixtures where this harness's episode k has them (openpi); default: "
        "drawn from metasim's episode seed (with --run: the run's task_options.fixture_draw)",
    )
    x.add_argument("--closed-loop", action="store_true", help="also run the policy in LIBERO")
    x.add_argument(
        "--out", type=OUT_DIR, help="folder of xcheck.jsonl (resumable) and xcheck_summary.json"
    )
    x.add_argument(
        "--release", type=bounded_int(0, 1000), default=20, help="release steps after the actions"
    )
    x.add_argument("--json", action="store_true", help="print the summary as JSON")
    x.add_argument("--shard", default="0/1", metavar="I/N", help="run pairs j with j %% N == I")
    add_allow_code(x, "with --run: run the run's policy")


MAX_INIT = 9_999  # no LIBERO task has more init states (each has 50); checked per task later


def parse_inits(text: str) -> list[int]:
    """'0-4,10' -> [0, 1, 2, 3, 4, 10] (an input error naming --inits otherwise). Each
    range is checked before it is expanded: its ends in 0..MAX_INIT, low before high."""
    out: list[int] = []
    for part in text.split(","):
        lo, hi = _range(part.strip(), "--inits", text)
        if hi > MAX_INIT:
            raise MetasimInputError(
                "--inits", [f"{text!r}: init state {hi} is out of range; expected 0..{MAX_INIT}"]
            )
        out += range(lo, hi + 1)
    if not out:
        raise MetasimInputError("--inits", [f"{text!r} names no init state"])
    return sorted(set(out))


def _range(part: str, flag: str, text: str) -> tuple[int, int]:
    """'3' -> (3, 3), '2-4' -> (2, 4); anything else (a reversed range too) is an input
    error naming `flag`."""
    lo, dash, hi = part.partition("-")
    if not (lo.isdigit() and (hi.isdigit() or not dash)) or (dash and int(hi) < int(lo)):
        raise MetasimInputError(
            flag, [f"{text!r}: expected indexes like '0-4' or '0,3,7' (low before high)"]
        )
    return int(lo), int(hi or lo)


def parse_shard(text: str) -> tuple[int, int]:
    """'I/N' -> (I, N) with 0 <= I < N."""
    i, _, n = text.partition("/")
    if not (i.isdigit() and n.isdigit() and int(i) < int(n)):
        raise MetasimInputError("--shard", [f"{text!r}: expected I/N with 0 <= I < N"])
    return int(i), int(n)


def parse_tasks(refs: list[str], inits: list[int]) -> list[tuple[str, int]]:
    """['libero_spatial/0', 'libero_object/2-4', 'libero_goal'] -> [(suite, index)]: one
    task, a range, or every task of the suite; each checked with its inits."""
    from metasim.libero.checks.parity import check_args
    from metasim.libero.importer import paths

    def checked(suite: str, task: int, init: int, ref: str) -> None:
        """`check_args`, its error naming this verb's flags (--tasks, --inits)."""
        try:
            check_args(suite, task, init, 1)
        except MetasimInputError as exc:
            flag = "--inits" if exc.source == "--init" else "--tasks"
            raise MetasimInputError(flag, [f"{ref!r}: {p}" for p in exc.problems]) from None

    out = []
    for ref in refs:
        suite, _, index = ref.removeprefix("libero:").partition("/")
        checked(suite, 0, 0, ref)  # the suite itself first
        n = len(paths.suite_tasks(suite))
        lo, hi = _range(index, "--tasks", ref) if index else (0, n - 1)
        if hi >= n:
            raise MetasimInputError("--tasks", [f"{ref!r}: task {hi} is out of range 0..{n - 1}"])
        ids = range(lo, hi + 1)
        for task in ids:
            for k in (min(inits), max(inits)):
                checked(suite, task, k, ref)
            out.append((suite, task))
    return list(dict.fromkeys(out))


def fixture_draw(given: str | None, run: Any = None) -> str | None:
    """--fixture-draw checked (an input error naming it for a harness metasim does not
    reproduce); not given: the run's `task_options.fixture_draw` (an `EvalConfig`), if any."""
    from pydantic import ValidationError

    from metasim.libero.importer.source import LiberoOptions

    if given is None:
        recorded = None if run is None else run.task_options.get("fixture_draw")
        return None if recorded is None else str(recorded)
    try:
        return LiberoOptions(fixture_draw=given).fixture_draw  # type: ignore[arg-type]
    except ValidationError as exc:
        raise MetasimInputError("--fixture-draw", [exc.errors()[0]["msg"]]) from None


def rollout_spec(args: argparse.Namespace) -> tuple[Any, list[str], str | None]:
    """The policy's rollout spec, the LIBERO tasks of the run folder (if any) and the
    harness whose fixture draw episodes take (--fixture-draw, else the run's)."""
    from metasim.evaluate.config import compose
    from metasim.evaluate.run_files import manifest_config
    from metasim.policies.base import check_code_allowed

    if bool(args.policy) == bool(args.run):
        raise MetasimInputError("libero xcheck", ["give exactly one of --policy or --run"])
    if args.policy:
        spec = compose([f"policy={args.policy}", *args.overrides]).rollout
        return spec, [], fixture_draw(args.fixture_draw)
    manifest = Path(args.run) / "manifest.json"
    cfg = manifest_config(Path(args.run))
    check_code_allowed(cfg.rollout.options, args.allow_code, str(manifest), "--allow-code")
    tasks = [t.removeprefix("libero:") for t in cfg.suite.tasks if t.startswith("libero:")]
    return cfg.rollout, tasks, fixture_draw(args.fixture_draw, cfg)


def run(args: argparse.Namespace) -> int:
    """Run `metasim check xcheck --benchmark libero`: 0 done, 1 the reference failed, 2
    bad input."""
    from metasim.libero.checks.xcheck_run import format_summary, run_xcheck
    from metasim.libero.reference.simulator import SPEC, RefSimError

    spec, run_tasks, draw = rollout_spec(args)
    inits = parse_inits(args.inits)
    if not (args.tasks or run_tasks):
        raise MetasimInputError("--tasks", ["name the tasks, e.g. --tasks libero_spatial/0"])
    tasks = parse_tasks(args.tasks or run_tasks, inits)
    shard = parse_shard(args.shard)
    stamp = dt.datetime.now().strftime("%Y%m%d-%H%M%S")
    out = Path(args.out or f"runs/xcheck-{stamp}")

    def report(c: Any) -> None:
        sys.stderr.write(
            f"{c.mode} {c.suite}/{c.task} init {c.init}: metasim "
            f"{'ok' if c.metasim_success else 'fail'}, LIBERO "
            f"{'ok' if c.reference_success else 'fail'} ({c.cause})\n"
        )

    try:
        summary = run_xcheck(
            tasks, inits, spec, out, args.closed_loop, args.release, on_episode=report,
            shard=shard, fixture_draw=draw,
        )  # fmt: skip
    except RefSimError as exc:
        return reference_failed(SPEC, exc)
    print_summary(summary, args.json, format_summary)
    print(f"episodes: {out / 'xcheck.jsonl'}", file=sys.stderr)
    return 0
