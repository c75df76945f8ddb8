"""`metasim report RUN_DIR`: one self-contained report.html for a run (or two compared).

Sections: overview, success per task (and per cell), sensitivity to each factor
(bars, factor x task heatmap, per-factor curves), performance profile, videos of
sampled failures and successes. Everything is inlined (PNG and MP4 data URIs).
"""

from __future__ import annotations

import json
import math
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from metasim.errors import MetasimInputError
from metasim.guards import check_out_file, write_atomic
from metasim.report import analysis as an
from metasim.report import plots
from metasim.report.data import Run, load_run, nested
from metasim.report.html import (
    HTML_PAGE,
    esc,
    figure,
    page,
    rate_cell,
    section,
    table,
    video,
)


def build_report(
    run_dir: str | Path,
    compare: str | Path | None = None,
    out: str | Path | None = None,
    videos: int = 2,
    allow_code: Sequence[str] = (),
    warn: Callable[[str], None] | None = None,
) -> Path:
    """Write the report of `run_dir` (compared with `compare` when given) and return its
    path (default RUN_DIR/report.html). `videos` failures and as many successes of the
    first run are replayed with a camera, unless its policy imports code that
    `allow_code` does not name (then the report says why, and so does `warn`)."""
    runs = [load_run(run_dir)] + ([load_run(compare)] if compare else [])
    target = report_target(out, runs[0].path)
    sections = [overview(runs), success_section(runs)]
    if len(runs) == 2:
        sections.append(comparison(runs[0], runs[1], videos, allow_code, warn))
    if any(r.has_grid for r in runs):
        sections += [cells_section(runs), sensitivity_section(runs), curves_section(runs)]
    sections.append(profile_section(runs))
    if videos > 0:
        sections.append(videos_section(runs[0], videos, allow_code, warn))
    sections.append(stored_section(runs))
    write_atomic(target, page(title(runs), meta(runs), sections))
    return target


def report_target(out: str | Path | None, run_dir: Path) -> Path:
    """Where the report goes: `out` (a file, or report.html inside `out` when it is an
    existing folder), default RUN_DIR/report.html. A folder that cannot hold it, or a file
    there that is not a metasim page, is an input error, found before any work."""
    target = run_dir / "report.html" if out is None else Path(out)
    if target.is_dir():
        target = target / "report.html"
    if target.is_dir():
        raise MetasimInputError(f"--out {out}", [f"{target} is a folder; name a file"])
    return check_out_file(target, "--out" if out is not None else "report", HTML_PAGE)


def describe(run: Run) -> str:
    cfg = run.config
    return (
        f"suite {nested(cfg, 'suite', 'name')} · policy "
        f"{nested(cfg, 'policy', 'kind')} · backend {cfg.get('backend', '?')} · "
        f"seed {cfg.get('seed', '?')} · grid {cfg.get('perturbation', 'none')}"
    )


def title(runs: list[Run]) -> str:
    return "metasim report — " + "  vs  ".join(describe(r) for r in runs)


def meta(runs: list[Run]) -> str:
    parts = []
    for r in runs:
        commit = str(r.summary.versions.get("git_commit", "?"))[:10]
        parts.append(
            f"{esc(r.path)}: {len(r.tasks)} tasks, {len(r.cells) or 1} cells, "
            f"{len(r.episodes)} episodes, {r.config.get('episodes', '?')} per cell, "
            f"commit {esc(commit)}"
        )
    return "<br>".join(parts)


def overview(runs: list[Run]) -> str:
    rows = []
    for r in runs:
        rates = an.task_rates(r)
        agg = r.summary.aggregate
        stored = " (summary.json has an 'aggregate' entry, below)" if agg else ""
        rows.append([r.label, f"{np.mean(rates):.3f}", f"{an.iqm(rates):.3f}", len(rates), stored])
    body = table(["run", "mean success", "IQM", "tasks", "note"], rows)
    body += '<p class="note">Mean and IQM (25% trimmed mean) of the per-task success rates, '
    body += "pooled over cells. Intervals: Wilson 95%.</p>"
    return section("Overview", body, "overview")


def success_section(runs: list[Run]) -> str:
    cols = []
    series = []
    for r in runs:
        rows = [
            [
                t,
                rate_cell(s.k, s.n, *s.interval),
                "–" if s.mean_progress is None else f"{s.mean_progress:.2f}",
                "–" if s.mean_steps is None else f"{s.mean_steps:.0f}",
                s.errors,
            ]
            for t, s in r.summary.tasks.items()
        ]
        tbl = table(["task", "success [95% CI] (k/n)", "progress", "steps", "errors"], rows)
        cols.append(f"<div><h3>{esc(r.label)}</h3>{tbl}</div>")
        tasks = r.tasks
        rates = an.task_rates(r)
        ci = np.asarray([r.summary.tasks[t].interval for t in tasks], dtype=np.float64)
        series.append((r.label, tasks, rates, ci.reshape(-1, 2)))
    body = f'<div class="cols">{"".join(cols)}</div>'
    body += figure(plots.task_bars(series), "success per task", "Success rate per task, 95% CI.")
    return section("Success per task", body, "success")


def comparison(
    a: Run,
    b: Run,
    videos: int,
    allow_code: Sequence[str] = (),
    warn: Callable[[str], None] | None = None,
) -> str:
    """The paired comparison of B with A (`metasim compare`'s section, with replays of
    `videos` discordant episodes, refused as in `videos_section` for a run whose policy
    imports code not in `allow_code`); runs that cannot be compared episode by episode
    (another suite or grid, no episodes.parquet) get the side-by-side difference of
    their summaries instead, which says why."""
    from metasim.compare import compare_loaded
    from metasim.compare.html import comparison_section

    try:
        result = compare_loaded([a, b], unpaired_ok=True)
    except MetasimInputError as exc:
        return difference_section(a, b, "; ".join(exc.problems))
    return comparison_section(a, b, result, videos, allow_code, warn)


def difference_section(a: Run, b: Run, why: str = "") -> str:
    rows, classes = [], []
    for task in dict.fromkeys(a.tasks + b.tasks):
        sa, sb = a.summary.tasks.get(task), b.summary.tasks.get(task)
        if not sa or not sb:
            rows.append([task, "–", "–", "–", "only in one run"])
            classes.append("")
            continue
        d, lo, hi = an.difference(sb.k, sb.n, sa.k, sa.n)
        rows.append(
            [
                task,
                f"{sa.success_rate:.2f}",
                f"{sb.success_rate:.2f}",
                f"{d:+.2f}",
                f"[{lo:+.2f}, {hi:+.2f}]",
            ]
        )
        classes.append("bad" if hi < 0 else "good" if lo > 0 else "")
    body = table(
        ["task", f"A: {a.label}", f"B: {b.label}", "B − A", "95% CI (Newcombe)"], rows, classes
    )
    body += '<p class="note">Rows in red (green): B is worse (better) than A, the interval '
    body += "excludes 0. Unpaired intervals from the two summaries"
    body += f" (no episode-by-episode comparison: {esc(why)})" if why else ""
    body += ".</p>"
    return section("Difference between the runs", body, "difference")


def _changed(run: Run, factors: dict[str, Any]) -> str:
    nominal = run.nominal
    diff = [f"{k}={an.fmt_level(v)}" for k, v in factors.items() if nominal.get(k) != v]
    return ", ".join(diff) or "nominal"


def cells_section(runs: list[Run]) -> str:
    body = ""
    for r in runs:
        if not r.has_grid:
            continue
        rows = [
            [c, _changed(r, cell.factors)]
            + [rate_cell(s.k, s.n, *s.interval) for s in cell.tasks.values()]
            for c, cell in r.cells.items()
        ]
        body += f"<h3>{esc(r.label)}</h3>" + table(["cell", "factors (vs nominal)", *r.tasks], rows)
    return section("Success per cell", body, "cells")


def sensitivity_section(runs: list[Run]) -> str:
    grid_runs = [r for r in runs if r.has_grid]
    series = [(r.label, an.ranked_effects(r)) for r in grid_runs]
    body = ""
    for label, effects in series:
        rows = [
            [
                s.factor,
                an.fmt_level(s.level),
                f"{s.rate:.2f} ({s.k}/{s.n})",
                f"{s.diff:+.2f}",
                f"[{s.diff_low:+.2f}, {s.diff_high:+.2f}]",
            ]
            for s in effects
        ]
        classes = ["bad" if s.diff_high < 0 else "" for s in effects]
        body += f"<h3>Factors ranked by worst drop — {esc(label)}</h3>"
        body += table(
            ["factor", "worst level", "success there", "Δ vs nominal", "95% CI"], rows, classes
        )
    body += figure(
        plots.sensitivity_bars(series),
        "sensitivity bars",
        "Success at each factor's worst level minus nominal (Newcombe 95% CI), "
        "all tasks pooled; other factors at nominal (all cells at that level when the "
        "design has no such cell, e.g. random or LHS samples: there each level is one cell "
        "and the contrast is noisy).",
    )
    for r in grid_runs:
        factors = list(r.nominal)
        uri = plots.heatmap(an.effect_matrix(r, factors), factors, r.tasks, r.label)
        body += figure(uri, "factor x task heatmap", "Worst-level Δ success per factor and task.")
    return section("Sensitivity to perturbation factors", body, "sensitivity")


def curves_section(runs: list[Run]) -> str:
    series = []
    for r in runs:
        if r.has_grid:
            by: dict[str, list[an.LevelStat]] = {}
            for s in an.level_stats(r):
                by.setdefault(s.factor, []).append(s)
            series.append((r.label, by))
    uri = plots.factor_curves(series)
    cap = "Success rate (Wilson 95% CI) at each level of each factor, all tasks pooled."
    return section("Success against factor level", figure(uri, "per-factor curves", cap), "curves")


def profile_section(runs: list[Run]) -> str:
    series = [(r.label, an.cell_scores(r)) for r in runs]
    what = "(task, cell) pairs" if any(r.has_grid for r in runs) else "tasks"
    cap = f"Performance profile: fraction of {what} whose success rate exceeds τ."
    return section(
        "Performance profile", figure(plots.profile_plot(series, what), "profile", cap), "profile"
    )


def videos_section(
    run: Run, n: int, allow_code: Sequence[str] = (), warn: Callable[[str], None] | None = None
) -> str:
    from metasim.report.videos import make_clips, replay_refusal

    if not run.episodes:
        return section(
            "Videos", '<p class="note">No episodes.parquet: nothing to replay.</p>', "videos"
        )
    why = replay_refusal(run, allow_code)
    if why:
        if warn is not None:
            warn(f"videos not replayed: {why}")
        return section("Videos", f'<p class="note">Not replayed: {esc(why)}.</p>', "videos")
    parts = []
    for clip in make_clips(run, n, allow_code):
        e = clip.episode
        outcome = "success" if e.success else "failure"
        replayed = (
            "?"
            if clip.replay_success is None
            else ("matches" if clip.replay_success == e.success else "DIFFERS")
        )
        cap = (
            f"{outcome}: {e.task} · cell {e.cell} ({_changed(run, e.factors)}) · "
            f"episode {e.episode} · {e.steps} steps · replay {replayed}"
        )
        parts.append(
            video(clip.uri, cap)
            if clip.uri
            else f'<p class="note">{esc(cap)}: {esc(clip.note)}</p>'
        )
    body = f'<div class="clips">{"".join(parts)}</div>'
    body += (
        '<p class="note">Episodes re-run deterministically (same seed, cell and policy) '
        "with the scene's first world camera, every 2nd control step.</p>"
    )
    return section(f"Videos of sampled failures and successes ({run.label})", body, "videos")


def stored_section(runs: list[Run]) -> str:
    body = ""
    for r in runs:
        for key in ("aggregate", "sensitivity", "sensitivity_by_task"):
            if key in r.summary.model_fields_set:  # present in summary.json
                text = json.dumps(getattr(r.summary, key), indent=1, default=_num)
                body += (
                    f"<details><summary>{esc(r.label)}: summary.json “{key}”</summary>"
                    f"<pre>{esc(text)}</pre></details>"
                )
    return section("Stored summaries", body, "stored") if body else ""


def _num(value: Any) -> Any:
    return None if isinstance(value, float) and math.isnan(value) else str(value)
