"""Offered against achieved rates in the campaign report (issue 24, item 3): every format
shows them beside an open-loop load's throughput; closed loops and older rows have none."""

from __future__ import annotations

import json
from pathlib import Path

from servegate.report import (
    build_report,
    console_text,
    render_html,
    render_json,
    render_markdown,
)
from servegate.store import Store

from .starts import WORKLOAD, Campaign


def _record(c: Campaign, aid: int, variant: str, load: str, summary: dict[str, float]) -> None:
    for repeat, achieved in enumerate((7.8, 8.0)):
        c.store.record_point(
            aid,
            variant=variant,
            load=load,
            repeat=repeat,
            result={
                "summary": {"output_throughput": 100.0 + repeat, **summary}
                | ({"achieved_rate": achieved} if "offered_rate" in summary else {}),
                "completed": 40,
                "failed": 0,
                "failures": {},
                "samples": [],
                "settings": {**WORKLOAD, "burstiness": 0.5},
            },
        )


def test_rate_loads_show_offered_and_achieved(tmp_path: Path) -> None:
    """rate=8: 'offered 8/s (burstiness 0.5), achieved 7.90/s' (the repeats' mean) in the
    table, the markdown and the HTML, and an arrivals object in the JSON; c=4 (closed loop, no
    offered rate) shows none and its JSON arrivals is null."""
    with Store.open(tmp_path / "r.db") as store:
        c = Campaign(store)
        aid = c.start("baseline")
        _record(c, aid, "baseline", "rate=8", {"offered_rate": 8.0, "sent_rate": 7.95})
        _record(c, aid, "baseline", "c=4", {})
        c.stop(aid)
        report = build_report(store, "c")
    words = "offered 8/s (burstiness 0.5), achieved 7.90/s"
    assert words in console_text(report, width=200)
    assert words in render_markdown(report)
    assert words in render_html(report)
    doc = json.loads(render_json(report))
    loads = doc["variants"][0]["loads"]
    assert loads["rate=8"]["arrivals"] == {
        "offered_rate": 8.0,
        "sent_rate": 7.95,
        "achieved_rate": 7.9,
        "burstiness": 0.5,
    }
    assert loads["c=4"]["arrivals"] is None
