"""Stuck or slow on the simulator's cases: the decision, and when it was made.

    python benchmarks/stuck_slow.py [--stall 3] [--quiet 10]

Each case launches the simulated SGLang with ``servegate launch --json --stall STALL
--sample 0.25`` and a silent phase of QUIET seconds (or a hang), then prints the verdict,
the diagnosis, the first live line and the time of the decision. Results and the
command: benchmarks/README.md, "Stuck or slow".
"""

from __future__ import annotations

import argparse
import json
import socket
import subprocess
import sys
import time


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def case(name: str, sim: list[str], stall: float, sample: str) -> dict[str, object]:
    port = free_port()
    started = time.monotonic()
    done = subprocess.run(
        [
            sys.executable, "-m", "servegate", "launch", "--name", name, "--engine", "sglang",
            "--json", "--stall", str(stall), "--sample", sample, "--timeout", "300", "--",
            sys.executable, "-m", "servegate", "sim", "--engine", "sglang", "--startup", "1",
            "--port", str(port), *sim,
        ],
        capture_output=True, text=True, check=False,
    )  # fmt: skip
    wall = time.monotonic() - started
    verdict = json.loads(done.stdout)
    if verdict["status"] == "ready":
        subprocess.run([sys.executable, "-m", "servegate", "stop", name], check=False,
                       capture_output=True)  # fmt: skip
    diagnosis = verdict.get("diagnosis") or {}
    notes = [line for line in done.stderr.splitlines() if "slow, still working" in line]
    return {
        "case": name,
        "status": verdict["status"],
        "kind": verdict["kind"],
        "state": diagnosis.get("state"),
        "elapsed_s": round(verdict["elapsed_s"], 2),
        "wall_s": round(wall, 2),
        "evidence": (diagnosis.get("activity") or {}).get("evidence"),
        "stacks": (diagnosis.get("stacks") or {}).get("summary"),
        "first_note": notes[0] if notes else None,
        "notes": len(notes),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--stall", type=float, default=3.0)
    parser.add_argument("--quiet", type=float, default=10.0)
    args = parser.parse_args()
    q = str(args.quiet)
    cases = [
        ("compile-cpu", ["--phase", f"jit_compile={q}", "--work", "jit_compile=cpu"], "0.25"),
        ("download-disk", ["--phase", f"download={q}", "--work", "download=disk"], "0.25"),
        ("hang-idle", ["--fail", "hang", "--fail-at", "kv_cache"], "0.25"),
        ("quiet-idle", ["--phase", f"jit_compile={q}"], "0.25"),
        ("hang-no-telemetry", ["--fail", "hang", "--fail-at", "kv_cache"], "0"),
    ]
    for name, sim, sample in cases:
        print(json.dumps(case(name, sim, args.stall, sample)), flush=True)


if __name__ == "__main__":
    main()
