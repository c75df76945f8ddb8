"""`metasim report`: the HTML is self-contained, and headless Chromium loads it with no
console output, every plot decoded and every video's metadata read; a screenshot is
not blank. Chromium tests skip only when /usr/bin/chromium is missing (setup.sh
installs it)."""

from __future__ import annotations

import json
import re
import subprocess
from html import unescape
from pathlib import Path

import numpy as np
import pytest

from metasim.cli.main import main
from metasim.evaluate.config import compose
from metasim.evaluate.runner import run_eval
from metasim.report import build_report

CHROMIUM = Path("/usr/bin/chromium")
needs_chromium = pytest.mark.skipif(
    not CHROMIUM.exists(), reason="/usr/bin/chromium missing (scripts/setup.sh installs it)"
)
TINY_GRID = """name: tiny
design: ofat
factors:
  - {name: action_latency, axis: action_latency, levels: [0, 5]}
"""


@pytest.fixture(scope="module")
def report(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A 2-cell run on lift_cube (latency 5 fails the expert), compared with a nominal
    run, with one failure and one success filmed."""
    root = tmp_path_factory.mktemp("report")
    grid = root / "tiny.yaml"
    grid.write_text(TINY_GRID)
    common = ["episodes=2", "num_envs=2", "suite.tasks=[lift_cube]"]
    run_eval(compose([*common, f"perturbation={grid}", f"out={root / 'grid'}"]))
    run_eval(compose([*common, f"out={root / 'nominal'}"]))
    return build_report(root / "grid", root / "nominal", root / "report.html", videos=1)


def chromium(*args: str, profile: Path, timeout: float = 60) -> subprocess.CompletedProcess:
    flags = [
        "--headless",
        "--no-sandbox",
        "--disable-gpu",
        "--disable-quic",
        "--no-first-run",
        "--disable-background-networking",
        "--disable-component-update",
        "--disable-sync",
        "--hide-scrollbars",
        f"--user-data-dir={profile}",
    ]
    return subprocess.run(
        [str(CHROMIUM), *flags, *args], capture_output=True, text=True, timeout=timeout
    )


def load(url: str, profile: Path) -> tuple[dict, list[str]]:
    """Load `url`, give it 5 s of virtual time; (the page's load status, console lines)."""
    proc = chromium(
        "--enable-logging=stderr",
        "--v=0",
        "--virtual-time-budget=5000",
        "--dump-dom",
        url,
        profile=profile,
    )
    console = [line for line in proc.stderr.splitlines() if ":CONSOLE" in line]
    found = re.search(r'data-report-status="([^"]*)"', proc.stdout)
    status = json.loads(unescape(found.group(1))) if found else {}
    return status, console


@pytest.mark.slow
def test_html_is_self_contained(report: Path) -> None:
    html = report.read_text()
    for heading in (
        "Success per task",
        "Difference between the runs",
        "Success per cell",
        "Sensitivity to perturbation factors",
        "Success against factor level",
        "Performance profile",
        "Videos of sampled failures and successes",
    ):
        assert f"<h2>{heading}" in html
    assert not re.search(r"""(src|href)=["']?(https?:)?//""", html), "no network references"
    assert html.count('src="data:image/png;base64,') >= 5
    assert html.count('src="data:video/mp4;base64,') == 2
    assert "replay matches" in html and "DIFFERS" not in html
    title = html.split("</h1>")[0]
    assert "policy scripted" in title and "tiny.yaml" in title and "seed 0" in title


def test_bad_run_folder_exits_2(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["report", str(tmp_path)]) == 2
    err = capsys.readouterr().err
    assert "summary.json is missing" in err and "Traceback" not in err
    assert len(err.strip().splitlines()) == 1
    assert main(["report", str(tmp_path / "nope")]) == 2


@needs_chromium
@pytest.mark.slow  # starts Chromium (~15 s here)
def test_chromium_loads_plots_and_videos(report: Path, tmp_path: Path) -> None:
    status, console = load(report.as_uri(), tmp_path / "profile")
    assert console == [], f"console output: {console}"
    assert status, "the page's load check did not run"
    assert status["errors"] == []
    assert status["images"] >= 5 and status["imagesLoaded"] == status["images"]
    assert status["videos"] == 2 and status["videosReady"] == 2, status


@needs_chromium
def test_console_check_sees_errors(tmp_path: Path) -> None:
    """The console check above is not vacuous: a page that errs is caught."""
    page = tmp_path / "bad.html"
    page.write_text('<html><body><script>console.error("boom"); nope();</script></body></html>')
    _, console = load(page.as_uri(), tmp_path / "profile")
    assert any("boom" in line for line in console)
    assert any("nope is not defined" in line for line in console)


@needs_chromium
def test_screenshot_is_not_blank(report: Path, tmp_path: Path) -> None:
    from PIL import Image

    shot = tmp_path / "report.png"
    chromium(
        "--window-size=1280,2000",
        "--virtual-time-budget=3000",
        f"--screenshot={shot}",
        report.as_uri(),
        profile=tmp_path / "profile",
    )
    assert shot.is_file()
    pixels = np.asarray(Image.open(shot).convert("RGB"), dtype=np.float64)
    assert pixels.shape[:2] == (2000, 1280)
    assert pixels.std() > 20.0
