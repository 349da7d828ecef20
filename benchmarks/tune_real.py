"""The flag search against a full grid and a random search, every trial a real start.

Issue 26's side-by-side, measured instead of modelled (tune_study.py scores its trials
with the surface's model): the same space searched three ways, each trial a start of
``servegate sim`` with the flags (its startup, its JIT caches, its out-of-memory
failures) and a capacity search under the SLO of benchmarks/tune_surface.toml:

- the **grid**: every configuration once, by ``servegate run`` of campaign files with one
  ``[[variant]]`` a configuration (split into ``--jobs`` files that run side by side, one
  simulated GPU each);
- the **tuner**: ``servegate tune`` (TPE, crashes as constraints, the memory skip on
  ``--mem-fraction-static`` and ``--cuda-graph-max-bs``), one search a seed, with
  ``--gpu-hours`` a ``--fraction`` of the GPU-hours the grid spent;
- **random**: the same with ``--sampler random``.

GPU-hours are what servegate tune counts: each attempt's server wall time, start to stop.
Each search's pick is its best measured capacity. Two regrets: against the grid's best
measured capacity (the issue's "within 3 % of the grid's best"), and against the true
optimum of the space from the surface's model (src/servegate/sim/surface.py; the pick's
true capacity, so measurement noise in the pick counts against it).

    python benchmarks/tune_real.py --phase grid --jobs 14 --out DIR
    python benchmarks/tune_real.py --phase search --seeds 10 --jobs 20 --out DIR
    python benchmarks/tune_real.py --phase summary --out DIR

Each search (and each grid part) runs in its own folder with its own database and JIT
cache; a phase run again continues what its databases hold (``--resume``). The grid
phase also writes ``grid.json`` (each configuration's capacity and the GPU-hours), which
is all the search phase needs of it in a fresh folder.
"""

from __future__ import annotations

import argparse
import itertools
import json
import signal
import statistics
import subprocess
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

from servegate.sim.surface import Flags, truth_capacity
from servegate.store import Store

# the space: 144 configurations, 66 of them out of memory while starting; the true
# optimum 0.94 / 160 / 4096 / fa3 / fp8 (134 users), the runner-up 129
SPACE: dict[str, tuple[Any, ...]] = {
    "fraction": (0.88, 0.91, 0.94, 0.96),
    "bs": (64, 160, 256),
    "chunk": (4096, 8192),
    "backend": ("fa3", "flashinfer", "triton"),
    "quant": ("none", "fp8"),
}
FIELDS = {
    "fraction": "mem_fraction_static",
    "bs": "cuda_graph_max_bs",
    "chunk": "chunked_prefill_size",
    "backend": "attention_backend",
    "quant": "quantization",
}
MEMORY = ("fraction", "bs")
NAME = "f{fraction}-bs{bs}-c{chunk}-{backend}-{quant}"
ARGS = (
    "--mem-fraction-static {fraction} --cuda-graph-max-bs {bs} --chunked-prefill-size "
    "{chunk} --attention-backend {backend} --quantization {quant}"
)
COMMAND = (
    "{{python}} -m servegate sim --engine sglang --port {{port}} --time-scale {scale} "
    "--batch-slowdown 0.02 --itl-ms 10 --ttft-ms 40"
)
TIME_SCALE = 0.05  # the surface's startups (28 s warm to about 90 s cold) at 1.4 to 4.5 s

HEAD = """\
[campaign]
name = "{name}"
baseline = "{baseline}"

[server]
engine = "sglang"
command = "{command}"
port = "auto"
timeout_s = 120
env = {{ FLASHINFER_WORKSPACE_BASE = "{cache}", TRITON_HOME = "{cache}" }}

[bench]
find_max = "concurrency"
concurrency = [16, 200]
input_len = 16
output_len = 16
max_probes = 8
precision = "5%"

[slo]
ttft_p99 = "100ms"
tpot_p99 = "30ms"
"""


def configurations() -> list[dict[str, Any]]:
    keys = list(SPACE)
    return [dict(zip(keys, v, strict=True)) for v in itertools.product(*SPACE.values())]


def _fmt(values: dict[str, Any], template: str) -> str:
    return template.format(
        **{k: f"{v:g}" if isinstance(v, float) else v for k, v in values.items()}
    )


def truth(values: dict[str, Any]) -> int | None:
    """The surface's true capacity of a configuration (None: out of memory)."""
    return truth_capacity(Flags(**{FIELDS[k]: v for k, v in values.items()}))


def grid_files(out: Path, jobs: int) -> list[Path]:
    """The grid as ``jobs`` campaign files, configurations dealt round-robin."""
    configs = configurations()
    files = []
    for part in range(jobs):
        mine = configs[part::jobs]
        if not mine:
            continue
        folder = out / f"grid-{part}"
        folder.mkdir(parents=True, exist_ok=True)
        names = [_fmt(v, NAME) for v in mine]
        text = HEAD.format(
            name=f"grid-{part}",
            baseline=names[0],
            command=COMMAND.format(scale=TIME_SCALE),
            cache=folder / "cache",
        )
        for values, name in zip(mine, names, strict=True):
            text += f'\n[[variant]]\nname = "{name}"\nargs = "{_fmt(values, ARGS)}"\n'
        path = folder / "grid.toml"
        path.write_text(text)
        files.append(path)
    return files


def search_file(folder: Path) -> Path:
    """The space as a ``[search]`` campaign file (trial 0: the simulator's defaults)."""
    folder.mkdir(parents=True, exist_ok=True)
    text = HEAD.format(
        name="search",
        baseline="baseline",
        command=COMMAND.format(scale=TIME_SCALE),
        cache=folder / "cache",
    )
    text += f'\n[search]\nname = "{NAME}"\nargs = "{ARGS}"\nobjective = "capacity"\n'
    for key, choices in SPACE.items():
        shown = ", ".join(f'"{c}"' if isinstance(c, str) else f"{c:g}" for c in choices)
        text += f"\n[search.params.{key}]\nchoices = [{shown}]\n"
        if key in MEMORY:
            text += 'memory = "increasing"\n'
    path = folder / "search.toml"
    path.write_text(text)
    return path


_LIVE: set[subprocess.Popen[Any]] = set()


def _run(argv: list[str], cwd: Path, log: Path) -> int:
    with log.open("a") as f:
        proc = subprocess.Popen(argv, cwd=cwd, stdout=f, stderr=subprocess.STDOUT)
        _LIVE.add(proc)
        try:
            return proc.wait()
        finally:
            _LIVE.discard(proc)


def _stop_all(*_: object) -> None:
    for proc in list(_LIVE):
        proc.send_signal(signal.SIGINT)  # servegate stops its servers and keeps what it measured
    raise SystemExit(130)


def run_grid(out: Path, jobs: int) -> None:
    files = grid_files(out, jobs)

    def one(path: Path) -> None:
        db = path.parent / "grid.db"
        resume = ["--resume"] if db.exists() else []
        _run(
            [sys.executable, "-m", "servegate", "run", str(path), "--db", str(db), *resume],
            path.parent,
            path.parent / "run.log",
        )

    with ThreadPoolExecutor(max_workers=len(files)) as pool:
        list(pool.map(one, files))


def grid_result(out: Path) -> dict[str, Any]:
    """Every grid configuration's measured capacity (None: crashed) and the GPU-hours,
    from the grid's databases, else from the ``grid.json`` the grid phase wrote."""
    saved = out / "grid.json"
    if saved.exists() and not any(out.glob("grid-*/grid.db")):
        return dict(json.loads(saved.read_text()))
    measured: dict[str, float | None] = {}
    seconds = 0.0
    for db in sorted(out.glob("grid-*/grid.db")):
        with Store.open(db, read_only=True) as store:
            for campaign in store.campaigns():
                cid = campaign.id
                caps = {c.variant: float(c.data.get("value") or 0.0) for c in store.capacities(cid)}
                for attempt in store.attempts(cid):
                    seconds += _wall_s(attempt.started_at, attempt.ended_at)
                    if str(attempt.status) in ("crash", "timeout"):
                        measured[attempt.variant] = None
                    elif attempt.variant in caps:
                        measured[attempt.variant] = caps[attempt.variant]
    return {"measured": measured, "gpu_hours": seconds / 3600.0}


def _wall_s(started: str, ended: str | None) -> float:
    from datetime import datetime

    if ended is None:
        return 0.0
    return max(
        0.0, (datetime.fromisoformat(ended) - datetime.fromisoformat(started)).total_seconds()
    )


def run_searches(out: Path, seeds: int, jobs: int, gpu_hours: float) -> None:
    todo = [(method, seed) for seed in range(seeds) for method in ("tuner", "random")]

    def one(job: tuple[str, int]) -> None:
        method, seed = job
        folder = out / f"{method}-{seed}"
        path = search_file(folder)
        db = folder / "tune.db"
        resume = ["--resume"] if db.exists() else []
        sampler = ["--sampler", "random"] if method == "random" else []
        _run(
            [sys.executable, "-m", "servegate", "tune", str(path), "--db", str(db),
             "--gpu-hours", f"{gpu_hours:.6f}", "--seed", str(seed), *sampler, *resume,
             "--json-file", str(folder / "result.json"), "--events-file",
             str(folder / "events.jsonl"), "-q"],
            folder,
            folder / "tune.log",
        )  # fmt: skip

    with ThreadPoolExecutor(max_workers=jobs) as pool:
        list(pool.map(one, todo))


def summary(out: Path, fraction: float) -> dict[str, Any]:
    grid = grid_result(out)
    measured = grid["measured"]
    configs = {_fmt(v, NAME): v for v in configurations()}
    true = {name: truth(v) for name, v in configs.items()}
    true["baseline"] = truth_capacity(Flags())  # trial 0: the simulator's defaults
    optimum = max(c for n, c in true.items() if c and n != "baseline")
    served = {n: c for n, c in measured.items() if c is not None}
    grid_pick = max(served, key=lambda n: served[n]) if served else None
    grid_best = served[grid_pick] if grid_pick else None
    rows: list[dict[str, Any]] = []
    for folder in sorted(out.glob("tuner-*")) + sorted(out.glob("random-*")):
        result = folder / "result.json"
        if not result.exists():
            continue
        doc = json.loads(result.read_text())
        best = doc.get("best") or {}
        name = best.get("variant")
        value = best.get("value")
        trials = doc.get("trials") or []
        rows.append(
            {
                "method": folder.name.split("-")[0],
                "seed": int(folder.name.split("-")[1]),
                "pick": name,
                "measured": value,
                "true": true.get(name),
                "gpu_hours": doc.get("gpu_hours"),
                "trials": len(trials),
                "infeasible": sum(1 for t in trials if t.get("state") == "infeasible"),
                "scored_crash": sum(
                    1
                    for t in trials
                    if t.get("state") == "infeasible" and t.get("value") is not None
                ),
                "skipped": doc.get("skipped") or 0,
                "vs_grid": None
                if value is None or not grid_best
                else (grid_best - value) / grid_best,
                "regret": None if not true.get(name) else (optimum - true[name]) / optimum,
            }
        )
    wrong_oom = sorted(n for n, c in measured.items() if c is None and true.get(n) is not None)
    missed_oom = sorted(n for n, c in measured.items() if c is not None and true.get(n) is None)
    return {
        "space": len(configs),
        "optimum": optimum,
        "grid": {
            "runs": len(measured),
            "gpu_hours": round(grid["gpu_hours"], 4),
            "pick": grid_pick,
            "measured": grid_best,
            "true": true.get(grid_pick) if grid_pick else None,
            "crashed": sum(1 for c in measured.values() if c is None),
            "crashed_but_true_serves": wrong_oom,
            "served_but_true_oom": missed_oom,
        },
        "fraction": fraction,
        "searches": rows,
    }


def _table(doc: dict[str, Any]) -> str:
    lines = [
        "| method | searches | GPU-hours median | within 3 % of the grid's best "
        "| vs grid median / worst | true regret median / worst | trials median "
        "| crashes scored |",
        "|---|---:|---:|---:|---:|---:|---:|---:|",
    ]
    g = doc["grid"]
    lines.append(
        f"| grid | 1 | {g['gpu_hours']:.4f} | - | 0 | "
        f"{(doc['optimum'] - (g['true'] or 0)) / doc['optimum']:.1%} | {g['runs']} | 0 |"
    )
    for method in ("tuner", "random"):
        rs = [r for r in doc["searches"] if r["method"] == method]
        if not rs:
            continue
        vs = [r["vs_grid"] if r["vs_grid"] is not None else 1.0 for r in rs]
        reg = [r["regret"] if r["regret"] is not None else 1.0 for r in rs]
        lines.append(
            f"| {method} | {len(rs)} | {statistics.median(r['gpu_hours'] or 0 for r in rs):.4f} "
            f"| {sum(1 for v in vs if v <= 0.03)}/{len(rs)} "
            f"| {statistics.median(vs):.1%} / {max(vs):.1%} "
            f"| {statistics.median(reg):.1%} / {max(reg):.1%} "
            f"| {statistics.median(r['trials'] for r in rs):g} "
            f"| {sum(r['scored_crash'] for r in rs)} |"
        )
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--phase", choices=["grid", "search", "summary"], required=True)
    parser.add_argument("--out", type=Path, required=True, help="the study's folder")
    parser.add_argument("--jobs", type=int, default=14, help="campaigns side by side")
    parser.add_argument("--seeds", type=int, default=10, help="searches per method")
    parser.add_argument("--fraction", type=float, default=1 / 3, help="of the grid's GPU-hours")
    parser.add_argument(
        "--smoke", action="store_true", help="a space of 4 configurations (to try the plumbing)"
    )
    args = parser.parse_args()
    if args.smoke:
        SPACE.update(fraction=(0.91, 0.96), bs=(160,), chunk=(4096,), backend=("fa3",))
    args.out.mkdir(parents=True, exist_ok=True)
    signal.signal(signal.SIGTERM, _stop_all)
    started = time.monotonic()
    if args.phase == "grid":
        run_grid(args.out, args.jobs)
        (args.out / "grid.json").write_text(json.dumps(grid_result(args.out)))
    elif args.phase == "search":
        hours = grid_result(args.out)["gpu_hours"] * args.fraction
        if hours <= 0:
            raise SystemExit("run --phase grid first: the budget is a fraction of its GPU-hours")
        run_searches(args.out, args.seeds, args.jobs, hours)
    doc = summary(args.out, args.fraction)
    doc["wall_s"] = round(time.monotonic() - started, 1)
    (args.out / "summary.json").write_text(json.dumps(doc, indent=1))
    print(_table(doc))
    print(json.dumps({k: v for k, v in doc.items() if k != "searches"}, indent=1))


if __name__ == "__main__":
    main()
