"""llama.cpp, TGI and TensorRT-LLM profiles: causes, kinds and hints on their own wording.

The real logs these rules were fitted to are replayed in tests/gate/test_crash_logs.py;
here each rule's intent is pinned on single lines and on live processes that end as
the engines do (an uncaught C++ exception, an abort).
"""

from __future__ import annotations

import signal
import sys
from pathlib import Path

import pytest

from servegate.campaign.crash import classify
from servegate.engines import get_profile
from servegate.errors import ServerCrashed
from servegate.gate.scan import MIN_ANCHOR, required_literal
from servegate.gate.watch import LineHit, LogWatcher, Rules
from servegate.launch import launch

NATIVE = ("llamacpp", "tgi", "trtllm")


def fatal_hits(engine: str, text: str) -> list[LineHit]:
    """The fatal lines ``engine``'s rules find in ``text``, in order."""
    watcher = LogWatcher(Rules(get_profile(engine)))
    found = watcher.feed(text.encode(), 1.0) + watcher.finish(2.0)
    return [hit for hit in found if hit.what == "fatal"]


def aborting_server(text: str) -> list[str]:
    """A live process that prints ``text`` and then aborts (SIGABRT), as C++ servers do."""
    code = f"import os, sys; sys.stdout.write({text!r}); sys.stdout.flush(); os.abort()"
    return [sys.executable, "-c", code]


@pytest.mark.parametrize("engine", NATIVE)
def test_every_signature_has_a_fast_anchor(engine: str) -> None:
    """Each fatal pattern holds a literal of 7+ bytes, so lines are classified in order."""
    for signature in get_profile(engine).fatal:
        literal = required_literal(signature.pattern)
        assert literal is not None and len(literal.encode()) >= MIN_ANCHOR, signature.pattern


@pytest.mark.parametrize(
    ("engine", "line", "words"),
    [
        (
            "llamacpp",
            "ggml_backend_cuda_buffer_type_alloc_buffer: allocating 144817.04 MiB on device 0: "
            "cudaMalloc failed: out of memory",
            ("-ngl", "-c", "-b"),
        ),
        ("llamacpp", "torch.OutOfMemoryError: CUDA out of memory.", ("-ngl", "-c", "-b")),
        (
            "tgi",
            "RuntimeError: Not enough memory to handle 4096 prefill tokens. You need to "
            "decrease `--max-batch-prefill-tokens`",
            ("--max-batch-prefill-tokens", "--cuda-memory-fraction"),
        ),
        (
            "tgi",
            "torch.cuda.OutOfMemoryError: CUDA out of memory. Tried to allocate 128.00 MiB",
            ("--max-batch-prefill-tokens", "--cuda-memory-fraction"),
        ),
        (
            "trtllm",
            "RuntimeError: Executor creation failed due to insufficient GPU memory.",
            ("--kv_cache_free_gpu_memory_fraction", "--max_batch_size", "--max_num_tokens"),
        ),
        (
            "trtllm",
            "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 40.00 MiB.",
            ("--kv_cache_free_gpu_memory_fraction", "--max_batch_size", "--max_num_tokens"),
        ),
    ],
)
def test_oom_hint_names_the_engines_own_knobs(engine: str, line: str, words: tuple[str]) -> None:
    """An out-of-memory line gets the hint with the flags of the engine that printed it."""
    hits = fatal_hits(engine, line + "\n")
    assert [hit.signature.kind for hit in hits if hit.signature] == ["oom"]
    hint = hits[0].signature.hint if hits[0].signature else ""
    for word in words:
        assert word in hint, (word, hint)
    for other in ("--mem-fraction-static", "--gpu-memory-utilization"):
        assert other not in hint


@pytest.mark.parametrize(
    ("engine", "line"),
    [
        # pinned host memory is optional: llama.cpp falls back to pageable memory
        (
            "llamacpp",
            "ggml_cuda_host_malloc: failed to allocate 1900,00 MiB of pinned memory: "
            "invalid argument",
        ),
        # the source line of a traceback frame, not the exception
        ("tgi", '    raise ValueError(f"Unsupported model type {model_type}")'),
        ("trtllm", '    raise ValueError(f"Unknown architecture for AutoModelForCausalLM: {a}")'),
    ],
)
def test_lines_that_only_look_fatal(engine: str, line: str) -> None:
    """Advice, a fallback warning or a traceback's source line never decides a crash."""
    decisive = [
        h for h in fatal_hits(engine, line + "\n") if h.signature and not h.signature.wrapper
    ]
    assert decisive == []


def test_llama_cpp_vram_advice_is_not_an_oom_report() -> None:
    """The advice llama.cpp prints after any load failure says model-load, not oom."""
    line = (
        "common_init_from_params: failed to load model 'm.gguf', try reducing "
        "--n-gpu-layers if you're running out of VRAM"
    )
    kinds = [hit.signature.kind for hit in fatal_hits("llamacpp", line + "\n") if hit.signature]
    assert kinds == ["model-load"]


@pytest.mark.parametrize(
    "text",
    [
        "llama_model_load: error loading model: error loading model hyperparameters: "
        "key not found in model: gemma3.attention.layer_norm_rms_epsilon\n"
        "llama_model_load_from_file_impl: failed to load model\n"
        "srv    load_model: failed to load model, 'gemma3_27b.gguf'\n"
        "main: exiting due to model loading error\n",
        # a Git LFS pointer instead of the GGUF: the loader's summary line comes after
        "gguf_init_from_file: invalid magic characters 'vers'\n"
        "llama_model_load: error loading model: llama_model_loader: failed to load model "
        "from models/m.gguf\n"
        "llama_load_model_from_file: failed to load model\n"
        "main: error: unable to load model\n",
    ],
)
def test_llama_cpp_first_fatal_line_is_the_cause(text: str) -> None:
    """llama.cpp prints the cause before its callers' generic lines: the first one decides."""
    hits = fatal_hits("llamacpp", text)
    assert [hit.line for hit in hits] == text.splitlines()
    assert hits[0].signature is not None and not hits[0].signature.wrapper
    assert hits[0].signature.kind == "model-load"


def test_sigabrt_is_the_server_aborting_itself(port: int) -> None:
    """A process that dies by SIGABRT aborted itself: kind abort, not a signal from outside."""
    with pytest.raises(ServerCrashed) as info:
        launch(aborting_server("loading the model\n"), engine="llamacpp", port=port, timeout_s=60)
    verdict = info.value.verdict
    assert (verdict.kind, verdict.exit_code) == ("abort", -int(signal.SIGABRT))
    assert "SIGABRT" in verdict.reason
    assert verdict.hint is not None and "who stops it" not in verdict.hint


def test_uncaught_exception_quotes_its_what_line(port: int) -> None:
    """llama-server aborting on 'unknown model architecture' is that cause, quoted."""
    text = (
        "terminate called after throwing an instance of 'std::runtime_error'\n"
        "  what():  unknown model architecture: 'gemma4'\n"
    )
    with pytest.raises(ServerCrashed) as info:
        launch(aborting_server(text), engine="llamacpp", port=port, timeout_s=60)
    verdict = info.value.verdict
    assert verdict.kind == "unsupported-model"
    assert verdict.matched_line == "what():  unknown model architecture: 'gemma4'"
    assert verdict.hint is not None and "update llama.cpp" in verdict.hint


def test_trtllm_rank_abort_names_its_mpi_failure(port: int) -> None:
    """A TensorRT-LLM rank aborting on a failed MPI call is an mpi crash, what() quoted."""
    what = "what():  [TensorRT-LLM][ERROR] Assertion failed: Failed: MPI error mpiUtils.cpp:211"
    text = f"terminate called after throwing an instance of 'TllmException'\n  {what}\n"
    with pytest.raises(ServerCrashed) as info:
        launch(aborting_server(text), engine="trtllm", port=port, timeout_s=60)
    verdict = info.value.verdict
    assert (verdict.kind, verdict.matched_line) == ("mpi", what)


def test_an_unknown_uncaught_exception_is_still_its_cause(port: int) -> None:
    """A what() line no signature knows is quoted as the cause of an abort."""
    text = (
        "terminate called after throwing an instance of 'std::out_of_range'\n"
        "  what():  _Map_base::at\n"
    )
    with pytest.raises(ServerCrashed) as info:
        launch(aborting_server(text), engine="llamacpp", port=port, timeout_s=60)
    verdict = info.value.verdict
    assert (verdict.kind, verdict.matched_line) == ("abort", "what():  _Map_base::at")


# llama.cpp reserving its compute buffers with pipeline parallelism, failing, and retrying
# without it (llama_context's sched_reserve; the real log is fixture 26297)
_OOM = (
    "ggml_backend_cuda_buffer_type_alloc_buffer: allocating 51748.72 MiB on device 1: "
    "cudaMalloc failed: out of memory\n"
    "ggml_gallocr_reserve_n_impl: failed to allocate CUDA1 buffer of size 54262464512\n"
    "graph_reserve: failed to allocate compute buffers\n"
)
_RETRY = "sched_reserve: compute buffer allocation failed, retrying without pipeline parallelism\n"

# prints its first argument, then (serve) answers /health 200 on the port in argv[3],
# (exit) exits with code 1, or (hang) waits for a signal without printing anything more
_LLAMA_SERVER = """
import http.server, signal, sys
sys.stdout.write(sys.argv[1]); sys.stdout.flush()
if sys.argv[2] == "exit":
    sys.exit(1)
if sys.argv[2] == "hang":
    while True:
        signal.pause()
class Health(http.server.BaseHTTPRequestHandler):
    def do_GET(self):
        self.send_response(200 if self.path == "/health" else 404)
        self.end_headers()
    def log_message(self, *args):
        pass
server = http.server.HTTPServer(("127.0.0.1", int(sys.argv[3])), Health)
print("main: server is listening on http://127.0.0.1:" + sys.argv[3], flush=True)
server.serve_forever()
"""


def llama_server(text: str, end: str, port: int) -> list[str]:
    """A live llama-server stand-in that prints ``text`` and then serves, exits or hangs."""
    return [sys.executable, "-c", _LLAMA_SERVER, text, end, str(port)]


def test_every_withdrawn_by_has_a_fast_anchor() -> None:
    """Each recovery pattern holds a literal of 10+ bytes, for the prefilter's 7-byte keys."""
    patterns = [
        sig.withdrawn_by
        for engine in ("llamacpp", "tgi", "trtllm", "vllm", "sglang", "generic")
        for sig in get_profile(engine).fatal
        if sig.withdrawn_by is not None
    ]
    assert patterns, "no profile has a recovery line"
    for pattern in patterns:
        literal = required_literal(pattern)
        assert literal is not None and len(literal.encode()) >= 10, pattern


def test_llama_cpp_compute_buffer_oom_is_withdrawn_by_its_retry() -> None:
    """The three lines of a failed reservation are withdrawable; the retry line withdraws."""
    watcher = LogWatcher(Rules(get_profile("llamacpp")))
    hits = watcher.feed((_OOM + _RETRY).encode(), 1.0)
    fatal = [hit for hit in hits if hit.what == "fatal"]
    assert [hit.line for hit in fatal] == _OOM.splitlines()
    assert all(hit.signature and hit.signature.withdrawn_by for hit in fatal)
    recover = [hit for hit in hits if hit.what == "recover"]
    assert [hit.line for hit in recover] == _RETRY.splitlines()
    assert all(
        hit.signature is not None and hit.signature.withdrawn_by == recover[0].withdraws
        for hit in fatal
    )


def test_recovered_oom_then_ready_is_ready(port: int) -> None:
    """Out of memory, the retry line, then a working server: READY, not CRASH."""
    text = _OOM + _RETRY + "srv    load_model: initializing, n_slots = 1\n"
    with launch(
        llama_server(text, "serve", port), engine="llamacpp", port=port, timeout_s=60
    ) as server:
        assert server.verdict.status == "ready"


def test_oom_then_exit_is_an_oom_crash(port: int) -> None:
    """Out of memory and the process exits before any retry line: CRASH oom, first line."""
    with pytest.raises(ServerCrashed) as info:
        launch(llama_server(_OOM, "exit", port), engine="llamacpp", port=port, timeout_s=60)
    verdict = info.value.verdict
    assert (verdict.kind, verdict.detected_by) == ("oom", "signature")
    assert verdict.matched_line == _OOM.splitlines()[0]


def test_oom_without_retry_line_is_a_crash_once_the_window_passes(port: int) -> None:
    """Out of memory, no retry line, the process stays: CRASH oom when the hold ends."""
    with pytest.raises(ServerCrashed) as info:
        launch(llama_server(_OOM, "hang", port), engine="llamacpp", port=port, timeout_s=60)
    verdict = info.value.verdict
    assert (verdict.status, verdict.kind, verdict.detected_by) == ("crash", "oom", "signature")
    assert verdict.matched_line == _OOM.splitlines()[0]
    assert verdict.exit_code is None  # decided by the held line, not by an exit


def test_a_failed_retry_is_an_oom_crash(port: int) -> None:
    """The retry fails the same way (same lines, one write) and the server exits: oom."""
    with pytest.raises(ServerCrashed) as info:
        launch(
            llama_server(_OOM + _RETRY + _OOM, "exit", port),
            engine="llamacpp",
            port=port,
            timeout_s=60,
        )
    verdict = info.value.verdict
    assert (verdict.kind, verdict.detected_by) == ("oom", "signature")


def test_a_withdrawn_line_is_not_the_cause_of_a_later_exit(port: int) -> None:
    """Recovered, then the server exits for another reason: the OOM is not quoted."""
    with pytest.raises(ServerCrashed) as info:
        launch(
            llama_server(_OOM + _RETRY, "exit", port), engine="llamacpp", port=port, timeout_s=60
        )
    verdict = info.value.verdict
    assert (verdict.kind, verdict.detected_by, verdict.exit_code) == ("exit", "exit", 1)
    assert verdict.matched_line is None
    assert "out of memory" not in verdict.reason


@pytest.mark.parametrize(
    ("text", "kind"),
    [(_OOM + _RETRY, None), (_OOM, "oom"), (_OOM + _RETRY + _OOM, "oom")],
    ids=["recovered", "not-recovered", "retry-failed"],
)
def test_campaign_classify_skips_a_withdrawn_oom(
    tmp_path: Path, text: str, kind: str | None
) -> None:
    """After READY, a recovered out-of-memory is no cause of death; an unrecovered one is."""
    log = tmp_path / "server.log"
    log.write_text("main: server is listening on http://127.0.0.1:8080\n" + text)
    cause = classify(log, get_profile("llamacpp"))
    assert (cause.kind if cause is not None else None) == kind
    if cause is not None:
        assert cause.matched_line == _OOM.splitlines()[0]


# llama-server's estimate of memory (-fit) loads the model's metadata once before the
# load itself; when it fails, the server says so and loads for real
_FIT = (
    "0.00.305.405 E llama_model_load: error loading model: error loading model "
    "hyperparameters: invalid n_rot: 128, expected 64\n"
    "0.00.305.410 E llama_model_load_from_file_impl: failed to load model\n"
    "0.00.305.431 E common_fit_params: encountered an error while trying to fit params to "
    "free device memory: failed to load model\n"
)
_LOAD = (
    "0.00.321.573 E llama_model_load: error loading model: error loading model "
    "hyperparameters: invalid n_rot: 128, expected 64\n"
    "0.00.321.581 E llama_model_load_from_file_impl: failed to load model\n"
    "0.00.321.586 E srv    load_model: failed to load model, '/m/m.gguf'\n"
)


def test_a_failed_estimate_then_a_working_load_is_ready(port: int) -> None:
    """The estimate's failure, then a load that works: READY, not CRASH."""
    text = _FIT + "0.00.321.600 I srv    load_model: initializing, n_slots = 1\n"
    with launch(
        llama_server(text, "serve", port), engine="llamacpp", port=port, timeout_s=60
    ) as server:
        assert server.verdict.status == "ready"


def test_a_failed_estimate_then_a_failed_load_quotes_the_load(port: int) -> None:
    """The estimate fails, then the load fails the same way and the server exits: the
    load's line, the one that ended the start, is quoted."""
    with pytest.raises(ServerCrashed) as info:
        launch(llama_server(_FIT + _LOAD, "exit", port), engine="llamacpp", port=port)
    verdict = info.value.verdict
    assert (verdict.kind, verdict.detected_by) == ("model-load", "signature")
    assert verdict.matched_line == _LOAD.splitlines()[0]
