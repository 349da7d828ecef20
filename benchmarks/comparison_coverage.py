"""Do 95 % intervals cover the true difference? Repeats on one instance vs restart replicates.

Each small campaign runs three variants of the simulated engine whose servers draw a
per-start speed factor (``--instance-sd``, or ``--regimes``), as a real server instance
can settle into a performance regime for its whole life (vLLM #39903):

- ``baseline``;
- ``same``: the baseline's configuration under another model name (so it is its own
  server), the A/A case: true ratio 1 for every metric;
- ``faster``: every duration 5 % shorter (``--itl-ms`` and ``--ttft-ms`` x 0.95, no
  prefill cost), so in expectation output throughput is exactly 1/0.95 of the
  baseline's and TPOT and TTFT exactly 0.95 of it, whatever the speed factors drawn.

Two designs with the same number of measurements per variant:

- ``one-instance``: one start per variant, ``--measurements`` repeats on it;
- ``restarts``: ``--measurements`` starts per variant, one repeat on each, the starts of
  all variants interleaved in a seeded, balanced random order (each round starts every
  variant once, in a shuffled order).

Each campaign is stored in a real SQLite store and compared by ``servegate.report``
exactly as ``servegate report`` does; the script records, per variant and metric,
whether the 95 % interval holds the true ratio, and the call with ``min_effect`` 0 and
1 %. Results go to a JSON-lines file as each campaign ends (``--resume`` continues it);
the summary is printed as markdown tables for benchmarks/README.md.

Drivers: ``runner`` writes each campaign as a campaign file with ``restarts = K`` in
``[bench]`` and runs it with ``servegate run`` (the real campaign runner: seeded
interleaved rounds, a preflight, gate and stop per start, warmup once per start);
``direct``
launches the same simulator commands itself through ``servegate.launch``, measures with
``servegate.bench.run_point`` and stores with ``servegate.store``, in the same
interleaved order. ``auto`` (the default) takes ``runner`` when the campaign file
accepts ``restarts``, else ``direct``.

    python benchmarks/comparison_coverage.py --campaigns 200 --workers 2
    python benchmarks/comparison_coverage.py --campaigns 100 --regimes 1.0:0.7,0.85:0.3
"""

from __future__ import annotations

import argparse
import json
import math
import os
import platform
import random
import socket
import subprocess
import sys
import tempfile
import textwrap
import time
from collections.abc import Iterable
from concurrent.futures import ProcessPoolExecutor, as_completed
from dataclasses import dataclass
from pathlib import Path
from typing import Any

SPEEDUP = 0.95  # the faster variant's durations, as a fraction of the baseline's
LOAD = 4  # concurrency of the one load point
TRUTH = {  # true ratio variant / baseline, per variant and metric
    ("same", "output_throughput"): 1.0,
    ("same", "tpot_ms_p50"): 1.0,
    ("same", "ttft_ms_p50"): 1.0,
    ("faster", "output_throughput"): 1.0 / SPEEDUP,
    ("faster", "tpot_ms_p50"): SPEEDUP,
    ("faster", "ttft_ms_p50"): SPEEDUP,
}
DESIGNS = ("one-instance", "restarts")


@dataclass(frozen=True, slots=True, kw_only=True)
class Study:
    """What every campaign of one study shares."""

    measurements: int  # per variant: starts (restarts) or repeats (one instance)
    instance_sd: float
    regimes: str | None
    jitter: float
    itl_ms: float
    ttft_ms: float
    requests: int
    output_len: int
    driver: str
    resamples: int

    def sim_args(self, variant: str, seed: int, counter: Path) -> list[str]:
        """The simulator's flags for ``variant`` (the port is added by the caller)."""
        scale = SPEEDUP if variant == "faster" else 1.0
        args = [
            "--engine",
            "sglang",
            "--startup",
            "0.05",
            "--model",
            "sim-same" if variant == "same" else "sim",
            "--itl-ms",
            f"{self.itl_ms * scale:g}",
            "--ttft-ms",
            f"{self.ttft_ms * scale:g}",
            "--jitter",
            f"{self.jitter:g}",
            "--seed",
            str(seed),
            "--start-counter",
            str(counter),
        ]
        if self.instance_sd:
            args += ["--instance-sd", f"{self.instance_sd:g}"]
        if self.regimes:
            args += ["--regimes", self.regimes]
        return args


VARIANTS = ("baseline", "same", "faster")


def runner_has_restarts() -> bool:
    """Whether the campaign file accepts ``restarts`` in ``[bench]`` (the runner restarts)."""
    from servegate.campaign.schema import BenchTable

    return "restarts" in BenchTable.model_fields


def interleaved(names: Iterable[str], rounds: int, rng: random.Random) -> list[str]:
    """Each round starts every variant once, in a shuffled order: balanced, never all
    the baseline first."""
    order: list[str] = []
    for _ in range(rounds):
        batch = list(names)
        rng.shuffle(batch)
        order += batch
    return order


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def run_direct(study: Study, design: str, index: int, folder: Path) -> Path:
    """One campaign, the servers launched and measured here; returns the database."""
    from servegate.bench import BenchSettings, run_point
    from servegate.launch import launch
    from servegate.store import Store

    db = folder / f"{design}.db"
    counter = folder / f"{design}-starts"
    starts = study.measurements if design == "restarts" else 1
    repeats = 1 if design == "restarts" else study.measurements
    order = interleaved(VARIANTS, starts, random.Random(f"{index}:{design}"))
    done: dict[str, int] = dict.fromkeys(VARIANTS, 0)
    with Store.open(db) as store:
        cid = store.campaign(f"{design}-{index}", "(benchmarks/comparison_coverage.py)", "baseline")
        for name in VARIANTS:
            store.add_variant(cid, name)
        for name in order:
            port = _free_port()
            argv = [
                sys.executable,
                "-m",
                "servegate",
                "sim",
                "--port",
                str(port),
                *study.sim_args(name, index, counter),
            ]
            aid = store.start_attempt(
                cid,
                variant=name,
                server_key=name,
                command=argv,
                env={},
                host="local",
                versions={},
                git_commit=None,
            )
            server = launch(
                argv,
                engine="sglang",
                port=port,
                timeout_s=120,
                stall_s=None,
                env=None,
                cwd=None,
                log_path=str(folder / f"{design}-{aid}.log"),
                name=None,
                keep=False,
            )
            try:
                store.record_verdict(aid, server.verdict)
                for _ in range(repeats):
                    repeat = done[name]
                    result = run_point(
                        BenchSettings(
                            url=server.url,
                            concurrency=LOAD,
                            requests=study.requests,
                            warmup=1,
                            input_len=16,
                            output_len=study.output_len,
                            seed=repeat,
                        )
                    )
                    store.record_point(
                        aid, variant=name, load=f"c={LOAD}", repeat=repeat, result=result
                    )
                    done[name] += 1
            finally:
                store.record_stop(aid, server.stop(grace_s=5.0))
            store.finish_attempt(aid, "done")
        store.set_campaign_status(cid, "done")
    return db


def run_runner(study: Study, design: str, index: int, folder: Path) -> Path:
    """One campaign through ``servegate run`` with ``restarts`` in ``[bench]``."""
    starts = study.measurements if design == "restarts" else 1
    repeats = 1 if design == "restarts" else study.measurements
    counter = folder / f"{design}-starts"
    variants = []
    for name in VARIANTS:
        flags = " ".join(study.sim_args(name, index, counter))
        variants.append(f'[[variant]]\nname = "{name}"\nargs = "{flags}"\n')
    text = textwrap.dedent(
        f"""\
        [campaign]
        name = "{design}-{index}"
        baseline = "baseline"

        [server]
        engine = "sglang"
        command = "{{python}} -m servegate sim --port {{port}}"
        port = "auto"
        timeout_s = 120
        stop_grace_s = 5

        [bench]
        concurrency = [{LOAD}]
        requests = {study.requests}
        warmup = 1
        input_len = 16
        output_len = {study.output_len}
        repeats = {repeats}
        restarts = {starts}
        seed = 0

        """
    ) + "\n".join(variants)
    path = folder / f"{design}.toml"
    path.write_text(text, encoding="utf-8")
    db = folder / f"{design}.db"
    out = subprocess.run(
        [sys.executable, "-m", "servegate", "run", str(path), "--db", str(db)],
        capture_output=True,
        text=True,
        timeout=1800,
        check=False,
    )
    if out.returncode != 0:
        raise RuntimeError(f"servegate run exited {out.returncode}: {out.stderr[-2000:]}")
    return db


def measure(study: Study, index: int) -> dict[str, Any]:
    """Both designs of campaign ``index``; what each interval says about the truth."""
    from servegate.report.bootstrap import call
    from servegate.report.compare import compare, metric
    from servegate.report.data import load_campaign
    from servegate.store import Store

    # the report's own comparison, restricted to the metrics whose truth is known
    metrics = [metric(key) for key in sorted({key for _, key in TRUTH})]

    record: dict[str, Any] = {"index": index, "driver": study.driver, "designs": {}}
    for design in DESIGNS:
        started = time.perf_counter()
        with tempfile.TemporaryDirectory(prefix="coverage-") as tmp:
            folder = Path(tmp)
            run = run_runner if study.driver == "runner" else run_direct
            db = run(study, design, index, folder)
            with Store.open(db) as store:
                cid = store.find_campaign(f"{design}-{index}")
                assert cid is not None
                data = load_campaign(store, cid.id)
            report = compare(data, resamples=study.resamples, metrics=metrics)
        rows: dict[str, Any] = {}
        for (variant, key), truth in TRUTH.items():
            comp = report.get(variant, f"c={LOAD}", key)
            est = comp.estimate if comp else None
            if est is None or est.ratio_low is None or est.ratio_high is None:
                rows[f"{variant}/{key}"] = None
                continue
            direction = comp.metric.direction if comp else "higher"
            rows[f"{variant}/{key}"] = {
                "ratio": est.ratio,
                "low": est.ratio_low,
                "high": est.ratio_high,
                "covered": est.ratio_low <= truth <= est.ratio_high,
                "call_0": call(est, direction, 0.0),
                "call_1": call(est, direction, 0.01),
                "starts": [est.starts_baseline, est.starts_variant],
            }
        record["designs"][design] = {
            "seconds": round(time.perf_counter() - started, 2),
            "rows": rows,
        }
    return record


# --- the summary ------------------------------------------------------------------------


def wilson(hits: int, n: int, z: float = 1.96) -> tuple[float, float]:
    """The Wilson 95 % interval of a proportion."""
    if n == 0:
        return math.nan, math.nan
    p = hits / n
    centre = (p + z * z / (2 * n)) / (1 + z * z / n)
    half = z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / (1 + z * z / n)
    return centre - half, centre + half


def _pct(hits: int, n: int) -> str:
    low, high = wilson(hits, n)
    return f"{100 * hits / n:.1f} % [{100 * low:.1f}, {100 * high:.1f}] ({hits}/{n})"


def summarize(records: list[dict[str, Any]]) -> str:
    """Markdown tables: coverage per design, variant and metric; A/A call rates."""
    lines = [
        "| design | variant | metric | true ratio | coverage of the 95 % interval "
        "[Wilson 95 %] | median half-width | mean estimate |",
        "| --- | --- | --- | ---: | --- | ---: | ---: |",
    ]
    for design in DESIGNS:
        for (variant, key), truth in TRUTH.items():
            rows = [r["designs"][design]["rows"].get(f"{variant}/{key}") for r in records]
            rows = [row for row in rows if row is not None]
            if not rows:
                continue
            covered = sum(row["covered"] for row in rows)
            widths = sorted((row["high"] - row["low"]) / 2 for row in rows)
            estimate = sum(row["ratio"] for row in rows) / len(rows)
            lines.append(
                f"| {design} | {variant} | {key} | {truth:.4f} | {_pct(covered, len(rows))} | "
                f"{100 * widths[len(widths) // 2]:.2f} % | {estimate:.4f} |"
            )
    lines += [
        "",
        "| design | metric | A/A called better, min_effect 0 | A/A called better, 1 % | "
        "A/A called better or worse, 0 | better or worse, 1 % |",
        "| --- | --- | --- | --- | --- | --- |",
    ]
    for design in DESIGNS:
        for key in ("output_throughput", "tpot_ms_p50", "ttft_ms_p50"):
            rows = [r["designs"][design]["rows"].get(f"same/{key}") for r in records]
            rows = [row for row in rows if row is not None]
            if not rows:
                continue
            n = len(rows)
            better = [sum(row[c] == "better" for row in rows) for c in ("call_0", "call_1")]
            called = [
                sum(row[c] in ("better", "worse") for row in rows) for c in ("call_0", "call_1")
            ]
            lines.append(
                f"| {design} | {key} | {_pct(better[0], n)} | {_pct(better[1], n)} | "
                f"{_pct(called[0], n)} | {_pct(called[1], n)} |"
            )
    seconds = [r["designs"][d]["seconds"] for r in records for d in DESIGNS]
    drivers = sorted({str(r.get("driver", "not recorded")) for r in records})
    lines += [
        "",
        f"{len(records)} campaigns, driver {' and '.join(drivers)}; "
        f"{sum(seconds) / 60:.1f} min of campaign time "
        f"(median {sorted(seconds)[len(seconds) // 2]:.1f} s per campaign and design).",
    ]
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--campaigns", type=int, default=200)
    parser.add_argument("--first", type=int, default=0, help="index of the first campaign")
    parser.add_argument("--measurements", type=int, default=5, help="starts or repeats")
    parser.add_argument("--instance-sd", type=float, default=0.05)
    parser.add_argument("--regimes", default=None, help="e.g. 1.0:0.7,0.85:0.3")
    parser.add_argument("--jitter", type=float, default=0.05)
    parser.add_argument("--itl-ms", type=float, default=5.0)
    parser.add_argument("--ttft-ms", type=float, default=20.0)
    parser.add_argument("--requests", type=int, default=12)
    parser.add_argument("--output-len", type=int, default=16)
    parser.add_argument("--resamples", type=int, default=2000)
    parser.add_argument("--workers", type=int, default=1)
    parser.add_argument("--driver", choices=("auto", "runner", "direct"), default="auto")
    parser.add_argument("--out", type=Path, default=Path("comparison_coverage.jsonl"))
    parser.add_argument("--resume", action="store_true", help="keep --out, skip done ones")
    parser.add_argument("--summary", action="store_true", help="only summarise --out")
    args = parser.parse_args()
    driver = args.driver
    if driver == "auto":
        driver = "runner" if runner_has_restarts() else "direct"
    study = Study(
        measurements=args.measurements,
        instance_sd=args.instance_sd,
        regimes=args.regimes,
        jitter=args.jitter,
        itl_ms=args.itl_ms,
        ttft_ms=args.ttft_ms,
        requests=args.requests,
        output_len=args.output_len,
        driver=driver,
        resamples=args.resamples,
    )
    records: list[dict[str, Any]] = []
    if (args.resume or args.summary) and args.out.exists():
        records = [json.loads(line) for line in args.out.read_text().splitlines() if line]
    elif args.out.exists():
        args.out.unlink()
    if not args.summary:
        have = {r["index"] for r in records}
        todo = [i for i in range(args.first, args.first + args.campaigns) if i not in have]
        print(
            f"driver {driver}; {len(todo)} campaigns to run, {args.workers} at a time; "
            f"{platform.platform()}, {os.cpu_count()} CPUs, load {os.getloadavg()[0]:.1f}",
            file=sys.stderr,
        )
        begun = time.perf_counter()
        with ProcessPoolExecutor(max_workers=args.workers) as pool, args.out.open("a") as out:
            futures = [pool.submit(measure, study, index) for index in todo]
            for count, future in enumerate(as_completed(futures), 1):
                record = future.result()
                records.append(record)
                out.write(json.dumps(record) + "\n")
                out.flush()
                if count % 10 == 0 or count == len(todo):
                    print(
                        f"{count}/{len(todo)} campaigns, {time.perf_counter() - begun:.0f} s, "
                        f"load {os.getloadavg()[0]:.1f}",
                        file=sys.stderr,
                    )
    print(summarize(sorted(records, key=lambda r: r["index"])))


if __name__ == "__main__":
    main()
