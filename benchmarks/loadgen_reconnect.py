"""Kept-alive connections closed by the server: requests lost before, and what a resend costs.

The test server (``tests/bench/sse_server.py``) runs three ways: keeping connections
alive; with ``--close-after-stream MS``, closing every connection MS after each streamed
body without saying so; and with ``--fin-first`` too, its write side shut right after the
body (as llama.cpp's server does after every stream, its final CRLF a separate write).
For each concurrency the script reports completed and failed requests, ``reconnects``,
the requests the server dropped unanswered, and TTFT p50/p99, so the TTFT cost of
sending again on a fresh connection can be read off.

    python benchmarks/loadgen_reconnect.py --concurrency 1,4,16 --requests 200
"""

from __future__ import annotations

import argparse
import json
import sys
import urllib.request
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from tests.bench.conftest import start_server, stop_server  # noqa: E402

from servegate.bench import BenchSettings, run_point  # noqa: E402


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--concurrency", default="1,4,16")
    parser.add_argument("--requests", type=int, default=200)
    parser.add_argument("--close-ms", type=float, default=50.0)
    parser.add_argument("--ttft-ms", type=float, default=5.0)
    parser.add_argument("--itl-ms", type=float, default=1.0)
    parser.add_argument("--output-len", type=int, default=16)
    args = parser.parse_args()
    delays = ["--ttft-ms", str(args.ttft_ms), "--itl-ms", str(args.itl_ms)]
    print(
        "| server | c | completed | failed | reconnects | dropped by server | TTFT p50 ms | p99 |"
    )
    print("|---|---:|---:|---:|---:|---:|---:|---:|")
    for name, extra in (
        ("keeps connections", []),
        (
            f"closes {args.close_ms:g} ms after each stream",
            ["--close-after-stream", str(args.close_ms)],
        ),
        (
            f"FIN right after each stream, closes {args.close_ms:g} ms later",
            ["--close-after-stream", str(args.close_ms), "--fin-first"],
        ),
    ):
        for c in (int(x) for x in args.concurrency.split(",")):
            proc, url = start_server(*delays, *extra)
            try:
                r = run_point(
                    BenchSettings(
                        url=url,
                        concurrency=c,
                        requests=args.requests,
                        input_len=8,
                        output_len=args.output_len,
                    )
                )
                with urllib.request.urlopen(url + "/stats", timeout=5) as resp:
                    dropped = json.loads(resp.read())["discarded"]
            finally:
                stop_server(proc)
            s = r.summary
            print(
                f"| {name} | {c} | {r.completed} | {r.failed} | {r.reconnects} | {dropped} | "
                f"{s['ttft_ms_p50']:.2f} | {s['ttft_ms_p99']:.2f} |",
                flush=True,
            )


if __name__ == "__main__":
    main()
