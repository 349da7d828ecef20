"""The startup log of each simulated engine: its phases, lines and progress bars, in order.

The strings are the engines' own (``research/engines.md``), so a gate that recognises a
real SGLang, vLLM or llama.cpp log recognises these. Each phase is a list of events at
fractions of the phase's duration; the runner prints them against absolute deadlines.
``{ts}`` in a line is replaced by the timestamp when the line is printed.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from servegate.sim.config import SimConfig

__all__ = ["Event", "LogFormat", "ScriptContext", "build_script", "progress_bar"]


@dataclass(frozen=True, slots=True, kw_only=True)
class Event:
    """One thing that happens during a phase, at ``at`` (0..1) of its duration."""

    at: float
    text: str = ""
    # line: a log line; progress: a tqdm redraw (``\r``, no newline); progress_end: the
    # last redraw of a bar (ends the line); bind: take the port without listening (vLLM);
    # listen: accept connections; ready: the probe turns healthy.
    kind: str = "line"


@dataclass(frozen=True, slots=True, kw_only=True)
class ScriptContext:
    """Run-time facts the lines mention: our PID, the children's PIDs, the port."""

    pid: int
    children: dict[str, int] = field(default_factory=dict)  # role -> pid


@dataclass(frozen=True, slots=True, kw_only=True)
class LogFormat:
    """The line prefixes of one engine; ``{ts}`` is filled at print time."""

    engine: str
    pid: int
    children: dict[str, int]

    def main(self, msg: str, level: str = "INFO", src: str = "api_server.py:1876") -> str:
        """A line of the main (HTTP) process."""
        if self.engine == "sglang":
            return f"[{{ts}}] {msg}"
        if self.engine == "vllm":
            return f"(APIServer pid={self.pid}) {level} {{ts}} [{src}] {msg}"
        if self.engine == "generic":
            return f"{{ts}} {level} {msg}"
        return msg

    def rank(self, rank: int, msg: str, level: str = "INFO", src: str = "") -> str:
        """A line of a tensor-parallel rank (SGLang scheduler, vLLM worker)."""
        if self.engine == "sglang":
            return f"[{{ts}} TP{rank}] {msg}"
        if self.engine == "vllm":
            pid = self.children.get(f"Worker_TP{rank}", self.pid)
            return f"(Worker_TP{rank} pid={pid}) {level} {{ts}} [{src}] {msg}"
        return self.main(msg, level)

    def core(self, msg: str, level: str = "INFO", src: str = "core.py:97") -> str:
        """A line of vLLM's engine-core process."""
        pid = self.children.get("EngineCore_DP0", self.pid)
        return f"(EngineCore_DP0 pid={pid}) {level} {{ts}} [{src}] {msg}"

    def uvicorn(self, msg: str, level: str = "INFO") -> str:
        """A uvicorn line as the engine shows it."""
        text = f"{level + ':':<9} {msg}"
        if self.engine == "sglang":
            return f"[{{ts}}] {text}"
        if self.engine == "vllm":
            return f"(APIServer pid={self.pid}) {text}"
        return text

    def timestamp_format(self) -> str:
        """strftime format of ``{ts}``."""
        if self.engine == "vllm":
            return "%m-%d %H:%M:%S"
        return "%Y-%m-%d %H:%M:%S"


_PARTIAL = " ▏▎▍▌▋▊▉"


def _clock(seconds: float) -> str:
    seconds = max(0, round(seconds))
    return f"{seconds // 60:02d}:{seconds % 60:02d}"


def progress_bar(desc: str, n: int, total: int, elapsed_s: float, *, shards: bool = False) -> str:
    """A tqdm bar as tqdm draws it (``shards``: vLLM's ``NN% Completed | n/t`` format)."""
    pct = 100.0 * n / total if total else 100.0
    rate = n / elapsed_s if elapsed_s > 0 and n else 0.0
    remaining = (total - n) / rate if rate else 0.0
    if shards:
        rate_text = f"{1 / rate:5.2f}s/it" if rate else "?it/s"
        return (
            f"{desc}: {pct:3.0f}% Completed | {n}/{total} "
            f"[{_clock(elapsed_s)}<{_clock(remaining)}, {rate_text}]"
        )
    cells = pct / 10.0
    full = int(cells)
    bar = "█" * full
    if full < 10:
        bar += _PARTIAL[int((cells - full) * 8)] + " " * (9 - full)
    rate_text = f"{rate:5.2f}it/s" if rate else "?it/s"
    return (
        f"{desc}: {pct:3.0f}%|{bar}| {n}/{total} "
        f"[{_clock(elapsed_s)}<{_clock(remaining)}, {rate_text}]"
    )


def _bar_events(
    desc: str,
    total: int,
    seconds: float,
    *,
    start: float = 0.05,
    end: float = 0.95,
    shards: bool = False,
) -> list[Event]:
    """Redraws of one bar from 0 to ``total`` spread over [start, end] of the phase."""
    events = []
    for n in range(total + 1):
        at = start + (end - start) * n / total
        text = progress_bar(desc, n, total, seconds * (at - start), shards=shards)
        events.append(Event(at=at, text=text, kind="progress_end" if n == total else "progress"))
    return events


def build_script(config: SimConfig, ctx: ScriptContext) -> dict[str, list[Event]]:
    """Events of every phase of ``config.engine``, keyed by phase name."""
    durations = dict(config.phases)
    log = LogFormat(engine=config.engine, pid=ctx.pid, children=ctx.children)
    if config.engine == "sglang":
        return _sglang(config, durations, log)
    if config.engine == "vllm":
        return _vllm(config, durations, log)
    if config.engine == "llamacpp":
        return _llamacpp(config, durations, log)
    return _generic(config, durations, log)


def _sglang(config: SimConfig, d: dict[str, float], log: LogFormat) -> dict[str, list[Event]]:
    ranks = range(config.tp)
    spec = "'EAGLE'" if config.spec_enabled else "None"
    tuning = config.tuning
    fraction = tuning.mem_fraction_static if tuning is not None else 0.88
    backend = tuning.attention_backend if tuning is not None else "flashinfer"
    chunk = tuning.chunked_prefill_size if tuning is not None else 8192
    tuned = ""
    if tuning is not None:
        quant = "None" if tuning.quantization == "none" else f"'{tuning.quantization}'"
        tuned = f"cuda_graph_max_bs={tuning.cuda_graph_max_bs}, quantization={quant}, "
    args = (
        f"server_args=ServerArgs(model_path='{config.model}', tokenizer_path='{config.model}', "
        f"host='{config.host}', port={config.port}, mem_fraction_static={fraction:g}, "
        f"max_running_requests={config.max_running}, tp_size={config.tp}, "
        f"context_length={config.max_model_len}, speculative_algorithm={spec}, "
        f"speculative_num_draft_tokens={config.spec_draft_tokens + 1 if config.spec_enabled else None}, "
        f"chunked_prefill_size={chunk}, {tuned}"
        f"attention_backend='{backend}', enable_metrics=True)"
    )
    s: dict[str, list[Event]] = {}
    s["dist_init"] = [Event(at=0.0, text=log.main(args))]
    s["dist_init"] += [
        Event(at=0.0, text=log.rank(r, "Init torch distributed begin.")) for r in ranks
    ]
    s["dist_init"] += [
        Event(
            at=1.0,
            text=log.rank(
                r, f"Init torch distributed ends. elapsed={d['dist_init']:.2f} s, mem usage=0.09 GB"
            ),
        )
        for r in ranks
    ]
    s["download"] = []  # a model fetched before loading, with no progress shown
    w = d["load_weights"]
    s["load_weights"] = [
        Event(at=0.0, text=log.rank(r, "Load weight begin. avail mem=78.50 GB")) for r in ranks
    ]
    s["load_weights"] += _bar_events("Loading safetensors checkpoint shards", 4, w, shards=True)
    s["load_weights"] += [
        Event(
            at=1.0,
            text=log.rank(
                r,
                f"Load weight end. elapsed={w:.2f} s, type=LlamaForCausalLM, "
                "dtype=torch.bfloat16, avail mem=62.74 GB, mem usage=15.76 GB.",
            ),
        )
        for r in ranks
    ]
    kv_tokens = 417_792 if tuning is None else config.kv_blocks * config.block_size
    s["kv_cache"] = [
        Event(at=0.2, text=log.rank(0, "Using KV cache dtype: torch.bfloat16")),
        Event(
            at=0.9,
            text=log.rank(
                0,
                f"KV Cache is allocated. #tokens: {kv_tokens}, K size: 25.50 GB, V size: 25.50 GB",
            ),
        ),
        Event(at=1.0, text=log.rank(0, "Memory pool end. avail mem=10.92 GB")),
    ]
    s["attention_backend"] = [
        Event(at=0.0, text=log.rank(0, "Init attention backend begin.")),
        Event(
            at=1.0,
            text=log.rank(0, f"Init attention backend end. elapsed={d['attention_backend']:.2f} s"),
        ),
    ]
    s["jit_compile"] = []  # FlashInfer / DeepGEMM JIT on a cold cache: nothing is printed
    g = d["capture_cuda_graphs"]
    sizes = [1, 2, 4, 8, 16, 24, 32]
    if tuning is not None:  # SGLang's list: 1, 2, 4, then multiples of 8 up to the max
        top = tuning.cuda_graph_max_bs
        sizes = [b for b in (1, 2, 4) if b <= top] + list(range(8, top + 1, 8)) or [1]
    s["capture_cuda_graphs"] = [
        Event(
            at=0.0,
            text=log.rank(
                0,
                "Capture cuda graph begin. This can take up to several minutes. avail mem=10.90 GB",
            ),
        ),
        Event(at=0.0, text=log.rank(0, f"Capture cuda graph bs {sizes}")),
    ]
    for i in range(len(sizes) + 1):
        at = 0.05 + 0.9 * i / len(sizes)
        bs = sizes[max(0, len(sizes) - 1 - i)]
        text = progress_bar(
            f"Capturing batches (bs={bs} avail_mem=10.{80 - i} GB)", i, len(sizes), g * (at - 0.05)
        )
        s["capture_cuda_graphs"].append(
            Event(at=at, text=text, kind="progress_end" if i == len(sizes) else "progress")
        )
    if config.spec_enabled:
        s["capture_cuda_graphs"].append(
            Event(
                at=0.96,
                text=log.rank(
                    0,
                    "Capture draft cuda graph begin. This can take up to several minutes. avail mem=10.70 GB",
                ),
            )
        )
        s["capture_cuda_graphs"].append(
            Event(
                at=0.99,
                text=log.rank(
                    0,
                    f"Capture draft cuda graph end. Time elapsed: {g * 0.03:.2f} s. mem usage=0.05 GB. avail mem=10.65 GB.",
                ),
            )
        )
    s["capture_cuda_graphs"] += [
        Event(
            at=1.0,
            text=log.rank(
                0,
                f"Capture cuda graph end. Time elapsed: {g:.2f} s. mem usage=0.15 GB. avail mem=10.65 GB.",
            ),
        ),
        Event(
            at=1.0,
            text=log.rank(
                0,
                (
                    f"max_total_num_tokens={kv_tokens}, chunked_prefill_size={chunk}, max_prefill_tokens=16384, "
                    f"max_running_requests={config.max_running}, context_len={config.max_model_len}, "
                    "available_gpu_mem=10.65 GB"
                ),
            ),
        ),
    ]
    s["http_start"] = [
        Event(at=0.0, text=log.uvicorn(f"Started server process [{log.pid}]")),
        Event(at=0.0, text=log.uvicorn("Waiting for application startup.")),
        Event(at=0.0, text=log.uvicorn("Application startup complete.")),
        Event(at=0.0, kind="listen"),
        Event(
            at=0.0,
            text=log.uvicorn(
                f"Uvicorn running on http://{config.host}:{config.port} (Press CTRL+C to quit)"
            ),
        ),
    ]
    s["warmup"] = [
        Event(at=0.05, text=log.uvicorn('127.0.0.1:40154 - "GET /get_model_info HTTP/1.1" 200 OK')),
        Event(
            at=0.3,
            text=log.rank(
                0,
                (
                    "Prefill batch, #new-seq: 1, #new-token: 7, #cached-token: 0, token usage: 0.00, "
                    "#running-req: 0, #queue-req: 0, cuda graph: False, input throughput (token/s): 0.00"
                ),
            ),
        ),
        Event(at=1.0, text=log.uvicorn('127.0.0.1:40160 - "POST /generate HTTP/1.1" 200 OK')),
    ]
    s["ready"] = [
        Event(at=0.0, kind="ready"),
        Event(at=0.0, text=log.main("The server is fired up and ready to roll!")),
    ]
    return s


def _vllm(config: SimConfig, d: dict[str, float], log: LogFormat) -> dict[str, list[Event]]:
    ranks = range(config.tp)
    spec = (
        f"SpeculativeConfig(method='eagle', num_spec_tokens={config.spec_draft_tokens})"
        if config.spec_enabled
        else "None"
    )
    s: dict[str, list[Event]] = {}
    s["dist_init"] = [
        Event(at=0.0, text=log.main("vLLM API server version 0.11.1")),
        Event(
            at=0.0,
            text=log.main(
                f"non-default args: {{'model': '{config.model}', 'host': '{config.host}', "
                f"'port': {config.port}, 'tensor_parallel_size': {config.tp}, "
                f"'max_num_seqs': {config.max_running}}}",
                src="utils.py:243",
            ),
        ),
        Event(at=0.0, kind="bind"),
        Event(
            at=0.0,
            text=log.main(f"Using max model len {config.max_model_len}", src="model.py:1745"),
        ),
        Event(
            at=0.02, text=log.core("Waiting for init message from front-end.", src="core.py:730")
        ),
        Event(
            at=0.05,
            text=log.core(
                f"Initializing a V1 LLM engine (v0.11.1) with config: model='{config.model}', "
                f"speculative_config={spec}, tokenizer='{config.model}', dtype=torch.bfloat16, "
                f"max_seq_len={config.max_model_len}, tensor_parallel_size={config.tp}, "
                "pipeline_parallel_size=1, quantization=None, enforce_eager=False, "
                "kv_cache_dtype=auto, seed=0"
            ),
        ),
    ]
    if config.tp > 1:
        s["dist_init"].append(
            Event(at=0.5, text=log.rank(0, "vLLM is using nccl==2.27.3", src="pynccl.py:103"))
        )
    s["dist_init"] += [
        Event(
            at=1.0,
            text=log.rank(
                r,
                (
                    f"rank {r} in world size {config.tp} is assigned as DP rank 0, PP rank 0, "
                    f"TP rank {r}, EP rank {r}"
                ),
                src="parallel_state.py:1325",
            ),
        )
        for r in ranks
    ]
    s["download"] = []  # a model fetched before loading, with no progress shown
    w = d["load_weights"]
    s["load_weights"] = [
        Event(
            at=0.0,
            text=log.rank(
                0, f"Starting to load model {config.model}...", src="gpu_model_runner.py:2843"
            ),
        ),
        *_bar_events("Loading safetensors checkpoint shards", 4, w, shards=True),
        Event(
            at=0.97,
            text=log.rank(
                0, f"Loading weights took {w * 0.85:.2f} seconds", src="default_loader.py:314"
            ),
        ),
        Event(
            at=1.0,
            text=log.rank(
                0,
                f"Model loading took 14.9596 GiB and {w:.6f} seconds",
                src="gpu_model_runner.py:2904",
            ),
        ),
    ]
    c = d["torch_compile"]
    s["torch_compile"] = [
        Event(
            at=0.0,
            text=log.rank(
                0,
                (
                    "Using cache directory: /root/.cache/vllm/torch_compile_cache/6e3c1b9a2f/rank_0_0/backbone "
                    "for vLLM's torch.compile"
                ),
                src="backends.py:609",
            ),
        ),
        Event(
            at=0.2,
            text=log.rank(
                0, f"Dynamo bytecode transform time: {c * 0.2:.2f} s", src="backends.py:623"
            ),
        ),
        Event(
            at=0.95,
            text=log.rank(
                0,
                f"Compiling a graph for dynamic shape takes {c * 0.75:.2f} s",
                src="backends.py:275",
            ),
        ),
        Event(
            at=1.0,
            text=log.rank(0, f"torch.compile takes {c * 0.95:.2f} s in total", src="monitor.py:34"),
        ),
    ]
    s["jit_compile"] = []  # FlashInfer JIT on a cold cache: minutes with nothing printed
    kv_tokens = 426_560
    s["kv_cache"] = [
        Event(
            at=0.5,
            text=log.rank(0, "Available KV cache memory: 52.07 GiB", src="gpu_worker.py:315"),
        ),
        Event(
            at=0.9,
            text=log.core(f"GPU KV cache size: {kv_tokens:,} tokens", src="kv_cache_utils.py:1199"),
        ),
        Event(
            at=1.0,
            text=log.core(
                f"Maximum concurrency for {config.max_model_len:,} tokens per request: "
                f"{kv_tokens / config.max_model_len:.2f}x",
                src="kv_cache_utils.py:1204",
            ),
        ),
    ]
    g = d["capture_cuda_graphs"]
    s["capture_cuda_graphs"] = [
        *_bar_events("Capturing CUDA graphs (mixed prefill-decode, PIECEWISE)", 67, g, end=0.6),
        *_bar_events("Capturing CUDA graphs (decode, FULL)", 35, g, start=0.62, end=0.95),
        Event(
            at=1.0,
            text=log.rank(
                0,
                f"Graph capturing finished in {max(1, round(g))} secs, took 0.32 GiB",
                src="gpu_model_runner.py:3815",
            ),
        ),
    ]
    engine_s = sum(sec for name, sec in config.phases if name not in ("http_start", "ready"))
    s["http_start"] = [
        Event(
            at=0.0,
            text=log.core(
                f"init engine (profile, create kv cache, warmup model) took {engine_s:.2f} seconds",
                src="core.py:243",
            ),
        ),
        Event(at=0.3, text=log.main("Supported tasks: ['generate']", src="api_server.py:1629")),
        Event(
            at=0.35,
            text=log.main(
                f"Starting vLLM API server 0 on http://{config.host}:{config.port}",
                src="api_server.py:1945",
            ),
        ),
        Event(at=0.4, text=log.main("Available routes are:", src="launcher.py:38")),
    ]
    for path, methods in _VLLM_ROUTES:
        s["http_start"].append(
            Event(at=0.4, text=log.main(f"Route: {path}, Methods: {methods}", src="launcher.py:46"))
        )
    s["http_start"] += [
        Event(at=0.9, text=log.uvicorn(f"Started server process [{log.pid}]")),
        Event(at=0.9, text=log.uvicorn("Waiting for application startup.")),
    ]
    s["ready"] = [
        Event(at=0.0, kind="listen"),
        Event(at=0.0, kind="ready"),
        Event(at=0.0, text=log.uvicorn("Application startup complete.")),
    ]
    return s


_VLLM_ROUTES = (
    ("/openapi.json", "GET, HEAD"),
    ("/health", "GET"),
    ("/load", "GET"),
    ("/ping", "GET, POST"),
    ("/version", "GET"),
    ("/v1/models", "GET"),
    ("/v1/completions", "POST"),
    ("/v1/chat/completions", "POST"),
    ("/metrics", "GET"),
)


def _gguf(config: SimConfig) -> str:
    return "/models/" + config.model.rsplit("/", 1)[-1] + "-Q4_K_M.gguf"


def _llamacpp(config: SimConfig, d: dict[str, float], log: LogFormat) -> dict[str, list[Event]]:
    gguf = _gguf(config)
    s: dict[str, list[Event]] = {}
    s["http_start"] = [
        Event(
            at=0.0,
            text="build: 4589 (eb7cf15a) with cc (Debian 12.2.0-14) 12.2.0 for x86_64-linux-gnu",
        ),
        Event(at=0.0, text="system info: n_threads = 16, n_threads_batch = 16, total_threads = 32"),
        Event(at=0.5, kind="listen"),
        Event(
            at=0.5,
            text=f"main: HTTP server is listening, hostname: {config.host}, port: {config.port}, http threads: 31",
        ),
        Event(at=1.0, text="main: loading model"),
    ]
    d["load_weights"]
    s["load_weights"] = [
        Event(at=0.0, text=f"srv    load_model: loading model '{gguf}'"),
        Event(
            at=0.05,
            text=f"llama_model_loader: loaded meta data with 29 key-value pairs and 292 tensors from {gguf} (version GGUF V3 (latest))",
        ),
        Event(at=0.3, text="llm_load_tensors: offloading 32 repeating layers to GPU"),
        Event(at=0.3, text="llm_load_tensors: offloaded 33/33 layers to GPU"),
        Event(at=0.3, text="llm_load_tensors:        CUDA0 model buffer size =  4403.49 MiB"),
        Event(at=1.0, text="llm_load_tensors:   CPU_Mapped model buffer size =   281.81 MiB"),
    ]
    s["kv_cache"] = [
        Event(at=0.1, text=f"llama_new_context_with_model: n_ctx      = {config.max_model_len}"),
        Event(at=0.6, text="llama_kv_cache_init:      CUDA0 KV buffer size =  4096.00 MiB"),
        Event(
            at=1.0,
            text="llama_new_context_with_model:      CUDA0 compute buffer size =   296.00 MiB",
        ),
    ]
    s["warmup"] = [
        Event(
            at=0.0,
            text="common_init_from_params: warming up the model with an empty run - please wait ... (--no-warmup to disable)",
        ),
        Event(
            at=1.0,
            text=f"srv          init: initializing slots, n_slots = {min(config.max_running, 64)}",
        ),
    ]
    s["ready"] = [
        Event(at=0.0, kind="ready"),
        Event(at=0.0, text="main: model loaded"),
        Event(
            at=0.0,
            text=f"main: server is listening on http://{config.host}:{config.port} - starting the main loop",
        ),
        Event(at=0.0, text="srv  update_slots: all slots are idle"),
    ]
    return s


def _generic(config: SimConfig, d: dict[str, float], log: LogFormat) -> dict[str, list[Event]]:
    w = d["load_weights"]
    s: dict[str, list[Event]] = {}
    s["load_weights"] = [
        Event(at=0.0, text=log.main(f"Loading model {config.model}")),
        *_bar_events("Loading checkpoint shards", 4, w),
        Event(at=1.0, text=log.main(f"Model loaded in {w:.2f} s")),
    ]
    s["kv_cache"] = [Event(at=1.0, text=log.main("KV cache allocated: 417792 tokens"))]
    s["warmup"] = [
        Event(at=0.0, text=log.main("Warming up")),
        Event(at=1.0, text=log.main(f"Warmup done in {d['warmup']:.2f} s")),
    ]
    s["http_start"] = [
        Event(at=0.0, text=log.uvicorn(f"Started server process [{log.pid}]")),
        Event(at=0.0, text=log.uvicorn("Waiting for application startup.")),
        Event(at=0.5, text=log.uvicorn("Application startup complete.")),
    ]
    s["ready"] = [
        Event(at=0.0, kind="listen"),
        Event(at=0.0, kind="ready"),
        Event(
            at=0.0,
            text=log.uvicorn(
                f"Uvicorn running on http://{config.host}:{config.port} (Press CTRL+C to quit)"
            ),
        ),
    ]
    return s
