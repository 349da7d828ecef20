"""How exactly ``servegate sim`` keeps its configured TTFT and ITL under load.

Runs the simulator with ``--ttft-ms 50 --itl-ms 10 --batch-slowdown 0`` (pinned to one
core), drives it at concurrency 64 with a lean aiohttp streaming client (pinned to the
other core), and compares what the client saw with the server's own record
(``--record-file``): TTFT p50 should sit within 2 ms of 50 and ITL p50 within 1 ms of 10.

    python benchmarks/sim_fidelity.py --concurrency 64 --requests 640 --max-tokens 100
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import shutil
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import aiohttp


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def pct(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


async def drive(
    url: str, concurrency: int, requests: int, max_tokens: int
) -> dict[str, list[float]]:
    body = {
        "prompt": "hello world",
        "max_tokens": max_tokens,
        "ignore_eos": True,
        "stream": True,
        "stream_options": {"include_usage": True},
    }
    ttft: list[float] = []
    itl: list[float] = []
    left = [requests]

    async def worker(session: aiohttp.ClientSession) -> None:
        while left[0] > 0:
            left[0] -= 1
            sent = time.perf_counter()
            last = None
            async with session.post(url, json=body) as resp:
                async for line in resp.content:
                    if not line.startswith(b'data: {"id"') or b'"choices":[]' in line:
                        continue
                    now = time.perf_counter()
                    if last is None:
                        ttft.append(now - sent)
                    else:
                        itl.append(now - last)
                    last = now

    connector = aiohttp.TCPConnector(limit=0)
    async with aiohttp.ClientSession(connector=connector) as session:
        await asyncio.gather(*(worker(session) for _ in range(concurrency)))
    return {"ttft": ttft, "itl": itl}


def wait_ready(port: int) -> None:
    end = time.monotonic() + 30
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
    parser.add_argument("--requests", type=int, default=640)
    parser.add_argument("--max-tokens", type=int, default=100)
    parser.add_argument("--ttft-ms", default="50")
    parser.add_argument("--itl-ms", default="10")
    args = parser.parse_args()
    port = free_port()
    record = Path(tempfile.mkdtemp()) / "record.jsonl"
    pin = ["taskset", "-c", "0"] if shutil.which("taskset") else []
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
            args.ttft_ms,
            "--itl-ms",
            args.itl_ms,
            "--batch-slowdown",
            "0",
            "--record-file",
            str(record),
        ],
        stdout=subprocess.DEVNULL,
    )
    try:
        wait_ready(port)
        if pin:
            os.sched_setaffinity(0, {1})
        seen = asyncio.run(
            drive(
                f"http://127.0.0.1:{port}/v1/completions",
                args.concurrency,
                args.requests,
                args.max_tokens,
            )
        )
    finally:
        server.terminate()
        server.wait(timeout=10)
    rows = [json.loads(line) for line in record.read_text().splitlines()]
    server_ttft = [r["ttft_ms"] / 1000 for r in rows]
    server_itl = [b - a for r in rows for a, b in zip(r["chunk_s"], r["chunk_s"][1:], strict=False)]
    out = {}
    for name, values in (
        ("client_ttft", seen["ttft"]),
        ("server_ttft", server_ttft),
        ("client_itl", seen["itl"]),
        ("server_itl", server_itl),
    ):
        out[name] = {
            q: round(pct(values, p) * 1000, 3)
            for q, p in (("p50", 0.5), ("p90", 0.9), ("p99", 0.99))
        }
        out[name]["n"] = len(values)
    print(json.dumps(out, indent=1))


if __name__ == "__main__":
    main()
