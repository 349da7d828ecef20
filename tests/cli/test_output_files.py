"""``--*-file FILE`` writes to what FILE names: a link's target, a FIFO or a device in
place, a regular file atomically with its mode kept; never a rename over a link, a FIFO
or a device node."""

from __future__ import annotations

import json
import os
import stat
import subprocess
import sys
import threading
from collections.abc import Callable
from pathlib import Path

import pytest
from tests.report.campaign import build

# (command, flag, a line every output of that flag holds)
OUTPUTS = [
    ("report", "--json-file", '"schema": "servegate.report/1"'),
    ("report", "--markdown-file", "# Campaign `demo`"),
    ("report", "--csv-file", "variant"),
    ("report", "--html-file", "<html"),
    ("check", "--json-file", '"schema": "servegate.check/1"'),
    ("check", "--markdown-file", "## servegate check"),
]


def servegate(*args: str | Path, cwd: Path) -> subprocess.CompletedProcess[str]:
    """The command line, to completion, in ``cwd``."""
    return subprocess.run(
        [sys.executable, "-m", "servegate", *map(str, args)],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
        cwd=cwd,
    )


@pytest.fixture(scope="module")
def db(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A small constructed campaign database."""
    path = tmp_path_factory.mktemp("outputs") / "servegate.db"
    build(path, repeats=2, requests=10)
    return path


@pytest.mark.parametrize(("command", "flag", "expected"), OUTPUTS)
def test_a_symlink_stays_a_link_and_its_target_is_written(
    db: Path, tmp_path: Path, command: str, flag: str, expected: str
) -> None:
    """FILE a link to a file in another folder: the link is left as it is and the file it
    points to holds the output."""
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    target = elsewhere / "out"
    target.write_text("old\n", encoding="utf-8")
    link = tmp_path / "link"
    link.symlink_to(target)
    done = servegate(command, "--db", db, flag, link, cwd=tmp_path)
    assert done.returncode in (0, 1), done.stderr
    assert link.is_symlink()
    assert os.readlink(link) == str(target)
    assert expected in target.read_text(encoding="utf-8")
    assert sorted(p.name for p in elsewhere.iterdir()) == ["out"]  # no temporary left


def _reader(fifo: Path) -> tuple[Callable[[], bytes], Callable[[], None]]:
    """Read ``fifo`` in a thread; returns (the bytes read, once the writers are gone) and
    a function that lets go of the test's own writer end (so the reader sees the end)."""
    read_fd = os.open(fifo, os.O_RDONLY | os.O_NONBLOCK)
    keep_fd = os.open(fifo, os.O_WRONLY)  # the reader blocks instead of seeing EOF at once
    os.set_blocking(read_fd, True)
    chunks: list[bytes] = []

    def run() -> None:
        while chunk := os.read(read_fd, 65536):
            chunks.append(chunk)
        os.close(read_fd)

    thread = threading.Thread(target=run, daemon=True)
    thread.start()

    def result() -> bytes:
        thread.join(timeout=60)
        assert not thread.is_alive()
        return b"".join(chunks)

    return result, lambda: os.close(keep_fd)


@pytest.mark.parametrize(("command", "flag", "expected"), OUTPUTS)
def test_a_fifo_is_written_in_place(
    db: Path, tmp_path: Path, command: str, flag: str, expected: str
) -> None:
    """FILE a FIFO: the output goes through it to its reader, and it stays a FIFO."""
    fifo = tmp_path / "pipe"
    os.mkfifo(fifo)
    result, release = _reader(fifo)
    try:
        done = servegate(command, "--db", db, flag, fifo, cwd=tmp_path)
    finally:
        release()
    assert done.returncode in (0, 1), done.stderr
    assert stat.S_ISFIFO(os.lstat(fifo).st_mode)
    assert expected in result().decode("utf-8")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["pipe"]


def test_a_link_to_a_device_writes_the_device_in_place(db: Path, tmp_path: Path) -> None:
    """FILE a link to /dev/null: the link stays a link and /dev/null a character device."""
    link = tmp_path / "null"
    link.symlink_to("/dev/null")
    done = servegate("report", "--db", db, "--json-file", link, cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert link.is_symlink()
    assert stat.S_ISCHR(os.stat("/dev/null").st_mode)


@pytest.mark.skipif(not Path("/dev/full").exists(), reason="no /dev/full on this system")
def test_a_full_device_is_one_sentence_and_exit_2(db: Path, tmp_path: Path) -> None:
    """FILE a link to /dev/full (a disk that is full): exit 2, one sentence naming the flag
    and the fix, and the device left as it is."""
    link = tmp_path / "full"
    link.symlink_to("/dev/full")
    done = servegate("report", "--db", db, "--json-file", link, cwd=tmp_path)
    assert done.returncode == 2, done.stderr
    assert done.stderr == (
        f"Error: --json-file {link}: the disk is full (no space left on the device); "
        "free some space or choose a path on another disk.\n"
    )
    assert link.is_symlink()
    assert stat.S_ISCHR(os.stat("/dev/full").st_mode)


def test_a_regular_file_keeps_its_mode(db: Path, tmp_path: Path) -> None:
    """An existing 0600 report is replaced by the new content, still 0600; a new one is
    0644 (reports are meant to be shared)."""
    kept = tmp_path / "kept.md"
    kept.write_text("old\n", encoding="utf-8")
    kept.chmod(0o600)
    new = tmp_path / "new.json"
    done = servegate(
        "report", "--db", db, "--markdown-file", kept, "--json-file", new, cwd=tmp_path
    )
    assert done.returncode == 0, done.stderr
    assert stat.S_IMODE(kept.stat().st_mode) == 0o600
    assert kept.read_text(encoding="utf-8").startswith("# Campaign")
    assert stat.S_IMODE(new.stat().st_mode) == 0o644
    assert json.loads(new.read_text(encoding="utf-8"))["schema"] == "servegate.report/1"


def test_bench_json_file_never_uses_a_predictable_temporary_name(
    sse_server: Callable[..., str], tmp_path: Path
) -> None:
    """bench rewrites --json-file after each point through a unique temporary file: a
    folder (or a planted link) at FILE.tmp is never used, and nothing is left beside it."""
    url = sse_server("--ttft-ms", "1", "--itl-ms", "1")
    out = tmp_path / "r.json"
    (tmp_path / "r.json.tmp").mkdir()
    args = ["--url", url, "--concurrency", "1,2", "--requests", "2", "--input-len", "4"]
    args += ["--output-len", "2", "--json-file", str(out)]
    done = subprocess.run(
        [sys.executable, "-m", "servegate", "bench", *args],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    assert [p["label"] for p in json.loads(out.read_text())["points"]] == ["c=1", "c=2"]
    assert sorted(p.name for p in tmp_path.iterdir()) == ["r.json", "r.json.tmp"]
