"""SQLite failures a user can act on, as servegate errors of one sentence each.

A damaged file, a full disk, a read-only folder or an I/O error reach the store as
``sqlite3`` exceptions; ``translate`` turns each into the error the command line
reports (exit 2 for a damaged file or a read-only folder, 3 for a full disk or an I/O
error), and ``guarded`` applies it to every public method of the store, so that no
traceback reaches the user for any of them.
"""

from __future__ import annotations

import functools
import os
import sqlite3
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import Concatenate, ParamSpec, Protocol, TypeVar

from servegate.errors import ServegateError, StoreDamagedError, StoreError, UsageError

__all__ = [
    "SQLITE_CANTOPEN",
    "damaged",
    "guarded",
    "looks_like_servegate",
    "primary_code",
    "read_only_error",
    "translate",
    "writable_problem",
]

# primary result codes (the low byte of an extended code)
_BUSY = 5
_READONLY = 8
_IOERR = 10
_CORRUPT = 11
_FULL = 13
SQLITE_CANTOPEN = 14
_NOTADB = 26

SQLITE_MAGIC = b"SQLite format 3\x00"
# the first table of the schema, kept as text in the first pages even when the header is lost
_SERVEGATE_SCHEMA = b"CREATE TABLE campaign ("
_SNIFF_BYTES = 1 << 16


def primary_code(exc: sqlite3.Error) -> int | None:
    """SQLite's primary result code of ``exc`` (SQLITE_FULL, ...), when it carries one."""
    code = getattr(exc, "sqlite_errorcode", None)
    return None if code is None else int(code) & 0xFF


def looks_like_servegate(path: str | Path) -> bool:
    """Whether the file at ``path`` is (or was, before its header was damaged) a database."""
    try:
        with open(path, "rb") as handle:
            head = handle.read(_SNIFF_BYTES)
    except OSError:
        return False
    return head.startswith(SQLITE_MAGIC) or _SERVEGATE_SCHEMA in head


def damaged(path: str | Path, exc: sqlite3.Error | str) -> StoreDamagedError:
    """The error for a database SQLite cannot read."""
    return StoreDamagedError(
        f"{path} is damaged: {exc}; restore it or use a new --db "
        "(sqlite3 FILE .recover can save what is still readable)."
    )


def writable_problem(folder: Path) -> str | None:
    """Why a new file cannot be created in ``folder`` (the OS's words), or None when it can.

    Tries for real: permission bits do not stop root, a read-only mount does.
    """
    try:
        fd, name = tempfile.mkstemp(prefix=".servegate-probe-", dir=folder)
    except OSError as exc:
        return exc.strerror or str(exc)
    os.close(fd)
    os.unlink(name)
    return None


def read_only_error(path: str | Path, exc: sqlite3.Error | None = None) -> UsageError:
    """The error for a database whose folder or file cannot be written."""
    target = Path(path)
    folder = target.resolve().parent
    problem = writable_problem(folder)
    if problem is not None:
        return UsageError(
            f"cannot write to the folder {folder} ({problem}); servegate run "
            "keeps the database, its -wal and -shm files and the server logs there: run "
            "in a writable folder or pass --db FILE in one."
        )
    detail = f" ({exc})" if exc is not None else ""
    return UsageError(
        f"{target} is read-only{detail}; make it writable or pass another --db "
        "(servegate report can still read it)."
    )


def translate(exc: sqlite3.Error, path: str | Path) -> ServegateError | None:
    """The servegate error for ``exc`` raised on the database at ``path``; None: a bug."""
    code = primary_code(exc)
    if code == _CORRUPT:
        return damaged(path, exc)
    if code == _NOTADB:
        if looks_like_servegate(path):
            return damaged(path, exc)
        return UsageError(
            f"{path} is not a SQLite database ({exc}); pass a servegate database with --db."
        )
    if code == _FULL:
        return StoreError(f"cannot write to {path}: the disk is full ({exc})")
    if code == _IOERR:
        return StoreError(f"cannot read or write {path}: I/O error ({exc}); check the disk")
    if code in (_READONLY, SQLITE_CANTOPEN):
        return read_only_error(path, exc)
    if code == _BUSY:
        return StoreError(
            f"{path} stayed locked by another process for 10 s ({exc}); "
            "find it with: fuser " + str(path)
        )
    return None


class _HasPath(Protocol):
    path: str


_S = TypeVar("_S", bound=_HasPath)
_P = ParamSpec("_P")
_R = TypeVar("_R")


def guarded(method: Callable[Concatenate[_S, _P], _R]) -> Callable[Concatenate[_S, _P], _R]:
    """Turn the SQLite errors a user can act on, raised by a store method, into ours."""

    @functools.wraps(method)
    def wrapper(self: _S, /, *args: _P.args, **kwargs: _P.kwargs) -> _R:
        try:
            return method(self, *args, **kwargs)
        except sqlite3.Error as exc:
            error = translate(exc, self.path)
            if error is None:
                raise
            raise error from exc

    return wrapper
