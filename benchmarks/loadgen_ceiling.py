"""Client ceiling: output tokens/s that load generators push through a zero-delay server.

The server (``tests/bench/sse_server.py`` with no delays, or ``servegate sim``) runs on
one core and the load generator on another (``taskset``), so the number is what the
client can drive from a single core. The server counts the tokens it wrote and the span
from its first to its last token write; that count, not the client's own report, is the
figure compared. Each tool gets a fresh server.

    python benchmarks/loadgen_ceiling.py --tools servegate,vllm --repeats 3

Peers run from their own virtual environments: ``/work/venvs/vllm`` (``vllm bench
serve``, with the word-level tokenizer written by ``benchmarks/peer_tokenizer.py``),
``/work/venvs/aiperf`` and ``/work/venvs/guidellm`` when present.
"""

from __future__ import annotations

import argparse
import itertools
import json
import socket
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path

import psutil

ROOT = Path(__file__).resolve().parents[1]
SERVER = ROOT / "tests" / "bench" / "sse_server.py"
VENVS = Path("/work/venvs")
BURST: list[str] = []  # ["--burst"]: each response in one write (set by --burst)
TOKENIZER = VENVS / "tokenizer"
VLLM_MAIN = (
    "import sys\n"
    "from vllm.utils.argparse_utils import FlexibleArgumentParser\n"
    "from vllm.benchmarks.serve import add_cli_args, main\n"
    "p = FlexibleArgumentParser(); add_cli_args(p); main(p.parse_args(sys.argv[1:]))\n"
)


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def get_json(url: str) -> dict:
    with urllib.request.urlopen(url, timeout=10) as resp:
        return json.loads(resp.read())


def start_server(core: str, port: int) -> subprocess.Popen[str]:
    proc = subprocess.Popen(
        ["taskset", "-c", core, sys.executable, str(SERVER), "--port", str(port), *BURST],
        stdout=subprocess.PIPE,
        text=True,
    )
    assert proc.stdout is not None
    assert proc.stdout.readline().startswith("listening")
    return proc


def client_command(tool: str, url: str, args: argparse.Namespace, out: Path) -> list[str]:
    n, c = str(args.requests), str(args.concurrency)
    osl, isl = str(args.output_len), str(args.input_len)
    if tool == "servegate":
        return [
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
            osl,
            "--input-len",
            isl,
            "--json-file",
            str(out),
            "--quiet",
            *(["--workers", str(args.workers)] if args.workers else []),
        ]
    if tool == "vllm":
        return [
            str(VENVS / "vllm/bin/python"),
            "-c",
            VLLM_MAIN,
            "--base-url",
            url,
            "--model",
            "test-model",
            "--tokenizer",
            str(TOKENIZER),
            "--dataset-name",
            "random",
            "--random-input-len",
            isl,
            "--random-output-len",
            osl,
            "--num-prompts",
            n,
            "--max-concurrency",
            c,
            "--save-result",
            "--result-dir",
            str(out.parent),
            "--result-filename",
            out.name,
        ]
    if tool == "aiperf":
        return [
            str(VENVS / "aiperf/bin/aiperf"),
            "profile",
            "--model",
            "test-model",
            "--url",
            url,
            "--endpoint-type",
            "completions",
            "--streaming",
            "--concurrency",
            c,
            "--request-count",
            n,
            "--synthetic-input-tokens-mean",
            isl,
            "--output-tokens-mean",
            osl,
            "--extra-inputs",
            "ignore_eos:true",
            "--tokenizer",
            str(TOKENIZER),
            "--artifact-dir",
            str(out.parent / "aiperf"),
            "--ui-type",
            "none",
        ]
    if tool == "guidellm":
        return [
            str(VENVS / "guidellm/bin/guidellm"),
            "run",
            "--backend",
            f"kind=openai_http,target={url},model=test-model",
            "--profile",
            f"kind=concurrent,streams={c}",
            "--constraint",
            f"kind=max_requests,count={n}",
            "--tokenizer",
            f"kind=hf_auto,model={TOKENIZER}",
            "--data",
            f"kind=synthetic_text,prompt_tokens={isl},output_tokens={osl}",
            "--disable-progress",
        ]
    raise SystemExit(f"unknown tool {tool}")


def client_figure(tool: str, out: Path) -> float | None:
    """The client's own output tokens/s, where its result file is known."""
    try:
        doc = json.loads(out.read_text())
    except (OSError, ValueError):
        return None
    if tool == "servegate":
        return float(doc["points"][0]["summary"]["output_throughput"])
    if tool == "vllm":
        return float(doc["output_throughput"])
    return None


def sample_cpu(proc: subprocess.Popen[str]) -> list[tuple[float, float]]:
    """(time, CPU seconds of the client and its children) every 20 ms until it exits."""
    samples: list[tuple[float, float]] = []
    ps = psutil.Process(proc.pid)
    while proc.poll() is None:
        try:
            total = sum(sum(p.cpu_times()[:2]) for p in [ps, *ps.children(recursive=True)])
        except psutil.Error:
            total = samples[-1][1] if samples else 0.0
        samples.append((time.perf_counter(), total))
        time.sleep(0.02)
    return samples


def cpu_between(samples: list[tuple[float, float]], start: float, end: float) -> float:
    """Client CPU seconds spent between two moments (linear between samples)."""

    def at(t: float) -> float:
        for (t0, c0), (t1, c1) in itertools.pairwise(samples):
            if t0 <= t <= t1:
                return c0 + (c1 - c0) * (t - t0) / (t1 - t0 or 1)
        return samples[-1][1] if t > samples[-1][0] else samples[0][1]

    return at(end) - at(start)


def run_once(tool: str, args: argparse.Namespace) -> dict:
    port = free_port()
    server = start_server(args.server_core, port)
    url = f"http://127.0.0.1:{port}"
    try:
        with tempfile.TemporaryDirectory() as tmp:
            out = Path(tmp) / "result.json"
            get_json(url + "/stats/reset")
            cmd = ["taskset", "-c", args.client_core, *client_command(tool, url, args, out)]
            started = time.perf_counter()
            with tempfile.TemporaryFile("w+") as log:
                proc = subprocess.Popen(
                    cmd, stdout=log, stderr=subprocess.STDOUT, text=True, cwd=tmp
                )
                cpu = sample_cpu(proc)
                wall = time.perf_counter() - started
                if proc.returncode != 0:
                    log.seek(0)
                    sys.stderr.write(log.read()[-4000:])
                    raise SystemExit(f"{tool} failed with exit code {proc.returncode}")
            stats = get_json(url + "/stats")
            used = cpu_between(cpu, stats["first_token_at"], stats["last_token_at"])
            return {
                "tool": tool,
                "server_tok_s": stats["steady_tokens_per_s"],
                "server_span_tok_s": stats["tokens_per_s"],
                "server_tokens": stats["tokens"],
                "client_cpu_s": used,
                "tok_per_cpu_s": stats["tokens"] / used if used else None,
                "client_tok_s": client_figure(tool, out),
                "wall_s": wall,
            }
    finally:
        server.terminate()
        server.wait()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tools", default="servegate,vllm")
    parser.add_argument("--concurrency", type=int, default=256)
    parser.add_argument("--output-len", type=int, default=256)
    parser.add_argument("--input-len", type=int, default=128)
    parser.add_argument("--requests", type=int, default=4096)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--workers", type=int, default=0)
    parser.add_argument("--server-core", default="0")
    parser.add_argument("--client-core", default="1")
    parser.add_argument("--burst", action="store_true", help="server writes whole responses")
    args = parser.parse_args()
    if args.burst:
        BURST.append("--burst")
    tools = args.tools.split(",")
    runs: dict[str, list[dict]] = {tool: [] for tool in tools}
    for _ in range(args.repeats):  # interleaved, so load from elsewhere hits every tool
        for tool in tools:
            try:
                result = run_once(tool, args)
            except SystemExit as exc:  # one failed run of a peer does not end the comparison
                print(f"{tool}: {exc}", file=sys.stderr, flush=True)
                continue
            print(json.dumps(result), file=sys.stderr, flush=True)
            runs[tool].append(result)
    rows = []
    for tool in tools:
        rs = runs[tool]
        if not rs:
            continue
        rows.append(
            (
                tool,
                max(r["server_tok_s"] for r in rs),
                statistics.median(r["server_tok_s"] for r in rs),
                statistics.median(r["tok_per_cpu_s"] or 0.0 for r in rs),
                statistics.median(r["client_tok_s"] or 0.0 for r in rs),
            )
        )
    best = {t: b for t, b, *_ in rows}
    per_cpu = {t: p for t, _b, _m, p, _c in rows}
    print(
        "| tool | server-counted tok/s, best | median | tokens per client CPU-second "
        "| client-reported tok/s | best vs vllm | per CPU-s vs vllm |"
    )
    print("|---|---:|---:|---:|---:|---:|---:|")
    for tool, top, med, cpu, client in rows:
        r1 = f"{top / best['vllm']:.2f}x" if "vllm" in best else "-"
        r2 = f"{cpu / per_cpu['vllm']:.2f}x" if per_cpu.get("vllm") else "-"
        print(f"| {tool} | {top:,.0f} | {med:,.0f} | {cpu:,.0f} | {client:,.0f} | {r1} | {r2} |")


if __name__ == "__main__":
    main()
