"""The arrival schedule of an open-loop point: Poisson arrivals, planned before the run."""

from __future__ import annotations

import numpy as np


def arrival_offsets(
    rate: float, requests: int | None, duration_s: float | None, seed: int
) -> list[float]:
    """Poisson arrival times (seconds from the start): exponential gaps of mean 1/rate."""
    rng = np.random.default_rng(seed)
    if requests is not None:
        return [float(x) for x in np.cumsum(rng.exponential(1.0 / rate, requests))]
    assert duration_s is not None
    out: list[float] = []
    t = 0.0
    while True:
        t += float(rng.exponential(1.0 / rate))
        if t > duration_s:
            return out
        out.append(t)
