"""The settings of one load point, validated once at the boundary.

`BenchSettings` is what `run_point` takes: one concurrency or one rate, a request count
or a duration, the prompt source and the request shape. Validation raises `UsageError`
with a sentence that names the flag to fix, so the command line and campaign files give
the same messages.
"""

from __future__ import annotations

import base64
import dataclasses
import math
import os
import urllib.parse
from dataclasses import dataclass
from typing import Any, Literal

from servegate.bench.slo import Target, slo_text
from servegate.bench.spec import parse_dataset
from servegate.errors import UsageError
from servegate.redact import mask_urls

API_PATHS = {"completions": "/v1/completions", "chat": "/v1/chat/completions"}


def default_workers(concurrency: int | None, rate: float | None) -> int:
    """Worker processes for a load point: one per 192 streams, at most one per usable core.

    One asyncio process keeps up with a few hundred streams on a modern core; more
    processes only help when there are cores to run them on, and on a machine shared with
    the server they would take the server's CPU, so the count stays at 1 below 192 streams.
    """
    cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count()
    streams = concurrency if concurrency is not None else 0
    if streams == 0 and rate is not None and math.isfinite(rate):
        streams = int(rate)  # a rough proxy: a stream per request per second
    return max(1, min(cores or 1, -(-streams // 192)))


@dataclass(frozen=True, slots=True, kw_only=True)
class BenchSettings:
    """One load point against one OpenAI-compatible server.

    Args:
        url: the server's base URL, e.g. ``http://127.0.0.1:8000`` (a trailing ``/v1`` is fine).
        api: ``completions`` or ``chat``.
        model: the model name to send; None asks ``/v1/models`` for the first one.
        concurrency: requests in flight at once (closed loop), or the cap under a rate.
        rate: requests per second on a schedule computed before the run; None or
            ``inf`` sends as fast as the concurrency allows.
        burstiness: the shape of the gamma inter-arrival times under a rate: 1 is
            Poisson, below 1 burstier, above 1 more regular (vLLM's ``--burstiness``).
        requests: measured requests; mutually exclusive with ``duration_s``.
        duration_s: measure for this long instead of a fixed count.
        warmup: requests sent before the measurement and not counted.
        input_len: approximate prompt length in tokens for the random dataset.
        output_len: ``max_tokens`` of every request (with ``ignore_eos``); None lets the
            dataset decide.
        dataset: the one-line form of a dataset (`servegate.bench.spec`): ``random``,
            ``prefix:...``, ``trace:FILE,...``, ``jsonl:FILE`` (or a bare ``.jsonl``
            path) or ``sharegpt:FILE``.
        seed: seeds prompts and the arrival schedule.
        timeout_s: per-request limit, from send to the end of the stream.
        api_key: sent as a bearer token; never printed or stored.
        metrics_url: the Prometheus endpoint to diff; None tries ``URL/metrics``; "" disables.
        engine: engine profile name for the metric names; None detects by prefix.
        ignore_eos: send ``ignore_eos: true`` so the server generates ``output_len`` tokens.
        workers: client processes; None picks `default_workers`.
        slo: the targets the point is evaluated against (`servegate.bench.slo`); empty
            for none.
        attainment: the share of requests that must attain every target for the point to
            meet its SLO; None lets every target's statistic decide.
        stop_early: a capacity probe: stop sending once the SLO has certainly failed.
        percentiles: latency percentiles reported beside p50, p90 and p99 (``--percentiles``).
        tokenizer: who counts prompt tokens for token-exact prompts: ``server`` (the
            engine's ``/tokenize``) or a tokenizer.json path; None: approximate prompts.
        cache: ``isolate`` salts the prompts by ``salt`` so no point reuses another's
            prefix cache; ``share`` sends the same prompts at every point.
        salt: the coordinates this point's prompts are salted by, e.g. (start, point).
        gpus: the GPU indexes whose energy the point counts (``--gpus``); None: the
            GPUs of the server's process tree when servegate launched it, else none.
        price_per_gpu_hour: US dollars per GPU-hour, for the point's cost per million
            output tokens (``--price-per-gpu-hour``); None: no cost.
    """

    url: str
    api: Literal["completions", "chat"] = "completions"
    model: str | None = None
    concurrency: int | None = 1
    rate: float | None = None
    burstiness: float = 1.0
    requests: int | None = 200
    duration_s: float | None = None
    warmup: int = 0
    input_len: int = 1024
    output_len: int | None = 256
    dataset: str = "random"
    seed: int = 0
    timeout_s: float = 600.0
    api_key: str | None = dataclasses.field(default=None, repr=False)
    metrics_url: str | None = None
    engine: str | None = None
    ignore_eos: bool = True
    workers: int | None = None
    slo: tuple[Target, ...] = ()
    attainment: float | None = None
    stop_early: bool = False
    percentiles: tuple[float, ...] = ()
    tokenizer: str | None = None
    cache: Literal["isolate", "share"] = "isolate"
    salt: tuple[int, ...] = ()
    gpus: tuple[int, ...] | None = None
    price_per_gpu_hour: float | None = None

    def __post_init__(self) -> None:
        _check(self)

    @property
    def base_url(self) -> str:
        """The URL without user-info, a trailing slash or ``/v1``."""
        parts = urllib.parse.urlsplit(self.url)
        if parts.username is not None or parts.password is not None:
            parts = parts._replace(netloc=parts.netloc.rpartition("@")[2])
        url = urllib.parse.urlunsplit(parts).rstrip("/")
        return url[: -len("/v1")] if url.endswith("/v1") else url

    @property
    def authorization(self) -> str | None:
        """The Authorization header: the API key as a bearer token, else ``user:pass@``."""
        if self.api_key:
            return f"Bearer {self.api_key}"
        parts = urllib.parse.urlsplit(self.url)
        if parts.username is None and parts.password is None:
            return None
        user = urllib.parse.unquote(parts.username or "")
        password = urllib.parse.unquote(parts.password or "")
        return "Basic " + base64.b64encode(f"{user}:{password}".encode()).decode("ascii")

    @property
    def endpoint(self) -> str:
        """The full URL requests are posted to."""
        return self.base_url + API_PATHS[self.api]

    @property
    def open_loop(self) -> bool:
        """True when arrivals follow a finite-rate schedule."""
        return self.rate is not None and math.isfinite(self.rate)

    def resolved_workers(self) -> int:
        """The number of client processes this point runs with."""
        if self.workers is not None:
            return self.workers
        return default_workers(self.concurrency, self.rate)

    def to_json(self) -> dict[str, Any]:
        """The settings as JSON, without the API key (only whether one was given)."""
        out = {f.name: getattr(self, f.name) for f in dataclasses.fields(self)}
        out.pop("api_key")
        out["url"] = mask_urls(self.url)
        if self.metrics_url:
            out["metrics_url"] = mask_urls(self.metrics_url)
        out["api_key_set"] = self.api_key is not None
        out["slo"] = slo_text(self.slo) if self.slo else None
        if self.rate is not None and not math.isfinite(self.rate):
            out["rate"] = "inf"
        return out


def _check(s: BenchSettings) -> None:
    """Raise UsageError naming the flag when a setting cannot work."""
    if not s.url.startswith(("http://", "https://")):
        raise UsageError(f"--url {mask_urls(s.url)!r} must start with http:// or https://.")
    if s.api not in API_PATHS:
        raise UsageError(f"--api {s.api!r} is not one of: completions, chat.")
    if s.concurrency is not None and s.concurrency < 1:
        raise UsageError("--concurrency must be a positive integer.")
    if s.rate is not None and (math.isnan(s.rate) or s.rate <= 0):
        raise UsageError("--rate must be a positive number of requests per second, or inf.")
    if not (math.isfinite(s.burstiness) and s.burstiness > 0):
        raise UsageError("--burstiness must be a positive number: 1 is Poisson, e.g. 0.5.")
    if s.concurrency is None and not s.open_loop and s.requests is None:
        raise UsageError("give --concurrency or a finite --rate (or both).")
    if (s.requests is None) == (s.duration_s is None):
        raise UsageError("give exactly one of --requests and --duration.")
    if s.requests is not None and s.requests < 1:
        raise UsageError("--requests must be a positive integer.")
    if s.duration_s is not None and not s.duration_s > 0:
        raise UsageError("--duration must be a positive number of seconds.")
    if s.warmup < 0:
        raise UsageError("--warmup must be zero or a positive integer.")
    if s.input_len < 1:
        raise UsageError("--input-len must be a positive integer.")
    kind = parse_dataset(s.dataset).kind
    if kind in ("multiturn", "agentic") and s.requests is None:
        raise UsageError(
            f"a {kind} dataset runs whole sessions: give --requests (turns in all) "
            "instead of --duration."
        )
    if parse_dataset(s.dataset).kind == "trace" and s.rate is not None:
        raise UsageError(
            "--rate cannot go with a trace dataset, whose rows are the schedule; drop --rate "
            "(speed=N in the dataset compresses the trace's time)."
        )
    if s.output_len is not None and s.output_len < 1:
        raise UsageError("--output-len must be a positive integer.")
    if not s.timeout_s > 0:
        raise UsageError("--timeout must be a positive number of seconds.")
    if s.attainment is not None and not 0 < s.attainment <= 1:
        raise UsageError("--attainment must be a share above 0 and at most 1, e.g. 0.95.")
    if s.cache not in ("isolate", "share"):
        raise UsageError(f"--cache {s.cache!r} is not one of: isolate, share.")
    if s.gpus is not None and (not s.gpus or min(s.gpus) < 0):
        raise UsageError("--gpus must be GPU indexes like 0,1.")
    if s.price_per_gpu_hour is not None and not (
        math.isfinite(s.price_per_gpu_hour) and s.price_per_gpu_hour > 0
    ):
        raise UsageError("--price-per-gpu-hour must be a positive number of dollars, e.g. 2.5.")
    if s.workers is not None and s.workers < 1:
        raise UsageError("--workers must be a positive integer.")
    if s.workers is not None and s.concurrency is not None and s.workers > s.concurrency:
        raise UsageError(
            f"--workers {s.workers} exceeds --concurrency {s.concurrency}; use at most that many."
        )
