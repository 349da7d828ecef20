"""Energy per point on a machine without a GPU: the real CLI against the real simulator.

The fields are there and null (never 0), the terminal shows no energy line, and nothing
fails. On a machine with NVML, ``bench --url`` without ``--gpus`` measures nothing
either, and says so on one line.
"""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from tests.conftest import vllm_simulators

from servegate.telemetry.nvml import Nvml

SIM = ("--startup", "0", "--itl-ms", "5", "--ttft-ms", "5")
SHORT = ("--input-len", "8", "--output-len", "6", "--requests", "8")
FIGURES = ("energy_j", "mean_power_w", "joules_per_output_token", "usd_per_million_output_tokens")
HAS_GPU = Nvml.open() is not None


@pytest.fixture
def sim() -> Iterator[Callable[..., str]]:
    """A factory: ``sim(*flags)`` -> the base URL of a running simulator; all are stopped."""
    yield from vllm_simulators()


def bench(*args: str) -> subprocess.CompletedProcess[str]:
    """The command line, output captured."""
    return subprocess.run(
        [sys.executable, "-m", "servegate", "bench", *args],
        capture_output=True,
        text=True,
        check=False,
        timeout=300,
    )


@pytest.mark.skipif(HAS_GPU, reason="the absent path of a machine without a GPU")
def test_no_gpu_gives_null_figures_no_line_and_exit_0(
    sim: Callable[..., str], tmp_path: Path
) -> None:
    """--gpus 0 and a price on a machine without NVML: exit 0, every point's energy
    figures null in --json and --json-file, and no energy line or column on stdout."""
    url = sim(*SIM)
    out = tmp_path / "r.json"
    proc = bench("--url", url, "--concurrency", "1,2", *SHORT, "--gpus", "0",
                 "--price-per-gpu-hour", "2.5", "--json-file", str(out), "-q")  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    points = json.loads(out.read_text())["points"]
    assert len(points) == 2
    for point in points:
        energy = point["energy"]
        assert [energy[k] for k in FIGURES] == [None] * 4
        assert energy["gpus"] == []
        assert energy["gpu_seen"] is False
        assert point["settings"]["gpus"] == [0]
        assert point["settings"]["price_per_gpu_hour"] == 2.5
    assert "energy" not in proc.stdout
    assert "J/out tok" not in proc.stdout
    assert proc.stderr == ""
    streamed = bench("--url", url, *SHORT, "--json", "-q")
    assert streamed.returncode == 0, streamed.stderr
    (point,) = json.loads(streamed.stdout)["points"]
    assert [point["energy"][k] for k in FIGURES] == [None] * 4


def test_bench_url_without_gpus_measures_nothing_on_any_machine(
    sim: Callable[..., str], tmp_path: Path
) -> None:
    """Without --gpus, a server servegate did not launch has no GPUs to count: null
    figures everywhere; with NVML present the one line says --gpus names them."""
    url = sim(*SIM)
    proc = bench("--url", url, *SHORT, "--json", "-q")
    assert proc.returncode == 0, proc.stderr
    (point,) = json.loads(proc.stdout)["points"]
    assert [point["energy"][k] for k in FIGURES] == [None] * 4
    assert point["energy"]["gpu_seen"] is HAS_GPU
    if HAS_GPU:
        assert "--gpus 0,1 names the GPUs" in point["energy"]["reason"]


@pytest.mark.parametrize(
    ("flags", "words"),
    [
        (("--gpus", "0,x"), "--gpus '0,x' must be distinct GPU indexes like 0,1."),
        (("--gpus", "1,1"), "--gpus '1,1' must be distinct GPU indexes like 0,1."),
        (("--price-per-gpu-hour", "-1"), "--price-per-gpu-hour must be a positive number"),
    ],
)
def test_bad_energy_flags_exit_2_with_one_sentence(flags: tuple[str, ...], words: str) -> None:
    """A malformed --gpus or a price that is not positive: exit 2, one line naming it."""
    proc = bench("--url", "http://127.0.0.1:9", *flags)
    assert proc.returncode == 2
    assert words in proc.stderr
    assert len(proc.stderr.strip().splitlines()) == 1


def test_measured_and_unmeasured_energy_as_the_terminal_shows_them(
    sim: Callable[..., str],
) -> None:
    """A real point given a measured energy: the block's energy line has the joules,
    GPUs, mean power, J/token and cost, and the sweep table gains J/out tok and W; an
    energy that GPUs exist for but could not be counted shows its reason instead."""
    from dataclasses import replace

    from servegate.bench import BenchSettings, run_point
    from servegate.cli.bench import render_point, render_sweep
    from servegate.telemetry.energy import Energy

    url = sim(*SIM)
    result = run_point(BenchSettings(url=url, requests=4, input_len=8, output_len=6))
    measured = Energy(
        gpus=(0, 1), by="processes", gpu_seen=True, energy_j=12000.0, mean_power_w=400.0,
        joules_per_output_token=2.5, usd_per_million_output_tokens=1.25,
    )  # fmt: skip
    block = render_point(replace(result, energy=measured))
    assert (
        "  energy              12000.0 J on GPU 0,1 (processes), 400.0 W mean, "
        "2.5 J/output token, $1.25 per million output tokens"
    ) in block.splitlines()
    shared = Energy(gpu_seen=True, reason="GPU 0 is shared with PID 7")
    assert "  energy              not measured: GPU 0 is shared with PID 7" in (
        render_point(replace(result, energy=shared)).splitlines()
    )
    table = render_sweep([replace(result, energy=measured), replace(result, energy=shared)])
    head, first, second = table.splitlines()
    assert head.endswith("J/out tok       W")
    assert first.endswith("2.5   400.0")
    assert second.endswith("-       -")
