"""The comparison as HTML: a section of `metasim report RUN --compare OTHER` and the page
of `metasim compare --html`. Tables per task and pooled, the aggregates, the performance
profile with bands, the discordant episodes and replays of a few of them (both runs)."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from metasim.compare.figures import profile_uri
from metasim.guards import write_atomic
from metasim.report.data import Episode, Run
from metasim.report.html import (
    Raw,
    esc,
    figure,
    page,
    rate_cell,
    section,
    table,
    video,
)

MAX_ROWS = 50  # discordant episodes listed in the HTML (all are in --json)


def _rate(r: dict[str, Any]) -> Raw:
    return rate_cell(r["successes"], r["n"], *r["ci95"])


def _row(name: str, e: dict[str, Any]) -> list[object]:
    lo, hi = e["diff_ci95"]
    disc = e.get("discordant")
    return [
        name,
        _rate(e["a"]),
        _rate(e["b"]),
        f"{e['diff']:+.2f} [{lo:+.2f}, {hi:+.2f}]",
        "–" if e["mcnemar_p"] is None else f"{e['mcnemar_p']:.3g}",
        f"{disc['a_only']} / {disc['b_only']}" if disc else "–",
    ]


def _cls(e: dict[str, Any]) -> str:
    lo, hi = e["diff_ci95"]
    return "bad" if hi < 0 else "good" if lo > 0 else ""


def _value(v: dict[str, Any]) -> str:
    lo, hi = v["ci95"]
    return f"{v['value']:.3f} [{lo:.3f}, {hi:.3f}]"


def aggregate_table(agg: dict[str, Any]) -> str:
    rows: list[list[object]] = [
        [name, _value(agg["a"][name]), _value(agg["b"][name])]
        for name in ("iqm", "optimality_gap", "mean", "median")
    ]
    rows.append(["IQM B − A", "", _value(agg["iqm_diff"])])
    rows.append(["P(B > A) on a task", "", _value(agg["probability_of_improvement"])])
    return table(["aggregate over tasks", "A", "B"], rows)


def discordant_table(disc: list[dict[str, Any]]) -> str:
    rows = [
        [
            d["task"],
            d["cell"],
            ", ".join(f"{k}={v}" for k, v in d["factors"].items()) or "–",
            d["episode"],
            d["seed"],
            "A" if d["a"] else "B",
            d["error_a"] or d["error_b"] or "",
        ]
        for d in disc[:MAX_ROWS]
    ]
    more = f" (first {MAX_ROWS} of {len(disc)})" if len(disc) > MAX_ROWS else ""
    head = f"<h3>Discordant episodes: one run succeeded, the other failed{more}</h3>"
    return head + table(["task", "cell", "factors", "episode", "seed", "succeeded", "error"], rows)


def _episode(run: Run, d: dict[str, Any]) -> Episode | None:
    for e in run.episodes:
        if (e.task, e.cell, e.episode) == (d["task"], d["cell"], d["episode"]):
            return e
    return None


def _pick(disc: list[dict[str, Any]], n: int) -> list[dict[str, Any]]:
    """Up to n discordant episodes, one task after another (round robin)."""
    by_task: dict[str, list[dict[str, Any]]] = {}
    for d in disc:
        by_task.setdefault(d["task"], []).append(d)
    out: list[dict[str, Any]] = []
    while len(out) < n and any(by_task.values()):
        for rows in by_task.values():
            if rows and len(out) < n:
                out.append(rows.pop(0))
    return out


def clips(
    a: Run,
    b: Run,
    disc: list[dict[str, Any]],
    n: int,
    allow_code: Sequence[str] = (),
    warn: Callable[[str], None] | None = None,
) -> str:
    """Replays of up to n discordant episodes in both runs, side by side. A run whose
    policy imports code its files name, not allowed by `allow_code` (`--allow-code`), is
    not replayed: a note says why (and so does `warn`)."""
    from metasim.report.videos import encode_mp4, replay, replay_refusal

    parts = []
    plans: dict[str, list[Any]] = {"a": [], "b": []}
    refused = {side: replay_refusal(run, allow_code) for side, run in (("a", a), ("b", b))}
    for side, why in refused.items():
        if why:
            parts.append(f'<p class="note">{side.upper()} not replayed: {esc(why)}.</p>')
            if warn is not None:
                warn(f"{side.upper()} videos not replayed: {why}")
    for d in _pick(disc, n):
        for side, run in (("a", a), ("b", b)):
            if refused[side]:
                continue
            ep = _episode(run, d)
            outcome = "success" if d[side] else "failure"
            cap = (
                f"{side.upper()} {outcome}: {d['task']} · cell {d['cell']} · episode {d['episode']}"
            )
            if ep is None:
                continue
            try:
                frames, success, fps = replay(run, ep, plans[side])
                note = "" if success == ep.success else " · replay DIFFERS"
                parts.append(video(encode_mp4(frames, fps), cap + note))
            except Exception as exc:  # a broken replay must not lose the whole page
                parts.append(f'<p class="note">{esc(cap)}: replay failed: {esc(exc)}</p>')
    return f'<div class="clips">{"".join(parts)}</div>' if parts else ""


def comparison_section(
    a: Run,
    b: Run,
    c: dict[str, Any],
    videos: int = 0,
    allow_code: Sequence[str] = (),
    warn: Callable[[str], None] | None = None,
) -> str:
    """The section of one comparison `c` (a result of `compare_pair`) of B with A;
    `videos`, `allow_code` and `warn` as in `clips`."""
    rows = [_row(t, e) for t, e in c["tasks"].items()] + [_row("pooled", c["pooled"])]
    classes = [_cls(e) for e in c["tasks"].values()] + [_cls(c["pooled"])]
    headers = ["task", f"A: {a.label}", f"B: {b.label}", "B − A [95% CI]", "McNemar p"]
    body = table([*headers, "only A / only B"], rows, classes)
    body += f'<p class="note">{esc(c["method"])}. Red (green): B worse (better) than A, '
    body += "the interval excludes 0.</p>"
    if not c["paired"]:
        body += '<p class="note"><b>Unpaired</b>: the runs used different seeds.</p>'
    body += aggregate_table(c["aggregate"])
    body += f'<p class="note">{esc(c["aggregate"]["method"])}.</p>'
    uri = profile_uri([a, b], list(c["tasks"]))
    body += figure(uri, "profile", "Performance profile over tasks, 95% bands (episodes).")
    if c["discordant"]:
        body += discordant_table(c["discordant"])
        if videos > 0:
            body += clips(a, b, c["discordant"], videos, allow_code, warn)
    title = f"{'Paired' if c['paired'] else 'Unpaired'} comparison: B {b.label} vs A {a.label}"
    return section(title, body, "comparison")


def write_page(
    runs: list[Run],
    result: dict[str, Any],
    out: Path,
    videos: int = 0,
    allow_code: Sequence[str] = (),
    warn: Callable[[str], None] | None = None,
) -> Path:
    """A self-contained page of every comparison in `result` (from `compare_loaded`);
    `videos`, `allow_code` and `warn` as in `clips`."""
    by_path = {str(r.path): r for r in runs}
    sections = []
    for c in result.get("comparisons", [result]):
        a, b = by_path[c["runs"]["a"]["path"]], by_path[c["runs"]["b"]["path"]]
        sections.append(comparison_section(a, b, c, videos, allow_code, warn))
    meta = "<br>".join(esc(r.label) + ": " + esc(r.path) for r in runs)
    write_atomic(out, page("metasim compare", meta, sections))
    return out
