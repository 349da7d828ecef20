"""Energy per point on a real GPU: servegate's NVML counter against an integrated power curve.

Issue 25's proof: on a machine with one NVIDIA GPU, a small OpenAI-compatible streaming
server (in this file: ``--serve``) does real GPU work for every token (``--matmuls``
bf16 matmuls of a ``--size`` x ``--size`` weight per decode step, the activations
``--rows`` rows per request in flight, so the work is batched across requests and power
rises with concurrency). ``servegate bench --url ... --gpus 0 --concurrency 1,8,32``
measures it, while a sampler in this process, independent of servegate, reads
``nvmlDeviceGetPowerUsage`` (and NVML's instant power field where the driver has it)
every 20 ms. For each point the power curve is integrated (trapezoids, cut at the
point's two counter readings, ``energy.started_unix`` / ``ended_unix`` in the JSON) and
compared with servegate's ``energy_j``: the goal is within 3 %.

Prints one JSON summary and writes it, with the bench JSON and the server's log, to
``$OUT`` (else ``--out``). Finishes within ``--budget`` seconds (default 450) and kills
everything it started (the server's session, the bench command's session).

    python benchmarks/energy_h200.py                    # on the GPU machine
    python benchmarks/energy_h200.py --wheels WHEELS/   # servegate's missing deps as wheels
    python benchmarks/energy_h200.py --cpu --duration 3 # the plumbing here: sleep, no NVML

Needs: torch with CUDA, nvidia-ml-py, aiohttp, and servegate's dependencies (this
repository's ``src`` is put on the path; ``--wheels DIR`` unpacks the ``*.whl`` files of
DIR, such as pydantic and pydantic_core for that machine's Python, onto it too).
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import itertools
import json
import os
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
import zipfile
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
GOAL_PCT = 3.0
SAMPLE_S = 0.02


# --- the server (``--serve``) ------------------------------------------------------------


class Engine:
    """A decode loop in a thread: each step does the GPU work of every request in flight
    and hands each of them one token."""

    def __init__(self, *, cpu: bool, size: int, matmuls: int, rows: int) -> None:
        self.cpu = cpu
        self.matmuls = matmuls
        self.rows = rows
        self.lock = threading.Lock()
        self.wake = threading.Event()
        self.active: list[dict[str, Any]] = []
        self.steps = 0
        self.stopping = False
        if not cpu:
            import torch

            self.torch = torch
            self.device = torch.device("cuda:0")
            gen = torch.Generator(device=self.device).manual_seed(0)
            self.weight = torch.randn(
                size, size, device=self.device, dtype=torch.bfloat16, generator=gen
            ) / (size**0.5)
            self.x = torch.randn(
                rows * 64, size, device=self.device, dtype=torch.bfloat16, generator=gen
            )
            self.step_work(1)  # load the kernels before the first request
            torch.cuda.synchronize()

    def step_work(self, batch: int) -> None:
        """One decode step's work for ``batch`` requests."""
        if self.cpu:
            time.sleep(0.004 + 0.0002 * batch)
            return
        rows = min(self.rows * batch, self.x.shape[0])
        x = self.x[:rows]
        for _ in range(self.matmuls):
            x = (x @ self.weight).clamp_(-4, 4)
        self.torch.cuda.synchronize()

    def submit(self, request: dict[str, Any]) -> None:
        with self.lock:
            self.active.append(request)
        self.wake.set()

    def run(self) -> None:
        """Step while requests are in flight; wait for one otherwise."""
        while not self.stopping:
            with self.lock:
                batch = [r for r in self.active if not r["cancelled"]]
                self.active = batch
            if not batch:
                self.wake.wait(0.1)
                self.wake.clear()
                continue
            self.step_work(len(batch))
            self.steps += 1
            done = []
            for request in batch:
                request["made"] += 1
                last = request["made"] >= request["max_tokens"]
                request["loop"].call_soon_threadsafe(request["queue"].put_nowait, last)
                if last:
                    done.append(request)
            if done:
                with self.lock:
                    self.active = [r for r in self.active if r not in done]


def serve(args: argparse.Namespace) -> int:
    """Serve /v1/models and streaming /v1/completions on ``args.port`` until SIGTERM."""
    from aiohttp import web

    engine = Engine(cpu=args.cpu, size=args.size, matmuls=args.matmuls, rows=args.rows)
    thread = threading.Thread(target=engine.run, daemon=True)
    thread.start()
    model = "energy-probe"

    async def models(request: web.Request) -> web.Response:
        return web.json_response({"object": "list", "data": [{"id": model, "object": "model"}]})

    async def completions(request: web.Request) -> web.StreamResponse:
        body = await request.json()
        max_tokens = max(1, int(body.get("max_tokens") or 16))
        prompt = body.get("prompt") or ""
        prompt_tokens = max(1, len(str(prompt).split()))
        usage_on = bool((body.get("stream_options") or {}).get("include_usage"))
        response = web.StreamResponse(
            headers={"Content-Type": "text/event-stream", "Cache-Control": "no-cache"}
        )
        await response.prepare(request)
        queue: asyncio.Queue[bool] = asyncio.Queue()
        job = {
            "max_tokens": max_tokens,
            "made": 0,
            "queue": queue,
            "loop": asyncio.get_running_loop(),
            "cancelled": False,
        }
        engine.submit(job)
        made = 0
        try:
            while True:
                last = await queue.get()
                made += 1
                chunk = {
                    "id": "cmpl-1",
                    "object": "text_completion",
                    "model": model,
                    "choices": [
                        {"index": 0, "text": " x", "finish_reason": "length" if last else None}
                    ],
                }
                await response.write(f"data: {json.dumps(chunk)}\n\n".encode())
                if last:
                    break
            if usage_on:
                usage = {
                    "id": "cmpl-1",
                    "object": "text_completion",
                    "model": model,
                    "choices": [],
                    "usage": {
                        "prompt_tokens": prompt_tokens,
                        "completion_tokens": made,
                        "total_tokens": prompt_tokens + made,
                    },
                }
                await response.write(f"data: {json.dumps(usage)}\n\n".encode())
            await response.write(b"data: [DONE]\n\n")
        finally:
            job["cancelled"] = True
        return response

    app = web.Application()
    app.router.add_get("/v1/models", models)
    app.router.add_post("/v1/completions", completions)

    async def main() -> None:
        runner = web.AppRunner(app, access_log=None)
        await runner.setup()
        site = web.TCPSite(runner, "127.0.0.1", args.port)
        await site.start()
        print(f"listening on {args.port}", flush=True)
        stop = asyncio.Event()
        loop = asyncio.get_running_loop()
        loop.add_signal_handler(signal.SIGTERM, stop.set)
        loop.add_signal_handler(signal.SIGINT, stop.set)
        await stop.wait()
        engine.stopping = True
        await runner.cleanup()
        print(f"stopped after {engine.steps} decode steps", flush=True)

    asyncio.run(main())
    return 0


# --- the independent power sampler -------------------------------------------------------


class PowerSampler:
    """Polls GPU 0's power every `SAMPLE_S` in a thread: (unix time, W, instant W or None)."""

    def __init__(self) -> None:
        import pynvml

        self.nvml = pynvml
        pynvml.nvmlInit()
        self.handle = pynvml.nvmlDeviceGetHandleByIndex(0)
        name = pynvml.nvmlDeviceGetName(self.handle)
        self.name = name.decode() if isinstance(name, bytes) else str(name)
        self.samples: list[tuple[float, float, float | None]] = []
        self.instant = self._instant() is not None
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def _instant(self) -> float | None:
        """NVML's instant power field (Hopper on, recent drivers), in W; None elsewhere."""
        nvml = self.nvml
        try:
            (value,) = nvml.nvmlDeviceGetFieldValues(self.handle, [nvml.NVML_FI_DEV_POWER_INSTANT])
        except Exception:
            return None
        if getattr(value, "nvmlReturn", 1) != 0:
            return None
        return float(value.value.uiVal) / 1000.0

    def _run(self) -> None:
        nvml = self.nvml
        next_t = time.monotonic()
        while not self._stop.is_set():
            watts = nvml.nvmlDeviceGetPowerUsage(self.handle) / 1000.0
            instant = self._instant() if self.instant else None
            self.samples.append((time.time(), watts, instant))
            next_t += SAMPLE_S
            self._stop.wait(max(0.0, next_t - time.monotonic()))

    def start(self) -> PowerSampler:
        self._thread.start()
        return self

    def stop(self) -> None:
        self._stop.set()
        self._thread.join(timeout=2)
        with contextlib.suppress(Exception):
            self.nvml.nvmlShutdown()


def integrate(samples: list[tuple[float, float]], t0: float, t1: float) -> float | None:
    """Joules of a power curve (time, W) between t0 and t1: trapezoids, cut at both ends by
    linear interpolation; None when the samples do not cover the window."""
    if not samples or samples[0][0] > t0 or samples[-1][0] < t1 or t1 <= t0:
        return None

    def at(t: float) -> float:
        for (ta, pa), (tb, pb) in itertools.pairwise(samples):
            if ta <= t <= tb:
                return pa if tb == ta else pa + (pb - pa) * (t - ta) / (tb - ta)
        return samples[-1][1]

    points = [(t0, at(t0))] + [(t, p) for t, p in samples if t0 < t < t1] + [(t1, at(t1))]
    return sum((tb - ta) * (pa + pb) / 2 for (ta, pa), (tb, pb) in itertools.pairwise(points))


def self_check() -> dict[str, Any]:
    """`integrate` against a curve whose integral is known: 100 W, then 400 W from t=5,
    sampled every 20 ms, over [2.01, 9.99]: 100 x 2.99 + 400 x 4.99 + the ramp's share."""
    samples = [(i * SAMPLE_S, 100.0 if i * SAMPLE_S < 5 else 400.0) for i in range(600)]
    got = integrate(samples, 2.01, 9.99)
    # the sampled curve ramps linearly over the one 20 ms step that crosses t=5
    want = 100.0 * (4.98 - 2.01) + (100.0 + 400.0) / 2 * 0.02 + 400.0 * (9.99 - 5.0)
    return {
        "integrated_j": got,
        "expected_j": want,
        "ok": got is not None and abs(got - want) < 1e-6,
    }


# --- the driver --------------------------------------------------------------------------


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def _python_path(wheels: Path | None, scratch: Path) -> str:
    """This repository's src, then every wheel of ``wheels`` unpacked, then the rest."""
    parts = [str(REPO / "src")]
    if wheels is not None:
        for wheel in sorted(wheels.glob("*.whl")):
            target = scratch / wheel.stem
            with zipfile.ZipFile(wheel) as archive:
                archive.extractall(target)
            parts.append(str(target))
    if os.environ.get("PYTHONPATH"):
        parts.append(os.environ["PYTHONPATH"])
    return os.pathsep.join(parts)


def _stop_session(proc: subprocess.Popen[bytes] | None, grace_s: float = 10.0) -> None:
    """SIGTERM the process's session, wait, SIGKILL what is left."""
    if proc is None or (proc.poll() is not None and not _group_alive(proc.pid)):
        return
    with contextlib.suppress(ProcessLookupError):
        os.killpg(proc.pid, signal.SIGTERM)
    with contextlib.suppress(subprocess.TimeoutExpired):
        proc.wait(timeout=grace_s)
    with contextlib.suppress(ProcessLookupError):
        os.killpg(proc.pid, signal.SIGKILL)
    with contextlib.suppress(subprocess.TimeoutExpired):
        proc.wait(timeout=5)


def _group_alive(pgid: int) -> bool:
    try:
        os.killpg(pgid, 0)
    except (ProcessLookupError, PermissionError):
        return False
    return True


def _wait_ready(url: str, proc: subprocess.Popen[bytes], deadline: float) -> None:
    import urllib.request

    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise RuntimeError(f"the server exited with {proc.returncode} before it was ready")
        try:
            with urllib.request.urlopen(url + "/v1/models", timeout=2) as resp:
                if resp.status == 200:
                    return
        except OSError:
            time.sleep(0.2)
    raise RuntimeError("the server was not ready in time")


def drive(args: argparse.Namespace) -> dict[str, Any]:
    """Start the server and the sampler, run servegate bench, compare per point."""
    started = time.monotonic()
    deadline = started + args.budget
    out = Path(os.environ.get("OUT") or args.out)
    out.mkdir(parents=True, exist_ok=True)
    scratch = Path(tempfile.mkdtemp(prefix="energy-h200-"))
    env = {**os.environ, "PYTHONPATH": _python_path(args.wheels, scratch)}
    port = _free_port()
    url = f"http://127.0.0.1:{port}"
    levels = [int(c) for c in args.concurrency.split(",")]
    sampler = None if args.cpu else PowerSampler()
    server: subprocess.Popen[bytes] | None = None
    bench: subprocess.Popen[bytes] | None = None
    summary: dict[str, Any] = {
        "benchmark": "energy_h200",
        "cpu_mode": args.cpu,
        "goal_pct": GOAL_PCT,
        "server": {"size": args.size, "matmuls": args.matmuls, "rows": args.rows},
        "integrate_self_check": self_check(),
    }
    try:
        if sampler is not None:
            summary["device"] = sampler.name
            summary["instant_power_field"] = sampler.instant
            sampler.start()
        idle_from = time.time()
        time.sleep(min(2.0, args.duration))  # the idle power, before the server starts
        idle_to = time.time()
        log = (out / "server.log").open("wb")
        server = subprocess.Popen(
            [sys.executable, str(Path(__file__).resolve()), "--serve", "--port", str(port),
             "--size", str(args.size), "--matmuls", str(args.matmuls), "--rows", str(args.rows),
             *(["--cpu"] if args.cpu else [])],
            stdout=log, stderr=subprocess.STDOUT, env=env, start_new_session=True,
        )  # fmt: skip
        _wait_ready(url, server, min(deadline, time.monotonic() + 180))
        summary["server_ready_s"] = round(time.monotonic() - started, 2)
        json_file = out / "bench.json"
        command = [
            sys.executable, "-m", "servegate", "bench", "--url", url, "--gpus", "0",
            "--concurrency", args.concurrency, "--duration", str(args.duration),
            "--warmup", str(args.warmup), "--input-len", "64", "--output-len",
            str(args.output_len), "--price-per-gpu-hour", str(args.price), "--metrics-url", "",
            "--json-file", str(json_file), "-q",
        ]  # fmt: skip
        summary["command"] = " ".join(command[1:])
        left = deadline - time.monotonic() - 15
        bench = subprocess.Popen(
            command,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            env=env,
            start_new_session=True,
        )
        try:
            stdout, stderr = bench.communicate(timeout=max(10.0, left))
        except subprocess.TimeoutExpired:
            _stop_session(bench)
            stdout, stderr = bench.communicate()
            summary["error"] = f"servegate bench ran past the budget of {args.budget:.0f} s"
        (out / "bench.stdout").write_bytes(stdout)
        (out / "bench.stderr").write_bytes(stderr)
        summary["bench_exit"] = bench.returncode
        if sampler is not None:
            sampler.stop()
        points = json.loads(json_file.read_text())["points"] if json_file.exists() else []
        samples = sampler.samples if sampler is not None else []
        summary["samples"] = len(samples)
        if samples:
            idle = [w for t, w, _ in samples if idle_from <= t <= idle_to]
            summary["idle_power_w"] = round(sum(idle) / len(idle), 1) if idle else None
        summary["points"] = [_compare(p, samples) for p in points]
        summary["levels"] = levels
        errors = [p["error_pct"] for p in summary["points"] if p["error_pct"] is not None]
        summary["max_abs_error_pct"] = max((abs(e) for e in errors), default=None)
        summary["goal_met"] = (
            bool(errors) and len(errors) == len(levels) and max(abs(e) for e in errors) <= GOAL_PCT
        )
        if bench.returncode != 0:
            summary["bench_stderr_tail"] = stderr.decode(errors="replace")[-2000:]
    except Exception as exc:  # reported in the summary, which is still written
        summary["error"] = f"{type(exc).__name__}: {exc}"
        summary["goal_met"] = False
    finally:
        if sampler is not None:
            sampler.stop()
        _stop_session(bench)
        _stop_session(server)
        if "error" in summary and (out / "server.log").exists():
            summary["server_log_tail"] = (out / "server.log").read_text(errors="replace")[-2000:]
        summary["wall_s"] = round(time.monotonic() - started, 1)
    return summary


def _compare(
    point: dict[str, Any], samples: list[tuple[float, float, float | None]]
) -> dict[str, Any]:
    """One point: servegate's energy against the sampled power curve over its window."""
    energy = point.get("energy") or {}
    t0, t1 = energy.get("started_unix"), energy.get("ended_unix")
    measured = energy.get("energy_j")
    sampled = instant = None
    in_window = 0
    if t0 is not None and t1 is not None:
        sampled = integrate([(t, w) for t, w, _ in samples], t0, t1)
        with_instant = [(t, i) for t, _, i in samples if i is not None]
        instant = integrate(with_instant, t0, t1) if with_instant else None
        in_window = sum(1 for t, _, _ in samples if t0 <= t <= t1)
    error = None if measured is None or not sampled else (measured - sampled) / sampled * 100.0
    error_instant = (
        None if measured is None or not instant else (measured - instant) / instant * 100.0
    )
    return {
        "label": point.get("label"),
        "completed": point.get("completed"),
        "output_throughput": point.get("summary", {}).get("output_throughput"),
        "window_s": energy.get("window_s"),
        "servegate_energy_j": measured,
        "sampled_energy_j": sampled,
        "sampled_instant_energy_j": instant,
        "error_pct": None if error is None else round(error, 3),
        "error_vs_instant_pct": None if error_instant is None else round(error_instant, 3),
        "samples_in_window": in_window,
        "mean_power_w": energy.get("mean_power_w"),
        "joules_per_output_token": energy.get("joules_per_output_token"),
        "usd_per_million_output_tokens": energy.get("usd_per_million_output_tokens"),
        "gpus": energy.get("gpus"),
        "by": energy.get("by"),
        "reason": energy.get("reason"),
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cpu", action="store_true", help="sleep instead of GPU work; no NVML")
    parser.add_argument(
        "--wheels", type=Path, default=None, help="unpack these *.whl onto the path"
    )
    parser.add_argument("--out", type=Path, default=Path("energy-out"))
    parser.add_argument("--concurrency", default="1,8,32")
    parser.add_argument("--duration", type=float, default=45.0, help="measured s per point")
    parser.add_argument("--warmup", type=int, default=8)
    parser.add_argument("--output-len", type=int, default=256)
    parser.add_argument("--price", type=float, default=2.5, help="$ per GPU-hour")
    parser.add_argument("--size", type=int, default=8192)
    parser.add_argument("--matmuls", type=int, default=4)
    parser.add_argument("--rows", type=int, default=256, help="activation rows per request")
    parser.add_argument("--budget", type=float, default=450.0, help="seconds, all included")
    parser.add_argument("--serve", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--port", type=int, default=0, help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.serve:
        return serve(args)

    def on_term(signum: int, frame: object) -> None:
        raise SystemExit(128 + signum)  # unwinds through drive's finally: everything stops

    signal.signal(signal.SIGTERM, on_term)
    summary = drive(args)
    text = json.dumps(summary, indent=1)
    out = Path(os.environ.get("OUT") or args.out)
    (out / "energy.json").write_text(text + "\n")
    print(text)
    return 0 if summary.get("bench_exit") == 0 else 1


if __name__ == "__main__":
    raise SystemExit(main())
