"""The arrival schedule of an open-loop point: gamma arrivals, planned before the run.

Inter-arrival gaps are gamma-distributed with shape ``burstiness`` and mean ``1/rate``
(vLLM bench serve's ``--burstiness``): shape 1 is a Poisson process, below 1 burstier,
above 1 more regular. Their coefficient of variation is ``1/sqrt(burstiness)``.
"""

from __future__ import annotations

import numpy as np


def arrival_offsets(
    rate: float,
    requests: int | None,
    duration_s: float | None,
    seed: int,
    burstiness: float = 1.0,
) -> list[float]:
    """Arrival times (seconds from the start): gamma gaps of mean 1/rate, shape burstiness.

    Burstiness 1 draws exponential gaps, the same numbers for a seed as the Poisson
    schedules servegate made before ``--burstiness`` existed.
    """
    rng = np.random.default_rng(seed)

    def gaps(size: int | None) -> np.ndarray:
        if burstiness == 1.0:
            return np.asarray(rng.exponential(1.0 / rate, size))
        return np.asarray(rng.gamma(burstiness, 1.0 / (rate * burstiness), size))

    if requests is not None:
        return [float(x) for x in np.cumsum(gaps(requests))]
    assert duration_s is not None
    out: list[float] = []
    t = 0.0
    while True:
        t += float(gaps(None))
        if t > duration_s:
            return out
        out.append(t)
