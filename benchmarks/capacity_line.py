"""The rate crossing from every probe near it against the two probes around it, on a
simulated convex latency curve with known capacity.

Each search is the real `Search` (doubling from 8/s, bisection to 2 %) over a mean E2EL
that rises convexly with the rate (250 ms at about 41.8/s, as the simulator's), each
probe's mean read with a relative noise of ``--noise`` and at a Poisson-held rate of 6 s.
Printed: per noise level, the bias, the spread and the share within +-5 % of the
isotonic crossing of the two probes around it and of `_local_crossing`.

    python benchmarks/capacity_line.py --searches 2000
"""

from __future__ import annotations

import argparse
import math

import numpy as np

from servegate.bench.capacity import Search, SearchOptions, _crossing, _local_crossing

BOUND = 250.0


def e2el_ms(rate: float) -> float:
    """A convex mean latency in the rate, near the simulator's E2EL curve."""
    return 180.0 * (1.0 + 0.55 * (rate / 60.0) ** 3 + 0.2 * rate / 60.0)


def truth() -> float:
    lo, hi = 1.0, 200.0
    for _ in range(60):
        mid = (lo + hi) / 2
        lo, hi = (mid, hi) if e2el_ms(mid) <= BOUND else (lo, mid)
    return lo


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--searches", type=int, default=2000)
    parser.add_argument("--noise", default="0.01,0.02,0.03", help="relative SD of a probe's mean")
    args = parser.parse_args()
    true = truth()
    for sd in (float(x) for x in args.noise.split(",")):
        pair, line = [], []
        for seed in range(args.searches):
            rng = np.random.default_rng(seed)
            search = Search(SearchOptions(over="rate", low=8, high=256, precision=0.02))
            rows = []
            while (load := search.next_load()) is not None:
                held = load * (1 + rng.standard_normal() / math.sqrt(load * 6))
                margin = e2el_ms(held) * (1 + sd * rng.standard_normal()) / BOUND
                search.record(load, margin <= 1.0)
                rows.append((held, margin, load * 6))
            rows.sort()
            loads, margins, weights = (np.array(c) for c in zip(*rows, strict=True))
            cross, _ = _crossing(loads, [("e2el", margins)], weights)
            assert cross is not None
            refined = cross
            if cross < loads[-1]:
                refined = _local_crossing(loads, margins, weights, cross)
            pair.append(cross / true - 1)
            line.append(refined / true - 1)
        for name, errors in (("two probes", np.array(pair)), ("line", np.array(line))):
            print(
                f"noise {sd:.0%} {name:>10}: bias {errors.mean():+.2%}, SD {errors.std():.2%}, "
                f"within +-5 % {np.mean(np.abs(errors) <= 0.05):.1%}"
            )


if __name__ == "__main__":
    main()
