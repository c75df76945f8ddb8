"""A self-contained HTML page of a correlation study: the metrics with their intervals
per task and pooled, and the sim-vs-real scatter plot (inline PNG)."""

from __future__ import annotations

import base64
import tempfile
from pathlib import Path
from typing import Any

from metasim.correlate.plot import scatter_plot
from metasim.correlate.study import Study
from metasim.guards import write_atomic
from metasim.report.html import Raw, esc, figure, page, section, table

METRICS = ("pearson", "spearman", "kendall", "mmrv")


def _cell(row: dict[str, Any], metric: str) -> Raw:
    value = row.get(metric)
    if value is None:
        return Raw("–")
    ci = (row.get("ci95") or {}).get(metric)
    band = f" <small>[{ci[0]:.2f}, {ci[1]:.2f}]</small>" if ci and None not in ci else ""
    return Raw(f"{value:.3f}{band}")


def write_html(study: Study, result: dict[str, Any], path: str | Path) -> Path:
    """Write the study page to `path` and return it."""
    rows = [
        [task, row.get("n_policies", ""), *(_cell(row, m) for m in METRICS)]
        for task, row in result["tasks"].items()
    ]
    pooled = result.get("pooled") or {}
    if pooled:
        rows.append(["pooled", pooled.get("n_points", ""), *(_cell(pooled, m) for m in METRICS)])
    pearson = {task: row["pearson"] for task, row in result["tasks"].items()}
    with tempfile.TemporaryDirectory() as tmp:
        png = scatter_plot(study, Path(tmp) / "scatter.png", pearson)
        uri = "data:image/png;base64," + base64.b64encode(png.read_bytes()).decode()
    method = result.get("method", {})
    body = table(["task", "policies", "Pearson r", "Spearman ρ", "Kendall τ", "MMRV"], rows)
    body += f"<p>95% intervals: {esc(method.get('resampling', ''))}</p>"
    sections = [
        section("Sim-to-real agreement", body, "metrics"),
        section(
            "Simulated vs real success",
            figure(
                uri,
                "scatter plot of simulated against real success rates",
                "One point per (task, policy), 95% bars; dashed: sim = real.",
            ),
            "scatter",
        ),
    ]
    out = Path(path)
    write_atomic(out, page("metasim correlation study", "", sections))
    return out
