"""``servegate compare`` (issue 24, item 7) on bench results from the real simulator, and
``bench --percentiles``.

Each side is one or more ``bench --json-file`` results; their settings are compared
before any number, and unlike runs are refused unless forced.
"""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from tests.conftest import vllm_simulators

FAST = ("--startup", "0", "--ttft-ms", "20", "--itl-ms", "5")
SLOW = ("--startup", "0", "--ttft-ms", "60", "--itl-ms", "15")
SHORT = ("--concurrency", "4", "--requests", "80", "--input-len", "8", "--output-len", "8")


@pytest.fixture
def sim() -> Iterator[Callable[..., str]]:
    """A factory: ``sim(*flags)`` -> the base URL of a running simulator; all are stopped."""
    yield from vllm_simulators()


def servegate(*args: str) -> subprocess.CompletedProcess[str]:
    """The command line, output captured."""
    return subprocess.run(
        [sys.executable, "-m", "servegate", *args],
        capture_output=True,
        text=True,
        check=False,
        timeout=300,
    )


def bench(url: str, out: Path, *extra: str) -> Path:
    done = servegate("bench", "--url", url, *SHORT, "-q", "--json-file", str(out), *extra)
    assert done.returncode == 0, done.stderr
    return out


def calls(doc: dict[str, object]) -> dict[str, str]:
    rows = doc["rows"]
    assert isinstance(rows, list)
    return {row["metric"]: row["call"] for row in rows}


def test_a_slower_server_is_called_worse(sim: Callable[..., str], tmp_path: Path) -> None:
    """A on a fast simulator, B on one three times slower: TTFT and E2EL p50 are called
    worse, with the ratio near 3; the table says so too."""
    a = bench(sim(*FAST), tmp_path / "a.json")
    b = bench(sim(*SLOW), tmp_path / "b.json")
    done = servegate("compare", str(a), str(b), "--json")
    assert done.returncode == 0, done.stderr
    doc = json.loads(done.stdout)
    assert doc["schema"] == "servegate.compare/1"
    assert doc["differences"] == []
    found = calls(doc)
    assert found["ttft_ms_p50"] == "worse"
    assert found["e2el_ms_p50"] == "worse"
    ttft = next(r for r in doc["rows"] if r["metric"] == "ttft_ms_p50")
    assert 2.0 < ttft["ratio"] < 4.0
    assert ttft["ratio_low"] > 1.0
    table = servegate("compare", str(a), str(b))
    assert table.returncode == 0
    assert any(
        line.startswith("c=4") and "ttft_ms_p50" in line and line.endswith("worse")
        for line in table.stdout.splitlines()
    )


def test_the_same_server_twice_is_not_called(sim: Callable[..., str], tmp_path: Path) -> None:
    """Four runs of one simulator, two a side (each file a start): no metric is called
    better or worse.

    With --min-effect 5 %: on a 2-core machine shared with other suites, one run's
    latencies can really be a few percent slower than the next (the machine, not the
    server, changed), and the default 1 % would rightly call that; the slower simulator
    of the test above differs by 200 %. The tails (p99) are held to 20 %: one slow
    moment of the machine in one run moves them more.
    """
    url = sim(*FAST)
    runs = [bench(url, tmp_path / f"r{i}.json") for i in range(4)]
    side_a = f"{runs[0]},{runs[2]}"
    side_b = f"{runs[1]},{runs[3]}"
    done = servegate("compare", side_a, side_b, "--json", "--min-effect", "5%")
    assert done.returncode == 0, done.stderr
    doc = json.loads(done.stdout)
    assert doc["a"] == [str(runs[0]), str(runs[2])]
    assert doc["min_effect"] == pytest.approx(0.05)
    found = calls(doc)
    # a tail (p99) of one run can really be slower by more than 5 % on a busy machine (CI
    # once called itl_ms_p99 worse so): the tails are held to a 20 % effect below
    central = {m: c for m, c in found.items() if not m.endswith(("_p99", "_p999"))}
    assert not {m: c for m, c in central.items() if c in ("better", "worse")}
    throughput = next(r for r in doc["rows"] if r["metric"] == "output_throughput")
    assert throughput["files_a"] == 2 and throughput["ratio_low"] is not None
    wide = servegate("compare", side_a, side_b, "--json", "--min-effect", "20%")
    assert wide.returncode == 0, wide.stderr
    found = calls(json.loads(wide.stdout))
    assert not {m: c for m, c in found.items() if c in ("better", "worse")}


def test_unlike_runs_are_refused_unless_forced(sim: Callable[..., str], tmp_path: Path) -> None:
    """B asked for 16 output tokens, A for 8: one sentence naming output_len and the token
    totals, exit 2; --force compares and warns."""
    url = sim(*FAST)
    a = bench(url, tmp_path / "a.json")
    b = bench(url, tmp_path / "b.json", "--output-len", "16")
    done = servegate("compare", str(a), str(b))
    assert done.returncode == 2
    assert done.stdout == ""
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1
    assert "output_len: A 8, B 16" in lines[0]
    assert "output tokens per request: A 8.0, B 16.0" in lines[0]
    assert "--force" in lines[0]
    forced = servegate("compare", str(a), str(b), "--force", "--markdown")
    assert forced.returncode == 0, forced.stderr
    assert "- differs (--force): output_len: A 8, B 16" in forced.stdout
    assert "| c=4 | e2el_ms_p50 |" in forced.stdout


def test_bad_files_are_one_sentence(tmp_path: Path) -> None:
    """A missing file, one that is not JSON, another tool's JSON and a result without
    points: exit 2 with one sentence naming the file each time."""
    (tmp_path / "text.json").write_text("not json")
    (tmp_path / "other.json").write_text(json.dumps({"schema": "servegate.report/1"}))
    (tmp_path / "empty.json").write_text(json.dumps({"schema": "servegate.bench/1", "points": []}))
    for name, words in (
        ("missing.json", "no such file"),
        ("text.json", "cannot be read (not JSON)"),
        ("other.json", "not a bench result"),
        ("empty.json", "holds no measured point"),
    ):
        path = tmp_path / name
        done = servegate("compare", str(path), str(path))
        assert done.returncode == 2, name
        lines = done.stderr.strip().splitlines()
        assert len(lines) == 1, done.stderr
        assert str(path) in lines[0] and words in lines[0], lines[0]


def test_percentiles_add_keys_and_keep_p50_p90_p99(sim: Callable[..., str], tmp_path: Path) -> None:
    """bench --percentiles 95,99.9 adds ttft_ms_p95 and ttft_ms_p99.9 (and their
    columns) beside p50, p90, p99; compare --percentiles compares them."""
    out = tmp_path / "p.json"
    url = sim(*FAST)
    done = servegate("bench", "--url", url, *SHORT, "--json-file", str(out),
                     "--percentiles", "95,99.9")  # fmt: skip
    assert done.returncode == 0, done.stderr
    summary = json.loads(out.read_text())["points"][0]["summary"]
    for metric in ("ttft", "tpot", "itl", "e2el"):
        for p in ("p50", "p90", "p95", "p99", "p99.9"):
            assert f"{metric}_ms_{p}" in summary
    assert summary["ttft_ms_p50"] <= summary["ttft_ms_p95"] <= summary["ttft_ms_p99.9"]
    head = next(line for line in done.stdout.splitlines() if "(ms)" in line)
    assert head.split() == ["(ms)", "mean", "p50", "p90", "p95", "p99", "p99.9"]
    compared = servegate("compare", str(out), str(out), "--json", "--percentiles", "95")
    assert compared.returncode == 0, compared.stderr
    assert "ttft_ms_p95" in calls(json.loads(compared.stdout))


def test_bad_percentiles_are_one_sentence() -> None:
    """--percentiles 100 or a word: exit 2 naming the flag."""
    for text in ("100", "p99"):
        done = servegate("bench", "--url", "http://127.0.0.1:9", "--percentiles", text)
        assert done.returncode == 2
        assert "--percentiles" in done.stderr
        assert len(done.stderr.strip().splitlines()) == 1
