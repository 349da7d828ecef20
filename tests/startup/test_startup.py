"""Cold or warm, the page cache, the start history, the ETA and --timeout auto."""

from __future__ import annotations

import json
import os
import re
import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest

from servegate.launch import state
from servegate.startup.caches import cache_paths, measure
from servegate.startup.eta import auto_rule, auto_timeout, estimate, is_cold
from servegate.startup.history import ConfigKey, History, StartRow, history_path
from servegate.startup.pagecache import model_files, resident

PY = sys.executable


def _servegate(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [PY, "-m", "servegate", *args],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
        env={**os.environ, **(env or {})},
    )


def _fill(folder: Path, count: int, size: int = 1000) -> None:
    folder.mkdir(parents=True, exist_ok=True)
    for index in range(count):
        (folder / f"k{index}.so").write_bytes(b"x" * size)


def test_cache_paths_follow_the_engines_variables(tmp_path: Path) -> None:
    """The variables that move each cache move it here too; defaults follow HOME."""
    env = {
        "HOME": str(tmp_path / "home"),
        "TRITON_CACHE_DIR": str(tmp_path / "t"),
        "TORCHINDUCTOR_CACHE_DIR": str(tmp_path / "i"),
        "VLLM_CACHE_ROOT": str(tmp_path / "v"),
        "FLASHINFER_WORKSPACE_BASE": str(tmp_path / "f"),
    }
    paths = cache_paths(env)
    assert paths["triton"] == tmp_path / "t"
    assert paths["torchinductor"] == tmp_path / "i"
    assert paths["vllm_torch_compile"] == tmp_path / "v" / "torch_compile_cache"
    assert paths["flashinfer"] == tmp_path / "f" / ".cache" / "flashinfer"
    assert paths["cuda"] == tmp_path / "home" / ".nv" / "ComputeCache"
    _fill(tmp_path / "t" / "abc", 3, 100)
    triton = next(s for s in measure("vllm", env) if s.name == "triton")
    assert (triton.files, triton.bytes) == (3, 300)


def test_cold_when_an_empty_cache_fills_warm_when_it_barely_grows(tmp_path: Path) -> None:
    """The rule: >= 5 new files into an empty cache, or >= 10 % more bytes, is cold."""
    env = {"HOME": str(tmp_path), "TRITON_CACHE_DIR": str(tmp_path / "t")}
    empty = measure("vllm", env)
    _fill(tmp_path / "t", 6)
    filled = measure("vllm", env)
    assert is_cold(empty, filled) is True
    _fill(tmp_path / "t" / "more", 5, 10)  # 5 more files, 50 bytes: under 10 % of 6000
    assert is_cold(filled, measure("vllm", env)) is False
    assert is_cold(filled, filled) is False
    assert is_cold((), filled) is None


def test_page_cache_residency_of_a_real_file(tmp_path: Path) -> None:
    """mincore: a file evicted from the page cache reads 0 %, after a full read 100 %."""
    path = tmp_path / "model.safetensors"
    path.write_bytes(os.urandom(4 << 20))
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
        os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)
    finally:
        os.close(fd)
    evicted = resident([path])
    assert evicted is not None and evicted.bytes == 4 << 20
    assert evicted.pct is not None and evicted.pct < 50
    path.read_bytes()
    warm = resident([path])
    assert warm is not None and warm.pct == 100.0


def test_model_files_from_a_folder_a_file_and_the_hub_cache(tmp_path: Path) -> None:
    """A folder gives its weights; a Hub id is found in HF_HUB_CACHE's newest snapshot."""
    folder = tmp_path / "m"
    folder.mkdir()
    (folder / "config.json").write_text("{}")
    (folder / "model.safetensors").write_bytes(b"w")
    assert model_files(str(folder)) == [folder / "model.safetensors"]
    assert model_files(str(folder / "config.json")) == [folder / "config.json"]
    snapshot = tmp_path / "hub" / "models--org--tiny" / "snapshots" / "abc"
    snapshot.mkdir(parents=True)
    (snapshot / "model.safetensors").write_bytes(b"w")
    assert model_files("org/tiny", {"HF_HUB_CACHE": str(tmp_path / "hub")}) == [
        snapshot / "model.safetensors"
    ]
    assert model_files("org/absent", {"HF_HUB_CACHE": str(tmp_path / "hub")}) == []


def _row(elapsed: float, cold: bool, load: float, status: str = "ready") -> StartRow:
    return StartRow(
        id=1,
        started_at="2026-01-01T00:00:00+00:00",
        config_key="k",
        engine="vllm",
        command=(),
        host="h",
        gpu=None,
        via="launch",
        status=status,
        kind=None,
        reason="",
        elapsed_s=elapsed,
        cold=cold,
        phases=({"name": "load_weights", "start_s": 1.0, "end_s": 1.0 + load},),
        startup={},
    )


def test_eta_matches_temperature_and_counts_down_by_phase() -> None:
    """Warm starts predict a warm one; inside a phase the ETA subtracts what is done."""
    rows = [_row(100.0, True, 50.0), _row(20.0, False, 10.0), _row(22.0, False, 12.0)]
    warm = estimate(rows, False)
    assert warm is not None and (warm.total_s, warm.based_on, warm.cold) == (21.0, 2, False)
    assert warm.phases["load_weights"] == (11.0, 12.0)
    # 4 s into load_weights: 7 s of it left plus 9 s after it ends
    assert warm.remaining(5.0, "load_weights", 4.0) == pytest.approx(16.0)
    assert warm.remaining(30.0, None, 0.0) == 0.0
    cold = estimate(rows, True)
    assert cold is not None and cold.total_s == 100.0
    assert estimate([_row(5.0, False, 1.0, status="crash")], False) is None
    # auto: max of the same temperature x 1.5, floor 60 s; the other temperature x 3
    assert auto_timeout(rows, True) == 150.0
    assert auto_timeout(rows, False) == 60.0
    assert auto_timeout([_row(40.0, False, 1.0)], True) == 120.0
    assert auto_timeout([], None) is None


def _launch(
    port: int, *extra: str, command: tuple[str, ...] = ()
) -> subprocess.CompletedProcess[str]:
    cmd = command or (PY, "-m", "servegate", "sim", "--engine", "vllm", "--startup", "1.5")
    return _servegate(
        "launch",
        "--engine",
        "vllm",
        "--port",
        str(port),
        "--name",
        "hist",
        *extra,
        "--",
        *cmd,
        "--port",
        str(port),
    )


def test_history_eta_and_timeout_auto_across_real_starts(port: int) -> None:
    """First start: no ETA, --timeout auto refused (exit 2, nothing started). Second start:
    an ETA from the first, shown per phase on stderr; history lists both, secrets masked."""
    refused = _launch(port, "--timeout", "auto")
    assert refused.returncode == 2
    assert "--timeout auto needs a past READY start" in refused.stderr
    assert "pass --timeout SECONDS" in refused.stderr
    sim = (PY, "-m", "servegate", "sim", "--engine", "vllm", "--startup", "1.5")
    secret = ("--model", "hunter2-secret")  # a token's value, passed in --env below
    try:
        first = _launch(port, "--json", "--env", "HF_TOKEN=hunter2-secret", command=(*sim, *secret))
        assert first.returncode == 0, first.stderr
        startup = json.loads(first.stdout)["startup"]
        assert startup["eta_s"] is None and startup["cold"] is False
        assert startup["history_id"] == 1
    finally:
        _servegate("stop", "hist")
    try:
        second = _launch(
            port, "--timeout", "auto", "--env", "HF_TOKEN=hunter2-secret", command=(*sim, *secret)
        )
        assert second.returncode == 0, second.stderr
        # off a terminal: one line per phase, with the ETA
        assert "phase load_weights at " in second.stderr and "; ETA " in second.stderr
        assert "startup: warm; " in second.stderr and "ETA was " in second.stderr
    finally:
        _servegate("stop", "hist")
    listing = _servegate("history", "--json")
    assert listing.returncode == 0, listing.stderr
    rows = json.loads(listing.stdout)
    assert [row["id"] for row in rows] == [2, 1]
    assert rows[0]["config_key"] == rows[1]["config_key"]  # the port is not the configuration
    assert rows[0]["startup"]["eta_s"] == pytest.approx(rows[1]["elapsed_s"], abs=0.01)
    phases = {p["name"]: p for p in rows[0]["phases"]}
    assert phases["load_weights"]["progress"]["unit"] == "shards"
    assert "hunter2-secret" not in history_path().read_bytes().decode("utf-8", "replace")
    text = _servegate("history", "--engine", "vllm", "--limit", "1")
    assert text.stdout.startswith("#2 ") and "load_weights" in text.stdout
    assert _servegate("history", "--engine", "sglang").stdout == ""


def test_a_start_that_fills_a_cache_is_cold(port: int, tmp_path: Path) -> None:
    """A server that writes JIT kernels into its (moved) Triton cache is recorded cold."""
    cache = tmp_path / "triton"
    script = (
        f"import os, runpy, sys; os.makedirs({str(cache)!r}, exist_ok=True); "
        f"[open(os.path.join({str(cache)!r}, f'k{{i}}.so'), 'w').write('x' * 100) "
        "for i in range(8)]; sys.argv = ['servegate', 'sim', *sys.argv[1:]]; "
        "runpy.run_module('servegate', run_name='__main__')"
    )
    try:
        result = _launch(
            port,
            "--json",
            "--env",
            f"TRITON_CACHE_DIR={cache}",
            command=(PY, "-c", script, "--engine", "vllm", "--startup", "0.5"),
        )
        assert result.returncode == 0, result.stderr
        startup = json.loads(result.stdout)["startup"]
        assert startup["cold"] is True
        triton = next(c for c in startup["caches"] if c["name"] == "triton")
        assert (triton["before"]["files"], triton["after"]["files"]) == (0, 8)
    finally:
        _servegate("stop", "hist")


def test_history_bad_input_and_unreadable_file(tmp_path: Path) -> None:
    """--limit 0 is exit 2; a history that is not SQLite is one sentence and exit 2."""
    assert _servegate("history", "--limit", "0").returncode == 2
    broken = tmp_path / "h.db"
    broken.write_bytes(b"not a database at all" * 100)
    result = _servegate("history", env={"SERVEGATE_HISTORY": str(broken)})
    assert result.returncode == 2
    assert "not a usable SQLite file" in result.stderr


def test_timeout_auto_says_which_timeout_it_chose(port: int) -> None:
    """--timeout auto names the timeout it chose and the rule, on a progress line and in
    the verdict JSON's startup.timeout_auto; the 3x rule says the temperature differs."""
    rule = auto_rule([_row(137.3, False, 1.0)], True)
    assert rule is not None
    assert rule.describe() == (
        "412 s (3x the one past warm READY start of this configuration, 137.3 s; "
        "this start is expected cold)"
    )
    try:
        first = _launch(port, "--json")
        assert first.returncode == 0, first.stderr
        assert json.loads(first.stdout)["startup"]["timeout_auto"] is None
        assert "timeout auto" not in first.stderr
    finally:
        _servegate("stop", "hist")
    took = json.loads(first.stdout)["elapsed_s"]
    try:
        second = _launch(port, "--json", "--timeout", "auto")
        assert second.returncode == 0, second.stderr
    finally:
        _servegate("stop", "hist")
    said = (
        "timeout auto: 60 s (the 60 s floor; 1.5x the one past warm READY start of this "
        f"configuration, {took:.1f} s, is less)"
    )
    assert said in second.stderr.splitlines()
    chosen = json.loads(second.stdout)["startup"]["timeout_auto"]
    assert (chosen["timeout_s"], chosen["margin"], chosen["based_on"]) == (60.0, 1.5, 1)
    assert chosen["rule"] == said.removeprefix("timeout auto: ")


def test_history_text_shows_a_crashs_kind_and_reason() -> None:
    """The text view of history gives a CRASH its kind and reason, under its line."""
    dies = "print('loading', flush=True); raise SystemExit(7)"
    crashed = _servegate("launch", "--ready", "never", "--name", "hist", "--", PY, "-c", dies)
    assert crashed.returncode == 1, crashed.stderr
    text = _servegate("history").stdout.splitlines()
    assert text[0].startswith("#1 ") and " CRASH " in text[0]
    assert text[1] == "    exit: the server exited with code 7"


def test_a_wait_on_a_server_already_up_is_left_out_of_the_eta(port: int) -> None:
    """A wait on a server that was already up is READY at once, says so, and is recorded
    as already up: no ETA for the next wait from its 0.0 s, no --timeout auto from it."""
    try:
        up = _launch(port)
        assert up.returncode == 0, up.stderr
        tracked = state.load("hist")
        assert tracked is not None
        watch = ("wait", "--engine", "vllm", "--port", str(port), "--log", tracked.log_path)
        first = _servegate(*watch, "--json")
        second = _servegate(*watch)
        refused = _servegate(*watch, "--timeout", "auto")
    finally:
        _servegate("stop", "hist")
    assert (first.returncode, second.returncode) == (0, 0), first.stderr + second.stderr
    verdict = json.loads(first.stdout)
    assert verdict["already_up"] is True
    startup = verdict["startup"]
    assert (startup["already_up"], startup["cold"], startup["eta_s"]) == (True, None, None)
    assert second.stdout.startswith("SERVER READY after ")
    assert second.stdout.splitlines()[0].endswith("s (it was already up)")
    assert "startup: the server was already up when wait began" in second.stderr
    assert "; ETA " not in second.stderr  # no phase line has an ETA from a 0.0 s wait
    assert refused.returncode == 2, refused.stdout
    assert "--timeout auto needs a past READY start" in refused.stderr
    rows = json.loads(_servegate("history", "--json").stdout)
    assert [(row["via"], row["startup"]["already_up"]) for row in rows] == [
        ("wait", True),
        ("wait", True),
        ("launch", False),
    ]
    # the wait's own time, whatever a busy machine made it, then the mark
    assert re.search(r" READY \d+\.\ds already up ", _servegate("history", "--limit", "1").stdout)


def _damaged_history(path: Path) -> None:
    """A real history of 200 starts, then one page of its table overwritten with junk."""
    key = ConfigKey(engine="vllm", command=("python", "server.py"), host="h", gpu=None)
    verdict = {"started_at": "2026-01-01T00:00:00", "status": "ready", "elapsed_s": 1.0}
    with History.open(path) as history:
        for _ in range(200):
            history.record(
                key, via="launch", verdict=verdict, cold=False, startup={"pad": "x" * 300}
            )
    conn = sqlite3.connect(path)
    try:
        size = conn.execute("PRAGMA page_size").fetchone()[0]
        root = conn.execute("SELECT rootpage FROM sqlite_master WHERE name = 'starts'").fetchone()[
            0
        ]
    finally:
        conn.close()
    with path.open("r+b") as handle:
        handle.seek((root - 1) * size)  # the table's root: every read of a start crosses it
        handle.write(b"\xde\xad\xbe\xef" * (size // 8))


def test_a_damaged_page_in_the_history_never_costs_a_start(port: int) -> None:
    """With a page of history.db overwritten, launch warns (naming the file) and the
    server starts; ``history`` says what is wrong in one sentence and exits 2."""
    path = history_path()
    _damaged_history(path)
    try:
        started = _launch(port)
        assert started.returncode == 0, started.stderr
    finally:
        _servegate("stop", "hist")
    assert "Traceback" not in started.stderr
    warning = f"servegate: start history not read: the start history {path} is damaged"
    assert warning in started.stderr
    listed = _servegate("history")
    assert listed.returncode == 2
    assert listed.stderr.startswith(f"Error: the start history {path} is damaged (")
    assert listed.stderr.count("\n") == 1, listed.stderr


def test_a_damaged_history_never_costs_a_campaign(tmp_path: Path) -> None:
    """``run`` with a damaged history.db: its start is measured, with a warning naming
    the file (before: exit 3 and a traceback before anything started)."""
    path = history_path()
    _damaged_history(path)
    sim = f"{PY} -m servegate sim --engine sglang --port {{port}} --profile fast --time-scale 0.2"
    campaign = tmp_path / "c.toml"
    campaign.write_text(
        '[campaign]\nname = "dmg"\nbaseline = "baseline"\n\n'
        f'[server]\nengine = "sglang"\ncommand = "{sim}"\nport = "auto"\ntimeout_s = 30\n\n'
        "[bench]\ninput_len = 32\noutput_len = 4\nconcurrency = [1]\nrequests = 2\n"
        'repeats = 1\n\n[[variant]]\nname = "baseline"\n',
        encoding="utf-8",
    )
    done = _servegate("run", str(campaign), "--db", str(tmp_path / "r.db"), "--quiet")
    assert done.returncode == 0, done.stderr  # 1: no variant could be measured
    assert "Traceback" not in done.stderr
    assert f"start history not read: the start history {path} is damaged" in done.stderr
