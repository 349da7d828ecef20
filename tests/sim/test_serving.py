"""The OpenAI-compatible API of the simulator, through a real HTTP client."""

from __future__ import annotations

import asyncio
import json
import socket
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import aiohttp
import pytest
from prometheus_client.parser import text_string_to_metric_families
from tests.sim.helpers import Sim, get

FAST = ("--startup", "0.2", "--ttft-ms", "5", "--itl-ms", "1")
MODEL = "meta-llama/Llama-3.1-8B-Instruct"
READY = {
    "sglang": "ready to roll",
    "vllm": "Application startup complete",
    "llamacpp": "all slots are idle",
}


@pytest.fixture
def vllm(port: int) -> Iterator[Sim]:
    """A ready simulated vLLM."""
    with Sim(port, "--engine", "vllm", *FAST) as sim:
        sim.wait_line("Application startup complete")
        yield sim


async def _post(url: str, body: dict[str, Any]) -> tuple[int, bytes]:
    async with aiohttp.ClientSession() as session, session.post(url, json=body) as resp:
        return resp.status, await resp.read()


def post(url: str, body: dict[str, Any]) -> tuple[int, bytes]:
    """POST JSON with aiohttp; (status, raw body)."""
    return asyncio.run(_post(url, body))


def events(raw: bytes) -> list[str]:
    """The SSE events of a body, checking the framing: ``data: ...`` + blank line each."""
    assert raw.endswith(b"\n\n")
    parts = raw.decode().split("\n\n")[:-1]
    for part in parts:
        assert part.startswith("data: ") and "\n" not in part
    return [part.removeprefix("data: ") for part in parts]


def test_streamed_completion_has_vllm_framing_and_usage(vllm: Sim) -> None:
    """Token chunks, finish_reason on the last, then a usage chunk, then [DONE]."""
    status, raw = post(
        vllm.url + "/v1/completions",
        {
            "model": MODEL,
            "prompt": "one two three four",
            "max_tokens": 7,
            "ignore_eos": True,
            "stream": True,
            "stream_options": {"include_usage": True},
        },
    )
    assert status == 200
    items = events(raw)
    assert items[-1] == "[DONE]"
    chunks = [json.loads(item) for item in items[:-1]]
    usage = chunks.pop()
    assert usage["choices"] == []
    assert usage["usage"] == {"prompt_tokens": 4, "total_tokens": 11, "completion_tokens": 7}
    assert len(chunks) == 7
    assert all(c["object"] == "text_completion" and c["model"] == MODEL for c in chunks)
    assert [c["choices"][0]["finish_reason"] for c in chunks] == [None] * 6 + ["length"]
    assert all(c["choices"][0]["text"].startswith(" ") for c in chunks)
    assert len({c["id"] for c in chunks}) == 1 and chunks[0]["id"].startswith("cmpl-")


def test_streamed_chat_starts_with_the_assistant_role(port: int) -> None:
    """Chat streams open with a role delta, then content deltas; no usage unless asked."""
    with Sim(port, "--engine", "sglang", *FAST) as sim:
        sim.wait_line("ready to roll")
        status, raw = post(
            sim.url + "/v1/chat/completions",
            {
                "messages": [{"role": "user", "content": "hello there"}],
                "max_tokens": 4,
                "ignore_eos": True,
                "stream": True,
            },
        )
        assert status == 200
        items = events(raw)
        assert items[-1] == "[DONE]"
        chunks = [json.loads(item) for item in items[:-1]]
        assert chunks[0]["choices"][0]["delta"]["role"] == "assistant"
        assert chunks[0]["choices"][0]["delta"]["content"] == ""
        content = [c["choices"][0]["delta"]["content"] for c in chunks[1:]]
        assert len(content) == 4 and all(content)
        assert all(c["object"] == "chat.completion.chunk" for c in chunks)
        assert all(c.get("usage") is None for c in chunks)


def test_non_streamed_requests_return_usage(vllm: Sim) -> None:
    """A non-streamed completion and chat carry the text and ``usage``."""
    status, raw = post(
        vllm.url + "/v1/completions", {"prompt": [1, 2, 3], "max_tokens": 5, "ignore_eos": True}
    )
    body = json.loads(raw)
    assert status == 200
    assert body["usage"] == {"prompt_tokens": 3, "total_tokens": 8, "completion_tokens": 5}
    assert len(body["choices"][0]["text"].split()) == 5
    status, raw = post(
        vllm.url + "/v1/chat/completions",
        {
            "messages": [{"role": "user", "content": "a b"}],
            "max_completion_tokens": 3,
            "ignore_eos": True,
        },
    )
    body = json.loads(raw)
    assert body["object"] == "chat.completion"
    assert body["choices"][0]["message"]["role"] == "assistant"
    assert body["usage"]["completion_tokens"] == 3


def test_without_ignore_eos_lengths_vary_up_to_max_tokens(vllm: Sim) -> None:
    """Without ignore_eos a request may stop early ("stop"), never past max_tokens."""
    seen = []
    for _ in range(30):
        body = json.loads(post(vllm.url + "/v1/completions", {"prompt": "x", "max_tokens": 20})[1])
        n, reason = body["usage"]["completion_tokens"], body["choices"][0]["finish_reason"]
        assert 1 <= n <= 20
        assert reason == ("length" if n == 20 else "stop")
        seen.append(n)
    assert len(set(seen)) > 3


BAD_REQUESTS = [
    ("/v1/completions", b"{not json", 400, "not valid JSON"),
    ("/v1/completions", b"[1, 2]", 400, "JSON object"),
    ("/v1/completions", b'{"max_tokens": 3}', 400, "'prompt' is required"),
    ("/v1/completions", b'{"prompt": "x", "max_tokens": -1}', 400, "max_tokens"),
    ("/v1/completions", b'{"prompt": "x", "n": 2}', 400, "'n' must be 1"),
    (
        "/v1/completions",
        b'{"prompt": "x", "stream_options": {"include_usage": true}}',
        400,
        "stream=True",
    ),
    (
        "/v1/completions",
        b'{"prompt": "x", "max_tokens": 999999}',
        400,
        "maximum context length",
    ),
    ("/v1/completions", b'{"prompt": "x", "model": "other"}', 404, "does not exist"),
    ("/v1/chat/completions", b'{"messages": []}', 400, "'messages' is required"),
    ("/v1/chat/completions", b'{"messages": [{"content": "x"}]}', 400, "'role'"),
    ("/v2/nothing", b"{}", 404, "not found"),
]


def test_bad_requests_get_openai_style_errors(vllm: Sim) -> None:
    """Bad input is refused with the right status and an ``{"error": {...}}`` body."""
    for path, body, status, needle in BAD_REQUESTS:
        got, raw = get(vllm.url + path, body)
        assert got == status, (path, body)
        error = json.loads(raw)["error"]
        assert needle in error["message"], (path, body)
        assert error["code"] == status and error["type"]
    # a broken request line and a body that never ends are refused too
    with socket.create_connection(("127.0.0.1", vllm.port)) as sock:
        sock.sendall(b"NONSENSE\r\n\r\n")
        assert sock.recv(100).startswith(b"HTTP/1.1 400")
    assert get(vllm.url + "/health")[0] == 200  # and the server lives on


def test_wrong_method_is_405(vllm: Sim) -> None:
    """GET on a completion route is 405, POST on /health too."""
    assert get(vllm.url + "/v1/completions")[0] == 405
    assert get(vllm.url + "/health", b"{}")[0] == 405


def _families(text: str) -> dict[str, Any]:
    return {f.name: f for f in text_string_to_metric_families(text)}


@pytest.mark.parametrize(
    ("engine", "names"),
    [
        (
            "vllm",
            [
                "vllm:prompt_tokens",
                "vllm:generation_tokens",
                "vllm:num_requests_running",
                "vllm:num_requests_waiting",
                "vllm:time_to_first_token_seconds",
                "vllm:inter_token_latency_seconds",
                "vllm:e2e_request_latency_seconds",
            ],
        ),
        (
            "sglang",
            [
                "sglang:prompt_tokens",
                "sglang:generation_tokens",
                "sglang:num_running_reqs",
                "sglang:num_queue_reqs",
                "sglang:time_to_first_token_seconds",
                "sglang:inter_token_latency_seconds",
            ],
        ),
        (
            "llamacpp",
            [
                "llamacpp:prompt_tokens",
                "llamacpp:tokens_predicted",
                "llamacpp:requests_processing",
                "llamacpp:requests_deferred",
            ],
        ),
    ],
)
def test_metrics_parse_and_count_what_was_served(engine: str, names: list[str], port: int) -> None:
    """/metrics parses with prometheus_client and its counters match the usage served."""
    with Sim(port, "--engine", engine, *FAST) as sim:
        sim.wait_line(READY[engine])
        total = 0
        for n in (3, 5, 8):
            raw = post(
                sim.url + "/v1/completions",
                {"prompt": "a b c d", "max_tokens": n, "ignore_eos": True},
            )[1]
            total += json.loads(raw)["usage"]["completion_tokens"]
        _status, text = get(sim.url + "/metrics")
        families = _families(text.decode())
        for name in names:
            assert name in families, name
        prefix = engine + ":"
        gen = prefix + ("tokens_predicted" if engine == "llamacpp" else "generation_tokens")
        assert families[gen].samples[0].value == total
        assert families[prefix + "prompt_tokens"].samples[0].value == 12
        if engine != "llamacpp":
            ttft = families[prefix + "time_to_first_token_seconds"]
            count = next(s.value for s in ttft.samples if s.name.endswith("_count"))
            assert count == 3


@pytest.mark.parametrize("engine", ["vllm", "sglang"])
def test_spec_decode_counters_give_the_acceptance_length(engine: str, port: int) -> None:
    """--spec-accept-length 2.5: fewer chunks than tokens, and the counters say 2.5."""
    with Sim(port, "--engine", engine, *FAST, "--spec-accept-length", "2.5") as sim:
        sim.wait_line(READY[engine])
        raw = post(
            sim.url + "/v1/completions",
            {
                "prompt": "x",
                "max_tokens": 400,
                "ignore_eos": True,
                "stream": True,
                "stream_options": {"include_usage": True},
            },
        )[1]
        items = events(raw)
        usage = json.loads(items[-2])["usage"]
        assert usage["completion_tokens"] == 400
        assert 400 / 2.5 * 0.9 <= len(items) - 2 <= 400 / 2.5 * 1.1
        families = _families(get(sim.url + "/metrics")[1].decode())
        if engine == "vllm":
            drafts = families["vllm:spec_decode_num_drafts"].samples[0].value
            accepted = families["vllm:spec_decode_num_accepted_tokens"].samples[0].value
            draft_tokens = families["vllm:spec_decode_num_draft_tokens"].samples[0].value
            assert 1 + accepted / drafts == pytest.approx(2.5, abs=0.05)
            assert draft_tokens == 2 * drafts
        else:
            length = families["sglang:spec_accept_length"].samples[0].value
            assert length == pytest.approx(2.5, abs=0.05)


def test_error_rate_answers_500s(port: int) -> None:
    """--error-rate 1 makes every completion an HTTP 500 with an error body."""
    with Sim(port, "--engine", "vllm", *FAST, "--error-rate", "1") as sim:
        sim.wait_line("startup complete")
        status, raw = post(sim.url + "/v1/completions", {"prompt": "x"})
        assert status == 500 and json.loads(raw)["error"]["code"] == 500


async def _stalled(url: str) -> tuple[int, bool]:
    async with (
        aiohttp.ClientSession() as session,
        session.post(
            url, json={"prompt": "x", "max_tokens": 50, "ignore_eos": True, "stream": True}
        ) as resp,
    ):
        seen = 0
        try:
            while True:
                line = await asyncio.wait_for(resp.content.readline(), 0.5)
                if line.startswith(b"data: "):
                    seen += 1
        except TimeoutError:
            return seen, not resp.content.at_eof()


def test_stalled_stream_stops_sending_and_stays_open(port: int) -> None:
    """--stall-stream-after 3: three chunks, then silence on an open connection."""
    with Sim(port, "--engine", "vllm", *FAST, "--stall-stream-after", "3") as sim:
        sim.wait_line("startup complete")
        seen, still_open = asyncio.run(_stalled(sim.url + "/v1/completions"))
        assert (seen, still_open) == (3, True)


def test_record_file_has_server_side_timings(port: int, tmp_path: Path) -> None:
    """--record-file writes one JSON line per request with its server-side timestamps."""
    record = tmp_path / "record.jsonl"
    with Sim(
        port,
        "--engine",
        "vllm",
        "--startup",
        "0.2",
        "--ttft-ms",
        "30",
        "--itl-ms",
        "10",
        "--record-file",
        str(record),
    ) as sim:
        sim.wait_line("startup complete")
        post(
            sim.url + "/v1/completions",
            {"prompt": "x", "max_tokens": 5, "ignore_eos": True, "stream": True},
        )
    rows = [json.loads(line) for line in record.read_text().splitlines()]
    assert len(rows) == 1
    row = rows[0]
    assert row["completion_tokens"] == 5 and len(row["chunk_s"]) == 5
    assert row["ttft_ms"] == pytest.approx(30, abs=10)
    # four steps of 10 ms, scheduled at absolute deadlines: a late one does not add up
    assert row["chunk_s"][-1] - row["chunk_s"][0] == pytest.approx(0.040, abs=0.008)
    assert row["end_s"] >= row["first_token_s"] >= row["admitted_s"] >= row["arrival_s"]
