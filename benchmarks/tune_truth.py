"""The true optimum of the simulator's tuning surface, by a dense evaluation.

Every configuration of the documented grid (src/servegate/sim/surface.py ``GRID``, 960
configurations of ``--mem-fraction-static``, ``--cuda-graph-max-bs``,
``--chunked-prefill-size``, ``--attention-backend`` and ``--quantization``) is evaluated
by the surface's model (memory, speeds, startup), and its capacity under the documented
SLO (TTFT <= 100 ms, TPOT <= 30 ms, 8B model on an 80 GiB GPU, ``--itl-ms 10 --ttft-ms 40
--batch-slowdown 0.02``) is computed here again, independently of ``surface.capacity``:
the concurrency is scanned from the running limit down, each step time from the formula
(graphs replay up to N), and the two must agree for every configuration.

    python benchmarks/tune_truth.py        # writes benchmarks/results/tune_truth.json

The file holds the optimum (its flags and capacity), the runner-up, how many
configurations run out of memory while starting, how many start but meet no SLO, and,
for each configuration, its capacity and its cold and warm startup seconds, which
tune_study.py scores searches against.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import Any

from servegate.sim.surface import (
    FIXED_PHASES,
    GRID,
    TRUTH_BASE,
    TRUTH_SLO,
    Flags,
    capacity,
    evaluate,
    grid,
)

RESULTS = Path(__file__).with_name("results") / "tune_truth.json"


def args_of(flags: Flags) -> str:
    """The simulator's command-line flags of one configuration."""
    return (
        f"--mem-fraction-static {flags.mem_fraction_static:g} "
        f"--cuda-graph-max-bs {flags.cuda_graph_max_bs} "
        f"--chunked-prefill-size {flags.chunked_prefill_size} "
        f"--attention-backend {flags.attention_backend} "
        f"--quantization {flags.quantization}"
    )


def dense_capacity(flags: Flags) -> int | None:
    """Capacity by scanning every concurrency, from the model's step-time formula."""
    base = TRUTH_BASE
    out = evaluate(flags, itl_ms=base["itl_ms"], ttft_ms=base["ttft_ms"])
    if out.oom_phase is not None:
        return None
    if out.ttft_ms > TRUTH_SLO["ttft_ms"]:
        return 0
    slowdown = base["batch_slowdown"]
    for c in range(out.max_running, 0, -1):
        # the TPOT of every concurrency up to c must meet the bound (steps grow with c)
        worst = max(
            out.itl_ms
            * (out.graph_speedup if k <= out.graph_max_bs else 1.0)
            * (1 + slowdown * (k - 1))
            for k in range(1, c + 1)
        )
        if worst <= TRUTH_SLO["tpot_ms"]:
            return c
    return 0


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=RESULTS)
    opts = parser.parse_args()
    rows: list[dict[str, Any]] = []
    for flags in grid(GRID):
        value = dense_capacity(flags)
        base = TRUTH_BASE
        check = capacity(
            evaluate(flags, itl_ms=base["itl_ms"], ttft_ms=base["ttft_ms"]),
            ttft_slo_ms=TRUTH_SLO["ttft_ms"],
            tpot_slo_ms=TRUTH_SLO["tpot_ms"],
            batch_slowdown=base["batch_slowdown"],
        )
        if check != value:
            raise SystemExit(f"surface.capacity {check} != dense {value} at {args_of(flags)}")
        fixed = sum(FIXED_PHASES.values())
        rows.append(
            {
                "args": args_of(flags),
                "capacity": value,
                "oom": value is None,
                "startup_cold_s": fixed + evaluate(flags).startup_s,
                "startup_warm_s": fixed + evaluate(flags, warm=True).startup_s,
            }
        )
    ranked = sorted(
        (r for r in rows if r["capacity"] is not None), key=lambda r: -int(r["capacity"])
    )
    best, second = ranked[0], ranked[1]
    doc = {
        "slo": TRUTH_SLO,
        "base": TRUTH_BASE,
        "grid": {k: list(v) for k, v in GRID.items()},
        "evaluated": len(rows),
        "oom": sum(1 for r in rows if r["oom"]),
        "no_slo": sum(1 for r in rows if r["capacity"] == 0),
        "optimum": {"args": best["args"], "capacity": best["capacity"]},
        "runner_up": {"args": second["args"], "capacity": second["capacity"]},
        "configurations": rows,
    }
    opts.out.parent.mkdir(parents=True, exist_ok=True)
    opts.out.write_text(json.dumps(doc, separators=(",", ":")) + "\n")
    print(
        f"{len(rows)} configurations: {doc['oom']} out of memory at start, "
        f"{doc['no_slo']} meet no SLO; optimum {best['args']}: capacity {best['capacity']}; "
        f"runner-up {second['args']}: {second['capacity']}"
    )


if __name__ == "__main__":
    main()
