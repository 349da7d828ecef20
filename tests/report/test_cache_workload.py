"""The cache mode and the tokenizer are part of the workload key (issue 24, item 4): a point
whose prompts were isolated, or exact, is not compared with one whose were not, and rows
stored before ``--cache`` (every point resent the same prompts) compare as cache "share",
rows stored before ``--tokenizer`` as approximate prompts."""

from __future__ import annotations

from pathlib import Path

from servegate.report import build_report
from servegate.store import Store

from .starts import WORKLOAD, Campaign


def _campaign(c: Campaign) -> None:
    """baseline: older rows without the keys; shared: written out; isolated; exact."""
    c.measured("baseline", [[100.0, 101.0, 99.0]], load="c=8")
    c.measured("shared", [[110.0, 111.0, 109.0]], load="c=8",
               workload={**WORKLOAD, "cache": "share", "tokenizer": None})  # fmt: skip
    c.measured("isolated", [[90.0, 91.0, 89.0]], load="c=8",
               workload={**WORKLOAD, "cache": "isolate"})  # fmt: skip
    exact = {**WORKLOAD, "cache": "share", "tokenizer": "/m/tokenizer.json"}
    c.measured("exact", [[95.0, 96.0, 94.0]], load="c=8", workload=exact)


def test_cache_mode_and_tokenizer_decide_what_is_compared(tmp_path: Path) -> None:
    """shared is compared with the baseline's older rows; isolated and exact are not, and
    their sentences name the cache mode and the tokenizer."""
    with Store.open(tmp_path / "r.db") as store:
        _campaign(Campaign(store))
        report = build_report(store, "c")
    assert report.get("shared", "c=8", "output_throughput") is not None
    assert report.get("isolated", "c=8", "output_throughput") is None
    assert report.get("exact", "c=8", "output_throughput") is None
    isolated, exact = report.row("isolated"), report.row("exact")
    assert isolated.not_compared is not None and exact.not_compared is not None
    assert "input 128, output 12, cache isolate, the baseline with input 128, output 12;" in (
        isolated.not_compared
    )
    assert "exact prompts by tokenizer.json" in exact.not_compared
