"""The store with real objects from a real run: a simulated server, gated and benchmarked."""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import pytest

from servegate.bench import BenchSettings, run_point
from servegate.launch import launch
from servegate.store import AttemptStatus, Store


@pytest.mark.slow
def test_a_real_verdict_stop_and_point_are_stored_faithfully(tmp_path: Path, port: int) -> None:
    """Verdict, phases, stop and samples of a real run come back as measured."""
    command = [
        sys.executable,
        "-m",
        "servegate",
        "sim",
        "--engine",
        "sglang",
        "--port",
        str(port),
        "--profile",
        "fast",
        "--seed",
        "1",
    ]
    with Store.open(tmp_path / "servegate.db") as store:
        cid = store.campaign("real", "cfg", "baseline")
        aid = store.start_attempt(
            cid,
            variant="baseline",
            server_key="sim",
            command=command,
            env={},
            host="local",
            versions={},
            git_commit=None,
        )
        with launch(command, engine="sglang", port=port, timeout_s=60) as server:
            store.record_verdict(aid, server.verdict)
            result = run_point(
                BenchSettings(
                    url=server.url, concurrency=4, requests=24, input_len=32, output_len=16
                )
            )
            store.record_point(aid, variant="baseline", load=result.label, repeat=0, result=result)
            stop = server.stop()
        store.record_stop(aid, stop)
        store.finish_attempt(aid, AttemptStatus.DONE)
        (attempt,) = store.attempts(cid)
        (point,) = store.points(cid)
        samples = store.samples([point.id])
    assert attempt.status == "done"
    assert attempt.startup_s == pytest.approx(server.verdict.elapsed_s, abs=1e-3)
    assert [p.name for p in attempt.phases] == [p.name for p in server.verdict.phases]
    assert attempt.stop_port_free is True
    assert point.load == "c=4"
    assert samples.count == result.completed == 24
    expected = np.median([s.ttft_s for s in result.samples if s.ok]) * 1000
    assert float(np.median(samples.ttft_ms)) == pytest.approx(expected, rel=1e-6)
    assert samples.output_tokens.tolist() == [float(s.output_tokens) for s in result.samples]
    assert point.summary["output_throughput"] == pytest.approx(result.summary["output_throughput"])
