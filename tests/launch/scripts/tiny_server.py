"""A tiny server for the launcher's tests: echoes its environment, floods its log.

python tiny_server.py ready PORT                 print a ready line, answer HTTP on PORT
python tiny_server.py echo PORT VAR...           print each VAR's value, then as ``ready``
python tiny_server.py echo-crash VAR...          print each VAR's value, then die (exit 1)
python tiny_server.py flood PORT KB MARKER       as ``ready``, then write KB kilobytes of log
                                                 and create MARKER once they are written
python tiny_server.py sim PORT VAR... [--crash]  print each VAR's value, then run the
                                                 simulated SGLang on PORT (or as echo-crash)

``--api-key KEY`` and ``--source URL`` are taken (as a real server takes them) and ignored.
"""

from __future__ import annotations

import http.server
import os
import sys
import threading
import time

SIM = ["-m", "servegate", "sim", "--engine", "sglang", "--profile", "fast"]
SIM_SPEED = ["--time-scale", "0.2", "--jitter", "0.02"]


def serve(port: int) -> None:
    class Handler(http.server.BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            body = b"ok\n"
            self.send_response(200)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *args: object) -> None:
            pass

    server = http.server.ThreadingHTTPServer(("127.0.0.1", port), Handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()


def forever() -> None:
    while True:
        time.sleep(3600)


def echo(names: list[str]) -> None:
    for name in names:
        value = os.environ.get(name, "")
        print(f"{name}={value}", flush=True)
        print(f"connecting with credentials {value} (from {name})", flush=True)


def ready(port: int) -> None:
    serve(port)
    print("tiny server ready", flush=True)


def crash(names: list[str]) -> None:
    echo(names)
    print("Traceback (most recent call last):", flush=True)
    print('  File "server.py", line 1, in <module>', flush=True)
    print(f"RuntimeError: login refused for {os.environ.get(names[0], '')}", flush=True)
    sys.exit(1)


def main() -> None:
    mode, args = sys.argv[1], sys.argv[2:]
    for option in ("--api-key", "--source"):
        if option in args:
            at = args.index(option)
            del args[at : at + 2]
    if mode == "ready":
        ready(int(args[0]))
        forever()
    elif mode == "echo":
        echo(args[1:])
        ready(int(args[0]))
        forever()
    elif mode == "echo-crash":
        crash(args)
    elif mode == "flood":
        ready(int(args[0]))
        line = b"INFO 01-01 00:00:00 [engine.py:1] step done, 128 tokens generated ....\n"
        block = (line * (1024 // len(line) + 1))[:1024]
        out = sys.stdout.buffer
        for _ in range(int(args[1])):
            out.write(block)
        out.flush()
        with open(args[2], "w") as marker:
            marker.write("flooded\n")
        forever()
    elif mode == "sim":
        names = [name for name in args[1:] if name != "--crash"]
        if "--crash" in args:
            crash(names)
        echo(names)
        argv = [sys.executable, *SIM, "--port", args[0], *SIM_SPEED]
        os.execv(argv[0], argv)
    else:
        raise SystemExit(f"unknown mode {mode}")


if __name__ == "__main__":
    main()
