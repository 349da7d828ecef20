"""Kept-alive connections that the server closed: sent again once, and counted."""

from __future__ import annotations

import asyncio
import json
import urllib.request
from collections.abc import Callable
from typing import Any

import pytest
from tests.cli.test_bench import bench

from servegate.bench import BenchSettings, run_point
from servegate.bench.dataset import Prompt, encode_body
from servegate.bench.http import Pool, request_bytes
from servegate.bench.sample import RequestSample
from servegate.bench.stream import COMPLETION_KEYS, patterns, send_request


def _stats(url: str) -> dict[str, Any]:
    with urllib.request.urlopen(url + "/stats", timeout=5) as resp:
        data: dict[str, Any] = json.loads(resp.read())
    return data


@pytest.mark.parametrize("concurrency", [1, 4])
def test_unannounced_close_is_sent_again(sse_server: Callable[..., str], concurrency: int) -> None:
    """A server closing every connection after its response, unannounced, loses nothing.

    Each request that went out on a connection the server was closing is sent once more
    on a fresh connection: every request completes, and ``reconnects`` equals the
    requests the server received on a closing connection and dropped.
    """
    url = sse_server("--close-after-stream", "50", "--ttft-ms", "2", "--itl-ms", "1")
    result = run_point(
        BenchSettings(url=url, concurrency=concurrency, requests=16, input_len=4, output_len=5)
    )
    assert (result.completed, result.failed) == (16, 0)
    assert result.reconnects == _stats(url)["discarded"]
    assert result.reconnects >= 16 - 2 * concurrency  # all but each stream's first, roughly
    assert result.reconnects == sum(1 for s in result.samples if s.reconnected)
    assert result.to_json(samples=False)["reconnects"] == result.reconnects
    for s in result.samples:
        assert s.ttft_s is not None and s.e2el_s is not None
        assert len(s.chunks_s) == 5


def test_announced_close_is_not_reused(sse_server: Callable[..., str]) -> None:
    """``Connection: close`` is honoured: no request is sent on such a connection."""
    url = sse_server("--close-after-stream", "50", "--say-close")
    result = run_point(
        BenchSettings(url=url, concurrency=2, requests=10, input_len=4, output_len=3)
    )
    assert (result.completed, result.reconnects) == (10, 0)
    stats = _stats(url)
    assert stats["discarded"] == 0
    assert stats["connections"] >= 11  # the probe's, then one per measured request


def test_reset_after_headers_is_a_failure(sse_server: Callable[..., str]) -> None:
    """A reset after the response headers arrived is a failure, never sent again."""
    url = sse_server("--reset-after-head-every", "3")
    result = run_point(
        BenchSettings(url=url, concurrency=1, requests=12, input_len=4, output_len=3)
    )
    # the probe is the server's request 1; measured requests are 2..13
    expected = sum(1 for n in range(2, 14) if n % 3 == 0)
    assert result.failures == {"connection_reset": expected}
    assert (result.completed, result.reconnects) == (12 - expected, 0)
    assert _stats(url)["requests"] == 13  # nothing was sent twice


def test_keep_alive_timeout_is_honoured(sse_server: Callable[..., str]) -> None:
    """Under ``Keep-Alive: timeout=2`` (reuse for 1 s) a connection idle 1.3 s is not
    reused; one idle 0.1 s is (10x below the allowance, for a busy machine)."""
    url = sse_server("--keep-alive-timeout", "2")
    prompt = Prompt(
        body=encode_body(
            api="completions", model="m", text="hello there", max_tokens=3, ignore_eos=True
        ),
        input_len=2,
        output_len=3,
    )

    async def main() -> list[RequestSample]:
        pool = Pool(url + "/v1/completions")
        frame = request_bytes(pool, {"Content-Type": "application/json"})
        out: list[RequestSample] = []
        try:
            for pause in (0.0, 0.1, 1.3):
                await asyncio.sleep(pause)
                sample = await send_request(
                    pool,
                    frame,
                    prompt=prompt,
                    index=len(out),
                    timeout_s=10.0,
                    keys=COMPLETION_KEYS,
                    fast=patterns(COMPLETION_KEYS),
                    t0=0.0,
                )
                out.append(sample)
        finally:
            pool.close()
        return out

    samples = asyncio.run(main())
    assert [s.error for s in samples] == [None, None, None]
    assert not any(s.reconnected for s in samples)
    stats = _stats(url)
    assert stats["connections"] == 2 + 1  # two for the requests, one for this /stats read
    assert stats["discarded"] == 0


def test_trailer_section_ends_the_body() -> None:
    """A chunked body ends after its trailer fields; the connection then carries the next."""
    event = b'data: {"choices":[{"text":" a"}]}\n\n'
    body = b"%x\r\n%s\r\n0\r\nX-Checksum: 1\r\nX-More: 2\r\n\r\n" % (len(event), event)
    head = b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n"
    connections: list[asyncio.Event] = []

    async def serve(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        ended = asyncio.Event()
        connections.append(ended)
        while True:
            try:
                request = await reader.readuntil(b"\r\n\r\n")
            except asyncio.IncompleteReadError:
                break
            length = int(request.lower().split(b"content-length:")[1].split(b"\r\n")[0])
            await reader.readexactly(length)
            # the trailer section comes in a later write, as a separate segment
            cut = body.index(b"0\r\n") + 3
            writer.write(head + body[:cut])
            await writer.drain()
            await asyncio.sleep(0.02)
            writer.write(body[cut:])
            await writer.drain()
        writer.close()
        await writer.wait_closed()
        ended.set()

    async def main() -> list[RequestSample]:
        server = await asyncio.start_server(serve, "127.0.0.1", 0)
        port = server.sockets[0].getsockname()[1]
        pool = Pool(f"http://127.0.0.1:{port}/v1/completions")
        frame = request_bytes(pool, {})
        prompt = Prompt(body=b"{}", input_len=1, output_len=1)
        try:
            return [
                await send_request(
                    pool,
                    frame,
                    prompt=prompt,
                    index=i,
                    timeout_s=10.0,
                    keys=COMPLETION_KEYS,
                    fast=patterns(COMPLETION_KEYS),
                    t0=0.0,
                )
                for i in range(3)
            ]
        finally:
            pool.close()
            for ended in connections:
                await asyncio.wait_for(ended.wait(), 5)
            server.close()
            await server.wait_closed()

    samples = asyncio.run(main())
    assert [(s.error, len(s.chunks_s), s.reconnected) for s in samples] == [(None, 1, False)] * 3
    assert len(connections) == 1


def test_cli_reports_reconnects(sse_server: Callable[..., str]) -> None:
    """``servegate bench`` prints a reconnects line and writes the count to its JSON."""
    url = sse_server("--close-after-stream", "30")
    out = bench(
        "--url", url, "--concurrency", "1", "--requests", "6", "--input-len", "4",
        "--output-len", "3", "--json",
    )  # fmt: skip
    assert out.returncode == 0, out.stderr
    point = json.loads(out.stdout)["points"][0]
    assert point["completed"] == 6 and point["reconnects"] >= 3
    assert sum(s["reconnected"] for s in point["samples"]) == point["reconnects"]
    assert f"reconnects          {point['reconnects']} (resent" in out.stderr
