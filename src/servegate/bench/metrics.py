"""The one definition of each latency metric (vLLM's), and the summary of a load point.

- TTFT: send -> first chunk with generated content.
- E2EL: send -> last content chunk (the usage-only chunk does not move it).
- TPOT: per request, (E2EL - TTFT) / (output_tokens - 1), for requests of 2+ tokens.
- ITL: every gap between consecutive content chunks, pooled over all requests.
- Throughputs: totals of completed requests / (last completion - first send).

Only completed requests enter latencies and throughputs; failures are counted by kind.
`ttft`, `e2el`, `tpot` and `itl` work in whatever unit they are given (seconds here, the
store's milliseconds in `servegate.store` and `servegate.report`), so every layer derives
the same numbers from the same arithmetic.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Sequence
from typing import TYPE_CHECKING

import numpy as np
import numpy.typing as npt

if TYPE_CHECKING:
    from servegate.bench.sample import RequestSample

FloatArray = npt.NDArray[np.float64]

PERCENTILES = (50, 90, 99)
LATENCIES = ("ttft", "tpot", "itl", "e2el")


def ttft(chunks: Sequence[float]) -> float | None:
    """One request's TTFT: its first content chunk's time after the send; None without one."""
    return chunks[0] if chunks else None


def e2el(chunks: Sequence[float]) -> float | None:
    """One request's E2EL: its last content chunk's time after the send; None without one."""
    return chunks[-1] if chunks else None


def tpot(ttft: npt.ArrayLike, e2el: npt.ArrayLike, output_tokens: npt.ArrayLike) -> FloatArray:
    """TPOT per request, (E2EL - TTFT) / (output tokens - 1), over parallel arrays.

    Requests of fewer than two tokens have no TPOT and are left out, as are requests with
    a missing (NaN) time or token count.
    """
    first = np.asarray(ttft, dtype=np.float64)
    last = np.asarray(e2el, dtype=np.float64)
    tokens = np.asarray(output_tokens, dtype=np.float64)
    ok = tokens > 1
    with np.errstate(invalid="ignore", divide="ignore"):
        values = (last[ok] - first[ok]) / (tokens[ok] - 1)
    return np.asarray(values[np.isfinite(values)], dtype=np.float64)


def itl(chunks: Iterable[npt.ArrayLike]) -> FloatArray:
    """ITL: every gap between consecutive content chunks, pooled over the requests given."""
    gaps = [np.diff(times) for times in map(np.asarray, chunks) if times.size > 1]
    return np.concatenate(gaps) if gaps else np.empty(0, dtype=np.float64)


def summarize(
    samples: Sequence[RequestSample], percentiles: Sequence[float] = ()
) -> dict[str, float]:
    """The summary dict of `PointResult` (throughputs, and latency stats in ms).

    ``percentiles`` adds keys such as ``ttft_ms_p95`` and ``ttft_ms_p99.9``; p50, p90 and
    p99 are always there.
    """
    done = [s for s in samples if s.ok]
    out: dict[str, float] = {}
    if done:
        first_send = min(s.send_s for s in samples)
        last_end = max(s.send_s + s.end_s for s in done)
        duration = max(last_end - first_send, 1e-9)
        out_tokens = sum(s.output_tokens for s in done)
        in_tokens = sum(
            s.usage_input_tokens if s.usage_input_tokens is not None else s.input_len for s in done
        )
        out["duration_s"] = duration
        out["request_throughput"] = len(done) / duration
        out["output_throughput"] = out_tokens / duration
        out["total_token_throughput"] = (in_tokens + out_tokens) / duration
        out["total_input_tokens"] = float(in_tokens)
        out["total_output_tokens"] = float(out_tokens)
    else:
        for key in ("duration_s", "request_throughput", "output_throughput"):
            out[key] = 0.0
        out["total_token_throughput"] = 0.0
        out["total_input_tokens"] = out["total_output_tokens"] = 0.0
    first = np.array([ttft(s.chunks_s) for s in done], dtype=np.float64)
    last = np.array([e2el(s.chunks_s) for s in done], dtype=np.float64)
    tokens = np.array([s.output_tokens for s in done], dtype=np.float64)
    per_token = tpot(first, last, tokens)
    gaps = itl(s.chunks_s for s in done)
    for name, values in (("ttft", first), ("tpot", per_token), ("itl", gaps), ("e2el", last)):
        out.update(_stats(name, values * 1000.0, percentiles))
    return out


def percentile_key(p: float) -> str:
    """``p99`` for 99, ``p99.9`` for 99.9: the suffix of a percentile's summary key."""
    return f"p{p:g}"


def rates(samples: Sequence[RequestSample], offered: float | None) -> dict[str, float]:
    """Offered vs achieved arrivals: the schedule's rate (NaN in a closed loop), the rate
    the requests were sent at, and the rate they completed at (all per second).

    ``sent_rate`` is (sends - 1) / (last send - first send), so it does not depend on
    where the point's clock starts; ``achieved_rate`` is completed requests over the
    point's duration (``request_throughput``), the rate the server kept up with.
    """
    sends = sorted(s.send_s for s in samples)
    span = sends[-1] - sends[0] if len(sends) > 1 else 0.0
    done = [s for s in samples if s.ok]
    achieved = 0.0
    if done:
        last_end = max(s.send_s + s.end_s for s in done)
        achieved = len(done) / max(last_end - sends[0], 1e-9)
    return {
        "offered_rate": float("nan") if offered is None else offered,
        "sent_rate": (len(sends) - 1) / span if span > 0 else float("nan"),
        "achieved_rate": achieved,
    }


def _stats(name: str, values_ms: np.ndarray, extra: Sequence[float] = ()) -> dict[str, float]:
    """mean, p50, p90, p99 (and the ``extra`` percentiles) of one latency in ms (NaN when
    there is no value)."""
    wanted = sorted(set(PERCENTILES) | set(extra))
    keys = [f"{name}_ms_{percentile_key(p)}" for p in wanted]
    if values_ms.size == 0:
        nan = float("nan")
        return {f"{name}_ms_mean": nan} | dict.fromkeys(keys, nan)
    pcts = np.percentile(values_ms, wanted)
    return {f"{name}_ms_mean": float(values_ms.mean())} | {
        key: float(v) for key, v in zip(keys, pcts, strict=True)
    }


def failures_by_kind(samples: Sequence[RequestSample]) -> dict[str, int]:
    """Failed requests counted by kind, most frequent first."""
    return dict(Counter(s.error for s in samples if s.error is not None).most_common())


def token_warnings(samples: Sequence[RequestSample], *, ignore_eos: bool = True) -> list[str]:
    """Warnings about output lengths: usage missing or disagreeing, or not what was asked.

    Without ``ignore_eos`` (a file's or a trace's own lengths as ``max_tokens``) the model
    may stop early, as it did in the data: only an output longer than asked is wrong.
    """
    done = [s for s in samples if s.ok]
    if not done:
        return []
    warnings: list[str] = []
    no_usage = sum(1 for s in done if s.usage_output_tokens is None)
    if no_usage:
        warnings.append(
            f"{no_usage} of {len(done)} completed requests came without usage; their output "
            "tokens are counted as content chunks, which undercounts when a chunk holds "
            "several tokens."
        )
    with_usage = [s for s in done if s.usage_output_tokens is not None]
    more = [s for s in with_usage if len(s.chunks_s) > (s.usage_output_tokens or 0)]
    fewer = [s for s in with_usage if len(s.chunks_s) < (s.usage_output_tokens or 0)]
    if more:
        warnings.append(
            f"{len(more)} of {len(with_usage)} requests streamed more content chunks than "
            "their usage.completion_tokens; the server's usage count looks wrong."
        )
    if fewer:
        ratio = sum(s.usage_output_tokens or 0 for s in fewer) / max(
            1, sum(len(s.chunks_s) for s in fewer)
        )
        warnings.append(
            f"{len(fewer)} of {len(with_usage)} requests had fewer content chunks than usage "
            f"tokens ({ratio:.2f} tokens per chunk): the server sends several tokens per chunk "
            "(speculative decoding or stream batching), so ITL is a gap between chunks, "
            "not between tokens."
        )
    asked = [s for s in done if s.output_len is not None]
    off = [
        s
        for s in asked
        if s.output_tokens != s.output_len and (ignore_eos or s.output_tokens > (s.output_len or 0))
    ]
    if off:
        got = [s.output_tokens for s in off]
        warnings.append(
            f"{len(off)} of {len(asked)} requests returned an output length other than "
            f"requested ({min(got)}-{max(got)} tokens instead of "
            f"{off[0].output_len}); the server may ignore ignore_eos or max_tokens."
        )
    return warnings
