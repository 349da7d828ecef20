"""Busy or idle from constructed telemetry: each signal, its floor, the words."""

from __future__ import annotations

from servegate.telemetry.activity import (
    FLOORS,
    Floors,
    activity,
    between,
    phase_activity,
    rate_text,
    window,
)
from servegate.telemetry.model import GpuSample, ProcSample, Snapshot


def snap(
    t: float,
    *,
    cpu: float = 0.0,
    procs: tuple[tuple[int, float], ...] = (),
    read: float = 0.0,
    write: float = 0.0,
    net: float = 0.0,
    gpus: tuple[float, ...] = (),
) -> Snapshot:
    """One snapshot: tree CPU, (pid, cpu) per process, rates, GPU utilizations."""
    return Snapshot(
        t_s=t,
        cpu_pct=cpu,
        rss_bytes=1 << 20,
        threads=4,
        processes=max(1, len(procs)),
        read_bps=read,
        write_bps=write,
        net_rx_bps=net,
        procs=tuple(
            ProcSample(pid=pid, name=f"p{pid}", cpu_pct=pct, rss_bytes=1, threads=1, state="R")
            for pid, pct in procs
        ),
        gpus=tuple(
            GpuSample(
                index=i,
                name="H200",
                mem_used_bytes=0,
                mem_tree_bytes=0,
                mem_total_bytes=1,
                util_pct=u,
                power_w=None,
            )
            for i, u in enumerate(gpus)
        ),
    )


def series(n: int, **kwargs: object) -> list[Snapshot]:
    return [snap(float(t), **kwargs) for t in range(n)]  # type: ignore[arg-type]


def test_one_process_burning_a_core_is_cpu_bound() -> None:
    snaps = series(10, cpu=100.0, procs=((10, 99.6), (11, 0.4)))
    act = activity(snaps, 30.0)
    assert act.busy and act.bound == "cpu"
    assert act.evidence == "1 process at 100 % CPU"
    assert act.window_s == 9.0


def test_several_processes_name_the_tree_total() -> None:
    snaps = series(5, cpu=250.0, procs=((1, 100.0), (2, 100.0), (3, 50.0)))
    assert activity(snaps, 30.0).evidence == "3 processes at 250 % CPU"


def test_disk_reads_and_writes() -> None:
    act = activity(series(5, read=210e6, write=1e6), 30.0)
    assert (act.busy, act.bound, act.evidence) == (True, "disk", "reading 210 MB/s from disk")
    act = activity(series(5, write=3.2e6), 30.0)
    assert act.evidence == "writing 3.2 MB/s to disk"


def test_network_download() -> None:
    act = activity(series(5, net=45e6), 30.0)
    assert (act.bound, act.evidence) == ("network", "receiving 45 MB/s from the network")


def test_gpu_utilization() -> None:
    act = activity(series(5, gpus=(97.0, 0.0)), 30.0)
    assert (act.busy, act.bound, act.evidence) == (True, "gpu", "GPU 0 at 97 %")
    act = activity(series(5, gpus=(95.0, 95.0, 95.0)), 30.0)
    assert act.evidence == "3 GPUs at 95 %"


def test_the_busiest_signal_relative_to_its_floor_comes_first() -> None:
    # CPU at 2x its floor, disk at 50x: disk-bound, CPU mentioned after
    act = activity(series(5, cpu=20.0, procs=((1, 20.0),), read=50e6), 30.0)
    assert act.bound == "disk"
    assert act.evidence == "reading 50 MB/s from disk, 1 process at 20 % CPU"


def test_idle_on_every_signal_says_so_with_the_levels() -> None:
    act = activity(series(10, cpu=0.3, read=0.0, net=2e3, gpus=(0.0,)), 60.0)
    assert not act.busy and act.bound == "idle"
    assert act.evidence == "idle: CPU 0.3 %, disk 0 B/s, network 2.0 kB/s, GPU 0 %"


def test_means_not_peaks_one_blip_is_not_busy() -> None:
    snaps = series(30, cpu=0.5)
    snaps[10] = snap(10.0, cpu=150.0, procs=((1, 150.0),))  # a GC pause, once
    assert not activity(snaps, 30.0).busy
    # but a compile that ended a moment ago, filling a third of the window, is
    snaps = [snap(float(t), cpu=100.0 if t >= 20 else 0.0) for t in range(30)]
    assert activity(snaps, 30.0).busy


def test_only_the_window_counts() -> None:
    snaps = [snap(float(t), cpu=100.0 if t < 50 else 0.0) for t in range(100)]
    assert activity(snaps, 200.0).busy
    assert not activity(snaps, 40.0).busy
    assert [s.t_s for s in window(snaps, 3.0)] == [97.0, 98.0, 99.0]


def test_floors_can_be_given() -> None:
    snaps = series(5, cpu=8.0)
    assert not activity(snaps, 30.0).busy
    assert activity(snaps, 30.0, floors=Floors(cpu_pct=5.0)).busy
    assert FLOORS.cpu_pct == 10.0


def test_no_snapshots_is_no_telemetry() -> None:
    act = activity([], 30.0)
    assert (act.busy, act.evidence, act.window_s) == (False, "no telemetry", 0.0)
    assert act.to_json()["bound"] == "idle"


def test_rate_text() -> None:
    assert [rate_text(x) for x in (0, 999, 12e3, 3.25e6, 210e6, 1.5e9)] == [
        "0 B/s",
        "999 B/s",
        "12 kB/s",
        "3.2 MB/s",
        "210 MB/s",
        "1.5 GB/s",
    ]


def test_real_processes_through_the_sampler() -> None:
    """A real busy loop is CPU-bound; the same tree asleep is idle."""
    import subprocess
    import sys
    import time

    from servegate.telemetry.sampler import Sampler

    code = (
        "import sys,time\nt=time.monotonic()+float(sys.argv[1])\n"
        "while time.monotonic()<t: pass\ntime.sleep(60)"
    )
    proc = subprocess.Popen([sys.executable, "-c", code, "1.5"])
    zero = time.monotonic()
    sampler = Sampler(proc.pid, period_s=0.1, zero=zero).start()
    try:
        busy = None
        while busy is None or not busy.busy:  # wait for the evidence of the loop
            assert proc.poll() is None
            busy = activity(sampler.snapshots(), 0.5)
            if time.monotonic() - zero > 30:
                break
        assert busy is not None and busy.busy and busy.bound == "cpu", busy
        assert busy.evidence.startswith("1 process at ")
        idle = activity(sampler.snapshots(), 0.5)
        while idle.busy or time.monotonic() - zero < 2.2:  # the loop ends at 1.5 s
            assert time.monotonic() - zero < 60
            time.sleep(0.1)
            idle = activity(sampler.snapshots(), 0.5)
        assert idle.bound == "idle" and idle.evidence.startswith("idle: CPU ")
    finally:
        sampler.stop()
        proc.kill()
        proc.wait()


def test_each_phase_gets_what_it_was_bound_by() -> None:
    """Download (disk) for 0-4 s, then compile (CPU) for 4-8 s, then a short idle phase."""
    snaps = [snap(float(t), read=300e6) for t in range(1, 5)]
    snaps += [snap(float(t), cpu=100.0, procs=((7, 100.0),)) for t in range(5, 9)]
    snaps += [snap(9.0), snap(10.0)]
    download = phase_activity(snaps, 0.0, 4.0)
    compile_ = phase_activity(snaps, 4.0, 8.0)
    short = phase_activity(snaps, 8.2, 8.4)  # shorter than a period: the next sample covers it
    assert download is not None and download.bound == "disk"
    assert "reading 300 MB/s from disk" in download.evidence
    assert compile_ is not None and compile_.bound == "cpu"
    assert short is not None and short.bound == "idle"
    assert phase_activity(snaps, 11.0, 12.0) is None  # nothing sampled in or after it
    assert between(snaps, 4.0, 8.0)[0].t_s == 5.0  # the 4 s sample covers 3-4 s
