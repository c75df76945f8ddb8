"""Figures of docs/log/learned_policy.md: the training loss curve, the two harnesses' table
and the report's plots.

    python scripts/learned_policy_figures.py --log runs/act_visual.log \
        --table runs/learned_mw/table.json \
        --report runs/act_visual-eval-visual/report.html --out docs/learned_policy

Reads LeRobot's training log lines (`step:50 ... loss:0.123 ...`) and writes
OUT/loss.png; plots the per-task success of both harnesses with their Wilson intervals
from the table `learned_policy_table.py --json` wrote (OUT/harnesses.png); copies every PNG
plot embedded in each report.html to OUT/<report folder>-<n>.png.
"""

from __future__ import annotations

import argparse
import base64
import json
import re
from pathlib import Path
from typing import Any

STEP = re.compile(r"step:(\d+\.?\d*K?) .*?loss:([0-9.e+-]+)")


def loss_curve(log: Path) -> list[tuple[int, float]]:
    """(step, loss) of every logged training step."""
    points = []
    for m in STEP.finditer(log.read_text(errors="replace")):
        raw = m.group(1)
        step = int(float(raw[:-1]) * 1000) if raw.endswith("K") else int(float(raw))
        points.append((step, float(m.group(2))))
    return points


def plot_loss(points: list[tuple[int, float]], out: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(6, 3.2))
    ax.plot([p[0] for p in points], [p[1] for p in points], lw=1)
    ax.set_xlabel("training step")
    ax.set_ylabel("training loss (LeRobot log)")
    ax.set_yscale("log")
    ax.grid(alpha=0.3)
    fig.savefig(out, dpi=96, bbox_inches="tight")


def plot_harnesses(rows: list[dict[str, Any]], out: Path) -> None:
    """Per task, each harness's success rate with its Wilson 95% interval, side by side
    (metasim's warp run too, when the table has one)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(6, 3.2))
    sides = [("metasim", "metasim eval"), ("lerobot", "lerobot-eval")]
    if rows and "warp" in rows[0]:  # three harnesses: metasim native, metasim warp, LeRobot
        sides.insert(1, ("warp", "metasim eval, warp"))
    for j, (side, label) in enumerate(sides):
        xs = [i + (j - (len(sides) - 1) / 2) * 0.6 / len(sides) for i in range(len(rows))]
        rates = [r[side][0] / max(r[side][1], 1) for r in rows]
        lows = [rate - r[side][2] for rate, r in zip(rates, rows, strict=True)]
        highs = [r[side][3] - rate for rate, r in zip(rates, rows, strict=True)]
        n = rows[0][side][1] if rows else 0
        ax.errorbar(xs, rates, yerr=[lows, highs], fmt="o", capsize=4, label=f"{label} (n={n})")
    ax.set_xticks(range(len(rows)), [r["task"] for r in rows], fontsize=8)
    ax.set_ylabel("success (Wilson 95%)")
    ax.set_ylim(0, 1)
    ax.grid(alpha=0.3, axis="y")
    ax.legend(fontsize=8, loc="lower left")
    fig.savefig(out, dpi=96, bbox_inches="tight")


def report_plots(report: Path, out: Path) -> list[Path]:
    """Every embedded PNG of a report.html, written as OUT/<run>-<n>.png."""
    found = re.findall(r'src="data:image/png;base64,([A-Za-z0-9+/=]+)"', report.read_text())
    paths = []
    for i, data in enumerate(found):
        path = out / f"{report.parent.name}-{i}.png"
        path.write_bytes(base64.b64decode(data))
        paths.append(path)
    return paths


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--log", type=Path)
    ap.add_argument("--table", type=Path, help="learned_policy_table.py's --json output")
    ap.add_argument("--report", type=Path, nargs="*", default=[])
    ap.add_argument("--out", type=Path, required=True)
    args = ap.parse_args()
    args.out.mkdir(parents=True, exist_ok=True)
    if args.log:
        points = loss_curve(args.log)
        plot_loss(points, args.out / "loss.png")
        print(f"loss.png: {len(points)} points, last {points[-1] if points else None}")
    if args.table:
        plot_harnesses(json.loads(args.table.read_text()), args.out / "harnesses.png")
        print(args.out / "harnesses.png")
    for report in args.report:
        for path in report_plots(report, args.out):
            print(path)


if __name__ == "__main__":
    main()
