"""The streaming HTTP client against real servers: framings, and the simulated engine."""

from __future__ import annotations

import re
import socket
import subprocess
import sys
import threading
import time
import urllib.request
from collections.abc import Callable, Iterator

import pytest
from tests.bench.conftest import stop_server
from tests.conftest import free_port

from servegate.bench import BenchSettings, run_point


def test_body_read_until_close_with_crlf_events(sse_server: Callable[..., str]) -> None:
    """A body without chunked coding, ended by closing, with CRLF event separators."""
    url = sse_server("--until-close", "--ttft-ms", "5", "--itl-ms", "2")
    result = run_point(BenchSettings(url=url, concurrency=2, requests=6, input_len=4, output_len=5))
    assert (result.completed, result.failed) == (6, 0)
    assert all(len(s.chunks_s) == 5 and s.usage_output_tokens == 5 for s in result.samples)


def test_zero_delay_bursts_count_every_token(sse_server: Callable[..., str]) -> None:
    """Hundreds of events per socket read are all counted (the pattern-counting path)."""
    url = sse_server()
    result = run_point(
        BenchSettings(url=url, concurrency=8, requests=32, input_len=4, output_len=300)
    )
    assert result.completed == 32
    assert all(len(s.chunks_s) == 300 for s in result.samples)
    assert not [w for w in result.warnings if "token" in w]


@pytest.fixture
def sim() -> Iterator[str]:
    """``servegate sim`` as a vLLM with 20 ms TTFT and 5 ms steps, started for the test."""
    port = free_port()
    proc = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "servegate",
            "sim",
            "--engine",
            "vllm",
            "--port",
            str(port),
            "--startup",
            "0",
            "--ttft-ms",
            "20",
            "--itl-ms",
            "5",
            "--batch-slowdown",
            "0",
            "--jitter",
            "0",
            "--prefill-tok-s",
            "0",
        ],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        text=True,
    )
    url = f"http://127.0.0.1:{port}"
    deadline = time.monotonic() + 30
    while True:
        try:
            with urllib.request.urlopen(url + "/v1/models", timeout=1):
                break
        except OSError:
            if time.monotonic() > deadline or proc.poll() is not None:
                stop_server(proc)
                pytest.fail("the simulator did not start")
            time.sleep(0.1)
    yield url
    stop_server(proc)


def test_against_the_simulator(sim: str) -> None:
    """The simulated vLLM: delays measured, counters diffed, model discovered."""
    result = run_point(
        BenchSettings(url=sim, concurrency=4, requests=12, input_len=8, output_len=6)
    )
    assert (result.completed, result.failed) == (12, 0)
    # configured 20 ms and 5 ms; 10x allowed on a busy machine (precise figures: bench/)
    assert 18.0 <= result.summary["ttft_ms_p50"] <= 200.0
    assert 0.5 <= result.summary["itl_ms_p50"] <= 50.0
    counters = result.server_metrics["counters"]
    assert counters["generation_tokens"]["delta"] == result.summary["total_output_tokens"] == 72


def _chunked_answers(
    *pieces: bytes, first: tuple[bytes, ...] = ()
) -> Callable[[socket.socket, threading.Event], None]:
    """A keep-alive HTTP/1.1 peer: every POST gets a chunked event stream written as
    ``pieces`` (one send each, so a chunk may be cut between reads), the very first POST
    (bench's preflight) ``first`` where given; any GET a 404."""
    posts = [0]

    def handle(conn: socket.socket, closing: threading.Event) -> None:
        buf = b""
        while not closing.is_set():
            while b"\r\n\r\n" not in buf:
                got = conn.recv(65536)
                if not got:
                    return
                buf += got
            head, _, buf = buf.partition(b"\r\n\r\n")
            found = re.search(rb"(?i)content-length:\s*(\d+)", head)
            length = int(found[1]) if found else 0
            while len(buf) < length:
                buf += conn.recv(65536)
            buf = buf[length:]
            if not head.startswith(b"POST"):
                conn.sendall(b"HTTP/1.1 404 Not Found\r\nContent-Length: 0\r\n\r\n")
                continue
            conn.sendall(
                b"HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\n"
                b"Transfer-Encoding: chunked\r\n\r\n"
            )
            posts[0] += 1
            for piece in first if first and posts[0] == 1 else pieces:
                conn.sendall(piece)

    return handle


def _chunk(data: bytes, size_line: bytes | None = None) -> bytes:
    return (size_line or b"%x" % len(data)) + b"\r\n" + data + b"\r\n"


EVENT = b'data: {"choices":[{"text":"a"}]}\r\n\r\n'  # CRLF line ends inside the chunk


def test_chunks_with_extensions_crlf_data_and_cut_reads_count_every_token() -> None:
    """Chunk extensions, chunk data holding CRLF, a chunk cut across two sends, and the
    last chunk in a send of its own: each of the 3 events counted once."""
    from tests.listeners import Listener

    body = _chunk(EVENT, b"%x;ext=1" % len(EVENT)) + _chunk(EVENT) + _chunk(EVENT)
    cut = len(body) - 9
    with Listener(_chunked_answers(body[:cut], body[cut:], b"0\r\n\r\n")) as peer:
        result = run_point(
            BenchSettings(
                url=peer.url, model="m", concurrency=1, requests=2, input_len=4, output_len=3
            )
        )
    assert (result.completed, result.failed) == (2, 0), result.failure_details
    assert [len(s.chunks_s) for s in result.samples] == [3, 3]


@pytest.mark.parametrize("size", [b"-5", b"zz"], ids=["negative", "not-hex"])
def test_a_bad_chunk_size_fails_the_request_as_a_bad_response(size: bytes) -> None:
    """A chunk size that is negative or not hexadecimal: the request fails as
    bad_response, naming the size."""
    from tests.listeners import Listener

    good = (_chunk(EVENT) + b"0\r\n\r\n",)
    with Listener(_chunked_answers(_chunk(EVENT, size) + b"0\r\n\r\n", first=good)) as peer:
        result = run_point(
            BenchSettings(
                url=peer.url, model="m", concurrency=1, requests=1, input_len=4, output_len=3
            )
        )
    assert (result.completed, result.failed) == (0, 1)
    assert "bad chunk size" in result.failure_details["bad_response"]


@pytest.mark.skipif(sys.platform != "linux", reason="the kernel's receive stamps are Linux's")
def test_a_read_keeps_the_kernels_time_while_the_loop_is_busy() -> None:
    """Bytes that arrive while the event loop is busy are timed when they arrived.

    The loop is held in a callback while the server writes the response; the select
    after it finds the bytes, well after they came. The read's time must be the write's
    (the kernel's receive stamp), not that select's.
    """
    import asyncio

    from servegate.bench.http import Pool, ReadClock, Sink

    listener = socket.create_server(("127.0.0.1", 0))
    port = listener.getsockname()[1]
    blocking, written = threading.Event(), threading.Event()
    sent: list[float] = []

    def serve() -> None:
        conn, _ = listener.accept()
        with conn:
            while True:
                request = b""
                while b"\r\n\r\n" not in request:
                    request += conn.recv(4096)
                if not request.startswith(b"GET /warm "):
                    break
                conn.sendall(b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok")
            blocking.wait(30)
            before = time.perf_counter()
            conn.sendall(b"HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\nhello")
            sent.extend((before, time.perf_counter()))
            written.set()

    class Times(Sink):
        def __init__(self) -> None:
            self.at: list[float] = []

        def feed(self, payload: bytes, now: float) -> None:
            self.at.append(now)

    async def client() -> tuple[list[float], float]:
        loop = asyncio.get_running_loop()
        pool = Pool(f"http://127.0.0.1:{port}/", ReadClock.install(loop))
        conn, _ = await pool.acquire()
        # The kernel turns receive stamping on a moment after the first socket asks
        # (deferred work); until then segments come unstamped. Exchange small
        # responses until one comes back stamped, then time the real one.
        assert conn._stamped is not None
        for _ in range(1000):
            assert await conn.request(b"GET /warm HTTP/1.1\r\nHost: x\r\n\r\n", Sink()) is None
            if conn._stamped.at:
                break
            await asyncio.sleep(0.005)
        assert conn._stamped.at, "the kernel never stamped a read"
        sink = Times()
        done = conn.request(b"GET / HTTP/1.1\r\nHost: x\r\n\r\n", sink)
        held: list[float] = []

        def hold() -> None:  # the loop is busy until well after the bytes arrived
            blocking.set()
            written.wait(30)
            until = time.perf_counter() + 0.05
            while time.perf_counter() < until:
                pass
            held.append(time.perf_counter())

        loop.call_soon(hold)
        assert await done is None
        pool.close()
        return sink.at, held[0]

    thread = threading.Thread(target=serve, daemon=True)
    thread.start()
    try:
        at, released = asyncio.run(client())
    finally:
        thread.join(30)
        listener.close()
    before, after = sent
    assert len(at) == 1
    assert before - 0.001 <= at[0] <= after + 0.001, (at[0] - before, released - before)


@pytest.mark.skipif(sys.platform != "linux", reason="the kernel's receive stamps are Linux's")
def test_a_point_says_its_reads_were_timed_by_the_kernel(sse_server: Callable[..., str]) -> None:
    """Every worker's connections read the kernel's stamps, and the point says so."""
    url = sse_server("--ttft-ms", "2", "--itl-ms", "1")
    settings = BenchSettings(url=url, concurrency=4, requests=8, input_len=4, output_len=3)
    result = run_point(settings)
    assert result.completed == 8
    assert result.client.read_stamps == "kernel"
    assert result.to_json()["client"]["read_stamps"] == "kernel"
