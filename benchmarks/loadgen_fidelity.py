"""Fidelity: does the load generator report the latencies the server really produced?

A server with exactly 50 ms TTFT and 10 ms between tokens (``tests/bench/sse_server.py``,
or ``servegate sim`` with no batch slowdown and no jitter) is loaded at concurrency 64,
server and client on separate cores. The server keeps its own record of when it wrote
each first token; the goal is our TTFT p50 within 2 ms of that record's p50 and our ITL
p50 within 1 ms of 10 ms.

    python benchmarks/loadgen_fidelity.py --server own --tools servegate,vllm
    python benchmarks/loadgen_fidelity.py --server sim
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from loadgen_ceiling import SERVER, TOKENIZER, VENVS, VLLM_MAIN, free_port, get_json


def start(kind: str, core: str, port: int, record: Path) -> subprocess.Popen[str]:
    """Start the exact-delay server and wait until it serves."""
    if kind == "own":
        cmd = [
            sys.executable,
            str(SERVER),
            "--port",
            str(port),
            "--ttft-ms",
            "50",
            "--itl-ms",
            "10",
        ]
    else:
        cmd = [
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
            "50",
            "--itl-ms",
            "10",
            "--batch-slowdown",
            "0",
            "--jitter",
            "0",
            "--prefill-tok-s",
            "0",
            "--max-running",
            "1024",
            "--record-file",
            str(record),
        ]
    proc = subprocess.Popen(
        ["taskset", "-c", core, *cmd], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL
    )
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        try:
            get_json(f"http://127.0.0.1:{port}/v1/models")
            return proc  # type: ignore[return-value]
        except OSError:
            time.sleep(0.1)
    proc.kill()
    raise SystemExit("the server did not come up")


def server_ttft_p50(kind: str, url: str, record: Path) -> float:
    """The server's own TTFT p50 in ms over the measured requests."""
    if kind == "own":
        return float(get_json(url + "/stats")["ttft_ms_p50"])
    rows = [json.loads(line) for line in record.read_text().splitlines() if line.strip()]
    rows = [r for r in rows if r.get("completion_tokens", 0) > 2]  # not the 2-token probe
    return statistics.median(float(r["ttft_ms"]) for r in rows)


def run(tool: str, kind: str, args: argparse.Namespace) -> dict:
    port = free_port()
    url = f"http://127.0.0.1:{port}"
    with tempfile.TemporaryDirectory() as tmp:
        record, out = Path(tmp) / "record.jsonl", Path(tmp) / "out.json"
        server = start(kind, args.server_core, port, record)
        try:
            if kind == "own":
                get_json(url + "/stats/reset")
            n, c = str(args.requests), str(args.concurrency)
            if tool == "servegate":
                cmd = [
                    sys.executable,
                    "-m",
                    "servegate",
                    "bench",
                    "--url",
                    url,
                    "--concurrency",
                    c,
                    "--requests",
                    n,
                    "--output-len",
                    str(args.output_len),
                    "--input-len",
                    "64",
                    "--json-file",
                    str(out),
                    "--quiet",
                ]
            else:
                cmd = [
                    str(VENVS / "vllm/bin/python"),
                    "-c",
                    VLLM_MAIN,
                    "--base-url",
                    url,
                    "--model",
                    "test-model" if kind == "own" else "meta-llama/Llama-3.1-8B-Instruct",
                    "--tokenizer",
                    str(TOKENIZER),
                    "--dataset-name",
                    "random",
                    "--random-input-len",
                    "64",
                    "--random-output-len",
                    str(args.output_len),
                    "--num-prompts",
                    n,
                    "--max-concurrency",
                    c,
                    "--save-result",
                    "--result-dir",
                    tmp,
                    "--result-filename",
                    out.name,
                    "--disable-tqdm",
                ]
            subprocess.run(
                ["taskset", "-c", args.client_core, *cmd], check=True, capture_output=True
            )
            doc = json.loads(out.read_text())
            if tool == "servegate":
                summary = doc["points"][0]["summary"]
                ttft, itl = summary["ttft_ms_p50"], summary["itl_ms_p50"]
                client = doc["points"][0]["client"]
            else:
                ttft, itl, client = doc["median_ttft_ms"], doc["median_itl_ms"], None
            truth = server_ttft_p50(kind, url, record)
        finally:
            server.terminate()
            server.wait()
    return {
        "tool": tool,
        "server": kind,
        "ttft_p50_ms": ttft,
        "server_ttft_p50_ms": truth,
        "ttft_error_ms": ttft - truth,
        "itl_p50_ms": itl,
        "itl_error_ms": itl - 10.0,
        "client": client,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--server", choices=["own", "sim"], default="own")
    parser.add_argument("--tools", default="servegate")
    parser.add_argument("--concurrency", type=int, default=64)
    parser.add_argument("--requests", type=int, default=640)
    parser.add_argument("--output-len", type=int, default=64)
    parser.add_argument("--server-core", default="0")
    parser.add_argument("--client-core", default="1")
    args = parser.parse_args()
    print("| tool | server | TTFT p50 (ms) | server's TTFT p50 | error | ITL p50 (ms) | error |")
    print("|---|---|---:|---:|---:|---:|---:|")
    for tool in args.tools.split(","):
        r = run(tool, args.server, args)
        print(json.dumps(r), file=sys.stderr)
        print(
            f"| {tool} | {r['server']} | {r['ttft_p50_ms']:.2f} | {r['server_ttft_p50_ms']:.2f} "
            f"| {r['ttft_error_ms']:+.2f} | {r['itl_p50_ms']:.2f} | {r['itl_error_ms']:+.2f} |",
            flush=True,
        )


if __name__ == "__main__":
    main()
