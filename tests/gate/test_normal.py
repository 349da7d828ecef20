"""A log line read behind its wrappers: the message, its level, lines joined into one."""

from __future__ import annotations

import json

import pytest

from servegate.gate.cause import is_source_line
from servegate.gate.normal import logical_lines, normalise


@pytest.mark.parametrize(
    ("line", "level", "text"),
    [
        # Python logging: vLLM's header behind its process tag, the default format,
        # basicConfig's, uvicorn's, loguru's
        (
            "(EngineCore_DP0 pid=7) ERROR 12-04 10:00:00 [core.py:700] ValueError: bad",
            "error",
            "ValueError: bad",
        ),
        ("2026-12-04 10:00:00,123 - vllm.engine - ERROR - boom", "error", "boom"),
        ("ERROR:root:boom", "error", "boom"),
        (
            "ERROR:    [Errno 98] error while attempting to bind",
            "error",
            "[Errno 98] error while attempting to bind",
        ),
        ("2026-12-04 10:00:00.123 | ERROR    | app.main:run:12 - boom", "error", "boom"),
        # glog (tritonserver), torch's c10 logging behind [rank0]:, gRPC's padded message
        (
            "E1204 10:00:01.123456 1 model_lifecycle.cc:638] failed to load 'm' version 1: x",
            "error",
            "failed to load 'm' version 1: x",
        ),
        (
            "[rank0]:[W1204 10:00:00.123 12 ProcessGroupNCCL.cpp:4561] Warning: x",
            "warning",
            "Warning: x",
        ),
        (
            "E0109 19:34:35.165873190   11729 chttp2_server.cc:1080]      UNKNOWN:No address",
            "error",
            "UNKNOWN:No address",
        ),
        # Rust tracing (TGI) with spans and a target, its fields after the message
        (
            "2026-12-04T10:00:00.123456Z ERROR shard-manager: text_generation_launcher: "
            "Shard process was signaled to shutdown with signal 9 rank=0",
            "error",
            "Shard process was signaled to shutdown with signal 9",
        ),
        (
            "2026-12-04T10:00:00.1Z ERROR warmup{max_input_length=1024}:warmup: "
            "text_generation_client: router/client/src/lib.rs:33: Server error: boom",
            "error",
            "Server error: boom",
        ),
        # env_logger, llama.cpp's --log-prefix, TensorRT-LLM's Python and C++ loggers
        ("[2026-12-04T10:00:00Z ERROR my_server::main] boom", "error", "boom"),
        (
            "0.01.234.567 E llama_model_load: error loading model",
            "error",
            "llama_model_load: error loading model",
        ),
        (
            "[12/04/2026-10:00:00] [TRT-LLM] [E] Failed to initialize executor",
            "error",
            "Failed to initialize executor",
        ),
        ("[TensorRT-LLM][ERROR] Assertion failed: x", "error", "Assertion failed: x"),
        # wrappers that carry no level: compose, kubectl, journald, a CRI stamp, a tab
        ("vllm-1  | INFO 12-04 10:00:00 [api.py:1] hello", "info", "hello"),
        ("tgi    | Error: ShardCannotStart", "error", "Error: ShardCannotStart"),
        ("[pod/vllm-0/vllm] ERROR 12-04 10:00:00 [core.py:1] boom", "error", "boom"),
        ("Dec  4 10:00:00 gpu1 vllm[123]: ERROR 12-04 10:00:00 [x.py:1] boom", "error", "boom"),
        ("2026-12-04T10:00:00.123456789Z stderr F RuntimeError: x", None, "RuntimeError: x"),
        (
            "\tRuntimeError: CUDA error: an illegal memory access",
            None,
            "RuntimeError: CUDA error: an illegal memory access",
        ),
        # ANSI escapes a log shipper spelled out
        ("#033[2m2026-12-04T10:00:00Z#033[0m #033[31mERROR#033[0m launcher: boom", "error", "boom"),
        # a message that says its own level
        (
            "error: creating server: Internal - failed to load all models",
            "error",
            "error: creating server: Internal - failed to load all models",
        ),
        ("Error: ShardCannotStart", "error", "Error: ShardCannotStart"),
    ],
)
def test_prefixes_come_off_and_the_level_stays(line: str, level: str | None, text: str) -> None:
    """Each logger's and wrapper's header is taken off; the level it said is kept."""
    normal = normalise(line)
    assert (normal.level, normal.text) == (level, text)


def test_json_lines_are_read_as_their_message() -> None:
    """JSON logs (TGI, llama.cpp, docker's json-file) give their message and level."""
    tgi = json.dumps(
        {
            "timestamp": "2026-12-04T10:00:00Z",
            "level": "ERROR",
            "fields": {"message": "Shard 0 failed to start"},
            "target": "text_generation_launcher",
        }
    )
    llama = (
        '{"timestamp":1,"level":"ERROR","function":"load_model","message":"unable to load model"}'
    )
    docker = json.dumps(
        {"log": "ERROR 12-04 10:00:00 [core.py:1] ValueError: x\n", "stream": "stderr"}
    )
    assert (normalise(tgi).level, normalise(tgi).text) == ("error", "Shard 0 failed to start")
    assert (normalise(llama).level, normalise(llama).text) == ("error", "unable to load model")
    assert (normalise(docker).level, normalise(docker).text) == ("error", "ValueError: x")


def test_a_json_line_cut_short_still_gives_its_message() -> None:
    """A JSON line a paste cut in the middle keeps the fields it has."""
    cut = '{"timestamp":"2026","level":"ERROR","message":"Request failed: gone","span":{"na'
    assert (normalise(cut).level, normalise(cut).text) == ("error", "Request failed: gone")


def test_logfmt_gives_the_message_and_its_error() -> None:
    """Go's slog line: msg and error joined, level kept."""
    line = 'time=2026-12-04T10:00:00Z level=ERROR msg="runner died" error="exit status 2"'
    assert (normalise(line).level, normalise(line).text) == ("error", "runner died: exit status 2")


@pytest.mark.parametrize(
    ("line", "source"),
    [
        ('  File "/x/core.py", line 12, in run', True),
        ("    raise RuntimeError(f'NCCL error: {e}')", True),
        ("    ^^^^^^^^^^", True),
        ("\t    engine = Engine(config)", True),  # a launcher's tab before the source line
        ("\tRuntimeError: NCCL error: unhandled system error", False),  # the tab is not a frame's
        ("    RuntimeError: NCCL error: unhandled system error", False),  # an exception line
        ("(EngineCore pid=1) ERROR 12-04 10:00:00 [core.py:1]     x = f()", True),
        ("E0109 19:34:35.1 11 chttp2_server.cc:1080]      UNKNOWN:No address added", False),
    ],
)
def test_source_lines_are_told_by_their_own_indentation(line: str, source: bool) -> None:
    """Indentation counts once the wrappers are off; a tab or glog's padding is not a frame's."""
    assert is_source_line(line) is source


def test_a_line_wrapped_at_a_width_is_joined_without_a_space() -> None:
    """A paste wrapped at 100 columns mid-word: one message, its words whole again."""
    message = (
        "E1204 10:00:01.123456 1 model_lifecycle.cc:638] failed to load 'tensorrt_llm' version "
        "1: Internal: unexpected error when creating modelInstanceState: [TensorRT-LLM][ERROR] "
        "CUDA runtime error in cudaMalloc(&ptr, n): out of memory"
    )
    lines = [message[i : i + 100] for i in range(0, len(message), 100)]
    assert len(lines) == 3 and lines[1][0].islower() and lines[1][-1].isalnum()
    (entry,) = logical_lines([*lines, "I1204 10:00:01.2 1 server.cc:1] next"])[:1]
    assert entry.line == message
    assert "cudaMalloc(&ptr, n): out of memory" in entry.normal.text


def test_a_logger_message_that_goes_on_after_a_line_break_is_joined() -> None:
    """An ERROR message without a header on its second line is one message."""
    lines = [
        "2026-12-04T10:00:00Z ERROR launcher: Error when initializing model",
        "caused by the shard's tokenizer",
        "Traceback (most recent call last):",
    ]
    entries = logical_lines(lines)
    assert entries[0].normal.text == "Error when initializing model caused by the shard's tokenizer"
    assert entries[1].normal.text == "Traceback (most recent call last):"


def test_a_new_style_panic_is_joined_with_its_message() -> None:
    """Rust 1.73+ prints the location, then the message on the next line."""
    lines = [
        "thread 'main' panicked at router/src/main.rs:180:45:",
        "byte index 1000 is not a char boundary",
        "note: run with `RUST_BACKTRACE=1` environment variable to display a backtrace",
    ]
    entries = logical_lines(lines)
    assert entries[0].normal.text.endswith("main.rs:180:45: byte index 1000 is not a char boundary")
    assert len(entries) == 2


def test_the_tritonserver_table_joins_a_status_over_its_rows() -> None:
    """One entry per model; the status cell that spans rows is read whole, as an error."""
    lines = [
        "+--------------+---------+--------------------------------------------------+",
        "| Model        | Version | Status                                           |",
        "+--------------+---------+--------------------------------------------------+",
        "| preprocessing| 1       | READY                                            |",
        "| tensorrt_llm | 1       | UNAVAILABLE: Internal: Assertion failed:         |",
        "|              |         | mpiSize == tp * pp (worldConfig.cpp:80)          |",
        "+--------------+---------+--------------------------------------------------+",
    ]
    ready, failed = logical_lines(lines)
    assert ready.normal.level is None
    assert failed.normal.level == "error"
    assert "Assertion failed: mpiSize == tp * pp" in failed.normal.text
    assert lines[4].strip() in failed.line and lines[5].strip() in failed.line
