"""What a point's workers measured about themselves: the client's headroom."""

from __future__ import annotations

import numpy as np

from servegate.bench.loadgen import WorkerResult
from servegate.bench.result import ClientStats


def client_stats(results: list[WorkerResult]) -> ClientStats:
    """The client's headroom: busiest worker's CPU share, loop lag and send lag."""
    fractions = [r.cpu_s / r.wall_s for r in results if r.wall_s > 0] or [0.0]
    lags = np.array([x for r in results for x in r.lags_ms] or [0.0])
    send = [x for r in results for x in r.send_lags_ms]
    send_arr = np.array(send) if send else None
    kinds = {r.read_stamps for r in results}
    return ClientStats(
        workers=len(results),
        wall_s=float(max((r.wall_s for r in results), default=0.0)),
        cpu_fraction=float(max(fractions)),
        cpu_fraction_mean=float(sum(fractions) / len(fractions)),
        loop_lag_ms_p50=float(np.percentile(lags, 50)),
        loop_lag_ms_p99=float(np.percentile(lags, 99)),
        loop_lag_ms_max=float(lags.max()),
        send_lag_ms_p50=None if send_arr is None else float(np.percentile(send_arr, 50)),
        send_lag_ms_p99=None if send_arr is None else float(np.percentile(send_arr, 99)),
        send_lag_ms_max=None if send_arr is None else float(send_arr.max()),
        read_stamps=kinds.pop() if len(kinds) == 1 else "mixed" if kinds else "select",
    )
