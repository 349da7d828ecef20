"""Engine profiles: the strings of engines.md are recognised as the right events."""

from __future__ import annotations

import pytest

from servegate.engines import ENGINE_NAMES, METRIC_KEYS, engine_of_metrics, get_profile
from servegate.errors import UsageError
from servegate.gate.watch import LogWatcher, Rules


def _feed(engine: str, text: str) -> tuple[LogWatcher, list[str]]:
    watcher = LogWatcher(Rules(get_profile(engine)))
    hits = watcher.feed(text.encode(), 1.0) + watcher.finish(1.0)
    return watcher, [f"{hit.what}:{hit.signature.kind if hit.signature else ''}" for hit in hits]


def test_unknown_engine_is_a_usage_error() -> None:
    """get_profile names the choices when the engine is unknown."""
    with pytest.raises(UsageError, match="sglang, vllm, llamacpp, tgi, trtllm, generic"):
        get_profile("ollama")


def test_contract_fields() -> None:
    """Every profile has the fields other layers read, and every metric key."""
    assert get_profile("sglang").default_port == 30000
    assert get_profile("trtllm").probe_path == "/health_generate"
    assert get_profile("vllm").generate_check is True
    for name in ENGINE_NAMES:
        profile = get_profile(name)
        assert set(METRIC_KEYS) <= set(profile.metric_names), name
        assert profile.probe_path != "/v1/models"
    assert get_profile("vllm").metric_names["spec_accepted_tokens"] == (
        "vllm:spec_decode_num_accepted_tokens_total"
    )


def test_metric_prefix_names_every_metric_of_its_engine() -> None:
    """A profile's metric_prefix starts each of its metric names, extra ones included,
    so that the prefix alone recognises the engine of a /metrics page."""
    for name in ENGINE_NAMES:
        profile = get_profile(name)
        names = [v for v in profile.metric_names.values() if v]
        names += list(profile.extra_metric_names.values())
        if profile.metric_prefix is None:
            assert not names, name
            continue
        assert all(n.startswith(profile.metric_prefix) for n in names), name
        assert engine_of_metrics(["process_cpu_seconds_total", *names]) == name
    assert engine_of_metrics(["process_cpu_seconds_total", "http_requests_total"]) is None
    assert engine_of_metrics([]) is None
    assert get_profile("sglang").extra_metric_names == {
        "spec_accept_length": "sglang:spec_accept_length"
    }


@pytest.mark.parametrize(
    ("engine", "line", "expected"),
    [
        ("sglang", "[2026 TP0] The server is fired up and ready to roll!", "ready:"),
        ("vllm", "(APIServer pid=1) INFO:     Application startup complete.", "ready:"),
        ("llamacpp", "main: server is listening on http://127.0.0.1:8080 - starting", "ready:"),
        ("tgi", "INFO text_generation_router::server: router/src/server.rs:1: Connected", "ready:"),
        (
            "sglang",
            "RuntimeError: Not enough memory. Please try to increase --mem-fraction-static.",
            "fatal:oom",
        ),
        (
            "sglang",
            "Received sigquit from a child process. It usually means the child failed.",
            "fatal:child-exit",
        ),
        (
            "vllm",
            "RuntimeError: Engine core initialization failed. See root cause above.",
            "fatal:engine-init",
        ),
        (
            "vllm",
            "ValueError: Free memory on device cuda:0 (15.32/22.04 GiB) on startup is less "
            "than desired GPU memory utilization (0.88, 19.39 GiB).",
            "fatal:gpu-busy",
        ),
        (
            "vllm",
            "RuntimeError: No supported CUDA architectures found for major versions [12].",
            "fatal:cuda-arch",
        ),
        (
            "sglang",
            "[Errno 98] error while attempting to bind on address ('0.0.0.0', 30000): "
            "address already in use",
            "fatal:port-in-use",
        ),
        ("llamacpp", "main: exiting due to model loading error", "fatal:model-load"),
        ("tgi", "Error: ShardCannotStart", "fatal:shard"),
        ("tgi", "ERROR text_generation_launcher: Shard 1 failed to start", "fatal:shard"),
        ("trtllm", "!!! Segfault encountered !!!", "fatal:segfault"),
        ("generic", "RuntimeError: NCCL error: unhandled system error", "fatal:nccl"),
    ],
)
def test_lines_from_engines_md(engine: str, line: str, expected: str) -> None:
    """Ready lines and fatal signatures from engines.md map to the right event and kind."""
    _, hits = _feed(engine, line + "\n")
    assert hits[:1] == [expected]


def test_a_traceback_alone_is_not_fatal() -> None:
    """A traceback the engine survives is remembered as the last error, not a crash."""
    watcher, hits = _feed(
        "sglang",
        "Traceback (most recent call last):\n"
        '  File "serving.py", line 3, in init\n'
        '    raise ImportError("x")\n'
        "ImportError: cannot import name 'x'\n"
        "WARNING: carrying on\n",
    )
    assert hits == []
    assert watcher.last_error == "ImportError: cannot import name 'x'"


def test_sglang_phases_in_order() -> None:
    """SGLang's startup lines open and close the phases named in the profile."""
    text = (
        "Init torch distributed begin.\nInit torch distributed ends. elapsed=0.5 s\n"
        "Load weight begin. avail mem=50 GB\nLoad weight end. elapsed=3 s\n"
        "KV Cache is allocated. #tokens: 20480\nMemory pool end. avail mem=28 GB\n"
        "Capture cuda graph begin. This can take up to several minutes.\n"
    )
    watcher, _ = _feed("sglang", text)
    names = [span.name for span in watcher.phases.spans()]
    assert names == ["init_distributed", "load_weights", "allocate_kv_cache", "capture_cuda_graphs"]
    assert watcher.phases.describe() == "during capture_cuda_graphs"
