"""Preflight: port, leftover processes, model path, JIT cache locks, GPU (skipped here)."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from servegate.campaign.gpu import GpuMonitor
from servegate.campaign.preflight import (
    Level,
    ProcessRef,
    jit_cache_dirs,
    process_tree,
    run_preflight,
    stale_locks,
)
from servegate.launch.tree import port_is_free as port_free
from servegate.startup.caches import cache_paths


@pytest.fixture
def listener(port: int) -> Iterator[int]:
    """A socket listening on ``port``."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", port))
        sock.listen()
        yield port


def by_name(report: object, name: str) -> object:
    return next(c for c in report.checks if c.name == name)  # type: ignore[attr-defined]


def test_port_free_tells_a_listened_port_from_a_free_one(port: int) -> None:
    """A port is free until something listens on it."""
    assert port_free(port) is True
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", port))
        sock.listen()
        assert port_free(port) is False


def test_port_in_use_is_an_error_naming_port_and_holder(listener: int, tmp_path: Path) -> None:
    """A port taken by a process that is not the previous server fails preflight at once
    (no wait for a release that will not come), with the port, the holder's PID and the fix."""
    report = run_preflight(port=listener, timeout_s=600, env={"HOME": str(tmp_path)})
    assert not report.ok
    check = by_name(report, "port")
    assert check.level is Level.ERROR  # type: ignore[attr-defined]
    message = check.message  # type: ignore[attr-defined]
    assert f"port {listener} is in use by PID {os.getpid()} (" in message
    assert 'set [server] port to a free port (or "auto")' in message
    assert report.duration_s < 60


def test_port_released_during_the_wait_passes(port: int) -> None:
    """A port the previous server still holds is waited for, and passes once that server
    has let it go (a stop releases it asynchronously)."""
    holder = subprocess.Popen(
        [
            sys.executable,
            "-c",
            "import socket,time;s=socket.socket();"
            f"s.bind(('127.0.0.1',{port}));s.listen();print('up',flush=True);time.sleep(0.5)",
        ],
        stdout=subprocess.PIPE,
        text=True,
    )
    with holder:
        assert holder.stdout is not None and holder.stdout.readline().strip() == "up"
        previous = process_tree(holder.pid)
        report = run_preflight(port=port, previous=previous, timeout_s=30)
        assert by_name(report, "port").level is Level.OK  # type: ignore[attr-defined]
        holder.kill()


def test_previous_server_processes_must_be_gone() -> None:
    """Processes of the previous server that still run fail preflight with their PIDs."""
    proc = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(30)"])
    try:
        refs = process_tree(proc.pid)
        assert [r.pid for r in refs] == [proc.pid]
        report = run_preflight(port=None, previous=refs, timeout_s=0.2)
        check = by_name(report, "processes")
        assert check.level is Level.ERROR  # type: ignore[attr-defined]
        assert str(proc.pid) in check.message  # type: ignore[attr-defined]
    finally:
        proc.kill()
        proc.wait()
    report = run_preflight(port=None, previous=refs, timeout_s=2)
    assert by_name(report, "processes").level is Level.OK  # type: ignore[attr-defined]


def test_a_reused_pid_is_not_the_previous_process() -> None:
    """A ProcessRef with another start time is not alive, even if its PID is."""
    ref = ProcessRef.of(__import__("os").getpid())
    assert ref is not None and ref.alive()
    assert not ProcessRef(pid=ref.pid, create_time=ref.create_time - 100).alive()


def test_missing_model_path_is_an_error(tmp_path: Path) -> None:
    """A local model path that does not exist fails; one that exists passes."""
    missing = run_preflight(port=None, model=str(tmp_path / "none"), timeout_s=0)
    check = by_name(missing, "model")
    assert check.level is Level.ERROR  # type: ignore[attr-defined]
    assert "does not exist; fix [server] model" in check.message  # type: ignore[attr-defined]
    present = run_preflight(port=None, model=str(tmp_path), timeout_s=0)
    assert by_name(present, "model").level is Level.OK  # type: ignore[attr-defined]


def test_hub_model_not_in_cache_is_a_warning(tmp_path: Path) -> None:
    """A Hugging Face id that is not cached warns that the first start downloads it."""
    report = run_preflight(
        port=None, model="org/model-x", env={"HF_HOME": str(tmp_path)}, timeout_s=0
    )
    check = by_name(report, "model")
    assert check.level is Level.WARNING  # type: ignore[attr-defined]
    assert report.ok
    (tmp_path / "hub" / "models--org--model-x").mkdir(parents=True)
    report = run_preflight(
        port=None, model="org/model-x", env={"HF_HOME": str(tmp_path)}, timeout_s=0
    )
    assert by_name(report, "model").level is Level.OK  # type: ignore[attr-defined]


def test_held_lock_in_a_jit_cache_is_flagged_with_its_holder(tmp_path: Path) -> None:
    """A *.lock held by a process is flagged with the holder; a free one is not."""
    cache = tmp_path / "triton"
    (cache / "deep" / "er").mkdir(parents=True)
    held = cache / "deep" / "er" / "kernel.lock"
    (cache / "free.lock").write_text("")
    holder = subprocess.Popen(
        [
            sys.executable,
            "-c",
            "import fcntl,sys,time;f=open(sys.argv[1],'w');fcntl.flock(f,fcntl.LOCK_EX);"
            "print('locked',flush=True);time.sleep(30)",
            str(held),
        ],
        stdout=subprocess.PIPE,
        text=True,
    )
    with holder:
        assert holder.stdout is not None and holder.stdout.readline().strip() == "locked"
        locks = stale_locks([cache])
        assert [lock.path for lock in locks] == [held]
        assert f"held by PID {holder.pid}" in locks[0].why
        report = run_preflight(port=None, env={"TRITON_CACHE_DIR": str(cache)}, timeout_s=0)
        check = by_name(report, "jit-locks")
        assert check.level is Level.WARNING  # type: ignore[attr-defined]
        assert str(held) in check.message  # type: ignore[attr-defined]
        assert report.ok
        holder.kill()
    assert stale_locks([cache]) == []


def test_torch_file_baton_left_behind_is_flagged(tmp_path: Path) -> None:
    """A torch extension build's ``lock`` file (existence-based) is flagged as left over."""
    ext = tmp_path / "torch_extensions" / "py311_cu124" / "flashinfer"
    ext.mkdir(parents=True)
    (ext / "lock").write_text("")
    locks = stale_locks(
        jit_cache_dirs({"TORCH_EXTENSIONS_DIR": str(tmp_path / "torch_extensions")})
    )
    assert [lock.path for lock in locks] == [ext / "lock"]
    assert "left by a build" in locks[0].why


def test_cache_dirs_follow_the_server_environment(tmp_path: Path) -> None:
    """The server's env picks the cache folders: SGLANG_CACHE_DIR, TORCHINDUCTOR_CACHE_DIR."""
    dirs = jit_cache_dirs(
        {"SGLANG_CACHE_DIR": str(tmp_path / "s"), "TORCHINDUCTOR_CACHE_DIR": str(tmp_path / "i")}
    )
    assert tmp_path / "s" in dirs
    assert tmp_path / "i" in dirs
    assert Path.home() / ".cache" / "flashinfer" in dirs


def test_lock_check_looks_in_every_cache_a_start_measures(tmp_path: Path) -> None:
    """The stale-lock check reads the cold/warm map of cache folders: each cache but the
    driver's lies in a folder it scans, whichever variables moved the caches."""
    env = {
        "HOME": str(tmp_path / "home"),
        "XDG_CACHE_HOME": str(tmp_path / "xdg"),
        "TMPDIR": str(tmp_path / "tmp"),
        "TRITON_HOME": str(tmp_path / "triton-home"),
        "FLASHINFER_WORKSPACE_BASE": str(tmp_path / "flashinfer-base"),
    }
    for name in ("TRITON_CACHE_DIR", "TORCHINDUCTOR_CACHE_DIR", "VLLM_CACHE_ROOT"):
        env[name] = ""  # unset: the defaults above decide
    scanned = jit_cache_dirs(env)
    caches = cache_paths({**os.environ, **env})
    missed = [
        name
        for name, path in caches.items()
        if name != "cuda" and not any(path.is_relative_to(top) for top in scanned)
    ]
    assert [] == missed


def test_a_lock_left_in_flashinfers_workspace_is_flagged(tmp_path: Path) -> None:
    """FlashInfer's cache follows FLASHINFER_WORKSPACE_BASE for the lock check too."""
    cache = tmp_path / "base" / ".cache" / "flashinfer" / "90" / "cached_ops" / "norm"
    cache.mkdir(parents=True)
    (cache / "lock").write_text("")
    report = run_preflight(
        port=None, env={"FLASHINFER_WORKSPACE_BASE": str(tmp_path / "base")}, timeout_s=0
    )
    check = by_name(report, "jit-locks")
    assert check.level is Level.WARNING  # type: ignore[attr-defined]
    assert str(cache / "lock") in check.message  # type: ignore[attr-defined]


@pytest.mark.skipif(GpuMonitor.open() is not None, reason="this machine has an NVIDIA GPU")
def test_gpu_check_is_skipped_without_a_gpu() -> None:
    """Without NVML the GPU check says it was skipped and never fails the preflight."""
    report = run_preflight(port=None, gpu=GpuMonitor.open(), timeout_s=0)
    check = by_name(report, "gpu")
    assert check.level is Level.SKIPPED  # type: ignore[attr-defined]
    assert report.ok
