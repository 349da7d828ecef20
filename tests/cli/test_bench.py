"""``servegate bench`` end to end: output, JSON schema, secrets, exit codes, datasets."""

from __future__ import annotations

import base64
import io
import json
import os
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pytest
from tests.conftest import free_port

from servegate.bench import BenchSettings, run_point
from servegate.errors import UsageError

SECRET = "sk-test-never-shown-123"


def bench(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    """Run the command line and capture its output."""
    return subprocess.run(
        [sys.executable, "-m", "servegate", "bench", *args],
        capture_output=True,
        text=True,
        check=False,
        timeout=60,
        env={**os.environ, **(env or {})},
    )


def test_json_file_has_the_schema_and_every_sample(
    sse_server: Callable[..., str], tmp_path: Path
) -> None:
    """--json-file writes schema, versions, platform, settings, summary and raw samples
    per point."""
    url = sse_server("--ttft-ms", "5", "--itl-ms", "1")
    out = tmp_path / "r.json"
    proc = bench(
        "--url",
        url,
        "--concurrency",
        "1,2",
        "--requests",
        "4",
        "--input-len",
        "5",
        "--output-len",
        "3",
        "--json-file",
        str(out),
        "--api-key",
        SECRET,
    )
    assert proc.returncode == 0, proc.stderr
    doc = json.loads(out.read_text())
    assert doc["schema"] == "servegate.bench/1"
    assert {"version", "python", "platform"} <= doc.keys()
    assert [p["label"] for p in doc["points"]] == ["c=1", "c=2"]
    point = doc["points"][1]
    assert point["settings"]["concurrency"] == 2
    assert point["settings"]["api_key_set"] is True
    assert point["completed"] == 4
    for key in ("request_throughput", "output_throughput", "total_token_throughput"):
        assert point["summary"][key] > 0
    for metric in ("ttft", "tpot", "itl", "e2el"):
        for stat in ("mean", "p50", "p90", "p99"):
            assert f"{metric}_ms_{stat}" in point["summary"]
    sample = point["samples"][0]
    assert len(sample["chunks_s"]) == 3
    assert {"send_s", "end_s", "usage_output_tokens", "error"} <= sample.keys()
    assert "c=1" in proc.stdout and "TTFT" in proc.stdout and "out tok/s" in proc.stdout


def test_api_key_never_printed_or_stored(sse_server: Callable[..., str], tmp_path: Path) -> None:
    """The key from OPENAI_API_KEY is sent but appears in no output and no file."""
    url = sse_server()
    out = tmp_path / "r.json"
    proc = bench(
        "--url",
        url,
        "--requests",
        "2",
        "--input-len",
        "3",
        "--output-len",
        "2",
        "--json-file",
        str(out),
        env={"OPENAI_API_KEY": SECRET},
    )
    assert proc.returncode == 0, proc.stderr
    assert SECRET not in proc.stdout + proc.stderr + out.read_text()
    assert json.loads(out.read_text())["points"][0]["settings"]["api_key_set"] is True


def test_json_to_stdout_is_pure_json(sse_server: Callable[..., str]) -> None:
    """--json prints one JSON document on stdout; the readable block goes to stderr."""
    url = sse_server()
    proc = bench("--url", url, "--requests", "2", "--input-len", "3", "--output-len", "2", "--json")
    assert proc.returncode == 0, proc.stderr
    assert json.loads(proc.stdout)["points"][0]["completed"] == 2
    assert "TTFT" in proc.stderr


def test_error_rate_threshold_exits_1(sse_server: Callable[..., str]) -> None:
    """Failures above --max-error-rate: results still printed, then exit 1."""
    url = sse_server("--fail-every", "2")
    proc = bench(
        "--url",
        url,
        "--requests",
        "10",
        "--input-len",
        "3",
        "--output-len",
        "2",
        "--max-error-rate",
        "0.1",
    )
    assert proc.returncode == 1
    assert "http_500 5" in proc.stdout
    assert "above --max-error-rate" in proc.stderr


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--concurrency", "0"], "--concurrency"),
        (["--concurrency", "a,b"], "--concurrency"),
        (["--rate", "-3"], "--rate"),
        (["--requests", "0"], "--requests"),
        (["--requests", "5", "--duration", "3"], "--requests or --duration"),
        (["--output-len", "0"], "--output-len"),
        (["--timeout", "0"], "--timeout"),
        (["--max-error-rate", "2"], "--max-error-rate"),
        (["--engine", "nope"], "--engine"),
        (["--json-file", "/no/such/dir/x.json"], "--json-file"),
    ],
)
def test_bad_flags_exit_2(args: list[str], message: str) -> None:
    """Bad flag values: exit 2 with one line naming the flag, before any request."""
    proc = bench("--url", "http://127.0.0.1:9", *args)
    assert proc.returncode == 2, proc.stderr
    assert message in proc.stderr
    assert len(proc.stderr.strip().splitlines()) == 1


def test_unreachable_url_exits_1() -> None:
    """Nothing listening at --url: one sentence, exit 1 (could not measure)."""
    proc = bench("--url", f"http://127.0.0.1:{free_port()}", "--requests", "2")
    assert proc.returncode == 1
    assert proc.stderr.startswith("Error: cannot reach")
    assert len(proc.stderr.strip().splitlines()) == 1


def test_a_model_the_server_does_not_serve_names_its_message_and_model() -> None:
    """--model nosuch on a (simulated) vLLM: the server's own message and --model, in one
    sentence, exit 2 (bad input); under --json the same as one error object."""
    port = free_port()
    up = subprocess.run(
        [sys.executable, "-m", "servegate", "launch", "--engine", "vllm", "--name", "sim",
         "--port", str(port), "--", sys.executable, "-m", "servegate", "sim",
         "--engine", "vllm", "--startup", "0.2", "--port", str(port)],
        capture_output=True, text=True, check=False, timeout=60,
    )  # fmt: skip
    assert up.returncode == 0, up.stderr
    try:
        url = f"http://127.0.0.1:{port}"
        proc = bench("--url", url, "--model", "nosuch", "--requests", "1")
        as_json = bench("--url", url, "--model", "nosuch", "--requests", "1", "--json")
    finally:
        stop = [sys.executable, "-m", "servegate", "stop", "sim"]
        subprocess.run(stop, capture_output=True, check=True, timeout=60)
    message = (
        "the server does not serve --model 'nosuch' (HTTP 404: The model `nosuch` does not "
        f"exist.); pass one it serves with --model (GET {url}/v1/models lists them), or "
        "leave --model out to take its first."
    )
    assert (proc.returncode, proc.stderr, proc.stdout) == (2, f"Error: {message}\n", "")
    assert as_json.returncode == 2
    assert json.loads(as_json.stdout) == {
        "schema": "servegate.error/1",
        "error": message,
        "exit_code": 2,
    }


def test_jsonl_and_sharegpt_datasets(sse_server: Callable[..., str], tmp_path: Path) -> None:
    """Prompts come from a JSONL file or a ShareGPT file, cycled to the request count."""
    url = sse_server()
    jsonl = tmp_path / "p.jsonl"
    jsonl.write_text('{"prompt": "one two three", "output_len": 4}\n{"prompt": "four"}\n')
    result = run_point(
        BenchSettings(url=url, requests=4, dataset=str(jsonl), output_len=None, input_len=1)
    )
    assert result.completed == 4
    assert sorted(s.output_len or 0 for s in result.samples) == [0, 0, 4, 4]
    share = tmp_path / "s.json"
    share.write_text(
        json.dumps(
            [
                {
                    "conversations": [
                        {"from": "human", "value": "hi there"},
                        {"from": "gpt", "value": "x" * 40},
                    ]
                }
            ]
        )
    )
    result = run_point(
        BenchSettings(url=url, requests=2, dataset=f"sharegpt:{share}", output_len=None)
    )
    assert [s.output_len for s in result.samples] == [10, 10]


@pytest.mark.parametrize(
    ("content", "message"),
    [
        ("not json\n", "line 1 is not JSON"),
        ('{"text": "x"}\n', 'no "prompt"'),
        ("", "holds no prompts"),
    ],
)
def test_invalid_dataset_is_a_usage_error(
    sse_server: Callable[..., str], tmp_path: Path, content: str, message: str
) -> None:
    """An invalid dataset file is a UsageError naming the file and the fix."""
    url = sse_server()
    path = tmp_path / "bad.jsonl"
    path.write_text(content)
    with pytest.raises(UsageError, match=message):
        run_point(BenchSettings(url=url, requests=2, dataset=str(path)))
    with pytest.raises(UsageError, match="does not exist"):
        run_point(BenchSettings(url=url, requests=2, dataset=str(tmp_path / "missing.jsonl")))


def test_point_without_a_completed_request_exits_1(sse_server: Callable[..., str]) -> None:
    """Every measured request failing: the block is printed, then one Error line and exit 1."""
    url = sse_server("--malformed-every", "1")  # the probe reads only the first events
    proc = bench("--url", url, "--requests", "5", "--input-len", "3", "--output-len", "5")
    assert proc.returncode == 1, proc.stderr
    assert "malformed_stream 5" in proc.stdout
    assert proc.stderr.strip().splitlines()[-1] == (
        "Error: c=1: no request completed (malformed_stream 5); the failure_details in "
        "--json say why."
    )


@pytest.mark.parametrize(("every", "warned"), [(50, True), (101, False)])
def test_failures_above_one_percent_warn(
    sse_server: Callable[..., str], every: int, warned: bool
) -> None:
    """2 of 100 failed (2 %): a warning, exit 0; 1 of 100 (1 %, not above it): no warning."""
    url = sse_server("--fail-every", str(every))
    proc = bench(
        "--url", url, "--concurrency", "4", "--requests", "100", "--input-len", "3",
        "--output-len", "2", "--metrics-url", "",
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    warning = "warning: c=4: 2 of 100 requests failed (2.0%: http_500 2)"
    assert (warning in proc.stderr) is warned
    assert ("requests failed" in proc.stderr) is warned


def test_progress_off_a_terminal_is_one_line_per_point(sse_server: Callable[..., str]) -> None:
    """With stderr not a terminal: one closing line per point, no carriage returns."""
    url = sse_server()
    proc = bench(
        "--url", url, "--concurrency", "1,2", "--requests", "4", "--input-len", "3",
        "--output-len", "2",
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    assert "\r" not in proc.stderr
    lines = proc.stderr.splitlines()
    assert [line.split(" in ")[0] for line in lines] == [
        "c=1: finished, 4 completed, 0 failed",
        "c=2: finished, 4 completed, 0 failed",
    ]


def test_quiet_still_prints_the_results(sse_server: Callable[..., str]) -> None:
    """--quiet drops the progress lines; the result blocks and the sweep table remain."""
    url = sse_server()
    proc = bench(
        "--url", url, "--concurrency", "1,2", "--requests", "4", "--input-len", "3",
        "--output-len", "2", "--quiet",
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    assert proc.stderr == ""
    assert "c=1  model test-model" in proc.stdout and "c=2  model test-model" in proc.stdout
    assert "out tok/s" in proc.stdout


def test_progress_lines_every_30_s_off_a_terminal() -> None:
    """Off a terminal a long point writes a line each time another 30 s have passed."""
    from servegate.bench import Progress
    from servegate.cli.bench import ProgressLines

    out = io.StringIO()
    lines = ProgressLines("c=8", tty=False, stream=out)
    for elapsed in (0.5, 10.0, 29.9, 30.2, 30.7, 59.0, 91.0, 95.0):
        lines(Progress(done=int(elapsed), failed=1, chunks=0, elapsed_s=elapsed, total=400))
    # the ETA is the requests left at the rate so far: 369 * 30.2 / 31 and 308 * 91 / 92
    assert out.getvalue().splitlines() == [
        "c=8: 30/400 done, 1 failed, 0 chunks/s, 30 s, ETA 359 s",
        "c=8: 91/400 done, 1 failed, 0 chunks/s, 91 s, ETA 305 s",
    ]


def test_progress_eta_from_the_rate_or_the_duration() -> None:
    """The ETA: requests left at the rate so far; a time-bound point's time left; none
    before a request ended."""
    from servegate.bench import Progress

    assert Progress(done=0, failed=0, chunks=0, elapsed_s=3.0, total=10).eta_s is None
    assert Progress(done=4, failed=1, chunks=0, elapsed_s=10.0, total=10).eta_s == 10.0
    assert Progress(done=10, failed=0, chunks=0, elapsed_s=7.0, total=10).eta_s == 0.0
    timed = Progress(done=3, failed=0, chunks=0, elapsed_s=4.0, total=None, duration_s=10.0)
    assert timed.eta_s == 6.0
    assert Progress(done=3, failed=0, chunks=0, elapsed_s=4.0, total=None).eta_s is None


def test_url_credentials_never_printed(sse_server: Callable[..., str]) -> None:
    """A password in --url user-info is used for the requests, never echoed."""
    basic = base64.b64encode(b"bench:s3cret-pass").decode()
    url = sse_server("--require-auth", f"Basic {basic}")
    url = url.replace("http://", "http://bench:s3cret-pass@")
    for extra in ([], ["--json"]):
        proc = bench(
            "--url", url, "--concurrency", "1", "--requests", "2", "--input-len", "3",
            "--output-len", "2", *extra,
        )  # fmt: skip
        assert proc.returncode == 0, proc.stderr
        assert "s3cret-pass" not in proc.stdout + proc.stderr
        assert "http://***@127.0.0.1" in proc.stdout or extra == []
