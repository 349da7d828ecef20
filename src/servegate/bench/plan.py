"""A point split over its worker processes: each worker's share of the concurrency and
the prompts (closed loop), or of the arrival schedule (open loop)."""

from __future__ import annotations

from typing import Any

from servegate.bench.dataset import Prompt
from servegate.bench.loadgen import WorkerPlan
from servegate.bench.schedule import arrival_offsets
from servegate.bench.sessions import group_sessions
from servegate.bench.settings import BenchSettings
from servegate.bench.slo import StopRule
from servegate.bench.spec import parse_dataset
from servegate.bench.stream import CHAT_KEYS, COMPLETION_KEYS
from servegate.bench.tokens import Counter


def plan_workers(
    s: BenchSettings,
    headers: dict[str, str],
    warmup: list[Prompt],
    measured: list[Prompt],
    counter: Counter | None = None,
) -> list[WorkerPlan]:
    """Split the point over its worker processes: concurrency, prompts or arrivals
    (``counter``: what counts a session's grown turns, --tokenizer)."""
    n = s.resolved_workers()
    keys = CHAT_KEYS if s.api == "chat" else COMPLETION_KEYS
    common: dict[str, Any] = {
        "endpoint": s.endpoint,
        "headers": headers,
        "timeout_s": s.timeout_s,
        "keys": keys,
        "duration_s": s.duration_s,
    }
    if measured and measured[0].session is not None:  # multiturn: whole sessions per worker
        return _sessions(s, n, common | {"counter": counter}, warmup, measured)
    if measured and measured[0].at_s is not None:  # a trace: its own send times
        first = measured[0].at_s
        offsets = [(p.at_s or 0.0) - first for p in measured]
        if s.duration_s is not None:
            offsets = [off for off in offsets if off <= s.duration_s]
        return _open_loop(s, n, common, warmup, measured, offsets=offsets)
    if s.open_loop:
        return _open_loop(s, n, common, warmup, measured)
    common["stop"] = _stop_rule(s, s.requests)
    return _closed_loop(s, n, common, warmup, measured)


def _stop_rule(s: BenchSettings, planned: int | None) -> StopRule | None:
    """A probe's early stop over its ``planned`` requests (none when their count is not
    known ahead: a closed loop bound by time)."""
    if not s.stop_early or not s.slo or not planned:
        return None
    return StopRule(targets=s.slo, planned=planned, criterion=s.attainment)


def _open_loop(
    s: BenchSettings,
    n: int,
    common: dict[str, Any],
    warmup: list[Prompt],
    measured: list[Prompt],
    *,
    offsets: list[float] | None = None,
) -> list[WorkerPlan]:
    """Every n-th arrival of the schedule (the rate's, or ``offsets``: a trace's) to each
    worker, the concurrency cap shared."""
    if offsets is None:
        assert s.rate is not None
        offsets = arrival_offsets(s.rate, s.requests, s.duration_s, s.seed, s.burstiness)
    arrivals = [(i, off, measured[i % len(measured)]) for i, off in enumerate(offsets)]
    common = common | {"stop": _stop_rule(s, len(offsets))}
    return [
        WorkerPlan(
            slot=w,
            concurrency=_share(s.concurrency, n, w) if s.concurrency is not None else None,
            prompts=[],
            schedule=arrivals[w::n],
            warmup=warmup[w::n],
            **common,
        )
        for w in range(n)
    ]


def _sessions(
    s: BenchSettings,
    n: int,
    common: dict[str, Any],
    warmup: list[Prompt],
    measured: list[Prompt],
) -> list[WorkerPlan]:
    """Every n-th session to each worker (a session stays on its worker), with its share of
    the users (closed loop) or every n-th start of the rate's schedule of sessions."""
    sessions = group_sessions(measured)
    starts = None
    if s.open_loop:
        assert s.rate is not None
        starts = arrival_offsets(s.rate, len(sessions), None, s.seed, s.burstiness)
    think = parse_dataset(s.dataset).get("think")
    plans = []
    for w in range(n):
        users = s.concurrency if s.concurrency is not None else None
        plans.append(
            WorkerPlan(
                slot=w,
                concurrency=_share(users, n, w) if users is not None else None,
                prompts=[],
                schedule=None,
                warmup=warmup[w::n],
                sessions=sessions[w::n],
                session_starts=starts[w::n] if starts is not None else None,
                think_s=think,
                **common,
            )
        )
    return plans


def _closed_loop(
    s: BenchSettings,
    n: int,
    common: dict[str, Any],
    warmup: list[Prompt],
    measured: list[Prompt],
) -> list[WorkerPlan]:
    """Each worker its share of the users, and of the prompts in proportion to them."""
    users = s.concurrency if s.concurrency is not None else len(measured)
    indexed = list(enumerate(measured))
    plans: list[WorkerPlan] = []
    start = 0
    for w in range(n):
        mine = _share(users, n, w)
        if s.requests is not None:
            first = round(len(indexed) * start / users)
            share = indexed[first : round(len(indexed) * (start + mine) / users)]
        else:
            share = indexed[w::n]
        start += mine
        plans.append(
            WorkerPlan(
                slot=w,
                concurrency=mine,
                prompts=share,
                schedule=None,
                warmup=warmup[w::n],
                **common,
            )
        )
    return plans


def _share(total: int, parts: int, i: int) -> int:
    """Part ``i`` of ``total`` split as evenly as possible into ``parts``."""
    return total // parts + (1 if i < total % parts else 0)
