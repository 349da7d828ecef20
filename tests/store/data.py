"""Constructed results built from the real classes of the load generator and the gate."""

from __future__ import annotations

from typing import Any

import numpy as np

from servegate.bench.result import ClientStats, PointResult
from servegate.bench.sample import RequestSample
from servegate.bench.settings import BenchSettings
from servegate.gate.verdict import Verdict


def make_result(
    rng: np.random.Generator,
    *,
    throughput: float,
    ttft_ms: float = 50.0,
    itl_ms: float = 10.0,
    requests: int = 40,
    tokens: int = 16,
    noise: float = 0.01,
    errors: int = 0,
    concurrency: int = 4,
) -> PointResult:
    """A point whose throughput and latencies scatter around the given centres."""
    samples = []
    for i in range(requests):
        ttft = rng.lognormal(np.log(ttft_ms), 0.2) / 1000.0
        gaps = rng.lognormal(np.log(itl_ms), 0.2, size=tokens - 1) / 1000.0
        chunks = (ttft, *(ttft + np.cumsum(gaps)))
        samples.append(
            RequestSample(
                index=i,
                send_s=i * 0.01,
                scheduled_s=None,
                chunks_s=tuple(float(c) for c in chunks),
                end_s=float(chunks[-1]) + 0.001,
                usage_output_tokens=tokens,
                usage_input_tokens=32,
                input_len=32,
                output_len=tokens,
            )
        )
    for i in range(errors):
        samples.append(
            RequestSample(
                index=requests + i,
                send_s=i * 0.02,
                scheduled_s=None,
                chunks_s=(),
                end_s=0.004,
                usage_output_tokens=None,
                usage_input_tokens=None,
                input_len=32,
                output_len=tokens,
                error="http-500",
                detail="HTTP 500 Internal Server Error",
            )
        )
    ttfts = np.array([s.chunks_s[0] for s in samples[:requests]]) * 1000
    summary = {
        "output_throughput": float(throughput * (1 + rng.normal(0, noise))),
        "request_throughput": float(throughput / tokens),
        "ttft_ms_mean": float(ttfts.mean()),
        "ttft_ms_p50": float(np.percentile(ttfts, 50)),
        "ttft_ms_p99": float(np.percentile(ttfts, 99)),
    }
    return PointResult(
        settings=BenchSettings(url="http://127.0.0.1:30000", concurrency=concurrency),
        model="sim-model",
        summary=summary,
        completed=requests,
        failed=errors,
        failures={"http-500": errors} if errors else {},
        samples=samples,
        server_metrics={},
        warnings=[],
        client=ClientStats(
            workers=1,
            cpu_fraction=0.1,
            cpu_fraction_mean=0.1,
            loop_lag_ms_p50=0.1,
            loop_lag_ms_p99=0.5,
            loop_lag_ms_max=1.0,
        ),
        started_at="2026-01-01T00:00:00.000+00:00",
    )


def make_verdict(
    status: str = "ready",
    elapsed_s: float = 12.5,
    *,
    kind: str | None = None,
    hint: str | None = None,
    phases: tuple[tuple[str, float, float | None], ...] = (
        ("load_weights", 0.5, 6.0),
        ("capture_cuda_graphs", 6.0, 12.0),
    ),
) -> Verdict:
    """A gate verdict as the gate builds it."""
    data: dict[str, Any] = {
        "schema": "servegate.verdict/1",
        "status": status,
        "elapsed_s": elapsed_s,
        "started_at": "2026-01-01T00:00:00+00:00",
        "decided_at": "2026-01-01T00:00:12+00:00",
        "detected_by": "log" if status == "ready" else "signature",
        "reason": "ready line seen" if status == "ready" else "CUDA out of memory",
        "kind": kind,
        "hint": hint,
        "matched_line": None,
        "exit_code": None if status == "ready" else 1,
        "pid": 4242,
        "engine": "sglang",
        "url": "http://127.0.0.1:30000",
        "log_path": "/tmp/server.log",
        "phases": [{"name": n, "start_s": s, "end_s": e} for n, s, e in phases],
        "tail": [] if status == "ready" else ["Traceback ...", "torch.OutOfMemoryError"],
    }
    return Verdict.from_json(data)
