"""Each renderer on the constructed campaign: terminal, markdown, JSON, CSV."""

from __future__ import annotations

import csv
import io
import json
import platform
import re
from pathlib import Path

import pytest

from servegate.report import (
    METRICS,
    Report,
    build_report,
    console_text,
    render_csv,
    render_json,
    render_markdown,
)
from servegate.store import AttemptStatus, Store


@pytest.fixture(scope="module")
def report(campaign_db: Path) -> Report:
    """The constructed campaign, compared."""
    with Store.open(campaign_db) as store:
        return build_report(store, "demo")


def test_console_table_has_every_variant_load_and_delta(report: Report) -> None:
    """The table shows tok/s per load with the change and interval; a crash its kind and hint."""
    out = console_text(report, width=140)
    for header in ("variant", "status", "startup", "c=1", "c=4", "c=16"):
        assert header in out
    assert re.search(r"fast\s+│ ok, 2 starts\s+│\s+4\.6 s \(warm 4\.6 s, 1x\) │\s+\d+\.\d", out)
    assert re.search(r"\+\d\.\d % \[\+\d\.\d, \+\d\.\d\]", out)
    assert "CRASH (oom)" in out
    assert "lower --mem-fraction-static" in out
    assert "(1 run)" in out


@pytest.mark.parametrize("width", [60, 80, 100, 120, 160])
def test_console_tables_fit_the_width_and_cut_no_status(report: Report, width: int) -> None:
    """At any width from 60 columns: no line of the tables is wider, CRASH (oom) stands
    whole in its cell, every load point has its column, and the hint stands whole."""
    lines = console_text(report, width=width).splitlines()
    tables = [line for line in lines if line[:1] in set("┏┃┡│├└")]
    assert max(len(line) for line in tables) <= width, "\n".join(tables)
    assert any(re.match(r"│ oom +│ CRASH \(oom\) +│", line) for line in tables), tables
    heads = " ".join(line for line in tables if line.startswith("┃"))
    assert all(f" {load} " in heads for load in ("c=1", "c=4", "c=16")), heads
    assert any("- lower --mem-fraction-static or batch size" in line for line in lines)


def test_console_closes_with_one_hyperfine_line_per_variant(report: Report) -> None:
    """fast: 1.0xx +/- 0.00x x baseline output throughput at c=16 (better)."""
    lines = console_text(report, width=140).splitlines()
    assert any(
        re.fullmatch(
            r"fast: 1\.0\d\d \+/- 0\.0\d\d x baseline output throughput at c=16 \(better\)", line
        )
        for line in lines
    )
    assert any(line.startswith("oom: did not start: CRASH") for line in lines)
    assert any(
        re.fullmatch(
            r"spec: 1\.\d{3} x baseline output throughput at c=16 \(1 run, no interval\)", ln
        )
        for ln in lines
    )


def test_markdown_has_tables_calls_and_the_crash_tail(report: Report) -> None:
    """GitHub tables for throughput, latency and startup, and the crash's log tail."""
    md = render_markdown(report)
    assert md.startswith("# Campaign `demo`")
    assert "| variant | status | startup | c=1 | c=4 | c=16 |" in md
    assert re.search(
        r"\| fast \| ok, 2 starts \| 4\.6 s \(warm 4\.6 s, 1x\) \| "
        r"[\d.]+ \(\+\d\.\d % \[.*\], better\) \|",
        md,
    )
    assert "## Latency vs baseline" in md
    assert "| fast | cold | 4.3 s | 4.6 s |" in md
    assert "```text\nTraceback (most recent call last):\ntorch.OutOfMemoryError\n```" in md
    assert "percentile bootstrap" in md
    # a p99 from 180 requests per start is listed, never called, and the report says why
    assert "| fast | c=1 | TTFT p99 (ms) |" in md
    assert "not estimable |" in md
    assert "p99 needs at least 368 requests per server start" in md


def test_json_names_schema_versions_platform_and_every_comparison(report: Report) -> None:
    """The JSON export is self-describing and holds each call with its interval."""
    doc = json.loads(render_json(report))
    assert doc["schema"] == "servegate.report/1"
    assert doc["platform"] == platform.platform()
    assert doc["python"] == platform.python_version()
    assert doc["version"]
    assert [v["name"] for v in doc["variants"]] == ["baseline", "fast", "oom", "spec"]
    fast = [
        c
        for c in doc["comparisons"]
        if (c["variant"], c["load"], c["metric"]) == ("fast", "c=16", "output_throughput")
    ]
    assert len(fast) == 1
    assert fast[0]["call"] == "better"
    est = fast[0]["estimate"]
    assert est["ratio_low"] < est["ratio"] < est["ratio_high"]
    oom = doc["variants"][2]
    assert (oom["status"], oom["kind"]) == ("crash", "oom")
    assert oom["attempts"][0]["env"] == {"HF_TOKEN": "***"}
    assert "secret" not in json.dumps(doc)


def test_csv_has_a_row_per_variant_load_and_metric(report: Report) -> None:
    """Tidy CSV: baseline rows marked, variant rows with ratio and interval."""
    rows = list(csv.DictReader(io.StringIO(render_csv(report))))
    measured = ("baseline", "fast", "spec")
    keys = {m.key for m in METRICS}
    metric_rows = [r for r in rows if r["metric"] in keys and r["variant"] != "A/A"]
    assert len(metric_rows) == len(measured) * len(report.loads) * len(METRICS)
    base = [r for r in rows if r["variant"] == "baseline"]
    assert {r["call"] for r in base} == {"baseline"}
    fast = next(
        r
        for r in rows
        if (r["variant"], r["load"], r["metric"]) == ("fast", "c=4", "output_throughput")
    )
    assert fast["call"] == "better"
    assert float(fast["ratio_low"]) < float(fast["ratio"]) < float(fast["ratio_high"])
    assert fast["n"] == "6"  # two starts of three repeats


def test_a_campaign_without_measurements_renders_in_every_format(tmp_path: Path) -> None:
    """A baseline that crashed and a variant never run: every renderer still answers."""
    from servegate.report import render_html

    with Store.open(tmp_path / "s.db") as store:
        cid = store.campaign("broken", "cfg", "baseline")
        store.add_variant(cid, "later")
        aid = store.start_attempt(
            cid,
            variant="baseline",
            server_key="b",
            command=["serve"],
            env={},
            host="local",
            versions={},
            git_commit=None,
        )
        store.record_verdict(
            aid,
            {"status": "timeout", "elapsed_s": 900.0, "kind": "stall", "reason": "no progress"},
        )
        store.finish_attempt(aid, AttemptStatus.TIMEOUT)
        report = build_report(store, "broken")
    assert [(r.name, r.status) for r in report.variants] == [
        ("baseline", "timeout"),
        ("later", "not run"),
    ]
    assert "TIMEOUT (stall)" in console_text(report)
    assert "later: no throughput measured to compare (not run)" in console_text(report)
    assert "| baseline | TIMEOUT (stall) |" in render_markdown(report).replace("**", "")
    assert json.loads(render_json(report))["comparisons"] == []
    lines = render_csv(report).splitlines()
    header = lines[0].split(",")
    assert header[:9] == [
        "campaign",
        "variant",
        "status",
        "load",
        "metric",
        "unit",
        "better",
        "n",
        "value",
    ]
    assert header[-1] == "call"
    assert 'id="plot-startup"' in render_html(report)
