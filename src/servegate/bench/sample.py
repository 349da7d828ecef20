"""One request's raw record: when it was sent, when every content chunk came, how it ended.

Samples are the ground truth of a load point: every summary metric is computed from them,
and they are kept (by the store and the JSON export) so that any other definition (AIPerf's
per-request ITL, NTPOT, per-second throughput) can be computed later. Times are float
seconds: ``send_s`` from the start of the point, the rest from the request's own send.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from servegate.bench import metrics


@dataclass(frozen=True, slots=True, kw_only=True)
class RequestSample:
    """The record of one measured request.

    ``chunks_s`` holds the arrival time of every chunk that carried generated content,
    in seconds after the send; chunks read by the same socket read share a time.
    """

    index: int  # position in the point's prompt list
    send_s: float  # send time, seconds after the point started
    scheduled_s: float | None  # planned send time under a rate schedule, else None
    chunks_s: tuple[float, ...]  # content chunk arrivals, seconds after send
    end_s: float  # end of the stream (or the failure), seconds after send
    usage_output_tokens: int | None  # usage.completion_tokens from the server
    usage_input_tokens: int | None  # usage.prompt_tokens from the server
    input_len: int  # prompt length asked for (approximate tokens)
    output_len: int | None  # max_tokens asked for
    error: str | None = None  # failure kind, None when the request completed
    detail: str | None = None  # a short description of the failure
    reconnected: bool = False  # sent again on a fresh connection: the kept-alive one was closed
    # usage.prompt_tokens_details.cached_tokens: prompt tokens the server's prefix cache held
    usage_cached_tokens: int | None = None

    @property
    def ok(self) -> bool:
        """True when the request completed with generated content."""
        return self.error is None

    @property
    def ttft_s(self) -> float | None:
        """Send to the first content chunk (`metrics.ttft`)."""
        return metrics.ttft(self.chunks_s)

    @property
    def e2el_s(self) -> float | None:
        """Send to the last content chunk (`metrics.e2el`)."""
        return metrics.e2el(self.chunks_s)

    @property
    def output_tokens(self) -> int:
        """Output tokens: the server's usage count, else the number of content chunks."""
        if self.usage_output_tokens is not None:
            return self.usage_output_tokens
        return len(self.chunks_s)

    def to_json(self) -> dict[str, Any]:
        """A compact JSON object (times rounded to the microsecond)."""
        return {
            "index": self.index,
            "send_s": round(self.send_s, 6),
            "scheduled_s": None if self.scheduled_s is None else round(self.scheduled_s, 6),
            "chunks_s": [round(t, 6) for t in self.chunks_s],
            "end_s": round(self.end_s, 6),
            "usage_output_tokens": self.usage_output_tokens,
            "usage_input_tokens": self.usage_input_tokens,
            "input_len": self.input_len,
            "output_len": self.output_len,
            "error": self.error,
            "detail": self.detail,
            "reconnected": self.reconnected,
            "usage_cached_tokens": self.usage_cached_tokens,
        }

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> RequestSample:
        """The inverse of `to_json`."""
        return cls(
            index=int(data["index"]),
            send_s=float(data["send_s"]),
            scheduled_s=data.get("scheduled_s"),
            chunks_s=tuple(float(t) for t in data["chunks_s"]),
            end_s=float(data["end_s"]),
            usage_output_tokens=data.get("usage_output_tokens"),
            usage_input_tokens=data.get("usage_input_tokens"),
            input_len=int(data["input_len"]),
            output_len=data.get("output_len"),
            error=data.get("error"),
            detail=data.get("detail"),
            reconnected=bool(data.get("reconnected", False)),
            usage_cached_tokens=data.get("usage_cached_tokens"),
        )
