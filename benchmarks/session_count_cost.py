"""What counting every grown turn costs the client: multiturn sessions with and without
``--tokenizer`` (issue 24).

With a tokenizer each turn after a session's first is counted whole just before it is
sent (`servegate.bench.sessions`): one ``/tokenize`` call with ``--tokenizer server``
(vLLM's shape, asked from a thread), a local BPE encode with ``--tokenizer PATH``.
The simulator (vLLM's shape, zero TTFT and ITL, a real BPE tokenizer.json trained at
start as the tests' is) runs on one core, the client (this process, one worker, the
point's own stages: prompts, plan, execute) on another. The client's cost is its CPU
seconds over the measured phase, every thread of the process included (the
``/tokenize`` threads too), so its one-core ceiling is requests / CPU seconds; the
request rate achieved is printed beside it (on a shared machine it follows the
server's core and the neighbours more than the client). The variants alternate, each
repeated.

    python benchmarks/session_count_cost.py --api chat --requests 2000 --repeats 3
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from tests.bpe import train_bpe  # noqa: E402
from tests.conftest import free_port  # noqa: E402
from tests.sim.helpers import Sim, wait_http  # noqa: E402

from servegate.bench.dataset import build_prompts  # noqa: E402
from servegate.bench.execute import execute  # noqa: E402
from servegate.bench.plan import plan_workers  # noqa: E402
from servegate.bench.preflight import discover_model, request_headers  # noqa: E402
from servegate.bench.settings import BenchSettings  # noqa: E402
from servegate.bench.tokens import ServerCounter, make_counter  # noqa: E402


def run_point(args: argparse.Namespace, url: str, tokenizer: str | None) -> dict[str, float]:
    """One point, as `servegate.bench.point.run_point` runs it: its client CPU seconds
    over the measured phase (all threads), its request rate and prompt mismatches."""
    settings = BenchSettings(
        url=url,
        api=args.api,
        dataset=f"multiturn:turns={args.turns},first={args.first},user={args.user}",
        requests=args.requests,
        concurrency=args.concurrency,
        output_len=args.output_len,
        tokenizer=tokenizer,
        workers=1,
        metrics_url="",
    )
    headers = request_headers(settings)
    model = discover_model(settings.base_url, headers)
    counter = None
    if tokenizer is not None:
        counter = make_counter(
            tokenizer, base_url=settings.base_url, model=model, authorization=None
        )
    prompts = build_prompts(
        dataset=settings.dataset, count=args.requests, input_len=settings.input_len,
        output_len=args.output_len, api=args.api, model=model, seed=0, ignore_eos=True,
        counter=counter,
    )  # fmt: skip
    if isinstance(counter, ServerCounter) and args.api == "chat":
        counter.prepare_conversations()
    plans = plan_workers(settings, headers, [], prompts, counter)
    began: list[tuple[float, float]] = []
    results = execute(plans, lambda: began.append((time.process_time(), time.perf_counter())), None)
    cpu_s, wall_s = time.process_time() - began[0][0], time.perf_counter() - began[0][1]
    done = [s for s in results[0].samples if s.ok]
    diffs = [s for s in done if s.usage_input_tokens != s.input_len]
    return {
        "ceiling": len(done) / cpu_s,
        "cpu_ms": cpu_s * 1000 / len(done),
        "rate": len(done) / wall_s,
        "mismatched": len(diffs),
        "compared": len(done),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--api", default="chat", choices=["chat", "completions"])
    parser.add_argument("--requests", type=int, default=1200)
    parser.add_argument("--concurrency", type=int, default=32)
    parser.add_argument("--turns", type=int, default=4)
    parser.add_argument("--first", type=int, default=256)
    parser.add_argument("--user", type=int, default=64)
    parser.add_argument("--output-len", type=int, default=16)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--server-core", default="1")
    parser.add_argument("--client-core", default="0")
    args = parser.parse_args()
    os.sched_setaffinity(0, {int(args.client_core)})
    with tempfile.TemporaryDirectory() as tmp:
        bpe = train_bpe(Path(tmp) / "bpe")
        sim = Sim(
            free_port(), "--engine", "vllm", "--startup", "0.2", "--ttft-ms", "0",
            "--itl-ms", "0", "--tokenizer", str(bpe),
        )  # fmt: skip
        sim.argv = ["taskset", "-c", args.server_core, *sim.argv]
        variants = {
            "no tokenizer": None,
            "--tokenizer server": "server",
            "--tokenizer PATH": str(bpe),
        }
        runs: dict[str, list[dict[str, float]]] = {name: [] for name in variants}
        with sim:
            wait_http(sim.url + "/health", timeout=30)
            for _ in range(args.repeats):
                for name, tokenizer in variants.items():
                    runs[name].append(run_point(args, sim.url, tokenizer))
    print(f"api {args.api}, {args.requests} requests, c={args.concurrency}, "
          f"multiturn turns={args.turns} first={args.first} user={args.user}, "
          f"output {args.output_len}")  # fmt: skip
    print(
        "| variant | client CPU ms / request (each run) | one-core ceiling, req/s (median) |"
        " achieved req/s (median) | requested != usage |"
    )
    print("|---|---|---:|---:|---:|")
    for name, rows in runs.items():
        print(
            f"| {name} | {', '.join(format(r['cpu_ms'], '.3f') for r in rows)} | "
            f"{statistics.median(r['ceiling'] for r in rows):.0f} | "
            f"{statistics.median(r['rate'] for r in rows):.0f} | "
            f"{sum(int(r['mismatched']) for r in rows)} of "
            f"{sum(int(r['compared']) for r in rows)} |"
        )


if __name__ == "__main__":
    main()
