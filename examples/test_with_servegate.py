"""Test an inference server with servegate's pytest plugin: the simulator, as SGLang.

    pytest examples/test_with_servegate.py

The fixtures come with servegate (a pytest11 entry point): no conftest, no import.
Replace SIM with your server's command. ``SIM_FAIL=oom`` makes the simulator run out
of memory while it loads the weights, to show what a CRASH looks like in pytest.
"""

from __future__ import annotations

import json
import os
import sys
import urllib.request
from typing import Any

import pytest

from servegate.launch import Server
from servegate.pytest_plugin import Bench, ServerFactory

# "{port}" is replaced by a free port; the simulator decodes one token per 5 ms per request
SIM = [
    sys.executable, "-m", "servegate", "sim", "--engine", "sglang", "--port", "{port}",
    "--profile", "fast", "--itl-ms", "5", "--ttft-ms", "20",
]  # fmt: skip


def sim_command() -> list[str]:
    """SIM, with a failure while loading the weights when SIM_FAIL names one."""
    fail = os.environ.get("SIM_FAIL")
    return [*SIM, "--fail", fail, "--fail-at", "load_weights"] if fail else SIM


@pytest.fixture
def sim(servegate_server: ServerFactory) -> Server:
    """A fresh server for each test; a CRASH or TIMEOUT is an error in this setup."""
    return servegate_server(sim_command(), engine="sglang", timeout=60)


@pytest.fixture(scope="session")
def shared_sim(servegate_server_session: ServerFactory) -> Server:
    """One server for every test that uses it, stopped at the end of the session."""
    return servegate_server_session(sim_command(), engine="sglang", timeout=60, name="shared")


def get_json(url: str) -> Any:
    with urllib.request.urlopen(url, timeout=10) as response:  # noqa: S310 (http only)
        return json.loads(response.read())


def test_output_throughput(sim: Server, servegate_bench: Bench) -> None:
    """8 streams of 32 tokens: every request completes, at a useful throughput."""
    result = servegate_bench(sim, concurrency=8, requests=64, input_len=128, output_len=32)
    assert result.failed == 0, result.failures
    assert result.completed == 64
    # the model's ceiling is about 8 / 5.5 ms = 1,450 tokens/s; a tenth of it is a floor
    # that holds on a busy CI machine and still catches a server that stopped batching
    assert result.summary["output_throughput"] > 140
    assert result.summary["ttft_ms_p50"] >= 20  # no first token before the engine's TTFT


def test_ready_server_answers(shared_sim: Server) -> None:
    """READY means the health probe passed: the server answers at once."""
    assert shared_sim.verdict.status == "ready"
    assert shared_sim.alive()
    with urllib.request.urlopen(f"{shared_sim.url}/health", timeout=10) as response:  # noqa: S310
        assert response.status == 200


def test_serves_one_model(shared_sim: Server) -> None:
    """The session's server is the same process for every test that uses it."""
    models = get_json(f"{shared_sim.url}/v1/models")
    assert len(models["data"]) == 1
