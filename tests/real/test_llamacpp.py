"""llama.cpp for real: llama-cpp-python's server with Gemma 3 270M, gated, measured, stopped.

Why: the gate, the load generator and the campaign runner must hold against a real
engine's startup, failures and process, not only against the simulator. The engine and
the model come from scripts/real-engines-setup; these tests are marked real_engine and
run in CI's own step.
"""

from __future__ import annotations

import json
import socket
from pathlib import Path

import pytest
from tests.conftest import free_port
from tests.real.helpers import (
    LateHolder,
    check_report,
    port_free,
    procs_with,
    run_example_campaign,
    servegate,
    verdict_of,
    wait_until,
)

pytestmark = pytest.mark.real_engine

HERE = Path(__file__).resolve().parent
EXAMPLE = HERE.parents[1] / "examples" / "real" / "llamacpp-threads.toml"


def server_command(python: Path, model: Path | str, port: int, *extra: str) -> list[str]:
    """llama-cpp-python's OpenAI-compatible server on 127.0.0.1:port."""
    return [
        str(python), "-m", "llama_cpp.server", "--model", str(model),
        "--host", "127.0.0.1", "--port", str(port), "--n_ctx", "2048", *extra,
    ]  # fmt: skip


def launch(port: int, name: str, command: list[str], timeout_s: float = 180) -> dict[str, object]:
    """`servegate launch --engine llamacpp --port P` exactly as a user types it; the verdict.

    llama-cpp-python has no /health route and opens its port only once the model is
    loaded: the profile takes its `Uvicorn running on` line, confirmed by any HTTP answer.
    """
    result = servegate(
        "launch", "--engine", "llamacpp", "--port", str(port), "--name", name,
        "--timeout", str(timeout_s), "--json", "--", *command,
        timeout=timeout_s + 60,
    )  # fmt: skip
    verdict = verdict_of(result)
    verdict["_exit"] = result.returncode
    return verdict


@pytest.mark.timeout(420)
def test_launch_bench_stop(llamacpp_python: Path, gguf_model: Path, tmp_path: Path) -> None:
    """The real server is gated READY, measured by `servegate bench`, and stopped to nothing."""
    port = free_port()
    verdict = launch(port, "gemma", server_command(llamacpp_python, gguf_model, port))
    try:
        assert verdict["_exit"] == 0, verdict
        assert verdict["status"] == "ready"
        assert verdict["detected_by"] == "log"
        assert "Uvicorn running on http" in str(verdict["matched_line"])
        assert procs_with(str(gguf_model)), "the server is running after READY"
        out = tmp_path / "bench.json"
        bench = servegate(
            "bench", "--url", f"http://127.0.0.1:{port}", "--requests", "8",
            "--concurrency", "2", "--output-len", "16", "--warmup", "1",
            "--dataset", str(HERE / "prompts.jsonl"), "--json-file", str(out), "--quiet",
            timeout=300,
        )  # fmt: skip
        assert bench.returncode == 0, bench.stderr
        point = json.loads(out.read_text())["points"][0]
        assert point["completed"] == 8, point["failures"]
        assert point["failed"] == 0, point["failure_details"]
        assert point["summary"]["output_throughput"] > 0
        assert point["summary"]["ttft_ms_p50"] > 0
        # llama-cpp-python serves no /metrics: the bench says so instead of failing
        assert point["server_metrics"]["available"] is False
    finally:
        stop = servegate("stop", "gemma", timeout=60)
    assert stop.returncode == 0, stop.stderr
    assert wait_until(lambda: not procs_with(str(gguf_model)), 10), procs_with(str(gguf_model))
    assert port_free(port)


@pytest.mark.timeout(180)
def test_bad_model_path_is_a_crash(llamacpp_python: Path) -> None:
    """A model path that does not exist ends in CRASH at once, with the cause in the tail;
    the path is the command's to fix (bad-args), the hint naming the option."""
    port = free_port()
    missing = "/nonexistent/servegate-test/model.gguf"
    verdict = launch(port, "bad-model", server_command(llamacpp_python, missing, port), 120)
    assert verdict["_exit"] == 1, verdict
    assert verdict["status"] == "crash"
    assert float(verdict["elapsed_s"]) < 60  # type: ignore[arg-type]
    tail = "\n".join(verdict["tail"])  # type: ignore[arg-type]
    assert f"Model path does not exist: {missing}" in tail, tail
    assert verdict["kind"] == "bad-args", verdict
    assert f"--model {missing} is not there" in str(verdict["hint"]), verdict
    assert not procs_with(missing)
    assert port_free(port)


@pytest.mark.timeout(240)
def test_port_taken_while_loading_is_a_port_in_use_crash(
    llamacpp_python: Path, gguf_model: Path
) -> None:
    """A port taken while the model loads ends in CRASH kind port-in-use, tree stopped."""
    port = free_port()
    holder = LateHolder(port, when=lambda: bool(procs_with(str(gguf_model))))
    try:
        verdict = launch(port, "clash", server_command(llamacpp_python, gguf_model, port))
        assert holder.bound.is_set(), f"the holder lost the race: {holder.error}"
        assert verdict["_exit"] == 1, verdict
        assert verdict["status"] == "crash"
        assert verdict["kind"] == "port-in-use", verdict
        assert verdict["hint"]
        assert "address already in use" in str(verdict["matched_line"])
        assert not procs_with(str(gguf_model)), "the crashed server's tree was stopped"
        # the port's owner is untouched: it still accepts connections
        with socket.create_connection(("127.0.0.1", port), timeout=2):
            pass
    finally:
        holder.close()


@pytest.mark.timeout(60)
def test_port_taken_before_launch_is_refused(llamacpp_python: Path, gguf_model: Path) -> None:
    """A port already taken is refused before anything starts: exit 2, one sentence."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        sock.listen(1)
        port = int(sock.getsockname()[1])
        result = servegate(
            "launch", "--engine", "llamacpp", "--port", str(port), "--json", "--",
            *server_command(llamacpp_python, gguf_model, port),
            timeout=50,
        )  # fmt: skip
    assert result.returncode == 2, result
    assert "already in use" in result.stderr
    assert not procs_with(str(gguf_model))


@pytest.mark.timeout(900)
def test_campaign_compares_thread_counts(
    llamacpp_python: Path, gguf_model: Path, tmp_path: Path
) -> None:
    """`servegate run` measures --n_threads 1 against 2 and reports the change with intervals."""
    paths = {"llama_python": llamacpp_python, "gguf": gguf_model}
    report_json = run_example_campaign(EXAMPLE, paths, tmp_path, timeout_s=840)
    check_report(report_json, "threads-1", "threads-2", repeats=3)
    assert not procs_with(str(gguf_model))
