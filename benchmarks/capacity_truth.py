"""The true capacity of ``servegate sim`` under an SLO, computed from its model.

Independent of servegate's code: a discrete-event simulation of the simulator's
performance model as src/servegate/sim/model.py and server.py describe it, written
again here (it imports nothing from servegate):

- a request is admitted at once while fewer than ``max_running`` run (else it queues in
  arrival order); it counts as running from admission to its last token;
- its first token comes ``ttft_ms x noise`` after admission (no prefill cost: the
  simulator's default ``--prefill-tok-s 0``);
- after each token, the next is due ``itl_ms x (1 + batch_slowdown x (running - 1)) x
  noise`` later, ``running`` taken when the token is emitted (each request runs on its
  own timer, as the simulator's do); noise is ``max(0.2, 1 + jitter x N(0, 1))``, drawn
  per first token and per step;
- one start draws a speed factor f (``--instance-sd``: lognormal, mean 1; the simulator
  logs it as ``instance speed factor``) and a run factor r (``1 + jitter/4 x N(0, 1)``,
  the first draw of ``random.Random(f"{seed}:{start}")``); every duration is multiplied by
  g = r / f.

Scaling makes one curve per SLO serve every start: a closed loop at concurrency c with
durations scaled by g has every latency g times the unscaled one, and an open loop at
rate R with durations x g is the unscaled one at rate R x g with time stretched by g. So
with the unscaled statistic S1, the capacity of a start is the largest c with
g x S1(c) <= bound, and the rate R with g x S1(R x g) = bound.

    python benchmarks/capacity_truth.py            # computes the curves (about a minute)
    python benchmarks/capacity_truth.py --show     # prints them

The curves go to benchmarks/results/capacity_truth.json, which capacity_search.py reads.
"""

from __future__ import annotations

import argparse
import heapq
import json
import math
import random
from pathlib import Path

RESULTS = Path(__file__).with_name("results") / "capacity_truth.json"

# the simulator's flags in the capacity study (capacity_search.py passes the same)
MODEL = {
    "itl_ms": 10.0,
    "ttft_ms": 20.0,
    "batch_slowdown": 0.05,
    "jitter": 0.05,
    "max_running": 256,
    "output_len": 16,
}
# the SLOs of the study, per search (ms). Rate searches use means: a p99 over a probe of a
# few seconds of an open loop sits below the long-run p99 (the in-flight count wanders
# slowly, and a short window rarely holds its excursions), see benchmarks/README.md
SLOS = {
    "concurrency": {"tpot_p99": 25.0, "e2el_p99": 450.0},
    "rate": {"tpot_mean": 20.0, "e2el_mean": 250.0},
}
METRICS = ("tpot_p99", "e2el_p99", "tpot_mean", "e2el_mean")
CONCURRENCY = range(1, 129)
RATES = [4.0 * 1.01**i for i in range(int(math.log(200 / 4) / math.log(1.01)) + 1)]


def simulate(
    *, closed: int | None, rate: float | None, requests: int, seed: int
) -> dict[str, float]:
    """p99 of TPOT and E2EL (ms) over ``requests`` measured requests (after as many again
    as warmup), unscaled (g = 1)."""
    m = MODEL
    rng = random.Random(seed)

    def noise() -> float:
        return max(0.2, 1.0 + m["jitter"] * rng.gauss(0.0, 1.0))

    out = int(m["output_len"])
    heap: list[tuple[float, int, int]] = []  # (due, tie, request)
    arrival: dict[int, float] = {}
    first: dict[int, float] = {}
    emitted: dict[int, int] = {}
    waiting: list[int] = []
    running = 0
    seq = 0
    tpot: list[float] = []
    e2el: list[float] = []
    total = 2 * requests

    def admit(t: float, r: int) -> None:
        nonlocal running, seq
        running += 1
        seq += 1
        heapq.heappush(heap, (t + m["ttft_ms"] * noise(), seq, r))

    def submit(t: float, r: int) -> None:
        arrival[r] = t
        emitted[r] = 0
        if running < m["max_running"]:
            admit(t, r)
        else:
            waiting.append(r)

    next_id = 0
    if closed is not None:
        for _ in range(closed):
            submit(0.0, next_id)
            next_id += 1
        next_arrival = math.inf
    else:
        assert rate is not None
        next_arrival = rng.expovariate(rate / 1000.0)
    done = 0
    while done < total:
        if heap and heap[0][0] <= next_arrival:
            t, _, r = heapq.heappop(heap)
        else:
            t, r = next_arrival, -1
            if next_id < total + 1000:
                submit(t, next_id)
                next_id += 1
            next_arrival = t + rng.expovariate(rate / 1000.0) if rate else math.inf
            continue
        if emitted[r] == 0:
            first[r] = t
        emitted[r] += 1
        if emitted[r] < out:
            seq += 1
            step = m["itl_ms"] * (1.0 + m["batch_slowdown"] * (running - 1)) * noise()
            heapq.heappush(heap, (t + step, seq, r))
            continue
        running -= 1
        done += 1
        if r >= requests:  # the first `requests` (by id) are the warmup
            tpot.append((t - first[r]) / (out - 1))
            e2el.append(t - arrival[r])
        while waiting and running < m["max_running"]:
            admit(t, waiting.pop(0))
        if closed is not None:
            submit(t, next_id)
            next_id += 1
    return {
        "tpot_p99": _p99(tpot),
        "e2el_p99": _p99(e2el),
        "tpot_mean": sum(tpot) / len(tpot),
        "e2el_mean": sum(e2el) / len(e2el),
    }


def _p99(values: list[float]) -> float:
    ordered = sorted(values)
    h = (len(ordered) - 1) * 0.99
    lo = math.floor(h)
    hi = min(lo + 1, len(ordered) - 1)
    return ordered[lo] + (h - lo) * (ordered[hi] - ordered[lo])


def _monotone(values: list[float]) -> list[float]:
    """The running maximum: the curves rise with load; sampling noise must not fold them."""
    out, top = [], -math.inf
    for v in values:
        top = max(top, v)
        out.append(top)
    return out


def compute(requests: int) -> dict[str, object]:
    """Both curves for both SLO metrics."""
    conc = [simulate(closed=c, rate=None, requests=requests, seed=c) for c in CONCURRENCY]
    rates = [simulate(closed=None, rate=r, requests=requests, seed=i) for i, r in enumerate(RATES)]
    return {
        "model": MODEL,
        "slos_ms": SLOS,
        "requests_per_load": requests,
        "concurrency": {"loads": list(CONCURRENCY)}
        | {k: _monotone([x[k] for x in conc]) for k in METRICS},
        "rate": {"loads": RATES} | {k: _monotone([x[k] for x in rates]) for k in METRICS},
    }


def capacity(curves: dict[str, object], over: str, metric: str, bound_ms: float, g: float) -> float:
    """The true capacity of a start whose durations are scaled by ``g``."""
    table = curves[over]
    assert isinstance(table, dict)
    loads, stat = table["loads"], table[metric]
    if over == "concurrency":
        best = 0.0
        for c, s in zip(loads, stat, strict=True):
            if g * s <= bound_ms:
                best = float(c)
        return best
    # rate: g x S1(R x g) = bound -> S1(x) = bound / g at x = R x g
    target = bound_ms / g
    for i in range(1, len(loads)):
        if stat[i] > target >= stat[i - 1]:
            a, b = math.log(loads[i - 1]), math.log(loads[i])
            frac = (target - stat[i - 1]) / (stat[i] - stat[i - 1])
            return math.exp(a + frac * (b - a)) / g
    return math.nan


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--requests", type=int, default=6000, help="measured requests per load")
    parser.add_argument("--show", action="store_true", help="print the stored curves' capacities")
    args = parser.parse_args()
    if not args.show:
        RESULTS.parent.mkdir(exist_ok=True)
        RESULTS.write_text(json.dumps(compute(args.requests), indent=1) + "\n")
    curves = json.loads(RESULTS.read_text())
    for over in ("concurrency", "rate"):
        for metric, bound in SLOS[over].items():
            found = capacity(curves, over, metric, bound, 1.0)
            print(f"{over:12} {metric}<={bound:g}ms: g=1 -> {found:.2f}")


if __name__ == "__main__":
    main()
