"""Output files (``--json-file``, ``--markdown-file``, ``--csv-file``, ``--html-file``):
written to what the path names, never renamed over something that is not a file.

- a regular file, or nothing yet: the content goes to a unique temporary file beside it
  (``mkstemp``, never a predictable ``NAME.tmp``), which then replaces it in one rename,
  keeping the old file's mode (0644 for a new one: reports are meant to be shared), so
  that a crash leaves the old content or the new, never half of it;
- a symbolic link: resolved, and its target written as above (the link stays a link);
- a FIFO, a terminal or another device (``/dev/stdout``, ``/dev/null``): written in
  place, never replaced by a regular file;
- a folder or a socket: refused in one sentence.

    write_output(Path("results.json"), text, flag="--json-file")
"""

from __future__ import annotations

import errno
import os
import stat
import tempfile
from pathlib import Path

from servegate.errors import UsageError

__all__ = ["check_output", "write_output"]

NEW_FILE_MODE = 0o644


def check_output(path: Path, *, flag: str = "the output file") -> None:
    """UsageError naming ``flag``, before any work, when ``path`` cannot be written: its
    folder is missing or read-only, or it is a folder, a socket or a read-only file."""
    target, info = _resolve(path, flag)
    if info is not None and not stat.S_ISREG(info.st_mode):
        if not os.access(target, os.W_OK):
            raise UsageError(f"{flag} {path} cannot be written; choose another path.")
        return  # a FIFO or a device: written in place, its folder does not matter
    folder = target.parent
    if not folder.is_dir():
        shown = folder if path.is_symlink() else path.parent  # as the user wrote it
        raise UsageError(
            f"{flag} {path}: the folder {shown} does not exist; create it or choose another path."
        )
    if not os.access(folder, os.W_OK) or (info is not None and not os.access(target, os.W_OK)):
        raise UsageError(f"{flag} {path} cannot be written; choose another path.")


def write_output(path: Path, content: str, *, flag: str = "the output file") -> Path:
    """Write ``content`` (UTF-8) to ``path`` as the module docstring says; return the
    path written (a link's target). UsageError naming ``flag`` when it cannot be."""
    target, info = _resolve(path, flag)
    data = content.encode("utf-8")
    try:
        if info is not None and not stat.S_ISREG(info.st_mode):
            _write_in_place(target, data)  # a FIFO or a device: the path stays what it is
        else:
            mode = NEW_FILE_MODE if info is None else stat.S_IMODE(info.st_mode)
            _replace(target, data, mode)
    except OSError as exc:
        raise _error(flag, path, exc) from exc
    return target


def _resolve(path: Path, flag: str) -> tuple[Path, os.stat_result | None]:
    """What ``path`` names (a link resolved) and its status (None: nothing there yet);
    UsageError for a folder or a socket."""
    target = Path(os.path.realpath(path))  # a link's target; a dangling link's is created
    try:
        info = os.stat(target)
    except FileNotFoundError:
        return target, None
    except OSError as exc:
        raise _error(flag, path, exc) from exc
    if stat.S_ISDIR(info.st_mode):
        raise UsageError(f"{flag} {path} is a folder; pass a file name, e.g. {path}/out.json.")
    if stat.S_ISSOCK(info.st_mode):
        raise UsageError(f"{flag} {path} is a socket, which cannot be written; pass a file.")
    return target, info


def _write_in_place(target: Path, data: bytes) -> None:
    """Open the FIFO or device for writing (no create, no truncate of a device) and write."""
    fd = os.open(target, os.O_WRONLY | os.O_NOCTTY | os.O_CLOEXEC)
    try:
        view = memoryview(data)
        while view:
            view = view[os.write(fd, view) :]
    finally:
        os.close(fd)


def _replace(target: Path, data: bytes, mode: int) -> None:
    """A unique temporary file beside ``target``, then one rename over it."""
    fd, tmp = tempfile.mkstemp(prefix=f".{target.name}.", suffix=".tmp", dir=target.parent)
    try:
        with os.fdopen(fd, "wb") as handle:
            handle.write(data)
            handle.flush()
            os.fchmod(handle.fileno(), mode)  # mkstemp makes 0600 whatever the umask
        os.replace(tmp, target)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def _error(flag: str, path: Path, exc: OSError) -> UsageError:
    """One sentence for a write that failed: the disk, the permission or the path."""
    if exc.errno in (errno.ENOSPC, errno.EDQUOT):
        why = "the disk is full (no space left on the device)"
        fix = "free some space or choose a path on another disk"
    elif exc.errno in (errno.EACCES, errno.EPERM, errno.EROFS):
        why = "it cannot be written (permission denied or a read-only file system)"
        fix = "choose another path"
    else:
        why = exc.strerror or str(exc)
        fix = "choose another path"
    return UsageError(f"{flag} {path}: {why}; {fix}.")
