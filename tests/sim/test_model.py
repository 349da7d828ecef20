"""The performance model: unit checks with an injected clock, and its shape end to end."""

from __future__ import annotations

import asyncio
import json
import time
from typing import Any

import aiohttp
import pytest
from tests.sim.helpers import Sim

from servegate.sim.config import resolve
from servegate.sim.model import PerfModel, Scheduler


def model(**flags: Any) -> PerfModel:
    """A PerfModel from flags."""
    return PerfModel(resolve(profile=None, flags=flags))


class FakeJob:
    """A request that records when it was admitted."""

    def __init__(self, prompt_tokens: int) -> None:
        self.prompt_tokens = prompt_tokens
        self.cancelled = False
        self.times: tuple[float, float] | None = None

    def start(self, admitted_at: float, first_token_at: float) -> None:
        self.times = (admitted_at, first_token_at)


def test_step_time_grows_with_running_requests() -> None:
    """ITL = itl_ms * (1 + batch_slowdown * (running - 1))."""
    m = model(itl_ms=10.0, batch_slowdown=0.1)
    assert m.step_s(1) == pytest.approx(0.010)
    assert m.step_s(11) == pytest.approx(0.020)


def test_spec_decode_steps_average_the_acceptance_length() -> None:
    """With L = 2.3, steps emit 2 or 3 tokens and average exactly 2.3."""
    m = model(spec_accept_length=2.3)
    steps = [m.step(1000) for _ in range(1000)]
    assert {s.tokens for s in steps} == {2, 3}
    assert sum(s.tokens for s in steps) / 1000 == pytest.approx(2.3, abs=0.002)
    assert all(s.drafted == 2 and s.accepted == s.tokens - 1 for s in steps)
    assert m.step(1).tokens == 1  # never past the end of the request


def test_output_length_honours_ignore_eos_and_the_seed() -> None:
    """ignore_eos gives max_tokens exactly; otherwise a seeded length <= max_tokens."""
    a, b, c = model(seed=1), model(seed=1), model(seed=2)
    assert all(a.output_len(50, True) == 50 for _ in range(20))
    la = [a.output_len(50, False) for _ in range(50)]
    assert la == [b.output_len(50, False) for _ in range(50)]
    assert la != [c.output_len(50, False) for _ in range(50)]
    assert all(1 <= n <= 50 for n in la)


def test_jitter_makes_seeds_differ() -> None:
    """With jitter, two seeds give different step times; without, none vary."""
    assert model(jitter=0.1, seed=1).step_s(1) != model(jitter=0.1, seed=2).step_s(1)
    assert model(seed=1).step_s(1) == model(seed=2).step_s(1)


def test_scheduler_queues_beyond_max_running_and_shares_prefill() -> None:
    """Requests beyond max_running wait; prompts are prefilled one after another."""
    now = [0.0]
    sched = Scheduler(model(max_running=2, prefill_tok_s=1000.0, ttft_ms=10.0), lambda: now[0])
    jobs = [FakeJob(100) for _ in range(3)]
    for job in jobs:
        sched.submit(job)
    assert jobs[0].times == pytest.approx((0.0, 0.11))
    assert jobs[1].times == pytest.approx((0.0, 0.21))  # waited for the first prefill
    assert jobs[2].times is None and sched.waiting_count() == 1
    now[0] = 1.0
    sched.finish()
    assert jobs[2].times == pytest.approx((1.0, 1.11))


async def _load(
    url: str, concurrency: int, requests: int, body: dict[str, Any]
) -> dict[str, float]:
    ttfts: list[float] = []
    tokens = 0
    queue = list(range(requests))

    async def worker(session: aiohttp.ClientSession) -> None:
        nonlocal tokens
        while queue:
            queue.pop()
            sent = time.perf_counter()
            first = None
            async with session.post(url, json=body) as resp:
                async for line in resp.content:
                    if first is None and line.startswith(b"data: {"):
                        first = time.perf_counter()
                    if b'"usage":{' in line:
                        tokens += json.loads(line[6:])["usage"]["completion_tokens"]
            assert first is not None
            ttfts.append(first - sent)

    start = time.perf_counter()
    connector = aiohttp.TCPConnector(limit=0)
    async with aiohttp.ClientSession(connector=connector) as session:
        await asyncio.gather(*(worker(session) for _ in range(concurrency)))
    elapsed = time.perf_counter() - start
    ttfts.sort()
    return {"tok_s": tokens / elapsed, "ttft_p50": ttfts[len(ttfts) // 2]}


@pytest.mark.slow
def test_throughput_rises_with_concurrency_then_flattens(port: int) -> None:
    """Output tok/s: 1 < 8 requests in flight; at 16 (max_running 8) it stays flat."""
    body = {
        "prompt": "x",
        "max_tokens": 40,
        "ignore_eos": True,
        "stream": True,
        "stream_options": {"include_usage": True},
    }
    with Sim(
        port,
        "--engine",
        "vllm",
        "--startup",
        "0.2",
        "--ttft-ms",
        "5",
        "--itl-ms",
        "5",
        "--batch-slowdown",
        "0.05",
        "--max-running",
        "8",
    ) as sim:
        sim.wait_line("startup complete")
        url = sim.url + "/v1/completions"
        one = asyncio.run(_load(url, 1, 4, body))
        eight = asyncio.run(_load(url, 8, 24, body))
        sixteen = asyncio.run(_load(url, 16, 48, body))
    assert eight["tok_s"] > 3 * one["tok_s"]
    assert 0.7 * eight["tok_s"] < sixteen["tok_s"] < 1.3 * eight["tok_s"]
    assert sixteen["ttft_p50"] > eight["ttft_p50"]  # the extra eight wait for a slot


def test_ttft_grows_with_prompt_length(port: int) -> None:
    """With --prefill-tok-s 20000, 4000 more prompt tokens add about 0.2 s of TTFT."""
    with Sim(
        port,
        "--engine",
        "sglang",
        "--startup",
        "0.2",
        "--ttft-ms",
        "10",
        "--prefill-tok-s",
        "20000",
    ) as sim:
        sim.wait_line("ready to roll")
        url = sim.url + "/v1/completions"
        short = asyncio.run(
            _load(url, 1, 3, {"prompt": "x " * 10, "max_tokens": 2, "stream": True})
        )
        long = asyncio.run(
            _load(url, 1, 3, {"prompt": "x " * 4010, "max_tokens": 2, "stream": True})
        )
    assert 0.15 < long["ttft_p50"] - short["ttft_p50"] < 0.4
