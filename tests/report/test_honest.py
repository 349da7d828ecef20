"""Honest comparisons: what is compared with what, and what every format then shows."""

from __future__ import annotations

import csv
import io
import json
import re
import sqlite3
from pathlib import Path

import pytest

from servegate.report import (
    Report,
    build_report,
    console_text,
    half_widths,
    render_csv,
    render_html,
    render_json,
    render_markdown,
)
from servegate.store import Store

from .starts import WORKLOAD, Campaign

LONG = {**WORKLOAD, "input_len": 4096}


def _report(path: Path, build: object, **options: float) -> Report:
    with Store.open(path) as store:
        build(Campaign(store))  # type: ignore[operator]
        return build_report(store, "c", **options)  # type: ignore[arg-type]


def _csv(report: Report) -> list[dict[str, str]]:
    return list(csv.DictReader(io.StringIO(render_csv(report))))


def _failing(c: Campaign) -> None:
    """baseline, fusion (server died mid-benchmark), broken (bench failed), oom (no start)."""
    c.measured("baseline", [[100.0, 101.0, 99.0]])
    aid = c.start("fusion")
    c.point(aid, "fusion", repeat=0, throughput=180.0)
    c.stop(
        aid,
        "failed",
        "server died during the benchmark (after fusion c=4 repeat 1): CUDA error: an "
        "illegal memory access (cuda)\n[rank0] RuntimeError: CUDA error\nkilled",
        ("fusion",),
    )
    aid = c.start("broken")
    c.stop(aid, "failed", "could not benchmark broken", ("broken",))
    c.start("oom", status="crash", kind="oom", reason="CUDA out of memory")


def test_a_variant_whose_benchmark_failed_is_never_compared(tmp_path: Path) -> None:
    """fusion's points before its server died are kept but not compared; it shows failed."""
    report = _report(tmp_path / "r.db", _failing)
    rows = {row.name: row for row in report.variants}
    assert {n: rows[n].status for n in rows} == {
        "baseline": "done",
        "fusion": "failed",
        "broken": "failed",
        "oom": "crash",
    }
    assert [c for c in report.comparisons if c.variant != "baseline"] == []
    assert report.startup == ()
    assert rows["fusion"].reason is not None
    assert rows["fusion"].reason.startswith("server died during the benchmark (after fusion")
    assert rows["fusion"].tail == ("[rank0] RuntimeError: CUDA error", "killed")
    assert rows["fusion"].loads["c=4"].throughput_mean == 180.0  # measured, kept, shown
    out = console_text(report, width=200)
    assert "fusion: FAILED, not compared: server died during the benchmark" in out
    assert "broken: FAILED, not compared: could not benchmark broken" in out
    assert "+80.0 %" not in out


def test_every_format_says_why_each_failed_variant_failed(tmp_path: Path) -> None:
    """Markdown, HTML, JSON and CSV all carry each failure's reason (and the log tail)."""
    report = _report(tmp_path / "r.db", _failing)
    md, page = render_markdown(report), render_html(report)
    for text in (md, page):
        assert "could not benchmark broken" in text
        assert "server died during the benchmark (after fusion c=4 repeat 1)" in text
        assert "CUDA out of memory" in text
        assert "[rank0] RuntimeError: CUDA error" in text
    assert "<h3>broken: FAILED</h3><p>could not benchmark broken. Not compared.</p>" in page
    doc = json.loads(render_json(report))
    by_name = {v["name"]: v for v in doc["variants"]}
    assert by_name["broken"]["reason"] == "could not benchmark broken"
    assert by_name["fusion"]["not_compared"] == "not compared: it failed"
    rows = _csv(report)
    failures = {r["variant"]: r for r in rows if r["metric"] == ""}
    assert set(failures) == {"fusion", "broken", "oom"}
    assert failures["broken"]["reason"] == "could not benchmark broken"
    assert failures["oom"]["call"] == "crash"
    assert failures["oom"]["reason"] == "CUDA out of memory (hint: lower --mem-fraction-static)"
    fusion_points = [r for r in rows if r["variant"] == "fusion" and r["metric"]]
    assert fusion_points and {r["call"] for r in fusion_points} == {"not compared"}


def test_a_failed_bench_only_variant_does_not_fail_the_server_it_shared(tmp_path: Path) -> None:
    """'could not benchmark long' on the baseline's start fails long, not the baseline."""

    def build(c: Campaign) -> None:
        aid = c.start("baseline")
        for repeat, value in enumerate((100.0, 101.0, 99.5)):
            c.point(aid, "baseline", repeat=repeat, throughput=value)
        c.stop(aid, "failed", "could not benchmark long", ("long",))
        c.store.add_variant(c.cid, "long")
        c.measured("fast", [[110.0, 111.0, 109.0]])

    report = _report(tmp_path / "r.db", build)
    rows = {row.name: row for row in report.variants}
    assert (rows["baseline"].status, rows["long"].status) == ("done", "failed")
    assert rows["long"].reason == "could not benchmark long"
    fast = report.get("fast", "c=4", "output_throughput")
    assert fast is not None and fast.estimate is not None  # compared with the baseline
    assert fast.estimate.ratio == pytest.approx(110.0 / 100.1666, rel=1e-3)
    assert fast.call == "needs more starts"  # one start a side


def test_who_failed_comes_from_the_stored_field_not_the_reason_text(tmp_path: Path) -> None:
    """The same reason sentence without the stored owners fails the whole start: the
    report reads the attempt's failed variants, never the wording of its reason."""

    def build(c: Campaign) -> None:
        aid = c.start("baseline")
        for repeat, value in enumerate((100.0, 101.0)):
            c.point(aid, "baseline", repeat=repeat, throughput=value)
        c.stop(aid, "failed", "could not benchmark long")  # no owners stored
        c.store.add_variant(c.cid, "long")

    report = _report(tmp_path / "r.db", build)
    assert report.row("baseline").status == "failed"
    with Store.open(tmp_path / "r.db") as store:
        info = store.find_campaign("c")
        assert info is not None
        assert [a.failed_variants for a in store.attempts(info.id)] == [()]


def test_a_database_from_before_the_field_gets_its_failed_variants(tmp_path: Path) -> None:
    """Opening a schema-2 database backfills the owners its runner named in reasons."""
    from servegate.store.schema import MIGRATIONS

    path = tmp_path / "old.db"
    with Store.open(path, migrations=MIGRATIONS[:2]) as store:
        cid = store.campaign("c", "[campaign]\n", "baseline")
        names = ("baseline", "long", "fusion", "fusion-x")
        for name in names:
            store.add_variant(cid, name)
        reasons = {
            "baseline": "could not benchmark long",
            "fusion": "server died during the benchmark (after fusion-x c=4 repeat 1): x\ntail",
            "fusion-x": "preflight failed: port 8000 is taken",
        }
    conn = sqlite3.connect(path)  # as that servegate wrote them
    with conn:
        for name, reason in reasons.items():
            conn.execute(
                "INSERT INTO attempt (campaign_id, variant_id, server_key, cold, command, env, "
                "host, versions, status, reason, started_at) SELECT ?, id, ?, 1, '[]', '{}', "
                "'local', '{}', 'failed', ?, '2024-01-01' FROM variant WHERE name = ?",
                (cid, name, reason, name),
            )
    conn.close()
    with Store.open(path) as store:
        assert "start order and failed variants" in [step[1] for step in store.schema_steps()]
        owners = {a.variant: a.failed_variants for a in store.attempts(cid)}
    assert owners == {"baseline": ("long",), "fusion": ("fusion-x",), "fusion-x": ()}


def test_an_earlier_failed_start_is_shown_with_the_last_ones_status(tmp_path: Path) -> None:
    """A crash, then a start that measured: ok, with the earlier crash named."""

    def build(c: Campaign) -> None:
        c.measured("baseline", [[100.0, 101.0]])
        c.start("fast", status="crash", kind="oom")
        c.measured("fast", [[110.0, 111.0]])

    report = _report(tmp_path / "r.db", build)
    fast = report.row("fast")
    assert (fast.status, fast.earlier_failures) == ("done", ("CRASH (oom)",))
    assert "ok (earlier: CRASH (oom))" in console_text(report, width=200)
    assert "Earlier starts that failed: CRASH (oom)" in render_markdown(report)


def _workloads(c: Campaign) -> None:
    """baseline and long (bench-only: 4096-token prompts) share a server; fusion and
    fusion-long have their own; chat-only has another workload and no reference."""
    aid = c.start("baseline", "base-server", elapsed=30.0)
    for repeat in range(3):
        c.point(aid, "baseline", repeat=repeat, throughput=100.0 + repeat)
        c.point(aid, "long", repeat=repeat, throughput=50.0 + repeat, workload=LONG)
    c.stop(aid)
    c.measured("fusion", [[110.0, 111.0, 112.0]])
    c.measured("fusion-long", [[60.0, 61.0, 62.0]], workload=LONG)
    c.measured("chat-only", [[90.0, 91.0, 92.0]], workload={**WORKLOAD, "api": "chat"})


def test_another_workload_is_compared_with_the_baseline_server_on_that_workload(
    tmp_path: Path,
) -> None:
    """fusion-long vs long (+20 %), never vs the baseline's 1024-token runs (-40 %)."""
    report = _report(tmp_path / "r.db", _workloads)
    comp = report.get("fusion-long", "c=4", "output_throughput")
    assert comp is not None and comp.reference == "long"
    assert comp.estimate is not None
    assert comp.estimate.ratio == pytest.approx(61.0 / 51.0)
    long = report.row("long")
    assert long.reference is None
    assert long.not_compared is not None and "the reference for variants" in long.not_compared
    chat = report.row("chat-only")
    assert chat.reference is None
    assert chat.not_compared == (
        "not compared: measured with input 128, output 12, chat API, the baseline with input "
        "128, output 12; add a variant on the baseline's server with this workload to compare it"
    )
    assert report.get("chat-only", "c=4", "output_throughput") is None
    out = console_text(report, width=220)
    assert "fusion-long: 1.196 x long output throughput" in out  # one start: no interval
    assert re.search(r"90\.0.*\n.*other workload, not compared", out) or (
        "other workload, not compared" in out
    )
    md = render_markdown(report)
    assert "## Not compared" in md
    assert "- chat-only: not compared: measured with input 128" in md
    assert "fusion-long (vs long)" in md
    assert "<h2>Not compared</h2>" in render_html(report)
    doc = json.loads(render_json(report))
    assert {c["reference"] for c in doc["comparisons"] if c["variant"] == "fusion-long"} == {"long"}


def test_a_bench_only_variant_on_the_baseline_server_has_no_startup_comparison(
    tmp_path: Path,
) -> None:
    """long was the baseline's own start: no startup row compares it; fusion's is compared."""
    report = _report(tmp_path / "r.db", _workloads)
    assert {c.variant for c in report.startup} == {"fusion", "fusion-long", "chat-only"}
    assert report.row("long").on_baseline_server
    rows = _csv(report)
    long_start = next(r for r in rows if r["variant"] == "long" and r["load"] == "startup")
    assert (long_start["call"], long_start["reason"]) == (
        "not compared",
        "measured on the baseline's own server starts",
    )
    fusion_start = next(r for r in rows if r["variant"] == "fusion" and r["load"] == "startup")
    assert fusion_start["metric"] == "startup_cold_s"
    assert fusion_start["call"] in {"1 run, no interval", "better", "worse"}


def _restarts(c: Campaign) -> None:
    """Four starts each, interleaved; each start runs in its own regime (+-6 %)."""
    speeds = [1.0, 0.94, 1.05, 0.97]
    for index, speed in enumerate(speeds):
        for name, scale in (("baseline", 1.0), ("fast", 1.10)):
            aid = c.start(name, elapsed=20.0 + index)
            for repeat in range(2):
                c.point(
                    aid,
                    name,
                    repeat=index * 2 + repeat,
                    throughput=100.0 * scale * speed * (1 + 0.002 * repeat),
                    ttft_ms=40.0 / scale,
                )
            c.stop(aid)


def test_restarts_widen_the_interval_by_the_variation_between_starts(tmp_path: Path) -> None:
    """Regimes of +-6 % between starts: the interval is about that wide and counts 4 starts."""
    report = _report(tmp_path / "r.db", _restarts)
    comp = report.get("fast", "c=4", "output_throughput")
    assert comp is not None and comp.estimate is not None
    est = comp.estimate
    assert (est.starts_baseline, est.starts_variant) == (4, 4)
    assert est.half_width is not None and est.half_width > 0.03
    assert est.ratio_low is not None and est.ratio_low < 1.10 < (est.ratio_high or 0)
    assert report.row("fast").starts == 4
    assert not report.single_start
    assert "one server start" not in console_text(report, width=200)


def test_the_noise_floor_splits_the_baseline_starts_in_alternate_halves(tmp_path: Path) -> None:
    """A/A: baseline starts 1, 3 against 2, 4 at every metric, in every format."""
    report = _report(tmp_path / "r.db", _restarts)
    floor = report.noise("c=4", "output_throughput")
    assert floor is not None and floor.split == "starts 1, 3 vs 2, 4"
    assert floor.estimate is not None and floor.estimate.starts_baseline == 2
    assert {f.metric.key for f in report.noise_floor} >= {"ttft_ms_p99", "tpot_ms_p99"}
    out = console_text(report, width=200)
    assert "A/A noise floor: baseline against itself (starts 1, 3 vs 2, 4)" in out
    assert "## Noise floor: baseline against itself (A/A, starts 1, 3 vs 2, 4)" in (
        render_markdown(report)
    )
    assert "Noise floor: baseline against itself (A/A)" in render_html(report)
    doc = json.loads(render_json(report))
    assert {f["split"] for f in doc["noise_floor"]} == {"starts 1, 3 vs 2, 4"}
    aa = [r for r in _csv(report) if r["variant"] == "A/A"]
    assert aa and {r["reason"] for r in aa} == {"starts 1, 3 vs 2, 4"}


def test_one_start_per_side_is_flagged(tmp_path: Path) -> None:
    """Repeats on one server start: no interval, no call, and the report says why."""

    def build(c: Campaign) -> None:
        c.measured("baseline", [[100.0, 100.5, 99.6]])
        c.measured("fast", [[104.0, 104.5, 103.8]])

    report = _report(tmp_path / "r.db", build)
    assert report.single_start
    comp = report.get("fast", "c=4", "output_throughput")
    assert comp is not None and comp.call == "needs more starts"
    assert comp.estimate is not None and not comp.estimate.has_interval
    said = "measured on one server start per variant are not called"
    assert said in console_text(report, width=200)
    assert said in render_markdown(report)
    assert said in render_html(report)
    assert "restarts = 2 or more" in render_markdown(report)


def test_a_tail_latency_regression_shows_next_to_a_throughput_gain(tmp_path: Path) -> None:
    """+5 % throughput with TTFT p99 20x worse: the table cell shows both, the p99 worse."""

    def build(c: Campaign) -> None:
        # 400 requests a start: enough for a p99 (368)
        c.measured("baseline", [[100.0, 100.4], [99.8, 100.1]], requests=200)
        c.measured("greedy", [[105.0, 105.3], [104.9, 105.2]], requests=200, slow_tail=20.0)

    report = _report(tmp_path / "r.db", build)
    p99 = report.get("greedy", "c=4", "ttft_ms_p99")
    assert p99 is not None and p99.call == "worse"
    assert p99.estimate is not None and p99.estimate.ratio > 10
    out = console_text(report, width=200)
    cell = re.search(r"TTFT p99 \+(\d[\d,.]*) %", out)
    assert cell is not None and float(cell.group(1).replace(",", "")) > 900
    assert re.search(r"greedy: TTFT p99 \+[\d,.]+ % \[.*\] \(worse\)", out)
    assert "TTFT p99 +" in render_html(report).split("<h2>Latency distributions")[0]


def test_min_effect_decides_whether_a_small_real_change_is_called(tmp_path: Path) -> None:
    """+0.6 %, clear of zero: no meaningful difference at 1 %, better at 0.5 %."""

    def build(c: Campaign) -> None:
        c.measured("baseline", [[100.0, 100.02], [100.01, 99.99], [100.0, 100.01]])
        c.measured("tweak", [[100.6, 100.61], [100.59, 100.6], [100.62, 100.6]])

    with Store.open(tmp_path / "r.db") as store:
        build(Campaign(store))
        default = build_report(store, "c")
        lenient = build_report(store, "c", min_effect=0.005)
    assert default.min_effect == 0.01
    comp = default.get("tweak", "c=4", "output_throughput")
    assert comp is not None and comp.estimate is not None
    assert comp.estimate.ratio_low is not None and comp.estimate.ratio_low > 1.0
    assert comp.call == "no meaningful difference"
    again = lenient.get("tweak", "c=4", "output_throughput")
    assert again is not None and again.call == "better"
    assert "at least 1 %" in render_markdown(default)
    assert json.loads(render_json(lenient))["method"]["min_effect"] == 0.005


def test_half_widths_give_each_compared_interval_for_a_runner(tmp_path: Path) -> None:
    """One entry per compared variant and load, with its half-width and its starts."""
    with Store.open(tmp_path / "r.db") as store:
        c = Campaign(store)
        _restarts(c)
        _failing_variant = c.start("oom", status="crash", kind="oom")
        widths = half_widths(store, "c")
        both = half_widths(store, "c", metrics=("output_throughput", "ttft_ms_p99"))
        report = build_report(store, "c")
    assert [(w.variant, w.reference, w.load, w.metric) for w in widths] == [
        ("fast", "baseline", "c=4", "output_throughput")
    ]
    comp = report.get("fast", "c=4", "output_throughput")
    assert comp is not None and comp.estimate is not None
    assert widths[0].half_width == pytest.approx(comp.estimate.half_width)
    assert (widths[0].starts_baseline, widths[0].starts_variant) == (4, 4)
    assert {w.metric for w in both} == {"output_throughput", "ttft_ms_p99"}
