# ruff: noqa: E501  (real engines print long lines; they are copied verbatim)
"""A stand-in inference server: prints an engine's startup lines, then serves probes.

    python fake_engine.py ENGINE PORT [--delay S] [--stamp FILE] [--port PORT]

/health (and /health_generate) answer 503 until the engine's ready line is printed,
then 200; POST /v1/completions answers 200 and counts itself in /stats. With --stamp,
the wall time just before the ready line is written goes to FILE (for latency benches).
"""

from __future__ import annotations

import argparse
import http.server
import json
import sys
import threading
import time

LINES = {
    "sglang": [
        "[2026-01-01 00:00:00] server_args=ServerArgs(model_path='/models/m', port=30000)",
        "[2026-01-01 00:00:00 TP0] Init torch distributed begin.",
        "[2026-01-01 00:00:00 TP0] Init torch distributed ends. elapsed=0.53 s, mem usage=0.09 GB",
        "[2026-01-01 00:00:00 TP0] Load weight begin. avail mem=50.69 GB",
        "Multi-thread loading shards: 50% Completed | 2/4\rMulti-thread loading shards: "
        "100% Completed | 4/4",
        "[2026-01-01 00:00:03 TP0] Load weight end. elapsed=3.48 s, type=LlamaForCausalLM, "
        "avail mem=34.93 GB, mem usage=15.76 GB.",
        "[2026-01-01 00:00:03 TP0] KV Cache is allocated. #tokens: 20480, K size: 1.25 GB",
        "[2026-01-01 00:00:03 TP0] Memory pool end. avail mem=28.98 GB",
        "[2026-01-01 00:00:03 TP0] Capture cuda graph begin. This can take up to several minutes.",
        "Capturing batches (bs=1 avail_mem=2.91 GB):  50%|#####     | 1/2\r"
        "Capturing batches (bs=1 avail_mem=2.91 GB): 100%|##########| 2/2",
        "[2026-01-01 00:00:09 TP0] Capture cuda graph end. Time elapsed: 6.57 s",
        "[2026-01-01 00:00:09] INFO:     Started server process [1]",
        "[2026-01-01 00:00:09] INFO:     Waiting for application startup.",
        "[2026-01-01 00:00:09] INFO:     Application startup complete.",
        "[2026-01-01 00:00:09] INFO:     Uvicorn running on http://127.0.0.1:30000 (Press CTRL+C to quit)",
    ],
    "vllm": [
        "(APIServer pid=1) INFO 01-01 00:00:00 [api_server.py:1876] vLLM API server version 0.11.1",
        "(APIServer pid=1) INFO 01-01 00:00:00 [model.py:1745] Using max model len 4096",
        "(EngineCore_DP0 pid=2) INFO 01-01 00:00:01 [core.py:730] Waiting for init message from front-end.",
        "(EngineCore_DP0 pid=2) INFO 01-01 00:00:01 [core.py:97] Initializing a V1 LLM engine (v0.11.1) with config: x",
        "(Worker pid=3) INFO 01-01 00:00:02 [gpu_model_runner.py:2843] Starting to load model m...",
        "Loading safetensors checkpoint shards:  25% Completed | 1/4\r"
        "Loading safetensors checkpoint shards: 100% Completed | 4/4",
        "(Worker pid=3) INFO 01-01 00:00:06 [gpu_model_runner.py:2904] Model loading took 14.0 GiB and 5.3 seconds",
        "(Worker pid=3) INFO 01-01 00:00:07 [backends.py:623] Dynamo bytecode transform time: 4.39 s",
        "(Worker pid=3) INFO 01-01 00:00:30 [monitor.py:34] torch.compile takes 25.73 s in total",
        "(Worker pid=3) INFO 01-01 00:00:31 [gpu_worker.py:315] Available KV cache memory: 152.07 GiB",
        "(EngineCore_DP0 pid=2) INFO 01-01 00:00:31 [kv_cache_utils.py:1204] Maximum concurrency for 4,096 tokens per request: 405.52x",
        "Capturing CUDA graphs (mixed prefill-decode, FULL):  97%| 65/67",
        "(Worker pid=3) INFO 01-01 00:00:38 [gpu_model_runner.py:3815] Graph capturing finished in 7 secs, took 0.32 GiB",
        "(EngineCore_DP0 pid=2) INFO 01-01 00:00:38 [core.py:243] init engine (profile, create kv cache, warmup model) took 52.14 seconds",
        "(APIServer pid=1) INFO 01-01 00:00:39 [api_server.py:1945] Starting vLLM API server 0 on http://0.0.0.0:8000",
        "(APIServer pid=1) INFO 01-01 00:00:39 [launcher.py:46] Route: /health, Methods: GET",
        "(APIServer pid=1) INFO:     Started server process [1]",
        "(APIServer pid=1) INFO:     Waiting for application startup.",
    ],
    "llamacpp": [
        "llama_model_loader: loaded meta data with 30 key-value pairs",
        "srv    load_model: loading model '/models/m.gguf'",
        "load_tensors: offloaded 33/33 layers to GPU",
        "common_init_from_params: warming up the model with an empty run - please wait ... (--no-warmup to disable)",
        "srv    init: initializing slots, n_slots = 4",
    ],
    "tgi": [
        "INFO text_generation_launcher: Starting check and download process for m",
        "INFO text_generation_launcher: Successfully downloaded weights for m",
        "INFO text_generation_launcher: Starting shard rank=0",
        "INFO text_generation_launcher: Waiting for shard to be ready... rank=0",
        "INFO text_generation_launcher: Shard ready in 12.3s rank=0",
        "INFO text_generation_launcher: Starting Webserver",
        "INFO text_generation_router: Warming up model",
        "INFO text_generation_router: Setting max batch total tokens to 16000",
    ],
    "trtllm": [
        "[TRT-LLM] [I] Run generation-only CUDA graph warmup for batch size=1, draft_len=0",
        "[TRT-LLM] [I] Running piecewise CUDA graph warmup...",
        "INFO:     Started server process [1]",
        "INFO:     Waiting for application startup.",
    ],
    "generic": ["starting", "listening soon"],
}

READY = {
    "sglang": "[2026-01-01 00:00:40] The server is fired up and ready to roll!",
    "vllm": "(APIServer pid=1) INFO:     Application startup complete.",
    "llamacpp": "srv    llama_server: model loaded",
    "tgi": "INFO text_generation_router::server: router/src/server.rs:2400: Connected",
    "trtllm": "INFO:     Application startup complete.",
    "generic": "generic server ready",
}

state = {"ready": False, "completions": 0}


class Handler(http.server.BaseHTTPRequestHandler):
    def do_GET(self) -> None:
        if self.path in ("/health", "/health_generate"):
            self._reply(200 if state["ready"] else 503, b"")
        elif self.path == "/stats":
            self._reply(200, json.dumps(state).encode())
        else:
            self._reply(404, b"")

    def do_POST(self) -> None:
        length = int(self.headers.get("Content-Length") or 0)
        self.rfile.read(length)
        if self.path == "/v1/completions" and state["ready"]:
            state["completions"] += 1
            self._reply(200, b'{"choices": [{"text": "x"}]}')
        else:
            self._reply(503, b"")

    def _reply(self, status: int, body: bytes) -> None:
        self.send_response(status)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args: object) -> None:
        pass


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("engine")
    parser.add_argument("port", type=int)
    parser.add_argument("--delay", type=float, default=0.0)
    parser.add_argument("--stamp")
    parser.add_argument("--port", type=int, help="same as PORT (as real servers spell it)")
    args = parser.parse_args()
    server = http.server.ThreadingHTTPServer(("127.0.0.1", args.port), Handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    for line in LINES[args.engine]:
        print(line, flush=True)
        if args.delay:
            time.sleep(args.delay)
    if args.delay:
        time.sleep(max(0.0, 1.0 - args.delay * len(LINES[args.engine])))
    state["ready"] = True
    stamp = time.time()
    if args.stamp:  # before the line: a fast gate may stop us right after it
        with open(args.stamp, "w") as f:
            f.write(repr(stamp))
    sys.stdout.write(READY[args.engine] + "\n")
    sys.stdout.flush()
    while True:
        time.sleep(3600)


if __name__ == "__main__":
    main()
