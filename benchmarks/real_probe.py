"""Start a real engine by hand and record what it does: log lines, probe answers, GPU memory.

Why: the engine profiles must match what real engines print and answer, second by
second, independently of the gate that reads them. This records a start as raw facts
(each log line with its offset, every change of the probe's answer, the process tree at
readiness, NVML memory through start and stop) into NAME.log and NAME.json.

Usage:
    python benchmarks/real_probe.py --out DIR --name NAME --port P [--probe /health]
        [--generate] [--timeout 300] [--hold 0] -- COMMAND [ARG...]

It stops the whole process group itself (SIGTERM, then SIGKILL after 15 s).
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import socket
import subprocess
import sys
import threading
import time
import urllib.error
import urllib.request
from pathlib import Path
from typing import Any

import psutil

try:
    from servegate.campaign.gpu import GpuMonitor
except ImportError:  # the probe also runs where servegate is not importable
    GpuMonitor = None  # type: ignore[assignment,misc]


def http(url: str, body: dict[str, Any] | None = None, timeout: float = 2.0) -> tuple[int, str]:
    """(status, first 400 characters of the body); status 0 when nothing answered."""
    data = json.dumps(body).encode() if body is not None else None
    req = urllib.request.Request(url, data=data, headers={"Content-Type": "application/json"})
    try:
        with urllib.request.urlopen(req, timeout=timeout) as resp:
            return int(resp.status), resp.read().decode(errors="replace")[:400]
    except urllib.error.HTTPError as exc:
        return int(exc.code), exc.read().decode(errors="replace")[:400]
    except (OSError, ValueError) as exc:
        return 0, type(exc).__name__


def tree(pid: int) -> list[dict[str, Any]]:
    """The process and its descendants: pid, ppid, name, command line."""
    try:
        root = psutil.Process(pid)
        procs = [root, *root.children(recursive=True)]
    except psutil.Error:
        return []
    out = []
    for proc in procs:
        try:
            out.append(
                {
                    "pid": proc.pid,
                    "ppid": proc.ppid(),
                    "name": proc.name(),
                    "cmdline": " ".join(proc.cmdline())[:200],
                    "rss_mib": round(proc.memory_info().rss / 2**20, 1),
                }
            )
        except psutil.Error:
            continue
    return out


class GpuSampler(threading.Thread):
    """Reads every GPU's used memory every 0.25 s while running."""

    def __init__(self, t0: float) -> None:
        super().__init__(daemon=True)
        self.t0 = t0
        self.samples: list[tuple[float, list[int]]] = []
        self.stop_flag = threading.Event()
        self.monitor = GpuMonitor.open() if GpuMonitor is not None else None

    def read(self) -> list[int]:
        """Used MiB per GPU now (empty without NVML)."""
        if self.monitor is None:
            return []
        return [gpu.used_bytes // 2**20 for gpu in self.monitor.memory()]

    def run(self) -> None:
        while not self.stop_flag.is_set():
            self.samples.append((round(time.monotonic() - self.t0, 3), self.read()))
            time.sleep(0.25)


def main(argv: list[str] | None = None) -> int:
    """Run one start, record it, stop it."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, required=True)
    parser.add_argument("--name", required=True)
    parser.add_argument("--port", type=int, required=True)
    parser.add_argument("--probe", default="/health")
    parser.add_argument("--generate", action="store_true", help="send one completion at READY")
    parser.add_argument("--timeout", type=float, default=300.0)
    parser.add_argument("--hold", type=float, default=0.0, help="seconds to stay up after READY")
    parser.add_argument("--kill-child", default="", help="SIGKILL the child whose name has this")
    parser.add_argument("command", nargs=argparse.REMAINDER)
    args = parser.parse_args(argv)
    command = args.command[1:] if args.command[:1] == ["--"] else args.command
    args.out.mkdir(parents=True, exist_ok=True)
    base = f"http://127.0.0.1:{args.port}"
    t0 = time.monotonic()
    gpu = GpuSampler(t0)
    idle = gpu.read()
    gpu.start()
    record: dict[str, Any] = {"command": command, "gpu_idle_mib": idle, "probe_changes": []}
    log_path = args.out / f"{args.name}.log"
    lines: list[tuple[float, str]] = []
    proc = subprocess.Popen(
        command,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        start_new_session=True,
        env={**os.environ, "PYTHONUNBUFFERED": "1"},
    )

    def pump() -> None:
        assert proc.stdout is not None
        with log_path.open("wb") as log:
            for raw in iter(proc.stdout.readline, b""):
                log.write(raw)
                log.flush()
                lines.append((round(time.monotonic() - t0, 3), raw.decode(errors="replace")))

    reader = threading.Thread(target=pump, daemon=True)
    reader.start()
    last: tuple[int, str] | None = None
    ready_at = None
    while time.monotonic() - t0 < args.timeout:
        if proc.poll() is not None:
            break
        answer = http(base + args.probe, timeout=1.0)
        if last is None or answer[0] != last[0]:
            record["probe_changes"].append(
                {"t": round(time.monotonic() - t0, 3), "status": answer[0], "body": answer[1]}
            )
            last = answer
        if answer[0] == 200:
            ready_at = time.monotonic() - t0
            break
        time.sleep(0.1)
    record["ready_s"] = None if ready_at is None else round(ready_at, 3)
    if ready_at is not None:
        record["tree_at_ready"] = tree(proc.pid)
        record["models"] = http(base + "/v1/models")
        if args.generate:
            g0 = time.monotonic()
            record["completion"] = http(
                base + "/v1/completions",
                {"prompt": "The capital of France is", "max_tokens": 8, "temperature": 0},
                timeout=120,
            )
            record["completion_s"] = round(time.monotonic() - g0, 3)
        record["metrics"] = http(base + "/metrics", timeout=5)[0]
        time.sleep(args.hold)
        if args.kill_child:
            victims = [p for p in record["tree_at_ready"] if args.kill_child in p["name"]]
            for victim in victims[:1]:
                os.kill(victim["pid"], signal.SIGKILL)
                record["killed_child"] = victim
                k0 = time.monotonic()
                probes = []
                while time.monotonic() - k0 < 30 and proc.poll() is None:
                    probes.append((round(time.monotonic() - k0, 2), http(base + args.probe)[0]))
                    time.sleep(0.5)
                record["after_kill_probes"] = probes
                record["main_exited_after_kill_s"] = (
                    round(time.monotonic() - k0, 2) if proc.poll() is not None else None
                )
    record["exit_code_before_stop"] = proc.poll()
    s0 = time.monotonic()
    if proc.poll() is None:
        os.killpg(proc.pid, signal.SIGTERM)
        try:
            proc.wait(15)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
    record["stop_s"] = round(time.monotonic() - s0, 3)
    record["exit_code"] = proc.returncode
    reader.join(5)
    with socket.socket() as sock:
        record["port_free_after"] = sock.connect_ex(("127.0.0.1", args.port)) != 0
    still = [p.pid for p in psutil.process_iter() if _in_group(p, proc.pid)]
    record["left_in_group"] = still
    time.sleep(1.0)
    gpu.stop_flag.set()
    gpu.join(2)
    record["gpu_samples"] = gpu.samples
    record["gpu_after_mib"] = gpu.read()
    record["line_times"] = [(t, line.rstrip("\n")[:160]) for t, line in lines]
    (args.out / f"{args.name}.json").write_text(json.dumps(record, indent=1))
    print(
        f"{args.name}: ready_s={record['ready_s']} exit={record['exit_code']} "
        f"probe={[(c['t'], c['status']) for c in record['probe_changes']]}",
        file=sys.stderr,
    )
    return 0


def _in_group(proc: psutil.Process, pgid: int) -> bool:
    try:
        return os.getpgid(proc.pid) == pgid and proc.status() != psutil.STATUS_ZOMBIE
    except (psutil.Error, OSError):
        return False


if __name__ == "__main__":
    raise SystemExit(main())
