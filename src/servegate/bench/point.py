"""`run_point`: one load point from settings to a `PointResult`.

A point flows through its stages once, in order: the client's open-files limit (`fds`),
the preflight (`preflight`: the model, one probe request), the prompts (`dataset`), the
workers' plans (`plan`, with the arrival schedule of `schedule`), the run (`execute`,
reporting through `progress`, with the engine's counters read before and after by
`server_metrics`, and the GPUs' energy counters by `servegate.telemetry.energy`), then
what it measured: the summary (`metrics`), the client's
headroom (`stats`) and the warnings (`warnings`).
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Callable, Iterable
from typing import Any

from servegate.bench import metrics
from servegate.bench.cache_state import cache_state
from servegate.bench.dataset import Prompt, build_prompts
from servegate.bench.execute import execute
from servegate.bench.fds import ensure_descriptors
from servegate.bench.loadgen import WorkerResult
from servegate.bench.plan import plan_workers
from servegate.bench.preflight import discover_model, probe, request_headers
from servegate.bench.progress import Progress, ProgressFeed
from servegate.bench.result import PointResult
from servegate.bench.server_metrics import Scrape, metric_names, scrape, server_deltas
from servegate.bench.sessions import design_rate, per_turn
from servegate.bench.settings import BenchSettings
from servegate.bench.slo import evaluate
from servegate.bench.stats import client_stats
from servegate.bench.tokens import (
    Counter,
    ServerCounter,
    TokenizeMissing,
    make_counter,
    prompt_check,
)
from servegate.bench.warnings import point_warnings
from servegate.telemetry.energy import Energy, EnergyMeter

DURATION_POOL = 2048  # prompts built for a duration-bounded run (cycled beyond that)


def run_point(
    settings: BenchSettings,
    *,
    progress: Callable[[Progress], None] | None = None,
    server_pids: Callable[[], Iterable[int]] | None = None,
) -> PointResult:
    """Run one load point and return everything it measured.

    ``server_pids`` gives the server's process tree (when servegate launched it): the
    point's energy counts the GPUs NVML lists it on (`servegate.telemetry.energy`).

    Raises BenchError when the server cannot be reached or does not speak the OpenAI
    API (ClientLimitError when ``ulimit -n`` cannot hold the point's streams); failures
    during the run are counted by kind, never raised.
    """
    ensure_descriptors(settings)  # the client's own limit, before any request
    started_at = dt.datetime.now(dt.UTC).isoformat(timespec="seconds")
    headers = request_headers(settings)
    model = settings.model or discover_model(settings.base_url, headers)
    warnings: list[str] = []
    ignore_eos = probe(settings, model, headers, warnings)
    counter, note = _counter(settings, model)
    try:
        warmup, measured = _prompts(settings, model, ignore_eos, counter)
        sessions = bool(measured) and measured[0].session is not None
        if sessions and isinstance(counter, ServerCounter) and settings.api == "chat":
            counter.prepare_conversations()
    finally:
        if isinstance(counter, ServerCounter):
            counter.close()  # a session's turns open their own connections when counted
    plans = plan_workers(settings, headers, warmup, measured, counter if sessions else None)
    metrics_url = (
        settings.metrics_url if settings.metrics_url is not None else settings.base_url + "/metrics"
    )
    counters_before: list[Scrape | None] = []
    meter = EnergyMeter(
        gpus=settings.gpus,
        server_pids=server_pids,
        price_per_gpu_hour=settings.price_per_gpu_hour,
    )

    def before_measure() -> None:
        counters_before.append(scrape(metrics_url) if metrics_url else None)
        meter.begin()  # last: the counters' window starts as close to the requests as can be

    feed = None
    if progress is not None:
        feed = ProgressFeed(
            callback=progress, total=settings.requests, duration_s=settings.duration_s
        )
    try:
        results = execute(plans, before_measure, feed)
        sent = [s for r in results for s in r.samples]
        energy = meter.end(output_tokens=sum(s.output_tokens for s in sent if s.ok))
    finally:
        meter.close()
    after = scrape(metrics_url) if metrics_url else None
    before = counters_before[0] if counters_before else None
    server = server_deltas(before, after, metric_names(settings.engine, after), metrics_url or None)
    cache, cache_warnings = cache_state(
        sent,
        [p.body for p in measured],
        mode=settings.cache,
        before=before,
        after=after,
        design=design_rate(sent, measured) if sessions else None,
    )
    return _result(
        settings,
        model=model,
        results=results,
        server=server,
        warnings=warnings,
        started_at=started_at,
        pool=len(measured),
        counter=counter,
        note=note,
        cache=(cache, cache_warnings),
        turns=per_turn(sent, measured) if sessions else [],
        energy=energy,
    )


def _counter(settings: BenchSettings, model: str) -> tuple[Counter | None, str | None]:
    """Who counts prompt tokens (``--tokenizer``), or None and why the prompts are approximate."""
    if settings.tokenizer is None:
        return None, None
    try:
        return (
            make_counter(
                settings.tokenizer,
                base_url=settings.base_url,
                model=model,
                authorization=settings.authorization,
            ),
            None,
        )
    except TokenizeMissing as exc:
        return None, (
            f"--tokenizer server: the server has no usable /tokenize ({exc}); give "
            "--tokenizer PATH (a tokenizer.json) for exact prompts"
        )


def _prompts(
    settings: BenchSettings, model: str, ignore_eos: bool, counter: Counter | None
) -> tuple[list[Prompt], list[Prompt]]:
    """The warmup prompts and the measured ones (a pool to cycle for a time-bound point)."""
    count = settings.requests if settings.requests is not None else DURATION_POOL
    prompts = build_prompts(
        dataset=settings.dataset,
        count=settings.warmup + count,
        input_len=settings.input_len,
        output_len=settings.output_len,
        api=settings.api,
        model=model,
        seed=settings.seed,
        ignore_eos=ignore_eos,
        counter=counter,
        salt=settings.salt if settings.cache == "isolate" else (),
    )
    return prompts[: settings.warmup], prompts[settings.warmup :]


def _result(
    settings: BenchSettings,
    *,
    model: str,
    results: list[WorkerResult],
    server: dict[str, Any],
    warnings: list[str],
    started_at: str,
    pool: int,
    counter: Counter | None = None,
    note: str | None = None,
    cache: tuple[dict[str, Any], list[str]] = ({}, []),
    turns: list[dict[str, Any]] | None = None,
    energy: Energy | None = None,
) -> PointResult:
    """The point's result: its workers' samples merged in send order, and what they measured."""
    samples = sorted((s for r in results for s in r.samples), key=lambda s: s.send_s)
    client = client_stats(results)
    failures = metrics.failures_by_kind(samples)
    details: dict[str, str] = {}
    for s in samples:
        if s.error is not None and s.error not in details:
            details[s.error] = s.detail or ""
    gone = [r.gone_s for r in results if r.gone_s is not None]
    server_gone_s = min(gone) if gone else None
    completed = sum(1 for s in samples if s.ok)
    summary = metrics.summarize(samples, settings.percentiles) | metrics.rates(
        samples, settings.rate if settings.open_loop else None
    )
    stopped_early = any(r.stopped_early for r in results)
    slo = None
    if settings.slo:
        slo = evaluate(
            settings.slo,
            samples,
            duration_s=summary["duration_s"],
            criterion=settings.attainment,
            stopped_early=stopped_early,
        )
    done = [s for s in samples if s.ok]
    prompt_tokens, token_warnings = prompt_check(
        [s.input_len for s in done],
        [s.usage_input_tokens for s in done],
        tokenizer=counter.name if counter is not None else None,
        note=note,
    )
    return PointResult(
        settings=settings,
        prompt_tokens=prompt_tokens,
        cache=cache[0],
        turns=turns or [],
        energy=energy,
        model=model,
        summary=summary,
        slo=slo,
        stopped_early=stopped_early,
        completed=completed,
        failed=len(samples) - completed,
        failures=failures,
        failure_details=details,
        reconnects=sum(1 for s in samples if s.reconnected),
        server_gone_s=server_gone_s,
        samples=samples,
        server_metrics=server,
        warnings=warnings
        + token_warnings
        + cache[1]
        + point_warnings(
            settings,
            samples,
            pool=pool,
            client=client,
            failures=failures,
            server_gone_s=server_gone_s,
        ),
        client=client,
        started_at=started_at,
    )


__all__ = ["run_point"]
