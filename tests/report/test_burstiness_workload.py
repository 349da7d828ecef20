"""Burstiness is part of the workload key (issue 24, item 3): points sent on another
arrival shape are not compared, and rows stored before ``--burstiness`` (every schedule
Poisson) compare as burstiness 1."""

from __future__ import annotations

from pathlib import Path

from servegate.report import build_report
from servegate.store import Store

from .starts import WORKLOAD, Campaign


def _campaign(c: Campaign) -> None:
    """baseline: older rows without the key; poisson: burstiness 1 written out; bursty: 0.5."""
    c.measured("baseline", [[100.0, 101.0, 99.0]], load="rate=8")
    c.measured("poisson", [[110.0, 111.0, 109.0]], load="rate=8",
               workload={**WORKLOAD, "burstiness": 1.0})  # fmt: skip
    c.measured("bursty", [[90.0, 91.0, 89.0]], load="rate=8",
               workload={**WORKLOAD, "burstiness": 0.5})  # fmt: skip


def test_burstiness_decides_what_is_compared(tmp_path: Path) -> None:
    """poisson (B = 1) is compared with the baseline's older rows; bursty (B = 0.5) is not,
    and the sentence names its burstiness."""
    with Store.open(tmp_path / "r.db") as store:
        _campaign(Campaign(store))
        report = build_report(store, "c")
    assert report.get("poisson", "rate=8", "output_throughput") is not None
    assert report.get("bursty", "rate=8", "output_throughput") is None
    bursty = report.row("bursty")
    assert bursty.not_compared is not None
    assert "input 128, output 12, burstiness 0.5, the baseline with input 128" in (
        bursty.not_compared
    )
