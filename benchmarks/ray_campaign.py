"""Wall time of a campaign on a Ray cluster against the same campaign run serially, and the
driver's cost per result it receives.

An 8-variant campaign of simulated servers whose start takes ``--startup`` seconds
without CPU (the simulator sleeps through its phases, as a real engine's start is
dominated by loading and compiling) runs twice:

1. on a Ray cluster started here (``ray.cluster_utils.Cluster``: a head without GPUs and
   ``--nodes`` worker nodes, each declaring one GPU), with ``servegate.campaign.run``
   in this process as the driver, every call the nodes send timed as the driver
   replays it into the store;
2. serially on this machine (``servegate run`` without ``--ray``).

Goal: the cluster run takes at most 30 % of the serial run plus 10 s.

    pip install -e '.[ray]' && python benchmarks/ray_campaign.py --startup 20 --nodes 4
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import textwrap
import time
from pathlib import Path
from typing import Any

SERVEGATE = [sys.executable, "-m", "servegate"]
SIM_FLAGS = "--engine sglang --profile fast --jitter 0.02 --startup"


def campaign_file(folder: Path, startup_s: float, variants: int) -> Path:
    text = textwrap.dedent(
        f"""\
        [campaign]
        name = "ray-bench"
        baseline = "baseline"

        [server]
        engine = "sglang"
        command = "{{python}} -m servegate sim --port {{port}} {SIM_FLAGS} {startup_s}"
        port = "auto"
        timeout_s = {startup_s * 3 + 60}
        stop_grace_s = 5
        gpus = 1

        [bench]
        warmup = 1
        input_len = 32
        output_len = 8
        concurrency = [1, 4]
        requests = 16
        repeats = 2
        """
    )
    text += '\n[[variant]]\nname = "baseline"\n'
    for n in range(1, variants):
        text += f'\n[[variant]]\nname = "itl{n}"\nargs = "--itl-ms {4 + n}"\n'
    path = folder / "ray-bench.toml"
    path.write_text(text, encoding="utf-8")
    return path


def on_cluster(file: Path, db: Path, nodes: int) -> dict[str, Any]:
    import ray
    from ray.cluster_utils import Cluster

    from servegate import campaign
    from servegate.campaign import cluster as cluster_module

    timings: dict[str, list[float]] = {}
    replay = cluster_module._replay

    def timed(flight: Any, method: str, args: Any, kwargs: Any, recorder: Any) -> None:
        began = time.perf_counter()
        replay(flight, method, args, kwargs, recorder)
        timings.setdefault(method, []).append(time.perf_counter() - began)

    cluster_module._replay = timed  # type: ignore[assignment]
    began = time.perf_counter()
    ray_cluster = Cluster(initialize_head=True, head_node_args={"num_cpus": 1})
    for _ in range(nodes):
        ray_cluster.add_node(num_cpus=1, num_gpus=1, resources={"accelerator_type:SIM": 1})
    ray_cluster.wait_for_nodes()
    up_s = time.perf_counter() - began
    try:
        plan = campaign.load_campaign(file)
        cpu0 = time.process_time()
        began = time.perf_counter()
        done = campaign.run(plan, db, options=campaign.RunOptions(ray=ray_cluster.address))
        wall = time.perf_counter() - began
        cpu = time.process_time() - cpu0
        assert done.outcome.exit_code == 0, done.outcome
        measured = done.outcome.measured
    finally:
        ray.shutdown()
        ray_cluster.shutdown()
        cluster_module._replay = replay  # type: ignore[assignment]
    return {"up_s": up_s, "wall": wall, "cpu": cpu, "measured": measured, "timings": timings}


def serial(file: Path, db: Path) -> float:
    began = time.perf_counter()
    done = subprocess.run(
        [*SERVEGATE, "run", str(file), "--db", str(db), "-q"],
        capture_output=True,
        text=True,
        check=False,
    )
    wall = time.perf_counter() - began
    assert done.returncode == 0, done.stderr
    return wall


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--startup", type=float, default=20.0, help="seconds per server start")
    parser.add_argument("--nodes", type=int, default=4)
    parser.add_argument("--variants", type=int, default=8)
    parser.add_argument("--skip-serial", action="store_true")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="sg-ray-bench-") as tmp:
        folder = Path(tmp)
        os.environ["SERVEGATE_HISTORY"] = str(folder / "history.db")
        file = campaign_file(folder, args.startup, args.variants)
        ray_run = on_cluster(file, folder / "ray.db", args.nodes)
        print(
            f"cluster: {args.variants} variants on {args.nodes} GPU nodes, startup "
            f"{args.startup:g}s: {ray_run['wall']:.1f}s wall ({ray_run['measured']} points; "
            f"cluster start {ray_run['up_s']:.1f}s not counted)"
        )
        timings = ray_run["timings"]
        calls = sum(len(v) for v in timings.values())
        total = sum(sum(v) for v in timings.values())
        points = timings.get("point", [])
        print(
            f"driver: {ray_run['cpu']:.2f}s CPU over the run; {calls} calls received, "
            f"replayed in {total * 1000:.0f} ms ({total / calls * 1e6:.0f} us per call)"
        )
        if points:
            ordered = sorted(points)
            print(
                f"driver: per point received (store write with its samples): median "
                f"{statistics.median(points) * 1000:.2f} ms, max {ordered[-1] * 1000:.2f} ms, "
                f"over {len(points)} points; driver CPU per point "
                f"{ray_run['cpu'] / len(points) * 1000:.1f} ms (everything included)"
            )
        if not args.skip_serial:
            wall = serial(file, folder / "serial.db")
            goal = 0.3 * wall + 10
            verdict = "met" if ray_run["wall"] <= goal else "NOT met"
            print(
                f"serial: {wall:.1f}s wall; cluster/serial = {ray_run['wall'] / wall:.2f}; "
                f"goal <= 0.3 x serial + 10 s = {goal:.1f}s: {verdict}"
            )


if __name__ == "__main__":
    main()
