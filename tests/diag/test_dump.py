"""Stack dumps of a real hung process tree: py-spy for Python, /proc for the rest."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from servegate.diag import INSTALL_HINT, PTRACE_HINT, Stacks, dump_tree, py_spy
from servegate.diag import dump as dump_module
from servegate.diag.stacks import is_stdlib

HUNG = str(Path(__file__).parent / "scripts" / "hung_tree.py")


@pytest.fixture
def hung() -> Iterator[tuple[int, int]]:
    """A running hung tree: (main PID, native child PID); stopped afterwards."""
    proc = subprocess.Popen(
        [sys.executable, HUNG], stdout=subprocess.PIPE, text=True, start_new_session=True
    )
    try:
        assert proc.stdout is not None
        line = proc.stdout.readline()
        assert line.startswith("READY"), line
        yield proc.pid, int(line.split()[1])
    finally:
        os.killpg(proc.pid, signal.SIGKILL)
        proc.wait()
        if proc.stdout is not None:
            proc.stdout.close()


def test_py_spy_is_installed_for_the_tests() -> None:
    assert py_spy() is not None, "install the test extra: pip install -e '.[test]'"


def test_the_summary_names_the_function_most_processes_are_in(hung: tuple[int, int]) -> None:
    main, native = hung
    stacks = dump_tree(main)
    assert stacks.summary == "3 of 5 processes in wait_for_nccl_peers"
    assert stacks.top == "wait_for_nccl_peers"
    assert stacks.top_frame is not None and "hung_tree.py:" in stacks.top_frame
    assert stacks.note is None
    by_pid = {p.pid: p for p in stacks.processes}
    assert set(by_pid) >= {main, native}
    assert by_pid[main].python and by_pid[main].error is None
    # a thread blocked inside the standard library is placed at its caller
    wheres = sorted(p.where() for p in stacks.processes if p.python)
    assert wheres == ["wait_for_nccl_peers"] * 3 + ["waits_on_an_event"]
    # the native process: not Python, its kernel wait channel and state
    sleeper = by_pid[native]
    assert not sleeper.python and not sleeper.threads
    assert sleeper.state == "S" and sleeper.wchan
    assert sleeper.where() == sleeper.wchan
    assert os.geteuid() != 0 or sleeper.kernel  # root reads /proc/PID/stack
    text = "\n".join(stacks.lines())
    assert "wait_for_nccl_peers (" in text and f"process {native} sleep" in text


def test_stacks_survive_json(hung: tuple[int, int]) -> None:
    stacks = dump_tree(hung[0])
    data = stacks.to_json()
    again = Stacks.from_json(data)
    assert again == stacks
    assert data["processes"][0]["where"] in ("wait_for_nccl_peers", "waits_on_an_event")
    assert Stacks.from_json(None) is None


def test_without_py_spy_the_note_says_how_to_get_it(
    hung: tuple[int, int], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(dump_module, "py_spy", lambda: None)
    stacks = dump_tree(hung[0])
    assert stacks.note == INSTALL_HINT
    assert "pip install 'servegate[diag]'" in stacks.lines()[1]
    assert all(not p.threads for p in stacks.processes)
    assert all(p.error == "py-spy is not installed" for p in stacks.processes if p.python)
    # still summarised, by kernel wait channel
    assert stacks.summary.endswith(f"in {stacks.top}") and stacks.top


@pytest.mark.skipif(os.geteuid() != 0, reason="needs root to drop to another user")
def test_no_ptrace_permission_gets_the_hint(
    hung: tuple[int, int], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # py-spy run as an unprivileged user may not ptrace root's processes
    real = py_spy()
    assert real is not None
    wrapper = tmp_path / "py-spy"
    wrapper.write_text(
        f'#!/bin/sh\nexec setpriv --reuid=65534 --regid=65534 --clear-groups {real} "$@"\n'
    )
    wrapper.chmod(0o755)
    monkeypatch.setattr(dump_module, "py_spy", lambda: str(wrapper))
    stacks = dump_tree(hung[0])
    assert stacks.note == PTRACE_HINT
    errors = [p.error for p in stacks.processes if p.python]
    assert errors and all(e and ("ermission" in e or "not permitted" in e) for e in errors)


def test_a_process_gone_is_left_out() -> None:
    proc = subprocess.Popen([sys.executable, "-c", "pass"])
    proc.wait()
    stacks = dump_tree(proc.pid)
    assert stacks.processes == () and stacks.summary == "no process to dump"


def test_stdlib_frames() -> None:
    assert is_stdlib("/usr/lib/python3.11/threading.py")
    assert is_stdlib("/root/.pyenv/versions/3.11.7/lib/python3.11/selectors.py")
    assert is_stdlib("<frozen runpy>")
    assert not is_stdlib("/usr/lib/python3.11/site-packages/vllm/worker.py")
    assert not is_stdlib("/opt/venv/lib/python3.12/dist-packages/sglang/srt/server.py")
    assert not is_stdlib("/app/serve.py")


def test_a_py_spy_that_prints_bytes_not_utf8_still_gives_stacks(
    hung: tuple[int, int], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """py-spy prints the target's file names as they are: bytes that are not UTF-8 come
    out replaced, and the stacks are still read (before: UnicodeDecodeError)."""
    real = py_spy()
    assert real is not None
    # the real py-spy's output, with the script's name spelt in Latin-1 (as a file named
    # in Latin-1 on disk would be printed)
    (tmp_path / "py-spy").write_text(
        f'#!/bin/sh\n{real} "$@" | {sys.executable} -c "import sys; sys.stdout.buffer.write('
        "sys.stdin.buffer.read().replace(b'hung_tree', b'hung_\\\\xe9t\\\\xe9'))\"\n"
    )
    (tmp_path / "py-spy").chmod(0o755)
    monkeypatch.setenv("PATH", f"{tmp_path}{os.pathsep}{os.environ['PATH']}")
    assert py_spy() == str(tmp_path / "py-spy")
    stacks = dump_tree(hung[0])
    assert stacks.top == "wait_for_nccl_peers"
    assert stacks.top_frame is not None and "hung_\ufffdt\ufffd.py:" in stacks.top_frame
    assert all(p.error is None for p in stacks.processes if p.python)
