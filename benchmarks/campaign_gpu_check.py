"""The GPU-memory preflight of a campaign on a real NVIDIA GPU.

Runs a two-variant campaign on the simulator. While the first variant is being
measured, another process takes 4 GiB of GPU memory (through the CUDA driver API) and
keeps it: the preflight of the second variant must then refuse to start it, naming the
GPU and the memory above the idle level, and the campaign must still finish. Prints the
attempts as stored. Needs an NVIDIA GPU and driver; exits 2 without one.

    python benchmarks/campaign_gpu_check.py
"""

from __future__ import annotations

import ctypes.util
import sqlite3
import subprocess
import sys
import tempfile
import textwrap
import time
from pathlib import Path

from servegate.campaign.gpu import GpuMonitor

HOLD = textwrap.dedent(
    """
    import ctypes, sys, time
    cuda = ctypes.CDLL(sys.argv[1])
    assert cuda.cuInit(0) == 0
    dev = ctypes.c_int(); assert cuda.cuDeviceGet(ctypes.byref(dev), 0) == 0
    ctx = ctypes.c_void_p()
    assert cuda.cuDevicePrimaryCtxRetain(ctypes.byref(ctx), dev) == 0
    assert cuda.cuCtxSetCurrent(ctx) == 0
    ptr = ctypes.c_uint64()
    assert cuda.cuMemAlloc_v2(ctypes.byref(ptr), ctypes.c_size_t(4 << 30)) == 0
    print("holding 4 GiB", flush=True)
    time.sleep(120)
    """
)

CAMPAIGN = """\
[campaign]
name = "gpu-check"
baseline = "baseline"

[server]
engine = "sglang"
command = "{python} -m servegate sim --engine sglang --port {port} --profile fast"
port = "auto"
release_timeout_s = 3

[bench]
concurrency = [1, 4]
requests = 20
input_len = 64
output_len = 16
repeats = 2

[[variant]]
name = "baseline"

[[variant]]
name = "second"
args = "--itl-ms 6"
"""


def main() -> int:
    monitor = GpuMonitor.open()
    if monitor is None:
        print("no NVIDIA GPU here", file=sys.stderr)
        return 2
    with monitor:
        print("GPUs:", [f"{g.name} {g.used_bytes >> 20} MiB used" for g in monitor.memory()])
    libcuda = ctypes.util.find_library("cuda") or "libcuda.so.1"
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "gpu.toml"
        path.write_text(CAMPAIGN)
        db = Path(tmp) / "gpu.db"
        start = time.perf_counter()
        runner = subprocess.Popen(
            [sys.executable, "-m", "servegate", "run", str(path), "--db", str(db)],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        holder = None
        while runner.poll() is None and holder is None:
            time.sleep(0.1)
            try:
                conn = sqlite3.connect(f"{db.as_uri()}?mode=ro", uri=True)
                try:
                    points = conn.execute("SELECT count(*) FROM point").fetchone()[0]
                finally:
                    conn.close()
            except sqlite3.OperationalError:
                continue
            if points:
                holder = subprocess.Popen(
                    [sys.executable, "-c", HOLD, libcuda], stdout=subprocess.PIPE, text=True
                )
                assert holder.stdout is not None
                print(holder.stdout.readline().strip())
        stdout, stderr = runner.communicate()
        wall = time.perf_counter() - start
        if holder is not None:
            holder.kill()
            holder.wait()
        print(stderr)
        print(stdout)
        conn = sqlite3.connect(db)
        try:
            rows = conn.execute(
                "SELECT v.name, a.status, a.reason FROM attempt a "
                "JOIN variant v ON v.id = a.variant_id ORDER BY a.id"
            ).fetchall()
        finally:
            conn.close()
        for name, status, reason in rows:
            print(f"attempt {name}: {status}: {reason}")
        print(f"exit code {runner.returncode}, {wall:.1f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
