"""The performance model: unit checks with an injected clock, and its shape end to end."""

from __future__ import annotations

import asyncio
import json
import math
import statistics
import time
from pathlib import Path
from typing import Any

import aiohttp
import pytest
from tests.sim.helpers import Sim

from servegate.engines import get_profile
from servegate.errors import UsageError
from servegate.sim.config import resolve
from servegate.sim.model import InstanceSpeed, PerfModel, Scheduler, draw_speed, next_start


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
    sched.finish(jobs[0])
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
    """With --prefill-tok-s 20000, 4000 more prompt tokens add about 0.2 s of TTFT (the
    prompts repeat, so the prefix cache is off)."""
    with Sim(
        port,
        "--no-prefix-cache",
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


# --- per-start speed: regimes and a lognormal instance factor ---------------------------


@pytest.mark.parametrize(
    ("flags", "needle"),
    [
        ({"regimes": "1.0:0.7,0.85"}, "write SPEED:PROBABILITY pairs"),
        ({"regimes": "fast:1"}, "write SPEED:PROBABILITY pairs"),
        ({"regimes": "1.0:0.7,0.85:0.2"}, "the probabilities add up to 0.9, not 1"),
        ({"regimes": "0:1"}, "must be > 0"),
        ({"instance_sd": -0.1}, "--instance-sd -0.1: must be >= 0"),
        ({"instance_sd": 2.0}, "--instance-sd must be between 0 and 1"),
    ],
)
def test_bad_regimes_and_instance_sd_name_the_fix(flags: dict[str, Any], needle: str) -> None:
    """A malformed --regimes or --instance-sd is one UsageError sentence naming the flag."""
    with pytest.raises(UsageError, match=needle):
        resolve(profile=None, flags=flags)


def test_start_counter_numbers_each_start_once(tmp_path: Path) -> None:
    """The counter file hands out 0, 1, 2, ... and keeps the next number."""
    counter = tmp_path / "starts"
    assert [next_start(counter) for _ in range(3)] == [0, 1, 2]
    assert counter.read_text().strip() == "3"


def test_counted_starts_draw_reproducible_factors_that_differ(tmp_path: Path) -> None:
    """Same seed and start numbers: same factors; each start its own; another seed others."""

    def draws(name: str, seed: int) -> list[float]:
        config = resolve(
            profile=None,
            flags={"instance_sd": 0.05, "seed": seed, "start_counter": tmp_path / name},
        )
        return [draw_speed(config).factor for _ in range(5)]

    first, again, other = draws("a", 1), draws("b", 1), draws("c", 2)
    assert first == again
    assert len(set(first)) == 5
    assert first != other


def test_regimes_are_drawn_with_their_probabilities(tmp_path: Path) -> None:
    """2000 counted starts of 1.0:0.7,0.85:0.3: about 30 % run at 0.85, the rest at 1.0."""
    config = resolve(
        profile=None,
        flags={"regimes": "1.0:0.7,0.85:0.3", "start_counter": tmp_path / "n"},
    )
    speeds = [draw_speed(config) for _ in range(2000)]
    assert {s.factor for s in speeds} == {1.0, 0.85}
    assert all(s.regime == (0 if s.factor == 1.0 else 1) for s in speeds)
    slow = sum(s.factor == 0.85 for s in speeds) / len(speeds)
    assert 0.26 < slow < 0.34  # 4 binomial standard deviations either side of 0.3


def test_the_lognormal_instance_factor_has_mean_one_and_the_given_spread(tmp_path: Path) -> None:
    """--instance-sd 0.1: factors average 1 and their log has sd 0.1 (3000 starts)."""
    config = resolve(profile=None, flags={"instance_sd": 0.1, "start_counter": tmp_path / "n"})
    factors = [draw_speed(config).factor for _ in range(3000)]
    assert statistics.fmean(factors) == pytest.approx(1.0, abs=0.008)
    assert statistics.stdev(math.log(f) for f in factors) == pytest.approx(0.1, abs=0.008)


def test_without_a_counter_each_start_draws_afresh() -> None:
    """No --start-counter: draws come from os.urandom, so two starts differ."""
    config = resolve(profile=None, flags={"instance_sd": 0.05, "seed": 3})
    first, second = draw_speed(config), draw_speed(config)
    assert (first.start, second.start) == (None, None)
    assert first.factor != second.factor


def test_the_speed_factor_divides_every_duration() -> None:
    """At speed 0.8 prefill, first token and decode steps all take 1/0.8 as long."""
    config = resolve(profile=None, flags={"ttft_ms": 20.0, "itl_ms": 10.0, "prefill_tok_s": 1000.0})
    base = PerfModel(config)
    slow = PerfModel(config, InstanceSpeed(factor=0.8, start=None, regime=None))
    assert base.speed.factor == 1.0
    assert slow.first_token_delay() == pytest.approx(base.first_token_delay() / 0.8)
    assert slow.step_s(4) == pytest.approx(base.step_s(4) / 0.8)
    assert slow.prefill_s(100) == pytest.approx(base.prefill_s(100) / 0.8)


def test_a_slow_start_serves_slower_and_says_so(port: int, tmp_path: Path) -> None:
    """A real process at regime speed 0.2 takes 5x the 100 ms TTFT; each start is numbered."""
    counter = tmp_path / "starts"
    body = {"prompt": "x", "max_tokens": 2, "stream": True}
    errors = []
    for _ in range(2):
        with Sim(
            port,
            "--engine",
            "vllm",
            "--startup",
            "0.2",
            "--ttft-ms",
            "100",
            "--regimes",
            "0.2:1",
            "--start-counter",
            str(counter),
        ) as sim:
            sim.wait_line("startup complete")
            result = asyncio.run(_load(sim.url + "/v1/completions", 1, 2, body))
            assert sim.proc is not None
            sim.proc.terminate()
            assert sim.wait_exit(timeout=30) == 0
            errors.append(sim.stderr())
        assert result["ttft_p50"] >= 0.45  # 100 ms / 0.2; the deadline is never early
    assert "instance speed factor 0.2000 (start 0, regime 1 of 1)" in errors[0]
    assert "instance speed factor 0.2000 (start 1, regime 1 of 1)" in errors[1]
    assert counter.read_text().strip() == "2"


@pytest.mark.parametrize(
    ("engine", "port"), [("sglang", 30000), ("vllm", 8000), ("llamacpp", 8080), ("generic", 8000)]
)
def test_default_port_is_the_engine_profiles(engine: str, port: int) -> None:
    """Without --port the simulated engine listens on its profile's port (generic, which
    has none, on 8000); --port overrides it."""
    assert resolve(profile=None, flags={"engine": engine}).port == port
    if engine != "generic":
        assert get_profile(engine).default_port == port
    assert resolve(profile=None, flags={"engine": engine, "port": 9123}).port == 9123
