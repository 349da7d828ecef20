"""The keeper: a small process that owns a launched server and is its dead-man switch.

    python -m servegate.launch.keeper SPEC_JSON     (started by servegate.launch)

It starts the server in a new session with its output on a pipe, drains that pipe into
the log file for the server's whole life (a full pipe would hang the server), runs the
gate on it and reports on stdout, one JSON object per line:
``{"event": "started", ...}``, ``{"event": "verdict", ...}``, ``{"event": "exit", ...}``.

Its stdin is a pipe from the process that launched it. ``detach`` on that pipe lets the
server outlive the launcher (a detached ``servegate launch``); otherwise end-of-file,
which the kernel delivers even when the launcher is SIGKILLed, stops the whole tree.
It is also a child subreaper, so orphaned grandchildren stay in its tree.
"""

from __future__ import annotations

import contextlib
import ctypes
import fcntl
import json
import os
import selectors
import signal
import subprocess
import sys
import time
from typing import Any, BinaryIO

__all__ = ["main"]

_PR_SET_CHILD_SUBREAPER = 36
_F_SETPIPE_SZ = 1031
_PIPE_SIZE = 1 << 20
_CALLER_GONE_GRACE_S = 5.0


def _send(message: dict[str, Any]) -> None:
    """One JSON line to the launcher; it may be gone (detached), which is fine."""
    with contextlib.suppress(OSError):
        os.write(1, (json.dumps(message) + "\n").encode())


def _subreaper() -> None:
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        libc.prctl(_PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0)
    except (OSError, AttributeError):
        pass


def _reap(keep: int) -> None:
    """Collect exited orphans that were re-parented to us (never ``keep``: Popen's own)."""
    while True:
        try:
            info = os.waitid(os.P_ALL, 0, os.WEXITED | os.WNOHANG | os.WNOWAIT)
        except ChildProcessError:
            return
        if info is None or info.si_pid == keep:
            return
        try:
            os.waitpid(info.si_pid, 0)
        except ChildProcessError:
            return


class Keeper:
    """Start the server, gate it, then keep its output flowing until it ends."""

    def __init__(self, spec: dict[str, Any]) -> None:
        self.spec = spec
        self.detached = False
        self.server: subprocess.Popen[bytes] | None = None
        self.out_r = -1
        self.log: BinaryIO | None = None

    def start(self) -> None:
        """Start the server; report its PID (or why it could not start)."""
        spec = self.spec
        out_r, out_w = os.pipe()
        with contextlib.suppress(OSError):  # a smaller pipe only means more wake-ups
            fcntl.fcntl(out_r, _F_SETPIPE_SZ, _PIPE_SIZE)
        env = dict(os.environ)
        env.update(spec["env"])
        self.log = open(spec["log_path"], "ab", buffering=0)  # noqa: SIM115
        try:
            self.server = subprocess.Popen(
                spec["command"],
                stdin=subprocess.DEVNULL,
                stdout=out_w,
                stderr=out_w,
                cwd=spec["cwd"],
                env=env,
                start_new_session=True,
                close_fds=True,
            )
        except OSError as exc:
            _send({"event": "error", "message": f"{exc.strerror or exc}"})
            sys.exit(3)
        finally:
            os.close(out_w)
        started_mono, started_wall = time.monotonic(), time.time()
        os.set_blocking(out_r, False)
        self.out_r = out_r
        _send(
            {
                "event": "started",
                "pid": self.server.pid,
                "pgid": self.server.pid,
                "keeper_pid": os.getpid(),
                "started_mono": started_mono,
                "started_wall": started_wall,
            }
        )
        self.started = (started_mono, started_wall)

    def gate(self) -> None:
        """Run the gate on the server's pipe; send the verdict."""
        # imported here so that the server starts before numpy and friends load
        from servegate.gate.core import Gate, GateSources
        from servegate.gate.options import GateOptions

        assert self.server is not None and self.log is not None
        resolved = GateOptions.from_json(self.spec["gate"]).resolve()
        sources = GateSources(
            pid=self.server.pid,
            is_parent=True,
            pipe_fd=self.out_r,
            tee=self.log,
            log_path=self.spec["log_path"],
            started_mono=self.started[0],
            started_wall=self.started[1],
            extra={0: self._control},
        )
        gate = Gate(resolved, sources)
        verdict = gate.run(close=False)
        essential = list(gate.essential_pids)
        _send({"event": "verdict", "verdict": verdict.to_json(), "essential": essential})
        gate.close()
        if sources.pipe_fd is None:
            self.out_r = -1  # the gate saw end-of-file and closed it
        if verdict.status == "crash" and verdict.detected_by == "exit":
            self.server.returncode = verdict.exit_code  # reaped by the gate

    def _control(self) -> bool:
        """A message (or end-of-file) from the launcher; False: stop watching stdin."""
        try:
            data = os.read(0, 4096)
        except OSError:
            data = b""
        if not data:
            if not self.detached:
                self.kill_tree(_CALLER_GONE_GRACE_S)
                sys.exit(0)
            return False
        if b"detach" in data:
            self.detached = True
        return True

    def serve(self) -> None:
        """After the verdict: drain output to the log until the server is gone."""
        assert self.server is not None
        sel = selectors.DefaultSelector()
        if self.out_r >= 0:
            sel.register(self.out_r, selectors.EVENT_READ, "out")
        sel.register(0, selectors.EVENT_READ, "control")
        pidfd = -1
        if self.server.returncode is None:
            try:
                pidfd = os.pidfd_open(self.server.pid)
                sel.register(pidfd, selectors.EVENT_READ, "exit")
            except ProcessLookupError:
                pidfd = -1
        exited = self.server.returncode is not None
        while not exited:
            for key, _ in sel.select(1.0):
                if key.data == "out":
                    if not self._drain():
                        sel.unregister(self.out_r)
                        os.close(self.out_r)
                        self.out_r = -1
                elif key.data == "control":
                    if not self._control():
                        sel.unregister(0)
                elif key.data == "exit":
                    exited = True
            _reap(self.server.pid)
        code = self.server.wait() if self.server.returncode is None else self.server.returncode
        _send({"event": "exit", "code": code})
        # the main process is gone: anything left of its tree is an orphan
        self.kill_tree(2.0)
        if self.out_r >= 0:
            self._drain()
        if pidfd >= 0:
            os.close(pidfd)

    def _drain(self) -> bool:
        """Copy what the pipe holds to the log; False at end-of-file."""
        assert self.log is not None
        while True:
            try:
                data = os.read(self.out_r, _PIPE_SIZE)
            except BlockingIOError:
                return True
            except OSError:
                return False
            if not data:
                return False
            self.log.write(data)

    def kill_tree(self, grace_s: float) -> None:
        """Stop everything below us: the server's group and every snapshotted process."""
        from servegate.launch.tree import stop_tree

        assert self.server is not None
        stop_tree(
            pid=self.server.pid,
            pgid=self.server.pid,
            roots=(os.getpid(),),
            marker=self.spec["env"].get("SERVEGATE_SERVER_ID"),
            grace_s=grace_s,
        )
        _reap(self.server.pid)


def main() -> None:
    """Entry point: ``python -m servegate.launch.keeper SPEC_JSON``."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # the launcher decides when to stop
    _subreaper()
    keeper = Keeper(json.loads(sys.argv[1]))

    def on_term(signum: int, frame: object) -> None:
        keeper.kill_tree(_CALLER_GONE_GRACE_S)
        sys.exit(0)

    signal.signal(signal.SIGTERM, on_term)
    keeper.start()
    try:
        keeper.gate()
        keeper.serve()
    except Exception as exc:
        # never leave a server without its keeper: report, take the tree down, exit
        _send({"event": "error", "message": f"{exc.__class__.__name__}: {exc}"})
        keeper.kill_tree(_CALLER_GONE_GRACE_S)
        sys.exit(3)


if __name__ == "__main__":
    main()
