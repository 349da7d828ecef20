"""Servers at the edges of what the gate reads and watches, for its tests.

python edges.py ansi-ready             a coloured uvicorn ready line (ANSI codes in the URL)
python edges.py no-newline-ready       "generic server ready" with no line end, then hang
python edges.py no-newline-oom         a CUDA OOM line with no line end, then hang
python edges.py rename-child           a child takes the name sglang::scheduler_TP0 after
                                       0.5 s (same PID), dies 2 s later; the parent lives
python edges.py stubborn PIDFILE       a child that ignores SIGTERM, then a CUDA OOM line
python edges.py port-taken GO PORT     load until the file GO exists, then bind PORT
"""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import time

# the child execs itself into its role name: same PID, same start time, new command line,
# which is what setproctitle() looks like from outside (the name is built, so that this
# code does not carry it)
RENAMING_CHILD = """
import os, sys, time
time.sleep(0.5)
os.execv(sys.executable, [sys.executable, "-c", "import time; time.sleep(2.0)",
                          "sglang::" + "scheduler_TP0"])
"""

STUBBORN_CHILD = """
import signal, sys, time
signal.signal(signal.SIGTERM, signal.SIG_IGN)
with open(sys.argv[1] + ".tmp", "w") as f:
    f.write("%d\\n" % __import__("os").getpid())
__import__("os").rename(sys.argv[1] + ".tmp", sys.argv[1])
time.sleep(3600)
"""


def forever() -> None:
    while True:
        time.sleep(3600)


def main() -> None:
    mode, args = sys.argv[1], sys.argv[2:]
    out = sys.stdout
    if mode == "ansi-ready":
        print("INFO:     Started server process [1]", flush=True)
        # uvicorn colours the level and puts the URL in bold
        print(
            "\x1b[32mINFO\x1b[0m:     Uvicorn running on \x1b[1mhttp://127.0.0.1:8000\x1b[0m "
            "(Press CTRL+C to quit)",
            flush=True,
        )
        forever()
    elif mode == "no-newline-ready":
        print("loading", flush=True)
        out.write("generic server ready")
        out.flush()
        forever()
    elif mode == "no-newline-oom":
        print("Load weight begin. avail mem=50.69 GB", flush=True)
        out.write("torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB")
        out.flush()
        forever()
    elif mode == "rename-child":
        child = subprocess.Popen([sys.executable, "-c", RENAMING_CHILD])
        print("Init torch distributed begin.", flush=True)
        child.wait()
        print("the parent lives on", flush=True)
        forever()
    elif mode == "stubborn":
        subprocess.Popen([sys.executable, "-c", STUBBORN_CHILD, args[0]])
        while not os.path.exists(args[0]):
            time.sleep(0.01)
        print("torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB", flush=True)
        forever()
    elif mode == "port-taken":
        go, port = args[0], int(args[1])
        print("Load weight begin. avail mem=50.69 GB", flush=True)
        while not os.path.exists(go):
            time.sleep(0.01)
        sock = socket.socket()
        sock.bind(("0.0.0.0", port))  # the other process holds it: OSError, exit 1
        sock.listen()
        forever()
    else:
        raise SystemExit(f"unknown mode {mode}")


if __name__ == "__main__":
    main()
