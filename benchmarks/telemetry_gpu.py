"""The sampler's GPU memory curve through a real CUDA start and stop (needs an NVIDIA GPU).

Why: shows that the flight recorder sees a server's GPU memory rise while it starts, by
its own PIDs (NVML's per-process memory), and fall back after the stop. The "server" is
a PyTorch process launched by ``servegate.launch`` (the keeper and the gate, as
``servegate launch`` does): it allocates ``--steps`` blocks of ``--gib`` GiB, one every
``--every`` seconds, printing ``loaded i/N``, then ``READY``, and holds them until it is
stopped. A second sampler (no tree: the GPUs and network only) runs from before the
launch to ``--after`` seconds after the stop, for the release.

Writes OUT.csv (``series,t_s,gpu,mem_used_mib,mem_tree_mib,util_pct,power_w,processes,
cpu_pct``) and prints the curve and the figures.

Usage:
    python benchmarks/telemetry_gpu.py OUT.csv [--steps 8] [--gib 4] [--every 0.5] [--sample 0.1]
    python benchmarks/telemetry_gpu.py OUT.csv --engine llamacpp --port P \
        -- llama-server ... --port P

With a command after ``--``, that server is launched instead (gated by ``--engine``'s
profile on ``--port``), e.g. llama-server built for CUDA loading a GGUF with ``-ngl 99``.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

from servegate.launch import launch
from servegate.telemetry import Sampler, Snapshot

MIB = 2**20

SERVER = """
import sys, time
import torch
steps, gib, every = int(sys.argv[1]), float(sys.argv[2]), float(sys.argv[3])
torch.cuda.init()
x = torch.zeros(1, device="cuda")  # the CUDA context
print("cuda context ready", flush=True)
blocks = []
for i in range(steps):
    time.sleep(every)
    blocks.append(torch.empty(int(gib * 2**30), dtype=torch.uint8, device="cuda"))
    torch.cuda.synchronize()
    print(f"loaded {i + 1}/{steps}", flush=True)
print("READY", flush=True)
time.sleep(3600)
"""


def rows(series: str, snaps: list[Snapshot], shift: float) -> list[str]:
    """CSV rows, one per snapshot and GPU, times moved by ``shift`` seconds."""
    out = []
    for snap in snaps:
        for gpu in snap.gpus or ():
            out.append(
                f"{series},{snap.t_s + shift:.3f},{gpu.index},{gpu.mem_used_bytes / MIB:.0f},"
                f"{gpu.mem_tree_bytes / MIB:.0f},{gpu.util_pct:.0f},"
                f"{'' if gpu.power_w is None else f'{gpu.power_w:.1f}'},"
                f"{snap.processes},{snap.cpu_pct:.1f}"
            )
    return out


def main(argv: list[str] | None = None) -> int:
    """Launch, gate, hold, stop; print and write the curves."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("out", type=Path)
    parser.add_argument("--steps", type=int, default=8)
    parser.add_argument("--gib", type=float, default=4.0)
    parser.add_argument("--every", type=float, default=0.5)
    parser.add_argument("--sample", type=float, default=0.1)
    parser.add_argument("--hold", type=float, default=1.0)
    parser.add_argument("--after", type=float, default=3.0)
    parser.add_argument("--engine", default=None, help="gate a real server with this profile")
    parser.add_argument("--port", type=int, default=None)
    argv = sys.argv[1:] if argv is None else argv
    command = argv[argv.index("--") + 1 :] if "--" in argv else []
    args = parser.parse_args(argv[: argv.index("--")] if "--" in argv else argv)
    args.command = command  # the server command, after --
    host = Sampler(None, period_s=args.sample).start()
    time.sleep(1.0)  # the idle level first
    launched_at = time.monotonic() - (host.zero or 0.0)
    if args.command:
        server = launch(
            args.command,
            engine=args.engine or "generic",
            port=args.port,
            timeout_s=300,
            sample_s=args.sample,
        )
    else:
        command = [sys.executable, "-c", SERVER, str(args.steps), str(args.gib), str(args.every)]
        server = launch(
            command, engine="generic", ready=[r"^READY$"], timeout_s=300, sample_s=args.sample
        )
    verdict = server.verdict
    time.sleep(args.hold)
    stop_at = time.monotonic() - (host.zero or 0.0)
    report = server.stop()
    time.sleep(args.after)
    host.stop()
    snaps = host.snapshots()
    lines = ["series,t_s,gpu,mem_used_mib,mem_tree_mib,util_pct,power_w,processes,cpu_pct"]
    lines += rows("gate", list(verdict.snapshots), launched_at)
    lines += rows("host", snaps, 0.0)
    args.out.write_text("\n".join(lines) + "\n")
    if not snaps or not snaps[0].gpus:
        print("no GPU seen through NVML: nothing to show", file=sys.stderr)
        return 1
    idle = snaps[0].gpus[0].mem_used_bytes
    peak = max(s.gpus[0].mem_used_bytes for s in snaps)
    released = next(
        (s.t_s - stop_at for s in snaps if s.t_s > stop_at and s.gpus[0].mem_used_bytes
         <= idle + 256 * MIB),
        None,
    )  # fmt: skip
    print(f"GPU: {snaps[0].gpus[0].name}; verdict: {verdict.line()}")
    print(f"verdict telemetry: {verdict.telemetry}")
    for phase in verdict.phases:
        print(
            f"  phase {phase.name}: {phase.start_s:.2f} -> {phase.end_s} s, "
            f"bound by {phase.bound} ({phase.bound_evidence})"
        )
    print(f"stop: {len(report.killed)} process(es) in {report.duration_s:.2f}s")
    print(
        f"idle {idle / MIB:.0f} MiB; peak {peak / MIB:.0f} MiB; "
        f"peak by the tree (gate's series) {verdict.telemetry.peak_gpu_tree_bytes / MIB:.0f} MiB; "
        f"back within 256 MiB of idle {released if released is None else f'{released:.2f}'} s "
        "after the stop began"
        if verdict.telemetry is not None
        else "no telemetry in the verdict"
    )
    print("gate's series (t since launch: used / by the tree MiB, util %, W):")
    for snap in verdict.snapshots[:: max(1, len(verdict.snapshots) // 25)]:
        gpu = snap.gpus[0]
        print(
            f"  {snap.t_s:6.2f}s  {gpu.mem_used_bytes / MIB:7.0f} / {gpu.mem_tree_bytes / MIB:7.0f}"
            f"  {gpu.util_pct:3.0f} %  {gpu.power_w or 0:5.1f} W  cpu {snap.cpu_pct:5.1f} %"
        )
    print("host series around the stop (t since its start: used MiB):")
    for snap in snaps:
        if stop_at - 0.5 <= snap.t_s <= stop_at + 1.5:
            print(f"  {snap.t_s - stop_at:+6.2f}s  {snap.gpus[0].mem_used_bytes / MIB:7.0f}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
