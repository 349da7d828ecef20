"""Servers that fail in the ways real ones do, for the gate's tests.

python misbehave.py exit CODE          print a line, then exit with CODE (no traceback)
python misbehave.py signal NUM         print a line, then kill itself with signal NUM
python misbehave.py oom-hang           print a CUDA OOM traceback, then hang forever
python misbehave.py wrapper-then-oom   SGLang's wrapper error first, its OOM cause after
python misbehave.py traceback-ok PORT  print a harmless traceback, then become ready
python misbehave.py lose-child         start an essential child that dies; live on
python misbehave.py stall PHASE_LINE   print a phase line, then go silent forever
python misbehave.py chatter            start a shard, then a new line every 50 ms
python misbehave.py heartbeat          start a shard, then the same heartbeat forever
python misbehave.py escape PORT PIDFILE  a setsid grandchild escapes, then ready on PORT
python misbehave.py garbage PORT       binary junk and a 10 MB line, then ready on PORT
python misbehave.py flood PORT MB      write MB megabytes of log fast, then ready on PORT
python misbehave.py bars PORT MB       MB megabytes of a tqdm bar redrawn with \\r, then ready
"""

from __future__ import annotations

import http.server
import os
import subprocess
import sys
import threading
import time


def serve(port: int) -> None:
    class Handler(http.server.BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            self.send_response(200)
            self.send_header("Content-Length", "0")
            self.end_headers()

        def log_message(self, *args: object) -> None:
            pass

    server = http.server.ThreadingHTTPServer(("127.0.0.1", port), Handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()


def forever() -> None:
    while True:
        time.sleep(3600)


def ready_on(port: int) -> None:
    serve(port)
    print("generic server ready", flush=True)
    forever()


def main() -> None:
    mode, args = sys.argv[1], sys.argv[2:]
    if mode == "exit":
        print("loading something", flush=True)
        sys.exit(int(args[0]))
    elif mode == "signal":
        print("loading something", flush=True)
        os.kill(os.getpid(), int(args[0]))
        forever()
    elif mode == "oom-hang":
        print("Traceback (most recent call last):", flush=True)
        print('  File "model_runner.py", line 1, in load', flush=True)
        print(
            "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB",
            flush=True,
        )
        forever()
    elif mode == "wrapper-then-oom":
        print("[2026-01-01 10:00:00 TP0] Scheduler hit an exception: Traceback", flush=True)
        time.sleep(0.05)
        print('  File "model_runner.py", line 1, in load', flush=True)
        print("torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB", flush=True)
        forever()
    elif mode == "traceback-ok":
        print("Traceback (most recent call last):", flush=True)
        print('  File "serving_responses.py", line 10, in __init__', flush=True)
        print("ImportError: cannot import name 'x' from 'y'", flush=True)
        print("WARNING: responses API disabled", flush=True)
        ready_on(int(args[0]))
    elif mode == "lose-child":
        child = subprocess.Popen(
            [sys.executable, "-c", "import time; time.sleep(0.8)", "sglang::scheduler_TP0"]
        )
        print("Init torch distributed begin.", flush=True)
        child.wait()
        forever()
    elif mode == "stall":
        print(args[0], flush=True)
        forever()
    elif mode == "chatter":
        print("INFO text_generation_launcher: Starting shard rank=0", flush=True)
        for step in range(10**9):
            print(f"loaded tensor {step}", flush=True)
            time.sleep(0.05)
    elif mode == "heartbeat":
        print("INFO text_generation_launcher: Starting shard rank=0", flush=True)
        start = time.monotonic()
        while True:
            waited = time.monotonic() - start
            print(
                f"{time.strftime('%H:%M:%S')} Waiting for shard to be ready... "
                f"rank=0 elapsed={waited:.1f}s",
                flush=True,
            )
            time.sleep(0.05)
    elif mode == "escape":
        grandchild = subprocess.Popen(
            [sys.executable, "-c", "import os, time; os.setsid(); time.sleep(3600)"]
        )
        with open(args[1], "w") as f:
            f.write(str(grandchild.pid))
        ready_on(int(args[0]))
    elif mode == "garbage":
        out = sys.stdout.buffer
        out.write(bytes(range(256)) * 64 + b"\n")
        out.write(b"\xff\xfe\x00 half a line ")
        out.flush()
        out.write(b"x" * (10 * 1024 * 1024))  # 10 MB without a newline
        out.write(b"\nprogress 10%\rprogress 100%\r\n")
        out.flush()
        ready_on(int(args[0]))
    elif mode == "flood":
        line = b"(Worker pid=3) INFO 01-01 00:00:00 [loader.py:1] Loading weights shard 1/4 ....\n"
        block = line * (1024 * 1024 // len(line) + 1)
        block = block[: 1024 * 1024]
        out = sys.stdout.buffer
        for _ in range(int(args[1])):
            out.write(block)
        out.write(b"\n")
        out.flush()
        ready_on(int(args[0]))
    elif mode == "bars":
        bar = "Loading safetensors checkpoint shards: {0:3d}% Completed | {0}/100 [00:01<00:01]\r"
        block = "".join(bar.format(i % 100) for i in range(12000)).encode()
        out = sys.stdout.buffer
        written = 0
        while written < int(args[1]) << 20:
            out.write(block)
            written += len(block)
        out.write(b"\n")
        out.flush()
        ready_on(int(args[0]))
    else:
        raise SystemExit(f"unknown mode {mode}")


if __name__ == "__main__":
    main()
