"""The load generator: one load point at a time against an OpenAI-compatible server.

    from servegate.bench import BenchSettings, run_point
    result = run_point(BenchSettings(url="http://127.0.0.1:8000", concurrency=16))
    result.summary["output_throughput"], result.summary["ttft_ms_p50"]

Metric definitions are vLLM's (see `servegate.bench.metrics`); every request's raw
timings are kept in `PointResult.samples`.
"""

from __future__ import annotations

from servegate.bench.result import SCHEMA, ClientStats, PointResult, envelope
from servegate.bench.runner import Progress, arrival_offsets, discover_model, run_point
from servegate.bench.sample import RequestSample
from servegate.bench.settings import BenchSettings, default_workers

__all__ = [
    "SCHEMA",
    "BenchSettings",
    "ClientStats",
    "PointResult",
    "Progress",
    "RequestSample",
    "arrival_offsets",
    "default_workers",
    "discover_model",
    "envelope",
    "run_point",
]
