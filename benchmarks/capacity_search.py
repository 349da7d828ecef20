"""Does ``bench --find-max`` find the simulator's true capacity, in how many probes?

Each run starts a fresh ``servegate sim`` (its own seed, a start counter so the start's
speed factor is reproducible, ``--jitter 0.05 --instance-sd 0.05``), runs ``servegate
bench --slo ... --find-max concurrency|rate`` against it, and compares the capacity
found with the one `capacity_truth.py` computes from the simulator's model for that
start (its speed factor read from the simulator's log, its run factor from its seed).
A run is *within* when the capacity is within +-5 % of the truth. Results go to a
JSON-lines file as each run ends (``--resume`` continues it); the summary is printed as
a markdown table for benchmarks/README.md, with the probes used against the cost of a
dense grid at the same resolution (every concurrency from the lowest to the highest
probed; every 2 % step of rate).

    python benchmarks/capacity_truth.py                       # the truth curves, once
    python benchmarks/capacity_search.py --runs 100           # the full study
    python benchmarks/capacity_search.py --runs 10 --resume   # part of it, continued later
    python benchmarks/capacity_search.py --runs 100 --jobs 12 # runs side by side (16 cores)

With ``--jobs N`` that many runs go side by side, each a simulator and a client process:
give each run a core of its own (N at most the cores less a few), or the simulator's
timers slow down and the capacities found fall below the truth.
"""

from __future__ import annotations

import argparse
import json
import math
import random
import re
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).parent))
from capacity_truth import MODEL, RESULTS, SLOS, capacity

OUT = Path(__file__).with_name("results") / "capacity_search.jsonl"
INSTANCE_SD = 0.05
SEARCH = {
    "concurrency": ["--find-max", "concurrency", "--concurrency", "4,128", "--requests", "100"],
    "rate": ["--find-max", "rate", "--rate", "8", "--max-rate", "256"],
}
RATE_DURATION = 6.0  # seconds of measured arrivals per rate probe (--duration)
GRID_STEP = 0.02  # the dense grid's resolution for rate, as --precision


def _port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def one_run(
    seed: int, over: str, metric: str, curves: dict[str, object], duration: float = RATE_DURATION
) -> dict[str, object]:
    """One simulator start, one search, compared with that start's true capacity."""
    port = _port()
    with tempfile.TemporaryDirectory() as tmp:
        counter = Path(tmp) / "starts"
        log = Path(tmp) / "sim.log"
        sim = subprocess.Popen(
            [sys.executable, "-m", "servegate", "sim", "--engine", "vllm", "--port", str(port),
             "--startup", "0", "--itl-ms", str(MODEL["itl_ms"]), "--ttft-ms", str(MODEL["ttft_ms"]),
             "--batch-slowdown", str(MODEL["batch_slowdown"]), "--jitter", str(MODEL["jitter"]),
             "--max-running", str(MODEL["max_running"]), "--instance-sd", str(INSTANCE_SD),
             "--seed", str(seed), "--start-counter", str(counter)],
            stdout=log.open("w"), stderr=subprocess.STDOUT,
        )  # fmt: skip
        _LIVE.add(sim)
        try:
            _wait_port(port)
            factor = _speed_factor(log)
            out = Path(tmp) / "cap.json"
            bound = SLOS[over][metric]
            started = time.monotonic()
            bench = subprocess.Popen(
                [sys.executable, "-m", "servegate", "bench", "--url", f"http://127.0.0.1:{port}",
                 "--slo", f"{metric}<={bound:g}ms", *SEARCH[over], "--precision", "2%",
                 *(["--duration", f"{duration:g}"] if over == "rate" else []),
                 "--input-len", "16", "--output-len", str(MODEL["output_len"]),
                 "--seed", str(seed), "--json-file", str(out), "-q"],
                stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True,
            )  # fmt: skip
            _LIVE.add(bench)
            try:
                _, err = bench.communicate(timeout=900)
            finally:
                _LIVE.discard(bench)
            wall = time.monotonic() - started
            if bench.returncode != 0:
                raise RuntimeError(err.strip())
            cap = json.loads(out.read_text())["capacity"]
        finally:
            _LIVE.discard(sim)
            sim.terminate()
            sim.wait(timeout=30)
    run_factor = max(0.2, 1.0 + MODEL["jitter"] / 4 * random.Random(f"{seed}:0").gauss(0.0, 1.0))
    g = run_factor / factor
    truth = capacity(curves, over, metric, SLOS[over][metric], g)
    value = cap["value"]
    probes = cap["probes"]
    loads = [p["load"] for p in probes]
    if over == "concurrency":
        grid = int(max(loads) - min(loads) + 1)
    else:
        grid = math.ceil(math.log(max(loads) / min(loads)) / math.log(1 + GRID_STEP)) + 1
    error = None if value is None else (value - truth) / truth
    return {
        "seed": seed,
        "over": over,
        "slo": f"{metric}<={SLOS[over][metric]:g}ms",
        **({"duration_s": duration} if over == "rate" else {}),
        "speed_factor": factor,
        "run_factor": run_factor,
        "truth": truth,
        "value": value,
        "low": cap["low"],
        "high": cap["high"],
        "censored": cap["censored"],
        "error": error,
        "within_5pct": error is not None and abs(error) <= 0.05,
        "covered": cap["low"] is not None and cap["low"] <= truth <= cap["high"],
        "probes": len(probes),
        "stopped_early": sum(1 for p in probes if p["stopped_early"]),
        "grid_points": grid,
        "wall_s": round(wall, 1),
    }


_LIVE: set[subprocess.Popen[Any]] = set()  # the simulators running, for a clean end


def _stop_all(*_: object) -> None:
    """On SIGTERM/SIGINT or the end: every simulator still running is stopped."""
    for proc in list(_LIVE):
        proc.kill()
    raise SystemExit(143)


def _speed_factor(log: Path) -> float:
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        found = re.search(r"instance speed factor ([0-9.]+)", log.read_text())
        if found:
            return float(found.group(1))
        time.sleep(0.05)
    raise RuntimeError("the simulator logged no instance speed factor")


def _wait_port(port: int) -> None:
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        try:
            socket.create_connection(("127.0.0.1", port), timeout=1).close()
            return
        except OSError:
            time.sleep(0.05)
    raise RuntimeError("the simulator did not listen")


def summary(rows: list[dict[str, object]]) -> str:
    """The markdown table of the runs so far."""
    lines = [
        "| search | SLO | runs | within +-5 % | abs error median / max | interval covers truth "
        "| probes median / max | dense grid | wall s median |",
        "|---|---|---:|---:|---:|---:|---:|---:|---:|",
    ]
    keys = sorted({(str(r["over"]), str(r["slo"])) for r in rows})
    for over, slo in keys:
        rs = [r for r in rows if r["over"] == over and r["slo"] == slo]
        errs = [abs(float(r["error"])) for r in rs if r["error"] is not None]  # type: ignore[arg-type]
        probes = [int(r["probes"]) for r in rs]  # type: ignore[call-overload]
        lines.append(
            f"| {over} | {slo} | {len(rs)} | {sum(1 for r in rs if r['within_5pct'])} "
            f"| {statistics.median(errs):.1%} / {max(errs):.1%} "
            f"| {sum(1 for r in rs if r['covered'])} "
            f"| {statistics.median(probes):g} / {max(probes)} "
            f"| {statistics.median(int(r['grid_points']) for r in rs):g} "  # type: ignore[call-overload]
            f"| {statistics.median(float(r['wall_s']) for r in rs):.0f} |"  # type: ignore[arg-type]
        )
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", type=int, default=100, help="seeded runs per search and SLO")
    parser.add_argument("--over", choices=["concurrency", "rate", "both"], default="both")
    parser.add_argument(
        "--slo", choices=["0", "1", "both"], default="both", help="the first, second or both SLOs"
    )
    parser.add_argument("--out", type=Path, default=OUT)
    parser.add_argument(
        "--duration", type=float, default=RATE_DURATION, help="seconds a rate probe measures"
    )
    parser.add_argument("--jobs", type=int, default=1, help="runs side by side (a core each)")
    parser.add_argument("--resume", action="store_true", help="keep the runs already in --out")
    parser.add_argument("--summary", action="store_true", help="only print the table of --out")
    args = parser.parse_args()
    curves = json.loads(RESULTS.read_text())
    rows: list[dict[str, object]] = []
    if (args.resume or args.summary) and args.out.exists():
        rows = [json.loads(line) for line in args.out.read_text().splitlines() if line]
    elif not args.summary:
        args.out.write_text("")
    if not args.summary:
        done = {(r["seed"], r["over"], r["slo"]) for r in rows}
        overs = ["concurrency", "rate"] if args.over == "both" else [args.over]
        todo = []
        for seed in range(args.runs):
            for over in overs:
                for metric in SLOS[over]:
                    if args.slo != "both" and metric != list(SLOS[over])[int(args.slo)]:
                        continue
                    if (seed, over, f"{metric}<={SLOS[over][metric]:g}ms") in done:
                        continue
                    todo.append((seed, over, metric))
        lock = threading.Lock()

        def one(job: tuple[int, str, str]) -> None:
            row = one_run(*job, curves, args.duration)
            with lock:  # each run's row as it ends, whole lines only
                rows.append(row)
                with args.out.open("a") as f:
                    f.write(json.dumps(row) + "\n")
                print(json.dumps(row), file=sys.stderr, flush=True)

        signal.signal(signal.SIGTERM, _stop_all)
        pool = ThreadPoolExecutor(max_workers=max(1, args.jobs))
        try:
            for future in [pool.submit(one, job) for job in todo]:
                future.result()
        except BaseException:
            pool.shutdown(wait=False, cancel_futures=True)
            for proc in list(_LIVE):
                proc.kill()
            raise
        pool.shutdown()
    print(summary(rows))


if __name__ == "__main__":
    main()
