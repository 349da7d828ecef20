"""What each simulated engine prints, and then does, when it fails.

The lines are the engines' own (``research/engines.md``): SGLang's scheduler traceback
followed by ``Received sigquit from a child process``, vLLM's ``EngineCore failed to
start`` and the API server's ``Engine core initialization failed``, llama.cpp's
``exiting due to model loading error``. The ending is what the engine does next: exit,
die by a signal, hang, keep printing without progress, or lose a child and live on.
"""

from __future__ import annotations

import signal
from dataclasses import dataclass

from servegate.sim.config import SimConfig
from servegate.sim.startup import LogFormat, progress_bar

__all__ = ["Failure", "plan_failure"]

SITE = "/usr/local/lib/python3.12/dist-packages"

OOM = (
    "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 1.75 GiB. GPU 0 has a total "
    "capacity of 139.81 GiB of which 1.21 GiB is free. Including non-PyTorch memory, this process "
    "has 138.58 GiB memory in use. Of the allocated memory 136.92 GiB is allocated by PyTorch, and "
    "1.02 GiB is reserved by PyTorch but unallocated. If reserved but unallocated memory is large "
    "try setting PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True to avoid fragmentation.  See "
    "documentation for Memory Management  (https://pytorch.org/docs/stable/notes/cuda.html"
    "#environment-variables)"
)
# SGLang's advice after a failed CUDA-graph capture (cuda_graph_runner.py)
CAPTURE_FAILED = (
    "Possible solutions:",
    "1. set --mem-fraction-static to a smaller value (e.g., 0.8 or 0.7)",
    "2. set --cuda-graph-max-bs to a smaller value (e.g., 16)",
    "3. disable torch compile by not using --enable-torch-compile",
    "4. disable CUDA graph by --disable-cuda-graph. (Not recommended. Huge performance loss)",
    "Open an issue on GitHub https://github.com/sgl-project/sglang/issues/new/choose ",
)
NCCL = (
    "torch.distributed.DistBackendError: NCCL error in: "
    "/pytorch/torch/csrc/distributed/c10d/ProcessGroupNCCL.cpp:3356, unhandled cuda error "
    "(run with NCCL_DEBUG=INFO for details), NCCL version 2.21.5",
    "ncclUnhandledCudaError: Call to CUDA function failed.",
    "Last error:",
    "Cuda failure 'invalid device ordinal'",
)
ARCH_WARNING = (
    "WARNING:flashinfer.compilation_context:Failed to get device capability: "
    "SM 12.x requires CUDA >= 12.9."
)
ARCH = "RuntimeError: No supported CUDA architectures found for major versions [12]."
ILLEGAL = "RuntimeError: CUDA error: an illegal memory access was encountered"


@dataclass(frozen=True, slots=True, kw_only=True)
class Failure:
    """Lines to print, then the ending."""

    lines: tuple[str, ...]
    # exit: exit with ``code``; signal: kill ourselves with signal ``code``; hang: print
    # nothing more; stall: repeat ``heartbeat`` without progress; child-death: SIGKILL
    # the child ``child`` and live on; engine-dead: vLLM's engine core dies, the API
    # server notices at the next request.
    end: str
    code: int = 1
    child: str = ""
    heartbeat: str = ""  # for stall; ``{elapsed}`` is the seconds since the stall began
    # lines printed after the child died (vLLM reports its worker's death)
    after_child: tuple[str, ...] = ()


def _frames(frames: list[tuple[str, int, str, str]]) -> list[str]:
    out = ["Traceback (most recent call last):"]
    for path, line, func, code in frames:
        out.append(f'  File "{path}", line {line}, in {func}')
        if code:
            out.append(f"    {code}")
    return out


def _sglang_stack(phase: str | None) -> list[tuple[str, int, str, str]]:
    base = [
        (
            f"{SITE}/sglang/srt/managers/scheduler.py",
            2876,
            "run_scheduler_process",
            "scheduler = Scheduler(",
        ),
        (
            f"{SITE}/sglang/srt/managers/scheduler.py",
            312,
            "__init__",
            "self.tp_worker = TpWorkerClass(",
        ),
        (
            f"{SITE}/sglang/srt/managers/tp_worker.py",
            84,
            "__init__",
            "self.model_runner = ModelRunner(",
        ),
        (
            f"{SITE}/sglang/srt/model_executor/model_runner.py",
            243,
            "__init__",
            "self.initialize(min_per_gpu_memory)",
        ),
    ]
    step = {
        "dist_init": ("init_torch_distributed", 520, "initialize_model_parallel("),
        "load_weights": ("load_model", 695, "self.model = get_model("),
        "kv_cache": ("init_memory_pool", 1320, "raise RuntimeError("),
        "attention_backend": (
            "init_attention_backend",
            1450,
            "self.attn_backend = self._get_attention_backend()",
        ),
        "jit_compile": (
            "init_attention_backend",
            1450,
            "self.attn_backend = self._get_attention_backend()",
        ),
    }.get(
        phase or "", ("init_device_graphs", 1620, "self.cuda_graph_runner = CudaGraphRunner(self)")
    )
    base.append((f"{SITE}/sglang/srt/model_executor/model_runner.py", step[1], step[0], step[2]))
    return base


def _vllm_stack(phase: str | None) -> list[tuple[str, int, str, str]]:
    base = [
        (
            f"{SITE}/vllm/v1/engine/core.py",
            699,
            "run_engine_core",
            "engine_core = EngineCoreProc(*args, **kwargs)",
        ),
        (f"{SITE}/vllm/v1/engine/core.py", 498, "__init__", "super().__init__("),
        (
            f"{SITE}/vllm/v1/engine/core.py",
            92,
            "__init__",
            "self._initialize_kv_caches(vllm_config)"
            if phase in ("kv_cache", "jit_compile", "capture_cuda_graphs")
            else "self.model_executor = executor_class(vllm_config)",
        ),
    ]
    inner = {
        "dist_init": (
            f"{SITE}/vllm/distributed/parallel_state.py",
            1137,
            "init_distributed_environment",
            "torch.distributed.init_process_group(",
        ),
        "load_weights": (
            f"{SITE}/vllm/v1/worker/gpu_model_runner.py",
            2859,
            "load_model",
            "self.model = model_loader.load_model(",
        ),
        "torch_compile": (
            f"{SITE}/vllm/compilation/backends.py",
            560,
            "__call__",
            "self.configure_post_pass()",
        ),
        "kv_cache": (
            f"{SITE}/vllm/v1/core/kv_cache_utils.py",
            688,
            "check_enough_kv_cache_memory",
            "raise ValueError(",
        ),
        "jit_compile": (
            f"{SITE}/flashinfer/jit/core.py",
            143,
            "build_and_load",
            "self.build(verbose)",
        ),
    }.get(
        phase or "",
        (
            f"{SITE}/vllm/v1/worker/gpu_model_runner.py",
            3790,
            "capture_model",
            "self._capture_cudagraphs(",
        ),
    )
    return [*base, inner]


def plan_failure(config: SimConfig, log: LogFormat, kind: str, phase: str | None) -> Failure:
    """The failure ``kind`` of ``config.engine``, happening during ``phase``."""
    engine = config.engine
    if kind == "hang":
        return Failure(lines=(), end="hang")
    if kind == "silent-exit":
        return Failure(lines=(), end="signal", code=int(signal.SIGKILL))
    if kind == "stall":
        return Failure(lines=(), end="stall", heartbeat=_heartbeat(log, phase))
    if engine == "sglang":
        return _sglang(config, log, kind, phase)
    if engine == "vllm":
        return _vllm(config, log, kind, phase)
    if engine == "llamacpp":
        return _llamacpp(config, kind, phase)
    return _generic(config, log, kind, phase)


def _heartbeat(log: LogFormat, phase: str | None) -> str:
    if log.engine == "vllm":
        return log.main(
            "Waiting for 1 local, 0 remote core engine proc(s) to start.", src="utils.py:820"
        )
    desc = {
        "load_weights": "Loading safetensors checkpoint shards",
        "capture_cuda_graphs": "Capturing batches (bs=8 avail_mem=10.77 GB)",
    }.get(phase or "", "Capturing batches (bs=8 avail_mem=10.77 GB)")
    return "\r" + progress_bar(desc, 3, 7, 5.0).replace("[00:05<", "[{elapsed}<")


def _root_cause(kind: str, phase: str | None) -> list[str]:
    if kind == "oom":
        if phase == "kv_cache":
            return [
                "RuntimeError: Not enough memory. Please try to increase "
                "--mem-fraction-static. Current value: mem_fraction_static=0.88"
            ]
        return [OOM]
    if kind == "nccl":
        return list(NCCL)
    if kind == "cuda-arch":
        return [ARCH]
    return [ILLEGAL]


def _sglang(config: SimConfig, log: LogFormat, kind: str, phase: str | None) -> Failure:
    main = log.main
    if kind == "port-in-use":
        return Failure(
            lines=(
                log.uvicorn(
                    f"[Errno 98] error while attempting to bind on address "
                    f"('{config.host}', {config.port}): address already in use",
                    "ERROR",
                ),
            ),
            end="exit",
            code=1,
        )
    if kind == "traceback-exit":
        tb = _frames(
            [
                ("<frozen runpy>", 198, "_run_module_as_main", ""),
                ("<frozen runpy>", 88, "_run_code", ""),
                (f"{SITE}/sglang/launch_server.py", 14, "<module>", "launch_server(server_args)"),
                (
                    f"{SITE}/sglang/srt/entrypoints/http_server.py",
                    1187,
                    "launch_server",
                    "tokenizer_manager, template_manager, scheduler_info = _launch_subprocesses(",
                ),
                (
                    f"{SITE}/sgl_kernel/__init__.py",
                    5,
                    "<module>",
                    "from sgl_kernel import common_ops",
                ),
            ]
        )
        tb.append(
            f"ImportError: {SITE}/sgl_kernel/common_ops.abi3.so: undefined symbol: "
            "_ZN3c104cuda9SetDeviceEab"
        )
        return Failure(lines=tuple(tb), end="exit", code=1)
    if kind == "child-death":
        # SGLang builds before the subprocess watchdog: the scheduler is killed (OOM killer,
        # NCCL abort), nothing is printed and the HTTP process lives on.
        return Failure(lines=(), end="child-death", child="scheduler_TP0")
    tb = _frames(_sglang_stack(phase)) + _root_cause(kind, phase)
    if kind == "oom" and phase == "capture_cuda_graphs":
        # SGLang wraps the capture's out-of-memory error with its advice
        tb = _frames(
            [
                *_sglang_stack(phase),
                (
                    f"{SITE}/sglang/srt/model_executor/cuda_graph_runner.py",
                    380,
                    "__init__",
                    "raise Exception(",
                ),
            ]
        )
        tb += [
            "Exception: Capture cuda graph failed: " + OOM.removeprefix("torch.OutOfMemoryError: "),
            *CAPTURE_FAILED,
        ]
    elif kind == "oom" and phase == "kv_cache" and config.tuning is not None:
        fraction = f"mem_fraction_static={config.tuning.mem_fraction_static:g}"
        tb[-1] = tb[-1].replace("mem_fraction_static=0.88", fraction)
    lines = []
    if kind == "cuda-arch":
        lines.append(ARCH_WARNING)
    lines.append(log.rank(0, "Scheduler hit an exception: " + tb[0]))
    lines += tb[1:]
    lines.append("")
    lines.append(main("Received sigquit from a child process. It usually means the child failed."))
    # kill_process_tree(os.getpid()) includes the main process itself
    return Failure(lines=tuple(lines), end="signal", code=int(signal.SIGKILL))


def _vllm(config: SimConfig, log: LogFormat, kind: str, phase: str | None) -> Failure:
    api_tb = [
        ("/usr/local/bin/vllm", 10, "<module>", "sys.exit(main())"),
        (f"{SITE}/vllm/entrypoints/cli/main.py", 73, "main", "args.dispatch_function(args)"),
        (f"{SITE}/vllm/entrypoints/cli/serve.py", 59, "cmd", "uvloop.run(run_server(args))"),
        (
            f"{SITE}/vllm/entrypoints/openai/api_server.py",
            1884,
            "run_server",
            "await run_server_worker(listen_address, sock, args, **uvicorn_kwargs)",
        ),
        (
            f"{SITE}/vllm/entrypoints/openai/api_server.py",
            1902,
            "run_server_worker",
            "async with build_async_engine_client(",
        ),
        (f"{SITE}/vllm/v1/engine/utils.py", 919, "wait_for_engine_startup", "raise RuntimeError("),
    ]

    def api(lines: list[str]) -> list[str]:
        return [f"(APIServer pid={log.pid}) {line}" for line in lines]

    if kind == "port-in-use":
        tb = [
            *_frames(
                [
                    *api_tb[:4],
                    (
                        f"{SITE}/vllm/entrypoints/openai/api_server.py",
                        1843,
                        "setup_server",
                        "sock = create_server_socket(sock_addr)",
                    ),
                    (
                        f"{SITE}/vllm/entrypoints/openai/api_server.py",
                        1815,
                        "create_server_socket",
                        "sock.bind(addr)",
                    ),
                ]
            ),
            "OSError: [Errno 98] Address already in use",
        ]
        return Failure(lines=tuple(api(tb)), end="exit", code=1)
    if kind == "traceback-exit":
        tb = [
            *_frames(
                [
                    *api_tb[:3],
                    (
                        f"{SITE}/vllm/entrypoints/openai/api_server.py",
                        41,
                        "<module>",
                        "from vllm.engine.arg_utils import AsyncEngineArgs",
                    ),
                    (f"{SITE}/vllm/_custom_ops.py", 14, "<module>", "import vllm._C"),
                ]
            ),
            f"ImportError: {SITE}/vllm/_C.abi3.so: undefined symbol: "
            "_ZN3c104cuda29c10_cuda_check_implementationEiPKcS2_ib",
        ]
        return Failure(lines=tuple(api(tb)), end="exit", code=1)

    def core(msg: str) -> str:
        return log.core(msg, level="ERROR", src="core.py:708")

    failed = api(
        [
            *_frames(api_tb),
            "RuntimeError: Engine core initialization failed. See root cause above. "
            "Failed core proc(s): {}",
        ]
    )
    if kind == "child-death":
        after = [
            log.core(
                "Worker proc VllmWorker-0 died unexpectedly, shutting down executor.",
                level="ERROR",
                src="multiproc_executor.py:154",
            ),
            core("EngineCore failed to start."),
            *failed,
        ]
        return Failure(lines=(), end="child-death", child="Worker_TP0", after_child=tuple(after))
    root = _root_cause(kind, phase)
    if kind == "oom" and phase == "kv_cache":
        root = [
            "ValueError: No available memory for the cache blocks. Try increasing "
            "`gpu_memory_utilization` when initializing the engine."
        ]
    lines = []
    if kind == "cuda-arch":
        lines.append(ARCH_WARNING)
    lines.append(core("EngineCore failed to start."))
    lines += [core(line) for line in _frames(_vllm_stack(phase)) + root]
    lines.append(
        f"(EngineCore_DP0 pid={log.children.get('EngineCore_DP0', log.pid)}) "
        "Process EngineCore_DP0:"
    )
    lines += failed
    return Failure(lines=tuple(lines), end="exit", code=1)


def _llamacpp(config: SimConfig, kind: str, phase: str | None) -> Failure:
    gguf = "/models/" + config.model.rsplit("/", 1)[-1] + "-Q4_K_M.gguf"
    if kind == "port-in-use":
        return Failure(
            lines=(
                f"srv    start: couldn't bind HTTP server socket, hostname: {config.host}, "
                f"port: {config.port}",
                "main: exiting due to HTTP server error",
            ),
            end="exit",
            code=1,
        )
    if kind == "traceback-exit":
        return Failure(
            lines=(
                "terminate called after throwing an instance of 'std::runtime_error'",
                "  what():  unknown model architecture: 'qwen3next'",
            ),
            end="signal",
            code=int(signal.SIGABRT),
        )
    if kind == "oom":
        if phase == "kv_cache":
            cause = [
                "ggml_backend_cuda_buffer_type_alloc_buffer: allocating 4096.00 MiB on device 0: "
                "cudaMalloc failed: out of memory",
                "llama_kv_cache_init: failed to allocate buffer for kv cache",
                "llama_new_context_with_model: llama_kv_cache_init() failed for self-attention "
                "cache",
                f"common_init_from_params: failed to create context with model '{gguf}'",
            ]
        else:
            cause = [
                "ggml_backend_cuda_buffer_type_alloc_buffer: allocating 4403.49 MiB on device 0: "
                "cudaMalloc failed: out of memory",
                "llama_model_load: error loading model: unable to allocate CUDA0 buffer",
                "llama_model_load_from_file_impl: failed to load model",
                f"common_init_from_params: failed to load model '{gguf}'",
            ]
        return Failure(
            lines=(
                *cause,
                f"srv    load_model: failed to load model, '{gguf}'",
                "main: exiting due to model loading error",
            ),
            end="exit",
            code=1,
        )
    error = "no kernel image is available for execution on the device"
    if kind == "crash-after-ready":
        error = "an illegal memory access was encountered"
    return Failure(
        lines=(
            f"CUDA error: {error}",
            "  current device: 0, in function ggml_cuda_compute_forward at "
            "ggml/src/ggml-cuda/ggml-cuda.cu:2335",
            "  err",
            "ggml/src/ggml-cuda/ggml-cuda.cu:73: CUDA error",
        ),
        end="signal",
        code=int(signal.SIGABRT),
    )


def _generic(config: SimConfig, log: LogFormat, kind: str, phase: str | None) -> Failure:
    if kind == "port-in-use":
        return Failure(
            lines=(
                log.uvicorn(
                    f"[Errno 98] error while attempting to bind on address "
                    f"('{config.host}', {config.port}): address already in use",
                    "ERROR",
                ),
            ),
            end="exit",
            code=1,
        )
    frames = [
        ("/app/serve.py", 88, "<module>", "main()"),
        ("/app/serve.py", 61, "main", "model = load_model(args.model)"),
    ]
    if kind == "traceback-exit":
        return Failure(
            lines=(*_frames(frames), "KeyError: 'model.layers.0.self_attn.qkv_proj.weight'"),
            end="exit",
            code=1,
        )
    root = _root_cause(kind, phase)
    if kind == "cuda-arch":
        root = [
            "RuntimeError: CUDA error: no kernel image is available for execution on the device"
        ]
    return Failure(lines=(*_frames(frames), *root), end="exit", code=1)


def after_ready_failure(config: SimConfig, log: LogFormat) -> Failure:
    """The crash of a serving engine (``--fail crash-after-ready``)."""
    if config.engine == "sglang":
        return _sglang(config, log, "crash-after-ready", "serving")
    if config.engine == "vllm":
        tb = [
            *_frames(
                [
                    (
                        f"{SITE}/vllm/v1/engine/core.py",
                        712,
                        "run_engine_core",
                        "engine_core.run_busy_loop()",
                    ),
                    (
                        f"{SITE}/vllm/v1/engine/core.py",
                        739,
                        "run_busy_loop",
                        "self._process_engine_step()",
                    ),
                    (
                        f"{SITE}/vllm/v1/engine/core.py",
                        764,
                        "_process_engine_step",
                        "outputs, model_executed = self.step_fn()",
                    ),
                ]
            ),
            ILLEGAL,
        ]
        lines = [
            log.core("EngineCore encountered a fatal error.", level="ERROR", src="core.py:710")
        ]
        lines += [log.core(line, level="ERROR", src="core.py:710") for line in tb]
        lines.append(
            log.main("AsyncLLM output_handler failed.", level="ERROR", src="async_llm.py:480")
        )
        lines.append(
            f"(APIServer pid={log.pid}) vllm.v1.engine.exceptions.EngineDeadError: "
            "EngineCore encountered an issue. See stack trace (above) for the root cause."
        )
        lines += [log.uvicorn("Shutting down"), log.uvicorn(f"Finished server process [{log.pid}]")]
        return Failure(lines=tuple(lines), end="exit", code=1)
    if config.engine == "llamacpp":
        return _llamacpp(config, "crash-after-ready", "serving")
    return _generic(config, log, "crash-after-ready", "serving")


__all__ += ["after_ready_failure"]
