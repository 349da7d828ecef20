"""The simulator's KV cache: prefix hits in vLLM's and SGLang's counters, LRU eviction
over the capacity, hits that skip prefill, and preemption when blocks run out."""

from __future__ import annotations

import asyncio
import json
from typing import Any

import aiohttp
import pytest
from prometheus_client.parser import text_string_to_metric_families
from tests.sim.helpers import Sim, get
from tests.sim.test_model import model
from tests.sim.test_serving import FAST, READY, post

from servegate.sim.cache import KvCache, Lookup
from servegate.sim.model import Scheduler


def _counters(url: str) -> dict[str, float]:
    _status, text = get(url + "/metrics")
    out = {}
    for family in text_string_to_metric_families(text.decode()):
        for sample in family.samples:
            if not sample.labels.get("le") and sample.name not in out:
                out[sample.name] = sample.value
    return out


def _words(start: int, count: int) -> str:
    return " ".join(f"w{start + i}" for i in range(count))


def test_vllm_counts_queries_and_hits_in_whole_blocks(port: int) -> None:
    """A 64-token prompt sent twice: 128 tokens queried, 48 hit (3 whole 16-token blocks,
    since the last token is always computed); a prompt sharing 40 tokens hits 32."""
    with Sim(port, "--engine", "vllm", *FAST) as sim:
        sim.wait_line(READY["vllm"])
        prompt = _words(0, 64)
        for _ in range(2):
            assert post(sim.url + "/v1/completions", {"prompt": prompt, "max_tokens": 1})[0] == 200
        counters = _counters(sim.url)
        assert counters["vllm:prefix_cache_queries_total"] == 128
        assert counters["vllm:prefix_cache_hits_total"] == 48
        other = _words(0, 40) + " " + _words(1000, 24)
        assert post(sim.url + "/v1/completions", {"prompt": other, "max_tokens": 1})[0] == 200
        assert _counters(sim.url)["vllm:prefix_cache_hits_total"] == 48 + 32


def test_sglang_reports_cached_tokens_per_request_and_the_hit_rate_gauge(port: int) -> None:
    """SGLang's radix cache matches per token: the second send of a 50-token prompt has 49
    cached tokens in usage.prompt_tokens_details, and cache_hit_rate is 49/50."""
    with Sim(port, "--engine", "sglang", *FAST) as sim:
        sim.wait_line(READY["sglang"])
        prompt = _words(0, 50)
        cached = []
        for _ in range(2):
            status, raw = post(sim.url + "/v1/completions", {"prompt": prompt, "max_tokens": 1})
            assert status == 200
            cached.append(json.loads(raw)["usage"]["prompt_tokens_details"]["cached_tokens"])
        assert cached == [0, 49]
        assert _counters(sim.url)["sglang:cache_hit_rate"] == pytest.approx(49 / 50)


def test_no_prefix_cache_means_no_hits(port: int) -> None:
    """--no-prefix-cache: the same prompt twice is queried twice and never hit."""
    with Sim(port, "--engine", "vllm", *FAST, "--no-prefix-cache") as sim:
        sim.wait_line(READY["vllm"])
        for _ in range(2):
            post(sim.url + "/v1/completions", {"prompt": _words(0, 64), "max_tokens": 1})
        counters = _counters(sim.url)
        assert (
            counters["vllm:prefix_cache_queries_total"],
            counters["vllm:prefix_cache_hits_total"],
        ) == (128, 0)


def test_the_least_recently_used_blocks_are_evicted_first() -> None:
    """With room for 10 blocks, a third prompt evicts the second one's blocks, not the first
    one's (touched since), tail blocks first: the second keeps its first block."""
    kv = KvCache(capacity_blocks=10, block_size=4)
    prompts = [[p * 100 + i for i in range(17)] for p in range(3)]  # 4 full blocks + 1 token

    def run(ids: list[int]) -> int:
        look = kv.lookup(ids)
        blocks = kv.admit(look, len(ids))
        kv.release(look, blocks)
        return look.cached_tokens

    assert [run(prompts[0]), run(prompts[1]), run(prompts[0])] == [0, 0, 16]
    run(prompts[2])  # 5 blocks held beside 8 cached: 3 of prompt 1's go
    assert kv.lookup(prompts[0]).cached_tokens == 16
    assert kv.lookup(prompts[1]).cached_tokens == 4


class _Job:
    """A request with token ids, as the scheduler's KV cache sees it."""

    def __init__(self, ids: list[int]) -> None:
        self.ids = ids
        self.prompt_tokens = len(ids)
        self.emitted = 0
        self.lookup: Lookup | None = None
        self.cached_tokens = 0
        self.blocks = 0
        self.cancelled = False
        self.times: tuple[float, float] | None = None
        self.suspended = 0

    def start(self, admitted_at: float, first_token_at: float) -> None:
        self.times = (admitted_at, first_token_at)

    def suspend(self) -> None:
        self.suspended += 1


def test_a_prefix_hit_skips_its_prefill() -> None:
    """At 1000 tokens/s, a 1000-token prompt takes 1 s of prefill cold and 0.008 s when all
    but its last block (992 tokens of 16) is cached."""
    now = [0.0]
    kv = KvCache(capacity_blocks=1000, block_size=16)
    sched = Scheduler(model(prefill_tok_s=1000.0, ttft_ms=0.0), lambda: now[0], kv)
    first, second = _Job(list(range(1000))), _Job(list(range(1000)))
    sched.submit(first)
    assert first.times == pytest.approx((0.0, 1.0))
    sched.finish(first)
    now[0] = 5.0
    sched.submit(second)
    assert second.cached_tokens == 992
    assert second.times == pytest.approx((5.0, 5.008))


def test_a_request_that_needs_a_block_preempts_the_newest() -> None:
    """Two 16-token prompts fill 2 of 3 blocks; the first grows into the third and then
    needs a fourth: the newest (the second) is preempted, waits first in line, and runs
    again once the first ends."""
    now = [0.0]
    kv = KvCache(capacity_blocks=3, block_size=16, enabled=False)
    sched = Scheduler(model(), lambda: now[0], kv)
    a, b = _Job(list(range(16))), _Job(list(range(100, 116)))
    sched.submit(a)
    sched.submit(b)
    assert sched.running == 2 and kv.used == 2
    a.emitted = 16
    sched.grow(a, 32)  # 2 blocks: fits beside b
    assert (kv.used, kv.preemptions) == (3, 0)
    a.emitted = 17
    sched.grow(a, 33)  # 3 blocks: b goes
    assert (kv.preemptions, b.suspended, sched.running) == (1, 1, 1)
    assert list(sched.waiting) == [b]
    now[0] = 2.0
    sched.finish(a)
    assert sched.running == 1 and b.times is not None and b.times[0] == 2.0


async def _many(url: str, n: int, body: dict[str, Any]) -> list[dict[str, Any]]:
    async with aiohttp.ClientSession() as session:

        async def one(i: int) -> dict[str, Any]:
            payload = {**body, "prompt": _words(i * 100, 20)}
            async with session.post(url, json=payload) as resp:
                return dict(await resp.json())

        return list(await asyncio.gather(*(one(i) for i in range(n))))


def test_preempted_requests_finish_whole_and_are_counted(port: int) -> None:
    """With 8 blocks of 16 tokens and 6 requests of 20 + 40 tokens, requests are preempted
    (vllm:num_preemptions_total > 0) and each still gets all of its 40 tokens."""
    with Sim(port, "--engine", "vllm", *FAST, "--kv-blocks", "8") as sim:
        sim.wait_line(READY["vllm"])
        body = {"max_tokens": 40, "ignore_eos": True}
        results = asyncio.run(_many(sim.url + "/v1/completions", 6, body))
        assert [r["usage"]["completion_tokens"] for r in results] == [40] * 6
        assert _counters(sim.url)["vllm:num_preemptions_total"] > 0
