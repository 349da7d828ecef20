"""Process trees shaped like real engines', for the gate's tests.

python engine_tree.py vllm PORT PIDFILE   vLLM 0.32's tree: an API server serving /health
                                          and /v1/completions on PORT, with children
                                          named VLLM::EngineCore and VLLM::Worker (their
                                          PIDs written to PIDFILE, one a line)
python engine_tree.py orphan PIDFILE      start a child that calls setsid() and lives on,
                                          write its PID to PIDFILE, then exit once a
                                          line arrives on stdin
"""

from __future__ import annotations

import http.server
import os
import subprocess
import sys
import threading
import time

SLEEPER = "import time\nwhile True: time.sleep(3600)"


class Handler(http.server.BaseHTTPRequestHandler):
    def do_GET(self) -> None:
        self._reply(200 if self.path == "/health" else 404)

    def do_POST(self) -> None:
        self.rfile.read(int(self.headers.get("Content-Length") or 0))
        self._reply(200 if self.path == "/v1/completions" else 404)

    def _reply(self, status: int) -> None:
        body = b'{"choices": [{"text": "x"}]}' if status == 200 else b""
        self.send_response(status)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args: object) -> None:
        pass


def named(title: str) -> subprocess.Popen[bytes]:
    """A sleeping Python child whose command line starts with ``title`` (setproctitle's look)."""
    return subprocess.Popen([title, "-c", SLEEPER], executable=sys.executable)


def vllm(port: int, pidfile: str) -> None:
    core = named("VLLM::EngineCore")
    worker = named("VLLM::Worker")
    with open(pidfile, "w") as f:
        f.write(f"{core.pid}\n{worker.pid}\n")
    server = http.server.ThreadingHTTPServer(("127.0.0.1", port), Handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    time.sleep(0.3)  # long enough for the gate to find the children
    print(f"(APIServer pid={os.getpid()}) INFO [entry.py:140] Starting vLLM server on "
          f"http://127.0.0.1:{port}", flush=True)  # fmt: skip
    # like vLLM 0.32, the API server lives on for a while after its engine died
    while True:
        time.sleep(3600)


def orphan(pidfile: str) -> None:
    child = subprocess.Popen(
        [sys.executable, "-c", SLEEPER], start_new_session=True, stdin=subprocess.DEVNULL
    )
    with open(pidfile, "w") as f:
        f.write(f"{child.pid}\n")
    sys.stdin.readline()


def main() -> None:
    mode, args = sys.argv[1], sys.argv[2:]
    if mode == "vllm":
        vllm(int(args[0]), args[1])
    elif mode == "orphan":
        orphan(args[0])
    else:
        raise SystemExit(f"unknown mode {mode!r}")


if __name__ == "__main__":
    main()
