"""Progress of a load point on a real streaming server: requests done of the total and
an ETA from the request rate so far."""

from __future__ import annotations

import io
from collections.abc import Callable

from servegate.bench import BenchSettings, Progress, run_point
from servegate.cli.bench import ProgressLines


def test_point_progress_carries_done_of_total_and_an_eta(
    sse_server: Callable[..., str],
) -> None:
    """Each request takes 100 ms or more, one at a time: after the first one ends, the
    progress calls carry the total and an ETA, and the live line shows them."""
    url = sse_server("--ttft-ms", "100")
    seen: list[Progress] = []
    out = io.StringIO()
    lines = ProgressLines("c=1", tty=True, stream=out)

    def progress(p: Progress) -> None:
        seen.append(p)
        lines(p)

    result = run_point(
        BenchSettings(url=url, concurrency=1, requests=20, warmup=0, input_len=4, output_len=2),
        progress=progress,
    )
    assert result.completed == 20
    assert seen, "no progress during a point of 2 s or more"
    assert all(p.total == 20 for p in seen)
    with_eta = [p for p in seen if p.eta_s is not None]
    assert with_eta, seen
    for p in with_eta:
        ended = p.done + p.failed
        assert ended >= 1
        assert p.eta_s == (20 - ended) * p.elapsed_s / ended
    assert "/20 done" in out.getvalue() and ", ETA " in out.getvalue()


def test_time_bound_point_eta_is_the_time_left(sse_server: Callable[..., str]) -> None:
    """A point bound by --duration counts its ETA down from its length."""
    url = sse_server("--ttft-ms", "50")
    seen: list[Progress] = []
    run_point(
        BenchSettings(
            url=url, concurrency=1, requests=None, duration_s=2.0, warmup=0, input_len=4,
            output_len=2,
        ),
        progress=seen.append,
    )  # fmt: skip
    assert seen
    for p in seen:
        assert p.duration_s == 2.0
        assert p.eta_s == max(0.0, 2.0 - p.elapsed_s)
