"""llama.cpp, TGI and TensorRT-LLM profiles: causes, kinds and hints on their own wording.

The real logs these rules were fitted to are replayed in tests/gate/test_crash_logs.py;
here each rule's intent is pinned on single lines and on live processes that end as
the engines do (an uncaught C++ exception, an abort).
"""

from __future__ import annotations

import signal
import sys

import pytest

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
