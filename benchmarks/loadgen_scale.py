"""Scale: 10,000 concurrent streams on one host, timed against the server's own record.

Server: ``tests/bench/sse_server.py`` with exact delays (``--ttft-ms``, ``--itl-ms``), run
as several processes sharing one port (``SO_REUSEPORT``), each on a core of its own and
each keeping its own record of when it read each request and wrote its first token.
Client, on the other cores: ``servegate bench --workers W`` at ``--concurrency`` streams;
for contrast, one aiohttp process (the client design of ``vllm bench serve``: one event
loop, one session) at the same load. The error is the client's TTFT percentile minus the
server's record's percentile over the same requests.

A second run offers a Poisson schedule (``--rate``) and reports the send lag (actual
minus scheduled send time) that servegate measured.

    python benchmarks/loadgen_scale.py                        # 10,000 streams, 16 cores
    python benchmarks/loadgen_scale.py --streams 500 --requests 1000 --server-procs 1 \\
        --workers 1 --rate 100                                # a small run on 2 cores

Prints one JSON document (and writes it to ``--out`` when given).
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
SERVER = ROOT / "tests" / "bench" / "sse_server.py"

AIOHTTP_CLIENT = r"""
import asyncio, json, sys, time
import aiohttp

url = sys.argv[1]
streams, requests, output_len = (int(x) for x in sys.argv[2:5])

async def one(session, sem, ttfts, prompt):
    async with sem:
        body = {"model": "test-model", "prompt": prompt, "max_tokens": output_len,
                "stream": True, "ignore_eos": True}
        start = time.perf_counter()
        first = None
        async with session.post(url + "/v1/completions", json=body) as resp:
            async for chunk in resp.content:
                if first is None and chunk.startswith(b"data: {"):
                    first = time.perf_counter()
        ttfts.append((first - start) * 1000.0)

async def main():
    sem = asyncio.Semaphore(streams)
    ttfts = []
    conn = aiohttp.TCPConnector(limit=streams, force_close=False)
    timeout = aiohttp.ClientTimeout(total=None)
    async with aiohttp.ClientSession(connector=conn, timeout=timeout) as session:
        prompt = " ".join(["word"] * 64)
        await asyncio.gather(*(one(session, sem, ttfts, prompt) for _ in range(requests)))
    print(json.dumps(ttfts))

asyncio.run(main())
"""


def raise_fd_limit() -> None:
    """Children inherit the soft limit: lift it to the hard one for the servers."""
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if soft < hard:
        resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))


def cores(text: str) -> list[int]:
    """'0-5,8' -> [0, 1, 2, 3, 4, 5, 8]."""
    out: list[int] = []
    for part in text.split(","):
        lo, _, hi = part.partition("-")
        out.extend(range(int(lo), int(hi or lo) + 1))
    return out


def free_port() -> int:
    import socket

    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


class Servers:
    """``procs`` sse_server processes on one port, one core each."""

    def __init__(self, args: argparse.Namespace, tmp: Path) -> None:
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        self.files = [tmp / f"ttft-{i}.json" for i in range(args.server_procs)]
        server_cores = cores(args.server_cores)
        self.procs: list[subprocess.Popen[str]] = []
        for i, file in enumerate(self.files):
            cmd = [
                *("taskset", "-c", str(server_cores[i % len(server_cores)])),
                *(sys.executable, str(SERVER), "--port", str(self.port), "--reuse-port"),
                *("--ttft-ms", str(args.ttft_ms), "--itl-ms", str(args.itl_ms)),
                *("--ttft-file", str(file)),
            ]
            proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, text=True)
            assert proc.stdout is not None
            if not proc.stdout.readline().startswith("listening"):
                self.stop(0)
                raise SystemExit("a server process did not start")
            self.procs.append(proc)

    def stop(self, skip: int) -> list[float]:
        """SIGTERM every process; the server's record: every request's TTFT in ms, less the
        ``skip`` earliest (the client's probe and warmup, served before the measured ones)."""
        for proc in self.procs:
            proc.send_signal(signal.SIGTERM)
        for proc in self.procs:
            try:
                proc.communicate(timeout=60)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.communicate()
        rows: list[tuple[float, float]] = []
        for file in self.files:
            if file.exists():
                rows.extend((at, ms) for at, ms in json.loads(file.read_text()))
        rows.sort()
        return [ms for _, ms in rows[skip:]]


def pct(values: list[float], q: float) -> float:
    return float(np.percentile(np.asarray(values), q))


def run_servegate(
    args: argparse.Namespace, url: str, tmp: Path, rate: float | None
) -> dict[str, Any]:
    out = tmp / f"servegate-{rate}.json"
    cmd = [
        *("taskset", "-c", args.client_cores),
        *(sys.executable, "-m", "servegate", "bench", "--url", url, "--model", "test-model"),
        *("--requests", str(args.requests), "--output-len", str(args.output_len)),
        *("--input-len", "64", "--workers", str(args.workers)),
        *("--warmup", str(args.streams if args.warmup is None else args.warmup)),
        *("--percentiles", "50,99", "--json-file", str(out), "--quiet"),
        *(("--rate", str(rate)) if rate else ()),
        *("--concurrency", str(args.streams)),
    ]
    started = time.monotonic()
    done = subprocess.run(cmd, capture_output=True, text=True, check=False)
    wall = time.monotonic() - started
    if done.returncode != 0:
        raise SystemExit(f"servegate bench failed ({done.returncode}): {done.stderr[-2000:]}")
    point = json.loads(out.read_text())["points"][0]
    return {"point": point, "wall_s": round(wall, 1)}


def run_aiohttp(args: argparse.Namespace, url: str) -> list[float]:
    core = str(cores(args.client_cores)[0])
    cmd = [
        *("taskset", "-c", core, sys.executable, "-c", AIOHTTP_CLIENT),
        *(url, str(args.streams), str(args.requests), str(args.output_len)),
    ]
    done = subprocess.run(cmd, capture_output=True, text=True, check=False)
    if done.returncode != 0:
        raise SystemExit(f"the aiohttp client failed: {done.stderr[-2000:]}")
    return list(json.loads(done.stdout))


def measure(args: argparse.Namespace, client: str, rate: float | None = None) -> dict[str, Any]:
    with tempfile.TemporaryDirectory() as folder:
        tmp = Path(folder)
        servers = Servers(args, tmp)
        try:
            if client == "servegate":
                got = run_servegate(args, servers.url, tmp, rate)
                point = got["point"]
                summary, stats = point["summary"], point.get("client") or {}
                client_p50, client_p99 = summary["ttft_ms_p50"], summary["ttft_ms_p99"]
                extra = {
                    "wall_s": got["wall_s"],
                    "completed": point["completed"],
                    "failed": point["failed"],
                    "send_lag_ms_p50": stats.get("send_lag_ms_p50"),
                    "send_lag_ms_p99": stats.get("send_lag_ms_p99"),
                    "loop_lag_ms_p99": stats.get("loop_lag_ms_p99"),
                    "client_cpu_fraction": stats.get("cpu_fraction"),
                    "offered_rate": summary.get("offered_rate"),
                    "sent_rate": summary.get("sent_rate"),
                    "achieved_rate": summary.get("achieved_rate"),
                }
            else:
                ttfts = run_aiohttp(args, servers.url)
                client_p50, client_p99 = pct(ttfts, 50), pct(ttfts, 99)
                extra = {"completed": len(ttfts)}
        finally:
            warmup = args.streams if args.warmup is None else args.warmup
            record = servers.stop(1 + warmup if client == "servegate" else 0)
    server_p50, server_p99 = pct(record, 50), pct(record, 99)
    return {
        "client": client,
        "rate": rate,
        "streams": None if rate else args.streams,
        "requests": args.requests,
        "server_requests": len(record),
        "ttft_p50_ms": round(client_p50, 2),
        "server_ttft_p50_ms": round(server_p50, 2),
        "ttft_p50_error_ms": round(client_p50 - server_p50, 2),
        "ttft_p99_ms": round(client_p99, 2),
        "server_ttft_p99_ms": round(server_p99, 2),
        "ttft_p99_error_ms": round(client_p99 - server_p99, 2),
        **extra,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--streams", type=int, default=10_000)
    parser.add_argument("--requests", type=int, default=20_000)
    parser.add_argument("--workers", type=int, default=8)
    parser.add_argument("--server-procs", type=int, default=6)
    parser.add_argument("--server-cores", default="0-5")
    parser.add_argument("--client-cores", default="6-15")
    parser.add_argument("--ttft-ms", type=float, default=100.0)
    parser.add_argument("--itl-ms", type=float, default=100.0)
    parser.add_argument("--output-len", type=int, default=20)
    parser.add_argument(
        "--warmup",
        type=int,
        default=None,
        help="uncounted requests first (default: --streams, so every connection is open)",
    )
    parser.add_argument(
        "--rate",
        type=float,
        default=5000.0,
        help="the scheduled run's rate (5,000/s of 2 s streams: about 10,000 in flight)",
    )
    parser.add_argument("--clients", default="servegate,aiohttp,servegate")
    parser.add_argument("--out", default=None)
    args = parser.parse_args()
    raise_fd_limit()
    runs: list[dict[str, Any]] = []
    doc = {
        "machine": {"cpus": os.cpu_count(), "python": sys.version.split()[0]},
        "settings": {k: v for k, v in vars(args).items() if k != "out"},
        "runs": runs,
    }
    for client in args.clients.split(","):
        runs.append(measure(args, client))
        print(json.dumps(runs[-1]), file=sys.stderr, flush=True)
    if args.rate:
        runs.append(measure(args, "servegate", rate=args.rate))
        print(json.dumps(runs[-1]), file=sys.stderr, flush=True)
    text = json.dumps(doc, indent=1)
    print(text)
    if args.out:
        Path(args.out).write_text(text)


if __name__ == "__main__":
    main()
