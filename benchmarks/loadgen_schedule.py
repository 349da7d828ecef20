"""Send lag under a rate: how late requests leave after their planned Poisson time.

The test server (``tests/bench/sse_server.py``, 5 ms TTFT, 2 ms between tokens) runs on
one core and the load generator on another; each rate is one load point of
``servegate.bench.run_point`` and the figures are its ``client.send_lag_ms_*`` (actual
minus planned send time, every request). ``tests/bench/test_schedule.py`` only checks
that requests never leave early and that the lag stays far below the gaps; the precise
figure is this one.

    python benchmarks/loadgen_schedule.py --rates 40,200,1000 --requests 2000
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys

from loadgen_ceiling import SERVER, free_port

from servegate.bench import BenchSettings, run_point


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rates", default="40,200,1000")
    parser.add_argument("--requests", type=int, default=2000)
    parser.add_argument("--server-core", default="0")
    parser.add_argument("--client-core", type=int, default=1)
    args = parser.parse_args()
    os.sched_setaffinity(0, {args.client_core})
    port = free_port()
    server = subprocess.Popen(
        ["taskset", "-c", args.server_core, sys.executable, str(SERVER), "--port", str(port),
         "--ttft-ms", "5", "--itl-ms", "2"],
        stdout=subprocess.PIPE, text=True,
    )  # fmt: skip
    try:
        assert server.stdout is not None
        assert server.stdout.readline().startswith("listening")
        print("| rate (req/s) | requests | send lag p50 (ms) | p99 | max | loop lag p99 (ms) |")
        print("|---:|---:|---:|---:|---:|---:|")
        for rate in (float(r) for r in args.rates.split(",")):
            result = run_point(
                BenchSettings(
                    url=f"http://127.0.0.1:{port}",
                    concurrency=None,
                    rate=rate,
                    requests=args.requests,
                    input_len=16,
                    output_len=8,
                    metrics_url="",
                    workers=1,
                )
            )
            c = result.client
            print(
                f"| {rate:g} | {result.completed} | {c.send_lag_ms_p50:.3f} | "
                f"{c.send_lag_ms_p99:.3f} | {c.send_lag_ms_max:.3f} | {c.loop_lag_ms_p99:.3f} |",
                flush=True,
            )
    finally:
        server.terminate()
        server.wait()


if __name__ == "__main__":
    main()
