"""The MJX support matrix of LIBERO's 130 tasks: JSON, a markdown table and summary, and
(with --update-doc) the generated part of docs/support_matrix.md.

    nice -n 10 .venv/bin/python scripts/libero_mjx_matrix.py --step auto --update-doc

Every task: import, compile, static check, time-bounded `mjx.put_model`
(`metasim.libero.checks.mjx_matrix.classify`). `--step` tasks (`suite/index`, or `auto`: the
loading task with the fewest collision pairs and the one with the most) also get one
jitted `mjx.step` on the CPU in a child process killed after --step-timeout seconds.
`--from-json` re-renders a saved matrix without recomputing it.
"""

from __future__ import annotations

import argparse
import collections
import json
import statistics
import sys
import time
from pathlib import Path

from metasim.libero.checks import mjx_matrix as mm
from metasim.libero.importer import paths

ROOT = Path(__file__).resolve().parents[1]
DOC = ROOT / "docs/support_matrix.md"
START, END = "<!-- libero-mjx-matrix:start -->", "<!-- libero-mjx-matrix:end -->"


def short(name: str, width: int = 44) -> str:
    return name if len(name) <= width else name[: width - 1] + "…"


def pairs_cell(row: mm.TaskRow) -> str:
    """What blocks the task, or what it loads with."""
    if row.blocking:
        return ", ".join(f"{k} ×{v}" for k, v in sorted(row.blocking.items()))
    if row.other:
        return "; ".join(row.other)[:120]
    return f"— ({len(row.stand_ins)} stand-ins)" if row.stand_ins else "—"


def figure_cell(row: mm.TaskRow) -> str:
    """put_model time, and the step's stages where one was tried."""
    out = [] if row.put_model_s is None else [f"put_model {row.put_model_s:.1f} s"]
    s = row.step
    if s is not None:
        mem = f", {s.peak_rss_mb:g} MB" if s.peak_rss_mb else ""
        traced = f"traced in {s.trace_s} s{mem}, " if s.trace_s is not None else "not traced, "
        if s.status == mm.STEPS:
            out.append(f"{traced}compiled in {s.compile_s} s, one step {s.run_s} s")
        elif s.status == mm.STEP_TIMEOUT:
            out.append(f"{traced}compile did not finish in {s.timeout_s:g} s")
        else:
            out.append(f"{traced}step failed: {s.error}")
    return "; ".join(out)


def table(rows: list[mm.TaskRow]) -> list[str]:
    lines = [
        "| suite | # | task | status | blocking pairs (geom pairs) | collision pairs | figures |",
        "|---|---|---|---|---|---|---|",
    ]
    for r in rows:
        lines.append(
            f"| {r.suite} | {r.index} | {short(r.name)} | {r.status} | {pairs_cell(r)} | "
            f"{r.geom_pairs} | {figure_cell(r)} |"
        )
    return lines


def summary(rows: list[mm.TaskRow]) -> list[str]:
    n = len(rows)
    status = collections.Counter(r.status for r in rows)
    lines = [f"Tasks: {n}. " + ", ".join(f"{k}: {status[k]}" for k in mm.STATUSES if status[k])]
    tasks_by_pair: collections.Counter[str] = collections.Counter()
    pairs_by_pair: collections.Counter[str] = collections.Counter()
    for r in rows:
        tasks_by_pair.update(r.blocking.keys())
        pairs_by_pair.update(r.blocking)
    if tasks_by_pair:
        lines += ["", "| blocking type pair | tasks | geom pairs (all tasks) | example |",
                  "|---|---|---|---|"]  # fmt: skip
        for key, k in tasks_by_pair.most_common():
            example = next(r for r in rows if key in r.blocking)
            lines.append(
                f"| {key} | {k} | {pairs_by_pair[key]} | {example.ref}: {example.examples[key]} |"
            )
    other = collections.Counter(o for r in rows for o in r.other)
    for reason, k in other.most_common():
        lines.append(f"\n{k} task(s): {reason}")
    lines += ["", *_figures(rows)]
    return lines


def _spread(values: list[float], unit: str = "") -> str:
    if not values:
        return "none"
    return f"median {statistics.median(values):g}{unit}, {min(values):g}–{max(values):g}{unit}"


def _figures(rows: list[mm.TaskRow]) -> list[str]:
    checked = [r for r in rows if r.status != mm.IMPORT_ERROR]
    loaded = [r for r in rows if r.put_model_s is not None]
    stand = sum(bool(r.stand_ins) for r in checked)
    warned = collections.Counter(w for r in loaded for w in r.mjx_warnings)
    put_s = [r.put_model_s for r in loaded if r.put_model_s is not None]
    lines = [
        f"- collision geom pairs per task (MJX tests each one every step): "
        f"{_spread([r.geom_pairs for r in checked])}",
        f"- tasks with cylinder stand-ins: {stand} "
        f"({sum(len(r.stand_ins) for r in checked)} cylinders in all)",
        f"- collision meshes per task: {_spread([r.collision_meshes for r in checked])}; "
        f"their vertices: {_spread([r.collision_mesh_vertices for r in checked])}",
        f"- `mjx.put_model`: {_spread(put_s, ' s')}; contact slots "
        f"in `mjx.Data`: {_spread([r.max_contacts for r in loaded if r.max_contacts])}",
    ]
    for w, k in warned.most_common():
        lines.append(f"- MJX warned in {k} task(s): {w}")
    return lines


def auto_steps(rows: list[mm.TaskRow]) -> list[mm.TaskRow]:
    loaded = sorted((r for r in rows if r.status == mm.LOADS), key=lambda r: r.geom_pairs)
    return list({id(r): r for r in (loaded[:1] + loaded[-1:])}.values())


def pick(rows: list[mm.TaskRow], spec: str) -> list[mm.TaskRow]:
    if spec == "auto":
        return auto_steps(rows)
    suite, _, index = spec.partition("/")
    found = [r for r in rows if r.suite == suite and str(r.index) == index]
    if not found:
        sys.exit(f"--step {spec}: not in the matrix (expected suite/index)")
    return found


def render(rows: list[mm.TaskRow]) -> str:
    return "\n".join(["### Summary", "", *summary(rows), "", "### Per task", "", *table(rows)])


def update_doc(doc: Path, body: str) -> None:
    text = doc.read_text()
    head, sep1, rest = text.partition(START)
    _, sep2, tail = rest.partition(END)
    if not (sep1 and sep2):
        sys.exit(f"{doc}: no {START} ... {END} markers to fill")
    doc.write_text(f"{head}{START}\n{body}\n{END}{tail}")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--suites", nargs="+", default=list(paths.LIBERO_SUITES))
    ap.add_argument("--put-timeout", type=float, default=120.0)
    ap.add_argument("--step", nargs="*", default=[], help="suite/index tasks, or auto")
    ap.add_argument("--step-timeout", type=float, default=600.0)
    ap.add_argument("--json", type=Path, default=ROOT / "docs/libero_mjx_matrix.json")
    ap.add_argument("--markdown", type=Path, default=None)
    ap.add_argument("--update-doc", action="store_true", help=f"fill {DOC.name}'s section")
    ap.add_argument("--from-json", action="store_true", help="re-render --json, no sweep")
    ap.add_argument("--resume", action="store_true", help="keep the tasks --json has")
    args = ap.parse_args()
    saved = load(args.json) if (args.from_json or args.resume) and args.json.exists() else []
    if args.from_json:
        rows = saved
    else:
        done = {(r.suite, r.index): r for r in saved}
        rows = []
        for suite in args.suites:
            for i in range(len(paths.suite_tasks(suite))):
                if (suite, i) in done:
                    rows.append(done[(suite, i)])
                    continue
                start = time.perf_counter()
                rows.append(mm.classify(suite, i, args.put_timeout))
                r = rows[-1]
                print(f"{r.ref:26s} {r.status:20s} {pairs_cell(r)[:60]:60s} "
                      f"{time.perf_counter() - start:5.1f} s", flush=True)  # fmt: skip
                have = {(r.suite, r.index) for r in rows}
                save(args, rows + [r for k, r in done.items() if k not in have])
    for spec in args.step:
        for r in pick(rows, spec):
            r.step = mm.step_bounded(r.suite, r.index, args.step_timeout)
            r.status = r.step.status
            print(f"{r.ref}: {figure_cell(r)}", flush=True)
            save(args, rows)
    save(args, rows)
    body = render(rows)
    if args.markdown:
        args.markdown.write_text(body + "\n")
    if args.update_doc:
        update_doc(DOC, body)
    print("\n".join(summary(rows)))


def load(path: Path) -> list[mm.TaskRow]:
    return [mm.TaskRow.from_json(r) for r in json.loads(path.read_text())["tasks"]]


def save(args: argparse.Namespace, rows: list[mm.TaskRow]) -> None:
    """The matrix so far (written after every task, so `--resume` can go on from it)."""
    shown = {k: v.relative_to(ROOT) if isinstance(v, Path) and v.is_relative_to(ROOT) else v
             for k, v in vars(args).items()}  # fmt: skip
    meta = {"args": {k: str(v) for k, v in shown.items()}, **versions()}
    args.json.write_text(json.dumps({**meta, "tasks": [r.to_json() for r in rows]}, indent=1))


def versions() -> dict[str, str]:
    from importlib.metadata import version

    return {p: version(p) for p in ("mujoco", "mujoco-mjx", "jax")}


if __name__ == "__main__":
    main()
