"""The load generator: one load point at a time against an OpenAI-compatible server.

    from servegate.bench import BenchSettings, run_point
    result = run_point(BenchSettings(url="http://127.0.0.1:8000", concurrency=16))
    result.summary["output_throughput"], result.summary["ttft_ms_p50"]

Metric definitions are vLLM's (see `servegate.bench.metrics`); every request's raw
timings are kept in `PointResult.samples`.

The names are imported when first used, so that the store and the reports, which read
`servegate.bench.metrics`, do not pay for the load generator's imports.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from servegate.bench.capacity import (
        Probe,
        Search,
        SearchOptions,
        drain,
        fit_capacity,
        measure_probe,
        probe_settings,
        read_probe,
        without_lead_in,
    )
    from servegate.bench.point import run_point
    from servegate.bench.preflight import discover_model
    from servegate.bench.progress import Progress
    from servegate.bench.result import SCHEMA, ClientStats, PointResult, envelope
    from servegate.bench.sample import RequestSample
    from servegate.bench.schedule import arrival_offsets
    from servegate.bench.settings import BenchSettings, default_workers
    from servegate.bench.slo import Target, parse_slo, parse_target
    from servegate.bench.spec import DatasetSpec, parse_dataset, spec_from_table

# public name -> the module that defines it
_WHERE = {
    "Probe": "capacity",
    "Search": "capacity",
    "SearchOptions": "capacity",
    "drain": "capacity",
    "fit_capacity": "capacity",
    "measure_probe": "capacity",
    "probe_settings": "capacity",
    "read_probe": "capacity",
    "without_lead_in": "capacity",
    "SCHEMA": "result",
    "ClientStats": "result",
    "PointResult": "result",
    "envelope": "result",
    "Progress": "progress",
    "arrival_offsets": "schedule",
    "discover_model": "preflight",
    "run_point": "point",
    "RequestSample": "sample",
    "BenchSettings": "settings",
    "default_workers": "settings",
    "DatasetSpec": "spec",
    "parse_dataset": "spec",
    "spec_from_table": "spec",
    "Target": "slo",
    "parse_slo": "slo",
    "parse_target": "slo",
}

__all__ = [
    "SCHEMA",
    "BenchSettings",
    "ClientStats",
    "DatasetSpec",
    "PointResult",
    "Probe",
    "Progress",
    "RequestSample",
    "Search",
    "SearchOptions",
    "Target",
    "arrival_offsets",
    "default_workers",
    "discover_model",
    "drain",
    "envelope",
    "fit_capacity",
    "measure_probe",
    "parse_dataset",
    "parse_slo",
    "parse_target",
    "probe_settings",
    "read_probe",
    "run_point",
    "spec_from_table",
    "without_lead_in",
]


def __getattr__(name: str) -> Any:
    """Import a public name's module on first use."""
    module = _WHERE.get(name)
    if module is None:
        raise AttributeError(f"module 'servegate.bench' has no attribute {name!r}")
    value = getattr(importlib.import_module(f"servegate.bench.{module}"), name)
    globals()[name] = value
    return value
