"""Does a campaign's capacity interval (``find_max``, the mean over starts) cover the
simulator's true mean capacity as often as it says (95 %)?

Each campaign is a fresh ``servegate run`` of one variant on ``servegate sim`` (jitter
0.05, ``--instance-sd 0.05``, its own seed and start counter, so each start draws its
own speed factor), ``restarts = 3``, with ``find_max = "concurrency"`` under
``tpot_p99``; then ``servegate report --json-file`` gives the mean capacity over the
starts and its interval (``capacity.variants[0].interval``). The truth is the mean over
the simulator's start-to-start variation of the capacity that ``capacity_truth.py``
computes from the model (independent code): E[cap(g)] with g = r / f, f the lognormal
speed factor (mean 1, log-sd 0.05) and r the run factor (1 + jitter/4 x N(0, 1)), by
Monte Carlo. A campaign whose interval is missing (one start left, a censored or
refused capacity) counts as not covering.

``--scale S`` runs the simulator S times faster (ITL and TTFT x S, the bounds x S: every
latency scales with them, so the capacities are the same) to fit more campaigns in the
time there is. Results go to a JSON-lines file as each campaign ends (``--resume``).

    python benchmarks/capacity_truth.py                          # the truth curves, once
    python benchmarks/capacity_coverage.py --campaigns 100       # the full study
    python benchmarks/capacity_coverage.py --campaigns 20 --scale 0.5 --resume
    python benchmarks/capacity_coverage.py --summary
"""

from __future__ import annotations

import argparse
import json
import math
import random
import subprocess
import sys
import tempfile
import textwrap
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))
from capacity_truth import MODEL, RESULTS, SLOS, capacity

OUT = Path(__file__).with_name("results") / "capacity_coverage.jsonl"
INSTANCE_SD = 0.05
METRIC = "tpot_p99"
STARTS = 3


def true_mean_capacity(curves: dict[str, object], draws: int = 20000) -> float:
    """E[cap(g)] over the simulator's start-to-start variation (Monte Carlo, seeded)."""
    rng = random.Random("capacity coverage truth")
    bound = SLOS["concurrency"][METRIC]
    total = 0.0
    for _ in range(draws):
        f = math.exp(INSTANCE_SD * rng.gauss(0.0, 1.0) - INSTANCE_SD**2 / 2.0)
        r = max(0.2, 1.0 + MODEL["jitter"] / 4 * rng.gauss(0.0, 1.0))
        total += capacity(curves, "concurrency", METRIC, bound, r / f)
    return total / draws


def campaign_file(folder: Path, seed: int, scale: float) -> Path:
    """One campaign: the simulator of the study's model, three starts, one search each."""
    sim = (
        f"{{python}} -m servegate sim --engine vllm --port {{port}} --startup 0 "
        f"--itl-ms {MODEL['itl_ms'] * scale:g} --ttft-ms {MODEL['ttft_ms'] * scale:g} "
        f"--batch-slowdown {MODEL['batch_slowdown']:g} --jitter {MODEL['jitter']:g} "
        f"--max-running {MODEL['max_running']} --instance-sd {INSTANCE_SD:g} "
        f"--seed {seed} --start-counter {folder / 'starts'}"
    )
    bound = SLOS["concurrency"][METRIC] * scale
    text = textwrap.dedent(
        f"""\
        [campaign]
        name = "coverage-{seed}"
        baseline = "sim"

        [server]
        engine = "vllm"
        command = "{sim}"
        port = "auto"
        timeout_s = 60
        stop_grace_s = 5
        release_timeout_s = 10

        [bench]
        input_len = 16
        output_len = {MODEL["output_len"]}
        requests = 100
        seed = {seed}
        find_max = "concurrency"
        concurrency = [4, 128]
        precision = "2%"
        restarts = {STARTS}

        [slo]
        {METRIC} = "{bound:g}ms"

        [[variant]]
        name = "sim"
        """
    )
    path = folder / "c.toml"
    path.write_text(text, encoding="utf-8")
    return path


def one_campaign(seed: int, scale: float, truth: float) -> dict[str, object]:
    """Run one campaign and read its capacity interval."""
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        path = campaign_file(folder, seed, scale)
        db = folder / "c.db"
        started = time.monotonic()
        run = subprocess.run(
            [sys.executable, "-m", "servegate", "run", str(path), "--db", str(db), "-q"],
            capture_output=True, text=True, check=False, timeout=1800,
        )  # fmt: skip
        wall = time.monotonic() - started
        if run.returncode != 0:
            raise RuntimeError(run.stderr.strip()[-2000:])
        out = folder / "r.json"
        report = subprocess.run(
            [sys.executable, "-m", "servegate", "report", "--db", str(db), "--json-file",
             str(out)],
            capture_output=True, text=True, check=False, timeout=300,
        )  # fmt: skip
        if report.returncode != 0:
            raise RuntimeError(report.stderr.strip()[-2000:])
        (row,) = json.loads(out.read_text())["capacity"]["variants"]
    band = row["interval"]
    values = [s["value"] for s in row["starts"]]
    covered = band is not None and not row["censored"] and band[0] <= truth <= band[1]
    return {
        "seed": seed,
        "scale": scale,
        "truth": truth,
        "starts": values,
        "mean": row["mean"],
        "interval": band,
        "censored": row["censored"],
        "covered": covered,
        "probes": [s["probes"] for s in row["starts"]],
        "wall_s": round(wall, 1),
    }


def summary(rows: list[dict[str, object]]) -> str:
    """The markdown table of the campaigns so far."""
    if not rows:
        return "no campaign yet"
    n = len(rows)
    covered = sum(1 for r in rows if r["covered"])
    missing = sum(1 for r in rows if r["interval"] is None or r["censored"])
    means = [float(r["mean"]) for r in rows if r["mean"] is not None]  # type: ignore[arg-type]
    truth = float(rows[0]["truth"])  # type: ignore[arg-type]
    widths = [
        (r["interval"][1] - r["interval"][0]) / 2 / truth  # type: ignore[index]
        for r in rows
        if r["interval"] is not None
    ]
    bias = (sum(means) / len(means) - truth) / truth if means else math.nan
    walls = [float(r["wall_s"]) for r in rows]  # type: ignore[arg-type]
    return "\n".join(
        [
            "| campaigns | starts each | truth (mean capacity) | covered | no interval or "
            "censored | mean of the means vs truth | median half-width | wall per campaign |",
            "| --- | --- | --- | --- | --- | --- | --- | --- |",
            f"| {n} | {STARTS} | c={truth:.2f} | {covered}/{n} ({covered / n:.0%}) | {missing} | "
            f"{bias:+.1%} | {sorted(widths)[len(widths) // 2]:.1%} | "
            f"{sorted(walls)[len(walls) // 2]:.0f} s |",
        ]
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--campaigns", type=int, default=100, help="seeded campaigns")
    parser.add_argument("--scale", type=float, default=1.0, help="the simulator's time scale")
    parser.add_argument("--out", type=Path, default=OUT)
    parser.add_argument("--resume", action="store_true", help="keep the campaigns in --out")
    parser.add_argument("--summary", action="store_true", help="only print the table of --out")
    args = parser.parse_args()
    done: list[dict[str, object]] = []
    if (args.resume or args.summary) and args.out.exists():
        done = [json.loads(line) for line in args.out.read_text().splitlines() if line.strip()]
    if args.summary:
        print(summary(done))
        return
    if not args.resume:
        args.out.parent.mkdir(exist_ok=True)
        args.out.write_text("")
    curves = json.loads(RESULTS.read_text())
    truth = true_mean_capacity(curves)
    seeds = {int(r["seed"]) for r in done}  # type: ignore[call-overload]
    for seed in range(args.campaigns):
        if seed in seeds:
            continue
        row = one_campaign(seed, args.scale, truth)
        with args.out.open("a") as fh:
            fh.write(json.dumps(row) + "\n")
        done.append(row)
        print(
            f"seed {seed}: {row['starts']} mean {row['mean']} interval {row['interval']} "
            f"truth {truth:.2f} covered {row['covered']} ({row['wall_s']} s)",
            flush=True,
        )
    print(summary(done))


if __name__ == "__main__":
    main()
