"""The flight recorder's telemetry: what a server's process tree, host and GPUs do."""

from servegate.telemetry.model import Activity, Bound, GpuSample, ProcSample, Snapshot

__all__ = ["Activity", "Bound", "GpuSample", "ProcSample", "Snapshot"]
