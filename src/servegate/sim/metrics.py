"""The simulated engine's counters and histograms, exposed under the engine's own names.

Recording is a few integer additions and a bisect per observation, so it never slows
the token stream; ``render`` writes Prometheus text the way ``prometheus_client`` does
(counters carry ``_total``), with vLLM's, SGLang's or llama.cpp's metric names so that
a scraper written for the real engine reads the simulator unchanged.
"""

from __future__ import annotations

from bisect import bisect_left
from collections.abc import Callable

from servegate.sim.cache import KvCache

__all__ = ["Histogram", "Metrics", "render"]

TTFT_BUCKETS = (
    0.001, 0.005, 0.01, 0.02, 0.03, 0.04, 0.045, 0.05, 0.055, 0.06, 0.08, 0.1, 0.15, 0.2,
    0.25, 0.3, 0.4, 0.5, 0.75, 1.0, 2.5, 5.0, 7.5, 10.0, 20.0, 40.0, 80.0, 160.0, 640.0,
    2560.0,
)  # fmt: skip
ITL_BUCKETS = (
    0.001, 0.002, 0.004, 0.006, 0.008, 0.009, 0.01, 0.011, 0.012, 0.015, 0.02, 0.025, 0.03,
    0.04, 0.05, 0.075, 0.1, 0.15, 0.2, 0.3, 0.4, 0.5, 0.75, 1.0, 2.5, 5.0, 7.5, 10.0, 20.0,
    40.0, 80.0,
)  # fmt: skip
E2E_BUCKETS = (
    0.3, 0.5, 0.8, 1.0, 1.5, 2.0, 2.5, 5.0, 10.0, 15.0, 20.0, 30.0, 40.0, 50.0, 60.0, 120.0,
    240.0, 480.0, 960.0, 1920.0, 7680.0,
)  # fmt: skip


class Histogram:
    """A Prometheus histogram: per-bucket counts, a count and a sum."""

    __slots__ = ("buckets", "count", "counts", "sum")

    def __init__(self, buckets: tuple[float, ...]) -> None:
        self.buckets = buckets
        self.counts = [0] * (len(buckets) + 1)
        self.count = 0
        self.sum = 0.0

    def observe(self, value: float, times: int = 1) -> None:
        """Record ``value`` (``times`` times)."""
        self.counts[bisect_left(self.buckets, value)] += times
        self.count += times
        self.sum += value * times


class Metrics:
    """Everything the engine counts, in engine-neutral names."""

    def __init__(self, draft_tokens: int) -> None:
        self.prompt_tokens = 0
        self.generation_tokens = 0
        self.requests = 0
        self.finished: dict[str, int] = {"length": 0, "stop": 0}
        self.aborted = 0  # requests whose client went away before their end
        self.errors = 0
        self.spec_drafts = 0
        self.spec_draft_tokens = 0
        self.spec_accepted = 0
        self.spec_accepted_per_pos = [0] * max(1, draft_tokens)
        self.decode_steps = 0
        self.busy_slots = 0  # sum over decode steps of the running requests
        self.prompt_seconds = 0.0
        self.decode_seconds = 0.0  # summed over requests, as llama.cpp sums over slots
        self.gen_throughput = 0.0  # tokens/s over the last stats interval
        self.running: Callable[[], int] = lambda: 0
        self.waiting: Callable[[], int] = lambda: 0
        self.ttft = Histogram(TTFT_BUCKETS)
        self.itl = Histogram(ITL_BUCKETS)
        self.tpot = Histogram(ITL_BUCKETS)
        self.e2e = Histogram(E2E_BUCKETS)
        self.queue = Histogram(TTFT_BUCKETS)
        self.kv = KvCache(capacity_blocks=26_112, block_size=16)  # the server sets its own

    def spec_step(self, drafted: int, accepted: int) -> None:
        """One speculative decode step: ``drafted`` proposals, the first ``accepted`` kept."""
        self.spec_drafts += 1
        self.spec_draft_tokens += drafted
        self.spec_accepted += accepted
        per_pos = self.spec_accepted_per_pos
        for pos in range(min(accepted, len(per_pos))):
            per_pos[pos] += 1

    @property
    def accept_length(self) -> float:
        """Mean tokens per decode step (1 + accepted / drafts), 0 before any step."""
        if not self.spec_drafts:
            return 0.0
        return 1.0 + self.spec_accepted / self.spec_drafts


def _labels(pairs: dict[str, str]) -> str:
    if not pairs:
        return ""
    inner = ",".join(f'{k}="{v}"' for k, v in sorted(pairs.items()))
    return "{" + inner + "}"


class _Writer:
    def __init__(self, labels: dict[str, str]) -> None:
        self.labels = labels
        self.out: list[str] = []

    def family(self, name: str, kind: str, help_text: str) -> None:
        self.out.append(f"# HELP {name} {help_text}")
        self.out.append(f"# TYPE {name} {kind}")

    def counter(self, name: str, value: float, help_text: str) -> None:
        self.family(name + "_total", "counter", help_text)
        self.out.append(f"{name}_total{_labels(self.labels)} {float(value)}")

    def labelled_counter(self, name: str, key: str, values: dict[str, int], help_text: str) -> None:
        self.family(name + "_total", "counter", help_text)
        for label, value in values.items():
            pairs = {**self.labels, key: label}
            self.out.append(f"{name}_total{_labels(pairs)} {float(value)}")

    def gauge(self, name: str, value: float, help_text: str) -> None:
        self.family(name, "gauge", help_text)
        self.out.append(f"{name}{_labels(self.labels)} {float(value)}")

    def histogram(self, name: str, hist: Histogram, help_text: str) -> None:
        self.family(name, "histogram", help_text)
        running = 0
        for bound, count in zip(hist.buckets, hist.counts, strict=False):
            running += count
            pairs = {**self.labels, "le": repr(float(bound))}
            self.out.append(f"{name}_bucket{_labels(pairs)} {float(running)}")
        pairs = {**self.labels, "le": "+Inf"}
        self.out.append(f"{name}_bucket{_labels(pairs)} {float(hist.count)}")
        self.out.append(f"{name}_count{_labels(self.labels)} {float(hist.count)}")
        self.out.append(f"{name}_sum{_labels(self.labels)} {hist.sum}")


def render(engine: str, model: str, m: Metrics, *, spec: bool, kv_tokens: int) -> str:
    """Prometheus text of ``m`` under ``engine``'s metric names."""
    if engine == "sglang":
        return _sglang(model, m, spec=spec)
    if engine == "llamacpp":
        return _llamacpp(m, spec=spec, kv_tokens=kv_tokens)
    return _vllm(model, m, spec=spec, kv_tokens=kv_tokens)


def _vllm(model: str, m: Metrics, *, spec: bool, kv_tokens: int) -> str:
    w = _Writer({"engine": "0", "model_name": model})
    w.gauge(
        "vllm:num_requests_running", m.running(), "Number of requests in model execution batches."
    )
    w.gauge("vllm:num_requests_waiting", m.waiting(), "Number of requests waiting to be processed.")
    w.gauge("vllm:kv_cache_usage_perc", m.kv.usage, "KV-cache usage. 1 means 100 percent usage.")
    w.counter(
        "vllm:num_preemptions", m.kv.preemptions, "Cumulative number of preemption from the engine."
    )
    w.counter(
        "vllm:prefix_cache_queries",
        m.kv.queries,
        "Prefix cache queries, in terms of number of queried tokens.",
    )
    w.counter(
        "vllm:prefix_cache_hits",
        m.kv.hits,
        "Prefix cache hits, in terms of number of cached tokens.",
    )
    w.counter("vllm:prompt_tokens", m.prompt_tokens, "Number of prefill tokens processed.")
    w.counter(
        "vllm:generation_tokens", m.generation_tokens, "Number of generation tokens processed."
    )
    # vLLM counts a client that went away nowhere (AsyncLLM.abort records no stats: the
    # output processor drops the request); its "abort" reason is for requests the engine
    # itself ends so, which the simulator never does
    w.labelled_counter(
        "vllm:request_success",
        "finished_reason",
        {"length": m.finished["length"], "stop": m.finished["stop"], "abort": 0},
        "Count of successfully processed requests.",
    )
    w.histogram(
        "vllm:time_to_first_token_seconds", m.ttft, "Histogram of time to first token in seconds."
    )
    w.histogram(
        "vllm:inter_token_latency_seconds", m.itl, "Histogram of inter-token latency in seconds."
    )
    w.histogram(
        "vllm:time_per_output_token_seconds",
        m.tpot,
        "Histogram of time per output token in seconds.",
    )
    w.histogram(
        "vllm:e2e_request_latency_seconds", m.e2e, "Histogram of e2e request latency in seconds."
    )
    w.histogram(
        "vllm:request_queue_time_seconds",
        m.queue,
        "Histogram of time spent in WAITING phase for request.",
    )
    if spec:
        w.counter("vllm:spec_decode_num_drafts", m.spec_drafts, "Number of spec decoding drafts.")
        w.counter(
            "vllm:spec_decode_num_draft_tokens", m.spec_draft_tokens, "Number of draft tokens."
        )
        w.counter(
            "vllm:spec_decode_num_accepted_tokens", m.spec_accepted, "Number of accepted tokens."
        )
        w.labelled_counter(
            "vllm:spec_decode_num_accepted_tokens_per_pos",
            "position",
            {str(i): n for i, n in enumerate(m.spec_accepted_per_pos)},
            "Accepted tokens per draft position.",
        )
    return "\n".join(w.out) + "\n"


def _sglang(model: str, m: Metrics, *, spec: bool) -> str:
    w = _Writer({"model_name": model})
    w.gauge("sglang:num_running_reqs", m.running(), "The number of running requests.")
    w.gauge("sglang:num_queue_reqs", m.waiting(), "The number of requests in the waiting queue.")
    w.gauge("sglang:token_usage", m.kv.usage, "The token usage.")
    w.gauge(
        "sglang:max_total_num_tokens",
        m.kv.capacity * m.kv.block_size,
        "Maximum total number of tokens in the KV cache pool.",
    )
    w.gauge("sglang:cache_hit_rate", m.kv.last_rate, "The prefix cache hit rate.")
    w.gauge("sglang:gen_throughput", m.gen_throughput, "The generation throughput (token/s).")
    if spec:
        w.gauge(
            "sglang:spec_accept_length",
            m.accept_length,
            "The average acceptance length of speculative decoding.",
        )
        rate = m.spec_accepted / m.spec_draft_tokens if m.spec_draft_tokens else 0.0
        w.gauge(
            "sglang:spec_accept_rate", rate, "The average acceptance rate of speculative decoding."
        )
    w.counter("sglang:prompt_tokens", m.prompt_tokens, "Number of prefill tokens processed.")
    w.counter(
        "sglang:generation_tokens", m.generation_tokens, "Number of generation tokens processed."
    )
    w.counter("sglang:num_requests", m.requests, "Number of requests processed.")
    w.counter("sglang:num_aborted_requests", m.aborted, "Number of requests aborted.")
    w.histogram(
        "sglang:time_to_first_token_seconds", m.ttft, "Histogram of time to first token in seconds."
    )
    w.histogram(
        "sglang:inter_token_latency_seconds", m.itl, "Histogram of inter-token latency in seconds."
    )
    w.histogram(
        "sglang:e2e_request_latency_seconds",
        m.e2e,
        "Histogram of End-to-end request latency in seconds",
    )
    w.histogram("sglang:queue_time_seconds", m.queue, "Histogram of queueing time in seconds.")
    return "\n".join(w.out) + "\n"


def _llamacpp(m: Metrics, *, spec: bool, kv_tokens: int) -> str:
    w = _Writer({})
    w.counter("llamacpp:prompt_tokens", m.prompt_tokens, "Number of prompt tokens processed.")
    w.counter("llamacpp:prompt_seconds", m.prompt_seconds, "Prompt process time")
    w.counter(
        "llamacpp:tokens_predicted", m.generation_tokens, "Number of generation tokens processed."
    )
    w.counter("llamacpp:tokens_predicted_seconds", m.decode_seconds, "Predict process time")
    w.counter("llamacpp:n_decode", m.decode_steps, "Total number of llama_decode() calls")
    busy = m.busy_slots / m.decode_steps if m.decode_steps else 0.0
    w.gauge(
        "llamacpp:n_busy_slots_per_decode",
        busy,
        "Average number of busy slots per llama_decode() call",
    )
    pps = m.prompt_tokens / m.prompt_seconds if m.prompt_seconds else 0.0
    w.gauge("llamacpp:prompt_tokens_seconds", pps, "Average prompt throughput in tokens/s.")
    tps = m.generation_tokens / m.decode_seconds if m.decode_seconds else 0.0
    w.gauge("llamacpp:predicted_tokens_seconds", tps, "Average generation throughput in tokens/s.")
    w.gauge("llamacpp:requests_processing", m.running(), "Number of requests processing.")
    w.gauge("llamacpp:requests_deferred", m.waiting(), "Number of requests deferred.")
    w.gauge("llamacpp:n_tokens_max", kv_tokens, "Largest observed n_tokens.")
    if spec:
        w.counter(
            "llamacpp:spec_decode_num_drafts", m.spec_drafts, "Number of spec decoding drafts."
        )
        w.counter(
            "llamacpp:spec_decode_num_draft_tokens", m.spec_draft_tokens, "Number of draft tokens."
        )
        w.counter(
            "llamacpp:spec_decode_num_accepted_tokens",
            m.spec_accepted,
            "Number of accepted tokens.",
        )
    return "\n".join(w.out) + "\n"
