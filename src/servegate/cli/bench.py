"""``servegate bench``: measure an OpenAI-compatible server at one or more load points.

Thin by design: parse and validate the flags, call `servegate.bench.run_point` once per
load point, print a block of numbers per point on stdout (or JSON) and progress on stderr
(a live line on a terminal; elsewhere a line per point and every 30 s; both with
requests done of the total and an ETA from the request rate so far), and exit 1 when a
point completed nothing, the server stopped answering, or the error rate crossed
``--max-error-rate``. SIGTERM unwinds like Ctrl-C: worker processes stop, the JSON file
keeps the points done, and one line says why.
"""

from __future__ import annotations

import contextlib
import json
import math
import signal
import sys
import threading
import time
from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path
from types import FrameType
from typing import Any, TextIO

import click

from servegate._files import check_output
from servegate.bench import BenchSettings, PointResult, Progress, envelope, run_point
from servegate.bench.warnings import gone_sentence
from servegate.cli.options import (
    engine,
    examples,
    json_file,
    json_flag,
    quiet,
    write_json_file,
)
from servegate.cli.remote import bench_from_option, host_option, run_bench
from servegate.errors import BenchError, UsageError

LATENCY_ROWS = (("TTFT", "ttft"), ("TPOT", "tpot"), ("ITL", "itl"), ("E2EL", "e2el"))
PROGRESS_EVERY_S = 30.0  # off a terminal: a progress line this often during a point


def _ints(value: str, flag: str) -> list[int]:
    """A comma-separated list of positive integers, or a UsageError naming the flag."""
    try:
        items = [int(x) for x in value.split(",") if x.strip()]
    except ValueError:
        raise UsageError(f"{flag} {value!r} must be positive integers like 1,16,64.") from None
    if not items or min(items) < 1:
        raise UsageError(f"{flag} {value!r} must be positive integers like 1,16,64.")
    return items


def _rate(value: str | None) -> float | None:
    """``--rate``: a positive number of requests per second, or ``inf``."""
    if value is None:
        return None
    try:
        rate = float(value)
    except ValueError:
        raise UsageError(
            f"--rate {value!r} must be a number of requests per second or inf."
        ) from None
    if math.isnan(rate) or rate <= 0:
        raise UsageError(f"--rate {value!r} must be a positive number or inf.")
    return rate


@click.command(
    context_settings={"help_option_names": ["-h", "--help"], "max_content_width": 100},
    epilog="""\b
Metrics (vLLM's definitions): TTFT send -> first content chunk; E2EL send -> last
content chunk; TPOT (E2EL - TTFT) / (output tokens - 1) per request; ITL every gap
between content chunks, pooled; throughputs over first send -> last completion.

\b
Exit codes: 0 done; 1 a point completed no request, the server stopped answering or
could not be measured, or the error rate crossed --max-error-rate; 2 bad flags or
input; 130 Ctrl-C; 143 SIGTERM.

"""
    + examples(
        "servegate sim --engine vllm --port 8123 --startup 0 & sleep 2",
        "servegate bench --url http://127.0.0.1:8123 --concurrency 1,16,64 --requests 200 \\",
        "    --input-len 1024 --output-len 256 --json-file results.json",
        "servegate bench --url http://127.0.0.1:8123 --rate 8 --duration 60 --json -q",
    ),
)
@click.option("--url", required=True, help="Base URL of the server, e.g. http://127.0.0.1:8000.")
@click.option(
    "--api",
    type=click.Choice(["completions", "chat"]),
    default="completions",
    show_default=True,
    help="Which OpenAI API to call.",
)
@click.option("--model", default=None, help="Model name to send [default: first of /v1/models]")
@click.option(
    "--concurrency",
    "concurrency_text",
    default=None,
    help="Requests in flight: N or a sweep N,N,... (with --rate: a cap) [default: 1]",
)
@click.option(
    "--rate",
    "rate_text",
    default=None,
    help="Poisson arrivals per second, planned before the run, or inf [default: inf]",
)
@click.option(
    "--requests",
    type=int,
    default=None,
    help="Measured requests per point [default: max(200, 4 x concurrency)]",
)
@click.option("--duration", type=float, default=None, help="Measure for S seconds instead.")
@click.option("--warmup", type=int, default=0, show_default=True, help="Uncounted requests first.")
@click.option(
    "--input-len", type=int, default=1024, show_default=True, help="Prompt tokens (approx.)."
)
@click.option(
    "--output-len",
    type=int,
    default=256,
    show_default=True,
    help="max_tokens of each request, sent with ignore_eos.",
)
@click.option(
    "--dataset",
    default="random",
    show_default=True,
    help="random, FILE.jsonl ({'prompt': ..., 'output_len': ...}) or sharegpt:FILE.",
)
@click.option(
    "--seed", type=int, default=0, show_default=True, help="Seed of prompts and schedule."
)
@click.option(
    "--timeout", type=float, default=600.0, show_default=True, help="Per-request limit (s)."
)
@click.option(
    "--api-key",
    envvar="OPENAI_API_KEY",
    default=None,
    help="Bearer token (also from OPENAI_API_KEY); never printed or stored.",
)
@click.option(
    "--metrics-url",
    default=None,
    help="Prometheus endpoint to diff ('' disables) [default: URL/metrics when present]",
)
@engine(
    "Engine profile naming the /metrics counters [default: detected from their names]",
    default=None,
)
@click.option(
    "--workers",
    type=int,
    default=None,
    help="Client processes [default: one per 192 streams, at most one per core]",
)
@json_flag("the results (every point and its raw samples)")
@json_file("the results, rewritten after each point")
@quiet()
@click.option(
    "--max-error-rate",
    type=float,
    default=None,
    help="Exit 1 when failed / sent exceeds this fraction at any point, e.g. 0.01.",
)
@host_option("the server")
@bench_from_option()
def bench(  # noqa: PLR0917 (click passes options by position)
    url: str,
    api: str,
    model: str | None,
    concurrency_text: str | None,
    rate_text: str | None,
    requests: int | None,
    duration: float | None,
    warmup: int,
    input_len: int,
    output_len: int,
    dataset: str,
    seed: int,
    timeout: float,
    api_key: str | None,
    metrics_url: str | None,
    engine: str | None,
    workers: int | None,
    as_json: bool,
    json_file: Path | None,
    quiet: bool,
    max_error_rate: float | None,
    host: str,
    bench_from: str | None,
) -> None:
    """Benchmark an OpenAI-compatible server: throughput, TTFT, TPOT, ITL, E2EL per load point.

    Each load point streams requests with usage reporting on, keeps every request's raw
    chunk timestamps, diffs the engine's /metrics counters, and checks that the client
    itself was not the bottleneck. A server that stops answering ends the point (with
    back-off, not a storm of reconnects) and the command exits 1.
    """
    _remote(host, bench_from, as_json=as_json, json_file=json_file, api_key=api_key)
    rate = _rate(rate_text)
    levels = _levels(concurrency_text, rate)
    _check_flags(requests, duration, max_error_rate, json_file)
    template = BenchSettings(
        url=url,
        api=api,  # type: ignore[arg-type]
        model=model,
        concurrency=levels[0],
        rate=rate,
        requests=_requests(requests, duration, levels[0]),
        duration_s=duration,
        warmup=warmup,
        input_len=input_len,
        output_len=output_len,
        dataset=dataset,
        seed=seed,
        timeout_s=timeout,
        api_key=api_key,
        metrics_url=metrics_url,
        engine=engine,
        workers=workers,
    )
    sweep = _Sweep(json_file=json_file, human=sys.stderr if as_json else sys.stdout, quiet=quiet)
    with _sigterm_unwinds():
        for level in levels:
            settings = replace(
                template,
                concurrency=level,
                requests=_requests(requests, duration, level),
                model=sweep.model or model,
            )
            if not sweep.measure(settings):
                break  # the later points would only meet the same silence
    if as_json:
        click.echo(json.dumps(envelope(sweep.points)))
    if len(sweep.results) > 1:
        click.echo(render_sweep(sweep.results), file=sweep.human)
    _check_outcome(sweep.results, sweep.gone, max_error_rate)


def _remote(
    host: str, bench_from: str | None, *, as_json: bool, json_file: Path | None, api_key: str | None
) -> None:
    """``--host``: bench the server on that host (never returns), unless it is this one."""
    from servegate.remote.hosts import is_local

    if is_local(host):
        if bench_from is not None:
            raise UsageError(
                "--bench-from goes with --host HOST: without it the load generator runs here."
            )
        return
    run_bench(
        host,
        click.get_current_context(),
        bench_from=bench_from or "remote",
        as_json=as_json,
        json_file=json_file,
        api_key=api_key,
    )


def _levels(concurrency_text: str | None, rate: float | None) -> list[int | None]:
    """The sweep's concurrency levels; one uncapped point under a finite rate, else c=1."""
    if concurrency_text is not None:
        return list(_ints(concurrency_text, "--concurrency"))
    if rate is not None and math.isfinite(rate):
        return [None]
    return [1]


def _requests(requests: int | None, duration: float | None, level: int | None) -> int | None:
    """Measured requests of a point: as given, none when bound by time, else 4 per user
    (at least 200)."""
    if requests is not None or duration is not None:
        return requests
    return max(200, 4 * (level or 50))


def _check_flags(
    requests: int | None,
    duration: float | None,
    max_error_rate: float | None,
    json_file: Path | None,
) -> None:
    """UsageError for flags that cannot go together or a JSON file that cannot be written."""
    if max_error_rate is not None and not 0 <= max_error_rate <= 1:
        raise UsageError("--max-error-rate must be a fraction between 0 and 1, e.g. 0.01.")
    if requests is not None and duration is not None:
        raise UsageError("give --requests or --duration, not both.")
    if json_file is not None:
        _check_writable(json_file)


class _Sweep:
    """The points of one command, measured one after another: results, the JSON document
    (rewritten after each point), and the server's silence when it stopped answering."""

    def __init__(self, *, json_file: Path | None, human: TextIO, quiet: bool) -> None:
        self.json_file = json_file
        self.human = human
        self.quiet = quiet
        self.tty = sys.stderr.isatty()
        self.results: list[PointResult] = []
        self.points: list[dict[str, Any]] = []
        self.model: str | None = None  # asked of /v1/models once per sweep
        self.gone: str | None = None

    def measure(self, settings: BenchSettings) -> bool:
        """Run one point, keep and print it; False when the server stopped answering."""
        lines = None
        if not self.quiet:
            lines = ProgressLines(_label(settings), tty=self.tty, stream=sys.stderr)
        started = time.perf_counter()
        result = run_point(settings, progress=lines)
        if lines is not None:
            lines.end(result, time.perf_counter() - started)
        self.model = result.model
        self.results.append(result)
        self.points.append(result.to_json())
        if self.json_file is not None:
            write_json_file(self.json_file, envelope(self.points))
        click.echo(render_point(result), file=self.human)
        if result.server_gone_s is not None:
            self.gone = gone_sentence(result.server_gone_s, len(result.samples), settings.requests)
        for warning in result.warnings:
            if warning != self.gone:
                click.echo(f"warning: {result.label}: {warning}", err=True)
        return self.gone is None


def _check_outcome(
    results: list[PointResult], gone: str | None, max_error_rate: float | None
) -> None:
    """Raise BenchError (exit 1) for a point that measured nothing or crossed a limit."""
    if gone is not None:
        raise BenchError(f"{results[-1].label}: {gone}")
    for result in results:
        if not result.completed:
            kinds = ", ".join(f"{k} {v}" for k, v in result.failures.items()) or "none sent"
            raise BenchError(
                f"{result.label}: no request completed ({kinds}); the failure_details in "
                "--json say why."
            )
    if max_error_rate is not None:
        for result in results:
            sent = result.completed + result.failed
            if sent and result.failed / sent > max_error_rate:
                raise BenchError(
                    f"{result.label}: {result.failed} of {sent} requests failed "
                    f"({result.failed / sent:.1%}), above --max-error-rate {max_error_rate:g}."
                )


class _Terminated(KeyboardInterrupt):
    """SIGTERM, raised where the main thread is so that everything unwinds as for Ctrl-C."""


@contextlib.contextmanager
def _sigterm_unwinds() -> Iterator[None]:
    """Turn SIGTERM into an exception for the block, then exit 143 with one line."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return

    def handler(signum: int, frame: FrameType | None) -> None:
        signal.signal(signal.SIGTERM, signal.SIG_DFL)  # a second SIGTERM ends us at once
        raise _Terminated

    previous = signal.signal(signal.SIGTERM, handler)
    try:
        yield
    except _Terminated:
        click.echo("Error: terminated.", err=True)
        raise SystemExit(128 + signal.SIGTERM) from None
    finally:
        signal.signal(signal.SIGTERM, previous)


def _label(settings: BenchSettings) -> str:
    """The load point as progress lines name it."""
    if settings.open_loop:
        return f"rate={settings.rate:g}/s"
    return f"c={settings.concurrency}"


class ProgressLines:
    """Progress of one point on stderr.

    On a terminal, one line rewritten in place. Elsewhere (nohup, CI, a pipe), a full
    line every `PROGRESS_EVERY_S` seconds of a point and one when it ends, so a long
    run is never silent for minutes and a log does not fill with carriage returns.
    """

    def __init__(
        self, label: str, *, tty: bool, stream: TextIO, every_s: float = PROGRESS_EVERY_S
    ) -> None:
        self.label = label
        self.tty = tty
        self.stream = stream
        self.every_s = every_s
        self._next_s = every_s

    def __call__(self, p: Progress) -> None:
        total = f"/{p.total}" if p.total else ""
        rate = p.chunks / p.elapsed_s if p.elapsed_s > 0 else 0.0
        eta = p.eta_s
        text = (
            f"{self.label}: {p.done}{total} done, {p.failed} failed, "
            f"{rate:,.0f} chunks/s, {p.elapsed_s:.0f} s"
            + ("" if eta is None else f", ETA {eta:.0f} s")
        )
        if self.tty:
            self.stream.write(f"\r\033[K{text}")
        elif p.elapsed_s >= self._next_s:
            self._next_s = (p.elapsed_s // self.every_s + 1) * self.every_s
            self.stream.write(text + "\n")
        else:
            return
        self.stream.flush()

    def end(self, result: PointResult, elapsed_s: float) -> None:
        """Close the point: clear the live line, or write the point's one closing line."""
        if self.tty:
            self.stream.write("\r\033[K")
        else:
            self.stream.write(
                f"{self.label}: finished, {result.completed} completed, {result.failed} "
                f"failed in {elapsed_s:.1f} s\n"
            )
        self.stream.flush()


def render_point(result: PointResult) -> str:
    """One aligned block of numbers for a load point."""
    s = result.summary
    lines = [
        f"{result.label}  model {result.model}  {result.completed} completed, "
        f"{result.failed} failed in {s['duration_s']:.2f} s",
    ]
    if result.failures:
        kinds = ", ".join(f"{k} {v}" for k, v in result.failures.items())
        lines.append(f"  failures            {kinds}")
    if result.reconnects:
        lines.append(
            f"  reconnects          {result.reconnects} (resent on a new connection: the "
            "server had closed the idle one)"
        )
    lines += [
        f"  request throughput  {s['request_throughput']:12.2f} req/s",
        f"  output throughput   {s['output_throughput']:12.1f} tok/s",
        f"  total throughput    {s['total_token_throughput']:12.1f} tok/s",
        f"  {'(ms)':18}{'mean':>10}{'p50':>10}{'p90':>10}{'p99':>10}",
    ]
    for title, key in LATENCY_ROWS:
        cells = "".join(_ms(s[f"{key}_ms_{stat}"]) for stat in ("mean", "p50", "p90", "p99"))
        lines.append(f"  {title:18}{cells}")
    server = result.server_metrics
    if server.get("available"):
        counters = server.get("counters", {})
        parts = [f"{k} +{v['delta']:.0f}" for k, v in counters.items() if v["delta"]]
        if "spec_acceptance_length" in server:
            parts.append(f"spec acceptance length {server['spec_acceptance_length']:.2f}")
        lines.append("  server              " + (", ".join(parts) or "no counter moved"))
    c = result.client
    lines.append(
        f"  client              {c.cpu_fraction:.0%} of a core, loop lag p99 "
        f"{c.loop_lag_ms_p99:.1f} ms, {c.workers} worker{'s' if c.workers > 1 else ''}"
    )
    return "\n".join(lines)


def render_sweep(results: list[PointResult]) -> str:
    """A closing table: one line per load point."""
    head = f"{'point':16}{'out tok/s':>12}{'req/s':>9}{'TTFT p50':>10}{'ITL p50':>9}{'failed':>8}"
    rows = [head]
    for r in results:
        s = r.summary
        rows.append(
            f"{r.label:16}{s['output_throughput']:12.1f}{s['request_throughput']:9.2f}"
            f"{_ms(s['ttft_ms_p50'])}{_ms(s['itl_ms_p50'], 9)}{r.failed:8d}"
        )
    return "\n".join(rows)


def _ms(value: float, width: int = 10) -> str:
    """A latency cell, or a dash when there is no value."""
    return f"{value:{width}.2f}" if math.isfinite(value) else f"{'-':>{width}}"


def _check_writable(path: Path) -> None:
    """Fail before measuring when the JSON file cannot be written."""
    check_output(path, flag="--json-file")
