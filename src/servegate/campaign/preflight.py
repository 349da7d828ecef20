"""Preflight: check that the machine is ready for the next server start.

A start that fails because the previous server still holds the port, a worker of it
still holds GPU memory, or a killed JIT build left its lock behind would be recorded as
the new variant's failure. So before each start the runner checks, and waits a little
for what a stop releases asynchronously:

- the port is free (waits up to ``release_timeout_s`` while the previous server may
  still hold it; a port held by any other process fails at once, naming its PID);
- every process of the previous server is gone (waits);
- GPU memory is back to its idle level, where there are GPUs (waits; NVML);
- the model path exists, when ``model`` is a local path;
- no lock file in a known JIT cache folder is held or left over (a warning only:
  flashinfer#972, a JIT build that waits forever on a killed run's lock).

While it waits it says so (``on_wait``), at once and then every 5 s: what it waits
for, what holds it, the time waited and the wait's limit (``waiting for port 8000 to
be released (held by PID 1234 (python3)): 5.0s of up to 60s``; while the previous
server's processes still run, the wait for them names those that hold the port).
"""

from __future__ import annotations

import enum
import os
import time
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

import psutil

from servegate._proc import same_process
from servegate.campaign.gpu import GpuMemory, GpuMonitor, wait_released
from servegate.launch.tree import describe_holders, named_port_holders, port_is_free
from servegate.startup.caches import lock_dirs
from servegate.telemetry.nvml import NvmlError

__all__ = [
    "Check",
    "Level",
    "PreflightReport",
    "ProcessRef",
    "describe_holders",
    "jit_cache_dirs",
    "run_preflight",
    "stale_locks",
]

_POLL_S = 0.1
_TELL_EVERY_S = 5.0  # a waiting preflight says so this often
_MAX_SCAN_ENTRIES = 20_000
_MAX_SCAN_DEPTH = 6


class Level(enum.Enum):
    """How much a check's result matters."""

    OK = "ok"  # checked and fine
    SKIPPED = "skipped"  # could not be checked here (no GPU, remote path)
    WARNING = "warning"  # worth a look; the start goes ahead
    ERROR = "error"  # the start would fail or be blamed wrongly; it is not attempted


@dataclass(frozen=True, slots=True, kw_only=True)
class Check:
    """One preflight check's outcome."""

    name: str
    level: Level
    message: str


@dataclass(frozen=True, slots=True, kw_only=True)
class PreflightReport:
    """Every check, in order; ``ok`` when none is an error."""

    checks: tuple[Check, ...]
    duration_s: float

    @property
    def ok(self) -> bool:
        """True when no check failed."""
        return not self.errors

    @property
    def errors(self) -> tuple[Check, ...]:
        """The failed checks."""
        return tuple(c for c in self.checks if c.level is Level.ERROR)

    @property
    def warnings(self) -> tuple[Check, ...]:
        """The checks that passed with a warning."""
        return tuple(c for c in self.checks if c.level is Level.WARNING)

    def reason(self) -> str:
        """The failed checks as one sentence."""
        return "; ".join(c.message for c in self.errors)


@dataclass(frozen=True, slots=True, kw_only=True)
class ProcessRef:
    """A process as it was seen: the PID and its start time, so a reused PID is not it."""

    pid: int
    create_time: float

    @classmethod
    def of(cls, pid: int) -> ProcessRef | None:
        """The process ``pid`` now, or None when it is gone."""
        try:
            return cls(pid=pid, create_time=psutil.Process(pid).create_time())
        except psutil.Error:
            return None

    def alive(self) -> bool:
        """Whether this very process still runs (a zombie does not count)."""
        return same_process(self.pid, self.create_time)


def process_tree(pid: int) -> tuple[ProcessRef, ...]:
    """The process ``pid`` and all its descendants, as seen now."""
    try:
        root = psutil.Process(pid)
        procs = [root, *root.children(recursive=True)]
    except psutil.Error:
        return ()
    refs = []
    for proc in procs:
        try:
            refs.append(ProcessRef(pid=proc.pid, create_time=proc.create_time()))
        except psutil.Error:
            continue
    return tuple(refs)


def _telling(
    sleep: Callable[[float], None],
    clock: Callable[[], float],
    on_wait: Callable[[str], None] | None,
    timeout_s: float,
    what: Callable[[], str],
) -> Callable[[float], None]:
    """``sleep``, saying what is waited for at the first call and every few seconds."""
    if on_wait is None:
        return sleep
    start = clock()
    told: list[float] = []

    def wait(seconds: float) -> None:
        now = clock()
        if not told or now - told[-1] >= _TELL_EVERY_S:
            told.append(now)
            on_wait(f"waiting for {what()}: {now - start:.1f}s of up to {timeout_s:g}s")
        sleep(seconds)

    return wait


def _wait_until(
    done: Callable[[], bool],
    timeout_s: float,
    clock: Callable[[], float],
    sleep: Callable[[float], None],
) -> bool:
    deadline = clock() + timeout_s
    while True:
        if done():
            return True
        if clock() >= deadline:
            return False
        sleep(_POLL_S)


def run_preflight(
    *,
    port: int | None,
    previous: Sequence[ProcessRef] = (),
    gpu: GpuMonitor | None = None,
    gpu_idle: tuple[GpuMemory, ...] = (),
    model: str | None = None,
    env: Mapping[str, str] | None = None,
    timeout_s: float = 60.0,
    clock: Callable[[], float] = time.monotonic,
    sleep: Callable[[float], None] = time.sleep,
    on_wait: Callable[[str], None] | None = None,
) -> PreflightReport:
    """Run every check before a server start.

    Args:
        port: the port the server will take (None: the server picks; not checked).
        previous: the processes of the previous server, snapshotted before its stop.
        gpu: an open NVML monitor, or None where there is no GPU.
        gpu_idle: each GPU's memory before the campaign's first start.
        model: the ``[server] model`` value.
        env: the server's environment (its cache folders are the ones that matter).
        timeout_s: how long to wait for the port, processes and GPU memory to be released.
        on_wait: called while a check waits (at once, then every 5 s) with what it waits
            for, what holds it, the time waited and the limit.
    """
    start = clock()

    def gpu_holders() -> str:
        pids = gpu.holders() if gpu is not None else ()
        held = describe_holders([(pid, _name(pid)) for pid in pids])
        return f"GPU memory to return to its idle level (held by {held or 'no visible process'})"

    def procs() -> str:
        alive = [p.pid for p in previous if p.alive()]
        shown = describe_holders([(pid, _name(pid)) for pid in alive])
        text = f"{len(alive)} process(es) of the previous server to exit ({shown})"
        held = [h for h in named_port_holders(port) if h[0] in alive] if port is not None else []
        if held:
            text += f" and release port {port} (held by {describe_holders(held)})"
        return text

    def port_held() -> str:
        held = describe_holders(named_port_holders(port)) if port is not None else ""
        return f"port {port} to be released (held by {held or 'no visible process'})"

    def tell(what: Callable[[], str]) -> Callable[[float], None]:
        return _telling(sleep, clock, on_wait, timeout_s, what)

    checks = [
        _check_processes(previous, timeout_s, clock, tell(procs)),
        _check_port(port, previous, timeout_s, clock, tell(port_held)),
        _check_gpu(gpu, gpu_idle, timeout_s, clock, tell(gpu_holders)),
        _check_model(model, env or {}),
        _check_locks(env if env is not None else os.environ),
    ]
    return PreflightReport(checks=tuple(checks), duration_s=clock() - start)


def _name(pid: int) -> str:
    try:
        return psutil.Process(pid).name()
    except psutil.Error:
        return "?"


def _check_processes(
    previous: Sequence[ProcessRef],
    timeout_s: float,
    clock: Callable[[], float],
    sleep: Callable[[float], None],
) -> Check:
    if not previous:
        return Check(name="processes", level=Level.OK, message="no previous server")
    if _wait_until(lambda: not any(p.alive() for p in previous), timeout_s, clock, sleep):
        return Check(name="processes", level=Level.OK, message="previous server's processes gone")
    alive = [str(p.pid) for p in previous if p.alive()]
    return Check(
        name="processes",
        level=Level.ERROR,
        message=(
            f"processes of the previous server still run after {timeout_s:g}s "
            f"(PIDs {', '.join(alive)}); stop them (kill {' '.join(alive)}) and resume"
        ),
    )


def _check_port(
    port: int | None,
    previous: Sequence[ProcessRef],
    timeout_s: float,
    clock: Callable[[], float],
    sleep: Callable[[float], None],
) -> Check:
    if port is None:
        return Check(name="port", level=Level.SKIPPED, message="no port to check")
    holders = [] if port_is_free(port) else named_port_holders(port)
    ours = {p.pid for p in previous}
    # only the previous server's stop releases a port by itself: wait for that, and
    # fail at once when the port belongs to someone else (or there was no server before)
    foreign = bool(holders) and all(pid is not None and pid not in ours for pid, _ in holders)
    wait_s = 0.0 if not previous or foreign else timeout_s
    if _wait_until(lambda: port_is_free(port), wait_s, clock, sleep):
        return Check(name="port", level=Level.OK, message=f"port {port} is free")
    holders = named_port_holders(port) or holders
    who = f" by {describe_holders(holders)}" if holders else ""
    waited = f" after {timeout_s:g}s" if wait_s else ""
    return Check(
        name="port",
        level=Level.ERROR,
        message=(
            f"port {port} is in use{who}{waited}; stop that server or set [server] port "
            'to a free port (or "auto")'
        ),
    )


def _check_gpu(
    gpu: GpuMonitor | None,
    idle: tuple[GpuMemory, ...],
    timeout_s: float,
    clock: Callable[[], float],
    sleep: Callable[[float], None],
) -> Check:
    if gpu is None or not idle:
        return Check(name="gpu", level=Level.SKIPPED, message="no NVIDIA GPU: memory not checked")
    try:
        result = wait_released(
            idle, gpu.memory, timeout_s=timeout_s, holders=gpu.holders, clock=clock, sleep=sleep
        )
    except NvmlError as exc:
        return Check(name="gpu", level=Level.WARNING, message=f"NVML failed ({exc}): not checked")
    level = Level.OK if result.released else Level.ERROR
    return Check(name="gpu", level=level, message=result.describe())


def _check_model(model: str | None, env: Mapping[str, str]) -> Check:
    if model is None:
        return Check(name="model", level=Level.SKIPPED, message="no [server] model given")
    if model.startswith(("/", "./", "../", "~")) or Path(model).exists():
        path = Path(model).expanduser()
        if path.exists():
            return Check(name="model", level=Level.OK, message=f"model path {path} exists")
        return Check(
            name="model",
            level=Level.ERROR,
            message=f"model path {path} does not exist; fix [server] model or copy the model there",
        )
    hub = _hub_cache(env) / ("models--" + model.replace("/", "--"))
    if hub.exists():
        return Check(name="model", level=Level.OK, message=f"model {model} is in {hub.parent}")
    return Check(
        name="model",
        level=Level.WARNING,
        message=(
            f"model {model} is not a local path and not in the Hugging Face cache "
            f"({hub.parent}); the first start downloads it, which counts in its startup time"
        ),
    )


def _hub_cache(env: Mapping[str, str]) -> Path:
    def get(key: str) -> str | None:
        return env.get(key) or os.environ.get(key)

    if cache := get("HF_HUB_CACHE"):
        return Path(cache).expanduser()
    home = get("HF_HOME") or str(Path(get("XDG_CACHE_HOME") or "~/.cache") / "huggingface")
    return Path(home).expanduser() / "hub"


# --- JIT cache locks ---------------------------------------------------------------------


def jit_cache_dirs(env: Mapping[str, str]) -> list[Path]:
    """The JIT and compile cache folders a server with environment ``env`` (added to
    ours) would use: the folders whose caches a start measures (``startup.caches``)."""
    return lock_dirs({**os.environ, **env})


@dataclass(frozen=True, slots=True, kw_only=True)
class StaleLock:
    """A lock file that may make the next JIT build wait forever."""

    path: Path
    why: str


def stale_locks(dirs: Iterable[Path]) -> list[StaleLock]:
    """Lock files in ``dirs`` that are held by a process, or left behind by a killed build.

    ``*.lock`` files (filelock, flock-based) are normal when nobody holds them; one that
    is held while no server runs is a leftover of a killed run. A file named ``lock`` is
    torch's ``FileBaton`` (existence-based): it is deleted when a build finishes, so one
    that exists is left over unless another build is running right now.
    """
    held = _held_locks()
    found = []
    for path in _lock_files(dirs):
        try:
            stat = path.stat()
        except OSError:
            continue
        holder = held.get((os.major(stat.st_dev), os.minor(stat.st_dev), stat.st_ino))
        age = max(0.0, time.time() - stat.st_mtime)
        if holder is not None:
            found.append(StaleLock(path=path, why=f"held by {_describe_pid(holder)}"))
        elif path.name == "lock":
            found.append(StaleLock(path=path, why=f"left by a build {_age(age)} ago"))
    return found


def _lock_files(dirs: Iterable[Path]) -> Iterator[Path]:
    budget = _MAX_SCAN_ENTRIES
    for top in dirs:
        if not top.is_dir():
            continue
        base_depth = len(top.parts)
        for root, subdirs, files in os.walk(top, followlinks=False):
            budget -= len(files) + len(subdirs)
            if budget <= 0:
                return
            if len(Path(root).parts) - base_depth >= _MAX_SCAN_DEPTH:
                subdirs.clear()
            for name in files:
                if name == "lock" or name.endswith(".lock"):
                    yield Path(root) / name


def _held_locks() -> dict[tuple[int, int, int], int]:
    """(device major, minor, inode) -> PID for every lock in /proc/locks (Linux)."""
    try:
        text = Path("/proc/locks").read_text()
    except OSError:
        return {}
    held: dict[tuple[int, int, int], int] = {}
    for line in text.splitlines():
        fields = line.split()
        # "1: FLOCK  ADVISORY  WRITE 1234 fd:01:5678 0 EOF"; blocked waiters start with "->"
        if len(fields) < 6 or fields[1] == "->":
            continue
        try:
            major, minor, inode = fields[5].split(":")
            held[(int(major, 16), int(minor, 16), int(inode))] = int(fields[4])
        except ValueError:
            continue
    return held


def _describe_pid(pid: int) -> str:
    try:
        proc = psutil.Process(pid)
        return f"PID {pid} ({' '.join(proc.cmdline())[:80] or proc.name()})"
    except psutil.Error:
        return f"PID {pid}, which has exited (a child that inherited the lock may still run)"


def _age(seconds: float) -> str:
    if seconds < 120:
        return f"{seconds:.0f}s"
    if seconds < 7200:
        return f"{seconds / 60:.0f} min"
    return f"{seconds / 3600:.1f} h"


def _check_locks(env: Mapping[str, str]) -> Check:
    locks = stale_locks(jit_cache_dirs(env))
    if not locks:
        return Check(name="jit-locks", level=Level.OK, message="no stale lock in the JIT caches")
    listed = "; ".join(f"{lock.path} ({lock.why})" for lock in locks[:5])
    more = f" and {len(locks) - 5} more" if len(locks) > 5 else ""
    return Check(
        name="jit-locks",
        level=Level.WARNING,
        message=(
            f"lock files in a JIT cache: {listed}{more}; a JIT build can wait forever on a "
            "stale lock: if no other server or build is running, delete them"
        ),
    )
