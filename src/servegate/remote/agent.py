"""The remote side: ``python -m servegate.remote.agent``, started over ssh by servegate.

It speaks the frames of ``remote.wire`` (lines of ``remote.codec``) on stdout. First
``hello`` (the protocol, version, build, Python, machine); then it reads one request line
on stdin, every field checked (anything else is an ``error`` event, exit 2):

- ``{"event": "run_job", "id": ID, "command": "launch" | "wait", "argv": [...], "env":
  {...}, "offset": N}``: a job. ``servegate COMMAND ARGV`` runs under a runner detached from the
  connection (a session of its own), which appends the command's output as events to a
  file; the agent streams that file from byte N. The same request after a dropped
  connection only streams: the job already exists.
- ``{"event": "run_cli", "command": ..., "argv": [...], "env": {...}, "foreground": bool}``: the
  command runs inside this connection and its output streams as it comes. With
  ``foreground``, the end of stdin (the connection closed, or the local command died,
  SIGKILL included) sends it SIGTERM; and it dies with the agent (``PR_SET_PDEATHSIG``).
- ``{"event": "run_node", "id": ID, "job": {...}, "offset": N}``: a campaign's start as a
  job: ``python -m servegate.campaign.node`` reads the job (``campaign.node.NodeJob``)
  on stdin (as on a cluster node) and writes what happens as frames of
  ``campaign.node``, one line each, passed on as they are among the events.
- ``{"event": "cancel", "id": ID}``: SIGINT to a job's command (Ctrl-C on the local side).
- ``{"event": "fetch", "folder": PATH, "have": {NAME: SIZE}}``: the files of a folder under
  the remote folder (``campaigns/NAME``) that ``have`` lacks or has at another size, as
  ``{"event": "file", "name": ..., "data": BASE64}`` in chunks, then ``exit``.

Events: ``{"event": "out" | "err", "text": LINE}`` (the command's stdout and stderr, line
by line), ``{"event": "exit", "code": N}`` last; ``{"event": "error", "message": ...,
"code": N}`` when the request cannot be served. ``env`` carries the values that must not
be seen in a process list (``--env HF_TOKEN=...``): never argv, never a file.
"""

from __future__ import annotations

import base64
import contextlib
import errno
import json
import os
import platform
import re
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import IO

import psutil

from servegate import _os
from servegate._proc import same_process
from servegate._version import __version__
from servegate.remote.codec import PROTOCOL, FrameError, decode, encode
from servegate.remote.wire import (
    REQUESTS,
    Cancel,
    Err,
    Error,
    Exit,
    Fetch,
    File,
    Hello,
    Out,
    RunCli,
    RunJob,
    RunNode,
)

__all__ = ["COMMANDS", "jobs_dir", "main", "remote_dir"]

# the commands a request may run; everything else is refused (``wire.RunCli``)
COMMANDS = ("launch", "wait", "stop", "ps", "dump", "bench")
POLL_S = 0.005  # how often a followed job file is read while it is quiet
KEEP_JOBS_S = 7 * 86400.0  # job files older than this are removed
CANCEL_WAIT_S = 30.0  # how long a cancel waits for a runner to start its command
_JOB_ID = re.compile(r"[0-9a-f]{32}")


def remote_dir() -> Path:
    """Where servegate keeps its venv and jobs on this host."""
    return Path(os.environ.get("SERVEGATE_REMOTE_DIR") or Path.home() / ".servegate")


def jobs_dir() -> Path:
    """The folder of the jobs' event files (0700)."""
    path = remote_dir() / "jobs"
    path.mkdir(parents=True, exist_ok=True, mode=0o700)
    return path


class _Out:
    """Events to a byte stream, one write per line; False once the stream is gone."""

    def __init__(self, stream: IO[bytes]) -> None:
        self.stream = stream
        self.lock = threading.Lock()
        self.open = True

    def write(self, data: bytes) -> bool:
        with self.lock:
            if not self.open:
                return False
            try:
                self.stream.write(data)
                self.stream.flush()
            except (OSError, ValueError):
                self.open = False
            return self.open

    def emit(self, frame: object) -> bool:
        return self.write(encode(frame))


def _die_with_parent() -> None:
    """In the child, before exec: SIGTERM when the agent dies, however it dies."""
    _os.die_with_parent(signal.SIGTERM)


def _spawn(request: RunJob | RunCli, *, die_with_parent: bool) -> subprocess.Popen[bytes]:
    """``servegate COMMAND ARGV`` with the request's environment added."""
    env = {**os.environ, **request.env, "PYTHONUNBUFFERED": "1"}
    return subprocess.Popen(
        [sys.executable, "-m", "servegate", request.command, *request.argv],
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        env=env,
        cwd=str(Path.home()),
        preexec_fn=_die_with_parent if die_with_parent else None,  # noqa: PLW1509
    )


def _spawn_node(request: RunNode) -> tuple[subprocess.Popen[bytes], int]:
    """A campaign's start (``servegate.campaign.node``); it and its frames' pipe."""
    frames_r, frames_w = os.pipe()
    proc = subprocess.Popen(
        [sys.executable, "-m", "servegate.campaign.node", str(frames_w)],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        pass_fds=(frames_w,),
        env={**os.environ, "PYTHONUNBUFFERED": "1"},
        cwd=str(Path.home()),
    )
    os.close(frames_w)
    assert proc.stdin is not None
    with contextlib.suppress(OSError):  # a child that died at once says so on stderr
        proc.stdin.write(json.dumps(request.job).encode())
        proc.stdin.close()
    return proc, frames_r


def _relay(
    proc: subprocess.Popen[bytes], write: Callable[[bytes], object], frames: int | None = None
) -> int:
    """The command's output as ``out`` / ``err`` events as it comes (and the lines of its
    frames' pipe as they are), then ``exit``."""

    def pump_frames(fd: int) -> None:
        with os.fdopen(fd, "rb") as stream:
            for raw in stream:
                if raw.endswith(b"\n"):  # a frame cut short by a dying node is not passed on
                    write(raw)

    def pump(stream: IO[bytes] | None, kind: type[Out] | type[Err]) -> None:
        assert stream is not None
        for raw in stream:
            text = raw.decode("utf-8", "replace").rstrip("\n").rstrip("\r")
            write(encode(kind(text=text)))

    threads = [
        threading.Thread(target=pump, args=(proc.stdout, Out), daemon=True),
        threading.Thread(target=pump, args=(proc.stderr, Err), daemon=True),
    ]
    if frames is not None:
        threads.append(threading.Thread(target=pump_frames, args=(frames,), daemon=True))
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    code = proc.wait()
    write(encode(Exit(code=code)))
    return code


def _runner(job_id: str) -> int:
    """A job's runner (detached): the command's events appended to the job's file."""
    request = decode(sys.stdin.buffer.read(), REQUESTS)
    jobs = jobs_dir()
    fd = os.open(jobs / f"{job_id}.events", os.O_WRONLY | os.O_APPEND)
    lock = threading.Lock()
    proc: subprocess.Popen[bytes] | None = None

    def append(line: bytes) -> None:
        with lock:
            try:
                os.write(fd, line)
            except OSError:  # disk full: nobody can follow the command, so it ends
                if proc is not None:
                    with contextlib.suppress(OSError):
                        proc.send_signal(signal.SIGTERM)
                raise

    frames: int | None = None
    try:
        if isinstance(request, RunNode):
            proc, frames = _spawn_node(request)
        else:
            proc = _spawn(request, die_with_parent=False)
    except OSError as exc:
        append(encode(Err(text=f"Error: cannot run servegate: {exc}")))
        append(encode(Exit(code=3)))
        return 3
    _write_record(jobs / f"{job_id}.pid", proc.pid)
    return _relay(proc, append, frames)


def _write_record(path: Path, pid: int) -> None:
    """``PID START``: the process and its start (psutil's create_time)."""
    path.write_text(f"{pid} {psutil.Process(pid).create_time()}")


def _alive(record: Path) -> bool:
    """Whether the process a ``PID START`` file names still runs (not a zombie, not a
    reused PID, whatever the clock did since)."""
    try:
        pid_text, started = record.read_text().split()
        return same_process(int(pid_text), float(started))
    except (OSError, ValueError, psutil.Error):
        return False


def _start_job(job_id: str, request: RunJob | RunNode) -> str | None:
    """Create the job's file and its runner, unless a connection before this one did;
    why it could not (a sentence), or None."""
    jobs = remote_dir() / "jobs"
    try:
        jobs = jobs_dir()
        os.close(os.open(jobs / f"{job_id}.events", os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600))
    except FileExistsError:
        return None
    except OSError as exc:
        return _cannot_write(jobs, exc)
    try:
        runner = subprocess.Popen(
            [sys.executable, "-m", "servegate.remote.agent", "--job", job_id],
            stdin=subprocess.PIPE,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            start_new_session=True,  # the connection may go; the job goes on
        )
        assert runner.stdin is not None
        with runner.stdin:
            runner.stdin.write(encode(request))
        _write_record(jobs / f"{job_id}.runner", runner.pid)
    except OSError as exc:
        _remove_job(job_id)  # the runner finds no file and ends
        return _cannot_write(jobs, exc)
    return None


def _cannot_write(jobs: Path, exc: OSError) -> str:
    """The sentence for job files that cannot be written."""
    if exc.errno in (errno.ENOSPC, errno.EDQUOT):
        return (
            f"no space left for servegate's job files in {jobs} on this host: free some "
            "space there (or set SERVEGATE_REMOTE_DIR to a folder on another disk)"
        )
    return f"cannot write servegate's job files in {jobs} on this host ({exc.strerror or exc})"


def _disk_full(jobs: Path) -> bool:
    try:
        return os.statvfs(jobs).f_bavail == 0
    except OSError:
        return False


def _follow(job_id: str, offset: int, out: _Out) -> int:
    """Stream the job's events from byte ``offset`` until its ``exit``; then remove it."""
    jobs = jobs_dir()
    path = jobs / f"{job_id}.events"
    parent = os.getppid()  # sshd's session: when it dies, the connection is gone
    try:
        stream = path.open("rb")
    except FileNotFoundError:
        out.emit(Error(message="the job is gone from the host", code=3))
        return 3
    with stream:
        stream.seek(offset)
        pending = b""
        quiet_checks = 0
        while True:
            chunk = stream.read(1 << 16)
            if not chunk:
                quiet_checks += 1
                # every ~0.2 s of quiet: a connection gone (the job goes on), or a runner
                # that died without an exit event
                if quiet_checks % 40 == 0 and os.getppid() != parent:
                    return 0
                if quiet_checks % 40 == 0 and not _alive(jobs / f"{job_id}.runner"):
                    if stream.read(1):
                        stream.seek(-1, os.SEEK_CUR)
                        continue
                    why = "the remote runner ended early"
                    if _disk_full(jobs):
                        why += f": the disk of {jobs} is full; free some space there"
                    out.emit(Err(text=f"Error: {why}."))
                    out.emit(Exit(code=3))
                    _remove_job(job_id)
                    return 3
                time.sleep(POLL_S)
                continue
            quiet_checks = 0
            *lines, pending = (pending + chunk).split(b"\n")
            for raw in lines:
                if not out.write(raw + b"\n"):
                    return 0  # the connection is gone; the job goes on
                if raw.startswith(b'{"event":"exit"'):
                    _remove_job(job_id)
                    return 0


def _remove_job(job_id: str) -> None:
    for suffix in ("events", "runner", "pid"):
        with contextlib.suppress(OSError):  # a folder removed meanwhile is not made again
            (remote_dir() / "jobs" / f"{job_id}.{suffix}").unlink()


def _prune_jobs() -> None:
    """Remove job files nobody came back for."""
    now = time.time()
    with contextlib.suppress(OSError):
        for path in jobs_dir().iterdir():
            with contextlib.suppress(OSError):
                if now - path.stat().st_mtime > KEEP_JOBS_S:
                    path.unlink()


def _cli(request: RunCli, out: _Out) -> int:
    """A command inside this connection; with ``foreground``, stopped when it ends."""
    proc = _spawn(request, die_with_parent=True)

    def end_of_input() -> None:
        with contextlib.suppress(OSError, ValueError):
            while sys.stdin.buffer.read(1 << 12):
                pass
        with contextlib.suppress(OSError):
            proc.send_signal(signal.SIGTERM)

    if request.foreground:
        threading.Thread(target=end_of_input, daemon=True).start()

    def write(line: bytes) -> None:
        if not out.write(line) and request.foreground:
            with contextlib.suppress(OSError):
                proc.send_signal(signal.SIGTERM)

    return _relay(proc, write)


def _cancel(job_id: str, out: _Out) -> int:
    """SIGINT to the job's command; exit 0 when it was sent, 1 when the job has ended.

    A job whose runner has not yet started its command (Ctrl-C right after the launch)
    is waited for, up to ``CANCEL_WAIT_S``.
    """
    jobs = jobs_dir()
    record = jobs / f"{job_id}.pid"
    deadline = time.monotonic() + CANCEL_WAIT_S
    while not record.exists() and _alive(jobs / f"{job_id}.runner"):
        if time.monotonic() > deadline:
            break
        time.sleep(POLL_S)
    sent = False
    if _alive(record):
        with contextlib.suppress(OSError, ValueError):
            os.kill(int(record.read_text().split()[0]), signal.SIGINT)
            sent = True
    out.emit(Exit(code=0 if sent else 1))
    return 0


def hello() -> Hello:
    """The first line: the protocol and what runs here."""
    from servegate.remote.build import build_id

    return Hello(
        protocol=PROTOCOL,
        version=__version__,
        build=build_id(),
        python=platform.python_version(),
        machine=platform.machine(),
        dir=str(remote_dir()),
    )


def _fetch(request: Fetch, out: _Out) -> int:
    """The files of a folder under the remote folder that the other side lacks."""
    base = remote_dir().resolve()
    folder = (base / request.folder).resolve()
    if not folder.is_relative_to(base / "campaigns"):
        out.emit(Error(message=f"{folder} is not a campaign's folder", code=2))
        return 2
    for path in sorted(folder.iterdir()) if folder.is_dir() else []:
        if not path.is_file() or request.have.get(path.name) == path.stat().st_size:
            continue
        with path.open("rb") as stream:
            first = True
            while (chunk := stream.read(1 << 20)) or first:
                data = base64.b64encode(chunk).decode()
                if not out.emit(File(name=path.name, first=first, data=data)):
                    return 0
                first = False
    out.emit(Exit(code=0))
    return 0


def _serve(request: RunJob | RunNode | RunCli | Cancel | Fetch, out: _Out) -> int:
    match request:
        case RunJob() | RunNode():
            why = _start_job(request.id, request)
            if why is not None:
                out.emit(Error(message=why, code=2))
                return 2
            return _follow(request.id, request.offset, out)
        case RunCli():
            return _cli(request, out)
        case Cancel():
            return _cancel(request.id, out)
        case Fetch():
            return _fetch(request, out)


def main(argv: list[str] | None = None) -> int:
    """The agent (or, with ``--job ID``, a job's runner)."""
    args = sys.argv[1:] if argv is None else argv
    if args[:1] == ["--job"] and len(args) == 2 and _JOB_ID.fullmatch(args[1]):
        return _runner(args[1])
    out = _Out(sys.stdout.buffer)
    if not out.emit(hello()):
        return 0
    raw = sys.stdin.buffer.readline()
    if not raw:
        return 0  # the local side only asked who is here
    try:
        request = decode(raw, REQUESTS)
    except FrameError as exc:
        out.emit(Error(message=f"a request servegate {__version__} cannot read: {exc}", code=2))
        return 2
    _prune_jobs()
    return _serve(request, out)


if __name__ == "__main__":
    sys.exit(main())
