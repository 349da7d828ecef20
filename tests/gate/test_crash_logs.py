"""Real engine logs from public issue threads, replayed through the real gate.

Every fixture in tests/fixtures/crash_logs is written by a live process that then exits,
kills itself or stays alive as the engine did; the verdict's status, kind and quoted
cause line must match the fixture's sidecar. The replays run concurrently once per
module (each takes well under a second), and each fixture is checked as its own test.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from tests.gate.crash_replay import (
    SOURCES,
    TIMEOUT_S,
    Fixture,
    Outcome,
    load_fixtures,
    replay_all,
    run_log,
    split_of,
)

from servegate.engines import get_profile
from servegate.gate.scan import required_literal
from servegate.gate.verdict import Verdict

FIXTURES = load_fixtures()


@pytest.fixture(scope="module")
def outcomes() -> dict[str, Outcome]:
    """Every fixture replayed once, by name."""
    return {outcome.fixture.name: outcome for outcome in replay_all(FIXTURES)}


def test_enough_real_logs() -> None:
    """At least 40 real logs, each with its source (an issue thread, a file in a public
    repository, a stored web page, or the command of a real engine's run), split by file
    name."""
    assert len(FIXTURES) >= 40, len(FIXTURES)
    for fixture in FIXTURES:
        assert fixture.source.startswith(SOURCES), fixture.name
        assert fixture.split == split_of(fixture.log.stem), fixture.name


# the first one waits for every real log's replay (the module's fixture): minutes on a busy
# two-core machine
@pytest.mark.timeout(900)
@pytest.mark.parametrize("fixture", FIXTURES, ids=[f.name for f in FIXTURES])
def test_real_log_verdict(fixture: Fixture, outcomes: dict[str, Outcome]) -> None:
    """The gate reaches the sidecar's status, kind and cause line on the real log."""
    outcome = outcomes[fixture.name]
    assert outcome.ok, outcome.describe()


def gate_text(tmp_path: Path, engine: str, text: str, exit: int | None = 1) -> Verdict:
    """The verdict on a live process that prints ``text`` and ends as ``exit`` says."""
    log = tmp_path / "server.log"
    log.write_text(text)
    # a generic server is ready by the user's --ready pattern only
    ready = ("serving on port",) if engine == "generic" else ()
    return run_log(log, engine=engine, exit=exit, ready=ready)


def test_a_bare_exception_line_is_the_cause(tmp_path: Path) -> None:
    """An exception line with no Traceback header before it is quoted as the cause."""
    line = "Exception: chat template not found: llama-3.jinja"
    verdict = gate_text(tmp_path, "generic", f"loading\n{line}\nshutting down\n")
    assert (verdict.status, verdict.detected_by) == ("crash", "exit")
    assert verdict.matched_line == line
    assert f"after {line}" in verdict.reason


def test_a_frame_source_line_is_never_the_cause(tmp_path: Path) -> None:
    """The NCCL signature in a frame's `raise` line waits for the exception line after it."""
    text = (
        '  File "/sglang/pynccl_wrapper.py", line 329, in NCCL_CHECK\n'
        'raise RuntimeError(f"NCCL error: {error_str}")\n'
        "RuntimeError: NCCL error: unhandled system error (run with NCCL_DEBUG=INFO)\n"
    )
    verdict = gate_text(tmp_path, "sglang", text, exit=None)
    assert (verdict.kind, verdict.detected_by) == ("nccl", "signature")
    assert verdict.matched_line == text.splitlines()[2]


def test_the_root_of_a_chained_traceback_is_the_cause(tmp_path: Path) -> None:
    """Of 'X, the direct cause of Y', X is quoted: it says what failed."""
    text = (
        "ValueError: tokenizer.json is not valid JSON\n"
        "\n"
        "The above exception was the direct cause of the following exception:\n"
        "\n"
        "Traceback (most recent call last):\n"
        '  File "server.py", line 9, in <module>\n'
        '    raise RuntimeError("could not start")\n'
        "RuntimeError: could not start\n"
    )
    verdict = gate_text(tmp_path, "generic", text)
    assert verdict.matched_line == "ValueError: tokenizer.json is not valid JSON"


def test_a_wrapper_quotes_the_cause_printed_before_it(tmp_path: Path) -> None:
    """vLLM's 'EngineCore failed to start' quotes the worker's error, and keeps its own
    kind when the error's words name no family."""
    cause = (
        "(EngineCore_DP0 pid=7) ERROR 01-02 12:00:00 [core.py:700] "
        "ValueError: the worker stopped before it said why"
    )
    wrapper = (
        "(EngineCore_DP0 pid=7) ERROR 01-02 12:00:00 [core.py:710] EngineCore failed to start."
    )
    text = f"{cause}\n{wrapper}\n"
    verdict = gate_text(tmp_path, "vllm", text)
    assert verdict.kind == "engine-init"
    assert verdict.matched_line == cause
    assert "the worker stopped" in verdict.reason


def test_a_wrapper_takes_the_kind_its_cause_names(tmp_path: Path) -> None:
    """A wrapper's cause whose words name a family gives the verdict that kind."""
    cause = (
        "(EngineCore_DP0 pid=7) ERROR 01-02 12:00:00 [core.py:700] "
        "ValueError: Unsupported model architecture FooForCausalLM"
    )
    wrapper = (
        "(EngineCore_DP0 pid=7) ERROR 01-02 12:00:00 [core.py:710] EngineCore failed to start."
    )
    verdict = gate_text(tmp_path, "vllm", f"{cause}\n{wrapper}\n")
    assert (verdict.kind, verdict.matched_line) == ("unsupported-model", cause)
    assert verdict.to_json()["family"] == "model"


@pytest.mark.parametrize(
    "line",
    [
        "RuntimeError: [../third_party/gloo/gloo/transport/tcp/pair.cc:534] "
        "Connection closed by peer [10.0.0.2]:43139",
        "torch.distributed.DistStoreError: Timed out after 1801 seconds waiting for clients. "
        "1/3 clients joined.",
        "torch.distributed.DistNetworkError: The client socket has timed out after 600000ms "
        "while trying to connect to (10.0.0.1, 29500).",
    ],
)
def test_distributed_failures_without_nccl_have_a_kind(tmp_path: Path, line: str) -> None:
    """gloo and torch.distributed store failures are kind distributed, not a bare exit."""
    verdict = gate_text(tmp_path, "vllm", line + "\n")
    assert (verdict.kind, verdict.matched_line) == ("distributed", line)


def test_oom_hints_name_each_engines_own_flags(tmp_path: Path) -> None:
    """vLLM's OOM hint names vLLM's flags and SGLang's names SGLang's, never the other's."""
    line = "RuntimeError: CUDA error: out of memory\n"
    vllm = gate_text(tmp_path, "vllm", line)
    sglang = gate_text(tmp_path, "sglang", line)
    assert (vllm.kind, sglang.kind) == ("oom", "oom")
    assert vllm.hint is not None and sglang.hint is not None
    assert "--gpu-memory-utilization" in vllm.hint and "--mem-fraction-static" not in vllm.hint
    assert "--mem-fraction-static" in sglang.hint and "--gpu-memory" not in sglang.hint


@pytest.mark.parametrize("engine", ["vllm", "sglang", "generic"])
def test_every_signature_keeps_the_fast_anchor(engine: str) -> None:
    """Each fatal pattern holds a literal of 10+ bytes: the prefilter's 7-byte keys cover it."""
    for signature in get_profile(engine).fatal:
        literal = required_literal(signature.pattern)
        assert literal is not None and len(literal.encode()) >= 10, signature.pattern


def test_a_replayed_run_that_came_up_answers_the_probe_once_its_log_is_written(
    tmp_path: Path,
) -> None:
    """A server started with a quiet log level prints no ready line: the replay of a run
    that came up answers the gate's probe (READY by the probe), and only once the whole
    log is written; a replay of a run that did not is not answered (TIMEOUT)."""
    log = tmp_path / "server.log"
    log.write_text(
        "(APIServer pid=1) WARNING 12-06 21:40:02 [system_utils.py:255] Found ulimit of "
        "20000 and failed to automatically increase with error current limit exceeds "
        "maximum limit.\n"
    )
    verdict = run_log(log, engine="vllm", exit=None, timeout_s=TIMEOUT_S, answers=True)
    assert (verdict.status, verdict.detected_by) == ("ready", "probe")
    verdict = run_log(log, engine="vllm", exit=None, timeout_s=TIMEOUT_S)
    assert verdict.status == "timeout"
