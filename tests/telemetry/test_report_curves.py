"""The HTML report's startup timeline with the stored resource curves under it."""

from __future__ import annotations

from pathlib import Path

import pytest
from tests.report.campaign import build

from servegate.report import build_report, render_html
from servegate.report.html import startup_series
from servegate.store import Store
from servegate.telemetry import Sampler

from .helpers import tree, wait_for

pytest.importorskip("plotly")


def test_curves_under_the_timeline(tmp_path: Path) -> None:
    """The baseline's stored series becomes CPU, RSS and GPU curves in the startup plot."""
    path = tmp_path / "c.db"
    build(path, repeats=1, requests=10)
    with tree("6") as root:
        assert root.stdout is not None
        root.stdout.readline()
        with Sampler(root.pid, period_s=0.05) as sampler:
            wait_for(sampler, lambda s: s.processes == 6 and s.t_s > 0.3)
    snaps = sampler.snapshots()
    with Store.open(path) as store:
        report = build_report(store, "demo")
        baseline = report.baseline
        starts = report.data.attempts_of(baseline)
        aid = next(a.id for a in starts if a.cold)
        store.record_telemetry(aid, snaps)
        report = build_report(store, "demo")
    series = startup_series(report)
    assert list(series) == [baseline]
    assert [s.t_s for s in series[baseline]] == [s.t_s for s in snaps]
    page = render_html(report)
    startup = page[page.index('id="plot-startup"') :]
    assert "with the server's resources under it" in startup
    for label in ("CPU %", "RSS GiB", "GPU GiB"):
        assert label in startup
    assert f"{baseline} RSS GiB" in startup


def test_no_series_keeps_the_plain_timeline(tmp_path: Path) -> None:
    """A store without telemetry (--sample 0, older runs) gives the timeline alone."""
    path = tmp_path / "c.db"
    build(path, repeats=1, requests=10)
    with Store.open(path) as store:
        report = build_report(store, "demo")
    assert startup_series(report) == {}
    page = render_html(report)
    startup = page[page.index('id="plot-startup"') :]
    assert "RSS GiB" not in startup
