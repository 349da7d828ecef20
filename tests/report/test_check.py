"""``servegate check`` as CI runs it: a real process on real SQLite files.

Campaigns are written start by start as the runner writes them (``starts.Campaign``),
with known throughputs, so a regression is one by construction; the last test runs a
real campaign on the simulated engine and checks it.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Any

import pytest

from servegate.report import build_report
from servegate.store import CampaignStatus, Store

from .starts import WORKLOAD, Campaign

# three server starts of two repeats each, around 100 tok/s, spread about 1 %
BASE = [[100.0, 101.0], [99.0, 100.5], [100.2, 99.8]]
SAME = [[100.3, 99.6], [100.8, 99.9], [99.5, 100.4]]


def scaled(factor: float, values: list[list[float]] = BASE) -> list[list[float]]:
    """The throughputs of ``values`` times ``factor``."""
    return [[v * factor for v in start] for start in values]


def write(
    path: Path,
    variants: dict[str, list[list[float]]],
    *,
    name: str = "nightly",
    baseline: str = "base",
    loads: tuple[str, ...] = ("c=4", "c=16"),
    workload: dict[str, Any] | None = None,
) -> Path:
    """A campaign in a new database: each variant measured at each load with those starts."""
    with Store.open(path) as store:
        campaign = Campaign(store, name, baseline)
        for variant, starts in variants.items():
            store.add_variant(campaign.cid, variant)
            for index, values in enumerate(starts):
                aid = campaign.start(variant)
                for load in loads:
                    for offset, value in enumerate(values):
                        repeat = index * len(values) + offset  # the store's key: one per start
                        campaign.point(
                            aid, variant, load, repeat, throughput=value, workload=workload
                        )
                campaign.stop(aid)
        store.set_campaign_status(campaign.cid, CampaignStatus.DONE)
    return path


def servegate(
    cwd: Path, *args: str, env: dict[str, str] | None = None
) -> subprocess.CompletedProcess[str]:
    """``servegate check ARGS`` as a process, in ``cwd``."""
    environ = {k: v for k, v in os.environ.items() if k != "GITHUB_STEP_SUMMARY"}
    return subprocess.run(
        [sys.executable, "-m", "servegate", "check", *args],
        cwd=cwd,
        env={**environ, **(env or {})},
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )


@pytest.fixture(scope="module")
def results(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """results.db: base, slower (10 % less throughput), same, and broken (benchmark failed)."""
    folder = tmp_path_factory.mktemp("check")
    path = write(
        folder / "results.db",
        {"base": BASE, "slower": scaled(0.90), "same": SAME},
    )
    with Store.open(path) as store:
        campaign = Campaign(store, "nightly", "base")
        store.add_variant(campaign.cid, "broken")
        aid = campaign.start("broken")
        campaign.point(aid, "broken", "c=4", 0, throughput=100.0)
        campaign.stop(aid, "failed", "could not benchmark broken\nConnectionResetError: reset")
        store.set_campaign_status(campaign.cid, CampaignStatus.DONE)
    return path


def test_a_regression_exits_1_and_the_markdown_names_it(results: Path) -> None:
    """slower is 10 % slower in every start: exit 1, its throughput rows say REGRESSION."""
    out = results.parent / "slower.md"
    run = servegate(
        results.parent, "--db", "results.db", "--variant", "slower", "--markdown-file", str(out)
    )
    assert run.returncode == 1, run.stderr
    rows = [line for line in run.stdout.splitlines() if line.startswith("slower ")]
    throughput = [line for line in rows if "output throughput" in line]
    assert len(throughput) == 2 and all(line.endswith("REGRESSION") for line in throughput)
    # 80 requests a start cannot estimate a p99 (368): listed, never called, never failed
    ttft = [line for line in rows if "TTFT" in line]
    assert ttft and all(
        line.endswith("not estimable (too few requests per start)") for line in ttft
    )
    assert "4 comparison(s) are percentiles from too few requests per start" in run.stdout
    assert "slower: output throughput regressed -10.0 %" in run.stdout
    markdown = out.read_text(encoding="utf-8")
    assert markdown.startswith("## servegate check: FAIL, regression")
    assert "| slower | c=16 | output throughput (tok/s) | 100.1 | 90.1 | -10.0 % [" in markdown
    assert "| -3 % | **REGRESSION** |" in markdown
    assert "- slower: output throughput regressed -10.0 %" in markdown


def test_no_difference_exits_0(results: Path) -> None:
    """same is within its noise of base on every metric: exit 0."""
    run = servegate(results.parent, "--db", "results.db", "--variant", "same")
    assert run.returncode == 0, run.stdout + run.stderr
    assert run.stdout.startswith("servegate check pass: nightly (results.db) against nightly/base")
    assert "REGRESSION" not in run.stdout
    assert run.stdout.rstrip().endswith("no regression established")
    # the default thresholds: throughput 3 %, TTFT p99 10 %, TPOT p99 5 %, at both loads
    rows = [line for line in run.stdout.splitlines() if line.startswith("same ")]
    # and startup 10 %: the whole start and its phase, cold and warm
    assert len([row for row in rows if " start " not in row]) == 6
    assert len([row for row in rows if " start " in row]) == 4
    assert sum("-3 %" in r for r in rows) == 2 and sum("+10 %" in r for r in rows) == 2 + 4


def test_thresholds_are_respected(results: Path) -> None:
    """A 10 % loss passes at 15 % and fails at 5 %; only the metrics named are checked."""
    loose = servegate(
        results.parent, "--db", "results.db", "--variant", "slower",
        "--max-regression", "output_throughput=15%",
    )  # fmt: skip
    assert loose.returncode == 0, loose.stdout + loose.stderr
    assert "-15 %" in loose.stdout and "TTFT" not in loose.stdout
    tight = servegate(
        results.parent, "--db", "results.db", "--variant", "slower",
        "--max-regression", "output_throughput=5", "--max-regression", "ttft_p50=50%",
    )  # fmt: skip
    assert tight.returncode == 1
    assert "TTFT p50 (ms)" in tight.stdout and "TPOT" not in tight.stdout
    latency = servegate(
        results.parent, "--db", "results.db", "--variant", "slower",
        "--max-regression", "ttft_ms_p99=10%,tpot_p50=5%",
    )  # fmt: skip
    assert latency.returncode == 0, latency.stdout
    assert "output throughput" not in latency.stdout


def test_a_failed_candidate_fails_with_its_reason(results: Path) -> None:
    """broken's benchmark failed: exit 1, whatever it measured before, with the reason."""
    run = servegate(results.parent, "--db", "results.db", "--variant", "broken", "--json")
    assert run.returncode == 1
    doc = json.loads(run.stdout)
    assert (doc["schema"], doc["result"], doc["exit_code"]) == ("servegate.check/1", "fail", 1)
    (variant,) = doc["variants"]
    assert variant["failed"] and variant["checks"] == []
    assert variant["reason"] == "FAILED: could not benchmark broken"
    # every variant by default: the failure and the regression, same passes
    every = servegate(results.parent, "--db", "results.db")
    assert every.returncode == 1
    assert "broken: failed, FAILED: could not benchmark broken" in every.stdout
    assert "FAIL: 2 regression(s) established, 1 variant(s) failed" in every.stdout


def test_json_carries_the_reports_numbers(results: Path) -> None:
    """In one campaign the check's estimates are the report's, interval for interval, at
    the check's per-comparison confidence (95 % over its 6 comparisons and the 2 callable
    startup ones, warm: Bonferroni)."""
    run = servegate(results.parent, "--db", "results.db", "--variant", "slower", "--json")
    assert run.returncode == 1
    doc = json.loads(run.stdout)
    each = doc["variants"][0]["interval_confidence"]
    assert each == pytest.approx(1 - 0.05 / 8)
    assert doc["candidate"] == {"db": "results.db", "campaign": "nightly", "status": "done"}
    assert doc["max_regression"] == {
        "output_throughput": 0.03,
        "ttft_ms_p99": 0.1,
        "tpot_ms_p99": 0.05,
        "startup": 0.1,
    }
    with Store.open(results, read_only=True) as store:
        report = build_report(store, "nightly", confidence=each)
    for item in doc["variants"][0]["checks"]:
        if item["metric"].startswith("startup"):
            continue  # not a metric of the report's load points
        comp = report.get("slower", item["load"], item["metric"])
        assert comp is not None and comp.estimate is not None
        if comp.estimate.ratio_low is None:  # the p99s: not estimable from 80 requests a start
            assert (item["change_low"], item["result"]) == (None, "not estimable")
            continue
        assert comp.estimate.ratio_high is not None
        assert item["change_low"] == pytest.approx(comp.estimate.ratio_low - 1, abs=1e-6)
        assert item["change_high"] == pytest.approx(comp.estimate.ratio_high - 1, abs=1e-6)
        assert item["result"] == ("regression" if comp.call == "worse" else "ok")


def test_strict_fails_a_comparison_that_cannot_be_called(results: Path) -> None:
    """--strict: the not estimable p99s of ``same`` fail the check (its cold starts, one a
    side by the campaign's design, are listed and spared); without it they pass."""
    plain = servegate(results.parent, "--db", "results.db", "--variant", "same")
    assert plain.returncode == 0, plain.stdout
    strict = servegate(results.parent, "--db", "results.db", "--variant", "same", "--strict")
    assert strict.returncode == 1, strict.stdout
    assert "FAIL: 0 regression(s) established, 0 variant(s) failed, 4 not called (--strict)" in (
        strict.stdout
    )


def test_another_database_as_baseline(tmp_path: Path) -> None:
    """The campaign of the same name in --baseline-db; --baseline-variant picks its variant."""
    write(tmp_path / "main.db", {"base": BASE})
    write(tmp_path / "slow.db", {"base": scaled(0.92)})
    write(tmp_path / "ok.db", {"base": SAME}, name="pr-42")
    main = tmp_path / "main.db"
    before = main.read_bytes()
    slow = servegate(tmp_path, "--db", "slow.db", "--baseline-db", "main.db")
    assert slow.returncode == 1, slow.stderr
    assert slow.stdout.startswith(
        "servegate check FAIL: nightly (slow.db) against nightly/base (main.db)"
    )
    assert "base: output throughput regressed -8.0 %" in slow.stdout
    fine = servegate(
        tmp_path, "pr-42", "--db", "ok.db", "--baseline-db", "main.db",
        "--baseline-campaign", "nightly", "--baseline-variant", "base",
    )  # fmt: skip
    assert fine.returncode == 0, fine.stdout + fine.stderr
    assert "against nightly/base (main.db)" in fine.stdout
    assert main.read_bytes() == before  # opened read-only
    # a variant of another name needs --baseline-variant
    write(tmp_path / "renamed.db", {"fusion": SAME}, baseline="fusion")
    named = servegate(tmp_path, "--db", "renamed.db", "--baseline-db", "main.db")
    assert named.returncode == 2
    assert "no variant 'fusion' in campaign 'nightly' in main.db" in named.stderr
    paired = servegate(
        tmp_path, "--db", "renamed.db", "--baseline-db", "main.db", "--baseline-variant", "base"
    )
    assert paired.returncode == 0, paired.stderr
    assert paired.stdout.count("\nfusion ") == 6 + 4  # and the startup rows


def test_github_step_summary_is_appended(tmp_path: Path) -> None:
    """The markdown is appended to GITHUB_STEP_SUMMARY; so is why a check could not be made."""
    write(tmp_path / "r.db", {"base": BASE, "slower": scaled(0.9)})
    summary = tmp_path / "summary.md"
    summary.write_text("## earlier step\n", encoding="utf-8")
    env = {"GITHUB_STEP_SUMMARY": str(summary)}
    run = servegate(tmp_path, "--db", "r.db", env=env)
    assert run.returncode == 1
    text = summary.read_text(encoding="utf-8")
    assert text.startswith("## earlier step\n## servegate check: FAIL, regression\n")
    assert "- slower: output throughput regressed -10.0 %" in text
    bad = servegate(tmp_path, "--db", "r.db", "--variant", "nope", env=env)
    assert bad.returncode == 2
    after = summary.read_text(encoding="utf-8")
    assert after.startswith(text)
    assert after[len(text) :].startswith("## servegate check: error\n\nno variant 'nope'")


@pytest.fixture
def mismatched(tmp_path: Path) -> Path:
    """main.db, and candidates on another workload and on other loads."""
    write(tmp_path / "main.db", {"base": BASE})
    write(tmp_path / "long.db", {"base": BASE}, workload={**WORKLOAD, "input_len": 256})
    write(tmp_path / "loads.db", {"base": BASE}, loads=("c=64",))
    (tmp_path / "junk.db").write_bytes(b"not a database")
    return tmp_path


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--db", "none.db"], "no database at none.db; pass an existing one with --db"),
        (
            ["--db", "main.db", "--baseline-db", "gone.db"],
            "no database at gone.db; pass an existing one with --baseline-db",
        ),
        (["other", "--db", "main.db"], "no campaign 'other' in main.db; known campaigns: nightly."),
        (
            ["--db", "long.db", "--baseline-db", "main.db"],
            "'base' of campaign 'nightly' in long.db was measured with input 256, output 12, its "
            "baseline 'base' of campaign 'nightly' in main.db with input 128, output 12; a check "
            "compares runs of the same workload",
        ),
        (
            ["--db", "loads.db", "--baseline-db", "main.db"],
            "(loads c=64) and its baseline 'base' of campaign 'nightly' in main.db (loads c=4, "
            "c=16) have no load point in common",
        ),
        (["--db", "main.db", "--variant", "base"], "'base' is the baseline of the check itself"),
        (["--db", "main.db"], "nothing to check in campaign 'nightly' in main.db"),
        (
            ["--db", "main.db", "--max-regression", "throughput=3%"],
            "--max-regression: unknown metric 'throughput'; use one of output_throughput, "
            "ttft_p50, ttft_p99, tpot_p50, tpot_p99, e2el_p50, startup, startup.PHASE, capacity.",
        ),
        (
            ["--db", "main.db", "--max-regression", "ttft_p99=ten"],
            "--max-regression ttft_p99=ten: give a percentage from 0 to 100, e.g. ttft_p99=3%.",
        ),
        (["--db", "main.db", "--max-regression", "ttft_p99"], "write METRIC=PERCENT pairs"),
        (
            ["--db", "main.db", "--max-regression", "ttft_p99=5,ttft_ms_p99=6"],
            "--max-regression names ttft_p99 twice",
        ),
        (["--db", "junk.db"], "junk.db is not a SQLite database"),
    ],
)
def test_bad_input_is_one_sentence_and_exit_2(
    mismatched: Path, args: list[str], message: str
) -> None:
    """Each is exit 2 with one line on stderr, and one servegate.error/1 object under --json."""
    run = servegate(mismatched, *args)
    assert run.returncode == 2, run.stdout + run.stderr
    assert run.stdout == ""
    lines = run.stderr.splitlines()
    assert len(lines) == 1 and lines[0].startswith("Error: ") and lines[0].endswith("."), lines
    assert message in lines[0]
    as_json = servegate(mismatched, *args, "--json")
    assert as_json.returncode == 2
    doc = json.loads(as_json.stdout)
    assert doc["schema"] == "servegate.error/1" and doc["exit_code"] == 2
    assert message in doc["error"]
    assert not (mismatched / "none.db").exists() and not (mismatched / "gone.db").exists()


CAMPAIGN = """\
[campaign]
name = "gate"
baseline = "baseline"

[server]
engine = "sglang"
command = "{python} -m servegate sim --engine sglang --port {port} --profile fast --time-scale 0.2"
port = "auto"
timeout_s = 30
stop_grace_s = 5
release_timeout_s = 10

[bench]
warmup = 1
input_len = 32
output_len = 8
concurrency = [2]
requests = 8
repeats = 2
restarts = 2

[[variant]]
name = "baseline"

[[variant]]
name = "slow"
description = "three times the decode step"
args = "--itl-ms 24"

[[variant]]
name = "broken"
description = "every completion fails, so its benchmark cannot start"
args = "--error-rate 1"
"""


@pytest.mark.slow
def test_a_real_campaign_on_the_simulator(tmp_path: Path) -> None:
    """A real run: the slow variant is a throughput regression, broken fails with its reason."""
    (tmp_path / "gate.toml").write_text(textwrap.dedent(CAMPAIGN), encoding="utf-8")
    run = subprocess.run(
        [sys.executable, "-m", "servegate", "run", "gate.toml", "--db", "r.db"],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=180,
        check=False,
    )
    assert run.returncode == 0, run.stderr
    out = tmp_path / "check.md"
    check = servegate(
        tmp_path, "--db", "r.db", "--max-regression", "output_throughput=20%",
        "--markdown-file", str(out),
    )  # fmt: skip
    assert check.returncode == 1, check.stdout + check.stderr
    (row,) = [line for line in check.stdout.splitlines() if line.startswith("slow ")]
    assert row.endswith("REGRESSION")
    assert "broken: failed, FAILED: could not benchmark broken" in check.stdout
    markdown = out.read_text(encoding="utf-8")
    assert "| slow | c=2 | output throughput (tok/s) |" in markdown
    assert "| broken | – | FAILED | – | – | FAILED: could not benchmark broken" in markdown


def test_workload_references_and_failures_without_a_counterpart(tmp_path: Path) -> None:
    """In one campaign a variant on another workload is checked against its workload
    reference, as the report compares it; across campaigns a failed variant fails even
    with no counterpart in the baseline."""
    long = {**WORKLOAD, "input_len": 256}
    with Store.open(tmp_path / "w.db") as store:
        campaign = Campaign(store, "nightly", "base")
        for start, values in enumerate(BASE):
            aid = campaign.start("base")  # long: a benchmark-only variant of the baseline
            for offset, value in enumerate(values):
                repeat = start * 2 + offset
                campaign.point(aid, "base", "c=4", repeat, throughput=value)
                campaign.point(aid, "long", "c=4", repeat, throughput=value / 2, workload=long)
            campaign.stop(aid)
            aid = campaign.start("fusion-long")
            for offset, value in enumerate(values):
                campaign.point(
                    aid, "fusion-long", "c=4", start * 2 + offset, throughput=value * 0.45,
                    workload=long,
                )  # fmt: skip
            campaign.stop(aid)
        aid = campaign.start("orphan")
        for repeat in range(2):
            campaign.point(
                aid, "orphan", "c=4", repeat, throughput=50.0,
                workload={**WORKLOAD, "input_len": 512},
            )  # fmt: skip
        campaign.stop(aid)
        aid = campaign.start("crashed", status="crash", kind="oom", reason="CUDA out of memory")
        store.set_campaign_status(campaign.cid, CampaignStatus.DONE)
    run = servegate(tmp_path, "--db", "w.db", "--max-regression", "output_throughput=3%")
    assert run.returncode == 1, run.stdout + run.stderr
    assert "fusion-long: output throughput regressed -10.0 %" in run.stdout
    assert "vs long (more than the 3 % allowed)" in run.stdout
    assert "long: not checked, the baseline's server on another workload" in run.stdout
    assert "orphan: not checked, not compared: measured with input 512, output 12" in run.stdout
    assert "crashed: failed, did not start: CRASH: CUDA out of memory (oom)" in run.stdout
    named = servegate(tmp_path, "--db", "w.db", "--variant", "orphan")
    assert named.returncode == 2
    assert "variant 'orphan' cannot be checked: not compared: measured with input 512" in (
        named.stderr
    )
    # another database whose campaign has none of these variants but base
    write(tmp_path / "main.db", {"base": BASE})
    across = servegate(tmp_path, "--db", "w.db", "--baseline-db", "main.db", "--json")
    assert across.returncode == 1
    doc = json.loads(across.stdout)
    assert [(v["variant"], v["result"]) for v in doc["variants"]] == [
        ("base", "pass"),
        ("crashed", "fail"),
    ]
    assert {s["variant"] for s in doc["skipped"]} == {"long", "fusion-long", "orphan"}


def test_a_failed_baseline_in_another_database_is_exit_2_never_a_pass(tmp_path: Path) -> None:
    """k2 in good.db against bad.db, whose baseline crashed: exit 2 naming it, and the
    step summary says error (before: exit 0, "pass, no regression established")."""
    write(tmp_path / "good.db", {"base": BASE, "fast": SAME}, name="k2")
    with Store.open(tmp_path / "bad.db") as store:
        campaign = Campaign(store, "k2", "base")
        campaign.start("base", status="crash", kind="oom", reason="CUDA out of memory")
        store.add_variant(campaign.cid, "fast")
        aid = campaign.start("fast")
        for load in ("c=4", "c=16"):
            for repeat, value in enumerate(BASE[0]):
                campaign.point(aid, "fast", load, repeat, throughput=value)
        campaign.stop(aid)
        store.set_campaign_status(campaign.cid, CampaignStatus.DONE)
    summary = tmp_path / "summary.md"
    env = {"GITHUB_STEP_SUMMARY": str(summary)}
    run = servegate(tmp_path, "k2", "--db", "good.db", "--baseline-db", "bad.db", env=env)
    assert run.returncode == 2, run.stdout + run.stderr
    assert run.stderr.startswith(
        "Error: the baseline 'base' of campaign 'k2' in bad.db failed (did not start: CRASH"
    )
    assert "so 'base' cannot be checked" in run.stderr
    assert summary.read_text(encoding="utf-8").startswith("## servegate check: error\n")


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--confidence", "nan"], "Invalid value for '--confidence': 'nan' is not a finite number"),
        (["--seed", "-1"], "Invalid value for '--seed': -1 is not in the range x>=0"),
    ],
)
def test_numbers_that_are_not_numbers_are_exit_2(
    results: Path, args: list[str], message: str
) -> None:
    """nan passes every range check and -1 is no seed of numpy's: each is refused with
    exit 2 when given, by check and by report alike (before: exit 3 and a traceback)."""
    for command in ("check", "report"):
        run = subprocess.run(
            [sys.executable, "-m", "servegate", command, "--db", str(results), *args],
            capture_output=True, text=True, timeout=120, check=False,
        )  # fmt: skip
        assert run.returncode == 2, run.stderr
        assert message in run.stderr and "Traceback" not in run.stderr
