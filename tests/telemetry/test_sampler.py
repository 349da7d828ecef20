"""The sampler on real process trees: CPU, RSS, threads, disk, tree changes, bounds."""

from __future__ import annotations

import os
import threading
import time
from itertools import pairwise
from pathlib import Path

from servegate.telemetry import Sampler, summarize
from servegate.telemetry.sampler import read_stat

from .helpers import tree, wait_for


def test_64_process_tree_busy_and_idle() -> None:
    """All 64 processes are found; the spinning one shows high CPU, the sleeping ones ~0."""
    with tree("64") as root:
        assert root.stdout is not None
        busy = int(root.stdout.readline())
        with Sampler(root.pid, period_s=0.25, gpus=False) as sampler:
            ready_at = time.monotonic() - (sampler.zero or 0.0)
            # a snapshot whose interval began after every sleeper was asleep
            snap = wait_for(
                sampler,
                lambda s: (
                    s.t_s > ready_at + 0.6
                    and any(p.pid == busy and p.cpu_pct >= 20 for p in s.procs)
                ),
            )
    assert snap.processes == 64
    assert len(snap.procs) == 64
    assert snap.procs[0].pid == busy  # busiest first
    idle = [p for p in snap.procs if p.pid not in (busy, root.pid)]
    assert len(idle) == 62
    assert max(p.cpu_pct for p in idle) <= 5.0
    assert all(p.state in "SDR" for p in idle)
    assert snap.cpu_pct >= snap.procs[0].cpu_pct
    assert snap.rss_bytes == sum(p.rss_bytes for p in snap.procs) > 64 * 2**20
    assert snap.threads >= 64
    assert snap.gpus == ()
    summary = sampler.summary()
    assert summary.peak_processes == 64
    assert summary.cpu_s > 0.1
    assert summary.samples == len(sampler.snapshots())


def test_disk_write_rate(tmp_path: Path) -> None:
    """32 MiB written (fsync'd) by a tree member add up to 32 MiB of write rate over time."""
    with tree("writer", str(tmp_path / "data"), stdin=True) as root:
        assert root.stdin is not None and root.stdout is not None
        with Sampler(root.pid, period_s=0.1) as sampler:
            wait_for(sampler, lambda s: True)  # the counters' baseline, before the write
            root.stdin.write("go\n")
            root.stdin.flush()
            assert root.stdout.readline().strip() == "done"
            done_at = time.monotonic() - (sampler.zero or 0.0)
            wait_for(sampler, lambda s: s.t_s > done_at)
        snaps = sampler.snapshots()
    written = sum(b.write_bps * (b.t_s - a.t_s) for a, b in pairwise(snaps))
    assert max(s.write_bps for s in snaps) > 0
    # rate x interval comes back within the rounding of t_s to 1 ms per sample (on a
    # loaded machine an interval of 0.1 s may be read 1 % short or long)
    assert 31.5 * 2**20 <= written <= 34 * 2**20


def test_tree_changes_mid_run() -> None:
    """Children that start and end, and an orphaned grandchild (same session), are tracked."""
    with tree("changes", stdin=True) as root, Sampler(root.pid, period_s=0.05) as sampler:
        assert root.stdin is not None and root.stdout is not None
        wait_for(sampler, lambda s: s.processes == 1)
        root.stdin.write("spawn\nspawn\n")
        root.stdin.flush()
        kids = {int(root.stdout.readline()), int(root.stdout.readline())}
        snap = wait_for(sampler, lambda s: s.processes == 3)
        assert {p.pid for p in snap.procs} == kids | {root.pid}
        root.stdin.write("orphan\n")
        root.stdin.flush()
        orphan = int(root.stdout.readline())
        stat = read_stat(orphan)
        assert stat is not None and stat.ppid != root.pid  # re-parented, not our child
        # a sample may still show its parent, which forked it and then exited: wait for
        # one taken after that exit (the root, its two children and the orphan)
        snap = wait_for(sampler, lambda s: orphan in {p.pid for p in s.procs} and s.processes == 4)
        assert {p.pid for p in snap.procs} == kids | {root.pid, orphan}
        root.stdin.write("reap\n")
        root.stdin.flush()
        assert root.stdout.readline().strip() == "reaped"
        snap = wait_for(sampler, lambda s: s.processes == 2)
        assert {p.pid for p in snap.procs} == {root.pid, orphan}
    assert sampler.error is None


def test_root_gone_and_stop_twice() -> None:
    """A root that exits leaves an empty tree, never an error; stop() is idempotent."""
    sampler = Sampler(os.getpid(), period_s=0.05, gpus=False)
    sampler.stop()  # before start: nothing to do
    with tree("changes", stdin=True) as root:
        sampler = Sampler(root.pid, period_s=0.05).start()
        wait_for(sampler, lambda s: s.processes == 1)
        assert root.stdin is not None
        root.stdin.close()  # it exits at end of input
        root.wait()
        wait_for(sampler, lambda s: s.processes == 0)
    sampler.stop()
    sampler.stop()
    assert sampler.error is None
    assert not any(t.name == "servegate-sampler" for t in threading.enumerate())


def test_no_root_samples_host_only() -> None:
    """Without a root PID the series still runs (network, GPUs), with an empty tree."""
    with Sampler(None, period_s=0.05) as sampler:
        wait_for(sampler, lambda s: s.t_s > 0.1)
    snaps = sampler.snapshots()
    assert len(snaps) >= 2
    assert all(s.processes == 0 and s.procs == () for s in snaps)
    assert all(s.net_rx_bps >= 0 for s in snaps)


def test_bounded_by_decimation() -> None:
    """Past max_snapshots, older samples are thinned; the newest stay at full step."""
    with tree("8") as root:
        assert root.stdout is not None
        root.stdout.readline()
        sampler = Sampler(
            root.pid, period_s=0.05, gpus=False, max_snapshots=20, recent=6, procs_kept=2
        ).start()
        try:
            deadline = time.monotonic() + 60
            while sampler.summary().samples < 80 and time.monotonic() < deadline:
                time.sleep(0.05)
        finally:
            sampler.stop()
    snaps = sampler.snapshots()
    summary = sampler.summary()
    assert summary.samples >= 80
    assert len(snaps) <= 20
    times = [s.t_s for s in snaps]
    assert times == sorted(times) and len(set(times)) == len(times)
    assert times[0] < times[-1] - 10 * 0.05  # the span reaches back past the recent part
    assert all(len(s.procs) == 8 for s in snaps[-6:])
    assert all(len(s.procs) <= 2 for s in snaps[:-7])
    assert all(s.processes == 8 for s in snaps[1:])  # totals keep every process
    assert summary.peak_processes == 8
    assert summarize(snaps).peak_processes == 8


def test_set_period() -> None:
    """A long period made short takes effect at once (the thread is woken)."""
    with Sampler(None, period_s=1000.0, gpus=False) as sampler:
        wait_for(sampler, lambda s: True)
        sampler.set_period(0.05)
        wait_for(sampler, lambda s: s.t_s > 0.2, timeout_s=30.0)
    assert len(sampler.snapshots()) >= 3
