"""Startup logs and readiness probes of each simulated engine, from a real process."""

from __future__ import annotations

import socket

import pytest
from tests.sim.helpers import Sim, get, wait_http

ORDER = {
    "sglang": [
        r"server_args=ServerArgs\(",
        r"Init torch distributed begin\.",
        r"Init torch distributed ends\. elapsed=",
        r"Load weight begin\. avail mem=",
        r"Loading safetensors checkpoint shards: 100% Completed",
        r"Load weight end\. elapsed=",
        r"KV Cache is allocated\. #tokens:",
        r"Memory pool end\. avail mem=",
        r"Init attention backend begin\.",
        r"Capture cuda graph begin\.",
        r"Capturing batches \(bs=.*100%",
        r"Capture cuda graph end\. Time elapsed:",
        r"max_total_num_tokens=",
        r"INFO:     Application startup complete\.",
        r"INFO:     Uvicorn running on http://127\.0\.0\.1:\d+",
        r'"POST /generate HTTP/1\.1" 200',
        r"The server is fired up and ready to roll!",
    ],
    "vllm": [
        r"\(APIServer pid=\d+\) INFO .* vLLM API server version",
        r"\(EngineCore_DP0 pid=\d+\) .*Waiting for init message from front-end\.",
        r"Initializing a V1 LLM engine",
        r"\(Worker_TP0 pid=\d+\) .*is assigned as DP rank 0",
        r"Starting to load model",
        r"Loading safetensors checkpoint shards: 100% Completed",
        r"Loading weights took",
        r"Model loading took .* GiB",
        r"Dynamo bytecode transform time:",
        r"torch\.compile takes .* s in total",
        r"Available KV cache memory:",
        r"GPU KV cache size: [\d,]+ tokens",
        r"Capturing CUDA graphs \(.*100%",
        r"Graph capturing finished in",
        r"init engine \(profile, create kv cache, warmup model\)",
        r"Starting vLLM API server 0 on http://",
        r"Route: /health, Methods: GET",
        r"INFO:     Application startup complete\.",
    ],
    "llamacpp": [
        r"^build: \d+",
        r"main: HTTP server is listening, hostname: 127\.0\.0\.1",
        r"main: loading model",
        r"llama_model_loader: loaded meta data",
        r"llm_load_tensors: offloaded 33/33 layers to GPU",
        r"llama_kv_cache_init:",
        r"warming up the model with an empty run",
        r"^main: model loaded$",
        r"main: server is listening on http://127\.0\.0\.1:\d+ - starting the main loop",
        r"all slots are idle",
    ],
    "generic": [
        r"Loading model ",
        r"Loading checkpoint shards: 100%",
        r"Model loaded in",
        r"Warmup done in",
        r"Application startup complete\.",
        r"Uvicorn running on http://",
    ],
}


@pytest.mark.parametrize("engine", sorted(ORDER))
def test_startup_prints_the_engines_lines_in_order(engine: str, port: int) -> None:
    """Each engine's startup markers appear in the engine's order, then the probe is 200."""
    with Sim(port, "--engine", engine, "--startup", "0.3") as sim:
        times = [sim.wait_line(pattern) for pattern in ORDER[engine]]
        assert times == sorted(times)
        assert get(sim.url + "/health")[0] == 200


def test_silent_phase_prints_nothing_for_its_duration(port: int) -> None:
    """The JIT phase is silent: a gap of its length with no line at all."""
    with Sim(port, "--engine", "sglang", "--startup", "0.3", "--phase", "jit_compile=0.8") as sim:
        sim.wait_line("ready to roll")
        lines = sim.lines
        before = next(
            i for i, (_, text) in enumerate(lines) if "Init attention backend end" in text
        )
        gap = lines[before + 1][0] - lines[before][0]
        assert "Capture cuda graph begin" in lines[before + 1][1]
        assert 0.7 <= gap <= 2.0


def test_phase_duration_is_honoured(port: int) -> None:
    """--phase load_weights=0.8 puts 0.8 s between the weight-load begin and end lines."""
    with Sim(port, "--engine", "vllm", "--startup", "0.2", "--phase", "load_weights=0.8") as sim:
        begin = sim.wait_line("Starting to load model")
        end = sim.wait_line("Model loading took")
        assert 0.7 <= end - begin <= 1.6


def test_time_scale_compresses_a_long_startup(port: int) -> None:
    """The 8-GPU profile's minutes of startup take about a second at --time-scale 0.002."""
    with Sim(port, "--profile", "big-8gpu", "--time-scale", "0.002") as sim:
        ready = sim.wait_line("ready to roll", timeout=15)
        assert ready < 6.0
        # eight tensor-parallel ranks print their own weight-loading lines
        assert sum("Load weight end" in line for line in sim.text()) == 8


def test_progress_bars_use_carriage_returns(port: int) -> None:
    """tqdm bars redraw with \\r and end with one newline, as tqdm does."""
    with Sim(port, "--engine", "sglang", "--startup", "0.3") as sim:
        sim.wait_line("ready to roll")
        raw = bytes(sim.raw)
        assert b"\rLoading safetensors checkpoint shards:  25% Completed | 1/4" in raw
        assert b"\rCapturing batches (bs=" in raw


def test_sglang_health_is_503_during_warmup_while_models_answers(port: int) -> None:
    """SGLang: after uvicorn starts, /health is 503 until warmup ends; /v1/models is 200."""
    with Sim(port, "--engine", "sglang", "--startup", "0.3", "--phase", "warmup=1.5") as sim:
        sim.wait_line("Uvicorn running on")
        assert get(sim.url + "/health")[0] == 503
        assert get(sim.url + "/v1/models")[0] == 200
        ready = sim.wait_line("ready to roll")
        assert get(sim.url + "/health")[0] == 200
        assert ready >= 1.4


def test_vllm_refuses_connections_until_ready(port: int) -> None:
    """vLLM binds its port at once but accepts connections only when the engine is up."""
    with Sim(
        port, "--engine", "vllm", "--startup", "0.3", "--phase", "capture_cuda_graphs=1.2"
    ) as sim:
        sim.wait_line("Available KV cache memory")
        probe = socket.socket()
        with pytest.raises(ConnectionRefusedError):
            probe.connect(("127.0.0.1", port))
        probe.close()
        # the port is taken already: nobody else can bind it
        other = socket.socket()
        with pytest.raises(OSError):
            other.bind(("127.0.0.1", port))
        other.close()
        sim.wait_line("Application startup complete")
        assert get(sim.url + "/health")[0] == 200


def test_llamacpp_answers_loading_model_while_loading(port: int) -> None:
    """llama.cpp: /health is 503 "Loading model" while loading, /v1/models 200 early."""
    with Sim(
        port, "--engine", "llamacpp", "--startup", "0.3", "--phase", "load_weights=1.2"
    ) as sim:
        sim.wait_line("main: loading model")
        status, body = get(sim.url + "/health")
        assert (status, b"Loading model" in body) == (503, True)
        assert get(sim.url + "/v1/models")[0] == 200
        assert get(sim.url + "/v1/completions", b'{"prompt": "x"}')[0] == 503
        sim.wait_line("all slots are idle")
        assert get(sim.url + "/health") == (200, b'{"status":"ok"}')


def test_probe_turns_healthy_within_moments_of_the_ready_line(port: int) -> None:
    """The probe is unhealthy before the ready line and healthy right after it."""
    with Sim(port, "--engine", "generic", "--startup", "1.0") as sim:
        took = wait_http(sim.url + "/health")
        ready = sim.wait_line("Uvicorn running on")
        assert took >= 0.5
        assert ready <= took + 0.5


def test_sigterm_prints_the_uvicorn_shutdown_and_exits_0(port: int) -> None:
    """SIGTERM: uvicorn's shutdown lines, children ended, exit 0."""
    with Sim(port, "--engine", "sglang", "--startup", "0.2") as sim:
        sim.wait_line("ready to roll")
        sim.stop()
        assert sim.wait_exit() == 0
        sim.wait_line(r"Finished server process \[\d+\]")
