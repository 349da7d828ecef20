"""The shape of an engine profile: plain data that the gate reads.

A profile says how one inference engine announces readiness, progress and failure in
its log, which HTTP route proves it is ready, which child processes it cannot live
without, and what its Prometheus counters are called. Profiles hold regular
expressions as text so that they stay readable data; the gate compiles them.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

__all__ = ["METRIC_KEYS", "EngineProfile", "Phase", "Progress", "Signature"]

# The logical metric names every profile maps (to None when the engine has none).
METRIC_KEYS: tuple[str, ...] = (
    "prompt_tokens",
    "generation_tokens",
    "spec_drafts",
    "spec_draft_tokens",
    "spec_accepted_tokens",
    "running",
    "waiting",
    "ttft_seconds",
    "itl_seconds",
)


@dataclass(frozen=True, slots=True, kw_only=True)
class Signature:
    """A log line that means the server has failed, with what to do about it."""

    pattern: str  # regular expression searched in each log line
    kind: str  # short failure class: oom, nccl, cuda-arch, port-in-use, ...
    title: str  # the verdict's reason, e.g. "CUDA out of memory"
    hint: str  # one line: what to try
    # True for lines that say *that* something failed while the cause is printed nearby
    # ("Scheduler hit an exception: <traceback>"): the gate waits a moment for a more
    # specific signature (OOM, NCCL...) before it settles for this one
    wrapper: bool = False
    # a regular expression (with a literal of 10+ bytes, for the prefilter) for a line
    # that says the engine recovered from this failure ("retrying without pipeline
    # parallelism" after a failed allocation): the gate holds a hit for a moment and
    # drops it when such a line follows; None: the hit decides at once
    withdrawn_by: str | None = None
    # a regular expression for an earlier line that, when the log holds one, is the root
    # cause of this failure (SGLang's "architectures ... are not supported" after "Ignore
    # import error when loading" the model's module): that line is quoted instead, and
    # its words give the kind (engines/families.py), else this signature's kind
    explained_by: str | None = None
    # True for a consequence that a C++ engine prints under its cause, each caller of the
    # failing call adding its own line ("llama_model_load: error loading model: ...",
    # "failed to load model", "exiting due to model loading error"): where the failure's
    # episode holds earlier lines that a logger printed at an error level (llama.cpp's
    # `E`, `"level":"error"`), the first of them is the root and is quoted instead, its
    # words giving the kind, else this signature's
    rooted: bool = False
    # True where the hint is about this line alone (a host that is no address of the
    # machine, the rendezvous port, a shard count): it is not the hint of every failure
    # of its kind, so a cause whose words name the kind takes another (gate/watch.py)
    narrow: bool = False


@dataclass(frozen=True, slots=True, kw_only=True)
class Phase:
    """A startup phase, recognised by the log lines that open and close it."""

    name: str  # snake_case, e.g. capture_cuda_graphs
    start: tuple[str, ...]  # any of these regexes opens the phase
    end: tuple[str, ...] = ()  # any of these closes it (else the next phase does)


@dataclass(frozen=True, slots=True, kw_only=True)
class Progress:
    """A log line that says how far a phase has come (a tqdm bar, a compile step).

    ``pattern`` has a named group ``done`` and, when the engine prints the end, ``total``
    (numbers, with tqdm's k/M/G/T suffixes for bytes); a ``count`` pattern has neither:
    each matching line adds one. The progress belongs to ``phase``, which it opens when
    that phase is not open yet, or to whatever phase is open when ``phase`` is None (and
    then, when none is, it opens ``opens``).
    """

    pattern: str
    unit: str  # shards, batch sizes, bytes, files, graphs, JIT ops
    phase: str | None = None
    opens: str | None = None
    count: bool = False


@dataclass(frozen=True, slots=True, kw_only=True)
class EngineProfile:
    """Everything servegate knows about one engine, as data."""

    name: str
    default_port: int | None
    probe_path: str | None  # GET this and expect 200; None: no HTTP probe
    # True: a 404 on probe_path means "this build has no such route", and once a ready
    # line was seen, that answer (a working HTTP server) confirms READY; any other
    # status (503 while loading) still means not ready
    probe_absent_ok: bool = False
    ready_lines: tuple[str, ...]  # regexes: the server says it is ready
    # ready lines the server prints before it binds its port (uvicorn's "Application
    # startup complete.", then a failed bind and exit): without a probe to confirm one,
    # READY waits a moment for a fatal line or an exit to follow (each is also listed
    # in ready_lines)
    ready_before_bind: tuple[str, ...] = ()
    generate_check: bool = False  # READY also needs one real 1-token completion
    fatal: tuple[Signature, ...] = ()
    phases: tuple[Phase, ...] = ()
    progress: tuple[Progress, ...] = ()  # progress inside phases, tried in order
    essential_children: tuple[str, ...] = ()  # regexes on a child's name or command line
    metrics_path: str | None = "/metrics"
    # what every name this engine exposes on /metrics starts with ("vllm:", "tgi_"): how
    # the load generator recognises the engine of a server it was not told about
    metric_prefix: str | None = None
    metric_names: Mapping[str, str | None] = field(default_factory=dict)
    # metrics outside METRIC_KEYS that the load generator also reports, logical -> name
    extra_metric_names: Mapping[str, str] = field(default_factory=dict)

    def metric(self, key: str) -> str | None:
        """The engine's Prometheus name for a logical metric, or None if it has none."""
        if key not in METRIC_KEYS:
            raise KeyError(f"unknown logical metric {key!r}; choose one of {METRIC_KEYS}")
        return self.metric_names.get(key)
