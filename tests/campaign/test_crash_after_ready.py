"""A campaign's own crash patterns name the cause of a death after READY too.

The lines a server writes after READY are read by the gate's matcher, with the
campaign's ``crash = [...]`` patterns and the engine's signatures, and the cause is
chosen as during startup (a specific signature beats a wrapper).
"""

from __future__ import annotations

import textwrap
from pathlib import Path

import pytest
from tests.campaign.helpers import query, servegate, write_campaign

from servegate.campaign.crash import classify
from servegate.engines import get_profile

PATTERN = r"KV shard \d+ lost its heartbeat"
DEATH = "[2026-01-01 00:00:09] watchdog: KV shard 3 lost its heartbeat; aborting"

# A server that serves (the simulator, its log relayed), then, once the benchmark is well
# under way, prints a line only the campaign's pattern knows and dies.
DYING_SERVER = textwrap.dedent(
    """\
    import re, subprocess, sys, threading, time, urllib.request

    port = sys.argv[1]
    sim = subprocess.Popen(
        [sys.executable, "-m", "servegate", "sim", "--engine", "sglang", "--port", port,
         "--profile", "fast", "--time-scale", "0.2"],
        stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
    )
    ready = threading.Event()

    def relay():
        for line in sim.stdout:
            sys.stdout.write(line)
            sys.stdout.flush()
            if "The server is fired up and ready to roll" in line:
                ready.set()

    threading.Thread(target=relay, daemon=True).start()
    ready.wait()
    while True:  # until several of the benchmark's prompts (32 tokens each) were served
        try:
            with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=5) as r:
                text = r.read().decode()
            m = re.search(r"^sglang:prompt_tokens_total(?:{.*})? (\\S+)", text, re.M)
            if m and float(m.group(1)) >= 200:
                break
        except OSError:
            pass
        time.sleep(0.02)
    print(DEATH, flush=True)
    sim.kill()
    sim.wait()
    sys.exit(1)
    """
).replace("DEATH", repr(DEATH))


@pytest.mark.slow
def test_campaign_crash_pattern_names_a_death_after_ready(tmp_path: Path) -> None:
    """A server that prints a line matching only the campaign's crash pattern after READY,
    then dies mid-bench: the attempt's reason names that pattern and the matched line
    is in its tail."""
    script = tmp_path / "dying_server.py"
    script.write_text(DYING_SERVER, encoding="utf-8")
    path = write_campaign(
        tmp_path,
        """
        [[variant]]
        name = "dies"
        """,
        baseline="dies",
        bench="concurrency = [1]\nrequests = 400\nrepeats = 1",
        server_extra=f"crash = ['{PATTERN}']",
    )
    text = path.read_text(encoding="utf-8")
    sim_command = text.split('command = "', 1)[1].split('"', 1)[0]
    path.write_text(
        text.replace(sim_command, f"{{python}} {script.as_posix()} {{port}}"), encoding="utf-8"
    )
    db = tmp_path / "c.db"
    out = servegate("run", path, "--db", db, timeout=120)
    (row,) = query(
        db,
        "SELECT a.status, a.reason FROM attempt a JOIN variant v ON v.id = a.variant_id",
    )
    status, reason = str(row[0]), str(row[1] or "")
    assert status == "failed", out.stderr
    first = reason.splitlines()[0]
    assert first.startswith("server died during the benchmark"), reason
    assert f"log matched --crash {PATTERN!r} (signature)" in first, reason
    assert DEATH in reason  # the tail that follows


def log(tmp_path: Path, *lines: str) -> Path:
    """A log file holding ``lines``."""
    path = tmp_path / "server.log"
    path.write_text("".join(line + "\n" for line in lines), encoding="utf-8")
    return path


def test_a_specific_signature_beats_the_wrapper_before_it(tmp_path: Path) -> None:
    """SGLang's 'Scheduler hit an exception' then a CUDA OOM: the OOM is the cause."""
    path = log(
        tmp_path,
        "[2026-01-01 00:00:09] Scheduler hit an exception: Traceback (most recent call last):",
        '  File "/sglang/srt/managers/scheduler.py", line 2876, in run_scheduler_process',
        "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 1.75 GiB.",
    )
    cause = classify(path, get_profile("sglang"))
    assert cause is not None
    assert cause.kind == "oom"
    assert cause.matched_line.startswith("torch.OutOfMemoryError")


def test_a_wrapper_alone_carries_the_traceback_line(tmp_path: Path) -> None:
    """A wrapper signature with no specific cause: its title and the exception line."""
    path = log(
        tmp_path,
        "[2026-01-01 00:00:09] Scheduler hit an exception: Traceback (most recent call last):",
        '  File "/sglang/srt/managers/scheduler.py", line 2876, in run_scheduler_process',
        "    self.event_loop()",
        "KeyError: 'rid-17'",
    )
    cause = classify(path, get_profile("sglang"))
    assert cause is not None
    assert (cause.kind, cause.reason) == (
        "engine-init",
        "the scheduler raised an exception: KeyError: 'rid-17'",
    )


def test_only_lines_after_start_count_and_the_campaign_pattern_comes_first(
    tmp_path: Path,
) -> None:
    """Lines before ``start`` are ignored; on one line a campaign pattern beats the
    profile's signature, as --crash does in the gate."""
    before = "torch.OutOfMemoryError: CUDA out of memory during startup, survived"
    after = "torch.OutOfMemoryError: CUDA out of memory. KV shard 3 lost its heartbeat"
    path = log(tmp_path, before, "The server is fired up and ready to roll!", after)
    start = len(before) + 1
    sglang = get_profile("sglang")
    assert classify(path, sglang, start=path.stat().st_size) is None
    profile_only = classify(path, sglang, start=start)
    assert profile_only is not None and profile_only.kind == "oom"
    both = classify(path, sglang, crash=(PATTERN,), start=start)
    assert both is not None
    assert (both.kind, both.matched_line) == ("signature", after)


def test_an_unreadable_log_has_no_cause(tmp_path: Path) -> None:
    """A log that cannot be read names no cause (and raises nothing)."""
    assert classify(tmp_path / "missing.log", get_profile("vllm"), crash=(PATTERN,)) is None
