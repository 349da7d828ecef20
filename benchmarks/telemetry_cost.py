"""What the flight recorder's sampler costs: CPU per sample for a 64-process tree.

Why: the sampler runs beside every start (``--sample``, default 1 s); its goal is under
1 % of one core for a 64-process tree at 1 Hz. This starts a real tree (a root and 63
sleeping children), then measures

1. the CPU time of one sample (``time.thread_time`` around ``Sampler._sample``, many
   times; GPUs read through NVML when ``--gpus`` and a GPU is there), as % of one core
   at 1 Hz and 10 Hz;
2. the same reads done with psutil (children(recursive=True), then per process
   cpu_times, memory_info, num_threads, status, io_counters), for comparison;
3. the sampler's thread running at 10 Hz for ``--seconds``: its CPU ticks from
   /proc/self/task/TID/stat over that time (a cross-check of 1, coarse: 10 ms ticks).

Usage:
    python benchmarks/telemetry_cost.py [--processes 64] [--samples 300] [--seconds 20] [--gpus]
"""

from __future__ import annotations

import argparse
import os
import signal
import statistics
import subprocess
import sys
import time

import psutil

from servegate.telemetry.sampler import Sampler, _Nvml

SLEEPER = "import sys,time\nsys.stdout.write('up\\n'); sys.stdout.flush(); time.sleep(3600)"
ROOT = (
    "import subprocess,sys,time\n"
    "n=int(sys.argv[1])\n"
    "kids=[subprocess.Popen([sys.executable,'-S','-c',sys.argv[2]],stdout=subprocess.PIPE)"
    " for _ in range(n-1)]\n"
    "[k.stdout.readline() for k in kids]\n"
    "print('ready',flush=True)\n"
    "time.sleep(3600)\n"
)


def per_sample_cpu(sampler: Sampler, nvml: _Nvml | None, samples: int) -> list[float]:
    """CPU seconds of each of ``samples`` samples, taken back to back in this thread."""
    out = []
    for _ in range(samples):
        start = time.thread_time()
        sampler._sample(nvml)
        out.append(time.thread_time() - start)
    return out


def psutil_sample(root: psutil.Process) -> int:
    """One sample's worth of reads through psutil; the process count."""
    procs = [root, *root.children(recursive=True)]
    for proc in procs:
        try:
            with proc.oneshot():
                proc.cpu_times()
                proc.memory_info()
                proc.num_threads()
                proc.status()
                proc.io_counters()
        except psutil.Error:
            continue
    return len(procs)


def thread_ticks(native_id: int) -> int:
    """utime + stime of one thread of this process, in clock ticks."""
    with open(f"/proc/self/task/{native_id}/stat", "rb") as file:
        raw = file.read()
    fields = raw[raw.rfind(b")") + 2 :].split()
    return int(fields[11]) + int(fields[12])


def main(argv: list[str] | None = None) -> int:
    """Print the figures as a Markdown table."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--processes", type=int, default=64)
    parser.add_argument("--samples", type=int, default=300)
    parser.add_argument("--seconds", type=float, default=20.0)
    parser.add_argument("--gpus", action="store_true", help="read GPUs through NVML too")
    args = parser.parse_args(argv)
    root = subprocess.Popen(
        [sys.executable, "-c", ROOT, str(args.processes), SLEEPER],
        stdout=subprocess.PIPE,
        start_new_session=True,
    )
    try:
        assert root.stdout is not None
        root.stdout.readline()
        nvml = _Nvml.open() if args.gpus else None
        host = sum(1 for name in os.listdir("/proc") if name.isdigit())
        sampler = Sampler(root.pid, gpus=False, zero=time.monotonic())
        per_sample_cpu(sampler, nvml, 5)  # warm: the first sample judges every host PID
        costs = per_sample_cpu(sampler, nvml, args.samples)
        tree = sampler.latest()
        assert tree is not None
        proc = psutil.Process(root.pid)
        ps_costs = []
        for _ in range(min(args.samples, 100)):
            start = time.thread_time()
            psutil_sample(proc)
            ps_costs.append(time.thread_time() - start)
        if nvml is not None:
            nvml.close()
        # the real thread at 10 Hz
        live = Sampler(root.pid, period_s=0.1, gpus=args.gpus).start()
        time.sleep(0.5)
        assert live._thread is not None
        native = live._thread.native_id
        assert native is not None
        ticks0, wall0 = thread_ticks(native), time.monotonic()
        time.sleep(args.seconds)
        ticks1, wall1 = thread_ticks(native), time.monotonic()
        count = live.summary().samples
        live.stop()
        last = live.latest()
        gpus = len(last.gpus) if last is not None else 0
    finally:
        os.killpg(root.pid, signal.SIGKILL)
        root.wait()
        if root.stdout is not None:
            root.stdout.close()
    median = statistics.median(costs)
    p90 = sorted(costs)[int(0.9 * len(costs))]
    ps_median = statistics.median(ps_costs)
    thread_pct = 100.0 * (ticks1 - ticks0) / os.sysconf("SC_CLK_TCK") / (wall1 - wall0)
    print(
        f"tree: {tree.processes} processes, {tree.threads} threads; host: {host} PIDs; "
        f"GPUs read: {gpus if args.gpus else 'off'}"
    )
    print("| what | CPU per sample (median, p90) | % of one core at 1 Hz | at 10 Hz |")
    print("| --- | --- | --- | --- |")
    print(
        f"| sampler (/proc direct{', NVML' if args.gpus else ''}) | {median * 1e3:.2f} ms, "
        f"{p90 * 1e3:.2f} ms | {median * 100:.2f} % | {median * 1000:.1f} % |"
    )
    print(
        f"| same reads through psutil | {ps_median * 1e3:.2f} ms | {ps_median * 100:.2f} % | "
        f"{ps_median * 1000:.1f} % |"
    )
    print(
        f"| sampler thread at 10 Hz, {wall1 - wall0:.0f} s, {count} samples (thread ticks) "
        f"| | | {thread_pct:.1f} % |"
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
