"""The client-headroom warnings: when the client, not the server, may have set the pace."""

from __future__ import annotations

from dataclasses import replace

import pytest

from servegate.bench.result import ClientStats
from servegate.bench.warnings import headroom_warnings


def stats(*, cpu: float, wall_s: float, lag_p99: float = 0.5) -> ClientStats:
    return ClientStats(
        workers=1,
        cpu_fraction=cpu,
        cpu_fraction_mean=cpu,
        loop_lag_ms_p50=0.1,
        loop_lag_ms_p99=lag_p99,
        loop_lag_ms_max=lag_p99,
        wall_s=wall_s,
    )


@pytest.mark.parametrize(
    ("cpu", "wall_s", "warned"),
    [
        (0.95, 30.0, True),  # a busy client over a real point
        (0.50, 30.0, False),  # headroom left
        (3.99, 0.02, False),  # a 20 ms point: its CPU share says nothing
    ],
)
def test_cpu_warning_needs_a_busy_client_and_a_point_long_enough(
    cpu: float, wall_s: float, warned: bool
) -> None:
    warnings = headroom_warnings(stats(cpu=cpu, wall_s=wall_s))
    assert any("of a CPU core" in w for w in warnings) is warned


def test_loop_lag_warning_names_the_lag() -> None:
    (warning,) = headroom_warnings(stats(cpu=0.2, wall_s=10.0, lag_p99=25.0))
    assert "25.0 ms late (p99)" in warning


def test_loop_lag_warning_with_the_kernels_stamps_blames_the_sends() -> None:
    """With the kernel's receive stamps a late loop no longer moves the responses' times."""
    late = stats(cpu=0.2, wall_s=10.0, lag_p99=25.0)
    (warning,) = headroom_warnings(replace(late, read_stamps="kernel"))
    assert "kernel's receive stamps" in warning and "timestamps may be late" not in warning
