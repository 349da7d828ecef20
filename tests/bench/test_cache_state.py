"""Cache state you know: each point's designed and measured prefix-cache hit rates, and
the cache-contaminated flag, against the simulator's vLLM counters and SGLang's
per-request cached_tokens."""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from tests.sim.helpers import Sim, wait_http

FAST = ("--startup", "0.2", "--ttft-ms", "1", "--itl-ms", "1")


@pytest.fixture
def vllm(port: int) -> Iterator[Sim]:
    """A ready simulated vLLM (prefix cache on, 16-token blocks)."""
    with Sim(port, "--engine", "vllm", *FAST) as sim:
        wait_http(sim.url + "/health", timeout=30)
        yield sim


def _bench(url: str, *args: str) -> list[dict[str, Any]]:
    """``servegate bench ... --json`` as a process; its points."""
    done = subprocess.run(
        [sys.executable, "-m", "servegate", "bench", "--url", url, "--output-len", "2",
         "--input-len", "64", "--json", "--quiet", *args],
        capture_output=True, text=True, timeout=300, check=False,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    return list(json.loads(done.stdout)["points"])


def test_a_fixed_seed_rerun_without_isolation_is_flagged(vllm: Sim) -> None:
    """--cache share: the second point resends the first one's prompts (same seed), the
    server hits 75 % of them (48 of 64 tokens: whole blocks, the last token always
    computed) where the design says 0, and the point is flagged cache-contaminated in the
    JSON and its warnings."""
    first, second = _bench(vllm.url, "--concurrency", "2,2", "--requests", "8", "--cache", "share")
    assert first["cache"]["contaminated"] is False
    assert first["cache"]["measured_hit_rate"] == pytest.approx(0.0, abs=0.01)
    assert second["cache"]["design_hit_rate"] == 0.0
    assert second["cache"]["measured_hit_rate"] == pytest.approx(48 / 64, abs=0.01)
    assert second["cache"]["contaminated"] is True
    assert any(w.startswith("cache-contaminated") for w in second["warnings"])


def test_with_isolation_the_same_rerun_is_not_flagged(vllm: Sim) -> None:
    """--cache isolate (the default): each point's prompts are salted, so the second point
    hits nothing; both measured rates equal the design (0) within 1 point."""
    points = _bench(vllm.url, "--concurrency", "2,2", "--requests", "8")
    for point in points:
        cache = point["cache"]
        assert cache["mode"] == "isolate" and cache["contaminated"] is False
        assert cache["measured_by"] == "vllm:prefix_cache_hits/queries"
        assert abs(cache["measured_hit_rate"] - cache["design_hit_rate"]) <= 0.01


@pytest.mark.parametrize("engine", ["vllm", "sglang"])
def test_a_design_that_reuses_prompts_is_measured_within_one_point(
    engine: str, port: int, tmp_path: Path
) -> None:
    """Two prompts cycled over 8 requests, one at a time: 6 repeats, each hitting its
    whole blocks (vLLM, counters) or every token but the last (SGLang, cached_tokens); the
    measured rate equals the design within 1 point, and nothing is flagged."""
    rows = [{"prompt": " ".join(f"w{i}x{j}" for j in range(70))} for i in range(2)]
    data = tmp_path / "two.jsonl"
    data.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    with Sim(port, "--engine", engine, *FAST) as sim:
        wait_http(sim.url + "/health", timeout=30)
        (point,) = _bench(sim.url, "--concurrency", "1", "--requests", "8", "--dataset", str(data))
    cache = point["cache"]
    assert cache["design_hit_rate"] > 0.6
    assert abs(cache["measured_hit_rate"] - cache["design_hit_rate"]) <= 0.01
    assert (cache["contaminated"], cache["evicted"]) == (False, False)
    if engine == "sglang":
        assert cache["measured_by"] == "usage.prompt_tokens_details.cached_tokens"
