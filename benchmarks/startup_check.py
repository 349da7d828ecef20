"""`servegate check` on the startup: detection of one phase 15 % slower, and A/A calls.

    python benchmarks/startup_check.py [--campaigns 20] [--workers 2] [--restarts 3]
        [--slower 0.15] [--load-weights 0.6] [--seed 1]

Each campaign runs on the simulated engine (sglang phases, set one by one: dist_init 1.5
s first, which the gate sometimes measures up to about 120 ms short (its first log line
is late), then load_weights (``--load-weights``, 0.6 s), 0.2 s of CUDA graphs and 0.2 s
of warmup) with three variants of ``restarts`` starts each, in the start order its seed
gives: ``baseline``, ``slow`` (load_weights ``--slower`` longer) and ``same`` (the
baseline's phases on its own server configuration). Then ``servegate check --json`` with
the default thresholds checks ``slow`` (an A/B pair: detected when a startup comparison
of load_weights is a regression, and only that phase) and ``same`` (an A/A pair: a call
is any startup regression), then both again with ``--max-regression
startup.load_weights=10%`` alone. Prints one row per campaign, the detection rate, the A/A
call rate, and the spread of the baseline's warm load_weights (the jitter, relative SD
of one start).
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import textwrap
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

PHASES = (
    "--phase dist_init=1.5 --phase load_weights={lw} --phase kv_cache=0 "
    "--phase attention_backend=0 --phase jit_compile=0 --phase capture_cuda_graphs=0.2 "
    "--phase http_start=0 --phase warmup=0.2"
)


def campaign_text(restarts: int, load_weights: float, slower: float) -> str:
    """baseline, slow and same, as in tests/report/test_check_startup.py."""
    slow = round(load_weights * (1.0 + slower), 4)
    return textwrap.dedent(
        f"""\
        [campaign]
        name = "startup"
        baseline = "baseline"

        [server]
        engine = "sglang"
        command = "{{python}} -m servegate sim --engine sglang --port {{port}} --profile fast"
        port = "auto"
        timeout_s = 60
        stop_grace_s = 5
        release_timeout_s = 10

        [bench]
        warmup = 0
        input_len = 8
        output_len = 2
        concurrency = [1]
        requests = 1
        repeats = 1
        restarts = {restarts}

        [[variant]]
        name = "baseline"
        args = "{PHASES.format(lw=load_weights)}"

        [[variant]]
        name = "slow"
        args = "{PHASES.format(lw=slow)}"

        [[variant]]
        name = "same"
        args = "{PHASES.format(lw=load_weights)} --phase download=0"
        """
    )


def _servegate(cwd: Path, env: dict[str, str], *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "servegate", *args],
        cwd=cwd,
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
        check=False,
    )


def _startup_regressions(doc: dict[str, Any]) -> list[str]:
    return [
        f"{c['load']} {c['metric']}"
        for v in doc["variants"]
        for c in v["checks"]
        if c["metric"].startswith("startup") and c["result"] == "regression"
    ]


def one_campaign(seed: int, args: argparse.Namespace) -> dict[str, Any]:
    """Run one campaign and check slow and same; the outcome as a dict."""
    with tempfile.TemporaryDirectory(prefix="sg-startup-check-") as tmp:
        folder = Path(tmp)
        env = {
            **os.environ,
            "SERVEGATE_HISTORY": str(folder / "history.db"),
            "SERVEGATE_STATE_DIR": str(folder),
        }
        env.pop("GITHUB_STEP_SUMMARY", None)
        (folder / "c.toml").write_text(
            campaign_text(args.restarts, args.load_weights, args.slower), encoding="utf-8"
        )
        run = _servegate(folder, env, "run", "c.toml", "--db", "c.db", "--seed", str(seed), "-q")
        if run.returncode != 0:
            return {"seed": seed, "error": run.stderr.strip().splitlines()[-1:]}
        out: dict[str, Any] = {"seed": seed}
        for variant in ("slow", "same"):
            check = _servegate(folder, env, "check", "--db", "c.db", "--variant", variant, "--json")
            doc = json.loads(check.stdout)
            out[variant] = {"exit": check.returncode, "regressions": _startup_regressions(doc)}
            for v in doc["variants"]:
                for c in v["checks"]:
                    if (c["load"], c["metric"]) == ("warm start", "startup.load_weights"):
                        out[variant]["warm_load_weights"] = [c["baseline"], c["candidate"]]
            # the phase alone: one callable comparison, no Bonferroni widening
            alone = _servegate(
                folder, env, "check", "--db", "c.db", "--variant", variant, "--json",
                "--max-regression", "startup.load_weights=10%",
            )  # fmt: skip
            out[variant]["phase_alone"] = _startup_regressions(json.loads(alone.stdout))
        # the jitter: the baseline's warm load_weights start by start
        from servegate.report.check import startup_values
        from servegate.report.data import load_campaign, resolve_campaign
        from servegate.store import Store

        with Store.open(folder / "c.db", read_only=True) as store:
            data = load_campaign(store, resolve_campaign(store, None).id)
        values = startup_values(data, "baseline").get(("warm", "load_weights"), [])
        out["baseline_warm_load_weights_ms"] = [round(v, 2) for v in values]
        return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--campaigns", type=int, default=20)
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--restarts", type=int, default=3)
    parser.add_argument("--slower", type=float, default=0.15)
    parser.add_argument("--load-weights", type=float, default=0.6)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--jsonl", type=Path, help="append each campaign's outcome here")
    args = parser.parse_args()
    seeds = [args.seed + i for i in range(args.campaigns)]
    detected = aa_calls = done = alone_detected = alone_aa = 0
    spreads: list[float] = []
    print("seed  slow: exit, startup regressions          same: exit, startup regressions")
    with ThreadPoolExecutor(max_workers=args.workers) as pool:
        for result in pool.map(lambda s: one_campaign(s, args), seeds):
            if "error" in result:
                print(f"{result['seed']:>4}  campaign failed: {result['error']}")
                continue
            done += 1
            slow, same = result["slow"], result["same"]
            hit = bool(slow["regressions"]) and all(
                r.endswith("startup.load_weights") for r in slow["regressions"]
            )
            detected += hit
            aa_calls += bool(same["regressions"])
            alone_detected += bool(slow["phase_alone"])
            alone_aa += bool(same["phase_alone"])
            values = result["baseline_warm_load_weights_ms"]
            if len(values) >= 2:
                spreads.append(statistics.stdev(values) / statistics.fmean(values))
            print(
                f"{result['seed']:>4}  {slow['exit']}, {', '.join(slow['regressions']) or '-':<34}"
                f"{same['exit']}, {', '.join(same['regressions']) or '-'}"
            )
            if args.jsonl is not None:
                with args.jsonl.open("a", encoding="utf-8") as handle:
                    handle.write(json.dumps(result) + "\n")
    if not done:
        sys.exit("no campaign finished")
    print(
        f"detected (load_weights only, {args.slower * 100:g} % slower): {detected}/{done} "
        f"({100 * detected / done:.1f} %); A/A startup calls: {aa_calls}/{done} "
        f"({100 * aa_calls / done:.1f} %)"
    )
    print(
        f"--max-regression startup.load_weights=10% alone: detected {alone_detected}/{done} "
        f"({100 * alone_detected / done:.1f} %); A/A calls {alone_aa}/{done} "
        f"({100 * alone_aa / done:.1f} %)"
    )
    if spreads:
        print(
            "baseline warm load_weights, relative SD within a campaign: median "
            f"{100 * statistics.median(spreads):.2f} %, max {100 * max(spreads):.2f} %"
        )


if __name__ == "__main__":
    main()
