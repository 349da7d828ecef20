"""The flag search against a full grid and a random search, on the simulator's surface.

Each method searches the documented grid of src/servegate/sim/surface.py (960
configurations of ``--mem-fraction-static``, ``--cuda-graph-max-bs``,
``--chunked-prefill-size``, ``--attention-backend`` and ``--quantization``) for the
largest capacity under the documented SLO. A trial is scored by the surface's model
instead of a measurement (the model is the simulator's: tests/sim/test_surface.py starts
it for real), so hundreds of searches fit in a minute:

- a trial that runs out of memory costs its startup until the failing phase and is
  infeasible; one that starts costs its whole startup (the attention backend's JIT cache
  cold on the first start with that backend and quantization, warm after) plus
  ``MEASURE_S`` of measurement (a capacity search), and scores its true capacity times a
  measurement noise (lognormal, sd ``NOISE``, seeded);
- GPU-hours are server-hours x max(gpus, 1) = server-hours (one GPU);
- the **tuner** is servegate tune's own search (``servegate.campaign.tune.Search``: TPE
  with crashes as constraints and the memory skip, fraction and graph batch declared
  ``memory = "increasing"``); trial 0 is the baseline (SGLang's defaults here);
- **tuner, warm first** is the same search with ``--attention-backend`` and
  ``--quantization`` declared ``cache = true`` (TPE's seeded random draws asked together
  and run warm-cache-first);
- **tuner, pruned** adds ``[search.fidelity]`` (successive halving, ``keep`` 1/3 after 3
  rung values): each trial first runs a short rung, its startup plus ``SHORT_S`` of
  measurement scoring its true capacity times a coarser noise (lognormal, sd
  ``--rung-noise``); only a promoted trial starts again (warm: its rung just filled the
  cache) for the full ``MEASURE_S``; a pruned trial costs its rung alone;
- **random** draws configurations uniformly without replacement, on the same GPU-hours;
- the **grid** runs every configuration once, in the grid's order.

The chosen configuration of each search is the one with the best measured (noisy) score;
its regret is the true optimum's capacity minus the chosen one's true capacity, as a
share of the optimum (tune_truth.py's). Over ``--seeds`` seeds, at budgets of 1/3, 1/10
and 1/30 of the grid's GPU-hours:

    python benchmarks/tune_study.py --seeds 10      # writes benchmarks/results/tune_study.json

The pruned search's rung is a model too: what a short measurement costs and how noisy it
is are assumptions (``SHORT_S``, ``--rung-noise``), not measured.
"""

from __future__ import annotations

import argparse
import json
import math
import random
import statistics
import sys
import time
from dataclasses import replace
from pathlib import Path
from typing import Any

import optuna

from servegate.campaign.tune import Fidelity, Param, Search, SearchSpace, Trial, TuneOptions
from servegate.sim.surface import FIXED_PHASES, GRID, Flags, evaluate, grid, truth_capacity

RESULTS = Path(__file__).with_name("results") / "tune_study.json"
MEASURE_S = 120.0  # a capacity search on one start: about 8 probes of 15 s
SHORT_S = 30.0  # the short rung: a few requests at one load, or a coarse capacity search
NOISE = 0.03  # one start's measurement: lognormal, sd 3 %
FRACTIONS = (3, 10, 30)  # budgets: the grid's GPU-hours divided by these
PHASE_ORDER = ("load_weights", "jit_compile", "capture_cuda_graphs")

SPACE = SearchSpace(
    params=(
        Param(name="mem_fraction_static", choices=GRID["mem_fraction_static"], memory=True),
        Param(name="cuda_graph_max_bs", choices=GRID["cuda_graph_max_bs"], memory=True),
        Param(name="chunked_prefill_size", choices=GRID["chunked_prefill_size"]),
        Param(name="attention_backend", choices=GRID["attention_backend"]),
        Param(name="quantization", choices=GRID["quantization"]),
    ),
    name="f{mem_fraction_static}-bs{cuda_graph_max_bs}-c{chunked_prefill_size}"
    "-{attention_backend}-{quantization}",
    args="",
    env={},
    command=None,
    objective="capacity",
    sampler="tpe",
)


WARM_SPACE = replace(
    SPACE,
    params=tuple(
        replace(p, cache=p.name in ("attention_backend", "quantization")) for p in SPACE.params
    ),
)
PRUNED_SPACE = replace(WARM_SPACE, fidelity=Fidelity(bench={"max_probes": 4}))


class Oracle:
    """One search's world: the true capacities, the JIT cache, the noise."""

    def __init__(self, seed: int) -> None:
        self.rng = random.Random(seed)
        self.warm: set[tuple[str, str]] = set()

    def run(
        self, values: dict[str, Any], *, measure_s: float = MEASURE_S, noise: float = NOISE
    ) -> tuple[float | None, float]:
        """(score or None when it runs out of memory, cost in seconds) of one trial."""
        flags = replace(Flags(), **values)
        key = (flags.attention_backend, flags.quantization)
        outcome = evaluate(flags, warm=key in self.warm)
        phases = dict(outcome.phases)
        fixed = sum(FIXED_PHASES.values())
        capacity = truth_capacity(flags)
        if capacity is None:  # out of memory: the start ends in the failing phase
            upto = fixed + sum(phases[p] for p in PHASE_ORDER if p != "capture_cuda_graphs")
            return None, upto + phases["capture_cuda_graphs"] / 2
        self.warm.add(key)
        score = capacity * math.exp(noise * self.rng.gauss(0.0, 1.0) - noise * noise / 2)
        return score, fixed + outcome.startup_s + measure_s


def true_value(values: dict[str, Any]) -> int:
    return truth_capacity(replace(Flags(), **values)) or 0


def tuner(
    seed: int, budget_h: float, space: SearchSpace = SPACE, rung_noise: float = 0.1
) -> dict[str, Any]:
    """servegate tune's search, scored by the oracle, until ``budget_h`` GPU-hours."""
    oracle = Oracle(seed)
    search = Search(optuna, space, TuneOptions(gpu_hours=budget_h, seed=seed), campaign="study")
    chosen: dict[str, Any] = {}
    best = -1.0
    trials = skipped = infeasible = scored_crashes = pruned = cold = 0
    while search.spent_why() is None:
        values = search.next_values()
        name = "baseline" if values is None else space.name_of(values)
        config = values if values is not None else {}
        found = search.without_start(name, config)
        if found is None:
            warm_before = len(oracle.warm)
            rung = None
            cost = 0.0
            if space.fidelity is not None and values is not None:
                rung, cost = oracle.run(config, measure_s=SHORT_S, noise=rung_noise)
            if rung is not None and not search.promotes(rung):
                found = search.pruned(
                    Trial(
                        number=0,
                        name=name,
                        values=config,
                        state="feasible",
                        value=None,
                        rung_value=rung,
                        cost_s=cost,
                    )
                )
            elif rung is None and cost > 0:  # out of memory at the rung's start
                found = Trial(
                    number=0,
                    name=name,
                    values=config,
                    state="infeasible",
                    value=None,
                    kind="oom",
                    cost_s=cost,
                )
            else:
                score, full_cost = oracle.run(config)
                state = "feasible" if score is not None else "infeasible"
                found = Trial(
                    number=0,
                    name=name,
                    values=config,
                    state=state,
                    value=score,
                    kind=None if score is not None else "oom",
                    cost_s=cost + full_cost,
                    rung_value=rung,
                )
            cold += len(oracle.warm) > warm_before
        trial = search.record(found)
        trials += 1
        skipped += trial.state == "skipped"
        infeasible += trial.state == "infeasible"
        pruned += trial.state == "pruned"
        if trial.value is not None and (trial.state != "feasible" and trial.kind is not None):
            scored_crashes += 1  # a crash (or a skip, or a reuse of either) with a score
        if trial.state == "skipped" and not _would_crash(config):
            raise SystemExit(f"the memory skip skipped {name}, which starts")
        if trial.state == "feasible" and trial.value is not None and trial.value > best:
            best, chosen = trial.value, config
    return {
        "chosen": chosen,
        "true": true_value(chosen),
        "trials": trials,
        "skipped": skipped,
        "infeasible": infeasible,
        "scored_crashes": scored_crashes,
        "pruned": pruned,
        "cold_starts": cold,
        "gpu_hours": search.gpu_hours(),
    }


def _would_crash(values: dict[str, Any]) -> bool:
    return truth_capacity(replace(Flags(), **values)) is None


def random_search(seed: int, budget_h: float) -> dict[str, Any]:
    """Uniform draws without replacement until ``budget_h`` GPU-hours."""
    oracle = Oracle(seed)
    configs = [dict(zip(GRID, combo, strict=True)) for combo in _combos()]
    random.Random(seed).shuffle(configs)
    spent = 0.0
    best, chosen, trials = -1.0, {}, 0
    for config in configs:
        if spent >= budget_h:
            break
        score, cost = oracle.run(config)
        spent += cost / 3600.0
        trials += 1
        if score is not None and score > best:
            best, chosen = score, config
    return {"chosen": chosen, "true": true_value(chosen), "trials": trials, "gpu_hours": spent}


def full_grid(seed: int) -> dict[str, Any]:
    oracle = Oracle(seed)
    spent, best, chosen = 0.0, -1.0, {}
    for config in (dict(zip(GRID, combo, strict=True)) for combo in _combos()):
        score, cost = oracle.run(config)
        spent += cost / 3600.0
        if score is not None and score > best:
            best, chosen = score, config
    return {
        "chosen": chosen,
        "true": true_value(chosen),
        "trials": len(list(_combos())),
        "gpu_hours": spent,
    }


def _combos() -> list[tuple[Any, ...]]:
    return [tuple(getattr(f, k) for k in GRID) for f in grid(GRID)]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seeds", type=int, default=10)
    parser.add_argument("--out", type=Path, default=RESULTS)
    parser.add_argument("--rung-noise", type=float, default=0.1, metavar="SD")
    opts = parser.parse_args()
    optuna.logging.set_verbosity(optuna.logging.WARNING)
    optimum = max(v for f in grid(GRID) if (v := truth_capacity(f)) is not None)
    began = time.monotonic()
    grids = [full_grid(seed) for seed in range(opts.seeds)]
    grid_h = statistics.median(g["gpu_hours"] for g in grids)
    rows: dict[str, Any] = {"optimum": optimum, "grid": _summary(grids, optimum), "budgets": []}
    for fraction in FRACTIONS:
        budget = grid_h / fraction
        tuned = [tuner(seed, budget) for seed in range(opts.seeds)]
        warm = [tuner(seed, budget, WARM_SPACE) for seed in range(opts.seeds)]
        cut = [tuner(seed, budget, PRUNED_SPACE, opts.rung_noise) for seed in range(opts.seeds)]
        randoms = [random_search(seed, budget) for seed in range(opts.seeds)]
        rows["budgets"].append(
            {
                "fraction_of_grid": f"1/{fraction}",
                "gpu_hours": budget,
                "tuner": _summary(tuned, optimum),
                "tuner_warm_first": _summary(warm, optimum),
                "tuner_pruned": _summary(cut, optimum),
                "random": _summary(randoms, optimum),
            }
        )
    rows["rung_noise"] = opts.rung_noise
    rows["seeds"] = opts.seeds
    rows["seconds"] = round(time.monotonic() - began, 1)
    opts.out.parent.mkdir(parents=True, exist_ok=True)
    opts.out.write_text(json.dumps(rows, indent=1) + "\n")
    g = rows["grid"]
    print(
        f"true optimum {optimum}; grid: {g['gpu_hours_median']:.2f} GPU-hours, "
        f"{g['trials_median']:g} trials, regret median {g['regret_median']:.1%}"
    )
    for b in rows["budgets"]:
        for method in ("tuner", "tuner_warm_first", "tuner_pruned", "random"):
            m = b[method]
            extra = ""
            if method.startswith("tuner"):
                extra = (
                    f", skipped {m['skipped_median']:g}, infeasible {m['infeasible_median']:g}, "
                    f"pruned {m['pruned_median']:g}, cold starts {m['cold_median']:g}, "
                    f"crashes scored {m['scored_crashes_total']}"
                )
            print(
                f"{b['fraction_of_grid']} of the grid ({b['gpu_hours']:.2f} GPU-hours) {method}: "
                f"regret median {m['regret_median']:.1%}, worst {m['regret_worst']:.1%}, "
                f"within 3 % in {m['within_3pct']}/{opts.seeds}, "
                f"trials median {m['trials_median']:g}{extra}"
            )
    print(f"({rows['seconds']} s)", file=sys.stderr)


def _summary(runs: list[dict[str, Any]], optimum: int) -> dict[str, Any]:
    regrets = [(optimum - r["true"]) / optimum for r in runs]
    out: dict[str, Any] = {
        "regret_median": statistics.median(regrets),
        "regret_worst": max(regrets),
        "within_3pct": sum(r <= 0.03 for r in regrets),
        "trials_median": statistics.median(r["trials"] for r in runs),
        "gpu_hours_median": statistics.median(r["gpu_hours"] for r in runs),
        "chosen_true": [r["true"] for r in runs],
    }
    if "skipped" in runs[0]:
        out["skipped_median"] = statistics.median(r["skipped"] for r in runs)
        out["infeasible_median"] = statistics.median(r["infeasible"] for r in runs)
        out["scored_crashes_total"] = sum(r["scored_crashes"] for r in runs)
        out["pruned_median"] = statistics.median(r["pruned"] for r in runs)
        out["cold_median"] = statistics.median(r["cold_starts"] for r in runs)
    return out


if __name__ == "__main__":
    main()
