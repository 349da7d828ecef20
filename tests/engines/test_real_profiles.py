"""Profile rules that real engines' logs call for, checked against the logs themselves.

Each line comes from tests/fixtures/real_logs (what llama-cpp-python 0.3.36, llama.cpp's
llama-server and vLLM 0.32 really printed), so a rule that drifts from the engines'
wording fails here, not in a campaign.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from servegate.engines import get_profile
from servegate.gate.watch import LineHit, LogWatcher, Rules

LOGS = Path(__file__).resolve().parents[1] / "fixtures" / "real_logs"
BAD_FLAG = "vllm-0.32-cpu-bad-flag.log"


def fixture_line(fixture: str, needle: str) -> str:
    """The first line of a fixture containing ``needle`` (it must be there)."""
    for line in (LOGS / fixture).read_text().splitlines():
        if needle in line:
            return line
    raise AssertionError(f"{needle!r} is not in {fixture}")


def hits(engine: str, text: str) -> tuple[LogWatcher, list[LineHit]]:
    """Feed ``text`` to a watcher with ``engine``'s rules; the decisive lines found."""
    watcher = LogWatcher(Rules(get_profile(engine)))
    found = watcher.feed(text.encode(), 1.0)
    found += watcher.finish(2.0)
    return watcher, found


@pytest.mark.parametrize(
    ("engine", "fixture", "needle", "kind", "wrapper"),
    [
        (
            "llamacpp",
            "llama-cpp-python-0.3.36-bad-model.log",
            "ValueError: Model path does not exist:",
            "model-load",
            False,
        ),
        (
            "llamacpp",
            "llama-server-0.5.0-cuda-bad-model.log",
            "failed to open GGUF file",
            "model-load",
            False,
        ),
        (
            "llamacpp",
            "llama-server-0.5.0-cuda-port-clash.log",
            "couldn't bind HTTP server socket",
            "port-in-use",
            False,
        ),
        (
            "vllm",
            "vllm-0.32-cpu-max-model-len.log",
            "User-specified max_model_len",
            "max-model-len",
            False,
        ),
        ("vllm", BAD_FLAG, "error: unrecognized arguments", "bad-args", False),
        ("sglang", BAD_FLAG, "error: unrecognized arguments", "bad-args", False),
        ("generic", BAD_FLAG, "error: unrecognized arguments", "bad-args", False),
    ],
)
def test_fatal_line_from_a_real_log(
    engine: str, fixture: str, needle: str, kind: str, wrapper: bool
) -> None:
    """The real fatal line is classified with its kind and a one-line hint."""
    line = fixture_line(fixture, needle)
    _, found = hits(engine, line + "\n")
    fatal = [hit for hit in found if hit.what == "fatal"]
    assert len(fatal) == 1, found
    signature = fatal[0].signature
    assert signature is not None
    assert (signature.kind, signature.wrapper) == (kind, wrapper)
    assert signature.hint and "\n" not in signature.hint


def test_argparse_invalid_value_is_bad_args() -> None:
    """argparse's 'invalid int value' sentence is bad-args for every engine."""
    line = "api_server.py: error: argument --port: invalid int value: 'x'"
    for engine in ("vllm", "sglang", "llamacpp", "trtllm", "generic"):
        _, found = hits(engine, line + "\n")
        kinds = [hit.signature.kind for hit in found if hit.signature is not None]
        assert kinds == ["bad-args"], (engine, found)


def test_the_raise_line_of_a_traceback_is_not_fatal() -> None:
    """Only the exception line matches, not the source line that raises it."""
    line = fixture_line("llama-cpp-python-0.3.36-bad-model.log", "raise ValueError")
    assert hits("llamacpp", line + "\n")[1] == []


@pytest.mark.parametrize(
    ("engine", "fixture", "needle"),
    [
        ("llamacpp", "llama-cpp-python-0.3.36-ready.log", "Uvicorn running on http"),
        ("vllm", "vllm-0.32-cpu-ready-and-stop.log", "Starting vLLM server on http"),
    ],
)
def test_ready_line_from_a_real_log(engine: str, fixture: str, needle: str) -> None:
    """The real ready line is a ready line of the profile."""
    _, found = hits(engine, fixture_line(fixture, needle) + "\n")
    assert [hit.what for hit in found] == ["ready"]


def test_llama_cpp_python_port_clash_never_reads_ready() -> None:
    """'Application startup complete' precedes a failed bind: the verdict is the bind error."""
    text = (LOGS / "llama-cpp-python-0.3.36-port-clash.log").read_text()
    watcher, found = hits("llamacpp", text)
    assert watcher.ready_line is None
    assert [hit.signature.kind for hit in found if hit.signature] == ["port-in-use"]


def test_vllm_cpu_phases_are_named() -> None:
    """vLLM 0.32 on CPU: compile warmup, KV cache sizing, API server, uvicorn, in order."""
    watcher = LogWatcher(Rules(get_profile("vllm")))
    text = (LOGS / "vllm-0.32-cpu-ready-and-stop.log").read_text()
    for index, line in enumerate(text.splitlines(keepends=True)):
        watcher.feed(line.encode(), float(index))
        if "Application startup complete" in line:
            break
    spans = {span.name: span for span in watcher.phases.spans()}
    order = ["load_weights", "warmup_compile", "profile_kv_cache", "api_server", "http_startup"]
    assert [name for name in spans if name in order] == order
    for name in order:
        assert spans[name].end_s is not None, spans[name]
    warmup = spans["warmup_compile"]
    assert warmup.end_s is not None
    assert warmup.start_s < warmup.end_s <= spans["profile_kv_cache"].start_s


def test_vllm_essential_children_are_engine_core_and_workers() -> None:
    """vLLM's profile names the engine core and its workers as essential children."""
    patterns = get_profile("vllm").essential_children
    assert any("VLLM::EngineCore" in p for p in patterns)
    assert any("VLLM::Worker" in p for p in patterns)
