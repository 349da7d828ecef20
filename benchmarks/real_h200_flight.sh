#!/usr/bin/env bash
# The flight recorder on an NVIDIA GPU machine with no network: llama-server built for
# CUDA (sm_90) loading a random-weight GGUF, sampled by servegate's telemetry (GPU memory
# curve during the load, release after the stop), then a hung Python server holding GPU
# memory: stuck, its stack dump, and the memory released after the stop.
#
# Inputs (carried into the repository root):
#   .device-carry/llama.cpp-trim.tar.gz   llama.cpp source (vendor/ of llama-cpp-python 0.3.36)
#   .device-carry/whl/*.whl               wheels the machine lacks (pydantic and its needs, py-spy)
# Output: $OUT/results/ (curves, verdicts, timeline).
#
# Example:
#   OUT=/tmp/out bash benchmarks/real_h200_flight.sh
set -uo pipefail
OUT="${OUT:?set OUT to a folder for the results}"
REPO="$(pwd)"
WORK=/tmp/real-h200-flight
RES="$OUT/results"
mkdir -p "$WORK" "$RES"
T0=$(date +%s)
stamp() { echo "[$(($(date +%s) - T0))s] $*" | tee -a "$RES/timeline.txt" >&2; }

python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade \
    --target /tmp/site .device-carry/whl/*.whl
export PYTHONPATH="/tmp/site:$REPO/src:$WORK/llama.cpp/gguf-py"
export PATH="/tmp/site/bin:$PATH"  # py-spy
tar xzf .device-carry/llama.cpp-trim.tar.gz -C "$WORK"
nvidia-smi --query-gpu=name,memory.used,memory.total --format=csv >"$RES/machine.txt" 2>&1

stamp "configure"
cmake -S "$WORK/llama.cpp" -B "$WORK/build" -G Ninja -DCMAKE_BUILD_TYPE=Release \
    -DGGML_CUDA=ON -DCMAKE_CUDA_ARCHITECTURES=90 -DGGML_CUDA_FA=OFF -DGGML_CUDA_NCCL=OFF \
    -DBUILD_SHARED_LIBS=OFF -DLLAMA_BUILD_TESTS=OFF -DLLAMA_BUILD_EXAMPLES=OFF \
    -DLLAMA_USE_PREBUILT_UI=OFF -DLLAMA_OPENSSL=OFF >"$WORK/configure.log" 2>&1 \
    || { stamp "configure failed"; tail -40 "$WORK/configure.log"; }
stamp "build llama-server (sm_90)"
timeout 400 cmake --build "$WORK/build" --target llama-server -j "$(nproc)" >"$WORK/build.log" 2>&1 \
    || { stamp "build failed"; tail -40 "$WORK/build.log"; }
BIN="$WORK/build/bin/llama-server"
stamp "built"

stamp "model"
MODEL="$WORK/random-llama-1b.gguf"
python3 "$REPO/bench/real_make_gguf.py" "$MODEL" --hidden 2048 --layers 16 --heads 16 \
    --kv-heads 8 --ffn 5632 --vocab 32000 --ctx 8192 >>"$RES/timeline.txt" 2>&1

port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }

stamp "llama-server start, sampled every 0.1 s"
P=$(port)
python3 "$REPO/bench/telemetry_gpu.py" "$RES/llamacpp_gpu.csv" --engine llamacpp --port "$P" \
    --sample 0.1 --hold 1 --after 3 -- \
    "$BIN" -m "$MODEL" -ngl 99 -c 8192 -fa off --host 127.0.0.1 --port "$P" \
    >"$RES/llamacpp_gpu.txt" 2>&1
stamp "llama-server done (rc $?)"

if [ "${HUNG:-1}" = 0 ]; then stamp "end"; exit 0; fi
stamp "a hung Python server holding 4 GiB"
cat >"$WORK/hung.py" <<'PY'
import time
import torch

def load_weights():
    blocks = [torch.empty(2**30, dtype=torch.uint8, device="cuda") for _ in range(4)]
    torch.cuda.synchronize()
    print("weights loaded: 4 GiB on", torch.cuda.get_device_name(0), flush=True)
    return blocks

def wait_for_nccl_peers():
    print("waiting for 1 peer to join", flush=True)
    while True:
        time.sleep(1.0)

blocks = load_weights()
wait_for_nccl_peers()
PY
python3 -m servegate launch --name hung --engine generic --ready "^READY$" --stall 5 \
    --timeout 120 --sample 0.25 --json -- python3 "$WORK/hung.py" \
    >"$RES/hung_verdict.json" 2>"$RES/hung_stderr.txt"
echo "exit $?" >>"$RES/hung_stderr.txt"
stamp "hung done"
for i in 1 2 3 4 5 6 7 8 9 10; do
    nvidia-smi --query-gpu=memory.used --format=csv,noheader >>"$RES/after_hung.txt"
    sleep 0.2
done
stamp "end"
