#!/usr/bin/env bash
# llama.cpp with CUDA on an NVIDIA GPU machine that has no network: build, serve, measure.
#
# Why: proves servegate against a real GPU engine: llama-server built for sm_90 from the
# llama.cpp source that the llama-cpp-python source package vendors, serving a
# random-weight Llama GGUF generated on the spot (benchmarks/real_make_gguf.py), with raw
# start records (benchmarks/real_probe.py) and, where the campaign runner exists, a real
# `servegate run` campaign whose preflight reads GPU memory through NVML.
#
# Inputs (carried into the repository root):
#   .device-carry/llama.cpp-trim.tar.gz   llama.cpp source (vendor/ of llama-cpp-python 0.3.36)
#   .device-carry/whl/*.whl               Python wheels the machine lacks (pydantic)
#   .device-carry/llama-server.xz.part*   optional: a llama-server built by an earlier run
# Output: everything under $OUT (results.tgz, and the built binary in parts when built here).
#
# Example:
#   OUT=/tmp/out bash benchmarks/real_h200.sh
set -uo pipefail
OUT="${OUT:?set OUT to a folder for the results}"
REPO="$(pwd)"
WORK=/tmp/real-h200
RES="$WORK/results"
mkdir -p "$WORK" "$RES"
T0=$(date +%s)
stamp() { echo "[$(($(date +%s) - T0))s] $*" | tee -a "$RES/timeline.txt" >&2; }

stamp "machine"
{ nvidia-smi; nproc; python3 --version; nvcc --version | tail -2; cmake --version | head -1; } \
    >"$RES/machine.txt" 2>&1

python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade \
    --target /tmp/site .device-carry/whl/*.whl
export PYTHONPATH="/tmp/site:$REPO/src:$WORK/llama.cpp/gguf-py"
tar xzf .device-carry/llama.cpp-trim.tar.gz -C "$WORK"

BIN="$WORK/llama-server"
if compgen -G ".device-carry/llama-server.xz.part*" >/dev/null; then
    stamp "using the carried llama-server"
    cat .device-carry/llama-server.xz.part* | xz -d >"$BIN" && chmod +x "$BIN"
else
    stamp "configure"
    cmake -S "$WORK/llama.cpp" -B "$WORK/build" -G Ninja -DCMAKE_BUILD_TYPE=Release \
        -DGGML_CUDA=ON -DCMAKE_CUDA_ARCHITECTURES=90 -DGGML_CUDA_FA=OFF -DGGML_CUDA_NCCL=OFF \
        -DBUILD_SHARED_LIBS=OFF -DLLAMA_BUILD_TESTS=OFF -DLLAMA_BUILD_EXAMPLES=OFF \
        -DLLAMA_USE_PREBUILT_UI=OFF -DLLAMA_OPENSSL=OFF >"$RES/configure.log" 2>&1 \
        || { stamp "configure failed"; tail -40 "$RES/configure.log"; }
    stamp "build llama-server (sm_90)"
    timeout 420 cmake --build "$WORK/build" --target llama-server -j "$(nproc)" >"$RES/build.log" 2>&1 \
        || { stamp "build failed"; tail -60 "$RES/build.log"; }
    cp "$WORK/build/bin/llama-server" "$BIN" && strip "$BIN"
    stamp "built: $(du -h "$BIN" | cut -f1)"
    xz -T0 -6 -c "$BIN" | split -b 15m - "$OUT/llama-server.xz.part"
fi
"$BIN" --version >"$RES/version.txt" 2>&1

stamp "model"
MODEL="$WORK/random-llama-1b.gguf"
python3 "$REPO/bench/real_make_gguf.py" "$MODEL" --hidden 2048 --layers 16 --heads 16 \
    --kv-heads 8 --ffn 5632 --vocab 32000 --ctx 8192 2>&1 | tee -a "$RES/timeline.txt"

port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }
PROBE=(python3 "$REPO/bench/real_probe.py" --out "$RES/probe")

stamp "probe: normal start on the GPU"
P=$(port)
"${PROBE[@]}" --name gpu-normal --port "$P" --generate --timeout 120 -- \
    "$BIN" -m "$MODEL" -ngl 99 -c 8192 -fa off --metrics --host 127.0.0.1 --port "$P"
stamp "probe: bad model path"
P=$(port)
"${PROBE[@]}" --name gpu-bad-model --port "$P" --timeout 60 -- \
    "$BIN" -m /nonexistent/model.gguf -ngl 99 --host 127.0.0.1 --port "$P"
stamp "probe: port clash"
P=$(port)
python3 -c "import socket,time; s=socket.socket(); s.bind(('127.0.0.1',$P)); s.listen(); time.sleep(90)" &
HOLDER=$!
sleep 0.5
"${PROBE[@]}" --name gpu-port-clash --port "$P" --probe /nonexistent --timeout 60 -- \
    "$BIN" -m "$MODEL" -ngl 99 --host 127.0.0.1 --port "$P"
kill "$HOLDER" 2>/dev/null

if [[ "${SKIP_CAMPAIGN:-0}" != "1" ]] && python3 -m servegate run --help >/dev/null 2>&1; then
    stamp "servegate launch: gate cases"
    P=$(port)
    python3 -m servegate launch --engine llamacpp --port "$P" --timeout 120 --json \
        --name h200-ready -- "$BIN" -m "$MODEL" -ngl 99 -c 8192 -fa off --host 127.0.0.1 \
        --port "$P" >"$RES/launch-ready.json" 2>"$RES/launch-ready.err"
    echo "exit=$?" >>"$RES/launch-ready.err"
    python3 -m servegate ps >"$RES/ps.txt" 2>&1
    python3 -m servegate stop h200-ready >"$RES/stop.txt" 2>&1
    P=$(port)
    python3 -c "import socket,time; s=socket.socket(); s.bind(('127.0.0.1',$P)); s.listen(); time.sleep(30)" &
    HOLDER=$!
    sleep 0.5
    python3 -m servegate launch --engine llamacpp --port "$P" --timeout 60 --json -- \
        "$BIN" -m "$MODEL" --host 127.0.0.1 --port "$P" \
        >"$RES/launch-port-taken.json" 2>"$RES/launch-port-taken.err"
    echo "exit=$?" >>"$RES/launch-port-taken.err"
    kill "$HOLDER" 2>/dev/null
    P=$(port)
    python3 -m servegate launch --engine llamacpp --port "$P" --timeout 60 --json -- \
        "$BIN" -m /nonexistent/model.gguf --host 127.0.0.1 --port "$P" \
        >"$RES/launch-bad-model.json" 2>"$RES/launch-bad-model.err"
    echo "exit=$?" >>"$RES/launch-bad-model.err"
    stamp "servegate run: campaign (NVML sampled every 0.1 s meanwhile)"
    python3 "$REPO/bench/real_nvml_sampler.py" "$RES/nvml.csv" --interval 0.1 &
    SAMPLER=$!
    sed -e "s#@BIN@#$BIN#g" -e "s#@MODEL@#$MODEL#g" \
        "$REPO/examples/real/h200-llamacpp-parallel.toml" >"$WORK/campaign.toml"
    timeout 330 python3 -m servegate run "$WORK/campaign.toml" --db "$RES/h200.db" \
        >"$RES/campaign.out" 2>"$RES/campaign.err"
    echo "exit=$?" >>"$RES/campaign.err"
    kill "$SAMPLER"; wait "$SAMPLER"
    python3 -m servegate report --db "$RES/h200.db" --markdown "$RES/report.md" \
        --json "$RES/report.json" >"$RES/report.out" 2>&1
    nvidia-smi --query-gpu=memory.used --format=csv >"$RES/gpu-after.csv" 2>&1
else
    stamp "servegate run not available in this tree: campaign skipped"
fi

stamp "package"
tar czf "$OUT/results.tgz" -C "$WORK" results
stamp "done"
