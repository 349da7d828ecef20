"""Follow a log file that another process writes: inotify-driven, offset-based.

The file is read from a saved offset and never re-read; truncation restarts at 0, and
rotation (a new inode at the path) drains the old file and opens the new one. A
truncation shows as a size below the offset, or, when the file was refilled past the
offset between two reads (copytruncate, then a burst of output), as first bytes that
differ from those read before. inotify on the folder wakes the gate the moment the file changes;
a slow timer remains as a backstop for filesystems that send no events (NFS).
"""

from __future__ import annotations

import ctypes
import ctypes.util
import os
import threading
from dataclasses import dataclass

__all__ = ["FileFollower", "ReadResult"]

_IN_MODIFY = 0x002
_IN_ATTRIB = 0x004
_IN_CLOSE_WRITE = 0x008
_IN_MOVED_FROM = 0x040
_IN_MOVED_TO = 0x080
_IN_CREATE = 0x100
_IN_DELETE = 0x200
_IN_NONBLOCK = os.O_NONBLOCK
_IN_CLOEXEC = os.O_CLOEXEC
_MASK = (
    _IN_MODIFY
    | _IN_ATTRIB
    | _IN_CLOSE_WRITE
    | _IN_MOVED_FROM
    | _IN_MOVED_TO
    | _IN_CREATE
    | _IN_DELETE
)
_READ_SIZE = 1 << 20
_HEAD_BYTES = 4096  # the file's first bytes, kept to recognise a truncated-and-refilled file


def _inotify_fd(folder: str) -> int | None:
    """An inotify descriptor watching ``folder``, or None where inotify is missing."""
    name = ctypes.util.find_library("c")
    try:
        libc = ctypes.CDLL(name or "libc.so.6", use_errno=True)
        fd = int(libc.inotify_init1(_IN_NONBLOCK | _IN_CLOEXEC))
    except (OSError, AttributeError):
        return None
    if fd < 0:
        return None
    if int(libc.inotify_add_watch(fd, os.fsencode(folder), _MASK)) < 0:
        os.close(fd)
        return None
    return fd


@dataclass(frozen=True, slots=True, kw_only=True)
class ReadResult:
    """What one read turn brought: new bytes, whether the stream restarted, and if more waits."""

    chunks: tuple[bytes, ...]
    restarted: bool  # truncated or rotated: forget any partial line before ``chunks``
    more: bool  # the byte budget ran out before the end of the file


class FileFollower:
    """Read a growing log file from where it was left; notice truncation and rotation."""

    def __init__(self, path: str) -> None:
        self.path = path
        self.offset = 0
        self._fd: int | None = None
        self._ino: tuple[int, int] | None = None
        self._head = b""  # the first bytes read, up to _HEAD_BYTES
        self.found = False  # the file existed at a read (False: not yet, a wrong path?)
        self.notify_fd = _inotify_fd(os.path.dirname(os.path.abspath(path)) or ".")

    def fileno(self) -> int | None:
        """The descriptor to wait on for changes (None: poll with the backstop timer)."""
        return self.notify_fd

    def drain_events(self) -> None:
        """Consume pending inotify events (their content does not matter: we re-check)."""
        if self.notify_fd is None:
            return
        try:
            while os.read(self.notify_fd, 65536):
                pass
        except BlockingIOError:
            pass

    def read(self, budget: int = 16 * _READ_SIZE) -> ReadResult:
        """Read what was appended, up to ``budget`` bytes."""
        chunks: list[bytes] = []
        restarted = False
        if self._fd is None and not self._open():
            return ReadResult(chunks=(), restarted=False, more=False)
        assert self._fd is not None
        size = os.fstat(self._fd).st_size
        if size < self.offset or not self._same_head():  # truncated in place (copytruncate)
            self.offset = 0
            self._head = b""
            os.lseek(self._fd, 0, os.SEEK_SET)
            restarted = True
        total = self._read_into(chunks, budget)
        if total < budget and self._rotated():
            # the path names a new file now: the old one was read to its end above
            os.close(self._fd)
            self._fd = None
            if self._open():
                restarted = True
                total += self._read_into(chunks, budget - total)
        return ReadResult(chunks=tuple(chunks), restarted=restarted, more=total >= budget)

    def close(self) -> None:
        """Release the file and the inotify descriptor."""
        if self._fd is not None:
            os.close(self._fd)
            self._fd = None
        if self.notify_fd is not None:
            # closing an inotify descriptor waits for an RCU grace period (often 10-30 ms):
            # do it off the caller's path so a verdict is not delayed by it
            threading.Thread(target=os.close, args=(self.notify_fd,), daemon=True).start()
            self.notify_fd = None

    def _open(self) -> bool:
        try:
            fd = os.open(self.path, os.O_RDONLY | os.O_CLOEXEC)
        except FileNotFoundError:
            return False
        st = os.fstat(fd)
        self._fd, self._ino, self.offset, self._head = fd, (st.st_dev, st.st_ino), 0, b""
        self.found = True
        return True

    def _same_head(self) -> bool:
        """False when the file no longer starts with the bytes read from its start."""
        assert self._fd is not None
        return not self._head or os.pread(self._fd, len(self._head), 0) == self._head

    def _rotated(self) -> bool:
        try:
            st = os.stat(self.path)
        except FileNotFoundError:
            return False  # moved away and not yet recreated: keep the old one
        return (st.st_dev, st.st_ino) != self._ino

    def _read_into(self, chunks: list[bytes], budget: int) -> int:
        assert self._fd is not None
        total = 0
        while total < budget:
            data = os.read(self._fd, min(_READ_SIZE, budget - total))
            if not data:
                break
            if len(self._head) < _HEAD_BYTES and len(self._head) == self.offset + total:
                self._head += data[: _HEAD_BYTES - len(self._head)]  # what was read, not re-read
            chunks.append(data)
            total += len(data)
        self.offset += total
        return total
