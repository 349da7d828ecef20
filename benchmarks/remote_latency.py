"""How fast a verdict over SSH reaches this side, measured from the event on the host.

    python benchmarks/remote_latency.py [--trials 20] [--via library|cli|local] [--json]

A real sshd on 127.0.0.1 (``tests/remote/sshd.py``: its own keys, config and user) with
servegate installed behind it by ``servegate remote install``. Each trial launches a
server on that host through servegate there (keeper, gate, probe), the output streamed
back over ssh (the runner's event file, the agent, the connection) and read here:

- READY: the server (``tests/gate/scripts/fake_engine.py``, sglang lines, ``/health``)
  writes the wall time just before its ready line;
- CRASH: the server writes the wall time just before ``os._exit(1)``.

"verdict line here" is when the verdict line (``SERVER READY after ...``, ``CRASH after
...``) arrived on this side minus that stamp. With ``--json`` the command runs with
``--json`` instead: "verdict here" is when the verdict object arrived, "gate" its
``decided_at`` minus the stamp (on the host itself), and their difference the hop back
over SSH (the JSON object is printed after the start's record is written, the line
before it). One clock: the host is this machine. ``--via library`` reads the verdict from
``servegate.remote.run_job``
in this process; ``--via cli`` from the stdout of a ``servegate launch --host`` process;
``--via local`` is the baseline: the same launch without ``--host`` (a local
``servegate launch`` process, its state in a folder of its own).
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
import uuid
from datetime import datetime
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from gate_latency import p99, stamp_of  # noqa: E402  (benchmarks/, this script's folder)
from tests.remote import sshd  # noqa: E402

CRASH_CODE = """
import os, sys, time
print("Load weight begin. avail mem=50.69 GB", flush=True)
time.sleep(1.0)
with open(sys.argv[1], "w") as f:
    f.write(repr(time.time()))
os._exit(1)
"""


def launch(
    remote: sshd.Remote, args: list[str], via: str, as_json: bool
) -> tuple[int, dict[str, object], float]:
    """Launch on the host with -q; (exit code, verdict (or its line), arrival time here)."""
    argv = ["--json", "-q", *args] if as_json else ["-q", *args]
    if via in ("cli", "local"):
        host = ["--host", remote.alias] if via == "cli" else []
        proc = subprocess.Popen(
            [sys.executable, "-m", "servegate", "launch", *host, *argv],
            stdout=subprocess.PIPE,
            text=True,
            env=remote.env(),
        )
        assert proc.stdout is not None
        line = proc.stdout.readline()
        arrived = time.time()
        proc.stdout.read()
        return proc.wait(), _verdict(line), arrived
    from servegate.remote import Output, parse_host, run_job

    got: list[tuple[str, float]] = []
    code = run_job(
        parse_host(remote.alias),
        "launch",
        argv,
        output=Output(out=lambda text: got.append((text, time.time())), err=lambda text: None),
    )
    return code, _verdict(got[0][0]), got[0][1]


def _verdict(line: str) -> dict[str, object]:
    return json.loads(line) if line.startswith("{") else {"line": line.strip()}


def decided(verdict: dict[str, object]) -> float:
    if "decided_at" not in verdict:
        return float("nan")
    return datetime.fromisoformat(str(verdict["decided_at"])).timestamp()


def ready_trial(remote: sshd.Remote, shared: Path, via: str, as_json: bool) -> tuple[float, float]:
    port = sshd.free_port()
    name = f"lat{port}"
    stamp = shared / f"ready-{port}"
    fake = str(ROOT / "tests" / "gate" / "scripts" / "fake_engine.py")
    code, verdict, arrived = launch(
        remote,
        [
            "--engine",
            "sglang",
            "--name",
            name,
            "--port",
            str(port),
            "--",
            remote.python,
            fake,
            "sglang",
            str(port),
            "--stamp",
            str(stamp),
            "--delay",
            "0.1",
        ],
        via,
        as_json,
    )
    assert code == 0, verdict
    written = stamp_of(stamp)
    from servegate.remote import Output, parse_host, run_cli

    if via == "local":
        subprocess.run(
            [sys.executable, "-m", "servegate", "stop", name], check=True, capture_output=True
        )
    else:
        quiet = Output(out=lambda text: None, err=lambda text: None)
        assert run_cli(parse_host(remote.alias), "stop", [name], output=quiet) == 0
    return decided(verdict) - written, arrived - written


def crash_trial(remote: sshd.Remote, shared: Path, via: str, as_json: bool) -> tuple[float, float]:
    stamp = shared / f"crash-{uuid.uuid4().hex}"
    script = shared / "crash.py"
    script.write_text(CRASH_CODE)
    code, verdict, arrived = launch(
        remote,
        [
            "--ready",
            "never printed",
            "--port",
            str(sshd.free_port()),
            "--",
            remote.python,
            str(script),
            str(stamp),
        ],
        via,
        as_json,
    )
    assert code == 1, verdict
    written = stamp_of(stamp)
    return decided(verdict) - written, arrived - written


def show(label: str, values: list[float]) -> None:
    ms = sorted(v * 1000 for v in values)
    print(
        f"{label:34s} n={len(ms):3d}  p50 {statistics.median(ms):7.2f} ms  "
        f"p99 {p99(ms):7.2f} ms  max {ms[-1]:7.2f} ms"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--trials", type=int, default=20)
    parser.add_argument("--via", choices=("library", "cli", "local"), default="library")
    parser.add_argument("--json", action="store_true", help="the verdict as JSON, with decided_at")
    args = parser.parse_args()
    folder = Path(tempfile.mkdtemp(prefix="sg-remote-bench-"))
    os.environ["SERVEGATE_STATE_DIR"] = str(folder / "state")  # --via local: not the user's
    os.environ["SERVEGATE_HISTORY"] = str(folder / "history.db")
    control = tempfile.mkdtemp(prefix="sgc-")
    os.environ["SERVEGATE_SSH_CONTROL_DIR"] = control
    remote = sshd.start(folder / "ssh", uuid.uuid4().hex)
    os.environ["SERVEGATE_SSH_CONFIG"] = str(remote.config)
    try:
        done = sshd.install(remote, dict(os.environ))
        if done.returncode != 0:
            raise SystemExit(done.stderr)
        shared = remote.shared_folder("stamps")
        results: dict[str, list[float]] = {k: [] for k in ("rg", "rh", "cg", "ch")}
        for _ in range(args.trials):
            gate, here = ready_trial(remote, shared, args.via, args.json)
            results["rg"].append(gate)
            results["rh"].append(here)
            gate, here = crash_trial(remote, shared, args.via, args.json)
            results["cg"].append(gate)
            results["ch"].append(here)
        what = "JSON" if args.json else "line"
        print(
            f"via {args.via}, verdict as {what}, {args.trials} trials, "
            f"load {os.getloadavg()[0]:.1f}"
        )
        show(f"READY: verdict {what} here", results["rh"])
        show(f"CRASH: verdict {what} here", results["ch"])
        if args.json:
            show("READY: gate decided (on the host)", results["rg"])
            show(
                "READY: the hop over SSH",
                [h - g for g, h in zip(results["rg"], results["rh"], strict=True)],
            )
            show("CRASH: gate decided (on the host)", results["cg"])
            show(
                "CRASH: the hop over SSH",
                [h - g for g, h in zip(results["cg"], results["ch"], strict=True)],
            )
    finally:
        sshd.close_masters(dict(os.environ))
        sshd.stop(remote)
        shutil.rmtree(control, ignore_errors=True)


if __name__ == "__main__":
    main()
