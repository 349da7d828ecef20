"""Following a log file someone else writes: growth, truncation, rotation."""

from __future__ import annotations

import os
from pathlib import Path

from servegate.gate.follow import FileFollower


def _read_all(follower: FileFollower) -> tuple[bytes, bool]:
    data, restarted = b"", False
    while True:
        result = follower.read()
        data += b"".join(result.chunks)
        restarted = restarted or result.restarted
        if not result.more:
            return data, restarted


def test_reads_only_what_was_appended(tmp_path: Path) -> None:
    """Each read returns the new bytes once; nothing is read twice."""
    log = tmp_path / "a.log"
    log.write_bytes(b"one\n")
    follower = FileFollower(str(log))
    try:
        assert _read_all(follower) == (b"one\n", False)
        with log.open("ab") as f:
            f.write(b"two\n")
        assert _read_all(follower) == (b"two\n", False)
        assert _read_all(follower) == (b"", False)
        assert follower.offset == 8
    finally:
        follower.close()


def test_file_created_later(tmp_path: Path) -> None:
    """A log that does not exist yet is picked up once it appears, with an inotify event."""
    log = tmp_path / "late.log"
    follower = FileFollower(str(log))
    try:
        assert _read_all(follower) == (b"", False)
        log.write_bytes(b"hello\n")
        assert follower.fileno() is not None
        assert _read_all(follower) == (b"hello\n", False)
    finally:
        follower.close()


def test_truncation_restarts_from_zero(tmp_path: Path) -> None:
    """A log truncated in place (copytruncate) is read again from its start."""
    log = tmp_path / "t.log"
    log.write_bytes(b"x" * 100 + b"\n")
    follower = FileFollower(str(log))
    try:
        _read_all(follower)
        log.write_bytes(b"new\n")
        assert _read_all(follower) == (b"new\n", True)
    finally:
        follower.close()


def test_rotation_drains_the_old_file_then_follows_the_new(tmp_path: Path) -> None:
    """After a rename-and-recreate, the old file's end and the new file are both read."""
    log = tmp_path / "r.log"
    log.write_bytes(b"first\n")
    follower = FileFollower(str(log))
    try:
        _read_all(follower)
        with log.open("ab") as f:
            f.write(b"last of old\n")
        os.rename(log, tmp_path / "r.log.1")
        log.write_bytes(b"start of new\n")
        assert _read_all(follower) == (b"last of old\nstart of new\n", True)
    finally:
        follower.close()


def test_copytruncate_refilled_past_the_offset_restarts_from_zero(tmp_path: Path) -> None:
    """Truncated and refilled beyond the old offset between two reads: read again from 0."""
    log = tmp_path / "ct.log"
    log.write_bytes(b"old run, nothing to see\n" * 4)
    follower = FileFollower(str(log))
    try:
        _read_all(follower)
        # logrotate's copytruncate, then the server writes more than the old size at once
        refill = b"generic server ready\n" + b"x" * 200 + b"\n"
        with log.open("r+b") as f:
            f.truncate(0)
            f.write(refill)
        assert _read_all(follower) == (refill, True)
    finally:
        follower.close()


def test_a_growing_file_is_not_mistaken_for_a_copytruncate(tmp_path: Path) -> None:
    """Appends after the first bytes were read never count as a restart."""
    log = tmp_path / "g.log"
    log.write_bytes(b"ab")
    follower = FileFollower(str(log))
    try:
        assert _read_all(follower) == (b"ab", False)
        for _ in range(3):
            with log.open("ab") as f:
                f.write(b"c" * 3000 + b"\n")
            data, restarted = _read_all(follower)
            assert (len(data), restarted) == (3001, False)
    finally:
        follower.close()
