"""One runner per database: who runs is recorded in the database and held by a lock.

A campaign runner claims its database before it writes anything. It records itself in
the ``runner`` table (PID, host, the process's start time, the campaign) inside one
``BEGIN IMMEDIATE`` transaction, so two runners racing cannot both win, and it takes an
open-file-description lock (Linux ``F_OFD_SETLK``) on one byte of the database file far
past the bytes SQLite locks. The kernel drops that lock when the runner ends, however it
ends (SIGKILL included), and sees it from any PID namespace of the machine (containers),
so a second runner or a report knows at once whether the recorded runner is alive.
Where such locks are not available the row decides alone: the runner is alive when its
PID runs on this host with the recorded start time (a reused PID has another one).
"""

from __future__ import annotations

import contextlib
import errno
import fcntl
import os
import socket
import struct
from dataclasses import dataclass

import psutil

from servegate._proc import same_process

__all__ = ["RunnerInfo", "RunnerLock", "busy_message", "row_alive"]

# far past SQLite's own lock bytes (1 GiB + 512): an advisory lock, no data lives there
_LOCK_START = 1 << 40
# struct flock on 64-bit Linux: l_type, l_whence, l_start, l_len, l_pid (+ padding)
_FLOCK = struct.Struct("hhqqi4x")


@dataclass(frozen=True, slots=True, kw_only=True)
class RunnerInfo:
    """A runner as recorded: its process, host, campaign and when it claimed the database."""

    pid: int
    host: str
    started: float  # the process's start time (epoch seconds): a reused PID has another
    campaign: str
    claimed_at: str

    @classmethod
    def current(cls, *, campaign: str, claimed_at: str) -> RunnerInfo:
        """This process, about to run ``campaign``."""
        return cls(
            pid=os.getpid(),
            host=socket.gethostname(),
            started=psutil.Process().create_time(),
            campaign=campaign,
            claimed_at=claimed_at,
        )


def row_alive(info: RunnerInfo) -> bool:
    """Whether the recorded runner still runs: same host, same PID, same start time.

    A runner of another host cannot be checked from here and counts as alive.
    """
    if info.host != socket.gethostname():
        return True
    return same_process(info.pid, info.started)


def busy_message(path: str, info: RunnerInfo | None) -> str:
    """The refusal of a second runner: who holds ``path`` and what to do."""
    if info is None:
        return (
            f"{path} is in use by another servegate run that is starting; wait for it to "
            "end, or pass another --db."
        )
    return (
        f"{path} is in use by another servegate run (PID {info.pid} on {info.host}, "
        f"campaign {info.campaign!r}, since {info.claimed_at}); wait for it to end or stop "
        f"it (kill {info.pid}), or pass another --db."
    )


class RunnerLock:
    """The kernel lock a live runner holds on its database file.

    Its file descriptors stay open until the SQLite connection is closed: closing any
    descriptor of the database file drops the POSIX locks SQLite holds on it.
    """

    def __init__(self, path: str) -> None:
        self._path = path
        self._fds: list[int] = []  # every descriptor opened, closed together by close()
        self._fd: int | None = None  # the one in use
        self._writable = False
        self._supported = hasattr(fcntl, "F_OFD_SETLK")
        self.held = False

    def _open(self, *, write: bool) -> int | None:
        if not self._supported:
            return None
        if self._fd is not None and (self._writable or not write):
            return self._fd
        try:
            fd = os.open(self._path, os.O_RDWR if write else os.O_RDONLY)
        except OSError:
            return None
        self._fds.append(fd)
        self._fd, self._writable = fd, write
        return fd

    def _fcntl(self, fd: int, command: int, kind: int) -> tuple[int, ...] | None:
        """One lock call; None when locks like this one are not supported here.

        Raises OSError (EAGAIN, EACCES) when another process holds the lock.
        """
        request = _FLOCK.pack(kind, os.SEEK_SET, _LOCK_START, 1, 0)
        try:
            return _FLOCK.unpack(fcntl.fcntl(fd, command, request))
        except OSError as exc:
            if exc.errno in (errno.EAGAIN, errno.EACCES):
                raise
            self._supported = False  # EINVAL, ENOLCK: this filesystem or kernel has none
            return None

    def acquire(self) -> bool | None:
        """Take the lock: True taken, False another process holds it, None not supported."""
        fd = self._open(write=True)
        if fd is None:
            return None
        try:
            if self._fcntl(fd, fcntl.F_OFD_SETLK, fcntl.F_WRLCK) is None:
                return None
        except OSError:
            return False
        self.held = True
        return True

    def held_elsewhere(self) -> bool | None:
        """Whether another process holds the lock; None when that cannot be told here."""
        fd = self._open(write=False)
        if fd is None:
            return None
        found = self._fcntl(fd, fcntl.F_OFD_GETLK, fcntl.F_WRLCK)
        if found is None:
            return None
        return found[0] != fcntl.F_UNLCK

    def release(self) -> None:
        """Let the lock go; the descriptors stay open until ``close``."""
        if self.held and self._fd is not None:
            with contextlib.suppress(OSError):
                self._fcntl(self._fd, fcntl.F_OFD_SETLK, fcntl.F_UNLCK)
        self.held = False

    def close(self) -> None:
        """Release and close; call only once the database connection is closed."""
        self.release()
        for fd in self._fds:
            with contextlib.suppress(OSError):
                os.close(fd)
        self._fds.clear()
        self._fd = None
