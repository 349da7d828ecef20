"""How fast the gate notices READY and CRASH, measured from the event itself.

    python benchmarks/gate_latency.py [--trials 50] [--only TEXT]

READY: the test server writes the wall time just before it writes its ready line; the
latency is the time ``launch()`` returned minus that stamp (so it includes the pipe,
the keeper's gate, the probe and the 1-token completion where the profile asks for
them, and the hop back to the caller). CRASH: the server writes the time just before
``os._exit(1)``; the latency is the time ``launch()`` raised minus that stamp (after
it stopped the rest of the tree). Each event also gets the gate's own decision time
(the verdict's ``decided_at``, to the microsecond) minus the stamp.
``wait --log``: a writer appends the ready line to a file; the latency is the time
``wait()`` returned minus the time of the write.

CRASH reaches the user: a real ``python -m servegate launch`` process gates the same
crashing server; the latency is the time its verdict line arrived on its stdout (read
here, through a pipe) minus the server's stamp, and "command returned" is when that
process exited. Port taken while loading: the server loads, another process (this
one) takes its port, the server fails to bind and exits; the figures are the verdict
line after the server's error, and the command's return after its verdict line (the
stop must not wait for a port that someone else holds).

READY reaches the user: a real ``python -m servegate launch`` process gates a stand-in
SGLang server (ready line, then GET /health); the latency is the time its
``SERVER READY`` line arrived on its stdout (read here) minus the verdict's
``decided_at`` (the start history's ``started_at`` plus ``elapsed_s``, which the
command writes after the line), and "command returned" is when that process exited
(after the startup record). ``--burn N`` runs N CPU-burning processes beside every
trial (started here, killed at the end).
"""

from __future__ import annotations

import argparse
import os
import socket
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from datetime import datetime
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
FAKE = str(ROOT / "tests" / "gate" / "scripts" / "fake_engine.py")

CRASH_CODE = """
import os, sys, time
print("loading weights", flush=True)
time.sleep(1.0)
with open(sys.argv[1], "w") as f:
    f.write(repr(time.time()))
os._exit(1)
"""


PORT_TAKEN_CODE = """
import os, socket, sys, time
go, stamp, port = sys.argv[1], sys.argv[2], int(sys.argv[3])
print("Load weight begin. avail mem=50.69 GB", flush=True)
while not os.path.exists(go):
    time.sleep(0.005)
sock = socket.socket()
try:
    sock.bind(("0.0.0.0", port))
except OSError:
    with open(stamp, "w") as f:
        f.write(repr(time.time()))
    raise
"""


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def stamp_of(path: Path) -> float:
    for _ in range(200):
        text = path.read_text() if path.exists() else ""
        if text:
            return float(text)
        time.sleep(0.01)
    raise RuntimeError(f"no stamp in {path}")


def decided(verdict_decided_at: str) -> float:
    return datetime.fromisoformat(verdict_decided_at).timestamp()


def ready_trial(engine: str, folder: Path) -> tuple[float, float]:
    from servegate.launch import launch

    port = free_port()
    stamp = folder / f"stamp-{port}"
    extra = {"ready": ["generic server ready"]} if engine == "generic" else {"port": port}
    server = launch(
        # lines 0.1 s apart: the ready line comes well after the gate is up and running
        [sys.executable, FAKE, engine, str(port), "--stamp", str(stamp), "--delay", "0.1"],
        engine=engine,
        timeout_s=60,
        log_path=str(folder / "server.log"),
        **extra,  # type: ignore[arg-type]
    )
    noticed = time.time()
    server.stop(grace_s=2.0)
    written = stamp_of(stamp)
    return decided(server.verdict.decided_at) - written, noticed - written


def crash_trial(folder: Path) -> tuple[float, float]:
    from servegate.errors import ServerCrashed
    from servegate.launch import launch

    stamp = folder / f"crash-{time.monotonic_ns()}"
    try:
        launch(
            [sys.executable, "-c", CRASH_CODE, str(stamp)],
            ready=["never printed"],
            timeout_s=60,
            log_path=str(folder / "crash.log"),
        )
    except ServerCrashed as exc:
        noticed = time.time()
        verdict = exc.verdict
    else:
        raise RuntimeError("the crashing server became ready")
    written = stamp_of(stamp)
    return decided(verdict.decided_at) - written, noticed - written


def wait_log_trial(folder: Path) -> tuple[float, float]:
    from servegate.gate import wait

    log = folder / f"follow-{time.monotonic_ns()}.log"
    log.write_bytes(b"Load weight begin. avail mem=50 GB\n")
    written: list[float] = []

    def writer() -> None:
        time.sleep(0.5)
        with log.open("ab") as f:
            written.append(time.time())
            f.write(b"The server is fired up and ready to roll!\n")

    thread = threading.Thread(target=writer)
    thread.start()
    verdict = wait(log_path=str(log), engine="sglang", health_url=None, ready=(), timeout_s=30)
    noticed = time.time()
    thread.join()
    return decided(verdict.decided_at) - written[0], noticed - written[0]


def launch_cli(args: list[str]) -> subprocess.Popen[bytes]:
    return subprocess.Popen(
        [sys.executable, "-m", "servegate", "launch", *args],
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
    )


def first_line(proc: subprocess.Popen[bytes]) -> tuple[bytes, float, float]:
    """The first stdout line, when it arrived, and when the process exited."""
    assert proc.stdout is not None
    line = proc.stdout.readline()
    printed = time.time()
    proc.stdout.read()
    proc.wait()
    return line, printed, time.time()


def crash_cli_trial(folder: Path) -> tuple[float, float]:
    stamp = folder / f"cli-crash-{time.monotonic_ns()}"
    gate = ["--ready", "never printed", "--log", str(folder / "cli-crash.log")]
    proc = launch_cli([*gate, "--", sys.executable, "-c", CRASH_CODE, str(stamp)])
    line, printed, returned = first_line(proc)
    if not line.startswith(b"CRASH after"):
        raise RuntimeError(f"unexpected verdict {line!r}")
    written = stamp_of(stamp)
    return printed - written, returned - written


def decided_of_last_start() -> float:
    """The newest start history row's ``decided_at`` (its ``started_at`` + ``elapsed_s``)."""
    from servegate.startup.history import opened

    with opened(create=False) as history:
        row = history.starts(limit=1)[0]
    return datetime.fromisoformat(row.started_at).timestamp() + row.elapsed_s


def ready_cli_trial(folder: Path) -> tuple[float, float]:
    from servegate.launch import stop

    port = free_port()
    name = f"ready-{port}"
    gate = ["--engine", "sglang", "--port", str(port), "--name", name]
    server = [sys.executable, FAKE, "sglang", str(port), "--delay", "0.05"]
    proc = launch_cli([*gate, "--log", str(folder / "cli-ready.log"), "--", *server])
    line, printed, returned = first_line(proc)
    stop(name, grace_s=2.0)
    if not line.startswith(b"SERVER READY after"):
        raise RuntimeError(f"unexpected verdict {line!r}")
    decided_at = decided_of_last_start()
    return printed - decided_at, returned - decided_at


def burners(count: int) -> list[subprocess.Popen[bytes]]:
    """``count`` processes that each burn a core until killed."""
    return [subprocess.Popen([sys.executable, "-c", "while 1: pass"]) for _ in range(count)]


def port_taken_trial(folder: Path) -> tuple[float, float]:
    port = free_port()
    tag = time.monotonic_ns()
    go, stamp, log = (folder / f"{name}-{tag}" for name in ("go", "taken", "taken.log"))
    gate = ["--engine", "sglang", "--port", str(port), "--log", str(log)]
    server = [sys.executable, "-c", PORT_TAKEN_CODE, str(go), str(stamp), str(port)]
    proc = launch_cli([*gate, "--", *server])
    with socket.socket() as other:
        while b"Load weight begin" not in (log.read_bytes() if log.exists() else b""):
            time.sleep(0.005)
        other.bind(("127.0.0.1", port))
        other.listen()  # accepts connections (the probe's too) and never answers
        go.write_bytes(b"")
        line, printed, returned = first_line(proc)
    if b"(port-in-use)" not in line:
        raise RuntimeError(f"unexpected verdict {line!r}")
    return printed - stamp_of(stamp), returned - printed


def p99(ms: list[float]) -> float:
    """The 99th percentile of sorted values (the nearest rank)."""
    return ms[min(len(ms) - 1, round(0.99 * (len(ms) - 1)))]


def summary(name: str, values: list[float]) -> str:
    ms = sorted(v * 1000 for v in values)
    return (
        f"| {name} | {len(ms)} | {statistics.mean(ms):.2f} | {statistics.median(ms):.2f} | "
        f"{p99(ms):.2f} | {ms[-1]:.2f} |"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--trials", type=int, default=50)
    parser.add_argument("--only", metavar="TEXT", help="run only the events whose name has TEXT")
    parser.add_argument("--burn", type=int, default=0, help="CPU-burning processes beside")
    args = parser.parse_args()
    os.environ.setdefault("SERVEGATE_STATE_DIR", tempfile.mkdtemp(prefix="sg-bench-state-"))
    results: dict[str, list[float]] = {}
    with tempfile.TemporaryDirectory(prefix="sg-bench-") as tmp:
        folder = Path(tmp)
        os.environ["SERVEGATE_HISTORY"] = str(folder / "history.db")  # never the user's
        plans = [
            ("READY, ready line only (generic --ready)", lambda: ready_trial("generic", folder)),
            ("READY, line + GET /health (sglang)", lambda: ready_trial("sglang", folder)),
            (
                "READY, line + /health + 1-token completion (vllm)",
                lambda: ready_trial("vllm", folder),
            ),
            ("CRASH, main process exit (no traceback)", lambda: crash_trial(folder)),
            (
                "CRASH reaches the user (servegate launch stdout)",
                lambda: crash_cli_trial(folder),
            ),
            ("READY via wait --log (inotify follow)", lambda: wait_log_trial(folder)),
        ]
        labels = {
            "CRASH reaches the user (servegate launch stdout)": (
                "verdict line printed",
                "command returned",
            ),
            "port taken while loading (servegate launch, sglang probe)": (
                "verdict line after the server's error",
                "command returned after the verdict line",
            ),
            "READY reaches the user (servegate launch stdout)": (
                "verdict line after decided_at",
                "command returned after decided_at",
            ),
        }
        plans.append(
            (
                "port taken while loading (servegate launch, sglang probe)",
                lambda: port_taken_trial(folder),
            )
        )
        plans.append(
            (
                "READY reaches the user (servegate launch stdout)",
                lambda: ready_cli_trial(folder),
            )
        )
        selected = [plan for plan in plans if not args.only or args.only in plan[0]]
        burning = burners(args.burn)
        try:
            for name, trial in selected:
                first, second = labels.get(name, ("gate decided", "caller returned"))
                pairs = [trial() for _ in range(args.trials)]
                for label, values in (
                    (first, [p[0] for p in pairs]),
                    (second, [p[1] for p in pairs]),
                ):
                    results[f"{name}: {label}"] = values
                    print(summary(f"{name}: {label}", values), flush=True)
        finally:
            for proc in burning:
                proc.kill()
                proc.wait()
    print()
    print("| event | trials | mean ms | p50 ms | p99 ms | max ms |")
    print("| --- | --- | --- | --- | --- | --- |")
    for name, values in results.items():
        print(summary(name, values))


if __name__ == "__main__":
    main()
