"""Streamed tokens per second of ``servegate sim`` with zero delays, on one pinned core.

Starts the simulator pinned to one core (``taskset``), drives it from a lean raw-socket
asyncio client pinned to the other, and counts the tokens the server's ``usage`` reports
and the SSE chunks that arrived. The simulator must never be the bottleneck when it
measures a load generator, so the goal is at least 100,000 streamed tokens/s.

    python benchmarks/sim_throughput.py --concurrency 64 --requests 4000 --max-tokens 256
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import re
import shutil
import socket
import subprocess
import sys
import time

USAGE = re.compile(rb'"completion_tokens":(\d+)')


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


async def worker(port: int, body: bytes, count: list[int], totals: dict[str, int]) -> None:
    reader, writer = await asyncio.open_connection("127.0.0.1", port)
    request = (
        b"POST /v1/completions HTTP/1.1\r\nhost: x\r\ncontent-type: application/json\r\n"
        b"content-length: %d\r\n\r\n%s" % (len(body), body)
    )
    while count[0] > 0:
        count[0] -= 1
        writer.write(request)
        data = bytearray()
        while not data.endswith(b"0\r\n\r\n") or b"[DONE]" not in data:
            chunk = await reader.read(1 << 20)
            if not chunk:
                raise RuntimeError("server closed the connection")
            data += chunk
        match = USAGE.search(data)
        totals["tokens"] += int(match.group(1)) if match else 0
        totals["chunks"] += data.count(b"data: ") - 2  # minus the usage chunk and [DONE]
        totals["requests"] += 1
    writer.close()


async def drive(port: int, concurrency: int, requests: int, max_tokens: int) -> dict[str, float]:
    body = json.dumps(
        {
            "prompt": "hello world",
            "max_tokens": max_tokens,
            "ignore_eos": True,
            "stream": True,
            "stream_options": {"include_usage": True},
        }
    ).encode()
    count = [requests]
    totals = {"tokens": 0, "chunks": 0, "requests": 0}
    start = time.perf_counter()
    await asyncio.gather(*(worker(port, body, count, totals) for _ in range(concurrency)))
    elapsed = time.perf_counter() - start
    return {**totals, "elapsed_s": elapsed, "tokens_per_s": totals["tokens"] / elapsed}


def wait_ready(port: int, deadline_s: float = 30.0) -> None:
    end = time.monotonic() + deadline_s
    while time.monotonic() < end:
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=0.5) as sock:
                sock.sendall(b"GET /health HTTP/1.1\r\nhost: x\r\n\r\n")
                if sock.recv(64).startswith(b"HTTP/1.1 200"):
                    return
        except OSError:
            pass
        time.sleep(0.05)
    raise SystemExit("the simulator did not become ready")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--engine", default="vllm")
    parser.add_argument("--concurrency", type=int, default=64)
    parser.add_argument("--requests", type=int, default=4000)
    parser.add_argument("--max-tokens", type=int, default=256)
    parser.add_argument("--server-core", default="0")
    parser.add_argument("--client-core", default="1")
    parser.add_argument("--spec-accept-length", default="1")
    parser.add_argument("--itl-ms", default="0", help="0: every token is due at once")
    args = parser.parse_args()
    port = free_port()
    pin = ["taskset", "-c", args.server_core] if shutil.which("taskset") else []
    server = subprocess.Popen(
        [
            *pin,
            sys.executable,
            "-m",
            "servegate",
            "sim",
            "--engine",
            args.engine,
            "--port",
            str(port),
            "--startup",
            "0.2",
            "--ttft-ms",
            "0",
            "--itl-ms",
            args.itl_ms,
            "--batch-slowdown",
            "0",
            "--max-running",
            "1024",
            "--spec-accept-length",
            args.spec_accept_length,
        ],
        stdout=subprocess.DEVNULL,
    )
    try:
        wait_ready(port)
        if shutil.which("taskset"):
            os.sched_setaffinity(0, {int(args.client_core)})
        cpu0 = _cpu_seconds(server.pid)
        result = drive(port, args.concurrency, args.requests, args.max_tokens)
        out = asyncio.run(result)
        out["server_cpu_s"] = _cpu_seconds(server.pid) - cpu0
        out["tokens_per_server_cpu_s"] = out["tokens"] / out["server_cpu_s"]
        print(json.dumps({k: round(v, 1) if isinstance(v, float) else v for k, v in out.items()}))
    finally:
        server.terminate()
        server.wait(timeout=10)


def _cpu_seconds(pid: int) -> float:
    with open(f"/proc/{pid}/stat") as fh:
        fields = fh.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


if __name__ == "__main__":
    main()
