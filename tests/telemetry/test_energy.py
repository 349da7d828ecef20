"""A point's energy: which GPUs count, the arithmetic, and absence (never zero).

The NVML calls are fed by `Board`, a stand-in with the readings of `EnergyReader`; the
real NVML path runs at the end of this file on a machine with a GPU (skipped elsewhere).
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from servegate.telemetry.energy import (
    Energy,
    EnergyMeter,
    GpuChoice,
    choose_gpus,
    energy_of,
    server_visible_devices,
)
from servegate.telemetry.nvml import Nvml


class Board:
    """GPUs as NVML would show them: counters in mJ, processes, MIG mode, UUIDs."""

    def __init__(
        self,
        counters: list[int],
        *,
        procs: dict[int, list[int]] | None = None,
        mig: set[int] | None = None,
    ) -> None:
        self.counters = counters
        self.procs = procs or {}
        self.migs = mig or set()
        self.closed = 0

    @property
    def count(self) -> int:
        return len(self.counters)

    def energy_mj(self, index: int) -> int:
        return self.counters[index]

    def processes(self, index: int) -> list[tuple[int, int | None]]:
        return [(pid, None) for pid in self.procs.get(index, [])]

    def mig(self, index: int) -> bool:
        return index in self.migs

    def uuid(self, index: int) -> str:
        return f"GPU-{index:04d}-aaaa"

    def close(self) -> None:
        self.closed += 1


class Clock:
    """A clock moved by hand."""

    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


def test_the_gpus_nvml_lists_the_server_tree_on_are_counted() -> None:
    """NVML lists PIDs 11 and 12 of the tree on GPUs 1 and 2: those two, by processes."""
    board = Board([0, 0, 0, 0], procs={1: [11], 2: [12], 3: [99]})
    choice = choose_gpus(board, tree=[10, 11, 12])
    assert choice == GpuChoice(gpus=(1, 2), by="processes")


def test_a_gpu_shared_with_another_process_is_not_counted() -> None:
    """GPU 0 runs the server's PID 11 and a stranger's PID 99: absent, naming the PID."""
    board = Board([0, 0], procs={0: [11, 99]})
    choice = choose_gpus(board, tree=[10, 11])
    assert choice.gpus == ()
    assert choice.reason is not None
    assert "shared with PID 99" in choice.reason


def test_a_gpu_in_mig_mode_is_not_counted() -> None:
    """The server's GPU is in MIG mode: its counter covers every instance, so absent."""
    board = Board([0, 0], procs={1: [11]}, mig={1})
    choice = choose_gpus(board, tree=[11])
    assert choice.gpus == ()
    assert "MIG" in (choice.reason or "")


def test_cuda_visible_devices_when_nvml_lists_no_process_of_the_tree() -> None:
    """No tree PID on any GPU (another PID namespace): the server's CUDA_VISIBLE_DEVICES
    names them, by index or by a UUID's prefix."""
    board = Board([0, 0, 0], procs={0: [5000]})
    assert choose_gpus(board, tree=[11], visible="2,1") == GpuChoice(
        gpus=(2, 1), by="CUDA_VISIBLE_DEVICES"
    )
    assert choose_gpus(board, tree=[11], visible="GPU-0001").gpus == (1,)
    assert choose_gpus(board, tree=[11], visible="").gpus == ()
    assert "MIG" in (choose_gpus(board, tree=[11], visible="MIG-abc").reason or "")
    assert "no GPU of this machine" in (choose_gpus(board, tree=[11], visible="7").reason or "")


def test_neither_processes_nor_cuda_visible_devices_is_absent_with_the_reason() -> None:
    """No tree PID on a GPU and no CUDA_VISIBLE_DEVICES: nothing is counted, said why."""
    choice = choose_gpus(Board([0]), tree=[11], visible=None)
    assert choice.gpus == ()
    assert "CUDA_VISIBLE_DEVICES" in (choice.reason or "")


def test_given_gpus_win_and_are_checked_against_the_machine() -> None:
    """--gpus 1 counts GPU 1 whatever NVML lists; --gpus 4 on a 2-GPU machine is absent;
    without --gpus and without the server's tree (bench --url) nothing is counted."""
    board = Board([0, 0], procs={0: [11]})
    assert choose_gpus(board, given=[1], tree=[11]) == GpuChoice(gpus=(1,), by="--gpus")
    assert "GPUs 0-1" in (choose_gpus(board, given=[4]).reason or "")
    assert "--gpus" in (choose_gpus(board).reason or "")


def test_the_arithmetic_of_energy_power_per_token_and_cost() -> None:
    """Two GPUs use 3000 J and 1000 J over 20 s for 8000 output tokens at $2.50 per
    GPU-hour: 4000 J, 200 W, 0.5 J/token, and 2 x 20/3600 h x 2.5 / 8000 x 1e6 dollars."""
    energy = energy_of(
        choice=GpuChoice(gpus=(0, 1), by="processes"),
        before_mj=[1_000_000, 5_000_000],
        after_mj=[4_000_000, 6_000_000],
        window_s=20.0,
        output_tokens=8000,
        price_per_gpu_hour=2.5,
        started_unix=1000.0,
    )
    assert energy.energy_j == pytest.approx(4000.0)
    assert energy.per_gpu_j == pytest.approx((3000.0, 1000.0))
    assert energy.mean_power_w == pytest.approx(200.0)
    assert energy.joules_per_output_token == pytest.approx(0.5)
    expected_usd = 2 * 20.0 / 3600.0 * 2.5 / 8000 * 1e6
    assert energy.usd_per_million_output_tokens == pytest.approx(expected_usd)
    assert energy.ended_unix == pytest.approx(1020.0)


def test_no_price_no_cost_and_no_tokens_no_per_token_figure() -> None:
    """Without a price the cost is None; with no output token the per-token figures are
    None (not 0, not infinite), while the energy itself stands."""
    energy = energy_of(
        choice=GpuChoice(gpus=(0,), by="--gpus"),
        before_mj=[0],
        after_mj=[500_000],
        window_s=10.0,
        output_tokens=0,
        price_per_gpu_hour=3.0,
    )
    assert (energy.energy_j, energy.joules_per_output_token) == (500.0, None)
    assert energy.usd_per_million_output_tokens is None
    assert energy_of(
        choice=GpuChoice(gpus=(0,), by="--gpus"), before_mj=[0], after_mj=[1000],
        window_s=1.0, output_tokens=10, price_per_gpu_hour=None,
    ).usd_per_million_output_tokens is None  # fmt: skip


def test_a_counter_that_went_back_is_absent_not_negative() -> None:
    """A counter lower after than before (a driver reload) gives no figure, and why."""
    energy = energy_of(
        choice=GpuChoice(gpus=(0,), by="--gpus"),
        before_mj=[9000],
        after_mj=[100],
        window_s=5.0,
        output_tokens=10,
        price_per_gpu_hour=None,
    )
    assert energy.energy_j is None
    assert energy.mean_power_w is None
    assert "went back" in (energy.reason or "")


def test_the_meter_reads_the_counters_at_begin_and_end_and_closes_nvml() -> None:
    """begin reads the chosen GPU's counter; the board's counter moves by 12 kJ while the
    clock moves 30 s; end gives 12000 J and 400 W, and NVML is closed once."""
    board = Board([7_000_000, 0], procs={0: [42]})
    clock = Clock()
    meter = EnergyMeter(
        server_pids=lambda: [41, 42], open_reader=lambda: board, clock=clock, wall=clock
    )
    meter.begin()
    board.counters[0] += 12_000_000
    board.counters[1] += 99_000_000  # another GPU's work: not counted
    clock.now += 30.0
    energy = meter.end(output_tokens=6000)
    assert (energy.gpus, energy.by) == ((0,), "processes")
    assert energy.energy_j == pytest.approx(12000.0)
    assert energy.mean_power_w == pytest.approx(400.0)
    assert energy.joules_per_output_token == pytest.approx(2.0)
    assert (energy.started_unix, energy.ended_unix) == (100.0, 130.0)
    assert board.closed == 1
    meter.close()
    assert board.closed == 1


def test_without_nvml_every_figure_is_none_and_nothing_is_shown() -> None:
    """No NVML (open gives None): the figures are null in JSON, gpu_seen is False."""
    meter = EnergyMeter(gpus=[0], price_per_gpu_hour=2.0, open_reader=lambda: None)
    meter.begin()
    energy = meter.end(output_tokens=100)
    data = energy.to_json()
    figures = ("energy_j", "mean_power_w", "joules_per_output_token")
    assert [data[k] for k in (*figures, "usd_per_million_output_tokens")] == [None] * 4
    assert data["gpu_seen"] is False
    assert "no NVIDIA GPU" in data["reason"]


def test_a_refused_counter_is_absent_with_nvml_s_words() -> None:
    """A GPU without an energy counter (NVML refuses): absent, the refusal quoted."""

    class NoCounter(Board):
        def energy_mj(self, index: int) -> int:
            raise RuntimeError("Not Supported")

    meter = EnergyMeter(gpus=[0], open_reader=lambda: NoCounter([0]))
    meter.begin()
    energy = meter.end(output_tokens=10)
    assert energy == Energy(gpu_seen=True, reason="NVML refused the energy counter (Not Supported)")


def test_server_visible_devices_reads_the_process_environment(tmp_path: Path) -> None:
    """CUDA_VISIBLE_DEVICES of a real child process, read from /proc; None when unset."""
    env = {**os.environ, "CUDA_VISIBLE_DEVICES": "3,1"}
    # the child says it runs before its environment is read: right after exec returns in
    # the parent, the kernel may not have laid the new environment out yet (seen under load)
    code = "import sys; print('up', flush=True); sys.stdin.read()"
    pipe = subprocess.PIPE
    with subprocess.Popen([sys.executable, "-c", code], env=env, stdin=pipe, stdout=pipe) as child:
        try:
            assert child.stdout is not None and child.stdout.readline() == b"up\n"
            assert server_visible_devices([child.pid]) == "3,1"
        finally:
            assert child.stdin is not None
            child.stdin.close()
    bare = {k: v for k, v in os.environ.items() if k != "CUDA_VISIBLE_DEVICES"}
    with subprocess.Popen([sys.executable, "-c", code], env=bare, stdin=pipe, stdout=pipe) as child:
        try:
            assert child.stdout is not None and child.stdout.readline() == b"up\n"
            assert server_visible_devices([child.pid]) is None
        finally:
            assert child.stdin is not None
            child.stdin.close()


HAS_GPU = Nvml.open() is not None


@pytest.mark.skipif(not HAS_GPU, reason="needs an NVIDIA GPU and its driver")
def test_real_nvml_counter_moves_and_gives_a_positive_power() -> None:
    """On a GPU machine: GPU 0's counter read over half a second of a busy loop gives a
    positive energy and a mean power above 1 W (an idle H200 draws about 70 W)."""
    import time

    meter = EnergyMeter(gpus=[0])
    meter.begin()
    deadline = time.monotonic() + 0.5
    while time.monotonic() < deadline:
        pass
    energy = meter.end(output_tokens=1)
    assert energy.energy_j is not None, energy.reason
    assert energy.mean_power_w is not None
    assert energy.mean_power_w > 1.0
