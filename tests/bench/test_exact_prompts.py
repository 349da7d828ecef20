"""Token-exact prompts (--tokenizer): built to the requested count as the server counts it,
judged against a real BPE tokenizer.json served by the simulator's /tokenize and read
locally, for completions and chat (the template's tokens counted), single prompts and
every turn of multiturn and agentic sessions."""

from __future__ import annotations

import asyncio
import random
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from tests.bpe import train_bpe
from tests.sim.helpers import Sim, wait_http

from servegate.bench import BenchSettings, run_point
from servegate.bench.dataset import VOCABULARY
from servegate.bench.result import PointResult
from servegate.bench.sessions import _count
from servegate.bench.tokens import LocalCounter, ServerCounter, exact_text

FAST = ("--startup", "0.2", "--ttft-ms", "1", "--itl-ms", "1")


@pytest.fixture(scope="module")
def bpe(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A byte-level BPE whose merges cross spaces, with a BOS and a ChatML template."""
    return train_bpe(tmp_path_factory.mktemp("bpe"))


@pytest.fixture
def served(bpe: Path, port: int, request: pytest.FixtureRequest) -> Iterator[Sim]:
    """A ready simulator of the engine named by the test's parameter, counting with ``bpe``."""
    engine = request.param
    with Sim(port, "--engine", engine, *FAST, "--tokenizer", str(bpe)) as sim:
        wait_http(sim.url + "/health", timeout=30)
        yield sim


def _point(url: str, api: str, tokenizer: str | None, input_len: int = 100) -> PointResult:
    return run_point(
        BenchSettings(
            url=url,
            api=api,  # type: ignore[arg-type]
            concurrency=4,
            requests=12,
            input_len=input_len,
            output_len=4,
            tokenizer=tokenizer,
            metrics_url="",
        )
    )


@pytest.mark.parametrize("served", ["vllm", "sglang", "llamacpp", "generic"], indirect=True)
@pytest.mark.parametrize("api", ["completions", "chat"])
def test_server_tokenize_gives_zero_mismatches(served: Sim, api: str) -> None:
    """--tokenizer server, in each engine's /tokenize shape: every request's
    usage.prompt_tokens is exactly the requested 100 (chat: template included)."""
    result = _point(served.url, api, "server")
    block = result.prompt_tokens
    assert (block["exact"], block["compared"], block["mismatched"]) == (True, 12, 0)
    assert {s.usage_input_tokens for s in result.samples} == {100}
    assert block["tokenizer"].startswith("server /tokenize")
    assert not [w for w in result.warnings if "prompt" in w]


@pytest.mark.parametrize("served", ["vllm"], indirect=True)
@pytest.mark.parametrize("api", ["completions", "chat"])
def test_a_local_tokenizer_json_gives_zero_mismatches(served: Sim, api: str, bpe: Path) -> None:
    """--tokenizer PATH (the same tokenizer.json and tokenizer_config.json's template)."""
    result = _point(served.url, api, str(bpe), input_len=257)
    assert result.prompt_tokens["mismatched"] == 0
    assert {s.usage_input_tokens for s in result.samples} == {257}


@pytest.mark.parametrize("served", ["vllm"], indirect=True)
def test_without_a_tokenizer_prompts_are_approximate_and_say_so(served: Sim) -> None:
    """No --tokenizer: the word prompts miss the BPE count, and the block says approximate."""
    result = _point(served.url, "chat", None)
    block = result.prompt_tokens
    assert (block["exact"], block["tokenizer"]) == (False, None)
    assert block["usage_mean"] != 100


@pytest.mark.parametrize("served", ["sglang"], indirect=True)
def test_a_tokenizer_that_disagrees_with_the_server_is_a_warning_with_numbers(
    served: Sim, tmp_path: Path
) -> None:
    """A local tokenizer other than the server's: the mismatch is a warning with its numbers."""
    other = train_bpe(tmp_path / "other", vocab_size=400)
    result = _point(served.url, "completions", str(other))
    assert result.prompt_tokens["mismatched"] > 0
    assert any("usage.prompt_tokens other than requested" in w for w in result.warnings)


def test_no_tokenize_falls_back_to_approximate_with_a_warning(sse_server: object) -> None:
    """A server without /tokenize (as trtllm-serve): approximate prompts, and a warning."""
    assert callable(sse_server)
    result = _point(sse_server(), "completions", "server", input_len=5)
    assert result.prompt_tokens["exact"] is False
    assert any("prompts are approximate" in w and "/tokenize" in w for w in result.warnings)


@pytest.mark.parametrize("chat", [False, True])
def test_long_prompts_are_exact_even_when_a_word_overshoots(bpe: Path, chat: bool) -> None:
    """100 prompts of 1024 tokens through the BPE, completions and chat: every one exact,
    also where the last word that fits leaves a gap no single word fills (2 of 100 chat
    prompts were 1020 tokens before)."""
    counter = LocalCounter(bpe)
    rng = random.Random(0)
    got = [
        exact_text(counter, target=1024, chat=chat, words=VOCABULARY, rng=rng)[1]
        for _ in range(100)
    ]
    assert got == [1024] * 100


def test_no_tokenize_falls_back_to_the_models_own_tokenizer_json(
    sse_server: object, bpe: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A server without /tokenize serving org/model whose snapshot is in the Hugging Face
    cache: prompts are counted with that tokenizer.json, and its name says why."""
    assert callable(sse_server)
    snapshot = tmp_path / "hub" / "models--org--model" / "snapshots" / "abc123"
    snapshot.mkdir(parents=True)
    for name in ("tokenizer.json", "tokenizer_config.json"):
        (snapshot / name).write_bytes((bpe / name).read_bytes())
    monkeypatch.setenv("HF_HUB_CACHE", str(tmp_path / "hub"))
    url = sse_server("--model", "org/model")
    result = _point(url, "completions", "server", input_len=40)
    block = result.prompt_tokens
    assert block["exact"] is True
    assert block["tokenizer"] == f"{snapshot} (the server has no /tokenize)"
    assert {s.input_len for s in result.samples} == {40}


def _sessions_point(
    url: str, api: str, tokenizer: str | None, dataset: str, requests: int, workers: int = 1
) -> PointResult:
    return run_point(
        BenchSettings(
            url=url,
            api=api,  # type: ignore[arg-type]
            dataset=dataset,
            concurrency=2,
            requests=requests,
            output_len=6,
            tokenizer=tokenizer,
            workers=workers,
            metrics_url="",
        )
    )


MULTITURN = "multiturn:turns=4,first=60,user=20"
AGENTIC = "agentic:turns=3,fanout=2,sub_turns=2,first=50,user=12,sub_first=30"


@pytest.mark.parametrize("served", ["vllm", "sglang", "llamacpp", "generic"], indirect=True)
@pytest.mark.parametrize("api", ["completions", "chat"])
@pytest.mark.parametrize(("dataset", "requests"), [(MULTITURN, 8), (AGENTIC, 22)])
def test_every_turn_of_a_session_is_exact_with_the_servers_tokenize(
    served: Sim, api: str, dataset: str, requests: int
) -> None:
    """--tokenizer server, multiturn and agentic: every turn's requested length is the
    server's own usage.prompt_tokens, the grown conversations (the server's replies, the
    sub-agents' results, the template over every message) included; a first turn is
    exactly its 60 (50, 30) tokens, as a single prompt is."""
    result = _sessions_point(served.url, api, "server", dataset, requests)
    block = result.prompt_tokens
    assert (block["exact"], block["compared"], block["mismatched"]) == (True, requests, 0)
    assert block["max_abs_diff"] == 0
    assert not [w for w in result.warnings if "prompt" in w]
    firsts = [t["prompt_tokens_mean"] for t in result.turns if t["turn"] == 1]
    assert firsts == ([60] if dataset == MULTITURN else [50, 30])  # main, then sub-agents
    assert max(s.input_len for s in result.samples) > 100  # the conversations grew


@pytest.mark.parametrize("served", ["vllm"], indirect=True)
@pytest.mark.parametrize("api", ["completions", "chat"])
@pytest.mark.parametrize(("dataset", "requests"), [(MULTITURN, 8), (AGENTIC, 22)])
def test_every_turn_of_a_session_is_exact_with_a_local_tokenizer_json(
    served: Sim, api: str, dataset: str, requests: int, bpe: Path
) -> None:
    """--tokenizer PATH, multiturn and agentic, over 2 worker processes (the counter
    travels to each): 0 mismatches over all turns."""
    result = _sessions_point(served.url, api, str(bpe), dataset, requests, workers=2)
    block = result.prompt_tokens
    assert (block["exact"], block["compared"], block["mismatched"]) == (True, requests, 0)
    assert [s.input_len for s in result.samples] == [s.usage_input_tokens for s in result.samples]


@pytest.mark.parametrize("served", ["vllm"], indirect=True)
@pytest.mark.parametrize("api", ["completions", "chat"])
def test_a_grown_turn_costs_one_tokenize_call(
    served: Sim, api: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """On vLLM's /tokenize (which takes messages) each turn after a session's first is
    counted by exactly one call, made while the point runs (from a thread, so the worker's
    other streams go on); a first turn is counted when the prompts are built."""
    calls: list[tuple[str, str]] = []
    post = ServerCounter._post

    def recorded(self: ServerCounter, path: str, body: dict[str, Any]) -> tuple[int, Any]:
        calls.append((threading.current_thread().name, path))
        return post(self, path, body)

    monkeypatch.setattr(ServerCounter, "_post", recorded)
    result = _sessions_point(served.url, api, "server", MULTITURN, 8)
    assert result.prompt_tokens["mismatched"] == 0
    during = [path for thread, path in calls if thread != threading.main_thread().name]
    assert during == ["/tokenize"] * 6  # 2 sessions x 3 grown turns


def test_a_turn_whose_count_fails_is_requested_as_minus_one(bpe: Path, port: int) -> None:
    """The server's /tokenize stops answering mid-run: the turn's count is -1 (a mismatch
    the point's warning reports), not an exception that ends the session."""
    with Sim(port, "--engine", "vllm", *FAST, "--tokenizer", str(bpe)) as sim:
        wait_http(sim.url + "/health", timeout=30)
        counter = ServerCounter(base_url=sim.url, model="m")
        talk = [{"role": "user", "content": "the water"}]
        assert asyncio.run(_count(counter, talk)) > 0
    assert asyncio.run(_count(counter, talk)) == -1
    counter.close()
