"""Extra percentiles in campaign reports (issue 24, item 7): points measured with
``[bench] percentiles = [99.9]`` are compared at p99.9 too, in every output format;
campaigns without them keep the standard metrics only."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from servegate.report import METRICS, build_report
from servegate.report.export import render_csv, render_json
from servegate.report.markdown import render_markdown
from servegate.store import Store

from .starts import Campaign

EXTRA = {"ttft_ms_p99.9": 0.0, "tpot_ms_p99.9": 0.0, "ttft_ms_p95": 0.0}


def _campaign(c: Campaign, summary: dict[str, float] | None) -> None:
    """baseline and slowtail (its slowest 3 % of requests 4x slower TTFT), 3 starts each."""
    point: dict[str, Any] = {"requests": 400, "summary": summary}
    c.measured("baseline", [[100.0], [101.0], [99.0]], **point)
    c.measured("slowtail", [[100.0], [100.5], [99.5]], slow_tail=4.0, **point)


def test_extra_percentiles_are_compared_and_rendered(tmp_path: Path) -> None:
    """p95 and p99.9 of TTFT, p99.9 of TPOT: compared over requests, called, and shown
    in the markdown and JSON reports."""
    with Store.open(tmp_path / "r.db") as store:
        _campaign(Campaign(store), EXTRA)
        report = build_report(store, "c")
    keys = [m.key for m in report.metrics]
    assert keys[: len(METRICS)] == [m.key for m in METRICS]
    assert keys[len(METRICS) :] == ["ttft_ms_p95", "ttft_ms_p99.9", "tpot_ms_p99.9"]
    tail = report.get("slowtail", "c=4", "ttft_ms_p99.9")
    assert tail is not None and tail.estimate is not None
    assert tail.estimate.variant > 2.5 * tail.estimate.baseline  # the 4x tail, seen at p99.9
    assert report.get("slowtail", "c=4", "ttft_ms_p95") is not None
    markdown = render_markdown(report)
    assert "TTFT p99.9 (ms)" in markdown and "TPOT p99.9 (ms)" in markdown
    assert "ttft_ms_p99.9" in render_json(report)
    assert "ttft_ms_p99.9" in render_csv(report)


def test_a_campaign_without_extra_percentiles_compares_the_standard_metrics(
    tmp_path: Path,
) -> None:
    with Store.open(tmp_path / "r.db") as store:
        _campaign(Campaign(store), None)
        report = build_report(store, "c")
    assert report.metrics == METRICS
