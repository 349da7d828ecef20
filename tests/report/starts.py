"""Campaigns written into a real SQLite store start by start, as the runner writes them.

Each call records what the runner records: an attempt per server start (its verdict,
stop and final status, with the runner's own reason sentences), and points with
per-request samples whose chunk times follow a given TTFT and time per output token.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from servegate.store import AttemptStatus, Store

WORKLOAD = {"api": "completions", "input_len": 128, "output_len": 12, "dataset": "random"}


class Campaign:
    """Writes one campaign into ``store``."""

    def __init__(self, store: Store, name: str = "c", baseline: str = "baseline") -> None:
        self.store = store
        self.cid = store.campaign(name, "[campaign]\n", baseline)
        self.rng = np.random.default_rng(11)

    def start(
        self,
        variant: str,
        key: str | None = None,
        *,
        elapsed: float = 2.0,
        status: str = "ready",
        kind: str | None = None,
        reason: str | None = None,
    ) -> int:
        """A server start of ``variant`` (server key: the variant's name) and its verdict."""
        aid = self.store.start_attempt(
            self.cid,
            variant=variant,
            server_key=key or variant,
            command=["serve", variant],
            env={},
            host="local",
            versions={},
            git_commit=None,
        )
        verdict: dict[str, Any] = {
            "status": status,
            "elapsed_s": elapsed,
            "reason": reason or ("ready line seen" if status == "ready" else "it failed"),
            "kind": kind,
            "hint": "lower --mem-fraction-static" if kind == "oom" else None,
            "phases": [{"name": "load_weights", "start_s": 0.0, "end_s": elapsed / 2}],
            "tail": ["Traceback (most recent call last):", "torch.OutOfMemoryError"]
            if status != "ready"
            else [],
        }
        self.store.record_verdict(aid, verdict)
        if status != "ready":
            self.store.finish_attempt(aid, AttemptStatus(status))
        return aid

    def point(
        self,
        aid: int,
        variant: str,
        load: str = "c=4",
        repeat: int = 0,
        *,
        throughput: float = 100.0,
        ttft_ms: float = 40.0,
        tpot_ms: float = 8.0,
        requests: int = 40,
        workload: dict[str, Any] | None = None,
        slow_tail: float = 1.0,
        summary: dict[str, float] | None = None,
    ) -> None:
        """One measured repeat; ``slow_tail`` multiplies the TTFT of the slowest 3 % of requests."""
        tokens = 12
        samples = []
        for i in range(requests):
            ttft = float(self.rng.lognormal(np.log(ttft_ms), 0.1))
            if i % 33 == 0:
                ttft *= slow_tail
            gaps = self.rng.lognormal(np.log(tpot_ms), 0.05, size=tokens - 1)
            chunks = [ttft, *(ttft + np.cumsum(gaps))]
            samples.append(
                {
                    "send_s": i * 0.01,
                    "chunk_ms": [float(c) for c in chunks],
                    "output_tokens": tokens,
                    "error_kind": None,
                }
            )
        self.store.record_point(
            aid,
            variant=variant,
            load=load,
            repeat=repeat,
            result={
                "summary": {"output_throughput": throughput, **(summary or {})},
                "completed": requests,
                "failed": 0,
                "failures": {},
                "samples": samples,
                "settings": dict(workload or WORKLOAD),
            },
        )

    def stop(
        self,
        aid: int,
        status: str = "done",
        reason: str | None = None,
        failed: tuple[str, ...] = (),
    ) -> None:
        """The server stopped; the attempt ends with ``status``, the runner's reason and the
        variants a failure belongs to (none: the whole start)."""
        self.store.record_stop(aid, {"killed": [1], "duration_s": 0.1, "port_free": True})
        self.store.finish_attempt(aid, AttemptStatus(status), reason, failed_variants=failed)

    def measured(
        self,
        variant: str,
        throughputs: list[list[float]],
        *,
        key: str | None = None,
        load: str = "c=4",
        **point: Any,
    ) -> list[int]:
        """Starts of ``variant``, one per inner list, each with those throughputs as repeats."""
        ids = []
        for index, values in enumerate(throughputs):
            aid = self.start(variant, key)
            for offset, value in enumerate(values):
                repeat = index * len(values) + offset
                self.point(aid, variant, load, repeat, throughput=value, **point)
            self.stop(aid)
            ids.append(aid)
        return ids
