"""The keeper: a small process that owns a launched server and is its dead-man switch.

    python -m servegate.launch.keeper --spec-fd FD     (started by ``spawn``)

Its spec (the server's command and environment, secrets included) arrives as JSON on
the pipe FD, never in its argv, which every local user can read in ``ps``.

It starts the server in a new session with its output on a pipe, drains that pipe into
the log file for the server's whole life (a full pipe would hang the server), runs the
gate on it and reports on stdout, one JSON object per line: the messages of
``servegate.launch.messages`` (started, live notes of the gate, each sample of the tree
while it starts, the verdict, its telemetry, the exit).
The verdict and the notes are redacted (``servegate.redact``) before it leaves; the log file itself
keeps the server's output verbatim and is readable by its owner only (0600).

The keeper never kills a healthy server for its own trouble: when the log cannot be
written (disk full, EIO), the output is still drained, the bytes are dropped and
counted, and the problem is recorded in the server's ``NAME.status`` for ``ps`` and
``stop``; writing is tried again every second, so a freed disk resumes the log. When
the server exits, its exit code and the time go to ``NAME.status`` too, so that ``ps``
can say how a server that died after READY ended.

With ``line_fd`` in its spec (a descriptor it inherits: the launching command's
stdout), it writes the verdict's line there, redacted, the moment the gate decides,
before anything else, and closes it: the line reaches the user without waiting for
another process to be scheduled.

Its stdin is a pipe from the process that launched it. ``detach`` on that pipe lets the
server outlive the launcher (a detached ``servegate launch``); otherwise end-of-file,
which the kernel delivers even when the launcher is SIGKILLed, stops the whole tree.
It is also a child subreaper, so orphaned grandchildren stay in its tree.
"""

from __future__ import annotations

import contextlib
import errno
import fcntl
import json
import os
import select
import selectors
import signal
import subprocess
import sys
import threading
import time
from dataclasses import replace
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any, BinaryIO, cast

from servegate._os import become_subreaper
from servegate.launch.messages import (
    Decided,
    Exited,
    Failed,
    Message,
    Note,
    Sample,
    Started,
    Telemetry,
)
from servegate.redact import Redactor

if TYPE_CHECKING:
    from servegate.launch.state import StatusFile
    from servegate.telemetry.model import Snapshot

__all__ = ["LogSink", "main", "spawn"]

_F_SETPIPE_SZ = 1031
_PIPE_SIZE = 1 << 20
_CALLER_GONE_GRACE_S = 5.0
_RETRY_S = 1.0  # after a failed log write, drop output this long before trying again
_STATUS_EVERY_S = 1.0  # the dropped-bytes count in NAME.status is at most this old


def spawn(
    spec: dict[str, Any], *, control: int, line_fd: int | None = None
) -> subprocess.Popen[bytes]:
    """Start a keeper for ``spec``; ``control`` becomes its stdin, ``line_fd`` (above 2) is
    inherited as the spec's ``line_fd`` (see the module doc).

    The spec travels through a pipe: argv is world-readable in /proc and ``ps``.
    """
    spec_r, spec_w = os.pipe()
    try:
        keeper = subprocess.Popen(
            [sys.executable, "-m", "servegate.launch.keeper", "--spec-fd", str(spec_r)],
            stdin=control,
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
            start_new_session=True,
            close_fds=True,
            pass_fds=(spec_r,) if line_fd is None else (spec_r, line_fd),
        )
    except BaseException:
        os.close(spec_w)
        raise
    finally:
        os.close(spec_r)
    try:
        view = memoryview(json.dumps(spec).encode())
        with contextlib.suppress(BrokenPipeError):  # a dead keeper tells on its stdout
            while view:
                view = view[os.write(spec_w, view) :]
    finally:
        os.close(spec_w)
    return keeper


def _read_spec(argv: list[str]) -> dict[str, Any]:
    if len(argv) != 3 or argv[1] != "--spec-fd":
        raise SystemExit("usage: python -m servegate.launch.keeper --spec-fd FD")
    with open(int(argv[2]), "rb") as pipe:
        spec: dict[str, Any] = json.loads(pipe.read())
    return spec


_SEND_LOCK = threading.Lock()


def _send(message: Message, redactor: Redactor | None = None) -> None:
    """One JSON line to the launcher, through ``redactor`` if given; the launcher may be
    gone (detached), which is fine."""
    data = message.to_json()
    if redactor is not None:
        data = redactor.json(data)
    with _SEND_LOCK, contextlib.suppress(OSError):  # the sampler's thread sends too
        os.write(1, (json.dumps(data) + "\n").encode())


def _status(snapshot: Snapshot) -> None:
    """The sampler's newest snapshot, without its processes, for the live status line."""
    _send(Sample(snapshot=replace(snapshot, procs=())))


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


def _describe(exc: OSError) -> str:
    """``No space left on device (ENOSPC)``."""
    code = errno.errorcode.get(exc.errno or 0)
    text = exc.strerror or str(exc)
    return f"{text} ({code})" if code else text


class LogSink:
    """The server's log file, for writers that must never fail: a failed write (disk
    full, EIO, file too large) drops the bytes, counts them and records why; and, in the
    same status record, how the server ended."""

    def __init__(self, fd: int, status: StatusFile | None = None) -> None:
        self.fd = fd
        self.status = status
        self.error: str | None = None
        self.error_at: str | None = None
        self.dropped = 0
        self._retry_at = 0.0
        self._reported: tuple[str | None, int] = (None, 0)  # last written to NAME.status
        self._reported_at = 0.0
        self._exit: dict[str, Any] = {}  # exit_code and exited_at, once the server exited

    def write(self, data: bytes) -> int:
        """Append ``data`` to the log, or drop it; always "succeeds" (returns its length)."""
        now = time.monotonic()
        if self.error is not None and now < self._retry_at:
            self.dropped += len(data)
            self.report(now=now)
            return len(data)
        view = memoryview(data)
        try:
            while view:
                view = view[os.write(self.fd, view) :]
        except OSError as exc:
            self.dropped += len(view)
            if self.error is None:
                self.error_at = datetime.now(UTC).isoformat(timespec="seconds")
            self.error = _describe(exc)
            self._retry_at = now + _RETRY_S
        self.report(now=now)
        return len(data)

    def flush(self) -> None:
        """Nothing is buffered."""

    def report(self, *, now: float | None = None, final: bool = False) -> None:
        """Bring NAME.status up to date (at most once a second unless ``final``)."""
        if self.status is None or self.error is None:
            return
        now = time.monotonic() if now is None else now
        current = (self.error, self.dropped)
        first = self._reported[0] is None
        if current == self._reported or not (
            first or final or now - self._reported_at >= _STATUS_EVERY_S
        ):
            return
        self._reported, self._reported_at = current, now
        self.status.write(self._record())

    def exited(self, code: int) -> None:
        """Record in NAME.status that the server exited with ``code`` (-N: signal N), now."""
        self._exit = {
            "exit_code": code,
            "exited_at": datetime.now(UTC).isoformat(timespec="seconds"),
        }
        if self.status is not None:
            self.status.write(self._record())

    def _record(self) -> dict[str, Any]:
        """NAME.status's record: the log problem, if any, and the exit, once known."""
        record: dict[str, Any] = {}
        if self.error is not None:
            record.update(
                log_error=self.error, log_error_at=self.error_at, log_dropped_bytes=self.dropped
            )
        return {**record, **self._exit}


def _open_log(path: str) -> int:
    """The log file for appending, readable by its owner only (it may hold secrets)."""
    fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT | os.O_CLOEXEC, 0o600)
    with contextlib.suppress(OSError):  # a file given with --log may have been 0644
        os.fchmod(fd, 0o600)
    return fd


class Keeper:
    """Start the server, gate it, then keep its output flowing until it ends."""

    def __init__(self, spec: dict[str, Any]) -> None:
        self.spec = spec
        self.detached = False
        self.server: subprocess.Popen[bytes] | None = None
        self.out_r = -1
        self.log: LogSink | None = None
        self.line_fd: int | None = spec.get("line_fd")

    def start(self) -> None:
        """Start the server; report its PID (or why it could not start)."""
        spec = self.spec
        env = dict(os.environ)
        env.update(spec["env"])
        try:
            status = None
            if spec.get("status_path"):
                from servegate.launch.state import StatusFile

                status = StatusFile(spec["status_path"])
            self.log = LogSink(_open_log(spec["log_path"]), status)
        except OSError as exc:
            where = exc.filename or spec["log_path"]
            _send(Failed(message=f"cannot write {where}: {_describe(exc)}"))
            sys.exit(3)
        out_r, out_w = os.pipe()
        with contextlib.suppress(OSError):  # a smaller pipe only means more wake-ups
            fcntl.fcntl(out_r, _F_SETPIPE_SZ, _PIPE_SIZE)
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
            _send(Failed(message=f"{exc.strerror or exc}"))
            sys.exit(3)
        finally:
            os.close(out_w)
        started_mono, started_wall = time.monotonic(), time.time()
        os.set_blocking(out_r, False)
        self.out_r = out_r
        _send(
            Started(
                pid=self.server.pid,
                pgid=self.server.pid,
                keeper_pid=os.getpid(),
                started_mono=started_mono,
                started_wall=started_wall,
            )
        )
        self.started = (started_mono, started_wall)

    def gate(self) -> None:
        """Run the gate on the server's pipe; send the verdict."""
        # imported here so that the server starts before numpy and friends load
        from servegate.gate.decide import Gate, GateSources
        from servegate.gate.options import GateOptions
        from servegate.gate.verdict import DetectedBy, Status

        assert self.server is not None and self.log is not None
        resolved = GateOptions.from_json(self.spec["gate"]).resolve()
        sources = GateSources(
            pid=self.server.pid,
            is_parent=True,
            pipe_fd=self.out_r,
            tee=cast(BinaryIO, self.log),  # write() and flush(), and neither ever raises
            log_path=self.spec["log_path"],
            started_mono=self.started[0],
            started_wall=self.started[1],
            extra={0: self._control},
            on_note=self._note,
            on_sample=_status,
        )
        gate = Gate(resolved, sources)
        redactor = self._redactor()  # built before: the verdict must not wait for it
        verdict = gate.run(close=False)
        self._show(redactor.text(verdict.line()))  # the user's line first
        _send(Decided(verdict=verdict, essential=tuple(gate.essential_pids)), redactor)
        # the sampled series, after the verdict so as not to delay it (busiest processes only),
        # with one last sample taken now: the recording reaches the verdict's moment
        from servegate.telemetry.sampler import trimmed

        verdict = gate.last_sample(verdict)
        _send(Telemetry(snapshots=tuple(trimmed(verdict.snapshots)), summary=verdict.telemetry))
        gate.close()
        if sources.pipe_fd is None:
            self.out_r = -1  # the gate saw end-of-file and closed it
        if verdict.status == Status.CRASH and verdict.detected_by == DetectedBy.EXIT:
            self.server.returncode = verdict.exit_code  # reaped by the gate

    def _show(self, line: str) -> None:
        """Write ``line`` to ``line_fd``, if given, and close it (a detached keeper must not
        hold the launching command's stdout open)."""
        fd, self.line_fd = self.line_fd, None
        if fd is None:
            return
        view = memoryview((line + "\n").encode())
        try:
            while view:
                try:
                    view = view[os.write(fd, view) :]
                except BlockingIOError:  # a non-blocking stdout that is full: wait for room
                    select.select([], [fd], [])
        except OSError:
            pass  # nobody reads it any more: the launcher still gets the verdict
        finally:
            os.close(fd)

    def _note(self, text: str) -> None:
        """A live note of the gate, redacted, to the launcher."""
        _send(Note(text=text), self._redactor())

    def _redactor(self) -> Redactor:
        """Masks the secrets this server was given or inherited, and URL credentials."""
        return Redactor.collect(envs=[self.spec["env"]], commands=[self.spec["command"]])

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
            events = sel.select(1.0)
            if self.log is not None:
                self.log.report()  # the last drops of a burst, once the server is quiet
            for key, _ in events:
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
        _send(Exited(code=code))
        if self.log is not None:
            self.log.exited(code)  # for ps: how a server nobody watches ended
        # the main process is gone: anything left of its tree is an orphan
        self.kill_tree(2.0)
        if self.out_r >= 0:
            self._drain()
        if pidfd >= 0:
            os.close(pidfd)
        if self.log is not None:
            self.log.report(final=True)

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


def _ignore(signum: int, frame: object) -> None:
    """A signal the keeper receives and lets pass."""


def main() -> None:
    """Entry point: ``python -m servegate.launch.keeper --spec-fd FD``."""
    # the launcher decides when to stop; a handler that does nothing, not SIG_IGN, so the
    # server (exec resets handled signals to their default) still answers Ctrl-C and kill -INT
    signal.signal(signal.SIGINT, _ignore)
    # a log past RLIMIT_FSIZE: EFBIG from write() (handled), not death by SIGXFSZ; the
    # server gets the default back (Popen's restore_signals)
    signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
    become_subreaper()
    keeper = Keeper(_read_spec(sys.argv))

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
        _send(Failed(message=f"{exc.__class__.__name__}: {exc}"))
        keeper.kill_tree(_CALLER_GONE_GRACE_S)
        sys.exit(3)


if __name__ == "__main__":
    main()
