"""Log-follow throughput and memory: ``servegate wait --log`` on a multi-GB log.

    python benchmarks/gate_follow.py [--gb 3] [--folder /tmp] [--shape mixed|bars|bar-lines]

Two runs, each a fresh ``python -m servegate wait --engine vllm --log FILE`` process:
  backlog  the whole log is written first (page cache warm), then followed from its
           start: how fast the gate scans what it has to read (one core, one process);
  live     a writer appends as fast as it can while the gate follows; the ready line
           comes last: throughput over the whole run, and how far behind the gate was
           when the writer finished (the lag).
Peak RSS is the waiting process's ``ru_maxrss``; the backlog run also reports the gate's
CPU seconds (user and system), which a busy machine changes far less than the wall
time. ``--shape mixed`` (the default) mixes vLLM and SGLang lines (throughput reports,
access lines, tqdm bars with ``\\r``), with random numbers; ``bars`` is vLLM's
weight-loading bar redrawn with ``\\r`` and no newline (tqdm's way: every redraw matches
a progress rule of the profile); ``bar-lines`` is the same bar, each redraw ended by a
newline.
"""

from __future__ import annotations

import argparse
import os
import random
import resource
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

READY = b"(APIServer pid=1) INFO:     Application startup complete.\n"


def pattern(size: int) -> bytes:
    """About ``size`` bytes of realistic, varied log lines."""
    rng = random.Random(0)
    templates = [
        "(APIServer pid=4609) INFO 01-02 13:45:{s:02d} [loggers.py:123] Engine 000: Avg "
        "prompt throughput: {a:.1f} tokens/s, Avg generation throughput: {b:.1f} tokens/s, "
        "Running: {r} reqs, Waiting: 0 reqs, GPU KV cache usage: 1.{r}%, Prefix cache hit "
        "rate: 0.0%\n",
        '(APIServer pid=4609) INFO:     127.0.0.1:{p} - "POST /v1/completions HTTP/1.1" 200 OK\n',
        "[2026-01-02 13:45:{s:02d} TP0] Decode batch, #running-req: {r}, #token: {p}, token "
        "usage: 0.{r:02d}, cuda graph: True, gen throughput (token/s): {b:.2f}, #queue-req: 0\n",
        "Capturing batches (bs={r} avail_mem=2.91 GB):  {r}%|###      | {r}/23 "
        "[00:0{d}<00:00,  3.51it/s]\r",
        "(Worker_TP{d} pid=4700) WARNING 01-02 13:45:{s:02d} [custom_all_reduce.py:{p}] "
        "Custom allreduce is disabled because it's not supported on more than two PCIe GPUs\n",
    ]
    out = []
    total = 0
    while total < size:
        line = (
            rng.choice(templates)
            .format(
                s=rng.randrange(60),
                a=rng.random() * 1e4,
                b=rng.random() * 1e3,
                r=rng.randrange(1, 99),
                p=rng.randrange(10000, 60000),
                d=rng.randrange(8),
            )
            .encode()
        )
        out.append(line)
        total += len(line)
    return b"".join(out)


def bars(size: int, end: bytes) -> bytes:
    """About ``size`` bytes of vLLM's weight-loading bar, each redraw ended by ``end``."""
    out = []
    total = 0
    i = 0
    while total < size:
        i += 1
        line = (
            f"Loading safetensors checkpoint shards: {i % 100:3d}% Completed | {i % 1000}/1000 "
            f"[00:{i % 60:02d}<00:02,  3.51it/s]"
        ).encode() + end
        out.append(line)
        total += len(line)
    return b"".join(out)


def run_wait(log: Path) -> tuple[subprocess.Popen[bytes], float]:
    proc = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "servegate",
            "wait",
            "--engine",
            "vllm",
            "--log",
            str(log),
            "--timeout",
            "3600",
            "--stall",
            "600",
        ],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    return proc, time.monotonic()


def backlog(log: Path, gb: float, block: bytes) -> None:
    target = int(gb * 1e9)
    with log.open("wb") as f:
        written = 0
        while written < target:
            f.write(block)
            written += len(block)
        f.write(b"\n" + READY)
    size = log.stat().st_size
    subprocess.run(["cat", str(log)], stdout=subprocess.DEVNULL, check=True)  # warm cache
    spent = _children_cpu_s()
    proc, started = run_wait(log)
    out, _ = proc.communicate()
    elapsed = time.monotonic() - started
    cpu_s = _children_cpu_s() - spent
    rss = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024
    print(
        f"backlog: {size / 1e9:.2f} GB in {elapsed:.2f} s = {size / elapsed / 1e6:.0f} MB/s "
        f"(process start included); the gate's CPU {cpu_s:.2f} s = "
        f"{size / cpu_s / 1e6:.0f} MB per CPU-s; verdict: {out.decode().strip()[:60]}; "
        f"peak RSS so far {rss:.0f} MB",
        flush=True,
    )


def _children_cpu_s() -> float:
    """User and system CPU seconds of the waited-for children so far: the scan's cost,
    which other jobs on a shared machine do not change as they change the wall time."""
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def live(log: Path, gb: float, block: bytes) -> None:
    log.write_bytes(b"")
    proc, started = run_wait(log)
    time.sleep(1.0)  # let the gate start: what is measured is following, not importing
    target = int(gb * 1e9)
    done: list[float] = []

    def writer() -> None:
        with log.open("ab") as f:
            written = 0
            t0 = time.monotonic()
            while written < target:
                f.write(block)
                written += len(block)
            f.write(b"\n" + READY)
            f.flush()
            done.append(time.monotonic())
            done.append(t0)

    thread = threading.Thread(target=writer)
    thread.start()
    out, _ = proc.communicate()
    finished = time.monotonic()
    thread.join()
    size = log.stat().st_size
    write_s = done[0] - done[1]
    gate_s = finished - done[1]
    rss = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024
    print(
        f"live: {size / 1e9:.2f} GB written in {write_s:.2f} s ({size / write_s / 1e6:.0f} MB/s);"
        f" verdict {gate_s:.2f} s after the first byte = {size / gate_s / 1e6:.0f} MB/s; lag at "
        f"the end {finished - done[0]:.3f} s; verdict: {out.decode().strip()[:40]}; "
        f"peak RSS (max over both runs) {rss:.0f} MB",
        flush=True,
    )
    del started


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--gb", type=float, default=3.0)
    parser.add_argument("--folder", default=tempfile.gettempdir())
    parser.add_argument("--shape", choices=("mixed", "bars", "bar-lines"), default="mixed")
    args = parser.parse_args()
    os.environ.setdefault("SERVEGATE_STATE_DIR", tempfile.mkdtemp(prefix="sg-bench-state-"))
    if args.shape == "mixed":
        block = pattern(8 << 20)
    else:
        block = bars(8 << 20, b"\r" if args.shape == "bars" else b"\n")
    with tempfile.TemporaryDirectory(prefix="sg-follow-", dir=args.folder) as tmp:
        log = Path(tmp) / "server.log"
        backlog(log, args.gb, block)
        log.unlink()
        live(log, args.gb, block)


if __name__ == "__main__":
    main()
