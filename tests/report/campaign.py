"""A constructed campaign in a real SQLite file: the material of the report tests.

Four variants as in the demo: the baseline, a variant 5 % faster (each started twice, so
their comparison has the variation between starts), one that crashes while starting (out
of memory), and a speculative-decoding variant started once and measured once per point.
Results are passed to the store as plain dicts, the shape of ``PointResult.to_json()``.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np

from servegate.store import AttemptStatus, CampaignStatus, Store

LOADS = (1, 4, 16)


def _verdict(
    status: str, elapsed: float, phases: list[tuple[str, float, float | None]]
) -> dict[str, Any]:
    crashed = status != "ready"
    return {
        "schema": "servegate.verdict/1",
        "status": status,
        "elapsed_s": elapsed,
        "detected_by": "signature" if crashed else "log",
        "reason": "CUDA out of memory" if crashed else "ready line seen",
        "kind": "oom" if crashed else None,
        "hint": "lower --mem-fraction-static or batch size" if crashed else None,
        "exit_code": 1 if crashed else None,
        "engine": "sglang",
        "phases": [{"name": n, "start_s": s, "end_s": e} for n, s, e in phases],
        "tail": ["Traceback (most recent call last):", "torch.OutOfMemoryError"] if crashed else [],
    }


def _point(
    rng: np.random.Generator, *, throughput: float, ttft_ms: float, itl_ms: float, requests: int
) -> dict[str, Any]:
    tokens = 12
    samples = []
    for i in range(requests):
        ttft = float(rng.lognormal(np.log(ttft_ms), 0.15))
        gaps = rng.lognormal(np.log(itl_ms), 0.15, size=tokens - 1)
        chunks = [ttft, *(ttft + np.cumsum(gaps))]
        samples.append(
            {
                "send_s": i * 0.005,
                "chunk_ms": [float(c) for c in chunks],
                "output_tokens": tokens,
                "error_kind": None,
            }
        )
    return {
        "summary": {"output_throughput": float(throughput * (1 + rng.normal(0, 0.005)))},
        "completed": requests,
        "failed": 0,
        "failures": {},
        "samples": samples,
        "server_metrics": {},
        "warnings": [],
    }


def build(
    path: Path, *, repeats: int = 3, requests: int = 60, name: str = "demo", starts: int = 2
) -> int:
    """Write the campaign into the database at ``path``; return its id.

    ``starts``: server starts of the baseline and the fast variant (spec has one).
    """
    rng = np.random.default_rng(7)
    phases = [("load_weights", 0.2, 2.0), ("kv_cache", 2.0, 2.6), ("cuda_graphs", 2.6, 4.1)]
    plan = [
        ("baseline", 1.00, 1.00, "ready", 4.3),
        ("fast", 1.05, 0.95, "ready", 4.6),
        ("oom", 1.0, 1.0, "crash", 2.4),
        ("spec", 1.30, 0.80, "ready", 6.0),
    ]
    with Store.open(path) as store:
        cid = store.campaign(name, "[campaign]\nname = 'demo'\n", "baseline")
        for variant, speed, latency, status, elapsed in plan:
            store.add_variant(cid, variant)
            for start in range(starts if variant in ("baseline", "fast") else 1):
                _start(
                    store,
                    cid,
                    rng,
                    variant,
                    speed,
                    latency,
                    status,
                    elapsed,
                    start,
                    repeats,
                    requests,
                    phases,
                )
        store.set_campaign_status(cid, CampaignStatus.DONE)
    return cid


def _start(
    store: Store,
    cid: int,
    rng: np.random.Generator,
    variant: str,
    speed: float,
    latency: float,
    status: str,
    elapsed: float,
    start: int,
    repeats: int,
    requests: int,
    phases: list[tuple[str, float, float]],
) -> None:
    """One server start of ``variant`` with its points (repeat keys go on across starts)."""
    aid = store.start_attempt(
        cid,
        variant=variant,
        server_key=variant,
        command=["python3", "-m", "servegate", "sim", "--port", "30000"],
        env={"HF_TOKEN": "secret"},
        host="local",
        versions={"servegate": "0.1.0"},
        git_commit=None,
    )
    shown: list[tuple[str, float, float | None]] = (
        list(phases) if status == "ready" else [("load_weights", 0.2, None)]
    )
    store.record_verdict(aid, _verdict(status, elapsed, shown))
    if status != "ready":
        store.finish_attempt(aid, AttemptStatus(status))
        return
    runs = 1 if variant == "spec" else repeats
    for load in LOADS:
        for rep in range(runs):
            store.record_point(
                aid,
                variant=variant,
                load=f"c={load}",
                repeat=start * runs + rep,
                result=_point(
                    rng,
                    throughput=100.0 * load**0.8 * speed,
                    ttft_ms=40.0 * latency * (1 + load / 16),
                    itl_ms=8.0 * latency,
                    requests=requests,
                ),
            )
    store.record_stop(aid, {"killed": [1, 2], "duration_s": 0.3, "port_free": True})
    store.finish_attempt(aid, AttemptStatus.DONE)
