"""The cause and kind of a crash, for each shape a log takes on its way to the gate.

Each log is written by a live process that then exits, kills itself or stays alive
(tests/gate/crash_replay.py), and the real gate decides: lines behind a launcher's tab,
docker and kubectl prefixes, JSON and glog lines, a line wrapped by a terminal, a Rust
panic before TGI's ``Webserver Crashed``, a missing module without a traceback,
getopt's errors, tritonserver's model table; the rule that picks the cause (the failure's
own episode, the earliest root, a retried line last); and logs that only look bad,
which stay READY.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest
from tests.gate.crash_replay import (
    CRASH_TIMEOUT_S,
    TIMEOUT_S,
    Fixture,
    load_fixtures,
    run_log,
    score,
)
from tests.launch.helpers import free_port

from servegate.engines import get_profile
from servegate.gate.cause import select_cause
from servegate.gate.verdict import Status, Verdict
from servegate.gate.watch import Rules


def gate(tmp_path: Path, engine: str, lines: list[str], exit: int | None = 1) -> Verdict:
    """The verdict on a live process that prints ``lines`` and ends as ``exit`` says."""
    log = tmp_path / "server.log"
    log.write_text("".join(line + "\n" for line in lines))
    ready = ("serving on port",) if engine == "generic" else ()
    return run_log(log, engine=engine, exit=exit, ready=ready)


def test_a_launchers_tab_is_not_a_tracebacks_indentation(tmp_path: Path) -> None:
    """Every line indented with a tab: the exception line still decides, on sight."""
    cause = "\tRuntimeError: CUDA error: no kernel image is available for execution on the device"
    lines = [
        "\tINFO 12-04 10:00:00 [core.py:58] Initializing a V1 LLM engine",
        "\tTraceback (most recent call last):",
        '\t  File "/app/vllm/v1/engine/core.py", line 691, in run_engine_core',
        '\t    raise RuntimeError("CUDA error: no kernel image is available")',
        cause,
    ]
    verdict = gate(tmp_path, "vllm", lines, exit=None)
    assert (verdict.status, verdict.detected_by, verdict.kind) == (
        "crash",
        "signature",
        "cuda-arch",
    )
    assert verdict.matched_line == cause.strip()


def test_docker_and_kubectl_prefixes_come_off(tmp_path: Path) -> None:
    """A compose service's and a pod's prefix before vLLM's own: the line still decides."""
    cause = (
        "[pod/vllm-0/vllm] (EngineCore_DP0 pid=7) ERROR 12-04 10:00:05 [core.py:700] "
        "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB"
    )
    lines = [
        "vllm-1  | (APIServer pid=1) INFO 12-04 10:00:00 [api_server.py:1] vLLM API server",
        "2026-12-04T10:00:01.123456789Z stderr F (EngineCore_DP0 pid=7) INFO 12-04 10:00:01 "
        "[gpu_model_runner.py:1] Starting to load model /models/m",
        cause,
    ]
    verdict = gate(tmp_path, "vllm", lines, exit=None)
    assert (verdict.kind, verdict.matched_line) == ("oom", cause)


def test_a_tgi_json_line_holds_the_shards_error(tmp_path: Path) -> None:
    """TGI's --json-output: the shard's standard error inside one JSON line is read as
    lines; an undefined symbol in the flash-attn import is an install problem."""
    stderr = (
        "Shard complete standard error output:\n\nTraceback (most recent call last):\n"
        '  File "/opt/conda/bin/text-generation-server", line 8, in <module>\n'
        "    sys.exit(app())\n"
        "ImportError: /opt/conda/lib/python3.11/site-packages/flash_attn_2_cuda.cpython-311"
        "-x86_64-linux-gnu.so: undefined symbol: _ZN3c104cuda9SetDeviceEi"
    )

    def line(level: str, message: str, target: str = "text_generation_launcher") -> str:
        return json.dumps(
            {
                "timestamp": "2026-12-04T10:00:00.000000Z",
                "level": level,
                "fields": {"message": message},
                "target": target,
                "span": {"rank": 0, "name": "shard-manager"},
            }
        )

    lines = [
        line("INFO", "Starting shard"),
        line("ERROR", stderr),
        line("ERROR", "Shard 0 failed to start"),
        line("INFO", "Shutting down shards"),
        "Error: ShardCannotStart",
    ]
    verdict = gate(tmp_path, "tgi", lines)
    assert verdict.kind == "install"
    assert verdict.matched_line is not None and "undefined symbol" in verdict.matched_line
    assert verdict.to_json()["family"] == "install"


def test_a_json_ready_line_is_ready(tmp_path: Path) -> None:
    """TGI's JSON 'Connected' is its ready line, read as the message."""
    lines = [
        '{"timestamp":"2026-12-04T10:00:00Z","level":"INFO",'
        '"fields":{"message":"Warming up model"}}',
        '{"timestamp":"2026-12-04T10:00:09Z","level":"INFO","fields":{"message":"Connected"},'
        '"target":"text_generation_router"}',
    ]
    assert gate(tmp_path, "tgi", lines, exit=None).status == "ready"


def test_a_llama_cpp_json_error_line_is_the_cause(tmp_path: Path) -> None:
    """llama.cpp's old server logged JSON; its ERROR message is quoted as printed."""
    cause = (
        '{"timestamp":1733306400,"level":"ERROR","function":"init","line":42,'
        '"message":"failed to initialize: cannot open shared object file libcublas.so.12"}'
    )
    verdict = gate(tmp_path, "llamacpp", ['{"level":"INFO","message":"build info"}', cause])
    assert (verdict.kind, verdict.matched_line) == ("install", cause)


def test_a_glog_error_line_is_the_cause_of_tritonservers_exit(tmp_path: Path) -> None:
    """tritonserver: the first E-line (a missing backend library) is the root; the
    ensemble's error and 'failed to load all models' after it are consequences."""
    cause = (
        "E1204 10:00:01.123456 1 model_lifecycle.cc:638] failed to load 'preprocessing' "
        "version 1: Invalid argument: unable to find backend library for backend 'python', "
        "try specifying runtime on the model configuration."
    )
    lines = [
        "I1204 10:00:00.000000 1 server.cc:619] loading models",
        cause,
        "I1204 10:00:01.123500 1 model_lifecycle.cc:773] failed to load 'preprocessing'",
        "E1204 10:00:01.200000 1 model_repository_manager.cc:579] Invalid argument: ensemble "
        "'ensemble' depends on 'preprocessing' which has no loaded version",
        "I1204 10:00:01.300000 1 server.cc:305] Waiting for in-flight requests to complete.",
        "error: creating server: Internal - failed to load all models",
    ]
    verdict = gate(tmp_path, "trtllm", lines)
    assert (verdict.kind, verdict.matched_line) == ("install", cause)


def test_protobufs_parse_error_before_tritonservers_poll_failed_is_the_cause(
    tmp_path: Path,
) -> None:
    """protobuf's own ERROR line says what in config.pbtxt failed; tritonserver's glog
    line after it only that the model directory was skipped: the earlier is quoted."""
    parse = (
        "[libprotobuf ERROR /build/protobuf/src/google/protobuf/text_format.cc:335] Error "
        "parsing text-format inference.ModelConfig: 12:3: Expected integer, got: ${"
    )
    poll = (
        "E1204 10:00:00.123456 77 model_repository_manager.cc:1335] Poll failed for model "
        "directory 'ensemble': failed to read text proto from /models/ensemble/config.pbtxt"
    )
    verdict = gate(tmp_path, "trtllm", [parse, poll])
    assert (verdict.kind, verdict.matched_line) == ("model-load", parse)


def test_a_line_a_terminal_wrapped_is_read_whole(tmp_path: Path) -> None:
    """A glog line hard-wrapped mid-word: the signature split over two lines is found
    once the lines are joined (at the exit: neither half names it on sight), and the
    quote is the message as printed."""
    message = (
        "E1204 10:00:01.123456 1 backend_model.cc:553] ERROR: Failed to create instance: "
        "[TensorRT-LLM][ERROR] CUDA runtime error in cudaMalloc(&ptr, n): out of memory "
        "(/app/tensorrt_llm/cpp/tensorrt_llm/runtime/tllmBuffers.h:123)"
    )
    width = message.index("CUDA runtime") + 9  # the wrap splits "runtime"
    lines = [message[:width], message[width:], "error: creating server: Internal - failed"]
    verdict = gate(tmp_path, "trtllm", lines)
    assert verdict.kind == "oom"
    assert verdict.matched_line == message


def test_a_rust_panic_before_webserver_crashed_is_the_cause(tmp_path: Path) -> None:
    """TGI's router panics, then the launcher says Webserver Crashed: the panic is
    quoted, and its message read from inside the panic."""
    panic = (
        "thread 'main' panicked at 'called `Result::unwrap()` on an `Err` value: "
        'Tokenizer("could not read tokenizer.json")\', router/src/main.rs:123:45'
    )
    lines = [
        "2026-12-04T10:00:00.000000Z  INFO text_generation_launcher: Starting Webserver",
        panic,
        "note: run with `RUST_BACKTRACE=1` environment variable to display a backtrace",
        "2026-12-04T10:00:00.100000Z ERROR text_generation_launcher: Webserver Crashed",
        "2026-12-04T10:00:00.100100Z  INFO text_generation_launcher: Shutting down shards",
        "Error: WebserverFailed",
    ]
    verdict = gate(tmp_path, "tgi", lines)
    assert (verdict.kind, verdict.matched_line) == ("model-load", panic)
    assert "could not read tokenizer.json" in verdict.reason


def test_a_panic_on_out_of_memory_decides_on_sight(tmp_path: Path) -> None:
    """The panic's own words name the failure: out of memory, before Webserver Crashed."""
    panic = (
        "thread 'main' panicked at 'called `Result::unwrap()` on an `Err` value: "
        'Warmup(Generation("CUDA out of memory. Tried to allocate 1.17 GiB"))\', '
        "router/src/main.rs:400:10"
    )
    lines = [panic, "2026-12-04T10:00:00.1Z ERROR text_generation_launcher: Webserver Crashed"]
    verdict = gate(tmp_path, "tgi", lines, exit=None)
    assert (verdict.kind, verdict.matched_line) == ("oom", panic)


def test_a_missing_module_without_a_traceback_is_install(tmp_path: Path) -> None:
    """python -m of an engine that is not installed prints one line and exits 1."""
    line = (
        "/usr/bin/python3: Error while finding module specification for "
        "'sglang.launch_server' (ModuleNotFoundError: No module named 'sglang')"
    )
    verdict = gate(tmp_path, "sglang", [line])
    assert (verdict.kind, verdict.matched_line) == ("install", line)


def test_getopts_unrecognized_option_is_bad_args(tmp_path: Path) -> None:
    """getopt's message (tritonserver's command line) is a bad flag."""
    line = "tritonserver: unrecognized option '--model-stor=/models'"
    verdict = gate(tmp_path, "trtllm", [line, "Usage: tritonserver [options]"])
    assert (verdict.kind, verdict.matched_line) == ("bad-args", line)


def test_the_tritonserver_table_quotes_the_row_that_failed(tmp_path: Path) -> None:
    """The model table's status, split over rows, names the failure: MPI's world size."""
    lines = [
        "+--------------+---------+------------------------------------------------------+",
        "| Model        | Version | Status                                               |",
        "+--------------+---------+------------------------------------------------------+",
        "| tensorrt_llm | 1       | UNAVAILABLE: Internal: unexpected error when creating|",
        "|              |         |  modelInstanceState: [TensorRT-LLM][ERROR] Assertion |",
        "|              |         | failed: mpiSize == tp * pp (worldConfig.cpp:80)      |",
        "+--------------+---------+------------------------------------------------------+",
        "error: creating server: Internal - failed to load all models",
    ]
    verdict = gate(tmp_path, "trtllm", lines)
    assert verdict.kind == "mpi"
    assert verdict.matched_line is not None and "mpiSize == tp * pp" in verdict.matched_line


def test_vocabulary_of_cuda_and_install_failures(tmp_path: Path) -> None:
    """ptxas for a new GPU, an invalid device function: the kernels' architecture."""
    ptxas = "ptxas fatal   : Value 'sm_120a' is not defined for option 'gpu-name'"
    assert gate(tmp_path, "sglang", [ptxas], exit=None).kind == "cuda-arch"
    kernel = "RuntimeError: CUDA kernel failed : invalid device function"
    assert gate(tmp_path, "tgi", [kernel], exit=None).kind == "cuda-arch"
    failed = "RuntimeError: CUDA kernel failed : an operation is not supported"
    assert gate(tmp_path, "tgi", [failed], exit=None).kind == "cuda-error"


def test_method_warmup_waits_for_the_shards_error(tmp_path: Path) -> None:
    """TGI's 'Method Warmup encountered an error.' is a wrapper: the traceback's
    exception after it is quoted, with the kind its words name."""
    cause = "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 3.00 GiB"
    lines = [
        "2026-12-04T10:00:00Z ERROR text_generation_launcher: Method Warmup encountered an error.",
        "Traceback (most recent call last):",
        '  File "/opt/text_generation_server/models/flash_causal_lm.py", line 1, in warmup',
        "    _, batch = self.generate_token(batch)",
        cause,
    ]
    verdict = gate(tmp_path, "tgi", lines, exit=None)
    assert (verdict.kind, verdict.matched_line) == ("oom", cause)


def test_an_ignored_import_error_explains_sglangs_unsupported_architecture(
    tmp_path: Path,
) -> None:
    """SGLang skips a model module whose import failed; the architecture then looks
    unsupported: the ignored import error (a failed kernel build) is the cause."""
    cause = (
        "[2026-12-04 10:00:00] Ignore import error when loading sglang.srt.models.deepseek_v2: "
        "Command '['/usr/bin/gcc', '/tmp/main.c', '-O3']' returned non-zero exit status 1."
    )
    lines = [
        cause,
        "[2026-12-04 10:00:02 TP0] Load weight begin. avail mem=78.00 GB",
        "[2026-12-04 10:00:02 TP0] Scheduler hit an exception: Traceback (most recent call last):",
        '  File "/sgl/model_loader/utils.py", line 80, in get_model_architecture',
        "    return ModelRegistry.resolve_model_cls(architectures)",
        "ValueError: Model architectures ['DeepseekV3ForCausalLM'] are not supported for now.",
    ]
    verdict = gate(tmp_path, "sglang", lines, exit=None)
    assert (verdict.kind, verdict.matched_line) == ("install", cause)


def test_an_error_the_engine_moved_on_from_is_not_the_cause(tmp_path: Path) -> None:
    """A benign early ERROR (then loading went on) is not quoted; the failure's own is."""
    cause = "RuntimeError: the worker process exited before reporting"
    lines = [
        "ERROR 12-04 10:00:00 [chat_utils.py:1] Failed to load the chat template of the tokenizer",
        "INFO 12-04 10:00:01 [gpu_model_runner.py:1] Starting to load model /models/m",
        "Loading safetensors checkpoint shards: 100% Completed | 4/4 [00:03<00:00,  1.10it/s]",
        "INFO 12-04 10:00:05 [core.py:1] init engine took 4.1 seconds",
        cause,
    ]
    verdict = gate(tmp_path, "vllm", lines)
    assert (verdict.kind, verdict.matched_line) == ("exit", cause)


def test_within_one_failure_the_earliest_root_is_the_cause(tmp_path: Path) -> None:
    """Two error lines of one failure: the first (the checkpoint) is the root, the
    lost peer after it a consequence."""
    cause = "ERROR 12-04 10:00:05 [weight_utils.py:1] size mismatch for lm_head.weight"
    lines = [
        "INFO 12-04 10:00:01 [gpu_model_runner.py:1] Starting to load model /models/m",
        cause,
        "ERROR 12-04 10:00:06 [core.py:1] rank 1: Connection reset by peer",
    ]
    verdict = gate(tmp_path, "vllm", lines)
    assert (verdict.kind, verdict.matched_line) == ("model-load", cause)


def test_a_retried_error_is_not_the_cause(tmp_path: Path) -> None:
    """Lines that say they will retry give way to the error that ended the start."""
    cause = "OSError: We couldn't connect to 'https://huggingface.co' to load this file"
    lines = [
        "WARNING 12-04 10:00:00 [hub.py:1] Download of config.json failed, retrying (1/3)",
        "ERROR 12-04 10:00:10 [hub.py:1] Download of config.json failed, retrying (3/3)",
        cause,
    ]
    verdict = gate(tmp_path, "vllm", lines)
    assert (verdict.kind, verdict.matched_line) == ("download", cause)
    alone = gate(tmp_path, "vllm", lines[:2])
    assert alone.matched_line == lines[1]


def test_logs_that_only_look_bad_stay_ready(tmp_path: Path) -> None:
    """ERROR lines, a caught traceback, JSON errors, glog E-lines and an unavailable
    optional model do not stop a server that comes up."""
    vllm = [
        "WARNING 12-04 10:00:00 [utils.py:1] Failed to import flash_attn: undefined symbol: x",
        "ERROR 12-04 10:00:00 [chat_utils.py:1] Failed to load the chat template, using default",
        "Traceback (most recent call last):",
        '  File "/app/x.py", line 1, in <module>',
        "ImportError: cannot import name 'flash_attn_varlen_func'",
        "ERROR 12-04 10:00:01 [hub.py:1] Download failed, retrying (1/3)",
        "(APIServer pid=1) INFO:     Application startup complete.",
    ]
    assert gate(tmp_path, "vllm", vllm, exit=None).status == "ready"
    tgi = [
        '{"level":"ERROR","fields":{"message":"Could not import Flash Attention: No module"}}',
        '{"level":"WARN","fields":{"message":"Mamba kernels are not installed"}}',
        '{"timestamp":"2026","level":"INFO","fields":{"message":"Connected"}}',
    ]
    assert gate(tmp_path, "tgi", tgi, exit=None).status == "ready"
    triton = [
        "E1204 10:00:01.1 1 model_lifecycle.cc:638] failed to load 'optional' version 1: "
        "Invalid argument: unable to find backend library for backend 'onnxruntime'",
        "| optional     | 1       | UNAVAILABLE: Invalid argument: unable to find backend |",
        "I1204 10:00:02.1 1 grpc_server.cc:2451] Started GRPCInferenceService at 0.0.0.0:8001",
        "I1204 10:00:02.2 1 http_server.cc:3558] Started HTTPService at 0.0.0.0:8000",
    ]
    assert gate(tmp_path, "trtllm", triton, exit=None).status == "ready"


def test_a_fatal_line_right_after_the_ready_line_wins(tmp_path: Path) -> None:
    """uvicorn prints 'Application startup complete.' before it binds: a bind error
    right after it is the verdict, not READY."""
    lines = [
        "INFO:     Waiting for application startup.",
        "INFO:     Application startup complete.",
        "ERROR:    [Errno 98] error while attempting to bind on address ('0.0.0.0', 8000): "
        "address already in use",
        "INFO:     Waiting for application shutdown.",
    ]
    verdict = gate(tmp_path, "vllm", lines)
    assert (verdict.status, verdict.kind) == ("crash", "port-in-use")


def test_an_exception_logged_as_a_warning_was_handled(tmp_path: Path) -> None:
    """A traceback vLLM logs at WARNING (an optional import) is no cause; the error after
    it is."""
    cause = "(EngineCore pid=7) ERROR 12-04 10:00:05 [core.py:1] RuntimeError: worker hung up"
    warn = "(EngineCore pid=7) WARNING 12-04 10:00:00 [utils.py:1]"
    lines = [
        f"{warn} Traceback (most recent call last):",
        f'{warn}   File "/x.py", line 1, in <module>',
        f"{warn} ImportError: cannot import name 'flash_attn_varlen_func'",
        cause,
    ]
    verdict = gate(tmp_path, "vllm", lines)
    assert (verdict.kind, verdict.matched_line) == ("exit", cause)


def test_a_shards_output_is_read_as_what_its_error_line_reports(tmp_path: Path) -> None:
    """TGI's 'Shard 0 failed to start:' introduces the shard's output: its exception is
    the cause, a warning in it is not; with no exception, its distributed warning is."""
    head = "2026-12-04T10:00:00Z ERROR text_generation_launcher: Shard 0 failed to start:"
    warning = "Could not import Flash Attention enabled models: No module named 'flash_attn'"
    tail = [
        "2026-12-04T10:00:00Z  INFO text_generation_launcher: Shutting down shards",
        "Error: ShardCannotStart",
    ]
    error = "RuntimeError: the shard's model could not be built"
    verdict = gate(tmp_path, "tgi", [head, warning, error, *tail])
    assert (verdict.kind, verdict.matched_line) == ("shard", error)
    c10d = (
        "[W socket.cpp:601] [c10d] The client socket has failed to connect to "
        "[localhost]:29500 (errno: 99 - Cannot assign requested address)."
    )
    verdict = gate(tmp_path, "tgi", [head, c10d, warning, *tail])
    assert (verdict.kind, verdict.matched_line) == ("distributed", c10d)


@pytest.mark.parametrize(
    ("line", "kind"),
    [
        ("OSError: [Errno 28] No space left on device: '/root/.cache/huggingface/x'", "disk"),
        ("PermissionError: [Errno 13] Permission denied: '/models/m/config.json'", "permission"),
        ("ModuleNotFoundError: No module named 'vllm._C'", "install"),
        ("ImportError: libcudart.so.12: cannot open shared object file", "install"),
        ("RuntimeError: The MPI world size (1) does not match tp_size * pp_size (2)", "mpi"),
        ("torch.distributed.DistBackendError: [c10d] TCPStore timed out", "distributed"),
        ("ValueError: --tensor-parallel-size must be divisible by the number of heads", "bad-args"),
        ("OSError: We couldn't connect to 'https://huggingface.co' to load this file", "download"),
        ("OSError: /models/m does not appear to be a valid config.json", "model-load"),
        ("RuntimeError: this kernel needs compute capability 8.0 or newer", "cuda-arch"),
        ("ValueError: 'fp9' is not a valid CacheDType", "bad-args"),
        ("RuntimeError: something nobody has a word for", "exit"),
        # the vocabulary fitted to the blind batches 2026-12-05f..j, in other wordings
        ("RuntimeError: Failed to load shared library '/opt/x/libllama.so'", "install"),
        ("OSError: dlopen(libggml.dylib): Library not loaded: @rpath/libggml.dylib", "install"),
        (
            "pydantic_core._pydantic_core.ValidationError: 2 validation errors for ServerArgs",
            "bad-args",
        ),
        (
            "ValueError: cutlass_mla is only supported on SM100. "
            "Please use a different attention backend.",
            "bad-args",
        ),
        ("RuntimeError: FP8 GEMM is not supported on Turing architecture", "cuda-arch"),
        ("NotImplementedError: this kernel is only supported on Hopper GPUs", "cuda-arch"),
        ("RuntimeError: This model requires CUDA, and none was found", "cuda-error"),
        ("AssertionError: 50 heads cannot be split evenly across 4 GPUs", "bad-args"),
        ("ValueError: kv cache dtype fp8_e5m2 requires --enable-fp8-kv", "bad-args"),
        # an option that needs a package: the package is missing, not the flag wrong
        ("RuntimeError: fp8 kv cache requires flashinfer_python to be installed", "install"),
        ("ValueError: Marlin kernels require all the modules to be on GPU", "model-load"),
        ("OSError: /models/m/tokenizer_config.json is not a valid JSON file.", "model-load"),
        (
            "safetensors_rust.SafetensorError: Error while deserializing header: "
            "InvalidHeaderDeserialization",
            "model-load",
        ),
        ("RuntimeError: unknown vocabulary type: 'plamo2'", "unsupported-model"),
        ("OSError: the store failed to listen on 0.0.0.0, port 29500", "port-in-use"),
        # an exception whose class has no Error in its name, ending the traceback
        (
            "huggingface_hub.errors.OfflineModeIsEnabled: Cannot reach https://huggingface.co/api/"
            "models/m: offline mode is enabled. To disable it, unset HF_HUB_OFFLINE",
            "download",
        ),
    ],
)
def test_an_exit_takes_the_kind_its_cause_names(tmp_path: Path, line: str, kind: str) -> None:
    """A traceback's last line, then exit 1: the kind is the family its words name."""
    lines = [
        "Traceback (most recent call last):",
        '  File "/app/server.py", line 1, in <module>',
        "    main()",
        line,
    ]
    verdict = gate(tmp_path, "generic", lines)
    assert (verdict.detected_by, verdict.kind, verdict.matched_line) == ("exit", kind, line)


# what a container, a pod, a log shipper, a launcher or a paste puts before every line
WRAPPERS: tuple[Callable[[str], str], ...] = (
    lambda line: "server-1  | " + line,  # docker compose
    lambda line: "[pod/server-0/server] " + line,  # kubectl logs --prefix
    lambda line: "2026-12-04T10:00:00.123456789Z stderr F " + line,  # CRI
    lambda line: "\t" + line,  # a launcher that indents
    lambda line: "Dec  4 10:00:00 gpu1 server[123]: " + line,  # journald
    lambda line: "> " + line,  # a markdown quote
)
# a terminal's hard wrap happens after any prefix: its continuation lines never get one
UNWRAPPABLE = {"trtllm/207-glog-terminal-wrapped-json-parse-error"}


@pytest.mark.timeout(900)  # every real log replayed: minutes on a busy two-core machine
def test_a_prefix_on_every_line_changes_no_verdict(tmp_path: Path) -> None:
    """Every real log, each line behind a wrapper (one per log, in turn), its command
    known as a launched server's is: the verdict's status, kind and cause line are those
    of the log as pasted."""
    fixtures = [f for f in load_fixtures() if f.name not in UNWRAPPABLE]

    def replay(item: tuple[int, Fixture]) -> str | None:
        index, fixture = item
        wrap = WRAPPERS[index % len(WRAPPERS)]
        log = tmp_path / f"{index}.log"
        text = fixture.log.read_text()
        log.write_text("\n".join(wrap(line) if line else line for line in text.split("\n")))
        timeout = TIMEOUT_S if fixture.status == "timeout" else CRASH_TIMEOUT_S
        verdict = run_log(
            log,
            engine=fixture.engine,
            exit=fixture.exit,
            timeout_s=timeout,
            ready=fixture.ready,
            command=fixture.command,  # what a launched server's gate knows
            answers=fixture.status == "ready",
        )
        outcome = score(fixture, verdict)
        return None if outcome.ok else f"{wrap('')!r}: {outcome.describe()}"

    with ThreadPoolExecutor(max_workers=8) as pool:
        misses = [miss for miss in pool.map(replay, enumerate(fixtures)) if miss]
    assert not misses, misses


@pytest.mark.parametrize(
    ("lines", "exit", "kind", "cause"),
    [
        (
            ["llama_model_load: loaded meta data", "GGML_ASSERT: ggml.c:4785: view_src == NULL"],
            -6,
            "abort",
            1,
        ),
        (
            ["time=2026 level=INFO msg=starting", "panic: runtime error: index out of range"],
            2,
            "exit",
            1,
        ),
        (
            ["server: src/kv.cc:12: main: Assertion `n > 0' failed.", "ERROR: giving up"],
            -6,
            "abort",
            0,
        ),
    ],
)
def test_an_assertion_or_a_panic_is_the_cause(
    tmp_path: Path, lines: list[str], exit: int, kind: str, cause: int
) -> None:
    """A line that ends a process by itself (an assertion, a Go panic) is quoted as the
    cause, also before an ERROR line that follows it."""
    verdict = gate(tmp_path, "generic", lines, exit=exit)
    assert (verdict.kind, verdict.matched_line) == (kind, lines[cause])


@pytest.mark.parametrize(("code", "kind"), [(137, "killed"), (139, "segfault"), (134, "abort")])
def test_a_shells_128_plus_signal_is_that_signal(tmp_path: Path, code: int, kind: str) -> None:
    """A launcher script or docker reports a server killed by signal N as 128 + N."""
    verdict = gate(tmp_path, "generic", ["loading weights", "Killed"], exit=code)
    assert (verdict.exit_code, verdict.kind) == (code, kind)
    assert f"(exit code {code}, as a shell reports it)" in verdict.reason


@pytest.mark.parametrize(
    ("line", "kind"),
    [
        (
            "app-1  | /app/llama-server: error while loading shared libraries: libfoo.so.2: "
            "cannot open shared object file: No such file or directory",
            "install",
        ),
        ("./server: symbol lookup error: ./server: undefined symbol: bar_init", "install"),
        (
            "./server: /lib/x86_64-linux-gnu/libc.so.6: version `GLIBC_2.38' not found "
            "(required by ./server)",
            "install",
        ),
        ("ggml_vulkan: Device memory allocation of size 1234567 failed.", "oom"),
        ("ggml_sycl: UR_RESULT_ERROR_OUT_OF_DEVICE_MEMORY while allocating a buffer", "oom"),
        ("Memory access fault by GPU node-1 (Agent handle: 0x1) on address 0x7f00", "cuda-error"),
        ("FileNotFoundError: [Errno 2] No such file or directory: 'ninja'", "install"),
        ("Segmentation fault (core dumped)", "segfault"),
        ("Aborted (core dumped)", "abort"),
        (
            'docker: Error response from daemon: failed to create task for container: exec: "x": '
            "executable file not found in $PATH: unknown.",
            "install",
        ),
        (
            'docker: Error response from daemon: could not select device driver "" with '
            "capabilities: [[gpu]].",
            "install",
        ),
        (
            "[12/04/2026-10:00:00] [TRT] [E] 1: [stdArchiveReader.cpp::StdArchiveReader::42] "
            "Error Code 1: Serialization (Serialization assertion stdVersionRead == "
            "serializationVersion failed.Version tag does not match.",
            "engine-version",
        ),
    ],
)
def test_a_line_without_a_level_that_says_a_failure_names_its_kind(
    tmp_path: Path, line: str, kind: str
) -> None:
    """A line with no level of its own (the dynamic loader, llama.cpp's backends, a
    shell) that says something failed, in a family's words, is the cause of an exit."""
    verdict = gate(tmp_path, "llamacpp", ["main: build = 1 (abc)", line, "Exiting."], exit=1)
    assert (verdict.status, verdict.kind, verdict.matched_line) == ("crash", kind, line)


def test_the_first_of_two_failures_without_a_level_is_the_cause(tmp_path: Path) -> None:
    """Two allocation failures of one backend, no level on either: the earlier is quoted."""
    first = "ggml_vulkan: Device memory allocation of size 369827840 failed."
    lines = [first, "ggml_vulkan: vk::Device::allocateMemory: ErrorOutOfDeviceMemory"]
    verdict = gate(tmp_path, "llamacpp", lines, exit=1)
    assert (verdict.kind, verdict.matched_line) == ("oom", first)


def test_a_line_without_a_level_that_says_no_failure_is_not_the_cause(tmp_path: Path) -> None:
    """Words of a family in a line that says nothing failed give no cause."""
    lines = ["loading model from /models/m.gguf", "+ llama-server --model /models/m.gguf"]
    verdict = gate(tmp_path, "llamacpp", lines, exit=3)
    assert (verdict.kind, verdict.matched_line) == ("exit", None)


def test_a_failure_without_a_level_that_the_engine_goes_on_from_is_not_the_cause(
    tmp_path: Path,
) -> None:
    """No level, a family's words, and the engine says it goes on (falls back, ignores
    it): not a cause."""
    lines = [
        "[2026-12-04 10:00:00] Ignore import error when loading sglang.srt.models.x: "
        "No module named 'y'",
        "ggml_cuda_init: failed to initialize CUDA: no CUDA-capable device is detected, "
        "falling back to the CPU",
        "llama_new_context_with_model: n_ctx = 512",
    ]
    verdict = gate(tmp_path, "llamacpp", lines, exit=3)
    assert (verdict.kind, verdict.matched_line) == ("exit", None)


def test_a_failure_said_at_warning_or_info_level_is_not_the_cause(tmp_path: Path) -> None:
    """llama.cpp's 'warning: failed to mlock ...: Cannot allocate memory' and an INFO
    line that says an optional import failed are no error lines: no cause, no kind."""
    lines = [
        "warning: failed to mlock 73728-byte buffer (after previously locking 0 bytes): "
        "Cannot allocate memory",
        "INFO 12-04 10:00:00 [importing.py:43] Failed to import triton: No module named 'x'",
        "llama_new_context_with_model: n_ctx = 512",
    ]
    verdict = gate(tmp_path, "llamacpp", lines, exit=3)
    assert (verdict.kind, verdict.matched_line) == ("exit", None)


def test_ggmls_fatal_error_after_a_source_location_is_quoted(tmp_path: Path) -> None:
    """GGML_ABORT's 'path/file.h:319: fatal error' is the cause of the abort."""
    cause = r"C:\src\llama.cpp\ggml\src\ggml-impl.h:319: fatal error"
    lines = ["0.01.388.633 I cmn          init: llama threadpool init, n_threads = 12", cause]
    verdict = gate(tmp_path, "llamacpp", lines, exit=-6)
    assert (verdict.kind, verdict.matched_line) == ("abort", cause)


def test_a_subprocess_that_died_of_sigsegv_is_a_segfault(tmp_path: Path) -> None:
    """subprocess's 'died with <Signals.SIGSEGV: 11>' is a segfault, not an install
    problem (its CalledProcessError is the only other word that names a family)."""
    cause = (
        "subprocess.CalledProcessError: Command '['python3', '-m', 'probe']' died with "
        "<Signals.SIGSEGV: 11>."
    )
    lines = [
        "ERROR 03-18 18:38:01 [registry.py:331] Traceback (most recent call last):",
        f"ERROR 03-18 18:38:01 [registry.py:331] {cause}",
    ]
    verdict = gate(tmp_path, "vllm", lines, exit=1)
    assert verdict.kind == "segfault"
    assert verdict.matched_line is not None and cause in verdict.matched_line


@pytest.mark.parametrize(
    ("error", "kind"),
    [("ShardFailed", "shard"), ("ShardCannotStart", "shard"), ("WebserverFailed", "webserver")],
)
def test_tgis_last_error_names_the_part_it_gave_up_on(
    tmp_path: Path, error: str, kind: str
) -> None:
    """The launcher's 'Error: <LauncherError>' alone: its kind is the part that failed."""
    lines = [
        "2024-07-22T19:57:05.908774Z  INFO shard-manager: text_generation_launcher: shard "
        "terminated rank=3",
        f"Error: {error}",
    ]
    verdict = gate(tmp_path, "tgi", lines, exit=1)
    assert (verdict.kind, verdict.matched_line) == (kind, f"Error: {error}")


def test_warnings_inside_a_json_shard_report_are_not_the_cause(tmp_path: Path) -> None:
    """A JSON 'Shard 0 failed to start:' whose quoted output holds only warnings: the
    launcher's line decides (shard); a warning's words (download, trust_remote_code) do
    not, and the launcher's words are not read into its later lines."""
    message = (
        "Shard 0 failed to start:\\nA new version of the following files was downloaded "
        "from org/model:\\n- configuration.py\\n. To avoid downloading new versions of the "
        "code file, you can pin a revision.\\nThe argument `trust_remote_code` is to be "
        "used with Auto classes. It has no effect here and is ignored.\\n"
    )
    line = (
        '{"timestamp":"2023-06-02T14:12:37.201050Z","level":"ERROR","fields":{"message":"'
        + message
        + '"},"target":"text_generation_launcher"}'
    )
    verdict = gate(tmp_path, "tgi", [line], exit=1)
    assert (verdict.kind, verdict.matched_line) == ("shard", line)


def test_vllms_kv_cache_message_cut_short_is_still_out_of_memory(tmp_path: Path) -> None:
    """The KV-cache check's line, cut before 'larger than the available KV cache
    memory' (a terminal's wrap), is the same failure as when it is whole: oom."""
    cause = (
        "(EngineCore pid=316) ValueError: To serve at least one request with the model's "
        "max seq len (100000), (4.26 GiB KV cach"
    )
    verdict = gate(tmp_path, "vllm", ["(EngineCore pid=316)     raise ValueError(", cause])
    assert (verdict.kind, verdict.matched_line) == ("oom", cause)


def test_uvicorns_running_line_is_vllms_ready_line(tmp_path: Path) -> None:
    """vLLM releases that print no line of their own after uvicorn's: READY on it."""
    lines = [
        "INFO:     Uvicorn running on http://0.0.0.0:8000 (Press CTRL+C to quit)",
        'INFO:     127.0.0.1:55504 - "GET / HTTP/1.1" 404 Not Found',
    ]
    verdict = gate(tmp_path, "vllm", lines, exit=None)
    assert (verdict.status, verdict.matched_line) == ("ready", lines[0])


@pytest.mark.parametrize(
    ("line", "kind"),
    [
        (
            "huggingface_hub.errors.RepositoryNotFoundError: 404 Client Error. (Request ID: x)",
            "model-load",
        ),
        (
            "ValueError: The quantization method fp8 is not supported for the current GPU. "
            "Minimum capability: 80. Current capability: 75.",
            "cuda-arch",
        ),
        (
            "RuntimeError: Unexpected error from cudaGetDeviceCount(). Error 802: system not "
            "yet initialized",
            "cuda-error",
        ),
        (
            "RuntimeError: Unexpected error from cudaGetDeviceCount(). Error 804: forward "
            "compatibility was attempted on non supported HW",
            "install",
        ),
        (
            "torch._inductor.exc.InductorError: RuntimeError: Failed to find C compiler. "
            "Please specify via CC environment variable.",
            "install",
        ),
    ],
)
def test_failures_no_fixture_covers_name_their_family(tmp_path: Path, line: str, kind: str) -> None:
    """Failures of these engines that no real log here shows yet (a missing Hub repo, a
    quantization's compute capability, the CUDA driver, a missing C compiler): the
    traceback's last line, then exit 1, gives the kind of its family."""
    lines = ["Traceback (most recent call last):", '  File "/app/x.py", line 1, in <module>', line]
    verdict = gate(tmp_path, "vllm", lines)
    assert (verdict.kind, verdict.matched_line) == (kind, line)


@pytest.mark.parametrize(
    ("code", "kind", "says"),
    [
        (127, "install", "(a shell's 127: the program or a shared library it needs was not found)"),
        (126, "permission", "(a shell's 126: the program is not executable)"),
        (-4, "exit", "died of an illegal instruction (SIGILL)"),
        (132, "exit", "died of an illegal instruction (SIGILL) (exit code 132"),
    ],
)
def test_a_shells_codes_for_a_program_it_could_not_run(
    tmp_path: Path, code: int, kind: str, says: str
) -> None:
    """127 (not found), 126 (not executable) and SIGILL (an instruction this CPU lacks),
    with no line that says more: the verdict names what they mean."""
    verdict = gate(tmp_path, "generic", ["starting"], exit=code)
    assert verdict.kind == kind
    assert says in verdict.reason


def test_compose_s_exit_line_is_not_read_as_a_wrapped_line(tmp_path: Path) -> None:
    """A long line behind compose's prefix, then compose's own 'app-1 exited with code
    127' (lower case, no prefix): two lines, the first quoted alone."""
    cause = (
        "app-1  | llama-server: error while loading shared libraries: libgomp.so.1: cannot "
        "open shared object file: No such file or directory"
    )
    verdict = gate(tmp_path, "llamacpp", [cause, "app-1 exited with code 127"], exit=127)
    assert (verdict.kind, verdict.matched_line) == ("install", cause)


@pytest.mark.parametrize("engine", ["vllm", "sglang", "tgi", "trtllm"])
def test_a_weight_name_the_model_class_lacks_is_model_load(tmp_path: Path, engine: str) -> None:
    """A KeyError that names a weight or a parameter (a checkpoint of another layout)
    is a model-load failure for every engine, with its traceback or alone."""
    cause = "KeyError: 'model.layers.7.mlp.gate_proj.weight'"
    lines = [
        "Traceback (most recent call last):",
        '  File "/app/models/llama.py", line 400, in load_weights',
        "    param = params_dict[name]",
        cause,
    ]
    verdict = gate(tmp_path, engine, lines)
    assert (verdict.kind, verdict.matched_line) == ("model-load", cause)
    alone = gate(tmp_path, engine, ["KeyError: 'transformer.h.0.attn.c_attn.bias'"])
    assert alone.kind == "model-load"


def test_the_frame_an_exception_was_raised_in_names_its_phase(tmp_path: Path) -> None:
    """An exception whose words name no family takes the phase of the innermost frame
    that names one: loading weights (model-load), the warmup request (engine-init);
    raised elsewhere it names nothing (exit)."""

    def raised_in(function: str) -> list[str]:
        return [
            "Traceback (most recent call last):",
            '  File "/usr/lib/python3.11/threading.py", line 1045, in _bootstrap_inner',
            "    self.run()",
            f'  File "/app/engine/server.py", line 12, in {function}',
            "    value = table[key]",
            '  File "/usr/lib/python3.11/json/decoder.py", line 355, in raw_decode',
            '    raise JSONDecodeError("Expecting value", s, err.value) from None',
            "requests.exceptions.JSONDecodeError: Expecting value: line 1 column 1 (char 0)",
        ]

    assert gate(tmp_path, "sglang", raised_in("_wait_and_warmup")).kind == "engine-init"
    assert gate(tmp_path, "vllm", raised_in("load_weights")).kind == "model-load"
    assert gate(tmp_path, "sglang", raised_in("handle_request")).kind == "exit"


def test_a_wrappers_give_up_line_gives_way_to_its_childs_exception(tmp_path: Path) -> None:
    """A wrapper that relays its child's traceback at INFO, then gives up ('more than 3
    times, cancelling'): the child's exception is the cause, not the wrapper's ERROR
    line; an exception at INFO outside a traceback was handled."""
    relay = "2026-12-04 10:00:00,100 - __main__ - INFO - "
    cause = f"{relay}json.decoder.JSONDecodeError: Expecting value: line 1 column 1 (char 0)"
    give_up = (
        "2026-12-04 10:00:01,200 - __main__ - ERROR - Ended up starting the server more "
        "than 3 times, cancelling the job"
    )
    lines = [
        f"{relay}Traceback (most recent call last):",
        f'{relay}  File "/app/engine/config.py", line 20, in read_config',
        f"{relay}    return json.load(handle)",
        cause,
        "2026-12-04 10:00:01,100 - __main__ - WARNING - server task ended",
        give_up,
    ]
    verdict = gate(tmp_path, "sglang", lines)
    assert (verdict.kind, verdict.matched_line) == ("model-load", cause)
    handled = [f"{relay}ValueError: port 30000 is busy, trying the next one", give_up]
    assert gate(tmp_path, "sglang", handled).matched_line == give_up


def test_a_ggml_assert_after_its_source_location_is_quoted(tmp_path: Path) -> None:
    """'path/ggml.c:6490: GGML_ASSERT(x) failed' alone: the abort quotes it."""
    cause = "/src/llama.cpp/ggml/src/ggml.c:1234: GGML_ASSERT(ggml_nelements(a) == ne0) failed"
    verdict = gate(tmp_path, "llamacpp", [cause], exit=-6)
    assert (verdict.kind, verdict.matched_line) == ("abort", cause)


def test_tritonservers_missing_backend_and_unfilled_placeholder(tmp_path: Path) -> None:
    """A backend folder without its model.py is a missing backend (install); a backend
    named by a template placeholder never filled in is the model's configuration."""
    missing = (
        "E1204 10:00:01.1 1 model_lifecycle.cc:638] failed to load 'llm' version 1: "
        "Invalid argument: unable to find 'vllm/model.py' for model 'llm', in "
        "/opt/tritonserver/backends/vllm"
    )
    placeholder = (
        "E1204 10:00:01.1 1 model_lifecycle.cc:638] failed to load 'llm' version 1: "
        "Invalid argument: unable to find backend library for backend '${backend_name}'"
    )
    assert gate(tmp_path, "trtllm", [missing]).kind == "install"
    assert gate(tmp_path, "trtllm", [placeholder]).kind == "model-load"


def test_the_interpreters_exception_ignored_line_starts_its_own_message(
    tmp_path: Path,
) -> None:
    """'Exception ignored in atexit callback' after an ERROR line is not its wrapped
    continuation: the ERROR line is quoted alone."""
    cause = "2026-12-04 10:00:00,100 - __main__ - ERROR - The server process could not start"
    lines = [cause, "Exception ignored in atexit callback: <function _kill at 0x7f>"]
    verdict = gate(tmp_path, "sglang", lines)
    assert verdict.matched_line == cause


@pytest.mark.parametrize(
    ("engine", "lines", "quoted", "kind"),
    [
        # an exception line alone, with no level and no traceback
        (
            "vllm",
            ["NotImplementedError: Pipeline parallelism with prefix caching is not ready."],
            "NotImplementedError: Pipeline parallelism with prefix caching is not ready.",
            "exit",
        ),
        # a message with no level that says what failed, in no family's words
        (
            "trtllm",
            ["unable to open the pipe for /tmp/x.fifo: Broken pipe"],
            "unable to open the pipe for /tmp/x.fifo: Broken pipe",
            "exit",
        ),
        # a wrapper's one line, before a line of its own that says nothing failed (no
        # rule names its kind: judged engine-init by its words, gate/learned.py)
        (
            "vllm",
            ["the server failed to start.  See above.", "Using profile default."],
            "the server failed to start.",
            "engine-init",
        ),
        # MPI's closing block: the rank exited with a non-zero status
        (
            "trtllm",
            [
                "mpirun detected that one or more processes exited with non-zero status",
                "  Exit code:    3",
            ],
            "mpirun detected that one or more processes exited with non-zero status",
            "mpi",
        ),
        # an ERROR line whose details (after its colon) were not pasted, naming a signal:
        # a process kind whatever the process's name says it did
        (
            "tgi",
            [
                "2024-01-01T00:00:00.000000Z  INFO download: text_generation_launcher: "
                "Starting check and download process for org/model",
                "2024-01-01T00:00:02.000000Z ERROR download: text_generation_launcher: "
                "Download process was signaled to shutdown with signal 7:",
            ],
            "Download process was signaled to shutdown with signal 7:",
            "exit",
        ),
    ],
)
def test_a_short_paste_quotes_its_last_failing_line(
    tmp_path: Path, engine: str, lines: list[str], quoted: str, kind: str
) -> None:
    """With no line ranked, the last line that reads as a failure is quoted."""
    verdict = gate(tmp_path, engine, lines)
    assert verdict.status == "crash"
    assert verdict.matched_line is not None and quoted in verdict.matched_line
    assert verdict.kind == kind


def test_a_short_paste_skips_benign_lines(tmp_path: Path) -> None:
    """An INFO line and a line that says the engine goes on are never the one quoted."""
    lines = [
        "model load failed on the first try, falling back to the slow path",
        "buffer allocation failed, retrying with a smaller batch",
        "INFO 12-05 00:00:01 [core.py:1] startup failed checks: 0",
    ]
    verdict = gate(tmp_path, "vllm", lines)
    assert verdict.status == "crash"
    assert not verdict.matched_line


@pytest.mark.parametrize(
    ("engine", "line"),
    [
        ("tgi", ': ArgumentValidation("`max_batch_prefill_tokens`(100) must be >= `x`(200)")'),
        ("vllm", "ValueError: With `vllm serve`, give the model as a positional argument."),
        ("sglang", "ValueError: think_start_token 'x' must be a single special token."),
        ("vllm", "Value error, torch.float32 is not supported for quantization method gptq."),
    ],
)
def test_an_option_named_as_wrong_is_bad_args(tmp_path: Path, engine: str, line: str) -> None:
    """A value error that names the option it refuses, or a bound between two, is bad-args."""
    verdict = gate(tmp_path, engine, [line])
    assert (verdict.kind, verdict.matched_line) == ("bad-args", line)


def test_pydantics_detail_is_quoted_over_its_header(tmp_path: Path) -> None:
    """pydantic's ValidationError header counts errors; its ``Value error, ...`` says one."""
    detail = "  Value error, Expecting value: line 1 column 1 (char 0) [type=value_error]"
    lines = [
        "(APIServer pid=7) pydantic_core._pydantic_core.ValidationError: "
        "1 validation error for ModelConfig",
        f"(APIServer pid=7) {detail}",
        "(APIServer pid=7)     For further information visit https://errors.pydantic.dev/2.12/v/value_error",
    ]
    verdict = gate(tmp_path, "vllm", lines)
    assert verdict.matched_line is not None and detail.strip() in verdict.matched_line
    assert verdict.kind == "model-load"


def test_a_line_that_opens_a_traceback_quotes_the_exception_that_ends_it(
    tmp_path: Path,
) -> None:
    """TGI's "Download encountered an error: Traceback ...": the exception at its end."""
    ending = "RuntimeError: the converted file differs from its original by over 5%:"
    lines = [
        "2024-01-01T00:00:00.000000Z ERROR text_generation_launcher: Download encountered "
        "an error: Traceback (most recent call last):",
        '  File "/opt/conda/bin/text-generation-server", line 8, in <module>',
        "    sys.exit(app())",
        '  File "/opt/conda/lib/python3.10/site-packages/x/convert.py", line 20, in check',
        "    raise RuntimeError(",
        ending,
        "Error: DownloadError",
    ]
    verdict = gate(tmp_path, "tgi", lines)
    assert (verdict.kind, verdict.matched_line) == ("download", ending)


def test_llama_cpps_allocator_failure_explains_the_kv_cache_line(tmp_path: Path) -> None:
    """The backend allocator's failure, just above the KV-cache line, is the one quoted."""
    root = (
        "ggml_backend_cuda_buffer_type_alloc_buffer: failed to allocate buffer of size 8589934624"
    )
    lines = [
        "llama_new_context_with_model: n_ctx      = 65536",
        root,
        "llama_kv_cache_init: failed to allocate buffer for kv cache",
        "llama_new_context_with_model: llama_kv_cache_init() failed for self-attention cache",
    ]
    verdict = gate(tmp_path, "llamacpp", lines)
    assert (verdict.kind, verdict.matched_line) == ("oom", root)


def test_a_traceback_pasted_as_one_line_is_split_at_its_process_tag(tmp_path: Path) -> None:
    """A traceback whose lines a paste joined, each behind vLLM's process tag, is read
    line by line: the exception at its end is the cause."""
    tag = "(APIServer pid=4242)"
    line = (
        f'{tag}   File "/opt/vllm/config/parallel.py", line 90, in __post_init__ '
        f"{tag}     raise RuntimeError( "
        f"{tag} RuntimeError: the parallel group of size 3 cannot be formed."
    )
    verdict = gate(tmp_path, "vllm", [line])
    assert verdict.matched_line == line
    assert verdict.reason is not None and "size 3 cannot be formed" in verdict.reason


def test_a_warmup_requests_http_answer_is_not_the_hub_refusing_a_token(tmp_path: Path) -> None:
    """``res=<Response [403]>`` of SGLang's own warmup request (a proxy's page in its body):
    the warmup failed (engine-init, from the traceback's frames), not the Hub's token."""
    cause = "AssertionError: res=<Response [403]>, res.text='<title>403 Forbidden</title>'"
    lines = [
        "[2025-02-17 11:56:43] Initialization failed. warmup error: Traceback (most recent "
        "call last):",
        '  File "/opt/sglang/srt/entrypoints/http_server.py", line 600, in _wait_and_warmup',
        "    assert res.status_code == 200, f'{res=}, {res.text=}'",
        cause,
    ]
    verdict = gate(tmp_path, "sglang", lines)
    assert (verdict.kind, verdict.matched_line) == ("engine-init", cause)


def test_an_exception_naming_no_family_takes_the_phase_of_its_frames(tmp_path: Path) -> None:
    """A RuntimeError whose words name no family, raised in init_process_group: distributed."""
    cause = "RuntimeError: the peer sent an unexpected value"
    lines = [
        "INFO 12-04 10:00:00 [core.py:58] Initializing a V1 LLM engine",
        "Traceback (most recent call last):",
        '  File "/app/vllm/parallel_state.py", line 10, in init_distributed_environment',
        "    torch.distributed.init_process_group(backend)",
        '  File "/app/torch/distributed/c10d_logger.py", line 20, in init_process_group',
        "    func(*args)",
        cause,
    ]
    verdict = gate(tmp_path, "vllm", lines)
    assert (verdict.kind, verdict.matched_line) == ("distributed", cause)


def test_an_exception_naming_no_family_takes_what_the_line_above_was_doing(
    tmp_path: Path,
) -> None:
    """No family, class or frame names a kind: the line above says weights were loading;
    the same exception after a line that says loading was done stays the bare exit."""
    cause = "RuntimeError: the worker process exited before reporting"
    loading = "Loading safetensors checkpoint shards:  50% Completed | 2/4 [00:03<00:03]"
    verdict = gate(tmp_path, "sglang", [loading, cause])
    assert (verdict.kind, verdict.matched_line) == ("model-load", cause)
    done = tmp_path / "done"
    done.mkdir()
    verdict = gate(done, "sglang", [loading, "[2026-12-04 10:00:05] Load weight end.", cause])
    assert (verdict.kind, verdict.matched_line) == ("exit", cause)


def test_the_detail_an_nccl_error_introduces_is_the_cause(tmp_path: Path) -> None:
    """NCCL's wrapper reports a CUDA error; its "Last error:" below says an allocation
    failed: memory, quoted, over the NCCL line that only reports it."""
    cause = "Failed to CUDA calloc 67108864 bytes"
    lines = [
        "torch.distributed.DistBackendError: NCCL error in: NCCLUtils.cpp:76, unhandled cuda "
        "error (run with NCCL_DEBUG=INFO for details), NCCL version 2.20.5",
        "ncclUnhandledCudaError: Call to CUDA function failed.",
        "Last error:",
        cause,
    ]
    verdict = gate(tmp_path, "sglang", lines)
    assert (verdict.kind, verdict.matched_line) == ("oom", cause)
    alone = tmp_path / "alone"
    alone.mkdir()
    verdict = gate(alone, "sglang", lines[:2])
    assert verdict.kind == "nccl"


def test_a_raise_glued_to_its_exception_quotes_the_exception(tmp_path: Path) -> None:
    """A one-line paste: ``raise X(`` then the exception; the exception's words decide."""
    line = (
        "raise RuntimeError( RuntimeError: Cannot re-initialize CUDA in forked subprocess. "
        "To use CUDA with multiprocessing, you must use the 'spawn' start method"
    )
    verdict = gate(tmp_path, "sglang", [line])
    assert (verdict.kind, verdict.matched_line) == ("cuda-error", line)


def test_uvicorn_that_finds_no_app_is_a_bad_argument(tmp_path: Path) -> None:
    """uvicorn's import string names no app (the command's argument): bad-args."""
    cause = (
        'ERROR:    Error loading ASGI app. Attribute "app" not found in module "llama_cpp.server".'
    )
    verdict = gate(tmp_path, "llamacpp", ["INFO:     Started server process [601969]", cause])
    assert (verdict.status, verdict.kind, verdict.matched_line) == ("crash", "bad-args", cause)


@pytest.mark.parametrize(
    ("engine", "line", "kind"),
    [
        ("llamacpp", "Invalid argument: --mmproj, expected a file", "bad-args"),
        (
            "vllm",
            "ValueError: Speculative decoding does not work with pipeline parallel",
            "bad-args",
        ),
        (
            "tgi",
            "NotImplementedError: Sliding window is not supported with prefix caching",
            "bad-args",
        ),
        ("vllm", "ValueError: The supplied chat template (my.jinja) appears path-like", "bad-args"),
        ("tgi", "ValueError: Non-consecutive added token '<pad>' found.", "model-load"),
        ("vllm", "TypeError: type 'collections.OrderedDict' is not subscriptable", "install"),
        ("sglang", "RuntimeError: mooncake transfer engine init failed: rdma", "distributed"),
        ("sglang", "RuntimeError: socket: Address family not supported by protocol", "distributed"),
    ],
)
def test_words_of_issue_22s_last_fit_name_their_family(
    tmp_path: Path, engine: str, line: str, kind: str
) -> None:
    """A flag named as invalid, two features that cannot be combined, a template path that
    is not there (bad-args); a tokenizer's vocabulary (model-load); a Python too old for a
    dependency (install); NVSHMEM, transfer engines, a socket family (distributed)."""
    verdict = gate(tmp_path, engine, [line])
    assert (verdict.kind, verdict.matched_line) == (kind, line)


def test_errnos_invalid_argument_is_no_bad_flag(tmp_path: Path) -> None:
    """``[Errno 22] Invalid argument`` names no flag: not bad-args."""
    line = "OSError: [Errno 22] Invalid argument: '/dev/shm/x'"
    assert gate(tmp_path, "vllm", [line]).kind != "bad-args"


def test_a_line_pasted_in_backticks_is_read_without_them(tmp_path: Path) -> None:
    """A one-line paste in inline code marks: the exception inside them is read as one."""
    inner = "triton.runtime.errors.OutOfResources: out of resource: shared memory, Required: 1"
    verdict = gate(tmp_path, "vllm", [f"`{inner}`"])
    assert verdict.kind == "cuda-arch"
    assert verdict.matched_line == f"`{inner}`"


def test_a_frame_glued_to_its_exception_is_read_for_the_exception(tmp_path: Path) -> None:
    """A paste that joined a frame, its source and its qualified exception in one line."""
    line = (
        '  File "/x/requests/adapters.py", line 519, in send raise ConnectionError(e) '
        "requests.exceptions.ConnectionError: Max retries exceeded with url: /api/models"
    )
    verdict = gate(tmp_path, "vllm", [line])
    assert verdict.kind == "download"


def test_a_minijinja_error_in_a_panic_is_the_models_template(tmp_path: Path) -> None:
    """TGI's router panics on minijinja's ``Error { kind: ..., detail: ... }``: model-load."""
    lines = [
        "thread 'main' panicked at router/src/infer.rs:30:14:",
        "called `Result::unwrap()` on an `Err` value: Error { kind: UndefinedError, detail: "
        '"x is undefined", name: "<string>", line: 2 }',
    ]
    assert gate(tmp_path, "tgi", lines).kind == "model-load"


@pytest.mark.parametrize("module", ["_moe_C", "_C"])
def test_a_failed_import_named_by_the_exception_is_its_root(tmp_path: Path, module: str) -> None:
    """A warning that a module failed to import, then an exception naming that module."""
    root = (
        f"WARNING 01-01 00:00:00 _ext.py:1] Failed to import from vllm.{module} with "
        "ImportError('libfoo.so: cannot open shared object file: No such file or directory')"
    )
    lines = [
        root,
        f"RuntimeError: Tried to instantiate class '{module}.Thing', but it does not exist",
    ]
    verdict = gate(tmp_path, "vllm", lines)
    assert (verdict.kind, verdict.matched_line) == ("install", root)
    other = tmp_path / "other"
    other.mkdir()
    lines[1] = "RuntimeError: Tried to instantiate class '_other.Thing', but it does not exist"
    assert gate(other, "vllm", lines).kind != "install"


def test_a_line_naming_what_failed_outranks_an_exception_naming_nothing(tmp_path: Path) -> None:
    """A no-level line in a family's words, then a consequence exception: the former;
    the server starting after its scheduler died is no recovery."""
    root = "/src/host/nvshmem/transport.cpp:416: non-zero status: 7 No devices selected."
    lines = [
        root,
        "[2026-02-25 15:04:37] Scheduler or DataParallelController 848532 terminated with 255",
        "[2026-02-25 15:04:39] INFO:     Started server process [848143]",
        "[2026-02-25 15:04:39] INFO:     Waiting for application startup.",
        "AttributeError: 'NoneType' object has no attribute 'server_args'",
    ]
    verdict = gate(tmp_path, "sglang", lines)
    assert (verdict.kind, verdict.matched_line) == ("distributed", root)


def test_a_signature_inside_a_relayed_http_answer_is_a_wrappers(tmp_path: Path) -> None:
    """A client's ``status=500 body=... failed to load model`` first, then the server's own
    lines: the server's specific line is the cause."""
    cause = "load_hparams: unknown projector type: newproj9"
    lines = [
        "preload failed: status=500 body=llama.cpp failed: failed to load model",
        "Verbose output:",
        f"clip_init: failed to load model 'x.mmproj': {cause}",
        "main: exiting due to model loading error",
    ]
    verdict = gate(tmp_path, "llamacpp", lines)
    assert verdict.kind == "unsupported-model"
    assert verdict.matched_line is not None and cause in verdict.matched_line


def test_llama_cpps_backend_refusal_explains_the_allocators_summary(tmp_path: Path) -> None:
    """The backend's own refusal above ``ggml_gallocr``'s summary is the root."""
    root = "ggml_vulkan: Requested buffer size exceeds device memory allocation limit"
    lines = [
        root,
        "ggml_gallocr_reserve_n: failed to allocate Vulkan0 buffer of size 8753520640",
        "graph_reserve: failed to allocate compute buffers",
    ]
    verdict = gate(tmp_path, "llamacpp", lines)
    assert (verdict.kind, verdict.matched_line) == ("oom", root)


def test_llama_cpps_template_error_explains_the_model_loading_exit(tmp_path: Path) -> None:
    """The chat template's ``Error: ...`` above ``exiting due to model loading error``."""
    root = "Error: Unknown filter 'foo' at line 1"
    lines = [root, "main: exiting due to model loading error"]
    verdict = gate(tmp_path, "llamacpp", lines)
    assert (verdict.kind, verdict.matched_line) == ("model-load", root)


def test_an_import_error_the_engine_ignored_is_not_the_root_of_a_later_error(
    tmp_path: Path,
) -> None:
    """SGLang's ``Ignore import error when loading ...`` names no module called "error":
    a later exception whose words say "error" is not that import's consequence."""
    cause = "RuntimeError: internal error in operator foo_bar, code 7"
    lines = [
        "[2026-06-09 03:35:03 TP0] Ignore import error when loading "
        "sglang.srt.models.minimax_m2: No module named 'tvm_ffi'",
        "Traceback (most recent call last):",
        '  File "/sgl/entrypoints/http_server.py", line 12, in run',
        "    run_op()",
        cause,
    ]
    verdict = gate(tmp_path, "sglang", lines)
    assert verdict.matched_line == cause
    assert verdict.kind != "install"


@pytest.mark.parametrize(
    "cause",
    [
        "RuntimeError: copy_d2d_baseformat_opapi:build/CMakeFiles/torch_npu.dir/"
        "compiler_depend.ts:90 NPU function error: call aclnnInplaceCopy failed, "
        "error code is 161002",
        "RuntimeError: ACL stream synchronize failed, error code is ACL_ERROR_RT_AICORE_EXCEPTION",
        "RuntimeError: XPU error: the kernel launch did not complete",
        "RuntimeError: MUSA error: launch failure",
    ],
)
def test_another_vendors_device_api_error_is_a_device_error(tmp_path: Path, cause: str) -> None:
    """An Ascend NPU's, an Intel XPU's or a MUSA GPU's runtime error is the device-error
    family's, as CUDA's and HIP's are."""
    lines = ["INFO 12-04 10:00:00 [core.py:12] warming up", cause]
    verdict = gate(tmp_path, "vllm", lines)
    assert (verdict.kind, verdict.matched_line) == ("cuda-error", cause)


def test_an_accelerators_oom_before_the_interpreters_abort_is_the_cause(
    tmp_path: Path,
) -> None:
    """``Fatal Python error: Aborted`` says only how the process died: the uncaught
    exception's ``what():  NPU out of memory ...`` above it is what failed."""
    cause = (
        "  what():  NPU out of memory. Tried to allocate 4.00 GiB (NPU 4; 61.27 GiB total "
        "capacity; 52.08 GiB already allocated; 1.50 GiB free)"
    )
    lines = [
        "[2026-01-19 20:23:08 TP4] Capturing batches (bs=24 avail_mem=11.91 GB)",
        "terminate called after throwing an instance of 'c10::Error'",
        cause,
        "Exception raised from malloc at build/CMakeFiles/torch_npu.dir/compiler_depend.ts:1634",
        "frame #0: c10::Error::Error(c10::SourceLocation) + 0xb0 (0xfffe211948c0 in libc10.so)",
        "Fatal Python error: Aborted",
        "",
        "Thread 0x0000fffd0a5ff120 (most recent call first):",
        '  File "/usr/lib/python3.11/threading.py", line 324 in wait',
    ]
    verdict = gate(tmp_path, "sglang", lines, exit=-6)
    assert (verdict.kind, verdict.matched_line) == ("oom", cause.strip())


def test_an_interleaved_ranks_oom_after_another_ranks_abort_is_the_cause() -> None:
    """Ranks print their own failure and their own end, interleaved: over the tail (the
    cause of an exit), an abort before another rank's out-of-memory line still gives
    way to it."""
    cause = "  what():  XPU out of memory. Tried to allocate 2.00 GiB (XPU 1)"
    lines = [
        "Fatal Python error: Aborted",
        "terminate called after throwing an instance of 'c10::Error'",
        cause,
        "Fatal Python error: Aborted",
    ]
    rules = Rules(get_profile("sglang"))
    found = select_cause(lines, rules.fatal, progress=rules.progress_marks, hints=rules.hints)
    assert found is not None
    assert (found.kind, found.line) == ("oom", cause.strip())


def test_the_interpreters_abort_alone_stays_the_cause(tmp_path: Path) -> None:
    """With no line that names what failed, ``Fatal Python error`` is quoted."""
    cause = "Fatal Python error: Aborted"
    lines = ["[2026-01-19 20:23:08 TP0] Load weight end.", "ERROR: something went wrong", cause]
    verdict = gate(tmp_path, "sglang", lines, exit=-6)
    assert (verdict.kind, verdict.matched_line) == ("fatal-python", cause)


@pytest.mark.parametrize(
    ("cause", "kind"),
    [
        (
            "2024-08-11T08:31:20.364603Z ERROR download: text_generation_launcher: "
            "Download process was signaled to shutdown with signal 9:",
            "killed",
        ),
        (
            "2024-08-11T08:31:20.364603Z ERROR download: text_generation_launcher: "
            "Download process was signaled to shutdown with signal 11:",
            "segfault",
        ),
    ],
)
def test_a_child_a_signal_ended_is_the_root_of_the_launchers_error(
    tmp_path: Path, cause: str, kind: str
) -> None:
    """TGI's download child ended by a signal, then the launcher's ``Error:
    DownloadError``: the signal line is the cause, its kind the signal's."""
    lines = [
        "2024-08-11T08:29:55.863282Z  INFO download: text_generation_launcher: "
        "Starting download process.",
        cause,
        "Error: DownloadError",
    ]
    verdict = gate(tmp_path, "tgi", lines)
    assert (verdict.kind, verdict.matched_line) == (kind, cause)


@pytest.mark.parametrize(
    ("cause", "kind"),
    [
        (
            "./start.sh: línea 18: ./llama_bin/build/bin/llama-server: "
            "No existe el archivo o el directorio",
            "install",
        ),
        (
            "./run.sh: ligne 3: /opt/llama/llama-server: Aucun fichier ou dossier de ce nom",
            "install",
        ),
        ("sh: 1: llama-server: not found", "install"),
        ("cat: /models/llama-2-7b.Q4_0.bin: No such file or directory", "model-load"),
    ],
)
def test_a_shells_missing_program_or_file_is_the_cause(
    tmp_path: Path, cause: str, kind: str
) -> None:
    """A shell's line that the program it runs (or a model file it was given) is not
    there, in any common locale's words: quoted, with install's kind (or the model's)."""
    verdict = gate(tmp_path, "llamacpp", ["+ ./start.sh", cause], exit=1)
    assert (verdict.kind, verdict.matched_line) == (kind, cause)


def test_an_exception_shaped_like_a_shells_missing_line_is_not_a_missing_program(
    tmp_path: Path,
) -> None:
    """``KeyError: x: not found`` is an exception's message, not a shell's report that
    a program is missing: no install kind from the shell rule."""
    cause = "KeyError: rope_scaling: not found"
    verdict = gate(tmp_path, "llamacpp", ["+ ./start.sh", cause], exit=1)
    assert verdict.matched_line == cause
    assert verdict.kind != "install"


def test_the_first_error_line_of_a_llama_server_chain_is_its_root(tmp_path: Path) -> None:
    """llama-server's callers each add a line under the loader's error ("error loading
    model", "failed to load model", "exiting due to ..."): with its `E` level (or
    `--log-jsonl`'s "level":"error") the first line of the chain is quoted; a warning
    above it is not."""
    root = "0.00.006.009 E gguf_init_from_reader: invalid magic characters: 'vers', expected 'GGUF'"
    lines = [
        "0.00.001.238 I srv  llama_server: initializing ...",
        "0.00.003.451 W srv  llama_server: security: no API key is set",
        "0.00.005.001 I srv    load_model: loading model '/models/m.gguf'",
        root,
        "0.00.006.121 E llama_model_load: error loading model: llama_model_loader: failed "
        "to load model from /models/m.gguf",
        "0.00.006.139 E llama_model_load_from_file_impl: failed to load model",
        "0.00.006.286 E srv    load_model: failed to load model, '/models/m.gguf'",
        "0.00.006.621 E srv  llama_server: exiting due to model loading error",
    ]
    verdict = gate(tmp_path, "llamacpp", lines)
    assert (verdict.kind, verdict.matched_line) == ("model-load", root)
    memory = '{"type":"log","level":"error","msg":"ggml_aligned_malloc: insufficient memory\\n"}'
    lines = [
        '{"type":"log","level":"info","msg":"llama_context: n_ctx = 40000000\\n"}',
        memory,
        '{"type":"log","level":"error","msg":"alloc_tensor_range: failed to allocate CPU '
        'buffer of size 122880000000\\n"}',
        '{"type":"log","level":"error","msg":"srv  llama_server: exiting due to model '
        'loading error\\n"}',
    ]
    verdict = gate(tmp_path, "llamacpp", lines)
    assert (verdict.kind, verdict.matched_line) == ("oom", memory)


def test_pydantics_own_error_line_is_quoted_under_its_count(tmp_path: Path) -> None:
    """pydantic's header only counts the errors; the line it ends with `[type=...]`
    says what was rejected, a setting's value: bad-args."""
    detail = (
        "  Input should be greater than or equal to 0 "
        "[type=greater_than_equal, input_value=-1, input_type=int]"
    )
    lines = [
        "1 validation error for ModelSettings",
        "n_ctx",
        detail,
        "    For further information visit https://errors.pydantic.dev/2.14/v/greater_than_equal",
    ]
    verdict = gate(tmp_path, "llamacpp", lines)
    assert (verdict.kind, verdict.matched_line) == ("bad-args", detail.strip())


def test_a_python_memory_error_is_out_of_memory(tmp_path: Path) -> None:
    """numpy's `_ArrayMemoryError: Unable to allocate 64.0 GiB ...` is memory's."""
    error = (
        "numpy._core._exceptions._ArrayMemoryError: Unable to allocate 64.0 GiB for an "
        "array with shape (65536, 262144) and data type float32"
    )
    lines = [
        "Traceback (most recent call last):",
        '  File "/venv/lib/python3.11/site-packages/llama_cpp/llama.py", line 400, in __init__',
        "    self.scores = np.ndarray((n_ctx, n_vocab), dtype=np.single)",
        error,
    ]
    verdict = gate(tmp_path, "llamacpp", lines)
    assert (verdict.kind, verdict.matched_line) == ("oom", error)


def test_with_no_levels_the_top_of_a_c_functions_failure_chain_is_the_root(
    tmp_path: Path,
) -> None:
    """llama.cpp's plain format (llama-cpp-python's stderr) has no levels: the lines
    right above a consequence that each say, as `function: message`, that something
    failed are its chain, and the first is quoted, also where the loader's line holds
    a phase's words (`error loading model` holds `loading model`)."""
    root = "gguf_init_from_reader: failed to read magic"
    lines = [
        "llama_model_loader: using device CPU",
        root,
        "llama_model_load: error loading model: llama_model_loader: failed to load model from /m",
        "llama_model_load_from_file_impl: failed to load model",
    ]
    verdict = gate(tmp_path, "llamacpp", lines)
    assert (verdict.kind, verdict.matched_line) == ("model-load", root)
    memory = "ggml_aligned_malloc: insufficient memory (attempted to allocate 32928.12 MB)"
    lines = [
        "sched_reserve: reserving full memory module",
        memory,
        "ggml_backend_cpu_buffer_type_alloc_buffer: failed to allocate buffer of size 34527641600",
        "ggml_gallocr_reserve_n_impl: failed to allocate CPU buffer of size 34527641600",
        "graph_reserve: failed to allocate compute buffers",
    ]
    verdict = gate(tmp_path, "llamacpp", lines)
    assert (verdict.kind, verdict.matched_line) == ("oom", memory)


def test_the_input_pydantic_rejected_is_not_words_of_what_failed(tmp_path: Path) -> None:
    """Of two errors of one ValidationError, the first is quoted: the second's rejected
    input (a model's path) names no family."""
    first = (
        "  Field required [type=missing, input_value={'model_path': '/m.gguf'}, input_type=dict]"
    )
    lines = [
        "2 validation errors for ConfigFileSettings",
        "models.0.model",
        first,
        "models.0.model_path",
        "  Extra inputs are not permitted [type=extra_forbidden, input_value='/models/"
        "gemma3-270m-q4_k_m.gguf', input_type=str]",
    ]
    verdict = gate(tmp_path, "llamacpp", lines)
    assert (verdict.kind, verdict.matched_line) == ("bad-args", first.strip())


def test_uvicorns_errno_right_after_the_app_started_is_the_listen_address(
    tmp_path: Path,
) -> None:
    """uvicorn binds its socket right after the app started: a name lookup that fails
    there is the --host value (bad-args); a taken port stays port-in-use; the same
    lookup's failure elsewhere stays download's."""
    error = "ERROR:    [Errno -2] Name or service not known"
    started = [
        "INFO:     Waiting for application startup.",
        "INFO:     Application startup complete.",
    ]
    verdict = gate(tmp_path, "llamacpp", [*started, error])
    assert (verdict.kind, verdict.matched_line) == ("bad-args", error)
    taken = "ERROR:    [Errno 98] error while attempting to bind on address ('127.0.0.1', 8000)"
    verdict = gate(tmp_path, "llamacpp", [*started, taken])
    assert (verdict.kind, verdict.matched_line) == ("port-in-use", taken)
    hub = "requests.exceptions.ConnectionError: [Errno -2] Name or service not known"
    verdict = gate(tmp_path, "vllm", ["INFO 12-06 04:00:00 [api_server.py:1] vLLM API server", hub])
    assert verdict.kind == "download"


def test_a_llama_server_loader_line_takes_the_kind_its_message_names(tmp_path: Path) -> None:
    """`error loading model: device CUDA0 does not support split buffers` is the first
    error of its chain and says, after the loader's words, that the split option cannot
    be: bad-args, the line itself quoted; an argument's error under the parser's
    `error while handling argument` is that error's line."""
    line = (
        "0.00.272.023 E llama_model_load: error loading model: device CUDA0 does not "
        "support split buffers"
    )
    lines = [
        "0.00.100.000 I srv    load_model: loading model '/models/m.gguf'",
        line,
        "0.00.272.100 E llama_model_load_from_file_impl: failed to load model",
        "0.00.272.200 E srv  llama_server: exiting due to model loading error",
    ]
    verdict = gate(tmp_path, "llamacpp", lines)
    assert (verdict.kind, verdict.matched_line) == ("bad-args", line)
    regex = (
        "0.00.230.242 E llama_model_load: error loading model: Mismatched '(' and ')' in "
        "regular expression"
    )
    verdict = gate(tmp_path, "llamacpp", [lines[0], regex, *lines[2:]])
    assert (verdict.kind, verdict.matched_line) == ("bad-args", regex)
    root = (
        "0.00.104.011 E cmn  string_parse: string_parse_kv_override: invalid type for KV "
        "override 'llama.context_length=32768'"
    )
    lines = [
        root,
        'error while handling argument "--override-kv": error: Invalid type for KV override: '
        "llama.context_length=32768",
        "usage:",
    ]
    verdict = gate(tmp_path, "llamacpp", lines)
    assert (verdict.kind, verdict.matched_line) == ("bad-args", root)


def test_the_operating_systems_reason_after_what_failed_names_the_kind(tmp_path: Path) -> None:
    """`failed to open GGUF file '...' (Permission denied)`: the file is there, the
    process may not read it: permission, not the model's; a folder it may not write
    (`Unable to write to NIM_CACHE_PATH`) is permission's too; a port taken stays
    port-in-use."""
    line = (
        "0.00.113.460 E gguf_init_from_file: failed to open GGUF file "
        "'/m/private/random-llama-1b.gguf' (Permission denied)"
    )
    lines = [
        "0.00.100.000 I srv    load_model: loading model '/m/private/random-llama-1b.gguf'",
        line,
        "0.00.113.467 E llama_model_load: error loading model: llama_model_loader: failed to "
        "load model from /m/private/random-llama-1b.gguf",
        "0.00.114.408 E srv  llama_server: exiting due to model loading error",
    ]
    verdict = gate(tmp_path, "llamacpp", lines)
    assert (verdict.kind, verdict.matched_line) == ("permission", line)
    missing = "0.00.113.460 E gguf_init_from_file: failed to open GGUF file '/m/x.gguf' (No such"
    verdict = gate(tmp_path, "llamacpp", [lines[0], missing + " file or directory)", *lines[2:]])
    assert verdict.kind == "model-load"
    nim = "RuntimeError: Unable to write to NIM_CACHE_PATH (/mnt/models/cache)"
    lines = [
        "INFO 2024-06-06 10:00:00.000 ngc_injector.py:152] Valid profile: 8835c31...",
        "Traceback (most recent call last):",
        '  File "/opt/nim/llm/nim_llm_sdk/entrypoints/launch.py", line 99, in main',
        "    inject_ngc_hub(profile, cache_path)",
        nim,
    ]
    verdict = gate(tmp_path, "trtllm", lines)
    assert (verdict.kind, verdict.matched_line) == ("permission", nim)


def test_a_configuration_file_the_user_gave_that_is_missing_or_broken_is_bad_args(
    tmp_path: Path,
) -> None:
    """llama-cpp-python's `Config file ... not found!`, llama-server's `failed to parse
    server config file`, YAML's syntax errors, a TLS key that is no PEM, a llava chat
    format without its projector: each an option the user must change."""
    cases = {
        "Exception: Config file /etc/llama/models.json not found!": "llamacpp",
        "0.00.010.000 E srv    main: failed to parse server config file: /etc/l.ini": "llamacpp",
        "yaml.scanner.ScannerError: while scanning for the next token": "vllm",
        "ssl.SSLError: [SSL] PEM lib (_ssl.c:3905)": "llamacpp",
        "AssertionError: clip model not found": "llamacpp",
    }
    for n, (line, engine) in enumerate(cases.items()):
        lines = [
            "Traceback (most recent call last):",
            '  File "/venv/lib/python3.11/site-packages/server/app.py", line 70, in main',
            "    start(settings)",
            line,
        ]
        if "server config" in line:
            lines = ["0.00.001.000 I build: 0 (unknown)", line]
        if "ScannerError" in line:
            lines.append("found character '\\t' that cannot start any token")
        case = tmp_path / str(n)
        case.mkdir()
        verdict = gate(case, engine, lines)
        assert verdict.kind == "bad-args", (line, verdict.kind, verdict.matched_line)


def test_a_model_newer_than_the_engine_is_unsupported_and_quoted_at_its_root(
    tmp_path: Path,
) -> None:
    """`unknown tokenizer: 'gemma'` inside `error loading model`, and a GGUF version
    above the reader's: unsupported-model, the version line (the top of the chain of
    `function: ...` lines) quoted, not `failed to read header` under it."""
    line = (
        "llama_model_load: error loading model: error loading model vocabulary: unknown "
        "tokenizer: 'gemma'"
    )
    verdict = gate(
        tmp_path, "llamacpp", [line, "llama_model_load_from_file_impl: failed to load model"]
    )
    assert (verdict.kind, verdict.matched_line) == ("unsupported-model", line)
    root = (
        "gguf_init_from_reader: this GGUF file is version 99 but this software only "
        "supports up to version 3"
    )
    lines = [
        root,
        "gguf_init_from_reader: failed to read header",
        "llama_model_load: error loading model: llama_model_loader: failed to load model "
        "from /m/v99.gguf",
        "llama_model_load_from_file_impl: failed to load model",
    ]
    verdict = gate(tmp_path, "llamacpp", lines)
    assert (verdict.kind, verdict.matched_line) == ("unsupported-model", root)


def test_an_option_that_needs_another_and_a_profile_for_other_gpus(tmp_path: Path) -> None:
    """`SPLIT_MODE_TENSOR requires flash_attn to be enabled` (an option's value in
    capitals) is bad-args; a NIM with no profile runnable on the detected GPU is
    cuda-arch, not memory's."""
    line = (
        "0.00.571.262 E llama_init_from_model: SPLIT_MODE_TENSOR requires flash_attn to be enabled"
    )
    lines = [
        "0.00.500.000 I srv    load_model: loading model '/m/x.gguf'",
        line,
        "0.00.571.300 E common_init_from_params: failed to create context with model '/m/x.gguf'",
        "0.00.571.400 E srv  llama_server: exiting due to model loading error",
    ]
    verdict = gate(tmp_path, "llamacpp", lines)
    assert (verdict.kind, verdict.matched_line) == ("bad-args", line)
    nim = (
        "deplot-1  | ERROR 11-12 22:55:02.833 utils.py:21] Could not find a profile that is "
        "currently runnable with the detected hardware. Please check the system information "
        "below and make sure you have enough free GPUs."
    )
    lines = [
        "deplot-1  | INFO 11-12 22:55:02.833 ngc_profile.py:224] Detected 0 compatible profile(s).",
        nim,
        "deplot-1  | SYSTEM INFO",
        "deplot-1  | - Free GPUs:",
    ]
    verdict = gate(tmp_path, "trtllm", lines)
    assert (verdict.kind, verdict.matched_line) == ("cuda-arch", nim.strip())


def test_a_listen_host_that_is_not_this_machines_is_bad_args(tmp_path: Path) -> None:
    """llama-server's `couldn't bind HTTP server socket` on a host that is neither
    loopback nor every address (another box's IP, a name that resolves elsewhere):
    bad-args; on 127.0.0.1 the port is taken; Python's `[Errno 99] Cannot assign
    requested address` is the host's."""
    for host, kind in (("192.0.2.10", "bad-args"), ("127.0.0.1", "port-in-use")):
        line = (
            "0.00.107.814 E srv         start: couldn't bind HTTP server socket, "
            f"hostname: {host}, port: 34247"
        )
        lines = [line, "0.00.107.900 E srv  llama_server: exiting due to HTTP server error"]
        case = tmp_path / host
        case.mkdir()
        verdict = gate(case, "llamacpp", lines)
        assert (verdict.kind, verdict.matched_line) == (kind, line)
    errno = "OSError: [Errno 99] Cannot assign requested address"
    lines = [
        "2026-12-06 04:00:00.000 INFO     [pid 1] vllm.entrypoints.openai.api_server: vLLM",
        "Traceback (most recent call last):",
        '  File "/venv/lib/python3.11/site-packages/vllm/entrypoints/openai/api_server.py", line 9',
        "    sock.bind(addr)",
        errno,
    ]
    verdict = gate(tmp_path, "vllm", lines)
    assert (verdict.kind, verdict.matched_line) == ("bad-args", errno)


def test_vllm_cpu_lines_name_their_kinds_and_an_allowed_long_context_comes_up(
    tmp_path: Path,
) -> None:
    """With VLLM_ALLOW_LONG_MAX_MODEL_LEN=1 the too-long max_model_len is a warning and the
    server comes up; the CPU backend's memory check at startup is memory's; a logging
    level, a parser name among those listed, an engine's variable it rejects and NUMA
    nodes too few for the CPU workers are the user's options (bad-args)."""
    warning = (
        "(APIServer pid=1090) WARNING 12-06 07:23:22 [model.py:2660] User-specified "
        "max_model_len (2048) is greater than the derived max_model_len "
        "(max_position_embeddings=1024.0 or model_max_length=None in model's config.json). "
        "VLLM_ALLOW_LONG_MAX_MODEL_LEN must be used with extreme caution. If the model uses "
        "relative position encoding (RoPE), positions exceeding derived_max_model_len lead "
        "to nan."
    )
    ready = [warning, "(APIServer pid=1090) INFO:     Application startup complete."]
    assert gate(tmp_path, "vllm", ready, exit=None).status == "ready"
    prefix = "(EngineCore pid=1) ERROR 12-06 07:21:34 [core.py:1510] "
    cases = {
        "ValueError: Available memory on node 0 (19.94/23.59 GiB) on startup is less than "
        "desired CPU memory utilization (0.92, 21.70 GiB).": "oom",
        "ValueError: Unknown level: 'VERBOSE'": "bad-args",
        "KeyError: \"Reasoning parser 'deepseek-r1' not found. Available parsers: "
        'deepseek_r1, qwen3"': "bad-args",
        "ValueError: VLLM_PORT 'tcp://10.96.0.15:8000' appears to be a URI. This may be "
        "caused by a Kubernetes service discovery issue": "bad-args",
        "AssertionError: Not enough allowed NUMA nodes to bind threads of 4 local "
        "CPUWorkers.": "bad-args",
        "RuntimeError: 0 active drivers ([]). There should only be one.": "cuda-error",
    }
    for n, (message, kind) in enumerate(cases.items()):
        lines = [
            prefix + "EngineCore failed to start.",
            prefix + "Traceback (most recent call last):",
            prefix + '  File "/venv/lib/python3.11/site-packages/vllm/v1/engine/core.py", line 9',
            prefix + "    self._init()",
            prefix + message,
        ]
        case = tmp_path / str(n)
        case.mkdir()
        verdict = gate(case, "vllm", lines)
        assert (verdict.kind, verdict.matched_line) == (kind, lines[-1]), message


def test_an_exception_whose_message_starts_on_the_next_line_quotes_that_line(
    tmp_path: Path,
) -> None:
    """`ImportError: ` with nothing after the colon, then the message: the message's
    line is quoted, the class gives the kind."""
    message = "[sgl_kernel] CRITICAL: Could not load any common_ops library!"
    lines = [
        "Traceback (most recent call last):",
        '  File "/venv/lib/python3.11/site-packages/sgl_kernel/load_utils.py", line 9',
        "    raise ImportError(error_msg)",
        "ImportError: ",
        message,
        "",
        "Attempted locations:",
        "1. Architecture-specific pattern: /venv/sgl_kernel/sm100/common_ops.*",
    ]
    verdict = gate(tmp_path, "sglang", lines)
    assert (verdict.kind, verdict.matched_line) == ("install", message)


def test_llama_server_configuration_tools_and_an_empty_architecture(tmp_path: Path) -> None:
    """llama-server's MCP and UI configuration files, a tool it does not have and a
    grammar that does not parse are bad-args; a GGUF that names no architecture
    (`unknown model architecture: ''`), or a projector's that names no projector type
    (`unknown projector type:` and nothing after), is a damaged file (model-load), not a
    newer one, which names the type it does not know (unsupported-model)."""
    cases = {
        "0.00.007.701 E srv  llama_server: MCP starting failed: failed to open MCP config "
        "file: /etc/llama/mcp.json": "bad-args",
        "0.05.626.581 E srv          init: init: failed to parse UI config: "
        "[json.exception.parse_error.101] parse error at line 1, column 11": "bad-args",
        '0.00.007.689 E srv  llama_server: tools setup failed: unknown tool "web_search". '
        "available tools: read_file, grep_search, write_file, edit_file": "bad-args",
        "0.00.378.682 E llama_model_load: error loading model: unknown model architecture: "
        "''": "model-load",
        "0.02.588.169 E clip_init: failed to load model '/m/mmproj-f16.gguf': load_hparams: "
        "unknown projector type: ": "model-load",
        "0.02.588.169 E clip_init: failed to load model '/m/mmproj-f16.gguf': load_hparams: "
        "unknown projector type: gemma4uv": "unsupported-model",
    }
    for n, (line, kind) in enumerate(cases.items()):
        lines = [
            "0.00.001.000 I build: 0 (unknown)",
            line,
            "0.05.640.699 E srv  llama_server: exiting due to model loading error",
        ]
        case = tmp_path / str(n)
        case.mkdir()
        verdict = gate(case, "llamacpp", lines)
        assert (verdict.kind, verdict.matched_line) == (kind, line.rstrip()), line


def test_vllm_starting_line_waits_for_what_follows_and_more_bad_args(tmp_path: Path) -> None:
    """vLLM 0.32's `Starting vLLM server on https://...` comes before uvicorn loads its
    TLS files: a key that is no PEM fails right after it, a CRASH, not READY; alone it
    is READY. A port out of range, a value above an option's maximum and a reasoning
    parser whose tokens the tokenizer lacks are bad-args."""
    start = (
        "(APIServer pid=1) INFO 12-06 07:56:05 [entry.py:140] Starting vLLM server on "
        "https://0.0.0.0:42163"
    )
    ssl = "ssl.SSLError: [SSL] PEM lib (_ssl.c:3905)"
    lines = [
        start,
        "(APIServer pid=1) INFO 12-06 07:56:05 [launcher.py:186] Available routes are:",
        "Traceback (most recent call last):",
        '  File "/venv/lib/python3.11/site-packages/uvicorn/config.py", line 131, in load',
        "    ctx.load_cert_chain(certfile, keyfile, get_password)",
        ssl,
    ]
    verdict = gate(tmp_path, "vllm", lines)
    assert (verdict.status, verdict.kind, verdict.matched_line) == ("crash", "bad-args", ssl)
    assert gate(tmp_path, "vllm", [start], exit=None).status == "ready"
    for n, message in enumerate(
        (
            "OverflowError: bind(): port must be 0-65535.",
            "ValueError: LoRA rank 64 is greater than max_lora_rank 16.",
            "RuntimeError: DeepSeekR1ReasoningParser reasoning parser could not locate think "
            "start/end tokens in the tokenizer!",
        )
    ):
        lines = [
            "Traceback (most recent call last):",
            '  File "/venv/lib/python3.11/site-packages/vllm/entrypoints/api_server.py", line 9',
            "    main()",
            message,
        ]
        case = tmp_path / str(n)
        case.mkdir()
        verdict = gate(case, "vllm", lines)
        assert (verdict.kind, verdict.matched_line) == ("bad-args", message)


def test_a_cpp_backtrace_under_a_retried_warning_is_no_crash(tmp_path: Path) -> None:
    """torch's TCPStore client retrying a host that is not there prints a warning and a
    C++ backtrace whose frames name DistNetworkError: while it retries, no frame is a
    fatal line (TIMEOUT when it never gets through); the same backtrace under the error
    that ends the retries is a distributed CRASH, quoting that error."""
    retry = [
        "[W1206 08:11:23.060103676 TCPStore.cpp:340] [c10d] TCP client failed to "
        "connect/validate to host 10.10.10.10:23491 - retrying (try=0, timeout=1800000ms, "
        "delay=365ms): Ping failed, invalid value returned from server.",
        "Exception raised from ping at /pytorch/torch/csrc/distributed/c10d/TCPStore.cpp:427 "
        "(most recent call first):",
        "frame #0: c10::Error::Error(c10::SourceLocation, std::string) + 0x9d (0x7ff7 in "
        "/venv/lib/python3.11/site-packages/torch/lib/libc10.so)",
        "frame #2: c10::DistNetworkError::DistNetworkError(c10::SourceLocation, std::string) "
        "+ 0x72 (0x7ff7 in /venv/lib/python3.11/site-packages/torch/lib/libc10.so)",
        "frame #4: c10d::TCPStore::TCPStore(std::string, c10d::TCPStoreOptions const&) + 0x570",
        "",
    ]
    start = "[2026-12-06 08:11:23] Init parallel begin."
    log = tmp_path / "retrying.log"
    log.write_text("".join(line + "\n" for line in [start, *retry, *retry]))
    hung = run_log(log, engine="sglang", exit=None, timeout_s=TIMEOUT_S)
    assert hung.status == "timeout"
    final = (
        "torch.distributed.DistNetworkError: The client socket has timed out after "
        "1800000ms while trying to connect to (10.10.10.10, 23491)."
    )
    lines = [start, *retry, "Traceback (most recent call last):", final]
    crashed = gate(tmp_path, "sglang", lines, exit=1)
    assert (crashed.status, crashed.kind, crashed.matched_line) == ("crash", "distributed", final)


def test_a_config_field_of_the_wrong_type_is_the_models(tmp_path: Path) -> None:
    """transformers' checked configuration: a config.json field of the wrong type is the
    model's files (an option's wrong type is argparse's ``invalid int value``)."""
    cause = "TypeError: Field 'num_attention_heads' expected int, got str (value: '2')"
    lines = [
        "Traceback (most recent call last):",
        '  File "/venv/lib/python3.11/site-packages/huggingface_hub/dataclasses.py", '
        "line 9, in validate",
        "    raise TypeError(msg)",
        cause,
    ]
    verdict = gate(tmp_path, "sglang", lines, exit=1)
    assert (verdict.kind, verdict.matched_line) == ("model-load", cause)


def test_the_line_that_logged_a_failure_before_raising_it_is_quoted(tmp_path: Path) -> None:
    """``Failed to read config file <path>: <message>`` logged, then the traceback of the
    exception with that message: the logged line names the file and is quoted; the
    kind stays the exception's. A line that only reports the message (``Error in
    request: ...``) is not that line."""
    message = "while scanning a simple key"
    logged = f"[2026-12-06 08:06:36] Failed to read config file /srv/serve.yaml: {message}"
    tail = [
        "Traceback (most recent call last):",
        '  File "/venv/lib/python3.11/site-packages/yaml/scanner.py", line 291, in stale',
        '    raise ScannerError("while scanning a simple key", key.mark,',
        f"yaml.scanner.ScannerError: {message}",
        '  in "/srv/serve.yaml", line 4, column 1',
    ]
    verdict = gate(tmp_path, "sglang", [logged, *tail], exit=1)
    assert (verdict.kind, verdict.matched_line) == ("bad-args", logged)
    reported = f"[2026-12-06 08:06:36] Error in request: {message}"
    verdict = gate(tmp_path, "sglang", [reported, *tail], exit=1)
    assert verdict.matched_line == f"yaml.scanner.ScannerError: {message}"


def test_a_missing_module_is_quoted_from_the_line_that_says_how_to_install_it(
    tmp_path: Path,
) -> None:
    """``ModuleNotFoundError: No module named 'bitsandbytes'``, then the engine's re-raise
    ``ImportError: Please install bitsandbytes>=0.46.1 via ...``: that line is quoted,
    the kind install."""
    advice = "ImportError: Please install bitsandbytes>=0.46.1 via `pip install bitsandbytes`"
    lines = [
        "Traceback (most recent call last):",
        '  File "/venv/sglang/srt/layers/quantization/bitsandbytes.py", line 9, in load',
        "    import bitsandbytes",
        "ModuleNotFoundError: No module named 'bitsandbytes'",
        "",
        "The above exception was the direct cause of the following exception:",
        "",
        "Traceback (most recent call last):",
        '  File "/venv/sglang/srt/layers/quantization/bitsandbytes.py", line 11, in load',
        "    raise ImportError(msg) from err",
        advice,
    ]
    verdict = gate(tmp_path, "sglang", lines, exit=1)
    assert (verdict.kind, verdict.matched_line) == ("install", advice)


def test_a_tls_key_that_is_not_the_certificates_is_bad_args(tmp_path: Path) -> None:
    """The server's own certificate and a key of another: the option's files, not a
    download's TLS."""
    cause = "ssl.SSLError: [X509: KEY_VALUES_MISMATCH] key values mismatch (_ssl.c:3926)"
    lines = [
        "Traceback (most recent call last):",
        '  File "/venv/lib/python3.11/site-packages/uvicorn/config.py", line 9, in load',
        "    ctx.load_cert_chain(certfile, keyfile, password)",
        cause,
    ]
    verdict = gate(tmp_path, "llamacpp", lines, exit=1)
    assert (verdict.kind, verdict.matched_line) == ("bad-args", cause)


def test_a_failure_the_engine_retries_does_not_decide(tmp_path: Path) -> None:
    """vLLM's first try to read a config fails and says it retries; the second succeeds
    and the server comes up: READY. The same line without the retry is a CRASH."""
    failed = (
        "(APIServer pid=9) ERROR 12-06 11:34:39 [repo_utils.py:126] Error parsing config "
        "for /models/m: /models/m does not appear to have a file named configuration_x.py."
    )
    up = [
        "(APIServer pid=9) INFO 12-06 11:34:45 [api_server.py:9] Starting vLLM server on "
        "http://0.0.0.0:8000",
        "(APIServer pid=9) INFO:     Application startup complete.",
    ]
    log = tmp_path / "server.log"
    log.write_text("\n".join([failed + ", retrying 1 of 2", *up]) + "\n")
    assert run_log(log, engine="vllm", exit=None).status == Status.READY
    log.write_text("\n".join([failed, *up]) + "\n")
    assert run_log(log, engine="vllm", exit=None).status == Status.CRASH


def test_llama_server_bind_failures_by_host_and_port(tmp_path: Path) -> None:
    """The same line for three causes: a port below 1024 (not root), an IPv6 host in
    brackets (taken as a name), a taken port; and an encrypted TLS key whose pass phrase
    no one can type, before it."""
    bind = "0.00.105.300 E srv         start: couldn't bind HTTP server socket, hostname: "
    for where, kind in (
        ("127.0.0.1, port: 443", "permission"),
        ("[::], port: 34445", "bad-args"),
        ("127.0.0.1, port: 8080", "port-in-use"),
    ):
        verdict = gate(
            tmp_path, "llamacpp", ["0.00.000.913 I srv  llama_server: init", bind + where]
        )
        assert verdict.kind == kind, where
    lines = ["Enter PEM pass phrase:", bind + "127.0.0.1, port: 8080"]
    verdict = gate(tmp_path, "llamacpp", lines)
    assert (verdict.kind, verdict.matched_line) == ("bad-args", "Enter PEM pass phrase:")


def test_a_json_options_field_error_is_quoted_below_its_count(tmp_path: Path) -> None:
    """argparse's line counts pydantic's errors; under a field's name the next line says
    what that field must be (quoted); with no field named, or several errors, the count's
    line, which names the option, stays."""
    count = "api_server.py: error: argument --kv-transfer-config: 1 validation error for KVT"
    field = (
        "  Input should be 'kv_producer', 'kv_both' or 'kv_consumer' "
        "[type=literal_error, input_value='both', input_type=str]"
    )
    link = "    For further information visit https://errors.pydantic.dev/2.14/v/literal_error"
    verdict = gate(tmp_path, "vllm", ["usage: api_server.py [-h]", count, "kv_role", field, link])
    assert (verdict.kind, verdict.matched_line) == ("bad-args", field.strip())
    verdict = gate(tmp_path, "vllm", ["usage: api_server.py [-h]", count, field, link], exit=2)
    assert (verdict.kind, verdict.matched_line) == ("bad-args", count)
    several = count.replace("1 validation error for", "3 validation errors for")
    verdict = gate(tmp_path, "vllm", ["usage: api_server.py [-h]", several, "kv_role", field])
    assert (verdict.kind, verdict.matched_line) == ("bad-args", several)
    # a key the option does not take ("level" of an older --compilation-config): the
    # error says what is not allowed, the count's line which option; and its words
    # ("Unexpected keyword") are no model's unexpected keys
    unknown = (
        "  Unexpected keyword argument [type=unexpected_keyword_argument, input_value=3, "
        "input_type=int]"
    )
    verdict = gate(tmp_path, "vllm", ["usage: api_server.py [-h]", count, "level", unknown, link])
    assert (verdict.kind, verdict.matched_line) == ("bad-args", count)


def test_no_gpu_driver_and_too_many_sequences(tmp_path: Path) -> None:
    """torch asked for CUDA on a machine with no driver is the device's (cuda-error), not
    a package's; llama.cpp's bound on -np is the option's."""
    cause = "RuntimeError: Found no NVIDIA driver on your system. Please check that you have"
    lines = [
        "Traceback (most recent call last):",
        '  File "/venv/lib/python3.11/site-packages/torch/cuda/__init__.py", line 9, in init',
        "    torch._C._cuda_init()",
        cause,
    ]
    assert gate(tmp_path, "sglang", lines).kind == "cuda-error"
    line = (
        "0.00.404.439 E llama_init_from_model: failed to initialize the context: "
        "n_seq_max must be <= 256"
    )
    verdict = gate(tmp_path, "llamacpp", ["0.00.000.913 I srv  llama_server: init", line])
    assert verdict.kind == "bad-args"


def test_gdbs_backtrace_after_an_assertion_is_not_the_cause(tmp_path: Path) -> None:
    """ggml prints gdb's backtrace after a GGML_ASSERT: the debugger's missing sources
    ("58\\t../sysdeps/...: No such file or directory.") are no failure of the server;
    the assertion is, and one in the model loader is the model file's."""
    cause = (
        "/src/llama.cpp/src/llama-model.cpp:1420: GGML_ASSERT(hparams.rope_scaling_type_train"
        " != LLAMA_ROPE_SCALING_TYPE_UNSPECIFIED) failed"
    )
    lines = [
        "0.00.000.913 I srv  llama_server: initializing ...",
        cause,
        "[New LWP 11109]",
        "0x00007f16884f1c17 in __GI___wait4 (pid=11120) at ../sysdeps/unix/sysv/linux/wait4.c:30",
        "30\t../sysdeps/unix/sysv/linux/wait4.c: No such file or directory.",
        "#0  0x00007f16884f1c17 in __GI___wait4 (pid=11120) at ../sysdeps/linux/wait4.c:30",
        "30\tin ../sysdeps/unix/sysv/linux/wait4.c",
        "#1  0x00007f168814e68b in ggml_print_backtrace () from /opt/lib/libggml-base.so.0",
        "58\t../sysdeps/nptl/libc_start_call_main.h: No such file or directory.",
        "[Inferior 1 (process 11108) detached]",
    ]
    verdict = gate(tmp_path, "llamacpp", lines, exit=-6)
    assert (verdict.kind, verdict.matched_line) == ("model-load", cause)


def test_a_gguf_too_old_and_a_yaml_problem_line(tmp_path: Path) -> None:
    """The reader's first line says why (GGUFv1, before "failed to read header": the
    file's, to convert again); PyYAML
    prints its context, then the problem, with no level and no exception's class."""
    old = (
        "gguf_init_from_reader: GGUFv1 is no longer supported, please use a more up-to-date version"
    )
    lines = [
        old,
        "gguf_init_from_reader: failed to read header",
        "llama_model_load: error loading model: llama_model_loader: failed to load model from "
        "/models/m.gguf",
        "llama_model_load_from_file_impl: failed to load model",
    ]
    verdict = gate(tmp_path, "llamacpp", lines)
    assert (verdict.kind, verdict.matched_line) == ("model-load", old)
    problem = "expected alphabetic or numeric character, but found '\\n'"
    lines = [
        "while scanning an alias",
        '  in "/etc/llama/server.yaml", line 1, column 7',
        problem,
        '  in "/etc/llama/server.yaml", line 1, column 8',
        "usage: __main__.py [-h] [--model MODEL]",
    ]
    verdict = gate(tmp_path, "llamacpp", lines)
    assert (verdict.kind, verdict.matched_line) == ("bad-args", problem)


def test_pydantics_count_is_not_joined_to_the_field_below_it(tmp_path: Path) -> None:
    """A count line of 80 characters or more, then a field's name in lower case: not a
    line wrapped at a width; the field's error is quoted."""
    detail = (
        "Input should be a valid dictionary [type=dict_type, input_value='[1, 2]', input_type=str]"
    )
    lines = [
        "Traceback (most recent call last):",
        '  File "/venv/lib/python3.11/site-packages/vllm/config/model.py", line 9, in init',
        "    s.__pydantic_validator__.validate_python(ArgsKwargs(args, kwargs))",
        "pydantic_core._pydantic_core.ValidationError: 2 validation errors for ModelConfig",
        "hf_overrides.dict[str,any]",
        "  " + detail,
        "    For further information visit https://errors.pydantic.dev/2.14/v/dict_type",
    ]
    verdict = gate(tmp_path, "vllm", lines)
    assert (verdict.kind, verdict.matched_line) == ("bad-args", detail)


def test_a_feature_of_another_platform_is_the_options(tmp_path: Path) -> None:
    """vLLM for CPU asked for native KV offloading: another vendor's or kind's feature
    (bad-args), not a GPU generation (cuda-arch)."""
    cause = "Exception: CPU Offloading is currently only supported on CUDA-alike and XPU GPUs"
    lines = [
        "Traceback (most recent call last):",
        '  File "/venv/lib/python3.11/site-packages/vllm/v1/kv_offload/cpu.py", line 9, in x',
        "    raise Exception(msg)",
        cause,
    ]
    assert gate(tmp_path, "vllm", lines).kind == "bad-args"


def test_a_librarys_root_re_raised_naming_the_file_is_quoted_from_the_re_raise(
    tmp_path: Path,
) -> None:
    """A chain whose root is a library's exception in its own terms (the JSON parser's
    position, the socket's lookup) and whose last exception names the file or the
    address: that last one is quoted, the root's kind kept."""
    empty = "OSError: It looks like the config file at '/m/config.json' is not a valid JSON file."
    lines = [
        "Traceback (most recent call last):",
        '  File "/venv/lib/python3.11/json/decoder.py", line 355, in raw_decode',
        "    raise JSONDecodeError('Expecting value', s, err.value) from None",
        "json.decoder.JSONDecodeError: Expecting value: line 1 column 1 (char 0)",
        "",
        "During handling of the above exception, another exception occurred:",
        "",
        "Traceback (most recent call last):",
        '  File "/venv/transformers/configuration_utils.py", line 9, in _get_config_dict',
        "    raise OSError(msg)",
        empty,
    ]
    assert gate(tmp_path, "vllm", lines).matched_line == empty
    offline = "OSError: We couldn't connect to 'https://huggingface.co' to load the files"
    lines = [
        "Traceback (most recent call last):",
        '  File "/venv/lib/python3.11/site-packages/httpx/_transports/default.py", line 9',
        "    raise mapped_exc(message) from exc",
        "httpx.ConnectError: [Errno -2] Name or service not known",
        "",
        "The above exception was the direct cause of the following exception:",
        "",
        "Traceback (most recent call last):",
        '  File "/venv/lib/python3.11/site-packages/transformers/utils/hub.py", line 9',
        "    raise OSError(msg) from e",
        offline,
    ]
    verdict = gate(tmp_path, "sglang", lines)
    assert (verdict.kind, verdict.matched_line) == ("download", offline)


def test_a_bare_file_not_found_where_tls_files_load_is_the_options(tmp_path: Path) -> None:
    """ssl's load_cert_chain raises FileNotFoundError without the path: the certificate
    or key an option names is missing (bad-args), not the model's files."""
    cause = "FileNotFoundError: [Errno 2] No such file or directory"
    lines = [
        "Traceback (most recent call last):",
        '  File "/venv/lib/python3.11/site-packages/uvicorn/config.py", line 131, in ssl',
        "    ctx.load_cert_chain(certfile, keyfile, get_password)",
        cause,
    ]
    verdict = gate(tmp_path, "vllm", lines)
    assert (verdict.kind, verdict.matched_line) == ("bad-args", cause)
    # a folder given for the key or the certificate: the same call, without the path
    folder = "IsADirectoryError: [Errno 21] Is a directory"
    verdict = gate(tmp_path, "llamacpp", [*lines[:3], folder])
    assert (verdict.kind, verdict.matched_line) == ("bad-args", folder)
    lines[2] = "    weights = safe_open(path)"
    assert gate(tmp_path, "vllm", lines).kind != "bad-args"
    assert gate(tmp_path, "llamacpp", [*lines[:3], folder]).kind != "bad-args"


def test_a_message_the_program_answers_with_its_usage(tmp_path: Path) -> None:
    """llama-cpp-python's server on a config file it refuses prints the message (no
    traceback, no level) and then its usage: the message's first line is the cause, the
    command's settings (bad-args). Without the usage after it, the line says nothing."""
    usage = [
        "usage: __main__.py [-h] [--model MODEL] [--model_alias MODEL_ALIAS]",
        "                   [--n_gpu_layers N_GPU_LAYERS] [--split_mode SPLIT_MODE]",
        "",
        "options:",
        "  -h, --help            show this help message and exit",
        "  --config_file CONFIG_FILE",
        "                        Path to a config file to load.",
    ]
    message = [
        "expected a single document in the stream",
        '  in "/srv/server.yaml", line 2, column 1',
        "but found another document",
        '  in "/srv/server.yaml", line 9, column 1',
    ]
    verdict = gate(tmp_path, "llamacpp", [*message, *usage])
    assert (verdict.kind, verdict.matched_line) == ("bad-args", message[0])
    assert gate(tmp_path, "llamacpp", message).kind != "bad-args"
    bare = "'str' object has no attribute 'get'"
    verdict = gate(tmp_path, "llamacpp", ["", bare, *usage])
    assert (verdict.kind, verdict.matched_line) == ("bad-args", bare)


def test_an_engine_re_raise_that_says_how_to_install_is_quoted(tmp_path: Path) -> None:
    """SGLang re-raises a missing module as "--enable-http2 requires the 'granian'
    package. Install it with: ...": quoted, and install although it names a flag."""
    advice = (
        "ValueError: --enable-http2 requires the 'granian' package. Install it with: "
        'pip install "sglang[http2]"'
    )
    lines = [
        "Traceback (most recent call last):",
        '  File "/venv/sglang/srt/arg_groups/serving.py", line 9, in check',
        "    import granian  # noqa: F401",
        "ModuleNotFoundError: No module named 'granian'",
        "",
        "During handling of the above exception, another exception occurred:",
        "",
        "Traceback (most recent call last):",
        '  File "/venv/sglang/srt/arg_groups/serving.py", line 11, in check',
        "    raise ValueError(",
        advice,
    ]
    verdict = run_log(
        _write(tmp_path, lines), engine="sglang", exit=1, command=["x", "--enable-http2"]
    )
    assert (verdict.kind, verdict.matched_line) == ("install", advice)


def test_a_server_that_says_it_listens_on_another_port_is_not_ready(tmp_path: Path) -> None:
    """llama-server moved to AIP_HTTP_PORT's 8080 while its command said --port 35525:
    its ready line is not the gate's READY (nothing answers where it probes); the
    deadline's TIMEOUT says which port it took. The same log on its own port, answering
    there, is READY."""
    lines = [
        "0.00.000.913 I srv  llama_server: initializing ...",
        "0.00.487.854 I srv  llama_server: model loaded",
        "0.00.487.860 I srv  llama_server: listening on http://127.0.0.1:8080",
    ]
    log = _write(tmp_path, lines)
    command = ["llama-server", "-m", "/m.gguf", "--port", "35525"]
    verdict = run_log(log, engine="llamacpp", exit=None, timeout_s=1.0, command=command)
    assert verdict.status == Status.TIMEOUT
    assert verdict.hint is not None and "8080" in verdict.hint
    port = free_port()
    own = _write(
        tmp_path,
        [*lines[:2], f"0.00.487.860 I srv  llama_server: listening on http://127.0.0.1:{port}"],
    )
    command[-1] = str(port)
    verdict = run_log(own, engine="llamacpp", exit=None, command=command, answers=True)
    assert verdict.status == Status.READY


def _write(tmp_path: Path, lines: list[str]) -> Path:
    log = tmp_path / "server.log"
    log.write_text("".join(line + "\n" for line in lines))
    return log


def test_a_hf_fetch_that_failed_before_the_load_is_its_root(tmp_path: Path) -> None:
    """llama-server's -hf repository could not be fetched (no connection, a build
    without TLS); the loader then has no file ("exactly one out metadata ..."): the
    fetch is quoted, as a download, though the engine moved on past it. A vision
    projector given as the model: the message names the option it belongs to."""
    fetch = "0.00.008.371 E get_repo_commit: error: HTTPLIB failed: Could not establish connection"
    lines = [
        "0.00.001.547 I srv  llama_server: initializing ...",
        fetch,
        "0.00.008.410 W get_repo_files: failed to resolve commit for org/model-GGUF",
        "0.00.009.889 I srv    load_model: loading model 'org/model-GGUF:Q4_K_M'",
        "0.00.009.939 E llama_model_load_from_file_impl: exactly one out metadata, path_model, "
        "and file must be defined",
        "0.00.009.963 E srv    load_model: failed to load model, ''",
        "0.00.010.608 E srv  llama_server: exiting due to model loading error",
    ]
    verdict = gate(tmp_path, "llamacpp", lines)
    assert (verdict.kind, verdict.matched_line) == ("download", fetch)
    clip = (
        "0.00.016.835 E llama_model_load: error loading model: CLIP cannot be used as main "
        "model, use it with --mmproj instead"
    )
    lines = ["0.00.001.547 I srv  llama_server: initializing ...", clip]
    lines.append("0.00.016.900 E srv    load_model: failed to load model, '/m/mmproj.gguf'")
    assert gate(tmp_path, "llamacpp", lines).kind == "bad-args"


def _rank_traceback(rank: str, assertion: str) -> list[str]:
    return [
        f"[2026-12-06 14:28:07 {rank}] Init parallel begin.",
        f"[2026-12-06 14:28:07 {rank}] Scheduler hit an exception: Traceback (most recent "
        "call last):",
        '  File "/venv/sglang/srt/utils/numa_utils.py", line 463, in init_threads_binding',
        "    assert world_size <= n_numa_node, (",
        assertion,
        "",
    ]


def test_two_ranks_failing_alike_quote_the_failure_not_the_pipe_that_closed(
    tmp_path: Path,
) -> None:
    """SGLang's two data-parallel schedulers fail the same check; between their
    tracebacks the controller's pipe closes (EOFError) and, while it handles that, it
    reports the dead scheduler with a supposed cause ("If exit code is -9 (SIGKILL), a
    common cause is the OS OOM killer"): the check is quoted, and the supposition names
    no kind. The same message twice is one failure, not a fallback that failed too."""
    assertion = (
        "AssertionError: SGLANG_CPU_OMP_THREADS_BIND is not set, in this case, the total "
        "number of ranks (dp_size * tp_size * pp_size = 2) should be smaller than or equal "
        "to number of numa node on the machine 1."
    )
    died = (
        "RuntimeError: Rank 0 scheduler died during initialization (exit code: -3). If exit "
        "code is -9 (SIGKILL), a common cause is the OS OOM killer. Run `dmesg -T | grep -i "
        "oom` to check."
    )
    lines = [
        *_rank_traceback("DP1", assertion),
        "Traceback (most recent call last):",
        '  File "/venv/multiprocessing/connection.py", line 399, in _recv',
        "    raise EOFError",
        "EOFError",
        "",
        "During handling of the above exception, another exception occurred:",
        "",
        "Traceback (most recent call last):",
        '  File "/venv/sglang/srt/entrypoints/engine.py", line 2029, in _wait_for_scheduler_ready',
        "    raise _scheduler_died_error(i, scheduler_procs[i])",
        died,
        *_rank_traceback("DP0", assertion),
    ]
    command = ["python", "-m", "sglang.launch_server", "--device", "cpu", "--dp-size", "2"]
    verdict = run_log(_write(tmp_path, lines), engine="sglang", exit=1, command=command)
    assert (verdict.kind, verdict.matched_line) == ("bad-args", assertion)
    alone = ["[2026-12-06 14:28:07] Launch DP0 starting at GPU #0.", died]
    assert gate(tmp_path, "sglang", alone).kind != "oom"


def test_a_file_read_while_the_server_sets_its_logging_up_is_the_commands(
    tmp_path: Path,
) -> None:
    """SGLANG_LOGGING_CONFIG_PATH named a YAML file where JSON is read: the parser's
    error names no file, but the frame that read it is the logging setup, not the
    model's loader, so the file is one the command gave (bad-args). The same error read
    by the model's config loader stays the model's."""

    def lines(function: str) -> list[str]:
        return [
            "Traceback (most recent call last):",
            '  File "/venv/sglang/srt/entrypoints/engine.py", line 1152, in _launch_subprocesses',
            "    configure_logger(server_args)",
            f'  File "/venv/sglang/srt/utils/common.py", line 2626, in {function}',
            "    custom_config = orjson.loads(file.read())",
            "orjson.JSONDecodeError: unexpected character, expected a JSON value: line 1 "
            "column 1 (char 0)",
        ]

    assert gate(tmp_path, "sglang", lines("configure_logger")).kind == "bad-args"
    assert gate(tmp_path, "sglang", lines("get_config")).kind == "model-load"


def test_a_model_that_runs_its_own_code_needs_the_flag(tmp_path: Path) -> None:
    """transformers refuses a repository with custom code unless the command allows
    it: the command lacks --trust-remote-code (bad-args, the hint names the flag), in
    either of its messages; a warning that merely mentions the argument decides
    nothing."""
    custom = (
        "ValueError: The repository /m/custom-code contains custom code which must be "
        "executed to correctly load the model. You can inspect the repository content at "
        "/m/custom-code ."
    )
    lines = [
        "Traceback (most recent call last):",
        '  File "/venv/transformers/dynamic_module_utils.py", line 788, in '
        "resolve_trust_remote_code",
        "    raise ValueError(",
        custom,
        "Please pass the argument `trust_remote_code=True` to allow custom code to be run.",
    ]
    verdict = gate(tmp_path, "sglang", lines)
    assert (verdict.kind, verdict.matched_line) == ("bad-args", custom)
    assert verdict.hint is not None and "--trust-remote-code" in verdict.hint
    moonlight = (
        "ValueError: Loading moonshotai/Moonlight-16B-A3B-Instruct requires you to execute "
        "the configuration file in that repo on your local machine. Make sure you have read "
        "the code there to avoid malicious use, then set the option `trust_remote_code=True` "
        "to remove this error."
    )
    assert gate(tmp_path, "vllm", [moonlight]).kind == "bad-args"


def test_a_failure_said_again_by_its_caller_is_quoted_where_first_said(tmp_path: Path) -> None:
    """llama-server's Docker model fetch on a build without TLS: the resolver says the
    download failed, then the server says it again in its words, each line introducing
    the build options below it; the first report is quoted, a download. A caller's
    line with a message of its own is quoted itself."""
    first = (
        "0.00.097.615 E common_docker_resolve_model: Docker Model download failed: HTTPS is "
        "not supported. Please rebuild with one of:"
    )
    options = ["  -DLLAMA_BUILD_BORINGSSL=ON", "  -DLLAMA_OPENSSL=ON (default)"]
    again = (
        "0.00.097.640 E srv  llama_server: failed to download model: HTTPS is not supported. "
        "Please rebuild with one of:"
    )
    lines = [
        "0.00.097.418 I srv  llama_server: initializing ...",
        "0.00.097.551 I common_docker_resolve_model: Downloading Docker Model: ai/llama3.2:1B",
        first,
        *options,
        again,
        *options,
    ]
    verdict = gate(tmp_path, "llamacpp", lines)
    assert (verdict.kind, verdict.matched_line) == ("download", first)
    other = "0.00.097.640 E srv  llama_server: failed to download model: no usable TLS backend:"
    lines[-3] = other
    assert gate(tmp_path, "llamacpp", lines).matched_line == other


def test_a_config_file_of_the_wrong_shape_and_a_short_dtype(tmp_path: Path) -> None:
    """vLLM's --config YAML written as a list fails in its argument parser's loader
    (bad-args: the file the command gave, not the model's config). A config.json whose
    dtype is spelt short ("bf16") fails where torch is asked for it: the model's file
    (model-load), not an old torch (a long name torch lacks stays install)."""
    shape = [
        "Traceback (most recent call last):",
        '  File "/venv/vllm/utils/argparse_utils.py", line 524, in _pull_args_from_config',
        "    config_args = self.load_config_file(file_path)",
        '  File "/venv/vllm/utils/argparse_utils.py", line 616, in load_config_file',
        "    for key, value in config.items():",
        "AttributeError: 'list' object has no attribute 'items'",
    ]
    assert gate(tmp_path, "vllm", shape).kind == "bad-args"

    def dtype(name: str) -> list[str]:
        return [
            "Traceback (most recent call last):",
            '  File "/venv/transformers/configuration_utils.py", line 301, in __init__',
            "    dtype = getattr(torch, dtype)",
            f"AttributeError: module 'torch' has no attribute '{name}'",
        ]

    assert gate(tmp_path, "vllm", dtype("bf16")).kind == "model-load"
    assert gate(tmp_path, "vllm", dtype("float8_e4m3fn")).kind == "install"


def test_a_registry_key_said_again_by_the_re_raise_and_a_json_options_value(
    tmp_path: Path,
) -> None:
    """SGLang's KV-events publisher table has no 'nats': the table's KeyError is re-raised
    as "Unknown event publisher 'nats'", which is quoted; the value is the one the
    command's JSON option gave, so the kind is bad-args (the hint names the option). A
    line above that says CUDA graphs are off is no graph capture."""
    unknown = "ValueError: Unknown event publisher 'nats'"
    lines = [
        "[2026-12-06 17:21:30] Disable prefill CUDA graph because cuda_graph_config resolved "
        "prefill.backend='disabled'.",
        "[2026-12-06 17:21:30] Scheduler hit an exception: Traceback (most recent call last):",
        '  File "/venv/sglang/srt/disaggregation/kv_events.py", line 765, in create',
        "    constructor = cls._registry[kind]",
        "KeyError: 'nats'",
        "",
        "The above exception was the direct cause of the following exception:",
        "",
        "Traceback (most recent call last):",
        '  File "/venv/sglang/srt/disaggregation/kv_events.py", line 767, in create',
        "    raise ValueError(f\"Unknown event publisher '{kind}'\") from exc",
        unknown,
    ]
    config = '{"publisher": "nats", "endpoint": "nats://127.0.0.1:4222"}'
    command = ["python", "-m", "sglang.launch_server", "--kv-events-config", config]
    verdict = run_log(_write(tmp_path, lines), engine="sglang", exit=1, command=command)
    assert (verdict.kind, verdict.matched_line) == ("bad-args", unknown)
    assert verdict.hint is not None and "--kv-events-config" in verdict.hint
    alone = run_log(_write(tmp_path, lines), engine="sglang", exit=1, command=command[:3])
    assert (alone.kind, alone.matched_line) != ("cuda-graph", unknown)


def test_a_message_that_requires_options_by_their_flags_is_bad_args(tmp_path: Path) -> None:
    """An assertion that names the flags the start needs is the command's; a message
    that names a flag as advice under another failure keeps that failure's kind."""
    needs = (
        "AssertionError: When no initial --lora-paths is provided, you need to specify both "
        "--max-lora-rank and --lora-target-modules for LoRA initialization."
    )
    lines = [
        "Traceback (most recent call last):",
        '  File "/venv/sglang/srt/server_args.py", line 5120, in check_lora_server_args',
        "    assert (",
        needs,
    ]
    assert gate(tmp_path, "sglang", lines).kind == "bad-args"
    advice = (
        "ValueError: Available memory on node 0 (22.08/23.59 GiB) on kv cache allocation is "
        "less than requested memory for kv (64.0 GiB). Decrease --kv-cache-memory-bytes, "
        "VLLM_CPU_KVCACHE_SPACE, or reduce CPU memory used by other processes."
    )
    lines[-1] = advice
    assert gate(tmp_path, "vllm", lines).kind != "bad-args"


def test_a_host_given_as_a_url_is_the_option_whatever_fails_of_it(tmp_path: Path) -> None:
    """--host http://0.0.0.0: SGLang's group rendezvous at tcp://http://0.0.0.0:port
    fails with "port number missing", a distributed error by its words; the command's
    host is a URL, so the kind is bad-args and the hint says so. The same error with a
    plain host stays distributed."""
    lines = [
        "Traceback (most recent call last):",
        '  File "/venv/torch/distributed/rendezvous.py", line 62, in _rendezvous_helper',
        "    raise ValueError(",
        "ValueError: Error initializing torch.distributed using tcp:// rendezvous: port "
        "number missing",
    ]
    command = ["python", "-m", "sglang.launch_server", "--host", "http://0.0.0.0"]
    verdict = run_log(_write(tmp_path, lines), engine="sglang", exit=1, command=command)
    assert verdict.kind == "bad-args"
    assert verdict.hint is not None and "URL" in verdict.hint
    command[-1] = "0.0.0.0"
    plain = run_log(_write(tmp_path, lines), engine="sglang", exit=1, command=command)
    assert plain.kind == "distributed"


def test_a_feature_of_another_platform_asked_of_this_one_is_bad_args(tmp_path: Path) -> None:
    """SGLang on the CPU: decode context parallelism is only for HIP, CUDA, NPU or XPU,
    and InstantTensor loading needs a CUDA device where the process got 'cpu': the
    options must go (bad-args), not a CUDA failure nor the group's."""
    for message in (
        "RuntimeError: Decode context parallel (decode_context_parallel_size > 1) is "
        "currently only supported on the AMD HIP, CUDA, NPU, or Intel XPU platform",
        "ValueError: InstantTensor requires a CUDA-compatible device (including CUDA and "
        "ROCm); got 'cpu'.",
    ):
        lines = [
            "Traceback (most recent call last):",
            '  File "/venv/sglang/srt/model_executor/model_runner.py", line 400, in init',
            "    raise ValueError(message)",
            message,
        ]
        assert gate(tmp_path, "sglang", lines).kind == "bad-args", message


def test_options_that_do_not_fit_the_checkpoint_or_each_other(tmp_path: Path) -> None:
    """--load-format sharded_state on a plain folder ("only pre-sharded checkpoints are
    currently supported!") is the option's (bad-args), not the checkpoint's; SGLang's
    "parallel topology is inconsistent (...):", whose message goes on below it, ends the
    scheduler's traceback and is the cause (bad-args), not the EOFError of the pipe the
    parent read from the dead scheduler."""
    sharded = (
        "ValueError: Could not find checkpoint files '/m/model-rank-0-part-*.safetensors', "
        "only pre-sharded checkpoints are currently supported!"
    )
    lines = [
        "Traceback (most recent call last):",
        '  File "/venv/sglang/srt/model_loader/loader.py", line 9, in load_model',
        "    raise ValueError(",
        sharded,
    ]
    verdict = gate(tmp_path, "sglang", lines)
    assert (verdict.kind, verdict.matched_line) == ("bad-args", sharded)
    topology = "ValueError: parallel topology is inconsistent (set by override_permanently):"
    lines = [
        "Process Process-1:",
        "Traceback (most recent call last):",
        '  File "/venv/sglang/srt/runtime_context.py", line 347, in _validate_parallel',
        "    raise ValueError(",
        topology,
        "0 <= pp_rank < pp_size",
        "  1 is not a rank of 1",
        "Traceback (most recent call last):",
        '  File "/usr/lib/python3.11/multiprocessing/connection.py", line 399, in _recv',
        "    raise EOFError",
        "EOFError",
        "",
        "During handling of the above exception, another exception occurred:",
        "",
        "Traceback (most recent call last):",
        '  File "/venv/sglang/srt/entrypoints/engine.py", line 2029, in _wait_for_ready',
        "    raise _scheduler_died_error(i, scheduler_procs[i])",
        "RuntimeError: Rank 0 scheduler died during initialization (exit code: 1). If exit "
        "code is -9 (SIGKILL), a common cause is the OS OOM killer.",
    ]
    case = tmp_path / "topology"
    case.mkdir()
    verdict = gate(case, "sglang", lines)
    assert (verdict.kind, verdict.matched_line) == ("bad-args", topology)


def test_llama_cpp_names_which_extra_file_it_could_not_read(tmp_path: Path) -> None:
    """A zero-byte LoRA adapter: the reader's "failed to read magic" names no file; the
    line below that names the adapter is quoted. A reader that says what it read
    ("invalid magic characters") stays the cause."""
    lora = "0.03.688.536 E cmn  common_init_: failed to load lora adapter '/l/sql-lora-f16.gguf'"
    lines = [
        "0.03.324.510 I load_tensors: loading model tensors, this can take a while...",
        "0.03.688.377 E gguf_init_from_reader: failed to read magic",
        "0.03.688.517 E llama_adapter_lora_init_from_file_ptr: failed to apply lora adapter: "
        "failed to load lora adapter from file",
        lora,
        "0.03.688.543 E cmn  common_init_: failed to create context with model '/m.gguf'",
        "0.03.688.550 E srv    load_model: failed to create_context with model '/m.gguf'",
        "0.04.532.250 E srv  llama_server: exiting due to model loading error",
    ]
    verdict = gate(tmp_path, "llamacpp", lines)
    assert (verdict.kind, verdict.matched_line) == ("model-load", lora)
    magic = (
        "0.03.688.377 E gguf_init_from_reader: invalid magic characters: '`???', expected 'GGUF'"
    )
    lines[1] = magic
    case = tmp_path / "magic"
    case.mkdir()
    verdict = gate(case, "llamacpp", lines)
    assert (verdict.kind, verdict.matched_line) == ("model-load", magic)


def test_a_scheduler_that_a_sigterm_ended_is_no_crash(tmp_path: Path) -> None:
    """SGLang's "Subprocess scheduler_0 crashed with exit code -15" is what a SIGTERM to
    the group prints (someone stopped the server): no crash of its own, the gate waits
    (TIMEOUT for a server that hangs on); exit code 1 is a crash."""
    lines = [
        "[2026-12-06 22:23:51] INFO:     Uvicorn running on http://127.0.0.1:40995",
        "[2026-12-06 22:26:51] Subprocess scheduler_0 (pid=4865) crashed with exit code -15. "
        "Triggering SIGQUIT for cleanup...",
        "[2026-12-06 22:26:51] SIGQUIT received. signum=None, frame=None. It usually means one "
        "child failed.",
    ]
    assert gate(tmp_path, "sglang", lines, exit=None).status == "timeout"
    lines[1] = lines[1].replace("-15", "1")
    case = tmp_path / "one"
    case.mkdir()
    assert gate(case, "sglang", lines, exit=None).status == "crash"


def test_a_reraise_that_names_the_option_and_says_the_root_again(tmp_path: Path) -> None:
    """ "Mistral parser could not locate the tool call token", re-raised as "--tool-call-
    parser mistral cannot be used with the tokenizer of '/m': Mistral parser could not
    locate ...": the re-raise says which option, and is quoted (bad-args)."""
    root = "RuntimeError: Mistral parser could not locate the tool call token in the tokenizer!"
    reraise = (
        "TypeError: --tool-call-parser mistral cannot be used with the tokenizer of '/m': "
        "Mistral parser could not locate the tool call token in the tokenizer!"
    )
    lines = [
        "Traceback (most recent call last):",
        '  File "/venv/vllm/tool_parsers/mistral_tool_parser.py", line 88, in __init__',
        "    raise RuntimeError(",
        root,
        "",
        "The above exception was the direct cause of the following exception:",
        "",
        "Traceback (most recent call last):",
        '  File "/venv/vllm/entrypoints/openai/api_server.py", line 126, in init_app_state',
        "    raise TypeError(",
        reraise,
    ]
    verdict = gate(tmp_path, "vllm", lines)
    assert (verdict.kind, verdict.matched_line) == ("bad-args", reraise)


def test_vllms_look_at_a_folders_config_is_survived(tmp_path: Path) -> None:
    """vLLM logs "Error parsing config for /t: Unrecognized model in /t" at ERROR while it
    looks at a tokenizer folder, and goes on; the exception it dies of later, reading the
    folder for real (a tokenizer.json saved as UTF-16), is the cause."""
    decode = (
        "UnicodeDecodeError: 'utf-8' codec can't decode byte 0xff in position 0: invalid start byte"
    )
    lines = [
        "(APIServer pid=1) ERROR 12-07 00:21:55 [repo_utils.py:124] Error parsing config for "
        "/t: Unrecognized model in /t. Should have a `model_type` key in its config.json.",
        "Traceback (most recent call last):",
        '  File "/venv/vllm/tokenizers/registry.py", line 5, in get_tokenizer',
        "    tokenizer = AutoTokenizer.from_pretrained(tokenizer_name)",
        '  File "/venv/transformers/tokenization_utils_fast.py", line 9, in __init__',
        "    fast_tokenizer = TokenizerFast.from_file(fast_tokenizer_file)",
        decode,
    ]
    verdict = gate(tmp_path, "vllm", lines)
    assert (verdict.kind, verdict.matched_line) == ("model-load", decode)


def test_a_lora_adapter_that_does_not_fit_and_a_template_that_is_none(tmp_path: Path) -> None:
    """A NotImplementedError in SGLang's LoRA code while the memory pool is sized (a GPT-2
    adapter on a Llama) is the adapter's (bad-args), not memory; a chat template given as
    a URL ("is not a built-in template name or a valid chat template file path") is
    bad-args, not a download."""
    lora = "NotImplementedError: get_hidden_dim not implemented for c_proj"
    lines = [
        "Traceback (most recent call last):",
        '  File "/venv/sglang/srt/mem_cache/memory_pool.py", line 9, in init_memory_pool',
        "    self.lora_manager = LoRAManager(...)",
        '  File "/venv/sglang/srt/lora/mem_pool.py", line 438, in get_lora_A_shape',
        "    input_dim, _ = get_hidden_dim(",
        '  File "/venv/sglang/srt/lora/utils.py", line 274, in get_default_hidden_dim',
        '    raise NotImplementedError("get_hidden_dim not implemented for " + module_name)',
        lora,
    ]
    verdict = gate(tmp_path, "sglang", lines)
    assert (verdict.kind, verdict.matched_line) == ("bad-args", lora)
    url = (
        "RuntimeError: Chat template https://example.com/chat_template.jinja is not a built-in "
        "template name or a valid chat template file path."
    )
    case = tmp_path / "url"
    case.mkdir()
    verdict = gate(case, "sglang", ["Traceback (most recent call last):", url])
    assert (verdict.kind, verdict.matched_line) == ("bad-args", url)


def test_a_config_that_is_not_utf8_and_an_archive_given_for_the_folder(tmp_path: Path) -> None:
    """A config.json saved in Latin-1: the codec's UnicodeDecodeError at the chain's root
    says what is wrong in the file, where the re-raise says only "not a valid JSON file"
    (model-load either way); an archive given for the model's folder is what the
    re-raise names, and it stays quoted."""
    decode = (
        "UnicodeDecodeError: 'utf-8' codec can't decode byte 0xf6 in position 29: "
        "invalid start byte"
    )

    def chain(path: str) -> list[str]:
        return [
            "Traceback (most recent call last):",
            '  File "/venv/transformers/configuration_utils.py", line 718, in _get_config_dict',
            "    config_dict = cls._dict_from_json_file(resolved_config_file)",
            decode,
            "",
            "During handling of the above exception, another exception occurred:",
            "",
            "Traceback (most recent call last):",
            '  File "/venv/transformers/configuration_utils.py", line 721, in _get_config_dict',
            "    raise OSError(",
            f"OSError: It looks like the config file at '{path}' is not a valid JSON file.",
        ]

    verdict = gate(tmp_path, "vllm", chain("/m/config.json"))
    assert (verdict.kind, verdict.matched_line) == ("model-load", decode)
    case = tmp_path / "archive"
    case.mkdir()
    lines = chain("/m/model.tar.gz")
    verdict = gate(case, "vllm", lines)
    assert (verdict.kind, verdict.matched_line) == ("model-load", lines[-1])


def test_the_grammar_parsers_own_words_and_a_gguf_keys_type(tmp_path: Path) -> None:
    """llama-server's grammar that does not parse: the parser's "error parsing grammar:
    expecting name at {" above the caller's "failed to parse grammar" and the abort is
    quoted; a GGUF key of the wrong type ("must be of type u32 but is u64") is the root
    of llama.cpp's "error loading model" (model-load)."""
    parsed = "parse: error parsing grammar: expecting name at {"
    lines = [
        parsed,
        "0.02.608.575 E failed to parse grammar",
        "terminate called after throwing an instance of 'std::runtime_error'",
        "  what():  failed to parse grammar",
    ]
    verdict = gate(tmp_path, "llamacpp", lines, exit=-6)
    assert verdict.matched_line == parsed
    key = "gguf_init_from_reader: key 'general.alignment' must be of type u32 but is u64"
    lines = [
        key,
        "llama_model_load: error loading model: llama_model_loader: failed to load model "
        "from /m.gguf",
        "llama_model_load_from_file_impl: failed to load model",
    ]
    case = tmp_path / "key"
    case.mkdir()
    verdict = gate(case, "llamacpp", lines)
    assert (verdict.kind, verdict.matched_line) == ("model-load", key)


def test_a_file_grown_past_the_size_limit_is_disk(tmp_path: Path) -> None:
    """Under `ulimit -f`, vLLM's shared memory write fails with "[Errno 27] File too
    large", and a KeyError of the shared memory's name follows: disk, the first quoted."""
    core = "(EngineCore pid=16709) ERROR 12-07 03:54:42 [core.py:1510] "
    large = f"{core}OSError: [Errno 27] File too large"
    lines = [
        f"{core}Traceback (most recent call last):",
        f'{core}  File "/usr/lib/python3.11/multiprocessing/shared_memory.py", line 116, in '
        "__init__",
        f"{core}    os.ftruncate(self._fd, size)",
        large,
        "Traceback (most recent call last):",
        '  File "/usr/lib/python3.11/multiprocessing/resource_tracker.py", line 239, in main',
        "    cache[rtype].remove(name)",
        "KeyError: '/psm_13747d99'",
    ]
    verdict = gate(tmp_path, "vllm", lines)
    assert (verdict.kind, verdict.matched_line) == ("disk", large)


@pytest.mark.parametrize(
    ("engine", "line", "kind"),
    [
        ("vllm", "ValueError: vLLM does not yet support DoRA.", "unsupported-model"),
        (
            "sglang",
            "RuntimeError: Failed to load LoRA adapter chat: Failed to load chat because LoRA "
            "serving currently doesn't support DoRA adapters",
            "unsupported-model",
        ),
        ("sglang", "OSError: 47232 requested and 42976 written", "disk"),
        (
            "vllm",
            "ValueError: vLLM only supports modules_to_save being either None or a list "
            "containing lm_head and embed_tokens",
            "unsupported-model",
        ),
        ("vllm", "ValueError: /adapters/sql-lora doesn't contain tensors", "model-load"),
        ("vllm", "OSError: AF_UNIX path too long", "bad-args"),
        (
            "sglang",
            "RuntimeError: ('Using FP8 KV cache and scaling factors provided but model %s does "
            "not support loading scaling factors.', <class 'TransformersForCausalLM'>)",
            "bad-args",
        ),
        (
            "llamacpp",
            'OSError: [Errno 30] Cache directory ".cache/llama_cache" does not exist and could '
            "not be created",
            "disk",
        ),
        (
            "llamacpp",
            "0.00.376.205 E llama_prepare_model_devices: LLAMA_SPLIT_MODE_TENSOR needs >= 1 "
            "devices",
            "bad-args",
        ),
        ("sglang", "IndexError: index out of range in self", "model-load"),
        (
            "vllm",
            "ValueError: The hidden size (128) is not a multiple of the number of attention "
            "heads (3).",
            "model-load",
        ),
        (
            "llamacpp",
            "0.00.005.567 E srv          init: --port 0 is not supported with multiple TCP "
            "addresses",
            "bad-args",
        ),
    ],
)
def test_an_adapter_method_and_values_an_engine_takes_only_otherwise(
    tmp_path: Path, engine: str, line: str, kind: str
) -> None:
    """A DoRA adapter and one that trains whole modules (methods vLLM and SGLang lack:
    unsupported-model); an adapter folder without tensors (model-load); a unix socket's
    path too long, llama-server's `--port 0` with several addresses, a split mode that
    needs devices the build lacks and KV scales the model's back end cannot load
    (bad-args); numpy's short write to a
    full disk and a read-only folder's `[Errno 30]` (disk); torch's embedding given a
    token id past its rows, a tokenizer larger than the model, and a config.json whose
    sizes do not fit each other (model-load)."""
    verdict = gate(tmp_path, engine, [line])
    assert (verdict.kind, verdict.matched_line) == (kind, line)


def test_a_line_that_ends_with_a_colon_and_its_detail_below(tmp_path: Path) -> None:
    """llama-server's `-jf` whose schema uses `#/definitions/`: "JSON schema conversion
    failed:" announces the detail on the next line, which is quoted."""
    detail = (
        "JSON schema error at #: cannot resolve $ref #/definitions/Answer, definitions not found"
    )
    lines = [
        'error while handling argument "-jf": JSON schema conversion failed:',
        detail,
        "",
        "usage:",
        "-jf,   --json-schema-file FILE          File containing a JSON schema",
    ]
    verdict = gate(tmp_path, "llamacpp", lines)
    assert (verdict.kind, verdict.matched_line) == ("bad-args", detail)


@pytest.mark.parametrize(
    ("engine", "line", "kind"),
    [
        (
            "vllm",
            "RuntimeError: Insufficient space in /dev/shm for shared-memory allocation: "
            "160 MiB required, 0 MiB free. Increase /dev/shm (e.g. --shm-size or --ipc=host).",
            "disk",
        ),
        (
            "vllm",
            "ValueError: Missing required configuration fields: {'r', 'lora_alpha'}",
            "model-load",
        ),
        (
            "vllm",
            "ValueError: base_model.model.model.layers.0.self_attn.q_proj.lora_A.default.weight "
            "is unsupported LoRA weight",
            "model-load",
        ),
        (
            "sglang",
            "RuntimeError: Failed to load LoRA adapter chat: 'target_modules'",
            "model-load",
        ),
    ],
)
def test_a_small_shared_memory_and_an_adapters_own_files(
    tmp_path: Path, engine: str, line: str, kind: str
) -> None:
    """A container's small /dev/shm (disk, the hint naming --shm-size); a LoRA adapter
    whose config lacks LoRA's keys or whose weights have names no LoRA layer has: the
    adapter's files (model-load, the hint naming adapter_config.json)."""
    verdict = gate(tmp_path, engine, [line])
    assert (verdict.kind, verdict.matched_line) == (kind, line)
    assert ("--shm-size" if kind == "disk" else "adapter_config.json") in (verdict.hint or "")


def test_a_compiler_driver_without_its_compiler(tmp_path: Path) -> None:
    """g++ with no cc1plus under a cut PATH: its "fatal error: cannot execute" line is
    the cause, not the "compilation terminated." after it."""
    fatal = "g++: fatal error: cannot execute ‘cc1plus’: execvp: No such file or directory"
    lines = [
        "torch._inductor.exc.InductorError: CppCompileError: C++ compile error",
        "",
        "Command:",
        "g++ /tmp/torchinductor_root/x.cpp -shared -fPIC -o /tmp/x.so",
        "",
        "Output:",
        fatal,
        "compilation terminated.",
    ]
    verdict = gate(tmp_path, "vllm", lines)
    assert (verdict.kind, verdict.matched_line) == ("install", fatal)


def test_a_scratch_file_named_like_a_package(tmp_path: Path) -> None:
    """A `numpy.py` of the working folder imported where llama_cpp imports numpy: the
    file's own failure ends the process; the kind is install and the hint names the
    file. The same frames inside site-packages are numpy's own (no such reading)."""

    def lines(where: str) -> list[str]:
        return [
            "Traceback (most recent call last):",
            '  File "/venv/lib/python3.11/site-packages/llama_cpp/llama_chat_format.py", '
            "line 29, in <module>",
            "    import numpy as np",
            f'  File "{where}/numpy.py", line 3, in <module>',
            "    data = json.load(open(sys.argv[1]))",
            "FileNotFoundError: [Errno 2] No such file or directory: '--model'",
        ]

    verdict = gate(tmp_path, "llamacpp", lines("/home/me/work"))
    assert verdict.kind == "install"
    assert "/home/me/work/numpy.py" in (verdict.hint or "")
    own = gate(tmp_path, "llamacpp", lines("/venv/lib/python3.11/site-packages/numpy"))
    assert "numpy.py" not in (own.hint or "")


def test_uvicorn_asked_for_workers_by_the_environment(tmp_path: Path) -> None:
    """`WEB_CONCURRENCY=4` left by a platform: uvicorn wants an import string for
    workers, logs it as a WARNING and exits 3; that line is the cause (bad-args), the
    hint naming the variable."""
    line = (
        "WARNING:  You must pass the application as an import string to enable 'reload' "
        "or 'workers'."
    )
    lines = ["Using fallback chat format: llama-2", line]
    verdict = gate(tmp_path, "llamacpp", lines, exit=3)
    assert (verdict.kind, verdict.matched_line) == ("bad-args", line)
    assert "WEB_CONCURRENCY" in (verdict.hint or "")


def test_a_missing_module_quoted_from_the_engines_re_raise(tmp_path: Path) -> None:
    """llama-cpp-python's `from_pretrained` without huggingface_hub: its re-raise that
    says how to install it (spelling the package with a dash) is quoted."""
    reraise = (
        "ImportError: Llama.from_pretrained requires the huggingface-hub package. You can "
        "install it with `pip install huggingface-hub`."
    )
    lines = [
        "Traceback (most recent call last):",
        '  File "/venv/llama_cpp/llama.py", line 2306, in from_pretrained',
        "    from huggingface_hub import hf_hub_download, HfFileSystem",
        "ModuleNotFoundError: No module named 'huggingface_hub'",
        "",
        "During handling of the above exception, another exception occurred:",
        "",
        "Traceback (most recent call last):",
        '  File "/venv/llama_cpp/llama.py", line 2309, in from_pretrained',
        "    raise ImportError(",
        reraise,
    ]
    verdict = gate(tmp_path, "llamacpp", lines)
    assert (verdict.kind, verdict.matched_line) == ("install", reraise)


def test_a_grammar_without_its_root_rule(tmp_path: Path) -> None:
    """llama-server's `--grammar-file` with no `root`: the parser's own line is quoted
    over the `what(): failed to parse grammar` of the abort."""
    said = "0.01.306.712 E grammar does not contain a 'root' symbol"
    lines = [
        "0.00.014.084 I srv    load_model: loading model '/m/g.gguf'",
        said,
        "terminate called after throwing an instance of 'std::runtime_error'",
        "  what():  failed to parse grammar",
    ]
    verdict = gate(tmp_path, "llamacpp", lines, exit=-6)
    assert (verdict.kind, verdict.matched_line) == ("bad-args", said)


def test_a_child_killed_is_quoted_over_the_parents_sigquit(tmp_path: Path) -> None:
    """SGLang's scheduler killed (-9, a CPU-time limit here) with nothing else in the
    log: the line naming the child and its exit code is quoted, not the parent's
    `Received sigquit` after it."""
    crashed = (
        "[2026-12-07 09:38:39] Subprocess scheduler_0 (pid=30863) crashed with exit code -9. "
        "Triggering SIGQUIT for cleanup..."
    )
    lines = [
        "[2026-12-07 09:38:26] server_args=ServerArgs(model_path='/m')",
        crashed,
        "[2026-12-07 09:38:39] Received sigquit from a child process. It usually means the "
        "child failed.",
    ]
    verdict = gate(tmp_path, "sglang", lines, exit=-9)
    assert verdict.matched_line == crashed


def test_an_empty_message_is_not_detailed_by_the_wrappers_line_below(tmp_path: Path) -> None:
    """`RuntimeError: Failed to load LoRA adapter chat: ` (a reason that is empty) ends
    with a colon; the line below it is SGLang's own "Received sigquit ... the child
    failed", a wrapper's report, not the detail: the exception's line is quoted."""
    error = "RuntimeError: Failed to load LoRA adapter chat:"
    lines = [
        "[2026-12-07 09:57:50] server_args=ServerArgs(model_path='/m')",
        "[2026-12-07 09:57:53] Scheduler hit an exception: Traceback (most recent call last):",
        '  File "/venv/sglang/srt/lora/lora_manager.py", line 760, in init_lora_adapters',
        "    raise RuntimeError(",
        error + " ",
        "",
        "[2026-12-07 09:57:53] Received sigquit from a child process. It usually means the "
        "child failed.",
    ]
    verdict = gate(tmp_path, "sglang", lines, exit=-9)
    assert (verdict.matched_line or "").strip() == error


def test_a_lora_method_the_engine_does_not_serve(tmp_path: Path) -> None:
    """ "vLLM does not support LoRA bias (lora_bias).": the adapter's method
    (unsupported-model, the hint about the adapter, not the model's architecture)."""
    line = "ValueError: vLLM does not support LoRA bias (lora_bias)."
    verdict = gate(tmp_path, "vllm", [line])
    assert (verdict.kind, verdict.matched_line) == ("unsupported-model", line)
    assert "LoRA adapter" in (verdict.hint or "")
