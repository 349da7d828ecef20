"""What the store hands back (read rows), and how it reads one request's sample.

What the store takes is typed in ``servegate.store.inputs``; the statuses in
``servegate.store.status``.
"""

from __future__ import annotations

import dataclasses
import json
import math
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import numpy.typing as npt

from servegate.bench import metrics
from servegate.store.status import AttemptStatus, CampaignStatus

FloatArray = npt.NDArray[np.float64]


@dataclass(frozen=True, slots=True, kw_only=True)
class CampaignInfo:
    """One stored campaign."""

    id: int
    name: str
    baseline: str
    status: CampaignStatus
    created_at: str
    updated_at: str
    config_text: str


@dataclass(frozen=True, slots=True, kw_only=True)
class PhaseInfo:
    """One startup phase of an attempt, in seconds since the launch."""

    name: str
    start_s: float
    end_s: float | None


@dataclass(frozen=True, slots=True, kw_only=True)
class AttemptInfo:
    """One start of a server for a variant, with its verdict, phases and stop."""

    id: int
    variant: str
    server_key: str
    cold: bool  # the first start of this server configuration in the campaign
    command: tuple[str, ...]
    env: dict[str, str]
    host: str
    versions: dict[str, Any]
    git_commit: str | None
    status: AttemptStatus
    reason: str | None
    started_at: str
    ended_at: str | None
    verdict: dict[str, Any] | None  # the servegate.verdict/1 object
    phases: tuple[PhaseInfo, ...] = ()
    stop_killed: tuple[int, ...] | None = None
    stop_duration_s: float | None = None
    stop_port_free: bool | None = None
    start: int | None = None  # which start of its server configuration (1, 2, ...)
    failed_variants: tuple[str, ...] = ()  # a failure of these only; none: the whole start
    node: str | None = None  # the cluster node it ran on; None: the runner's own machine
    gpu_model: str | None = None  # the GPU model it measured on; None: not known

    @property
    def startup_s(self) -> float | None:
        """Seconds from launch to READY, or None when the server never became ready."""
        if self.verdict is None or self.verdict.get("status") != "ready":
            return None
        value = self.verdict.get("elapsed_s")
        return float(value) if isinstance(value, int | float) else None


@dataclass(frozen=True, slots=True, kw_only=True)
class PointInfo:
    """One measured load point of one variant, one repeat."""

    id: int
    attempt_id: int
    variant: str
    load: str  # "c=16", "rate=4", ...
    repeat: int
    recorded_at: str
    completed: int
    failed: int
    failures: dict[str, int]
    summary: dict[str, float]
    server_metrics: dict[str, Any]
    warnings: tuple[str, ...]
    detail: dict[str, Any]  # settings, model, client load, ... (no samples)


@dataclass(frozen=True, slots=True, kw_only=True)
class CapacityInfo:
    """The capacity one start of a variant found (``find_max``): the search's JSON."""

    variant: str
    start: int
    attempt_id: int
    data: dict[str, Any]  # servegate.bench.capacity.Capacity.to_json(), with ``crashed``


@dataclass(frozen=True, slots=True, kw_only=True)
class Samples:
    """Per-request measurements of one or more points, as arrays (milliseconds).

    ``ttft_ms``, ``e2el_ms`` and ``output_tokens`` hold the completed requests only;
    ``itl_ms`` pools every gap between consecutive content chunks of those requests.
    """

    ttft_ms: FloatArray
    e2el_ms: FloatArray
    output_tokens: FloatArray
    itl_ms: FloatArray
    errors: dict[str, int] = field(default_factory=dict)

    @property
    def count(self) -> int:
        """Completed requests."""
        return int(self.ttft_ms.size)


# --- reading other layers' objects -------------------------------------------------------


def as_dict(obj: Any) -> dict[str, Any]:
    """A plain dict view of a result object: its ``to_json()``, fields or mapping."""
    if obj is None:
        return {}
    if isinstance(obj, Mapping):
        return dict(obj)
    to_json = getattr(obj, "to_json", None)
    if callable(to_json):
        data = to_json()
        if isinstance(data, Mapping):
            return dict(data)
    if dataclasses.is_dataclass(obj) and not isinstance(obj, type):
        return {f.name: getattr(obj, f.name) for f in dataclasses.fields(obj)}
    return {k: v for k, v in vars(obj).items() if not k.startswith("_")}


def pick(data: Mapping[str, Any], *names: str) -> Any:
    """The first of ``names`` present (and not None) in ``data``."""
    for name in names:
        value = data.get(name)
        if value is not None:
            return value
    return None


def number(value: Any) -> float | None:
    """A finite float, or None for anything else (None, NaN, text)."""
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None
    out = float(value)
    return out if math.isfinite(out) else None


def clean_json(value: Any) -> Any:
    """JSON-safe copy: non-finite floats become None, tuples lists, unknowns text."""
    if isinstance(value, float):
        return value if math.isfinite(value) else None
    if isinstance(value, Mapping):
        return {str(k): clean_json(v) for k, v in value.items()}
    if isinstance(value, list | tuple | set | frozenset):
        return [clean_json(v) for v in value]
    if value is None or isinstance(value, bool | int | str):
        return value
    if hasattr(value, "to_json"):
        return clean_json(value.to_json())
    return str(value)


def dumps(value: Any) -> str:
    """Compact JSON text of ``clean_json(value)``."""
    return json.dumps(clean_json(value), allow_nan=False, sort_keys=False)


@dataclass(frozen=True, slots=True, kw_only=True)
class SampleRow:
    """One request as stored: times relative to its own send, in milliseconds."""

    send_s: float | None
    ttft_ms: float | None
    e2el_ms: float | None
    output_tokens: int | None
    error_kind: str | None
    chunk_ms: tuple[float, ...]


def sample_row(sample: Any) -> SampleRow:
    """Read one ``RequestSample`` (or its ``to_json()`` dict) into the stored shape.

    ``RequestSample`` times are seconds: ``send_s`` from the start of the point,
    ``chunks_s`` from the request's own send. Dicts may give ``*_ms`` fields instead.
    """
    data = sample if isinstance(sample, Mapping) else _sample_fields(sample)
    chunk_ms: tuple[float, ...] = ()
    if data.get("chunk_ms") is not None:
        chunk_ms = tuple(float(t) for t in data["chunk_ms"])
    elif data.get("chunks_s") is not None:
        chunk_ms = tuple(float(t) * 1000.0 for t in data["chunks_s"])
    ttft = number(data.get("ttft_ms"))
    if ttft is None:
        ttft_s = number(data.get("ttft_s"))
        ttft = ttft_s * 1000.0 if ttft_s is not None else metrics.ttft(chunk_ms)
    e2el = number(data.get("e2el_ms"))
    if e2el is None:
        e2el_s = number(data.get("e2el_s"))
        e2el = e2el_s * 1000.0 if e2el_s is not None else metrics.e2el(chunk_ms)
    tokens = pick(data, "output_tokens", "usage_output_tokens")
    if tokens is None and chunk_ms:
        tokens = len(chunk_ms)
    error = pick(data, "error_kind", "error")
    return SampleRow(
        send_s=number(data.get("send_s")),
        ttft_ms=ttft,
        e2el_ms=e2el,
        output_tokens=int(tokens) if isinstance(tokens, int | float) else None,
        error_kind=str(error) if error else None,
        chunk_ms=chunk_ms,
    )


def _sample_fields(sample: Any) -> dict[str, Any]:
    # attributes first: to_json() rounds the raw chunk times
    if dataclasses.is_dataclass(sample) and not isinstance(sample, type):
        data = {f.name: getattr(sample, f.name) for f in dataclasses.fields(sample)}
    else:
        data = as_dict(sample)
    # derived values offered as properties (ttft_s, output_tokens, ...) count too
    for name in ("ttft_ms", "e2el_ms", "ttft_s", "e2el_s", "output_tokens", "error_kind"):
        if data.get(name) is None:
            value = getattr(sample, name, None)
            if value is not None and not callable(value):
                data[name] = value
    return data


def encode_chunks(chunk_ms: tuple[float, ...]) -> bytes | None:
    """Chunk times as little-endian float32 (4 bytes a chunk), or None when there are none."""
    if not chunk_ms:
        return None
    return np.asarray(chunk_ms, dtype="<f4").tobytes()


def decode_chunks(blob: bytes | None) -> FloatArray:
    """The chunk times stored by ``encode_chunks``, as float64 milliseconds."""
    if not blob:
        return np.empty(0, dtype=np.float64)
    return np.frombuffer(blob, dtype="<f4").astype(np.float64)
