"""``bench --slo`` and ``--find-max`` against the real simulator (``servegate sim``).

The simulator's decode step is ``itl_ms x (1 + batch_slowdown x (running - 1))``, so a
closed loop at concurrency c has a TPOT of that step: with ``--itl-ms 20
--batch-slowdown 0.1``, 20 ms at c=1, 44 ms at c=13, 46 ms at c=14. A TPOT bound of 45 ms
puts the capacity at c=13. Attainment and goodput are recomputed here from the raw
samples, independently of ``servegate.bench.slo``.
"""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from tests.conftest import free_port, vllm_simulators

SIM = ("--startup", "0", "--itl-ms", "20", "--batch-slowdown", "0.1", "--ttft-ms", "20")
SHORT = ("--input-len", "8", "--output-len", "6")


@pytest.fixture
def sim() -> Iterator[Callable[..., str]]:
    """A factory: ``sim(*flags)`` -> the base URL of a running simulator; all are stopped."""
    yield from vllm_simulators()


def bench(*args: str) -> subprocess.CompletedProcess[str]:
    """The command line, output captured."""
    return subprocess.run(
        [sys.executable, "-m", "servegate", "bench", *args],
        capture_output=True,
        text=True,
        check=False,
        timeout=300,
    )


def _tpot_ms(sample: dict[str, Any]) -> float:
    chunks = sample["chunks_s"]
    return float((chunks[-1] - chunks[0]) * 1000.0 / (sample["usage_output_tokens"] - 1))


def test_slo_met_and_missed_with_attainment_and_goodput_from_the_samples(
    sim: Callable[..., str], tmp_path: Path
) -> None:
    """c=1 meets tpot_p99<=35ms (20 ms), c=11 misses it (40 ms); per point the JSON's met,
    attainment and goodput equal what the raw samples give, and so does the table."""
    url = sim(*SIM)
    out = tmp_path / "r.json"
    proc = bench("--url", url, "--concurrency", "1,11", "--requests", "22", *SHORT,
                 "--slo", "tpot_p99<=35ms,ttft_p99<=2s", "--json-file", str(out), "-q")  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    points = json.loads(out.read_text())["points"]
    assert [p["slo"]["met"] for p in points] == [True, False]
    for point in points:
        samples = point["samples"]
        tpots = np.array([_tpot_ms(s) for s in samples])
        ttfts = np.array([s["chunks_s"][0] * 1000.0 for s in samples])
        good = [
            s for s, a, b in zip(samples, tpots, ttfts, strict=True) if a <= 35.0 and b <= 2000.0
        ]
        slo = point["slo"]  # the JSON's times are rounded to the microsecond: rel=1e-3
        assert slo["targets"][0]["value_ms"] == pytest.approx(np.percentile(tpots, 99), rel=1e-3)
        assert slo["targets"][0]["attainment"] == pytest.approx(np.mean(tpots <= 35.0))
        assert slo["attainment"] == pytest.approx(len(good) / len(samples))
        duration = point["summary"]["duration_s"]
        assert slo["goodput"]["requests_per_s"] == pytest.approx(len(good) / duration)
        tokens = sum(s["usage_output_tokens"] for s in good)
        assert slo["goodput"]["output_tokens_per_s"] == pytest.approx(tokens / duration)
        assert point["settings"]["slo"] == "tpot_p99<=35ms,ttft_p99<=2000ms"
    assert "NOT met" in proc.stdout
    assert proc.stdout.splitlines()[-1].split()[-3:-1] == ["not", "met"]  # the sweep table


def test_fail_on_slo_turns_a_missed_point_into_exit_1(sim: Callable[..., str]) -> None:
    """A miss is data (exit 0) unless --fail-on-slo, then exit 1 naming the point."""
    url = sim(*SIM)
    args = ("--url", url, "--concurrency", "2", "--requests", "6", *SHORT,
            "--slo", "tpot_p99<=5ms", "-q")  # fmt: skip
    assert bench(*args).returncode == 0
    proc = bench(*args, "--fail-on-slo")
    assert proc.returncode == 1
    # the last line is the error; a busy machine may add the client's own late-loop warning
    errors = [line for line in proc.stderr.splitlines() if not line.startswith("warning: ")]
    assert errors == ["Error: c=2 missed --slo tpot_p99<=5ms (--fail-on-slo)."], proc.stderr


@pytest.mark.parametrize(
    ("args", "says"),
    [
        (["--slo", "ttft_p99<=500"], "--slo target 'ttft_p99<=500' must read"),
        (["--slo", "foo_p99<=5ms"], "--slo target 'foo_p99<=5ms' must read"),
        (["--slo", "ttft_p100<=5ms"], "the percentile must be above 0 and below 100"),
        (["--slo", "ttft_p99<=5ms,ttft_p99<=6ms"], "--slo names ttft_p99 twice"),
        (["--find-max", "concurrency"], "--find-max needs targets: add --slo"),
        (["--slo", "ttft_p99<=1s", "--max-rate", "9"], "--max-rate is the top of --find-max rate"),
        (["--slo", "ttft_mean<=1s", "--attainment", "1.5"], "--attainment must be a share"),
        (
            ["--slo", "ttft_p99<=1s", "--find-max", "rate", "--concurrency", "4"],
            "--find-max rate lifts the concurrency cap",
        ),
        (
            ["--slo", "ttft_p99<=1s", "--find-max", "rate", "--requests", "4"],
            "rate probes are bound by time",
        ),
        (
            ["--slo", "ttft_p99<=1s", "--find-max", "concurrency", "--precision", "5"],
            "--precision '5' must be a share",
        ),
    ],
)
def test_bad_slo_flags_are_one_sentence_and_exit_2(args: list[str], says: str) -> None:
    """Bad --slo syntax or SLO flags: one line naming the fix, exit 2, nothing sent (the
    URL is a closed port)."""
    proc = bench("--url", f"http://127.0.0.1:{free_port()}", *args)
    assert proc.returncode == 2
    assert proc.stderr.startswith("Error: ") and says in proc.stderr
    assert len(proc.stderr.splitlines()) == 1


def test_find_max_concurrency_finds_the_known_capacity(
    sim: Callable[..., str], tmp_path: Path
) -> None:
    """tpot_p99<=45ms on the model above: capacity c=13 (one user either way for the
    client's own timing), every probe listed with pass / fail, the bracket around it."""
    url = sim(*SIM)
    out = tmp_path / "cap.json"
    proc = bench("--url", url, "--find-max", "concurrency", "--slo", "tpot_p99<=45ms",
                 "--requests", "30", "--max-concurrency", "32", *SHORT,
                 "--json-file", str(out), "-q")  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    capacity = json.loads(out.read_text())["capacity"]
    assert 12 <= capacity["value"] <= 14
    assert capacity["low"] <= capacity["value"] <= capacity["high"]
    assert not capacity["censored"] and not capacity["below_lowest"]
    probes = capacity["probes"]
    assert len(probes) <= 15
    assert [p["load"] for p in probes][:5] == [1, 2, 4, 8, 16]
    assert all(p["met"] == (p["load"] <= capacity["bracket"]["passes"]) for p in probes)
    assert capacity["bracket"]["fails"] - capacity["bracket"]["passes"] == 1
    assert "capacity (concurrency) at tpot_p99<=45ms: c=" in proc.stdout


def test_the_lowest_load_failing_is_below_lowest_and_stopped_early(
    sim: Callable[..., str], tmp_path: Path
) -> None:
    """A bound c=1 cannot meet: capacity null, '< c=1', exit 0 (data); the probe stopped at
    its certain failure (2 of 30 requests beyond a p99 bound) and reports met only;
    --fail-on-slo makes it exit 1."""
    url = sim(*SIM)
    out = tmp_path / "low.json"
    args = ("--url", url, "--find-max", "concurrency", "--slo", "tpot_p99<=5ms",
            "--requests", "30", *SHORT, "-q")  # fmt: skip
    proc = bench(*args, "--json-file", str(out))
    assert proc.returncode == 0, proc.stderr
    capacity = json.loads(out.read_text())["capacity"]
    assert (capacity["value"], capacity["below_lowest"]) == (None, True)
    assert capacity["words"] == "< c=1 (the lowest load probed failed)"
    (probe,) = capacity["probes"]
    assert probe["stopped_early"] and probe["requests"] < 30
    assert probe["slo"]["attainment"] is None and probe["slo"]["goodput"]["requests_per_s"] is None
    assert bench(*args, "--fail-on-slo").returncode == 1


def test_the_top_passing_is_censored(sim: Callable[..., str], tmp_path: Path) -> None:
    """Every load up to --max-concurrency meets the SLO: '>= c=4', censored."""
    url = sim(*SIM)
    out = tmp_path / "top.json"
    proc = bench("--url", url, "--find-max", "concurrency", "--slo", "tpot_p99<=1s",
                 "--requests", "8", "--max-concurrency", "4", *SHORT,
                 "--json-file", str(out), "-q")  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    capacity = json.loads(out.read_text())["capacity"]
    assert (capacity["value"], capacity["censored"]) == (4, True)
    assert [p["load"] for p in capacity["probes"]] == [1, 2, 4]
    assert capacity["words"].startswith(">= c=4")


def test_find_max_rate_probes_by_time_up_to_the_top(
    sim: Callable[..., str], tmp_path: Path
) -> None:
    """Rate probes run for a 1.5 s lead-in plus --duration each (rate = planned arrivals
    per second), doubling from --rate to --max-rate, the lead-in's requests uncounted; a
    loose SLO passes them all: '>= rate=16/s'."""
    url = sim(*SIM)
    out = tmp_path / "rate.json"
    proc = bench("--url", url, "--find-max", "rate", "--slo", "e2el_p99<=5s", "--rate", "4",
                 "--max-rate", "16", "--duration", "2", *SHORT,
                 "--json-file", str(out), "-q")  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    document = json.loads(out.read_text())
    capacity = document["capacity"]
    assert [p["load"] for p in capacity["probes"]] == [4, 8, 16]
    assert capacity["censored"] and capacity["value"] == 16
    assert [p["settings"]["duration_s"] for p in document["points"]] == [3.5] * 3
    assert len({p["settings"]["seed"] for p in document["points"]}) == 3  # salted per probe
    for point in document["points"]:  # the lead-in's requests are not among those kept
        assert min(s["scheduled_s"] for s in point["samples"]) >= 1.5


def test_rate_probes_beyond_the_server_are_saturated(
    sim: Callable[..., str], tmp_path: Path
) -> None:
    """One request at a time, about 0.13 s each, serves about 7.7 requests/s: probes at
    16 and 32/s fall behind their offered rate and their queue grows, so the search reports
    saturation from 16/s, or from 8/s when that probe drew the 30 requests it takes to be
    judged (a loose SLO still passes them all). 2 and 4/s are not saturated."""
    url = sim(*SIM, "--max-running", "1")
    out = tmp_path / "sat.json"
    proc = bench("--url", url, "--find-max", "rate", "--slo", "e2el_p99<=60s", "--rate", "2",
                 "--max-rate", "32", "--duration", "3", *SHORT,
                 "--json-file", str(out), "-q")  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    capacity = json.loads(out.read_text())["capacity"]
    by_load = {p["load"]: p for p in capacity["probes"]}
    assert [by_load[x]["saturated"] for x in (2, 4, 16, 32)] == [False, False, True, True]
    assert by_load[32]["achieved_rate"] < 0.9 * by_load[32]["offered_rate"]
    assert capacity["saturated"]["load"] in (8, 16)
    assert f"saturated from {capacity['saturated']['load']:g}:" in proc.stdout
    # too few requests at 2 and 4/s to call a cliff there (beyond saturation the kept
    # requests share the server with the lead-in's backlog, and their throughput falls)
    assert capacity["cliff"] is None or capacity["cliff"]["load"] >= 16


def test_find_max_by_attainment_decides_by_the_share_of_requests(
    sim: Callable[..., str], tmp_path: Path
) -> None:
    """--attainment 0.9: a probe passes when 90 % of its requests meet tpot<=45ms each; on
    the model above every request at c<=13 does and none at c>=14, so the capacity is
    c=13 again, and the criterion is said in the JSON."""
    url = sim(*SIM)
    out = tmp_path / "att.json"
    proc = bench("--url", url, "--find-max", "concurrency", "--slo", "tpot_p99<=45ms",
                 "--attainment", "0.9", "--requests", "30", "--max-concurrency", "32", *SHORT,
                 "--json-file", str(out), "-q")  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    capacity = json.loads(out.read_text())["capacity"]
    assert capacity["criterion"] == "attainment>=0.9"
    assert 12 <= capacity["value"] <= 14
    for probe in capacity["probes"]:
        slo = probe["slo"]
        if not slo["stopped_early"]:
            assert slo["met"] == (slo["attainment"] >= 0.9)
