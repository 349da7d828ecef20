"""Progress inside phases: the engines' own bars and counters, as the verdict keeps them."""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Callable
from typing import Any

import pytest

from servegate.engines import get_profile
from servegate.gate.verdict import DetectedBy, PhaseProgress, PhaseSpan, Status, Verdict
from servegate.gate.watch import LogWatcher, Rules, parse_amount

from .helpers import PY

# vLLM 0.11 on a GPU, as it prints: tqdm redraws end with \r, not \n
_VLLM = (
    "(Worker pid=3) INFO 01-01 00:00:02 [gpu_model_runner.py:2843] Starting to load model m...\n"
    "Loading safetensors checkpoint shards:   0% Completed | 0/4 [00:00<?, ?it/s]\r"
    "Loading safetensors checkpoint shards:  50% Completed | 2/4 [00:01<00:01,  1.52it/s]\r"
    "Loading safetensors checkpoint shards: 100% Completed | 4/4 [00:02<00:00,  1.50it/s]\n"
    "(Worker pid=3) INFO 01-01 00:00:06 [gpu_model_runner.py:2904] Model loading took 14.0 GiB "
    "and 5.3 seconds\n"
    "(Worker pid=3) INFO 01-01 00:00:07 [backends.py:623] Dynamo bytecode transform time: 4.39 s\n"
    "(Worker pid=3) INFO 01-01 00:00:09 [backends.py:288] Compiling a graph for dynamic shape "
    "takes 15.52 s\n"
    "(Worker pid=3) INFO 01-01 00:00:09 [backends.py:288] Compiling a graph for shape 8 takes "
    "1.02 s\n"
    "(Worker pid=3) INFO 01-01 00:00:11 [monitor.py:34] torch.compile takes 25.11 s in total\n"
    "(Worker pid=3) INFO 01-01 00:00:11 [gpu_worker.py:359] Available KV cache memory: 52.36 GiB\n"
    "(EngineCore pid=2) INFO 01-01 00:00:11 [kv_cache_utils.py:1286] Maximum concurrency for "
    "4096 tokens per request: 100.00x\n"
    "Capturing CUDA graphs (mixed prefill-decode, PIECEWISE):   0%|          | 0/67 "
    "[00:00<?, ?it/s]\r"
    "Capturing CUDA graphs (mixed prefill-decode, PIECEWISE):  52%|#####2    | 35/67 "
    "[00:03<00:03, 10.1it/s]\r"
    "Capturing CUDA graphs (mixed prefill-decode, PIECEWISE): 100%|##########| 67/67 "
    "[00:06<00:00, 10.2it/s]\n"
    "2025-06-08 21:06:35,733 - INFO - flashinfer.jit: Loading JIT ops: cascade\n"
    "(Worker pid=3) INFO 01-01 00:00:18 [gpu_model_runner.py:3480] Graph capturing finished in "
    "7 secs\n"
)

_SGLANG_CUT = (
    "[2025-08-08 03:34:38] Capture cuda graph begin. This can take up to several minutes. "
    "avail mem=1.80 GB\n"
    "  0%|          | 0/35 [00:00<?, ?it/s]"
    "Capturing batches (bs=256 avail_mem=57.52 GB):   0%|          | 0/35 [00:00<?, ?it/s]\r"
    "Capturing batches (bs=248 avail_mem=57.42 GB):  37%|###7      | 13/35 [00:02<00:04,  "
    "5.24it/s]\r"
    "Capturing batches (bs=240 avail_mem=57.40 GB):  40%|####      | 14/35 [00:02<00:04,  "
    "5.30it/s]\r"
)


def _watch(engine: str, text: str, *, chunk: int | None = None) -> tuple[PhaseSpan, ...]:
    watcher = LogWatcher(Rules(get_profile(engine)))
    data = text.encode()
    step = chunk or len(data)
    for at in range(0, len(data), step):
        watcher.feed(data[at : at + step], float(at))
    watcher.peek(float(len(data)))
    return watcher.phases.spans(float(len(data)))


def _by_name(spans: tuple[PhaseSpan, ...]) -> dict[str, PhaseProgress | None]:
    return {span.name: span.progress for span in spans}


@pytest.mark.parametrize("chunk", [None, 1, 7, 64])
def test_vllm_shards_compiles_and_graphs(chunk: int | None) -> None:
    """Shards i/N, compiled graphs counted, CUDA-graph sizes i/N; whatever the reads' cuts."""
    progress = _by_name(_watch("vllm", _VLLM, chunk=chunk))
    assert progress["load_weights"] == PhaseProgress(done=4, total=4, unit="shards")
    assert progress["torch_compile"] == PhaseProgress(done=2, total=None, unit="graphs")
    # a JIT compile inside the capture is counted there, but the i/N bar is what shows
    assert progress["capture_cuda_graphs"] == PhaseProgress(done=67, total=67, unit="batch sizes")


def test_sglang_capture_cut_short_keeps_the_last_redraw() -> None:
    """A capture that stops mid-bar (no line end after the last redraw) shows 14/35."""
    spans = _watch("sglang", _SGLANG_CUT)
    assert spans[-1].name == "capture_cuda_graphs"
    assert spans[-1].progress == PhaseProgress(done=14, total=35, unit="batch sizes")


def test_download_bytes_open_a_download_phase() -> None:
    """huggingface_hub's byte bars (SI suffixes) open ``download`` when nothing is open."""
    text = (
        "model-00001-of-00002.safetensors:   0%|          | 0.00/4.98G [00:00<?, ?B/s]\r"
        "model-00001-of-00002.safetensors:  45%|####5     | 2.25G/4.98G [00:10<00:12, 225MB/s]\n"
        "Fetching 4 files:  25%|##5       | 1/4 [00:10<00:30,  10.0s/it]\n"
    )
    spans = _watch("sglang", text)
    assert [span.name for span in spans] == ["download"]
    # the file count came last and has a total: it is what shows
    assert spans[0].progress == PhaseProgress(done=1, total=4, unit="files")
    bytes_only = _watch("vllm", text.split("Fetching", maxsplit=1)[0])
    assert bytes_only[0].progress == PhaseProgress(done=2.25e9, total=4.98e9, unit="bytes")


def test_a_bar_that_is_not_bytes_is_not_a_download() -> None:
    """A tqdm bar of items (it/s) in a safetensors file name's line is not counted as bytes."""
    spans = _watch("vllm", "model.safetensors: 45%|####5     | 9/20 [00:10<00:12, 1.1it/s]\n")
    assert spans == ()


def test_flashinfer_jit_counts_and_tgi_downloads() -> None:
    """FlashInfer's JIT lines count up in jit_compile; TGI's downloader gives files i/N."""
    jit = "".join(
        f"2025-04-15 16:03:38,167 - INFO - flashinfer.jit: Loading JIT ops: op{i}\n"
        for i in range(3)
    )
    assert _by_name(_watch("trtllm", jit)) == {
        "jit_compile": PhaseProgress(done=3, total=None, unit="JIT ops")
    }
    tgi = (
        "2024-01-01T00:00:00.000000Z  INFO text_generation_launcher: Starting check and download "
        "process for m\n"
        "2024-01-01T00:00:05.000000Z  INFO download: text_generation_launcher: Download: [2/4] "
        "-- ETA: 0:00:10.5\n"
    )
    assert _by_name(_watch("tgi", tgi)) == {
        "download_weights": PhaseProgress(done=2, total=4, unit="files")
    }


def test_parse_amount() -> None:
    """tqdm's counts: plain, decimal, and SI-scaled."""
    assert parse_amount("4") == 4.0
    assert parse_amount("2.25G") == 2.25e9
    assert parse_amount("512k") == 512e3


def test_progress_survives_json_round_trip() -> None:
    """The verdict JSON carries each phase's progress, and from_json rebuilds it."""
    spans = _watch("vllm", _VLLM)
    verdict = Verdict(
        status=Status.READY,
        elapsed_s=1.0,
        started_at="2026-01-01T00:00:00+00:00",
        decided_at="2026-01-01T00:00:01+00:00",
        detected_by=DetectedBy.LOG,
        reason="r",
        kind=None,
        hint=None,
        matched_line=None,
        exit_code=None,
        pid=None,
        engine="vllm",
        url=None,
        log_path=None,
        phases=spans,
    )
    data = json.loads(json.dumps(verdict.to_json()))
    assert data["phases"][0]["progress"] == {"done": 4.0, "total": 4.0, "unit": "shards"}
    assert Verdict.from_json(data).phases == spans


def test_launch_json_shows_the_simulators_bars(port: int) -> None:
    """A real start of the simulated vLLM: the verdict's phases carry its bars' last i/N."""
    result = subprocess.run(
        [
            *(PY, "-m", "servegate", "launch", "--engine", "vllm", "--port", str(port)),
            *("--json", "--name", "progress-sim", "--"),
            *(sys.executable, "-m", "servegate", "sim", "--engine", "vllm"),
            *("--port", str(port), "--startup", "2"),
        ],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    try:
        assert result.returncode == 0, result.stderr
        progress = _by_name(
            tuple(PhaseSpan(**_span(p)) for p in json.loads(result.stdout)["phases"])
        )
        assert progress["load_weights"] == PhaseProgress(done=4, total=4, unit="shards")
        shown = progress["capture_cuda_graphs"]
        assert shown is not None and shown.unit == "batch sizes" and shown.done == shown.total
    finally:
        subprocess.run(
            [PY, "-m", "servegate", "stop", "progress-sim"], capture_output=True, check=False
        )


def _span(data: dict[str, Any]) -> dict[str, Any]:
    return {**data, "progress": PhaseProgress.from_json(data["progress"])}


def _python_calls(work: Callable[[], object]) -> int:
    """How many Python-level function calls ``work`` makes (a measure of work, not time)."""
    calls = 0

    def count(frame: object, event: str, arg: object) -> None:
        nonlocal calls
        if event == "call":
            calls += 1

    sys.setprofile(count)
    try:
        work()
    finally:
        sys.setprofile(None)
    return calls


@pytest.mark.parametrize("end", ["\r", "\n"])
def test_a_flood_of_redrawn_bars_costs_per_block_not_per_redraw(end: str) -> None:
    """8 MiB of tqdm redraws (a million a second is tqdm's way), ended by \\r or by a
    newline, are read with a few calls per 1 MiB read, not a classification per line."""
    one = "Loading safetensors checkpoint shards: {0:3d}% Completed | {0}/100 [00:01<00:01]" + end
    bars = "".join(one.format(i % 100) for i in range(8 * 1024 * 1024 // len(one))).encode()
    watcher = LogWatcher(Rules(get_profile("vllm")))

    def follow() -> None:
        for at in range(1 << 20, len(bars), 1 << 20):
            watcher.feed(bars[at : at + (1 << 20)], 1.0)

    watcher.feed(bars[: 1 << 20], 1.0)  # the first read compiles the patterns it meets
    calls = _python_calls(follow)
    # before: about 96,000 lines in the 7 MiB, each decoded and classified (over 900,000
    # calls); now some 230 a MiB, most of them numpy's Python wrappers
    assert calls < 7 * 500
    progress = watcher.phases.spans()[0].progress
    assert progress is not None and progress.total == 100


def test_a_flood_of_counted_lines_is_counted_whole() -> None:
    """20,000 compiled-graph lines in a burst: read as a flood, and all counted."""
    line = (
        "(Worker pid=3) INFO 01-01 00:00:09 [backends.py:288] Compiling a graph for shape "
        "{0} takes 0.{0} s\n"
    )
    text = "".join(line.format(i) for i in range(20000))
    progress = _by_name(_watch("vllm", text, chunk=1 << 20))
    assert progress["torch_compile"] == PhaseProgress(done=20000, total=None, unit="graphs")


def test_a_failure_inside_a_flood_of_progress_lines_is_still_seen() -> None:
    """A rare line in a flood holds a rare anchor of its own: an OOM between 10,000 bar
    lines on each side is a fatal hit, and the bar still ends at its last state."""
    one = "Loading safetensors checkpoint shards: {0:3d}% Completed | {0}/100 [00:01<00:01]\n"
    bars = "".join(one.format(i % 100) for i in range(10000))
    oom = "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB\n"
    data = (bars + oom + bars).encode()
    watcher = LogWatcher(Rules(get_profile("vllm")))
    hits = [
        hit
        for at in range(0, len(data), 1 << 20)
        for hit in watcher.feed(data[at : at + (1 << 20)], 1.0)
    ]
    assert [hit.line for hit in hits if hit.what == "fatal"] == [oom.strip()]
    progress = watcher.phases.spans()[0].progress
    assert progress == PhaseProgress(done=99, total=100, unit="shards")
