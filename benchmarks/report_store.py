"""Cost of the store and the reports at campaign scale.

Writes a campaign of 4 variants x 3 load points x 3 repeats x 200 requests x 256 output
tokens (chunk times kept for every request) into a fresh SQLite file, then times:
recording one point (one transaction with its 200 samples), ``done_points``, reading and
comparing the campaign (2000 bootstrap resamples per comparison), and each renderer.

    python benchmarks/report_store.py [--requests 200] [--tokens 256]
"""

from __future__ import annotations

import argparse
import platform
import statistics
import tempfile
import time
from pathlib import Path

import numpy as np

from servegate.report import build_report, render_csv, render_json, render_markdown
from servegate.report.console import console_text
from servegate.report.html import render_html
from servegate.store import Store


def _point(rng: np.random.Generator, requests: int, tokens: int, speed: float) -> dict:
    samples = []
    for i in range(requests):
        ttft = rng.lognormal(np.log(40.0), 0.2)
        chunks = ttft + np.concatenate(
            [[0.0], np.cumsum(rng.lognormal(np.log(9.0 / speed), 0.2, tokens - 1))]
        )
        samples.append({"send_s": i * 0.01, "chunk_ms": chunks.tolist(), "output_tokens": tokens})
    return {
        "summary": {"output_throughput": float(1000 * speed * (1 + rng.normal(0, 0.01)))},
        "completed": requests,
        "failed": 0,
        "samples": samples,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--requests", type=int, default=200)
    parser.add_argument("--tokens", type=int, default=256)
    args = parser.parse_args()
    rng = np.random.default_rng(0)
    folder = Path(tempfile.mkdtemp(prefix="servegate-bench-"))
    db = folder / "servegate.db"
    record_ms: list[float] = []
    with Store.open(db) as store:
        cid = store.campaign("bench", "cfg", "baseline")
        for v, speed in enumerate((1.0, 1.05, 1.0, 1.3)):
            name = ["baseline", "fast", "same", "spec"][v]
            aid = store.start_attempt(
                cid,
                variant=name,
                server_key=name,
                command=["x"],
                env={},
                host="local",
                versions={},
                git_commit=None,
            )
            store.record_verdict(aid, {"status": "ready", "elapsed_s": 10.0, "phases": []})
            for load in (1, 16, 64):
                for rep in range(3):
                    point = _point(rng, args.requests, args.tokens, speed)
                    start = time.perf_counter()
                    store.record_point(
                        aid, variant=name, load=f"c={load}", repeat=rep, result=point
                    )
                    record_ms.append((time.perf_counter() - start) * 1000)
        start = time.perf_counter()
        done = store.done_points(cid)
        done_ms = (time.perf_counter() - start) * 1000
        start = time.perf_counter()
        report = build_report(store, "bench")
        compare_s = time.perf_counter() - start
    timings = {}
    for name, render in (
        ("console", console_text),
        ("markdown", render_markdown),
        ("json", render_json),
        ("csv", render_csv),
        ("html", render_html),
    ):
        start = time.perf_counter()
        out = render(report)
        timings[name] = (time.perf_counter() - start, len(out))
    samples = len(done) * args.requests
    size = sum(p.stat().st_size for p in folder.iterdir())
    print(f"machine: {platform.processor() or platform.machine()}, {platform.platform()}")
    print(f"points {len(done)}, samples {samples}, chunk times {samples * args.tokens}")
    print(
        f"record_point: median {statistics.median(record_ms):.1f} ms, "
        f"max {max(record_ms):.1f} ms ({args.requests} samples each)"
    )
    print(f"done_points: {done_ms:.2f} ms")
    print(f"database: {size / 1e6:.1f} MB ({size / samples:.0f} bytes per request)")
    print(f"read + compare ({len(report.comparisons)} comparisons): {compare_s:.2f} s")
    for name, (secs, length) in timings.items():
        print(f"render {name}: {secs:.2f} s, {length / 1e3:.0f} kB")


if __name__ == "__main__":
    main()
