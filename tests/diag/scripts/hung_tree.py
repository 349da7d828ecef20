"""A process tree that hangs idle: this process and two Python children in
wait_for_nccl_peers, one native child (sleep); writes READY to stdout when all run."""

from __future__ import annotations

import subprocess
import sys
import threading
import time


def wait_for_nccl_peers() -> None:
    """Sleep forever, as a rank waiting for peers that never come."""
    while True:
        time.sleep(3600)


def waits_on_an_event() -> None:
    """Block in the standard library (threading), called from a project frame."""
    threading.Event().wait()


if __name__ == "__main__":
    role = sys.argv[1] if len(sys.argv) > 1 else "main"
    if role == "rank":
        print("up", flush=True)
        wait_for_nccl_peers()
    if role == "event":
        print("up", flush=True)
        waits_on_an_event()
    kids = [
        subprocess.Popen([sys.executable, __file__, "rank"], stdout=subprocess.PIPE),
        subprocess.Popen([sys.executable, __file__, "rank"], stdout=subprocess.PIPE),
        subprocess.Popen([sys.executable, __file__, "event"], stdout=subprocess.PIPE),
    ]
    for kid in kids:
        assert kid.stdout is not None
        kid.stdout.readline()
    native = subprocess.Popen(["sleep", "3600"])
    print(f"READY {native.pid}", flush=True)
    wait_for_nccl_peers()
