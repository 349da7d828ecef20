"""``servegate bench`` end to end: output, JSON schema, secrets, exit codes, datasets."""

from __future__ import annotations

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
    """--json writes schema, versions, platform, settings, summary and raw samples per point."""
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
        "--json",
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
        "--json",
        str(out),
        env={"OPENAI_API_KEY": SECRET},
    )
    assert proc.returncode == 0, proc.stderr
    assert SECRET not in proc.stdout + proc.stderr + out.read_text()
    assert json.loads(out.read_text())["points"][0]["settings"]["api_key_set"] is True


def test_json_to_stdout_is_pure_json(sse_server: Callable[..., str]) -> None:
    """--json - prints one JSON document on stdout; the readable block goes to stderr."""
    url = sse_server()
    proc = bench(
        "--url", url, "--requests", "2", "--input-len", "3", "--output-len", "2", "--json", "-"
    )
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
        (["--json", "/no/such/dir/x.json"], "--json"),
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
