"""Output tokens: usage first, chunks as the fallback, and warnings when they disagree."""

from __future__ import annotations

from collections.abc import Callable

from servegate.bench import BenchSettings, PointResult, run_point


def _run(url: str, output_len: int = 8) -> PointResult:
    return run_point(
        BenchSettings(url=url, concurrency=2, requests=6, input_len=5, output_len=output_len)
    )


def test_several_tokens_per_chunk_warns(sse_server: Callable[..., str]) -> None:
    """Two tokens per chunk: usage counts 8 tokens from 4 chunks, and a warning says why."""
    result = _run(sse_server("--tokens-per-chunk", "2"))
    assert all(s.usage_output_tokens == 8 and len(s.chunks_s) == 4 for s in result.samples)
    assert result.summary["total_output_tokens"] == 48
    assert any("2.00 tokens per chunk" in w for w in result.warnings)


def test_missing_usage_falls_back_to_chunks(sse_server: Callable[..., str]) -> None:
    """Without usage, content chunks are counted and the fallback is reported."""
    result = _run(sse_server("--no-usage"))
    assert all(s.usage_output_tokens is None and s.output_tokens == 8 for s in result.samples)
    assert any("came without usage" in w for w in result.warnings)


def test_usage_below_chunks_warns(sse_server: Callable[..., str]) -> None:
    """A usage count lower than the chunks that arrived is flagged as wrong."""
    result = _run(sse_server("--usage-offset", "-2"))
    assert any("more content chunks than" in w for w in result.warnings)


def test_short_outputs_warn(sse_server: Callable[..., str]) -> None:
    """A server that stops before max_tokens triggers the output-length warning."""
    result = _run(sse_server("--short", "5"), output_len=8)
    assert all(s.output_tokens == 5 for s in result.samples)
    assert any("5-5 tokens instead of 8" in w for w in result.warnings)


def test_exact_outputs_do_not_warn(sse_server: Callable[..., str]) -> None:
    """When usage, chunks and the request agree, there is no token warning."""
    result = _run(sse_server())
    assert not [w for w in result.warnings if "token" in w]
