"""The simulated engine's settings: built-in defaults, a TOML profile, then flags.

Everything a simulated run needs is validated here once and resolved into one frozen
``SimConfig``; the server and the startup script never see raw user input. Each mistake
becomes one ``UsageError`` (or ``ConfigError`` for a profile file) sentence that names
the flag or the file key and the fix.

    config = resolve(profile="fast", flags={"engine": "vllm", "port": 8123})
"""

from __future__ import annotations

import math
import re
import tomllib
from collections.abc import Mapping
from dataclasses import dataclass
from importlib import resources
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, ValidationError

from servegate.engines import get_profile
from servegate.errors import ConfigError, UsageError
from servegate.sim.surface import FIXED_PHASES, JIT_CACHES, Flags, evaluate

__all__ = [
    "AFTER_READY_FAILURES",
    "ENGINES",
    "FAILURES",
    "PHASES",
    "STARTUP_FAILURES",
    "SimConfig",
    "check_engine",
    "parse_phase",
    "parse_regimes",
    "parse_work",
    "resolve",
    "shipped_profiles",
]

ENGINES = ("sglang", "vllm", "llamacpp", "generic")

# Startup phases of each engine, in the order the engine runs them (canonical names
# shared with the gate), and the share of --startup each one gets by default.
PHASES: dict[str, tuple[tuple[str, float], ...]] = {
    "sglang": (
        ("dist_init", 0.04),
        ("download", 0.0),  # silent; 0 s unless given (--phase download=S)
        ("load_weights", 0.34),
        ("kv_cache", 0.05),
        ("attention_backend", 0.03),
        ("jit_compile", 0.12),
        ("capture_cuda_graphs", 0.22),
        ("http_start", 0.04),
        ("warmup", 0.16),
        ("ready", 0.0),
    ),
    "vllm": (
        ("dist_init", 0.05),
        ("download", 0.0),  # silent; 0 s unless given (--phase download=S)
        ("load_weights", 0.30),
        ("torch_compile", 0.20),
        ("jit_compile", 0.10),
        ("kv_cache", 0.08),
        ("capture_cuda_graphs", 0.20),
        ("http_start", 0.07),
        ("ready", 0.0),
    ),
    "llamacpp": (
        ("http_start", 0.05),
        ("load_weights", 0.60),
        ("kv_cache", 0.10),
        ("warmup", 0.25),
        ("ready", 0.0),
    ),
    "generic": (
        ("load_weights", 0.60),
        ("kv_cache", 0.10),
        ("warmup", 0.25),
        ("http_start", 0.05),
        ("ready", 0.0),
    ),
}

# The gate's names for the same phases, accepted wherever a phase is named.
PHASE_ALIASES = {
    "init_distributed": "dist_init",
    "allocate_kv_cache": "kv_cache",
    "init_attention_backend": "attention_backend",
}

STARTUP_FAILURES = (
    "oom",
    "nccl",
    "cuda-arch",
    "port-in-use",
    "traceback-exit",
    "silent-exit",
    "hang",
    "child-death",
    "stall",
)
AFTER_READY_FAILURES = ("crash-after-ready", "engine-dead")
FAILURES = STARTUP_FAILURES + AFTER_READY_FAILURES

# Where each failure happens when --fail-at is not given.
DEFAULT_FAIL_PHASE = {
    "oom": "load_weights",
    "nccl": "dist_init",
    "cuda-arch": "jit_compile",
    "traceback-exit": "load_weights",
    "silent-exit": "load_weights",
    "hang": "capture_cuda_graphs",
    "child-death": "load_weights",
    "stall": "capture_cuda_graphs",
}

# the generic profile has no port of its own (get_profile("generic").default_port is None);
# a simulated generic server listens here
GENERIC_PORT = 8000
PROFILE_DIR = "profiles"


@dataclass(frozen=True, slots=True, kw_only=True)
class SimConfig:
    """A validated simulated run: startup timeline, failure, performance model."""

    engine: str
    host: str
    port: int
    model: str
    phases: tuple[tuple[str, float], ...]  # (name, wall seconds), in order, time-scaled
    work: tuple[tuple[str, str], ...] = ()  # (phase, cpu|disk): real work during that phase
    fail: str | None
    fail_phase: str | None  # the phase whose middle the failure happens in
    fail_at_s: float | None  # wall seconds since start (startup) or since READY (after)
    fail_at_request: int | None = None  # after READY: with the Nth generation request
    ttft_ms: float
    prefill_tok_s: float  # 0: the prompt length costs nothing
    itl_ms: float
    batch_slowdown: float  # step time grows by this fraction per extra running request
    max_running: int
    spec_accept_length: float  # 1.0: no speculative decoding
    spec_draft_tokens: int
    jitter: float
    seed: int
    # per-start speed: each process start draws one factor that divides every duration
    regimes: tuple[tuple[float, float], ...]  # (speed factor, probability); () for none
    instance_sd: float  # sd of a lognormal speed factor with mean 1; 0 for none
    start_counter: Path | None  # file counting starts; draws come from (seed, count)
    max_model_len: int
    tp: int
    error_rate: float
    stall_stream_after: int | None
    record: Path | None
    health_check_timeout_s: float
    kv_blocks: int = 26_112  # KV capacity in blocks (417,792 tokens of 16)
    block_size: int = 16  # the prefix cache's block; SGLang's radix cache matches per token
    prefix_cache: bool = True
    tokenizer: Path | None = None  # a tokenizer.json; None: the built-in word tokenizer
    # SGLang's tuning flags (--mem-fraction-static ...), None when none was given; their
    # effects are already in the fields above (sim/surface.py)
    tuning: Flags | None = None
    graph_max_bs: int = 0  # decode steps of at most this many requests replay a CUDA graph
    graph_speedup: float = 1.0  # ... and take this fraction of the time
    jit_cache: Path | None = None  # the JIT cache entry written when jit_compile ends

    @property
    def startup_s(self) -> float:
        """Wall seconds from start to the ready line."""
        return sum(seconds for _, seconds in self.phases)

    @property
    def per_start_speed(self) -> bool:
        """Whether each start draws its own speed factor (``--regimes``, ``--instance-sd``)."""
        return bool(self.regimes) or self.instance_sd > 0

    @property
    def spec_enabled(self) -> bool:
        """Whether speculative decoding is simulated."""
        return self.spec_accept_length > 1.0


class _Profile(BaseModel):
    """The keys a profile file may set; each mirrors the flag of the same name."""

    model_config = ConfigDict(extra="forbid", strict=False)

    engine: str | None = None
    host: str | None = None
    port: int | None = None
    model: str | None = None
    startup: float | None = None
    time_scale: float | None = None
    phases: dict[str, float] | None = None
    work: dict[str, str] | None = None
    ttft_ms: float | None = None
    prefill_tok_s: float | None = None
    itl_ms: float | None = None
    batch_slowdown: float | None = None
    max_running: int | None = None
    spec_accept_length: float | None = None
    spec_draft_tokens: int | None = None
    jitter: float | None = None
    seed: int | None = None
    regimes: str | None = None
    instance_sd: float | None = None
    max_model_len: int | None = None
    tp: int | None = None
    health_check_timeout: float | None = None
    kv_blocks: int | None = None
    block_size: int | None = None
    prefix_cache: bool | None = None
    tokenizer: str | None = None


DEFAULTS: dict[str, Any] = {
    "engine": "sglang",
    "host": "127.0.0.1",
    "model": "meta-llama/Llama-3.1-8B-Instruct",
    "startup": 2.0,
    "time_scale": 1.0,
    "ttft_ms": 20.0,
    "prefill_tok_s": 0.0,
    "itl_ms": 10.0,
    "batch_slowdown": 0.02,
    "max_running": 256,
    "spec_accept_length": 1.0,
    "jitter": 0.0,
    "seed": 0,
    "instance_sd": 0.0,
    "max_model_len": 32768,
    "tp": 1,
    "error_rate": 0.0,
    "health_check_timeout": 20.0,
    "kv_tokens": 417_792,
    "prefix_cache": True,
}


def shipped_profiles() -> list[str]:
    """Names of the profiles that ship with servegate (``--profile NAME``)."""
    folder = resources.files("servegate.sim").joinpath(PROFILE_DIR)
    return sorted(
        p.name.removesuffix(".toml") for p in folder.iterdir() if p.name.endswith(".toml")
    )


def load_profile(name_or_path: str) -> dict[str, Any]:
    """The keys of a shipped profile (by name) or of a TOML file (by path)."""
    path = Path(name_or_path)
    if path.suffix == ".toml" or path.exists():
        if not path.is_file():
            raise ConfigError(
                f"--profile {name_or_path}: no such file; give a TOML file or one of "
                f"{', '.join(shipped_profiles())}.",
                path=str(path),
            )
        text = path.read_text(encoding="utf-8")
        where = str(path)
    else:
        entry = resources.files("servegate.sim").joinpath(PROFILE_DIR, f"{name_or_path}.toml")
        if not entry.is_file():
            raise ConfigError(
                f"--profile {name_or_path}: no shipped profile by that name; choose one of "
                f"{', '.join(shipped_profiles())} or give a .toml file."
            )
        text = entry.read_text(encoding="utf-8")
        where = f"profile {name_or_path}"
    try:
        raw = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise ConfigError(f"{where}: not valid TOML ({exc}); fix the syntax.", path=where) from None
    try:
        profile = _Profile.model_validate(raw)
    except ValidationError as exc:
        err = exc.errors()[0]
        key = ".".join(str(part) for part in err["loc"])
        raise ConfigError(
            f"{where}: key {key!r}: {err['msg'].lower()}; fix or remove it.", path=where, key=key
        ) from None
    return profile.model_dump(exclude_none=True)


def check_engine(engine: str) -> str:
    """``engine`` when it can be simulated; UsageError naming the choices otherwise."""
    if engine not in ENGINES:
        raise UsageError(f"--engine {engine}: unknown engine; choose one of {', '.join(ENGINES)}.")
    return engine


def parse_phase(text: str) -> tuple[str, float]:
    """``NAME=SECONDS`` from ``--phase``."""
    name, sep, value = text.partition("=")
    try:
        seconds = float(value)
    except ValueError:
        seconds = math.nan
    if not sep or not name or math.isnan(seconds):
        raise UsageError(f"--phase {text}: write NAME=SECONDS, e.g. --phase load_weights=5.")
    return name.strip(), seconds


def parse_regimes(text: str) -> tuple[tuple[float, float], ...]:
    """``SPEED:PROBABILITY,...`` from ``--regimes``, e.g. ``1.0:0.7,0.85:0.3``."""
    example = "e.g. --regimes 1.0:0.7,0.85:0.3 (speed factor:probability, summing to 1)"
    regimes = []
    for part in text.split(","):
        speed, sep, chance = part.strip().partition(":")
        try:
            pair = (float(speed), float(chance))
        except ValueError:
            pair = (math.nan, math.nan)
        if not sep or not all(math.isfinite(x) for x in pair):
            raise UsageError(f"--regimes {text}: write SPEED:PROBABILITY pairs, {example}.")
        if pair[0] <= 0 or pair[1] <= 0:
            raise UsageError(
                f"--regimes {text}: speed factors and probabilities must be > 0, {example}."
            )
        regimes.append(pair)
    total = sum(chance for _, chance in regimes)
    if abs(total - 1.0) > 1e-6:
        raise UsageError(
            f"--regimes {text}: the probabilities add up to {total:g}, not 1; {example}."
        )
    return tuple(regimes)


def resolve(*, profile: str | None, flags: Mapping[str, Any]) -> SimConfig:
    """Defaults, then the profile, then the flags that were given, validated."""
    values: dict[str, Any] = dict(DEFAULTS)
    profile_phases: dict[str, float] = {}
    work: dict[str, str] = {}
    if profile is not None:
        loaded = load_profile(profile)
        profile_phases = loaded.pop("phases", {})
        work.update(loaded.pop("work", {}))
        values.update(loaded)
    given = {k: v for k, v in flags.items() if v is not None}
    flag_phases: dict[str, float] = given.pop("phases", {})
    work.update(given.pop("work", {}))
    values.update(given)

    engine = check_engine(values["engine"])
    tuning = _tuning(engine, values)
    # a profile may be used with any engine: its phases that this engine lacks are ignored
    known = {name for name, _ in PHASES[engine]}
    profile_phases = {PHASE_ALIASES.get(k, k): v for k, v in profile_phases.items()}
    phases = {k: v for k, v in profile_phases.items() if k in known}
    phases.update(flag_phases)
    _check_nonneg(values, ("startup", "ttft_ms", "prefill_tok_s", "itl_ms", "batch_slowdown"))
    _check_nonneg(values, ("jitter", "health_check_timeout", "instance_sd"))
    if values["instance_sd"] > 1.0:
        raise UsageError("--instance-sd must be between 0 and 1, e.g. 0.05 for 5 % per start.")
    regimes = parse_regimes(values["regimes"]) if values.get("regimes") else ()
    counter = values.get("start_counter")
    if values["time_scale"] <= 0:
        raise UsageError("--time-scale must be > 0 (0.01 makes startup 100 times faster).")
    if values["max_running"] < 1:
        raise UsageError("--max-running must be at least 1.")
    if values["tp"] < 1 or values["tp"] > 64:
        raise UsageError("--tp must be between 1 and 64.")
    block = values.get("block_size") or (1 if engine == "sglang" else 16)
    if block < 1:
        raise UsageError("--block-size must be at least 1 token, e.g. 16 as vLLM's.")
    kv_blocks = values.get("kv_blocks") or -(-values["kv_tokens"] // block)
    if kv_blocks < 1:
        raise UsageError("--kv-blocks must be at least 1, e.g. 1024.")
    tokenizer = Path(values["tokenizer"]) if values.get("tokenizer") else None
    if tokenizer is not None:
        from servegate.sim.tokens import load_tokenizer

        load_tokenizer(tokenizer)  # a bad file is exit 2 now, not after startup
    if values["max_model_len"] < 16:
        raise UsageError("--max-model-len must be at least 16.")
    if not 0.0 <= values["error_rate"] <= 1.0:
        raise UsageError("--error-rate must be between 0 and 1, e.g. 0.05 for 5 %.")
    if values["jitter"] > 1.0:
        raise UsageError("--jitter must be between 0 and 1, e.g. 0.05 for 5 % noise.")
    accept = float(values["spec_accept_length"])
    if accept < 1.0:
        raise UsageError("--spec-accept-length must be >= 1 (1 means no speculative decoding).")
    draft = values.get("spec_draft_tokens") or max(1, math.ceil(accept - 1.0 + 1e-9))
    if draft < accept - 1.0 - 1e-9:
        raise UsageError(
            f"--spec-draft-tokens {draft} cannot yield an acceptance length of {accept}; "
            f"use at least {math.ceil(accept - 1.0)}."
        )
    stall_after = values.get("stall_stream_after")
    if stall_after is not None and stall_after < 0:
        raise UsageError("--stall-stream-after must be >= 0 tokens.")
    port = values.get("port")
    if port is None:
        port = get_profile(engine).default_port or GENERIC_PORT
    if not 0 <= port <= 65535:
        raise UsageError(f"--port {port}: choose a port between 1 and 65535.")

    jit_cache: Path | None = None
    graph = (0, 1.0)
    if tuning is not None:
        jit_cache = _jit_cache(tuning)
        outcome = evaluate(
            tuning,
            itl_ms=float(values["itl_ms"]),
            ttft_ms=float(values["ttft_ms"]),
            max_running=int(values["max_running"]),
            warm=jit_cache is None or jit_cache.exists(),
        )
        values["itl_ms"] = outcome.itl_ms
        values["ttft_ms"] = outcome.ttft_ms
        values["max_running"] = outcome.max_running
        if not values.get("kv_blocks"):
            kv_blocks = max(1, -(-outcome.kv_tokens // block))
        phases = {**FIXED_PHASES, **outcome.phases, **phases}
        values["startup"] = sum(phases.values())
        graph = (outcome.graph_max_bs, outcome.graph_speedup)
        if outcome.oom_phase is not None and values.get("fail") is None:
            values["fail"], values["fail_at"] = "oom", outcome.oom_phase
    timeline = _timeline(engine, values["startup"], phases, values["time_scale"])
    fail_at, fail_at_request = values.get("fail_at"), None
    nth = _REQUEST_COUNT.fullmatch(str(fail_at or "").strip())
    if nth is not None:
        if values.get("fail") not in AFTER_READY_FAILURES:
            raise UsageError(
                f"--fail-at {fail_at}: a request count is for failures after READY; give "
                "--fail crash-after-ready or engine-dead, or a phase or SECONDS."
            )
        fail_at_request, fail_at = int(nth.group(1)), None
        if fail_at_request < 1:
            raise UsageError(f"--fail-at {nth.group(0)}: count requests from 1req.")
    fail, fail_phase, fail_at_s = _failure(
        engine, values.get("fail"), fail_at, timeline, values["time_scale"]
    )
    record = values.get("record")
    return SimConfig(
        work=_work(engine, work, timeline),
        engine=engine,
        host=values["host"],
        port=int(port),
        model=values["model"],
        phases=timeline,
        fail=fail,
        fail_phase=fail_phase,
        fail_at_s=fail_at_s,
        fail_at_request=fail_at_request,
        ttft_ms=float(values["ttft_ms"]),
        prefill_tok_s=float(values["prefill_tok_s"]),
        itl_ms=float(values["itl_ms"]),
        batch_slowdown=float(values["batch_slowdown"]),
        max_running=int(values["max_running"]),
        spec_accept_length=accept,
        spec_draft_tokens=int(draft),
        jitter=float(values["jitter"]),
        seed=int(values["seed"]),
        regimes=regimes,
        instance_sd=float(values["instance_sd"]),
        start_counter=Path(counter) if counter is not None else None,
        max_model_len=int(values["max_model_len"]),
        tp=int(values["tp"]),
        error_rate=float(values["error_rate"]),
        stall_stream_after=stall_after,
        record=Path(record) if record is not None else None,
        health_check_timeout_s=float(values["health_check_timeout"]),
        kv_blocks=int(kv_blocks),
        block_size=int(block),
        prefix_cache=bool(values["prefix_cache"]),
        tokenizer=tokenizer,
        tuning=tuning,
        graph_max_bs=graph[0],
        graph_speedup=graph[1],
        jit_cache=jit_cache,
    )


TUNING_KEYS = (
    "mem_fraction_static",
    "cuda_graph_max_bs",
    "chunked_prefill_size",
    "attention_backend",
    "quantization",
)


def _tuning(engine: str, values: Mapping[str, Any]) -> Flags | None:
    """SGLang's tuning flags when one was given (the model's size and GPU with them)."""
    given = {k: values[k] for k in TUNING_KEYS if values.get(k) is not None}
    if not given:
        return None
    if engine != "sglang":
        flag = "--" + next(iter(given)).replace("_", "-")
        raise UsageError(f"{flag} is one of SGLang's flags; use --engine sglang.")
    for key in ("model_params_b", "gpu_memory_gb"):
        if values.get(key) is not None:
            given[key] = values[key]
    from servegate.sim.surface import check

    try:
        return check(Flags(**given))
    except ValueError as exc:
        raise UsageError(str(exc)) from None


def _jit_cache(tuning: Flags) -> Path | None:
    """The JIT cache entry of the attention backend's kernels; None when it has none.

    The folder is the one the backend really uses (servegate.startup.caches reads the
    same ones), so a start with a warm cache is warm for servegate too.
    """
    import os

    where = JIT_CACHES.get(tuning.attention_backend)
    if where is None:
        return None
    env, folder = where
    name = f"servegate-sim-{tuning.attention_backend}-{tuning.quantization}.so"
    if tuning.attention_backend == "triton" and os.environ.get("TRITON_CACHE_DIR"):
        return Path(os.environ["TRITON_CACHE_DIR"]) / name
    base = os.environ.get(env) or os.path.expanduser("~")
    return Path(base) / folder / name


def parse_work(text: str) -> tuple[str, str]:
    """``PHASE=KIND`` from ``--work``."""
    name, sep, kind = text.partition("=")
    if not sep or not name or not kind:
        raise UsageError(f"--work {text}: write PHASE=KIND, e.g. --work jit_compile=cpu.")
    return name.strip(), kind.strip()


def _work(
    engine: str, work: Mapping[str, str], timeline: tuple[tuple[str, float], ...]
) -> tuple[tuple[str, str], ...]:
    """The phases that do real work, checked against the engine's phases and the kinds."""
    from servegate.sim.work import WORK_KINDS

    names = [name for name, _ in timeline]
    out = []
    for given, kind in work.items():
        phase = PHASE_ALIASES.get(given, given)
        if phase not in names:
            raise UsageError(
                f"--work {phase}={kind}: {engine} has no such phase; choose one of "
                f"{', '.join(names)}."
            )
        if kind not in WORK_KINDS:
            raise UsageError(
                f"--work {phase}={kind}: unknown kind; choose one of {', '.join(WORK_KINDS)}."
            )
        out.append((phase, kind))
    return tuple(out)


def _check_nonneg(values: Mapping[str, Any], keys: tuple[str, ...]) -> None:
    for key in keys:
        if values[key] < 0:
            flag = "--" + key.replace("_", "-")
            raise UsageError(f"{flag} {values[key]}: must be >= 0.")


def _timeline(
    engine: str, startup: float, explicit: Mapping[str, float], scale: float
) -> tuple[tuple[str, float], ...]:
    """Each phase's wall seconds: explicit ones as given, the rest share what is left."""
    known = [name for name, _ in PHASES[engine]]
    explicit = {PHASE_ALIASES.get(name, name): seconds for name, seconds in explicit.items()}
    for name, seconds in explicit.items():
        if name not in known:
            raise UsageError(
                f"--phase {name}: {engine} has no such phase; choose one of {', '.join(known)}."
            )
        if seconds < 0:
            raise UsageError(f"--phase {name}={seconds}: a duration must be >= 0 seconds.")
    fixed = sum(explicit.values())
    left = max(0.0, startup - fixed)
    weights = {name: w for name, w in PHASES[engine] if name not in explicit}
    total_w = sum(weights.values())
    out = []
    for name, _ in PHASES[engine]:
        if name in explicit:
            seconds = explicit[name]
        else:
            seconds = left * weights[name] / total_w if total_w else 0.0
        out.append((name, seconds * scale))
    return tuple(out)


def _failure(
    engine: str,
    fail: str | None,
    fail_at: str | None,
    timeline: tuple[tuple[str, float], ...],
    scale: float,
) -> tuple[str | None, str | None, float | None]:
    """The failure kind, and where it happens: a phase, or seconds on the wall clock."""
    if fail is None:
        if fail_at is not None:
            raise UsageError("--fail-at needs --fail KIND, e.g. --fail oom --fail-at load_weights.")
        return None, None, None
    if fail not in FAILURES:
        raise UsageError(f"--fail {fail}: unknown failure; choose one of {', '.join(FAILURES)}.")
    names = [name for name, _ in timeline]
    if fail in AFTER_READY_FAILURES:
        if fail == "engine-dead" and engine != "vllm":
            raise UsageError("--fail engine-dead simulates vLLM's engine death; use --engine vllm.")
        seconds = _seconds(fail_at, fail) if fail_at is not None else 0.0
        if seconds is None:
            raise UsageError(f"--fail {fail} happens after READY: give --fail-at SECONDS.")
        return fail, None, seconds
    if fail == "child-death" and engine not in ("sglang", "vllm"):
        raise UsageError(
            f"--fail child-death: {engine} runs as one process; use --engine sglang or vllm."
        )
    if fail == "nccl" and engine == "llamacpp":
        raise UsageError("--fail nccl: llama.cpp does not use NCCL; use --engine sglang or vllm.")
    if fail == "port-in-use":
        if fail_at is not None:
            raise UsageError(
                "--fail port-in-use happens where the engine binds its port; drop --fail-at."
            )
        return fail, None, None
    if fail_at is None:
        phase = DEFAULT_FAIL_PHASE[fail]
        if phase not in names:
            phase = "load_weights"
        return fail, phase, None
    seconds = _seconds(fail_at, fail)
    if seconds is None:
        fail_at = PHASE_ALIASES.get(fail_at, fail_at)
        if fail_at not in names:
            raise UsageError(
                f"--fail-at {fail_at}: {engine} has no such phase; give SECONDS or one of "
                f"{', '.join(names)}."
            )
        return fail, fail_at, None
    total = sum(s for _, s in timeline)
    wall = seconds * scale
    if wall > total:
        raise UsageError(
            f"--fail-at {fail_at}: startup ends at {total / scale:.1f} s; give an earlier time "
            "or use --fail crash-after-ready."
        )
    return fail, None, wall


# an after-READY failure's place as a count of generation requests ("3req": with the third)
_REQUEST_COUNT = re.compile(r"(-?\d+)\s*req")


def _seconds(text: str, fail: str) -> float | None:
    """``text`` as non-negative seconds, or None when it is not a number."""
    try:
        seconds = float(text)
    except ValueError:
        return None
    if seconds < 0 or math.isnan(seconds):
        raise UsageError(f"--fail-at {text}: seconds must be >= 0 for --fail {fail}.")
    return seconds
