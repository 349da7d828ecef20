"""Wall time of a flag search on a Ray cluster with several nodes against the same search
with one node (one trial at a time), and what each found.

A search of 18 configurations of the simulator's SGLang flags (``[search]`` over
``--mem-fraction-static``, ``--cuda-graph-max-bs``, ``--quantization``; objective: output
throughput at one load) whose server start takes ``--startup`` seconds without CPU (the
simulator sleeps through its phases, as a real engine's start is dominated by loading
and compiling) runs ``--trials`` trials after its baseline, twice, each time as
``servegate tune FILE --ray ADDRESS`` against a Ray cluster started here
(``ray.cluster_utils.Cluster``: a head without GPUs and worker nodes declaring one GPU
each): with ``--nodes`` nodes (the trials ``--nodes`` at a time), then with one node.

    pip install -e '.[ray,tune]' && python benchmarks/ray_tune.py --startup 20 --nodes 4
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import textwrap
import time
from pathlib import Path
from typing import Any

SERVEGATE = [sys.executable, "-m", "servegate"]
SIM = "--jitter 0.02 --startup"


def search_file(folder: Path, startup_s: float) -> Path:
    text = textwrap.dedent(
        f"""\
        [campaign]
        name = "ray-tune"
        baseline = "baseline"

        [server]
        engine = "sglang"
        command = "{{python}} -m servegate sim --engine sglang --port {{port}} {SIM} {startup_s}"
        port = "auto"
        timeout_s = {startup_s * 3 + 60}
        stop_grace_s = 5
        gpus = 1

        [bench]
        warmup = 1
        input_len = 32
        output_len = 16
        concurrency = 8
        requests = 64
        repeats = 1

        [search]
        name = "f{{fraction}}-bs{{bs}}-{{quant}}"
        args = [
          "--mem-fraction-static", "{{fraction}}", "--cuda-graph-max-bs", "{{bs}}",
          "--quantization", "{{quant}}",
        ]
        objective = "throughput"

        [search.params.fraction]
        choices = [0.88, 0.91, 0.94]
        memory = "increasing"

        [search.params.bs]
        choices = [64, 128, 160]
        memory = "increasing"

        [search.params.quant]
        choices = ["none", "fp8"]
        """
    )
    path = folder / "ray-tune.toml"
    path.write_text(text, encoding="utf-8")
    return path


def tune_on(file: Path, folder: Path, nodes: int, trials: int, seed: int) -> dict[str, Any]:
    from ray.cluster_utils import Cluster

    began = time.perf_counter()
    cluster = Cluster(initialize_head=True, head_node_args={"num_cpus": 1})
    for _ in range(nodes):
        cluster.add_node(num_cpus=1, num_gpus=1, resources={"accelerator_type:SIM": 1})
    cluster.wait_for_nodes()
    up_s = time.perf_counter() - began
    try:
        db = folder / f"tune-{nodes}.db"
        argv = [*SERVEGATE, "tune", str(file), "--db", str(db), "--ray", cluster.address]
        argv += ["--max-trials", str(trials), "--seed", str(seed), "--json", "-q"]
        began = time.perf_counter()
        done = subprocess.run(argv, capture_output=True, text=True, check=False)
        wall = time.perf_counter() - began
        assert done.returncode == 0, done.stderr[-3000:]
        result = json.loads(done.stdout)
    finally:
        cluster.shutdown()
    best = result.get("best") or {}
    return {
        "nodes": nodes,
        "up_s": up_s,
        "wall": wall,
        "gpu_hours": result.get("gpu_hours"),
        "best": best.get("variant") or best.get("name"),
        "best_value": best.get("value"),
        "states": [t.get("state") for t in result.get("trials", [])],
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--startup", type=float, default=20.0, help="seconds per server start")
    parser.add_argument("--nodes", type=int, default=4)
    parser.add_argument("--trials", type=int, default=8)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="sg-ray-tune-") as tmp:
        folder = Path(tmp)
        os.environ["SERVEGATE_HISTORY"] = str(folder / "history.db")
        file = search_file(folder, args.startup)
        runs = [tune_on(file, folder, n, args.trials, args.seed) for n in (args.nodes, 1)]
    for run in runs:
        print(
            f"{run['nodes']} node(s): {run['wall']:.1f}s wall for the baseline and "
            f"{args.trials} trials (cluster start {run['up_s']:.1f}s not counted); "
            f"{run['gpu_hours']:.4f} GPU-hours; best {run['best']} {run['best_value']}; "
            f"trials {run['states']}"
        )
    many, one = runs
    print(f"{args.nodes} nodes / 1 node: {many['wall'] / one['wall']:.2f} of the wall time")


if __name__ == "__main__":
    main()
