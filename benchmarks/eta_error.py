"""ETA error on a second start of the same configuration (the simulator).

    python benchmarks/eta_error.py [--engine vllm] [--startup 8] [--pairs 5]

Each pair uses a fresh start history: a first `servegate launch --json` of the
simulator records the start, a second one of the same command shows the ETA from it;
the error is (ETA - actual) / actual of the second start. Prints one row per pair and
the largest absolute error.
"""

from __future__ import annotations

import argparse
import json
import os
import socket
import subprocess
import sys
import tempfile


def _port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def _start(engine: str, startup: float, env: dict[str, str]) -> dict[str, object]:
    port = _port()
    out = subprocess.run(
        [
            *(sys.executable, "-m", "servegate", "launch", "--engine", engine),
            *("--port", str(port), "--name", "eta", "--json", "--"),
            *(sys.executable, "-m", "servegate", "sim", "--engine", engine),
            *("--port", str(port), "--startup", str(startup)),
        ],
        capture_output=True,
        text=True,
        env=env,
        check=True,
    )
    subprocess.run(
        [sys.executable, "-m", "servegate", "stop", "eta"], env=env, capture_output=True, check=True
    )
    startup_json: dict[str, object] = json.loads(out.stdout)["startup"]
    return startup_json


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--engine", default="vllm")
    parser.add_argument("--startup", type=float, default=8.0)
    parser.add_argument("--pairs", type=int, default=5)
    args = parser.parse_args()
    worst = 0.0
    print("pair  first_s  eta_s  actual_s  error_%")
    for pair in range(args.pairs):
        with tempfile.TemporaryDirectory() as tmp:
            env = {
                **os.environ,
                "SERVEGATE_HISTORY": os.path.join(tmp, "history.db"),
                "SERVEGATE_STATE_DIR": tmp,
            }
            first = _start(args.engine, args.startup, env)
            second = _start(args.engine, args.startup, env)
            error = float(second["eta_error_pct"])  # type: ignore[arg-type]
            worst = max(worst, abs(error))
            print(
                f"{pair + 1:>4}  {first['actual_s']:>7}  {second['eta_s']:>5}  "
                f"{second['actual_s']:>8}  {error:>7.1f}"
            )
    print(f"largest |error|: {worst:.1f} %")


if __name__ == "__main__":
    main()
