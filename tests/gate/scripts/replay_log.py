"""Replay a captured engine log as a live process: write it, then end as the engine did.

python replay_log.py LOG CHUNKS GAP_S END

The log's bytes go to stdout in CHUNKS pieces cut at line ends, GAP_S seconds apart
(as an engine prints a burst of lines, then another). END is ``exit:N`` (exit with code
N), ``signal:N`` (kill itself with signal N, no core file) or ``hold`` (stay alive until
killed, as a server that hangs after its error, or is ready). Only the standard library,
so that it starts in milliseconds.
"""

from __future__ import annotations

import os
import resource
import signal
import sys
import time


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
