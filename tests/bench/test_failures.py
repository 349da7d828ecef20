"""Failures are counted by kind, never raised mid-run, and never lose measured samples."""

from __future__ import annotations

from collections.abc import Callable

import pytest
from tests.conftest import free_port

from servegate.bench import BenchSettings, run_point
from servegate.errors import BenchError

# The probe request is the server's request 1; measured requests are 2..21.
MEASURED = range(2, 22)


@pytest.mark.parametrize(
    ("flag", "kind"),
    [
        ("--fail-every", "http_500"),
        ("--malformed-every", "malformed_stream"),
        ("--reset-every", "connection_reset"),
        ("--error-event-every", "stream_error"),
    ],
)
def test_failure_kinds_are_counted(sse_server: Callable[..., str], flag: str, kind: str) -> None:
    """Every 4th request failing one way shows up as exactly that many failures of its kind."""
    url = sse_server(flag, "4")
    result = run_point(
        BenchSettings(url=url, concurrency=1, requests=20, input_len=5, output_len=5)
    )
    expected = sum(1 for n in MEASURED if n % 4 == 0)
    assert result.failures == {kind: expected}
    assert (result.completed, result.failed) == (20 - expected, expected)
    assert len(result.samples) == 20
    assert result.failure_details[kind]


def test_hanging_request_times_out(sse_server: Callable[..., str]) -> None:
    """A stream that stops sending is cut at --timeout and counted as a timeout."""
    url = sse_server("--hang-every", "3", "--ttft-ms", "1", "--itl-ms", "1")
    result = run_point(
        BenchSettings(url=url, concurrency=2, requests=6, input_len=5, output_len=5, timeout_s=0.5)
    )
    assert result.failures == {"timeout": 2}  # requests 3 and 6
    assert result.completed == 4
    timed_out = [s for s in result.samples if s.error == "timeout"]
    assert all(0.5 <= s.end_s <= 5.0 for s in timed_out)  # cut at the timeout, not before
    assert all(len(s.chunks_s) == 2 for s in timed_out)  # what came before the hang is kept


def test_server_dying_mid_run_keeps_what_was_measured(sse_server: Callable[..., str]) -> None:
    """When the server exits mid-run, earlier samples stay, the failures are counted by
    kind, and the point ends there instead of failing every request left."""
    url = sse_server("--die-after", "102", "--ttft-ms", "1", "--itl-ms", "1")
    result = run_point(
        BenchSettings(url=url, concurrency=2, requests=400, input_len=5, output_len=10)
    )
    assert 8 <= result.completed <= 11
    assert set(result.failures) <= {"connection_reset", "connect_error"}
    assert result.failed >= 2  # the two in flight when it died, then the probes
    assert len(result.samples) < 100
    assert result.server_gone_s is not None
    assert result.summary["output_throughput"] > 0


def test_unreachable_url_is_one_sentence() -> None:
    """Nothing listening: BenchError naming --url, before any load is sent."""
    with pytest.raises(BenchError, match=r"cannot reach .*check --url"):
        run_point(BenchSettings(url=f"http://127.0.0.1:{free_port()}", requests=5))


def test_not_openai_server_is_one_sentence(sse_server: Callable[..., str]) -> None:
    """A server without the OpenAI API: BenchError saying so, naming --url."""
    url = sse_server("--not-openai")
    with pytest.raises(BenchError, match=r"does not look OpenAI-compatible.*--url"):
        run_point(BenchSettings(url=url, requests=5))
    with pytest.raises(BenchError, match=r"does not serve the OpenAI completions API"):
        run_point(BenchSettings(url=url, model="m", requests=5))


def test_rejected_ignore_eos_is_retried_without(sse_server: Callable[..., str]) -> None:
    """A server that refuses ignore_eos is benchmarked without it, with a warning."""
    url = sse_server("--reject-ignore-eos")
    result = run_point(BenchSettings(url=url, concurrency=2, requests=4, input_len=5, output_len=3))
    assert result.completed == 4
    assert any("rejected ignore_eos" in w for w in result.warnings)


def test_an_endless_sse_line_fails_its_request_at_once(sse_server: Callable[..., str]) -> None:
    """A stream that sends one 20 MiB line and never ends it: that request is a
    bad_response once the line passes 16 MiB, not a wait for --timeout while the line
    grows in memory; the other requests complete."""
    url = sse_server("--huge-line-every", "4")
    result = run_point(
        BenchSettings(url=url, concurrency=4, requests=8, input_len=5, output_len=5, timeout_s=600)
    )
    expected = sum(1 for n in range(2, 10) if n % 4 == 0)
    assert {"bad_response": expected} == result.failures
    assert "passed 16 MiB without ending" in result.failure_details["bad_response"]
    assert result.completed == 8 - expected
