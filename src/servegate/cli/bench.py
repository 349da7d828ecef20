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
from servegate.bench.capacity import Capacity, Probe, Search, SearchOptions, drain
from servegate.bench.metrics import PERCENTILES, percentile_key
from servegate.bench.slo import SloResult, parse_slo
from servegate.bench.spec import DatasetSpec, parse_dataset
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


def _gpus(value: str | None) -> tuple[int, ...] | None:
    """``--gpus``: GPU indexes like 0,1 (NVML's order, as nvidia-smi lists them)."""
    if value is None:
        return None
    try:
        items = tuple(int(x) for x in value.split(","))
    except ValueError:
        items = ()
    if not items or min(items) < 0 or len(set(items)) != len(items):
        raise UsageError(f"--gpus {value!r} must be distinct GPU indexes like 0,1.")
    return items


def _rates(value: str | None) -> list[float | None]:
    """``--rate``: a rate or a sweep of them (each a positive number or ``inf``)."""
    if value is None:
        return [None]
    items = [x.strip() for x in value.split(",")]
    if not all(items):
        raise UsageError(f"--rate {value!r} must be requests per second like 2,4,8 (or inf).")
    rates = [_rate(x) for x in items]
    if len(set(rates)) != len(rates):
        raise UsageError(f"--rate {value!r} lists a rate twice; list each rate once.")
    return rates


def _percentiles(value: str | None) -> tuple[float, ...]:
    """``--percentiles``: numbers above 0 and below 100, e.g. 50,90,95,99,99.9."""
    if value is None:
        return ()
    try:
        items = tuple(float(x) for x in value.split(","))
    except ValueError:
        items = ()
    if not items or not all(0 < p < 100 for p in items):
        raise UsageError(
            f"--percentiles {value!r} must be numbers between 0 and 100 like 50,90,95,99,99.9."
        )
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
could not be measured, or the error rate crossed --max-error-rate, or with --fail-on-slo
a point missed --slo (--find-max: no load met it); 2 bad flags or input; 130 Ctrl-C;
143 SIGTERM. A missed SLO alone is data: exit 0.

"""
    + examples(
        "servegate sim --engine vllm --port 8123 --startup 0 & sleep 2",
        "servegate bench --url http://127.0.0.1:8123 --concurrency 1,16,64 --requests 200 \\",
        "    --input-len 1024 --output-len 256 --json-file results.json",
        "servegate bench --url http://127.0.0.1:8123 --rate 2,4,8 --burstiness 0.5 \\",
        "    --duration 60 --percentiles 50,90,95,99,99.9 --json -q",
        'servegate bench --url http://127.0.0.1:8123 --slo "ttft_p99<=500ms,tpot_p99<=50ms" \\',
        "    --find-max concurrency --max-concurrency 256",
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
    help="Requests in flight: N or a sweep N,N,... (with --rate: a cap on every rate) "
    "[default: 1; with a finite --rate: no cap]",
)
@click.option(
    "--rate",
    "rate_text",
    default=None,
    help="Arrivals per second, planned before the run: R or a sweep R,R,..., or inf [default: inf]",
)
@click.option(
    "--burstiness",
    type=float,
    default=1.0,
    show_default=True,
    help="Shape of the gamma gaps between arrivals under --rate: 1 is Poisson, below 1 "
    "burstier, above 1 more regular (vLLM's --burstiness).",
)
@click.option(
    "--percentiles",
    "percentiles_text",
    default=None,
    help="More latency percentiles to report beside p50, p90, p99, e.g. 50,90,95,99,99.9.",
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
    default=None,
    help="max_tokens of each request, sent with ignore_eos [default: 256 for generated "
    "prompts; a file's or trace's own lengths, without ignore_eos]",
)
@click.option(
    "--dataset",
    default="random",
    show_default=True,
    help="KIND[:KEY=VALUE,...]: random, prefix:groups=8,per_group=16,shared=512,unique=128, "
    "multiturn:turns=4,first=256,user=64,think=0, agentic:turns=3,fanout=2,sub_turns=2, "
    "trace:FILE[,speed=2], sharegpt:FILE, jsonl:FILE or FILE.jsonl (docs/bench.md).",
)
@click.option(
    "--seed", type=int, default=0, show_default=True, help="Seed of prompts and schedule."
)
@click.option(
    "--tokenizer",
    default=None,
    metavar="server|PATH",
    help="Token-exact prompts, counted by the engine's /tokenize ('server') or a local "
    "tokenizer.json (servegate[tokens]); chat prompts count the template's tokens "
    "[default: approximate prompts]",
)
@click.option(
    "--cache",
    type=click.Choice(["isolate", "share"]),
    default="isolate",
    show_default=True,
    help="isolate: salt each point's prompts so none reuses another's prefix cache; "
    "share: the same prompts at every point.",
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
@click.option(
    "--slo",
    "slo_text",
    default=None,
    help='Targets each point is held to, e.g. "ttft_p99<=500ms,tpot_p99<=50ms" '
    "(ttft, tpot, itl, e2el; pNN or mean; us, ms or s).",
)
@click.option(
    "--attainment",
    type=float,
    default=None,
    help="With --slo: a point meets it when this share of requests meets every target "
    "[default: every target's statistic decides]",
)
@click.option(
    "--fail-on-slo",
    is_flag=True,
    help="Exit 1 when a point misses --slo (or --find-max finds no load that meets it).",
)
@click.option(
    "--find-max",
    type=click.Choice(["concurrency", "rate"]),
    default=None,
    help="Search for the largest concurrency or rate that meets --slo.",
)
@click.option(
    "--max-probes", type=int, default=15, show_default=True, help="--find-max: probes at most."
)
@click.option(
    "--precision",
    default="5%",
    show_default=True,
    help="--find-max: stop bisecting when the bracket is this close (a share of its low end).",
)
@click.option(
    "--max-concurrency",
    type=int,
    default=None,
    help="--find-max concurrency: the top of the range [default: 512]",
)
@click.option(
    "--max-rate",
    type=float,
    default=None,
    help="--find-max rate: the top of the range, requests/s [default: 256]",
)
@click.option(
    "--gpus",
    "gpus_text",
    default=None,
    metavar="0,1",
    help="GPU indexes the server uses, whose energy each point counts (NVML) "
    "[default: none; servegate did not launch the server]",
)
@click.option(
    "--price-per-gpu-hour",
    type=float,
    default=None,
    metavar="USD",
    help="Dollars per GPU-hour: each point's cost per million output tokens (with --gpus).",
)
@host_option("the server")
@bench_from_option()
def bench(  # noqa: PLR0917 (click passes options by position)
    url: str,
    api: str,
    model: str | None,
    concurrency_text: str | None,
    rate_text: str | None,
    burstiness: float,
    percentiles_text: str | None,
    requests: int | None,
    duration: float | None,
    warmup: int,
    input_len: int,
    output_len: int | None,
    dataset: str,
    seed: int,
    tokenizer: str | None,
    cache: str,
    timeout: float,
    api_key: str | None,
    metrics_url: str | None,
    engine: str | None,
    workers: int | None,
    as_json: bool,
    json_file: Path | None,
    quiet: bool,
    max_error_rate: float | None,
    slo_text: str | None,
    attainment: float | None,
    fail_on_slo: bool,
    find_max: str | None,
    max_probes: int,
    precision: str,
    max_concurrency: int | None,
    max_rate: float | None,
    gpus_text: str | None,
    price_per_gpu_hour: float | None,
    host: str,
    bench_from: str | None,
) -> None:
    """Benchmark an OpenAI-compatible server: throughput, TTFT, TPOT, ITL, E2EL per load point.

    Each load point streams requests with usage reporting on, keeps every request's raw
    chunk timestamps, diffs the engine's /metrics counters, and checks that the client
    itself was not the bottleneck. A server that stops answering ends the point (with
    back-off, not a storm of reconnects) and the command exits 1.
    """
    _remote(host, bench_from, as_json=as_json, json_file=json_file, api_key=api_key, gpus=gpus_text)
    gpus = _gpus(gpus_text)
    targets = parse_slo(slo_text) if slo_text is not None else ()
    _check_slo_flags(targets, attainment, fail_on_slo, find_max)
    _check_range_flags(find_max, max_concurrency, max_rate)
    rates = _rates(rate_text) if find_max is None else [_rate(rate_text)]
    spec = parse_dataset(dataset)
    trace = spec.kind == "trace"
    levels = _levels(concurrency_text, rates[0], trace=trace)
    percentiles = _percentiles(percentiles_text)
    _check_flags(requests, duration, max_error_rate, json_file)
    search = None
    if find_max is not None:
        search = _search_options(
            find_max, concurrency_text, rate_text, requests, duration, warmup, max_probes,
            precision, max_concurrency, max_rate,
        )  # fmt: skip
        levels = [1]
    template = BenchSettings(
        url=url,
        api=api,  # type: ignore[arg-type]
        model=model,
        concurrency=levels[0],
        rate=rates[0],
        burstiness=burstiness,
        requests=_requests(requests, duration, levels[0]),
        duration_s=duration,
        warmup=warmup,
        input_len=input_len,
        output_len=_output_len(output_len, spec),
        # the one-line form with every key (the workload key); a bare JSONL path as given
        dataset=dataset if spec.kind == "jsonl" and not dataset.startswith("jsonl:") else spec.text,
        seed=seed,
        tokenizer=tokenizer,
        cache=cache,  # type: ignore[arg-type]
        timeout_s=timeout,
        api_key=api_key,
        metrics_url=metrics_url,
        engine=engine,
        workers=workers,
        slo=targets,
        attainment=attainment,
        percentiles=percentiles,
        gpus=gpus,
        price_per_gpu_hour=price_per_gpu_hour,
    )
    if search is not None:
        _find_max(
            template,
            search,
            as_json=as_json,
            json_file=json_file,
            quiet=quiet,
            fail_on_slo=fail_on_slo,
        )
        return
    sweep = _Sweep(json_file=json_file, human=sys.stderr if as_json else sys.stdout, quiet=quiet)
    with _sigterm_unwinds():
        for index, (rate, level) in enumerate(_points(rates, concurrency_text, trace=trace)):
            settings = replace(
                template,
                rate=rate,
                concurrency=level,
                requests=_requests(requests, duration, level),
                model=sweep.model or model,
                salt=(0, index),  # one start, this point: no point reuses another's prompts
            )
            if not sweep.measure(settings):
                break  # the later points would only meet the same silence
    if as_json:
        click.echo(json.dumps(envelope(sweep.points)))
    if len(sweep.results) > 1:
        click.echo(render_sweep(sweep.results), file=sweep.human)
    _check_outcome(sweep.results, sweep.gone, max_error_rate)
    if fail_on_slo:
        missed = [r.label for r in sweep.results if r.slo is not None and not r.slo.met]
        if missed:
            raise BenchError(f"{', '.join(missed)} missed --slo {slo_text} (--fail-on-slo).")


def _remote(
    host: str,
    bench_from: str | None,
    *,
    as_json: bool,
    json_file: Path | None,
    api_key: str | None,
    gpus: str | None,
) -> None:
    """``--host``: bench the server on that host (never returns), unless it is this one."""
    from servegate.remote.hosts import is_local

    if gpus is not None and bench_from == "local" and not is_local(host):
        raise UsageError(
            "--gpus counts the energy of GPUs where the load generator runs; drop "
            "--bench-from local so that it runs on the server's host."
        )
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


def _levels(
    concurrency_text: str | None, rate: float | None, *, trace: bool = False
) -> list[int | None]:
    """The sweep's concurrency levels; one uncapped point under a finite rate or a trace's
    schedule, else c=1."""
    if concurrency_text is not None:
        return list(_ints(concurrency_text, "--concurrency"))
    if trace or (rate is not None and math.isfinite(rate)):
        return [None]
    return [1]


def _points(
    rates: list[float | None], concurrency_text: str | None, *, trace: bool = False
) -> list[tuple[float | None, int | None]]:
    """Every rate with every concurrency cap, rates outermost (as campaigns order them)."""
    return [
        (rate, level) for rate in rates for level in _levels(concurrency_text, rate, trace=trace)
    ]


def _output_len(given: int | None, spec: DatasetSpec) -> int | None:
    """max_tokens: as given; 256 for generated prompts; a file's or trace's own lengths."""
    if given is not None:
        return given
    return 256 if spec.kind in ("random", "prefix", "multiturn", "agentic") else None


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


def _check_slo_flags(
    targets: tuple[object, ...], attainment: float | None, fail_on_slo: bool, find_max: str | None
) -> None:
    """UsageError for SLO flags given without --slo, or out of range."""
    if not targets:
        for given, flag in ((attainment is not None, "--attainment"), (fail_on_slo,
                            "--fail-on-slo"), (find_max is not None, "--find-max")):  # fmt: skip
            if given:
                raise UsageError(f'{flag} needs targets: add --slo "ttft_p99<=500ms,...".')
    if attainment is not None and not 0 < attainment <= 1:
        raise UsageError("--attainment must be a share above 0 and at most 1, e.g. 0.95.")


def _check_range_flags(
    find_max: str | None, max_concurrency: int | None, max_rate: float | None
) -> None:
    """UsageError for a search range given without the search it bounds."""
    if find_max is None and max_concurrency is not None:
        raise UsageError("--max-concurrency is the top of --find-max concurrency; add that.")
    if find_max is None and max_rate is not None:
        raise UsageError("--max-rate is the top of --find-max rate; add that.")


def _precision(text: str) -> float:
    """``--precision 5%`` or ``0.05`` as a fraction."""
    try:
        value = float(text[:-1]) / 100 if text.endswith("%") else float(text)
    except ValueError:
        value = math.nan
    if not 0 < value < 1:
        raise UsageError(f"--precision {text!r} must be a share like 5% or 0.05.")
    return value


def _search_options(  # noqa: PLR0917 (the flags of --find-max, checked together)
    over: str,
    concurrency_text: str | None,
    rate_text: str | None,
    requests: int | None,
    duration: float | None,
    warmup: int,
    max_probes: int,
    precision: str,
    max_concurrency: int | None,
    max_rate: float | None,
) -> SearchOptions:
    """The search's range and budget from the flags, or a UsageError naming the flag."""
    if max_probes < 2:
        raise UsageError("--max-probes must be at least 2.")
    share = _precision(precision)
    if over == "concurrency":
        if rate_text is not None or max_rate is not None:
            raise UsageError("--find-max concurrency runs closed-loop probes; leave out --rate "
                             "and --max-rate.")  # fmt: skip
        if duration is not None:
            raise UsageError("concurrency probes are bound by a request count: give --requests, "
                             "not --duration.")  # fmt: skip
        if max_concurrency is not None and max_concurrency < 1:
            raise UsageError("--max-concurrency must be a positive integer.")
        low, high = 1.0, float(max_concurrency or 512)
        if concurrency_text is not None:
            levels = _ints(concurrency_text, "--concurrency")
            low, high = float(min(levels)), float(max(levels))
            if max_concurrency is not None:
                high = float(max_concurrency)
    else:
        if concurrency_text is not None or max_concurrency is not None:
            raise UsageError("--find-max rate lifts the concurrency cap; leave out "
                             "--concurrency and --max-concurrency.")  # fmt: skip
        if requests is not None:
            raise UsageError("rate probes are bound by time: give --duration, not --requests.")
        rate = _rate(rate_text)
        if rate is not None and not math.isfinite(rate):
            raise UsageError("--find-max rate needs a finite --rate as its lowest load, or none.")
        if max_rate is not None and not (math.isfinite(max_rate) and max_rate > 0):
            raise UsageError("--max-rate must be a positive number of requests per second.")
        low, high = rate or 1.0, max_rate or 256.0
    if low > high:
        raise UsageError(f"the lowest load {low:g} is above the top {high:g}; raise --max-{over}.")
    return SearchOptions(
        over=over,  # type: ignore[arg-type]
        low=low,
        high=high,
        max_probes=max_probes,
        precision=share,
        requests=requests,
        duration_s=duration if duration is not None else 30.0,
        warmup=warmup or None,
    )


def _find_max(
    template: BenchSettings,
    options: SearchOptions,
    *,
    as_json: bool,
    json_file: Path | None,
    quiet: bool,
    fail_on_slo: bool,
) -> None:
    """Run the capacity search and print it: a line per probe, then the capacity."""
    from servegate.bench.capacity import find_max

    human = sys.stderr if as_json else sys.stdout
    tty = sys.stderr.isatty()
    points: list[dict[str, Any]] = []
    model: list[str] = []

    def on_probe(number: int, load: float, search: Search) -> None:
        if quiet or not tty:
            return
        sys.stderr.write(
            f"\r\033[Kprobe {number}/{options.max_probes}: {_load_words(options, load)} "
            f"(bracket: {_bracket_words(options, search.passes, search.fails)})\n"
        )
        sys.stderr.flush()

    def run(settings: BenchSettings) -> PointResult:
        if model:
            settings = replace(settings, model=model[0])
        lines = None
        if not quiet:
            lines = ProgressLines(_label(settings), tty=tty, stream=sys.stderr)
        started = time.perf_counter()
        result = run_point(settings, progress=lines)
        if lines is not None:
            lines.end(result, time.perf_counter() - started)
        model[:] = [result.model]
        return result

    def on_measured(probe: Probe) -> None:
        points.append(probe.result.to_json())
        if json_file is not None:
            write_json_file(json_file, envelope(points))
        click.echo(render_probe(probe.number, probe.result), file=human)

    with _sigterm_unwinds():
        capacity = find_max(
            template, options, run=run, between=drain, on_probe=on_probe, on_measured=on_measured
        )
    document = envelope(points) | {"capacity": capacity.to_json()}
    if json_file is not None:
        write_json_file(json_file, document)
    if as_json:
        click.echo(json.dumps(document))
    click.echo(render_capacity(capacity), file=human)
    gone = [p for p in capacity.probes if p.result.server_gone_s is not None]
    if gone:
        p = gone[-1].result
        raise BenchError(
            f"{p.label}: "
            + gone_sentence(p.server_gone_s or 0.0, len(p.samples), p.settings.requests)
        )
    if fail_on_slo and capacity.value is None:
        raise BenchError(f"no load meets --slo {capacity.slo}: {capacity.words} (--fail-on-slo).")


def _load_words(options: SearchOptions, load: float | None) -> str:
    if load is None:
        return "-"
    return f"c={load:g}" if options.over == "concurrency" else f"rate={load:g}/s"


def _bracket_words(options: SearchOptions, passes: float | None, fails: float | None) -> str:
    return f"passes {_load_words(options, passes)}, fails {_load_words(options, fails)}"


def render_probe(number: int, result: PointResult) -> str:
    """One line per probe: its load, met or not, throughput, and each target's value."""
    slo = result.slo
    verdict = "-" if slo is None else ("met" if slo.met else "not met")
    if result.stopped_early:
        verdict += " (stopped early)"
    cells = ""
    if slo is not None:
        cells = "  " + "  ".join(
            f"{t.target.metric}_{t.target.stat} {_value_ms(t.value_ms)}" for t in slo.targets
        )
    return (
        f"probe {number:<3}{result.label:16}{verdict:24}"
        f"{result.summary['output_throughput']:10.1f} tok/s{cells}"
    )


def render_capacity(capacity: Capacity) -> str:
    """The search's answer: the capacity with its interval, then cliff and saturation."""
    what = "concurrency" if capacity.over == "concurrency" else "rate"
    lines = [f"capacity ({what}) at {capacity.slo}: {capacity.words}"]
    passes, fails = capacity.bracket
    lines.append(
        f"  {len(capacity.probes)} probes; highest pass {passes if passes is not None else '-'}, "
        f"lowest fail {fails if fails is not None else '-'}"
        + (f"; limited by {capacity.limiting}" if capacity.limiting else "")
    )
    if capacity.cliff is not None:
        c = capacity.cliff
        lines.append(
            f"  cliff: output throughput fell to {c['output_throughput']:.1f} tok/s at "
            f"{c['load']:g} from {c['peak_output_throughput']:.1f} at {c['peak_load']:g}"
        )
    if capacity.saturated is not None:
        lines.append(
            f"  saturated from {capacity.saturated:g}: achieved rate below offered, or the "
            "queue growing"
        )
    if capacity.note is not None:
        lines.append(f"  interval: {capacity.note}")
    return "\n".join(lines)


def render_slo(slo: SloResult) -> list[str]:
    """The SLO lines of a point's block."""
    head = "met" if slo.met else "NOT met"
    if slo.stopped_early:
        head += " (stopped early at a certain failure)"
    lines = [f"  SLO                 {head}"]
    for t in slo.targets:
        att = "" if t.attainment is None else f"   {t.attainment:6.1%} of requests within"
        lines.append(
            f"    {t.target.text:18}{_value_ms(t.value_ms):>10} ms  "
            f"{'met' if t.met else 'NOT met':8}{att}"
        )
    if slo.goodput_rps is not None and slo.attainment is not None:
        lines.append(
            f"  goodput             {slo.goodput_rps:12.2f} req/s  "
            f"{slo.goodput_tok_s or 0.0:10.1f} tok/s  ({slo.attainment:.1%} met every target)"
        )
    return lines


def _value_ms(value: float) -> str:
    if math.isnan(value):
        return "-"
    return "inf" if math.isinf(value) else f"{value:.2f}"


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
        _arrivals_line(result),
    ]
    stats = ["mean"] + [
        percentile_key(p) for p in sorted(set(PERCENTILES) | set(result.settings.percentiles))
    ]
    lines.append(f"  {'(ms)':18}" + "".join(f"{stat:>10}" for stat in stats))
    for title, key in LATENCY_ROWS:
        cells = "".join(_ms(s.get(f"{key}_ms_{stat}", math.nan)) for stat in stats)
        lines.append(f"  {title:18}{cells}")
    server = result.server_metrics
    if server.get("available"):
        counters = server.get("counters", {})
        parts = [f"{k} +{v['delta']:.0f}" for k, v in counters.items() if v["delta"]]
        if "spec_acceptance_length" in server:
            parts.append(f"spec acceptance length {server['spec_acceptance_length']:.2f}")
        lines.append("  server              " + (", ".join(parts) or "no counter moved"))
    lines.append(_prompt_line(result.prompt_tokens))
    if result.cache:
        lines.append(_cache_line(result.cache))
    for turn in result.turns:
        lines.append(_turn_line(turn))
    if result.slo is not None:
        lines += render_slo(result.slo)
    energy = _energy_line(result)
    if energy:
        lines.append(energy)
    c = result.client
    lines.append(
        f"  client              {c.cpu_fraction:.0%} of a core, loop lag p99 "
        f"{c.loop_lag_ms_p99:.1f} ms, {c.workers} worker{'s' if c.workers > 1 else ''}, "
        f"reads timed by {_READ_STAMPS.get(c.read_stamps, c.read_stamps)}"
    )
    return "\n".join(lines)


_READ_STAMPS = {
    "kernel": "the kernel",
    "select": "the event loop",
    "mixed": "the kernel and the event loop",
}


def _energy_line(result: PointResult) -> str:
    """The point's energy and cost; empty where this machine has no GPU (nothing to say)."""
    e = result.energy
    if e is None or not e.gpu_seen:
        return ""
    if e.energy_j is None or e.mean_power_w is None:
        return f"  energy              not measured: {e.reason}"
    gpus = ",".join(map(str, e.gpus))
    text = (
        f"  energy              {e.energy_j:.1f} J on GPU {gpus} ({e.by}), "
        f"{e.mean_power_w:.1f} W mean"
    )
    if e.joules_per_output_token is not None:
        text += f", {e.joules_per_output_token:.4g} J/output token"
    if e.usd_per_million_output_tokens is not None:
        text += f", ${e.usd_per_million_output_tokens:.4g} per million output tokens"
    return text


def _turn_line(turn: dict[str, Any]) -> str:
    """A multiturn or agentic point's metrics at one turn index (of a main session or of
    its sub-agents)."""

    def ms(value: float | None) -> str:
        return "n/a" if value is None else f"{value:.1f}"

    tokens = turn["prompt_tokens_mean"]
    name = ("sub-agent turn " if turn.get("agent") == "sub" else "turn ") + str(turn["turn"])
    return (
        f"  {name:<19} {turn['requests']} requests, prompt "
        f"{'n/a' if tokens is None else f'{tokens:.0f}'} tokens, TTFT p50 "
        f"{ms(turn['ttft_ms_p50'])} p99 {ms(turn['ttft_ms_p99'])} ms, "
        f"E2EL p50 {ms(turn['e2el_ms_p50'])} ms"
    )


def _cache_line(block: dict[str, Any]) -> str:
    """The prefix-cache hit rate the point's design implies, and the one measured."""
    design, measured = block.get("design_hit_rate"), block.get("measured_hit_rate")
    text = f"  prefix cache        {block.get('mode')}, design {_rate_text(design)}"
    if measured is None:
        return text + ", not reported by the server"
    flag = " CACHE-CONTAMINATED" if block.get("contaminated") else ""
    flag += " CACHE-EVICTED" if block.get("evicted") else ""
    return text + f", measured {_rate_text(measured)} ({block.get('measured_by')}){flag}"


def _rate_text(rate: float | None) -> str:
    return "n/a" if rate is None else f"{rate:.1%}"


def _arrivals_line(result: PointResult) -> str:
    """Offered against achieved arrivals: the schedule's rate, the send and completion rates."""
    s, settings = result.summary, result.settings
    sent = s.get("sent_rate", math.nan)
    tail = (
        f"sent {sent:.2f}, " if math.isfinite(sent) else ""
    ) + f"achieved {s.get('achieved_rate', s['request_throughput']):.2f} req/s"
    if settings.open_loop:
        shape = "Poisson" if settings.burstiness == 1 else f"burstiness {settings.burstiness:g}"
        return f"  arrivals            offered {settings.rate:g} req/s ({shape}), {tail}"
    return f"  arrivals            closed loop (no offered rate), {tail}"


def _prompt_line(block: dict[str, Any]) -> str:
    """Requested prompt tokens against the server's count, or that they are approximate."""
    if not block.get("compared"):
        kind = "exact" if block.get("exact") else "approximate"
        return f"  prompt tokens       {kind}, no usage.prompt_tokens to compare"
    head = (
        f"  prompt tokens       requested {block['requested_mean']:.1f}, "
        f"usage {block['usage_mean']:.1f}"
    )
    if not block["exact"]:
        return head + " (approximate prompts: --tokenizer server or PATH for exact ones)"
    return (
        head + f" (exact by {block['tokenizer']}: {block['mismatched']} mismatched, "
        f"max diff {block['max_abs_diff']}, mean {block['mean_diff']:+.2f})"
    )


def render_sweep(results: list[PointResult]) -> str:
    """A closing table: one line per load point."""
    head = f"{'point':16}{'out tok/s':>12}{'req/s':>9}{'TTFT p50':>10}{'ITL p50':>9}{'failed':>8}"
    with_slo = any(r.slo is not None for r in results)
    if with_slo:
        head += f"{'SLO':>9}{'goodput tok/s':>15}"
    with_energy = any(r.energy is not None and r.energy.measured for r in results)
    if with_energy:
        head += f"{'J/out tok':>11}{'W':>8}"
    rows = [head]
    for r in results:
        s = r.summary
        row = (
            f"{r.label:16}{s['output_throughput']:12.1f}{s['request_throughput']:9.2f}"
            f"{_ms(s['ttft_ms_p50'])}{_ms(s['itl_ms_p50'], 9)}{r.failed:8d}"
        )
        if with_slo:
            met = "-" if r.slo is None else ("met" if r.slo.met else "not met")
            good = r.slo.goodput_tok_s if r.slo is not None else None
            row += f"{met:>9}" + (f"{good:15.1f}" if good is not None else f"{'-':>15}")
        if with_energy:
            e = r.energy
            per_token = e.joules_per_output_token if e is not None else None
            power = e.mean_power_w if e is not None else None
            row += f"{per_token:11.4g}" if per_token is not None else f"{'-':>11}"
            row += f"{power:8.1f}" if power is not None else f"{'-':>8}"
        rows.append(row)
    return "\n".join(rows)


def _ms(value: float, width: int = 10) -> str:
    """A latency cell, or a dash when there is no value."""
    return f"{value:{width}.2f}" if math.isfinite(value) else f"{'-':>{width}}"


def _check_writable(path: Path) -> None:
    """Fail before measuring when the JSON file cannot be written."""
    check_output(path, flag="--json-file")
