"""Sample every GPU's used memory through NVML into a CSV until stopped (SIGTERM or SIGINT).

Why: a campaign's preflight reads GPU memory only before each start; this records the
whole curve (idle, rising through each start, falling after each stop) on the same
clock as the campaign's log, through the same `servegate.campaign.gpu` code.

Usage:
    python benchmarks/real_nvml_sampler.py OUT.csv [--interval 0.1]
"""

from __future__ import annotations

import argparse
import signal
import sys
import time
from pathlib import Path
from types import FrameType

from servegate.campaign.gpu import GpuMonitor, nvml_unavailable_reason


def main(argv: list[str] | None = None) -> int:
    """Write `unix_time,gpu,used_mib` rows until a signal arrives."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("out", type=Path)
    parser.add_argument("--interval", type=float, default=0.1)
    args = parser.parse_args(argv)
    monitor = GpuMonitor.open()
    if monitor is None:
        print(f"no GPU to sample: {nvml_unavailable_reason()}", file=sys.stderr)
        return 0
    stop = False

    def on_signal(signum: int, frame: FrameType | None) -> None:
        nonlocal stop
        stop = True

    signal.signal(signal.SIGTERM, on_signal)
    signal.signal(signal.SIGINT, on_signal)
    with monitor, args.out.open("w") as out:
        out.write("unix_time,gpu,used_mib\n")
        while not stop:
            now = time.time()
            for gpu in monitor.memory():
                out.write(f"{now:.3f},{gpu.index},{gpu.used_bytes / 2**20:.0f}\n")
            out.flush()
            time.sleep(args.interval)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
