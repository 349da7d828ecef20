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
interleaved order. ``model`` runs no process: it draws each request's durations from
the simulator's own statistical model (``servegate.sim.model``: a lognormal speed factor
and a run factor per start, a noise factor per first token and per decode step) and
hands them to the report's estimate and call, with the A/A noise floor by the report's
rule: thousands of campaigns in minutes, for the percentiles and the few-start designs.
``auto`` (the default) takes ``runner`` when the campaign file
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
LOAD = 4  # concurrency of the one load point (--concurrency)
# every latency percentile studied: the report's (p50, p99) and p90, of TTFT, TPOT, E2EL
LATENCY_KEYS = tuple(
    f"{name}_ms_{p}" for name in ("ttft", "tpot", "e2el") for p in ("p50", "p90", "p99")
)
METRIC_KEYS = ("output_throughput", *LATENCY_KEYS)
TRUTH = {  # true ratio variant / baseline, per variant and metric
    **{("same", key): 1.0 for key in METRIC_KEYS},
    ("faster", "output_throughput"): 1.0 / SPEEDUP,
    **{("faster", key): SPEEDUP for key in LATENCY_KEYS},
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
    repeats: int = 1  # repeats on each start of the restarts design
    concurrency: int = LOAD
    aa_split: str = "report"  # model driver: the report's A/A rule, or "any" (see --aa-split)

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
    repeats = study.repeats if design == "restarts" else study.measurements
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
        concurrency = [{study.concurrency}]
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


def study_metrics() -> list[Any]:
    """The report's metrics, and the percentiles it does not show (p90, E2EL p99) built
    the same way: each is compared by the report's own code."""
    from dataclasses import replace

    from servegate.report.bootstrap import quantile
    from servegate.report.compare import METRICS, metric

    known = {m.key: m for m in METRICS}
    out = []
    for key in METRIC_KEYS:
        if key in known:
            out.append(known[key])
            continue
        name, _, p = key.partition("_ms_")
        like = metric(f"{name}_ms_p50" if name != "ttft" else "ttft_ms_p99")
        q = float(p.removeprefix("p")) / 100.0
        label = f"{name.upper()} {p}"
        out.append(replace(like, key=key, label=label, stat=quantile(q)))
    return out


def model_side(study: Study, rng: Any, starts: int, repeats: int, scale: float) -> dict[str, Any]:
    """One variant's values drawn from the simulator's own model (``servegate.sim.model``):
    a lognormal speed factor and a run factor per start, a noise factor per first token
    and per decode step; ``scale`` multiplies every duration (the faster variant: 0.95)."""
    import numpy as np

    from servegate.report.hierarchy import nested

    sd, jitter, tokens = study.instance_sd, study.jitter, study.output_len
    values: dict[str, list[list[Any]]] = {k: [] for k in ("thr", "ttft", "tpot", "e2el")}
    for _ in range(starts):
        factor = math.exp(sd * rng.normal() - sd * sd / 2.0) if sd else 1.0
        run = max(0.2, 1.0 + jitter / 4.0 * rng.normal())
        per: dict[str, list[Any]] = {k: [] for k in values}
        for _ in range(repeats):
            n = study.requests
            noise = np.maximum(0.2, 1.0 + jitter * rng.normal(size=n))
            ttft = study.ttft_ms * scale / factor * run * noise
            step_noise = np.maximum(0.2, 1.0 + jitter * rng.normal(size=(n, tokens - 1)))
            steps = study.itl_ms * scale / factor * run * step_noise
            e2el = ttft + steps.sum(axis=1)
            per["ttft"].append(ttft)
            per["tpot"].append(steps.mean(axis=1))
            per["e2el"].append(e2el)
            per["thr"].append(np.asarray([study.concurrency * tokens / e2el.mean() * 1000.0]))
        for key, kept in values.items():
            kept.append(per[key])
    return {key: nested(v) for key, v in values.items()}


def run_model(study: Study, design: str, index: int) -> dict[str, Any]:
    """One campaign of the model driver: the report's estimate and call on drawn values,
    and the A/A noise floor by the report's rule (halves of alternate starts when each
    has two, else no call)."""
    import numpy as np

    from servegate.report.bootstrap import call, estimate_nested, seeded_rng
    from servegate.report.hierarchy import Nested, nested

    rng = np.random.default_rng([index, DESIGNS.index(design)])
    starts = study.measurements if design == "restarts" else 1
    repeats = study.repeats if design == "restarts" else study.measurements
    sides = {
        name: model_side(study, rng, starts, repeats, SPEEDUP if name == "faster" else 1.0)
        for name in VARIANTS
    }
    rows: dict[str, Any] = {}

    def row(a: Nested, b: Nested, m: Any, truth: float, *keys: str) -> dict[str, Any]:
        est = estimate_nested(
            a, b, stat=m.stat, resamples=study.resamples, rng=seeded_rng(index, *keys)
        )
        said = call(est, m.direction, 0.01)
        if est is None or est.ratio_low is None or est.ratio_high is None:
            return {"refused": said, "call_1": said}
        return {
            "ratio": est.ratio,
            "low": est.ratio_low,
            "high": est.ratio_high,
            "covered": est.ratio_low <= truth <= est.ratio_high,
            "call_0": call(est, m.direction, 0.0),
            "call_1": said,
            "starts": [est.starts_baseline, est.starts_variant],
        }

    def halves(h: Nested) -> tuple[Nested, Nested]:
        groups = [
            [
                h.values[h.point_offsets[p] : h.point_offsets[p + 1]]
                for p in range(h.start_offsets[s], h.start_offsets[s + 1])
            ]
            for s in range(h.starts)
        ]
        return nested(groups[0::2]), nested(groups[1::2])

    for m in study_metrics():
        short = m.key.split("_ms_")[0] if "_ms_" in m.key else "thr"
        for variant in ("same", "faster"):
            truth = TRUTH[(variant, m.key)]
            got = row(sides["baseline"][short], sides[variant][short], m, truth, variant, m.key)
            rows[f"{variant}/{m.key}"] = got
        if starts >= 4 or (study.aa_split == "any" and starts >= 2):
            a, b = halves(sides["baseline"][short])
            rows[f"noise/{m.key}"] = row(a, b, m, 1.0, "A/A", m.key)
        else:
            rows[f"noise/{m.key}"] = {"call_1": "needs more starts", "covered": None}
    rows["check/same"] = model_check(study, sides, index)
    return rows


def model_check(study: Study, sides: dict[str, Any], index: int) -> dict[str, Any]:
    """``servegate check`` of ``same`` against ``baseline`` with its default thresholds:
    each interval at the check's per-comparison confidence; a false alarm when any of
    its metrics is called worse."""
    from servegate.report import check as checks
    from servegate.report.bootstrap import call, estimate_nested, seeded_rng

    chosen = [m for m in study_metrics() if m.key in checks.DEFAULT_THRESHOLDS]
    # servegate before the per-comparison confidence took 95 % for each comparison
    adjust = getattr(checks, "per_comparison_confidence", lambda confidence, _: confidence)
    each = adjust(0.95, len(chosen))
    said = {}
    for m in chosen:
        short = m.key.split("_ms_")[0] if "_ms_" in m.key else "thr"
        est = estimate_nested(
            sides["baseline"][short],
            sides["same"][short],
            stat=m.stat,
            confidence=each,
            resamples=study.resamples,
            rng=seeded_rng(index, "check", m.key),
        )
        said[m.key] = call(est, m.direction, checks.DEFAULT_THRESHOLDS[m.key])
    return {"calls": said, "regression": "worse" in said.values()}


def measure(study: Study, index: int, designs: tuple[str, ...] = DESIGNS) -> dict[str, Any]:
    """The designs of campaign ``index``; what each interval says about the truth."""
    from servegate.report.bootstrap import call
    from servegate.report.compare import compare
    from servegate.report.data import load_campaign
    from servegate.store import Store

    # the report's own comparison, on every metric whose truth is known
    metrics = study_metrics()
    load = f"c={study.concurrency}"

    record: dict[str, Any] = {"index": index, "driver": study.driver, "designs": {}}
    for design in designs:
        started = time.perf_counter()
        if study.driver == "model":
            record["designs"][design] = {
                "seconds": round(time.perf_counter() - started, 2),
                "rows": run_model(study, design, index),
            }
            record["designs"][design]["seconds"] = round(time.perf_counter() - started, 2)
            continue
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
            comp = report.get(variant, load, key)
            est = comp.estimate if comp else None
            if est is None or est.ratio_low is None or est.ratio_high is None:
                # no interval: why (not estimable, needs more starts), or lost
                rows[f"{variant}/{key}"] = None if comp is None else {"refused": comp.call}
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
        for key in METRIC_KEYS:  # the A/A noise floor: the baseline's halves
            floor = report.noise(load, key)
            if floor is None:
                continue
            est = floor.estimate
            interval = est is not None and est.ratio_low is not None and est.ratio_high is not None
            rows[f"noise/{key}"] = {
                "split": floor.split,
                "call_1": floor.call,
                "covered": (est.ratio_low <= 1.0 <= est.ratio_high)  # type: ignore[operator]
                if interval and est is not None
                else None,
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
    designs = [d for d in DESIGNS if any(d in r["designs"] for r in records)]
    lines = [
        "| design | variant | metric | true ratio | coverage of the 95 % interval "
        "[Wilson 95 %] | median half-width | mean estimate | no interval (why) |",
        "| --- | --- | --- | ---: | --- | ---: | ---: | --- |",
    ]
    for design in designs:
        for (variant, key), truth in TRUTH.items():
            got = [r["designs"][design]["rows"].get(f"{variant}/{key}") for r in records]
            got = [row for row in got if row is not None and design in r_designs(records)]
            rows = [row for row in got if "refused" not in row]
            refused: dict[str, int] = {}
            for row in got:
                if "refused" in row:
                    refused[row["refused"]] = refused.get(row["refused"], 0) + 1
            why = ", ".join(f"{n} {w}" for w, n in sorted(refused.items())) or "0"
            if not rows:
                lines.append(f"| {design} | {variant} | {key} | {truth:.4f} | - | - | - | {why} |")
                continue
            covered = sum(row["covered"] for row in rows)
            widths = sorted((row["high"] - row["low"]) / 2 for row in rows)
            estimate = sum(row["ratio"] for row in rows) / len(rows)
            lines.append(
                f"| {design} | {variant} | {key} | {truth:.4f} | {_pct(covered, len(rows))} | "
                f"{100 * widths[len(widths) // 2]:.2f} % | {estimate:.4f} | {why} |"
            )
    lines += [
        "",
        "A/A: `same` against `baseline`, and the baseline's noise floor (its halves); "
        "calls with min_effect 1 %, over the comparisons that had an interval:",
        "",
        "| design | comparison | metric | called better or worse | not called (why) |",
        "| --- | --- | --- | --- | --- |",
    ]
    totals = {d: [0, 0] for d in designs}
    for design in designs:
        for kind in ("same", "noise"):
            for key in METRIC_KEYS:
                got = [r["designs"][design]["rows"].get(f"{kind}/{key}") for r in records]
                got = [row for row in got if row is not None]
                made = [row for row in got if row.get("call_1") in CALLED_OR_NOT]
                refused: dict[str, int] = {}
                for row in got:
                    said = row.get("refused") or row.get("call_1")
                    if said not in CALLED_OR_NOT:
                        refused[str(said)] = refused.get(str(said), 0) + 1
                why = ", ".join(f"{n} {w}" for w, n in sorted(refused.items())) or "0"
                called = sum(row["call_1"] in ("better", "worse") for row in made)
                totals[design][0] += called
                totals[design][1] += len(made)
                share = _pct(called, len(made)) if made else "-"
                label = "same vs baseline" if kind == "same" else "noise floor"
                lines.append(f"| {design} | {label} | {key} | {share} | {why} |")
    lines.append("")
    for design in designs:
        called, made = totals[design]
        if made:
            lines.append(
                f"{design}: {called} false calls in {made} A/A comparisons with an interval "
                f"({_pct(called, made)})."
            )
    for design in designs:
        checked = [r["designs"][design]["rows"].get("check/same") for r in records]
        checked = [c for c in checked if c is not None]
        if checked:
            alarms = sum(c["regression"] for c in checked)
            uncalled = sum(
                any(v in ("not estimable", "needs more starts") for v in c["calls"].values())
                for c in checked
            )
            lines.append(
                f"{design}: servegate check of same against baseline (default thresholds, "
                f"its per-comparison confidence): REGRESSION in {_pct(alarms, len(checked))} "
                f"of pairs; {uncalled} pairs had a metric it could not call."
            )
    seconds = [r["designs"][d]["seconds"] for r in records for d in designs if d in r["designs"]]
    drivers = sorted({str(r.get("driver", "not recorded")) for r in records})
    lines += [
        "",
        f"{len(records)} campaigns, driver {' and '.join(drivers)}; "
        f"{sum(seconds) / 60:.1f} min of campaign time "
        f"(median {sorted(seconds)[len(seconds) // 2]:.1f} s per campaign and design).",
    ]
    return "\n".join(lines)


CALLED_OR_NOT = ("better", "worse", "no meaningful difference")


def r_designs(records: list[dict[str, Any]]) -> set[str]:
    """The designs any record measured."""
    return {d for r in records for d in r["designs"]}


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
    parser.add_argument("--requests", type=int, default=12, help="requests per point")
    parser.add_argument("--repeats", type=int, default=1, help="repeats per start (restarts)")
    parser.add_argument("--concurrency", type=int, default=LOAD)
    parser.add_argument("--designs", default=",".join(DESIGNS), help="one-instance,restarts")
    parser.add_argument(
        "--aa-split",
        choices=("report", "any"),
        default="report",
        help="model driver's noise floor: the report's rule (halves of two starts or more), "
        "or any (alternate starts whenever there are two: servegate before the rule, to "
        "measure the code of that time)",
    )
    parser.add_argument("--output-len", type=int, default=16)
    parser.add_argument("--resamples", type=int, default=2000)
    parser.add_argument("--workers", type=int, default=1)
    parser.add_argument("--driver", choices=("auto", "runner", "direct", "model"), default="auto")
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
        repeats=args.repeats,
        concurrency=args.concurrency,
        aa_split=args.aa_split,
    )
    designs = tuple(d for d in args.designs.split(",") if d)
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
            futures = [pool.submit(measure, study, index, designs) for index in todo]
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
