"""The flight recorder's sampler: a server's process tree, host network and GPUs, every period.

    sampler = Sampler(server_pid, period_s=1.0, zero=gate_started_mono).start()
    ...
    sampler.latest()        # the newest Snapshot, or None
    sampler.snapshots()     # a copy of the series kept so far
    sampler.stop()          # joins the thread; safe to call twice

**A background thread, not a timer in the caller's loop.** The gate's loop decides
within milliseconds of an event; a sample reads two /proc files per process (about 20 us
each) and asks NVML for four values per GPU, and an NVML call can block for tens of
milliseconds when the driver is busy (a server allocating its KV cache is exactly
then). In a thread none of that delays a verdict; the thread holds the GIL only while it
parses (about 1 ms for a 64-process tree: benchmarks/README.md, "Telemetry cost"). The same
object also serves callers without an event loop (the campaign runner during a bench).

**The tree, read from /proc directly** (psutil costs several times more per process,
benchmarks/telemetry_cost.py). Every sample lists /proc, and reads the ``stat`` of each PID it
has not seen before: a process belongs to the tree when its parent does or when it is in
the root's session (the keeper starts servers as session leaders, and a worker whose
parent died is re-parented to the keeper, not to the server). A PID already judged
outside the tree is never read again: a process cannot join a tree later. Then each
member's ``stat`` (state, CPU ticks, threads, RSS) and ``io`` (read/write bytes) are
read. Processes that vanish between the listing and the read are skipped.

**Rates** (CPU %, disk and network bytes per second) cover the time since the previous
sample; a process first seen after the first sample started since then, so its whole
counter counts. The first snapshot's rates are 0. Disk bytes are ``read_bytes`` and
``write_bytes`` of /proc/PID/io (what reached the block layer; a read served by the page
cache is not disk); they need the same user (else that process's I/O counts 0).
Network is the host's (this network namespace's) received bytes, loopback excluded.

**GPUs through NVML**, initialised once in the thread; without the library, a driver or
a GPU, ``gpus`` is () in every snapshot and nothing is reported. Per GPU: memory used
by everything, memory used by the tree's PIDs (compute and graphics processes; in a
container whose PID namespace differs from the driver's this reads 0), utilization and
power.

**Bounded memory: decimation, newest kept at full detail.** At most ``max_snapshots``
snapshots (default 3600) are kept. The newest ``recent`` (default 600) keep every
sample and every process; a snapshot older than that keeps only its
``procs_kept`` (8) busiest processes (the totals stay exact). When the series is full,
every other snapshot of the part older than ``recent`` is dropped, so a long run keeps
its whole span at a coarser step further back, and the last ``recent`` samples at full
step. Peaks and CPU seconds (``summary()``) are kept apart, exact over every sample.

Nothing here raises into the caller: a failing read is skipped, and an unexpected
error in the thread ends sampling quietly (``error`` says why).
"""

from __future__ import annotations

import contextlib
import os
import threading
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING

from servegate.telemetry.model import GpuSample, ProcSample, Snapshot
from servegate.telemetry.summary import TelemetrySummary

if TYPE_CHECKING:
    from servegate.telemetry.nvml import Nvml

__all__ = ["Sampler", "Stat", "net_rx_bytes", "read_stat", "trimmed"]

_CLK_TCK = os.sysconf("SC_CLK_TCK")
_PAGE = os.sysconf("SC_PAGE_SIZE")
DEFAULT_MAX_SNAPSHOTS = 3600
DEFAULT_RECENT = 600
DEFAULT_PROCS_KEPT = 8


@dataclass(frozen=True, slots=True)
class Stat:
    """The fields of /proc/PID/stat that the sampler uses."""

    pid: int
    name: str
    state: str
    ppid: int
    session: int
    ticks: int  # utime + stime
    threads: int
    start: int  # start time in ticks since boot (tells a reused PID)
    rss_bytes: int


def read_stat(pid: int, proc: str = "/proc") -> Stat | None:
    """/proc/PID/stat parsed, or None when the process is gone or unreadable."""
    try:
        with open(f"{proc}/{pid}/stat", "rb") as file:
            raw = file.read()
    except OSError:
        return None
    # the name is in parentheses and may itself hold spaces and ')'
    close = raw.rfind(b")")
    if close < 0:
        return None
    name = raw[raw.find(b"(") + 1 : close].decode(errors="replace")
    fields = raw[close + 2 :].split()
    try:
        return Stat(
            pid=pid,
            name=name,
            state=fields[0].decode(),
            ppid=int(fields[1]),
            session=int(fields[3]),
            ticks=int(fields[11]) + int(fields[12]),
            threads=int(fields[17]),
            start=int(fields[19]),
            rss_bytes=int(fields[21]) * _PAGE,
        )
    except (IndexError, ValueError):
        return None


def _read_io(pid: int, proc: str) -> tuple[int, int]:
    """(read_bytes, write_bytes) of /proc/PID/io; (0, 0) when unreadable."""
    try:
        with open(f"{proc}/{pid}/io", "rb") as file:
            raw = file.read()
    except OSError:
        return 0, 0
    read = write = 0
    for line in raw.splitlines():
        if line.startswith(b"read_bytes:"):
            read = int(line[11:])
        elif line.startswith(b"write_bytes:"):
            write = int(line[12:])
    return read, write


def net_rx_bytes(path: str = "/proc/net/dev") -> int:
    """Bytes received on every interface but loopback, since boot; 0 when unreadable."""
    try:
        with open(path, "rb") as file:
            lines = file.read().splitlines()[2:]
    except OSError:
        return 0
    total = 0
    for line in lines:
        name, _, rest = line.partition(b":")
        if name.strip() == b"lo" or not rest:
            continue
        with contextlib.suppress(ValueError, IndexError):
            total += int(rest.split()[0])
    return total


class _Nvml:
    """NVML opened once: per GPU memory, memory of given PIDs, utilization, power."""

    def __init__(self, nvml: Nvml, names: list[str]) -> None:
        self.nvml = nvml
        self.names = names

    @classmethod
    def open(cls) -> _Nvml | None:
        """None without the library, a driver or a GPU."""
        try:
            from servegate.telemetry.nvml import Nvml

            nvml = Nvml.open()
        except Exception:
            return None
        if nvml is None:
            return None
        try:
            names = [nvml.name(index) for index in range(nvml.count)]
        except Exception:
            nvml.close()
            return None
        return cls(nvml, names)

    def close(self) -> None:
        """End the NVML session."""
        self.nvml.close()

    def sample(self, pids: set[int]) -> tuple[GpuSample, ...]:
        """Every GPU now; a value NVML refuses reads 0 (power: None)."""
        nvml = self.nvml
        out = []
        for index in range(nvml.count):
            used = total = tree = 0
            util = 0.0
            power: float | None = None
            with contextlib.suppress(Exception):
                used, total = nvml.memory(index)
            with contextlib.suppress(Exception):
                util = nvml.utilization_pct(index)
            with contextlib.suppress(Exception):
                power = nvml.power_w(index)
            seen: set[int] = set()
            with contextlib.suppress(Exception):
                for pid, memory in nvml.processes(index):
                    if pid in pids and pid not in seen and memory is not None:
                        seen.add(pid)
                        tree += memory
            out.append(
                GpuSample(
                    index=index,
                    name=self.names[index],
                    mem_used_bytes=used,
                    mem_tree_bytes=tree,
                    mem_total_bytes=total,
                    util_pct=util,
                    power_w=power,
                )
            )
        return tuple(out)


class Sampler:
    """Sample a process tree, the host's network and the GPUs every ``period_s`` seconds.

    Args:
        root_pid: the server's main process; None: no tree (network and GPUs only).
        period_s: seconds between samples (``set_period`` changes it while running).
        gpus: read GPUs through NVML (False: never load it).
        zero: the ``time.monotonic()`` that ``Snapshot.t_s`` counts from (the gate's
            start); default: when ``start()`` is called.
        max_snapshots, recent, procs_kept: the memory bound (see the module doc).
        proc: the procfs mount (tests may point elsewhere).
        on_sample: called on the sampler's thread with each new snapshot (a live status
            line); its errors are ignored.
    """

    def __init__(
        self,
        root_pid: int | None,
        *,
        period_s: float = 1.0,
        gpus: bool = True,
        zero: float | None = None,
        max_snapshots: int = DEFAULT_MAX_SNAPSHOTS,
        recent: int = DEFAULT_RECENT,
        procs_kept: int = DEFAULT_PROCS_KEPT,
        proc: str = "/proc",
        on_sample: Callable[[Snapshot], None] | None = None,
    ) -> None:
        if not period_s > 0:
            raise ValueError(f"period_s must be positive, not {period_s}")
        if not 0 < recent < max_snapshots:
            raise ValueError("recent must be positive and below max_snapshots")
        self.root_pid = root_pid
        self.period_s = float(period_s)
        self.zero = zero
        self.error: str | None = None  # why the thread ended early, if it did
        self._gpus_wanted = gpus
        self._max = max_snapshots
        self._recent = recent
        self._procs_kept = procs_kept
        self._proc = proc
        self._on_sample = on_sample
        self._lock = threading.Lock()
        self._wake = threading.Event()
        self._stopping = False
        self._thread: threading.Thread | None = None
        self._series: list[Snapshot] = []
        # the tree: member PID -> (start ticks, CPU ticks, read bytes, write bytes)
        self._members: dict[int, tuple[int, int, int, int]] = {}
        self._outside: set[int] = set()  # PIDs judged not in the tree
        self._root_session: int | None = None
        self._prev_t: float | None = None
        self._prev_net = 0
        # exact over every sample, whatever decimation dropped
        self._count = 0
        self._cpu_s = 0.0
        self._peak_rss = 0
        self._peak_gpu = 0
        self._peak_gpu_tree = 0
        self._peak_procs = 0

    # -- the caller's side ------------------------------------------------------------

    def start(self) -> Sampler:
        """Start sampling in a daemon thread (the first sample is taken at once)."""
        if self._thread is not None:
            return self
        if self.zero is None:
            self.zero = time.monotonic()
        self._thread = threading.Thread(target=self._run, name="servegate-sampler", daemon=True)
        self._thread.start()
        return self

    def stop(self) -> None:
        """Stop sampling and wait for the thread; safe to call twice, or before start."""
        self._stopping = True
        self._wake.set()
        thread = self._thread
        if thread is not None and thread is not threading.current_thread():
            thread.join()

    def sample_now(self) -> Snapshot | None:
        """Take one more sample on the caller's thread, once ``stop()`` has returned: the
        moment of a verdict, which the period may have missed (a peak). It joins the
        series and the summary; None when nothing was sampled before or it fails."""
        thread = self._thread
        if thread is None or thread.is_alive() or self._prev_t is None:
            return None
        nvml = _Nvml.open() if self._gpus_wanted else None
        try:
            self._sample(nvml)
        except Exception as exc:  # the last sample must never cost what came before
            self.error = f"{exc.__class__.__name__}: {exc}"
            return None
        finally:
            if nvml is not None:
                nvml.close()
        return self.latest()

    def set_period(self, period_s: float) -> None:
        """Sample every ``period_s`` seconds from now on (e.g. less often once READY)."""
        if period_s > 0:
            self.period_s = float(period_s)
            self._wake.set()

    def snapshots(self) -> list[Snapshot]:
        """A copy of the series kept so far, oldest first."""
        with self._lock:
            return list(self._series)

    def latest(self) -> Snapshot | None:
        """The newest snapshot, or None before the first one."""
        with self._lock:
            return self._series[-1] if self._series else None

    def summary(self) -> TelemetrySummary:
        """Sample count, CPU seconds and peaks over every sample taken (not only those kept)."""
        with self._lock:
            return TelemetrySummary(
                samples=self._count,
                period_s=self.period_s,
                cpu_s=round(self._cpu_s, 3),
                peak_rss_bytes=self._peak_rss,
                peak_processes=self._peak_procs,
                peak_gpu_mem_bytes=self._peak_gpu,
                peak_gpu_tree_bytes=self._peak_gpu_tree,
            )

    def __enter__(self) -> Sampler:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    # -- the thread -------------------------------------------------------------------

    def _run(self) -> None:
        nvml: _Nvml | None = None
        try:
            if self._gpus_wanted:
                nvml = _Nvml.open()
            assert self.zero is not None
            next_at = time.monotonic()
            period = self.period_s
            while not self._stopping:
                self._sample(nvml)
                if self.period_s != period:  # set_period: the new step starts now
                    period = self.period_s
                    next_at = time.monotonic()
                next_at += period
                now = time.monotonic()
                if next_at < now:  # a slow sample (or a suspended machine): no catch-up burst
                    next_at = now + period
                self._wake.wait(next_at - now)
                self._wake.clear()
        except Exception as exc:
            self.error = f"{exc.__class__.__name__}: {exc}"
        finally:
            if nvml is not None:
                nvml.close()

    def _tree(self) -> dict[int, Stat]:
        """The tree's processes now: new PIDs are judged once, members re-read."""
        root = self.root_pid
        if root is None:
            return {}
        try:
            listing = [int(name) for name in os.listdir(self._proc) if name.isdigit()]
        except OSError:
            return {}
        alive = set(listing)
        self._outside &= alive
        stats: dict[int, Stat] = {}
        fresh: dict[int, Stat] = {}
        for pid in listing:
            if pid in self._outside:
                continue
            stat = read_stat(pid, self._proc)
            if stat is None:
                continue
            known = self._members.get(pid)
            if known is not None and known[0] == stat.start:
                stats[pid] = stat
            else:
                fresh[pid] = stat
        if root not in stats and root in fresh:
            stats[root] = fresh.pop(root)
            self._root_session = stats[root].session
        # new processes join through a parent in the tree (in any order) or the session
        session = self._root_session if self._root_session == root else None
        changed = True
        while changed and fresh:
            changed = False
            for pid in list(fresh):
                stat = fresh[pid]
                if stat.ppid in stats or (session is not None and stat.session == session):
                    stats[pid] = fresh.pop(pid)
                    changed = True
        self._outside.update(fresh)
        return stats

    def _sample(self, nvml: _Nvml | None) -> None:
        now = time.monotonic()
        stats = self._tree()
        first = self._prev_t is None
        dt = 0.0 if self._prev_t is None else max(now - self._prev_t, 1e-6)
        members: dict[int, tuple[int, int, int, int]] = {}
        procs = []
        tree_ticks = lifetime_ticks = 0
        read_delta = write_delta = 0
        rss = threads = 0
        for pid, stat in stats.items():
            read, write = _read_io(pid, self._proc)
            before = self._members.get(pid)
            members[pid] = (stat.start, stat.ticks, read, write)
            if first:
                ticks = 0
                lifetime_ticks += stat.ticks  # before the first sample: in the total only
            elif before is not None:
                ticks = max(0, stat.ticks - before[1])
                read_delta += max(0, read - before[2])
                write_delta += max(0, write - before[3])
            else:  # started since the previous sample: all of it is new
                ticks = stat.ticks
                read_delta += read
                write_delta += write
            tree_ticks += ticks
            rss += stat.rss_bytes
            threads += stat.threads
            procs.append(
                ProcSample(
                    pid=pid,
                    name=stat.name,
                    cpu_pct=round(100.0 * ticks / _CLK_TCK / dt, 1) if dt else 0.0,
                    rss_bytes=stat.rss_bytes,
                    threads=stat.threads,
                    state=stat.state,
                )
            )
        self._members = members
        net = net_rx_bytes(f"{self._proc}/net/dev")
        net_rate = max(0, net - self._prev_net) / dt if dt else 0.0
        self._prev_net = net
        self._prev_t = now
        gpus = nvml.sample(set(stats)) if nvml is not None else ()
        assert self.zero is not None
        procs.sort(key=lambda p: (-p.cpu_pct, -p.rss_bytes))
        snapshot = Snapshot(
            t_s=round(now - self.zero, 3),
            cpu_pct=round(100.0 * tree_ticks / _CLK_TCK / dt, 1) if dt else 0.0,
            rss_bytes=rss,
            threads=threads,
            processes=len(stats),
            read_bps=round(read_delta / dt, 1) if dt else 0.0,
            write_bps=round(write_delta / dt, 1) if dt else 0.0,
            net_rx_bps=round(net_rate, 1),
            procs=tuple(procs),
            gpus=gpus,
        )
        self._keep(snapshot, (tree_ticks + lifetime_ticks) / _CLK_TCK)

    def _keep(self, snapshot: Snapshot, cpu_s: float) -> None:
        with self._lock:
            self._count += 1
            self._cpu_s += cpu_s
            self._peak_rss = max(self._peak_rss, snapshot.rss_bytes)
            self._peak_procs = max(self._peak_procs, snapshot.processes)
            self._peak_gpu = max(self._peak_gpu, sum(g.mem_used_bytes for g in snapshot.gpus))
            self._peak_gpu_tree = max(
                self._peak_gpu_tree, sum(g.mem_tree_bytes for g in snapshot.gpus)
            )
            series = self._series
            series.append(snapshot)
            aged = len(series) - self._recent - 1
            if aged >= 0 and len(series[aged].procs) > self._procs_kept:
                series[aged] = replace(series[aged], procs=series[aged].procs[: self._procs_kept])
            if len(series) > self._max:
                cut = len(series) - self._recent
                self._series = series[:cut:2] + series[cut:]
        if self._on_sample is not None and not self._stopping:
            with contextlib.suppress(Exception):  # a display's trouble never stops sampling
                self._on_sample(snapshot)


def trimmed(snapshots: Iterable[Snapshot], procs: int = DEFAULT_PROCS_KEPT) -> list[Snapshot]:
    """The snapshots with at most ``procs`` processes each (the busiest), for transfer and store."""
    return [s if len(s.procs) <= procs else replace(s, procs=s.procs[:procs]) for s in snapshots]
