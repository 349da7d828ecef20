"""The flight recorder's telemetry: what a server's process tree, host and GPUs do."""

from servegate.telemetry.model import Activity, Bound, GpuSample, ProcSample, Snapshot
from servegate.telemetry.sampler import Sampler
from servegate.telemetry.summary import TelemetrySummary, summarize

__all__ = [
    "Activity",
    "Bound",
    "GpuSample",
    "ProcSample",
    "Sampler",
    "Snapshot",
    "TelemetrySummary",
    "summarize",
]
