"""Replay a captured engine log as a live process: write it, then end as the engine did.

python replay_log.py LOG CHUNKS GAP_S END

The log's bytes go to stdout in CHUNKS pieces cut at line ends, GAP_S seconds apart
(as an engine prints a burst of lines, then another). END is ``exit:N`` (exit with code
N), ``signal:N`` (kill itself with signal N, no core file), ``hold`` (stay alive until
killed, as a server that hangs after its error) or ``serve:FD`` (a server that came up:
once the log is written, listen on the bound socket FD and answer every request 200, as the
run answered its health probe when its log was cut). Only the standard library, so that
it starts in milliseconds.
"""

from __future__ import annotations

import os
import resource
import signal
import socket
import sys
import time
from http.server import BaseHTTPRequestHandler, HTTPServer


def chunks(data: bytes, count: int) -> list[bytes]:
    """``data`` cut into at most ``count`` pieces of about equal size, at line ends."""
    out: list[bytes] = []
    start = 0
    for index in range(1, count):
        cut = data.find(b"\n", len(data) * index // count)
        if cut < 0 or cut + 1 <= start:
            continue
        out.append(data[start : cut + 1])
        start = cut + 1
    out.append(data[start:])
    return [piece for piece in out if piece]


class _Answer(BaseHTTPRequestHandler):
    """200 to any GET (a health route, /v1/models) and POST (a one-token completion)."""

    def do_POST(self) -> None:
        self.rfile.read(int(self.headers.get("Content-Length") or 0))
        self._answer(b'{"object": "text_completion", "choices": [{"index": 0, "text": "a"}]}')

    def do_GET(self) -> None:
        self._answer(b'{"object": "list", "data": []}')

    def _answer(self, body: bytes) -> None:
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, format: str, *args: object) -> None:
        pass  # the log is the engine's, not ours


def serve(fd: int) -> None:
    """Listen on the bound socket ``fd`` and answer until killed."""
    server = HTTPServer(("127.0.0.1", 0), _Answer, bind_and_activate=False)
    server.socket.close()
    server.socket = socket.socket(fileno=fd)
    server.socket.listen(16)
    server.serve_forever()


def main() -> None:
    path, count, gap_s, end = sys.argv[1], int(sys.argv[2]), float(sys.argv[3]), sys.argv[4]
    with open(path, "rb") as file:
        data = file.read()
    for index, piece in enumerate(chunks(data, count)):
        if index:
            time.sleep(gap_s)
        view = memoryview(piece)
        while view:
            view = view[os.write(1, view) :]
    how, _, value = end.partition(":")
    if how == "serve":
        serve(int(value))
    if how == "exit":
        os._exit(int(value))
    if how == "signal":
        resource.setrlimit(resource.RLIMIT_CORE, (0, 0))
        number = int(value)
        if number not in (signal.SIGKILL, signal.SIGSTOP):  # those cannot be handled
            signal.signal(number, signal.SIG_DFL)
        os.kill(os.getpid(), number)
        time.sleep(60)  # a signal that does not kill (unlikely): end anyway
        os._exit(1)
    while True:
        signal.pause()


if __name__ == "__main__":
    main()
