"""The HTML report: one self-contained file whose plots a real browser draws."""

from __future__ import annotations

import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
from pathlib import Path

import numpy as np
import pytest

from servegate.errors import UsageError
from servegate.report import Report, build_report, render_html
from servegate.report.html import PHASE_COLOURS, VARIANT_COLOURS
from servegate.store import Store

from .png import read_png


@pytest.fixture(scope="module")
def report(campaign_db: Path) -> Report:
    """The constructed campaign, compared."""
    with Store.open(campaign_db) as store:
        return build_report(store, "demo")


@pytest.fixture(scope="module")
def html_file(report: Report, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The report written to a file."""
    path = tmp_path_factory.mktemp("html") / "report.html"
    path.write_text(render_html(report), encoding="utf-8")
    return path


def test_html_is_one_file_with_plotly_inline(html_file: Path) -> None:
    """No external script or stylesheet: plotly.js is in the page; four plots are placed."""
    page = html_file.read_text(encoding="utf-8")
    assert not re.search(r"<script[^>]+src=", page)
    assert not re.search(r"<link[^>]+href=", page)
    assert len(page) > 1_000_000  # plotly.js itself
    for plot in ("throughput", "ttft", "itl", "startup"):
        assert f'id="plot-{plot}"' in page
    assert "CRASH (oom)" in page
    assert "lower --mem-fraction-static or batch size" in page


def test_missing_plotly_names_the_extra(report: Report, monkeypatch: pytest.MonkeyPatch) -> None:
    """Without plotly the HTML report fails with one sentence naming the install command."""
    monkeypatch.setitem(sys.modules, "plotly", None)
    monkeypatch.setitem(sys.modules, "plotly.graph_objects", None)
    with pytest.raises(UsageError, match=re.escape("pip install 'servegate[html]'")):
        render_html(report)


def _rgb(colour: str) -> np.ndarray:
    return np.array([int(colour[i : i + 2], 16) for i in (1, 3, 5)])


def _bands(rows: np.ndarray, gap: int = 30) -> list[tuple[int, int]]:
    """Group sorted row numbers into runs separated by more than ``gap`` rows."""
    bands: list[tuple[int, int]] = []
    for row in rows.tolist():
        if bands and row - bands[-1][1] <= gap:
            bands[-1] = (bands[-1][0], row)
        else:
            bands.append((row, row))
    return bands


def _screenshot(page: Path, out: Path) -> None:
    profile = tempfile.mkdtemp(prefix="chromium-")
    command = [
        shutil.which("chromium") or "chromium",
        "--headless",
        "--no-sandbox",
        "--disable-gpu",
        "--disable-quic",
        "--no-first-run",
        "--disable-background-networking",
        "--disable-component-update",
        "--disable-sync",
        f"--user-data-dir={profile}",
        "--virtual-time-budget=5000",
        f"--screenshot={out}",
        "--window-size=1280,2400",
        page.as_uri(),
    ]
    proc = subprocess.Popen(
        command, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True
    )
    try:
        proc.wait(timeout=90)
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
        shutil.rmtree(profile, ignore_errors=True)


@pytest.mark.slow
def test_chromium_draws_every_plot(html_file: Path, report: Report, tmp_path: Path) -> None:
    """Headless Chromium, offline: each chart band holds the variants' and phases' colours."""
    if shutil.which("chromium") is None:
        if os.environ.get("CI"):
            pytest.fail("chromium is not installed; CI installs it with apt-get install chromium")
        pytest.skip("chromium is not installed (apt-get install chromium)")
    shot = tmp_path / "report.png"
    _screenshot(html_file, shot)
    image = read_png(shot).astype(np.int16)
    assert image.shape == (2400, 1280, 3)

    measured = [row.name for row in report.variants if row.loads]
    chart_rows = []
    for name in measured:
        colour = VARIANT_COLOURS[report.data.variants.index(name)]
        hits = (np.abs(image - _rgb(colour)).max(axis=2) <= 10).sum(axis=1)
        assert hits.sum() > 300, f"{name}'s colour is missing from the plots"
        chart_rows.append(np.nonzero(hits >= 2)[0])
    bands = _bands(np.unique(np.concatenate(chart_rows)))
    tall = [b for b in bands if b[1] - b[0] > 100]
    assert len(tall) >= 3, f"expected throughput, TTFT and ITL plots, found bands {bands}"

    timeline_top = max(b[1] for b in tall)
    for colour in PHASE_COLOURS[:3]:
        hits = np.abs(image[timeline_top:] - _rgb(colour)).max(axis=2) <= 6
        assert hits.sum() > 1000, f"startup phase colour {colour} not drawn below the plots"
