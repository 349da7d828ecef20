"""A client that goes away mid-request: the simulator aborts the request, as the engines do.

The requests generate for tens of seconds, so they are surely in flight when their
sockets close; the test then waits (polling /metrics, with a deadline) for the engine to
count them, and proves that nothing more was generated for them with a marker request
sent after: the simulator writes tokens in the order they are due, so a token still due
for an aborted request would be counted before the marker's last one.
"""

from __future__ import annotations

import json
import socket
import struct
import time
from collections.abc import Callable

from prometheus_client.parser import text_string_to_metric_families
from tests.sim.helpers import Sim, get

DEADLINE_S = 60.0
LONG = 4000  # tokens: 80 s at 20 ms a token, never finished within a test
SLOW = ("--startup", "0.2", "--ttft-ms", "5", "--itl-ms", "20")


def metrics(url: str) -> dict[str, float]:
    """Each sample of /metrics by name, summed over its labels (vLLM's aborted requests
    also apart, as ``vllm:request_success_total{abort}``)."""
    status, body = get(url + "/metrics")
    assert status == 200
    out: dict[str, float] = {}
    for family in text_string_to_metric_families(body.decode()):
        for sample in family.samples:
            out[sample.name] = out.get(sample.name, 0.0) + sample.value
            if sample.labels.get("finished_reason") == "abort":
                out[sample.name + "{abort}"] = sample.value
    return out


def wait_metrics(url: str, done: Callable[[dict[str, float]], bool]) -> dict[str, float]:
    """/metrics once ``done`` holds for it (polled until a generous deadline)."""
    deadline = time.monotonic() + DEADLINE_S
    while True:
        now = metrics(url)
        if done(now):
            return now
        if time.monotonic() > deadline:
            raise AssertionError(f"/metrics never got there: {now}")
        time.sleep(0.05)


def open_request(port: int, *, stream: bool) -> socket.socket:
    """A socket with a long completion request sent on it."""
    body = json.dumps(
        {"prompt": "one two three four five", "max_tokens": LONG, "ignore_eos": True}
        | {"stream": stream}
    ).encode()
    sock = socket.create_connection(("127.0.0.1", port), timeout=DEADLINE_S)
    head = (
        f"POST /v1/completions HTTP/1.1\r\nhost: 127.0.0.1\r\ncontent-type: application/json"
        f"\r\ncontent-length: {len(body)}\r\n\r\n"
    )
    sock.sendall(head.encode() + body)
    return sock


def first_token(sock: socket.socket) -> None:
    """Read a streamed response until its first token event has arrived."""
    data = b""
    while b"data: " not in data:
        more = sock.recv(65536)
        assert more, f"the stream ended early: {data!r}"
        data += more


def close_abruptly(sock: socket.socket, *, reset: bool) -> None:
    """Close without reading the rest: a reset (RST, as a killed process with unread data
    does) or an orderly close (FIN)."""
    if reset:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
    sock.close()


def abandon_four(sim: Sim, gauges: tuple[str, str], in_queue: int) -> None:
    """Two streamed requests (their first token read), then two whole-body ones, all in
    flight (running, or ``in_queue`` of them waiting for a slot: ``gauges`` are the
    running and waiting gauges), whose clients then close without reading on: a reset
    (RST, as a killed process with unread data sends) and an orderly close (FIN) of each
    kind."""
    socks = []
    try:
        for stream in (True, True, False, False):
            socks.append(open_request(sim.port, stream=stream))
            if stream:
                first_token(socks[-1])
        running, waiting = gauges
        wait_metrics(sim.url, lambda m: (m[running], m[waiting]) == (4 - in_queue, in_queue))
    finally:
        for index, sock in enumerate(socks):
            close_abruptly(sock, reset=index % 2 == 0)


def marker(sim: Sim) -> None:
    """One short request (3 prompt tokens, 20 generated), answered: sent after the
    aborts, its last token is due after any token still due for them."""
    body = {"prompt": "one two three", "max_tokens": 20, "ignore_eos": True}
    status, _ = get(sim.url + "/v1/completions", json.dumps(body).encode())
    assert status == 200


def test_sglang_counts_a_client_that_went_away_as_aborted(port: int) -> None:
    """SGLang: requests whose clients closed, running or still waiting for a slot, are
    counted in num_aborted_requests_total (not in num_requests_total), leave the batch
    and the queue, and generate nothing more."""
    with Sim(port, "--engine", "sglang", "--max-running", "2", *SLOW) as sim:
        sim.wait_line("ready to roll")
        gauges = ("sglang:num_running_reqs", "sglang:num_queue_reqs")
        abandon_four(sim, gauges, in_queue=2)
        gone = wait_metrics(
            sim.url,
            lambda m: (
                m["sglang:num_aborted_requests_total"] == 4
                and (m[gauges[0]], m[gauges[1]]) == (0, 0)
            ),
        )
        marker(sim)
        after = metrics(sim.url)
    assert gone["sglang:num_requests_total"] == 0
    assert after["sglang:num_requests_total"] == 1
    assert after["sglang:num_aborted_requests_total"] == 4
    assert after["sglang:prompt_tokens_total"] == gone["sglang:prompt_tokens_total"] + 3
    assert after["sglang:generation_tokens_total"] == gone["sglang:generation_tokens_total"] + 20


def test_vllm_counts_a_client_that_went_away_nowhere(port: int) -> None:
    """vLLM: requests whose clients closed stop running and generate nothing more; as in
    vLLM (its abort path records no stats), no counter counts them, request_success_total
    (the abort reason included) neither."""
    with Sim(port, "--engine", "vllm", *SLOW) as sim:
        sim.wait_line("Application startup complete")
        gauges = ("vllm:num_requests_running", "vllm:num_requests_waiting")
        abandon_four(sim, gauges, in_queue=0)
        gone = wait_metrics(sim.url, lambda m: (m[gauges[0]], m[gauges[1]]) == (0, 0))
        marker(sim)
        after = metrics(sim.url)
    assert gone["vllm:request_success_total"] == 0
    assert (after["vllm:request_success_total"], after["vllm:request_success_total{abort}"]) == (
        1,
        0,
    )
    assert after["vllm:prompt_tokens_total"] == gone["vllm:prompt_tokens_total"] + 3
    assert after["vllm:generation_tokens_total"] == gone["vllm:generation_tokens_total"] + 20
