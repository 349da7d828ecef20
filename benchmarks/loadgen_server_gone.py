"""Connection attempts against a server that went away, and how long the point took to end.

The test server (``tests/bench/sse_server.py --hang-up-after N``) serves N tokens, then
closes every connection, open or new, the moment it is made, and counts those attempts.
Each case runs one load point of 5,000 requests with one worker and reports the
attempts the server counted after the hang-up, the requests sent, and when the point
ended relative to the moment the server stopped answering.

    python benchmarks/loadgen_server_gone.py
"""

from __future__ import annotations

import json
import subprocess
import sys
import time

from loadgen_ceiling import SERVER, free_port

from servegate.bench import BenchSettings, run_point

CASES = [("concurrency 8", 8, None), ("concurrency 64", 64, None), ("rate 300/s", None, 300.0)]


def main() -> None:
    print("| load | attempts after the hang-up | requests sent of 5000 | completed "
          "| stopped answering at (s) | point ended after (s) |")  # fmt: skip
    print("|---|---:|---:|---:|---:|---:|")
    for name, concurrency, rate in CASES:
        port = free_port()
        server = subprocess.Popen(
            [sys.executable, str(SERVER), "--port", str(port), "--hang-up-after", "1000",
             "--ttft-ms", "1", "--itl-ms", "1"],
            stdout=subprocess.PIPE, text=True,
        )  # fmt: skip
        assert server.stdout is not None
        assert server.stdout.readline().startswith("listening")
        try:
            started = time.perf_counter()
            result = run_point(
                BenchSettings(
                    url=f"http://127.0.0.1:{port}",
                    concurrency=concurrency,
                    rate=rate,
                    requests=5000,
                    input_len=4,
                    output_len=10,
                    metrics_url="",
                    workers=1,
                )
            )
            wall = time.perf_counter() - started
        finally:
            server.terminate()
            out, _ = server.communicate()
        stats = json.loads(out.strip().splitlines()[-1])
        gone = result.server_gone_s
        print(
            f"| {name} | {stats['hung_up']} | {len(result.samples)} | {result.completed} | "
            f"{gone:.2f} | {wall:.1f} |"
            if gone is not None
            else f"| {name} | {stats['hung_up']} | {len(result.samples)} | not noticed | | |",
            flush=True,
        )


if __name__ == "__main__":
    main()
