"""Real campaigns on the simulator: stored, compared, crashes recorded, resumed, interrupted."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
from pathlib import Path

import pytest
from tests.campaign.helpers import query, servegate, wait_for_points, write_campaign
from tests.conftest import leftovers

from servegate.campaign.config import load_campaign
from servegate.campaign.interrupt import Interrupts
from servegate.campaign.progress import CampaignProgress
from servegate.campaign.rounds import RunOptions, run_campaign
from servegate.cli import main
from servegate.report import build_report
from servegate.store import CampaignStatus, Store

SECRET = "hf_test_secret_0123456789"


def test_campaign_is_stored_compared_and_the_crash_recorded(tmp_path: Path) -> None:
    """A campaign measures every point, shares servers, records the OOM start (for both
    variants of that server), compares with the baseline and masks secrets."""
    path = write_campaign(
        tmp_path,
        """
        [[variant]]
        name = "baseline"

        [[variant]]
        name = "faster"
        args = "--itl-ms 2"

        [[variant]]
        name = "oom"
        args = "--fail oom --fail-at load_weights"

        [[variant]]
        name = "chat"
        bench = { api = "chat" }

        [[variant]]
        name = "oom-chat"
        args = "--fail oom --fail-at load_weights"
        bench = { api = "chat" }
        """,
        server_extra=f'env = {{ HF_TOKEN = "{SECRET}" }}',
        bench="concurrency = [2]\nrequests = 6\nrepeats = 2",
    )
    db = tmp_path / "c.db"
    out = servegate("run", path, "--db", db)
    assert out.returncode == 0, out.stderr
    for name in ("baseline", "faster", "oom", "chat", "oom-chat"):
        assert name in out.stdout
    assert "faster:" in out.stdout  # the closing comparison line
    assert SECRET not in out.stderr + out.stdout

    points = {
        (str(v), str(load), int(r))  # type: ignore[call-overload]
        for v, load, r in query(
            db, "SELECT v.name, p.load, p.repeat FROM point p JOIN variant v ON v.id = p.variant_id"
        )
    }
    expected = {(v, "c=2", r) for v in ("baseline", "faster", "chat") for r in (0, 1)}
    assert points == expected

    with Store.open(db) as store:
        info = store.find_campaign("t")
        assert info is not None and info.status == "done"
        assert SECRET not in info.config_text
        attempts = store.attempts(info.id)
        report = build_report(store, info.id, resamples=200)
    by_variant = {a.variant: a for a in attempts}
    # chat shared baseline's server; oom-chat shared oom's, and its crash
    assert sorted(by_variant) == ["baseline", "faster", "oom", "oom-chat"]
    assert len([a for a in attempts if a.variant == "baseline"]) == 1
    for name in ("oom", "oom-chat"):
        oom = by_variant[name]
        assert oom.status == "crash"
        assert oom.verdict is not None
        assert oom.verdict["kind"] == "oom"
        assert oom.verdict["hint"]
        assert oom.verdict["tail"]
    assert by_variant["baseline"].env["HF_TOKEN"] == "***"
    assert by_variant["baseline"].stop_port_free is True
    assert by_variant["baseline"].versions["servegate"]
    faster = report.get("faster", "c=2", "output_throughput")
    assert faster is not None and faster.estimate is not None
    assert faster.estimate.variant > 1.2 * faster.estimate.baseline


@pytest.mark.slow
def test_resume_after_sigkill_repeats_nothing_and_leaves_no_process(tmp_path: Path) -> None:
    """SIGKILL mid-campaign kills every server; --resume measures only what was missing."""
    path = write_campaign(
        tmp_path,
        """
        [[variant]]
        name = "baseline"

        [[variant]]
        name = "b"
        args = "--itl-ms 6"
        """,
        bench="concurrency = [1]\nrequests = 6\nrepeats = 3",
    )
    db = tmp_path / "c.db"
    runner = subprocess.Popen(
        [sys.executable, "-m", "servegate", "run", str(path), "--db", str(db)],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    with runner:
        wait_for_points(db, 2)
        runner.kill()
        runner.wait()
    assert leftovers(grace_s=15) == []
    before = {
        row[0]: row[1:]
        for row in query(db, "SELECT id, variant_id, load, repeat, recorded_at FROM point")
    }
    assert 2 <= len(before) < 6

    out = servegate("run", path, "--db", db, "--resume")
    assert out.returncode == 0, out.stderr
    after = {
        row[0]: row[1:]
        for row in query(db, "SELECT id, variant_id, load, repeat, recorded_at FROM point")
    }
    assert len(after) == 6
    assert {k: after[k] for k in before} == before  # kept as they were, not measured again
    statuses = [row[0] for row in query(db, "SELECT status FROM attempt ORDER BY id")]
    assert "interrupted" in statuses
    assert query(db, "SELECT status FROM campaign") == [("done",)]
    assert "already stored" in out.stderr


@pytest.mark.parametrize(("signum", "code"), [(signal.SIGINT, 130), (signal.SIGTERM, 143)])
def test_ctrl_c_stops_the_server_and_keeps_the_results(
    tmp_path: Path, signum: int, code: int
) -> None:
    """The first SIGINT or SIGTERM stops the server, keeps the points, marks the run
    interrupted, prints the table and exits 128 + the signal."""
    path = write_campaign(
        tmp_path,
        """
        [[variant]]
        name = "baseline"

        [[variant]]
        name = "b"
        args = "--itl-ms 6"
        """,
        bench="concurrency = [1, 2]\nrequests = 6\nrepeats = 3",
    )
    db = tmp_path / "c.db"
    runner = subprocess.Popen(
        [sys.executable, "-m", "servegate", "run", str(path), "--db", str(db)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    with runner:
        wait_for_points(db, 2)
        runner.send_signal(signum)
        stdout, stderr = runner.communicate(timeout=30)
    assert runner.returncode == code, stderr
    assert "Interrupted" in stderr
    assert "baseline" in stdout  # the table of what was measured
    assert query(db, "SELECT status FROM campaign") == [("interrupted",)]
    assert ("interrupted",) in query(db, "SELECT status FROM attempt")
    assert int(query(db, "SELECT count(*) FROM point")[0][0]) >= 2  # type: ignore[call-overload]
    assert leftovers(grace_s=5) == []


@pytest.mark.slow
def test_server_dying_mid_benchmark_is_recorded_with_its_tail(tmp_path: Path) -> None:
    """A crash after READY fails that attempt with the signature and tail; the next runs."""
    path = write_campaign(
        tmp_path,
        """
        [[variant]]
        name = "baseline"

        [[variant]]
        name = "dies"
        args = "--fail crash-after-ready --fail-at 20req"
        bench = { requests = 40, concurrency = [1] }
        """,
        bench="concurrency = [1]\nrequests = 4\nrepeats = 1",
    )
    db = tmp_path / "c.db"
    out = servegate("run", path, "--db", db, "--max-failed-variants", "0")
    assert out.returncode == 1, out.stderr
    assert "more than --max-failed-variants 0" in out.stderr
    rows = query(
        db,
        "SELECT v.name, a.status, a.reason FROM attempt a JOIN variant v ON v.id = a.variant_id",
    )
    by_name = {str(r[0]): (r[1], str(r[2] or "")) for r in rows}
    assert by_name["baseline"][0] == "done"
    status, reason = by_name["dies"]
    assert status == "failed"
    assert reason.startswith("server died during the benchmark")
    assert "illegal memory access" in reason  # from the log tail


def test_busy_port_fails_preflight_and_launches_nothing(tmp_path: Path, port: int) -> None:
    """A fixed port held by another process fails the variant in preflight; nothing starts."""
    path = write_campaign(
        tmp_path,
        """
        [[variant]]
        name = "baseline"
        """,
        server_extra="",
    )
    text = path.read_text().replace('port = "auto"', f"port = {port}")
    text = text.replace("release_timeout_s = 10", "release_timeout_s = 0.3")
    path.write_text(text)
    campaign = load_campaign(path)
    with socket.socket() as sock, open(os.devnull, "w") as sink:
        sock.bind(("127.0.0.1", port))
        sock.listen()
        with Store.open(tmp_path / "c.db") as store, Interrupts() as interrupts:
            outcome = run_campaign(
                campaign,
                store,
                options=RunOptions(max_failed_variants=0, log_dir=tmp_path / "logs"),
                progress=CampaignProgress(sink),
                interrupts=interrupts,
            )
            attempts = store.attempts(outcome.campaign_id)
    assert outcome.exit_code == 1
    assert outcome.status is CampaignStatus.DONE  # a member, not its string
    assert outcome.failed_variants == ("baseline",)
    assert [a.status for a in attempts] == ["failed"]
    assert f"port {port} is in use" in (attempts[0].reason or "")
    assert not (tmp_path / "logs").exists() or not any((tmp_path / "logs").iterdir())


@pytest.mark.parametrize(
    ("body", "needle"),
    [
        ('[campaign]\nname = "c"\nbaseline = = "b"\n', "line 3"),
        ("BASE\nprot = 1\n", "unknown key server.prot"),
        ("BASE\n[[variant]]\nname = 'x'\n", "baseline = 'b' names no variant"),
        ("BASE\n[[variant]]\nname = 'b'\nargs = '{nope}'\n", "{nope}, which is not defined"),
        ("BASE\n[[variant]]\nname = 'b'\n[[variant]]\nname = 'b'\n", "two variants are named 'b'"),
        ("BASE\n[[variant]]\nname = 'b'\ncommand = 'no-such-server-x'\n", "not found on PATH"),
    ],
)
def test_bad_campaign_file_exits_2_naming_the_problem_and_starts_nothing(
    tmp_path: Path, body: str, needle: str, capsys: pytest.CaptureFixture[str]
) -> None:
    """Each bad file: exit 2, one Error line naming file and key or line, no server started."""
    marker = tmp_path / "started"
    base = (
        '[campaign]\nname = "c"\nbaseline = "b"\n[server]\n'
        f"command = \"{{python}} -c \\\"open('{marker}', 'w')\\\"\"\n"
    )
    path = tmp_path / "bad.toml"
    path.write_text(body.replace("BASE\n", base))
    with pytest.raises(SystemExit) as info:
        main(["run", str(path), "--db", str(tmp_path / "c.db")])
    err = capsys.readouterr().err
    assert info.value.code == 2, err
    assert err.startswith(f"Error: {path}")
    assert needle in err
    assert len(err.strip().splitlines()) == 1
    assert not marker.exists()
    assert not (tmp_path / "c.db").exists()


def test_only_unknown_variant_exits_2(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """--only with a name the file does not define lists the variants and exits 2."""
    path = write_campaign(tmp_path, '[[variant]]\nname = "baseline"\n')
    with pytest.raises(SystemExit) as info:
        main(["run", str(path), "--only", "nope", "--db", str(tmp_path / "c.db")])
    assert info.value.code == 2
    assert "--only nope: no such variant" in capsys.readouterr().err


def test_dry_run_prints_the_plan_and_starts_nothing(tmp_path: Path) -> None:
    """--dry-run lists servers, commands (secrets masked) and load points; no database."""
    path = write_campaign(
        tmp_path,
        """
        [[variant]]
        name = "baseline"
        [[variant]]
        name = "chat"
        bench = { api = "chat" }
        """,
        server_extra=f'env = {{ HF_TOKEN = "{SECRET}" }}',
    )
    out = servegate("run", path, "--dry-run", "--db", tmp_path / "c.db", timeout=30)
    assert out.returncode == 0, out.stderr
    assert out.stdout.count("server 1:") == 1
    assert "server 2:" not in out.stdout
    assert "env HF_TOKEN=***" in out.stdout
    assert SECRET not in out.stdout
    assert "variant chat: c=1, c=4 x 2 repeats (chat)" in out.stdout
    assert not (tmp_path / "c.db").exists()


def test_error_rate_above_the_threshold_exits_1(tmp_path: Path) -> None:
    """Failed requests above --max-error-rate make the run's exit code 1, naming the point.

    The prompts are longer than the simulated model's context, so the server answers
    every measured request with HTTP 400 (its probe request is short and passes).
    """
    path = write_campaign(
        tmp_path,
        """
        [[variant]]
        name = "baseline"
        args = "--max-model-len 100"
        bench = { input_len = 200 }
        """,
        bench="concurrency = [2]\nrequests = 10\nrepeats = 1",
    )
    with open(os.devnull, "w") as sink, Store.open(tmp_path / "c.db") as store:
        with Interrupts() as interrupts:
            outcome = run_campaign(
                load_campaign(path),
                store,
                options=RunOptions(max_error_rate=0.05, log_dir=tmp_path / "logs"),
                progress=CampaignProgress(sink),
                interrupts=interrupts,
            )
        points = store.points(outcome.campaign_id)
    assert [p.failed > 0 for p in points] == [True]
    assert outcome.exit_code == 1
    assert "above --max-error-rate 0.05 (worst: baseline c=2 repeat 1" in outcome.breaches[0]


def test_timeout_is_recorded_and_the_campaign_goes_on(tmp_path: Path) -> None:
    """A start that hangs past timeout_s is a TIMEOUT with its tail; the next variant runs."""
    path = write_campaign(
        tmp_path,
        """
        [[variant]]
        name = "baseline"
        args = "--fail hang"

        [[variant]]
        name = "ok"
        """,
        bench="concurrency = [1]\nrequests = 3\nrepeats = 1",
    )
    path.write_text(path.read_text().replace("timeout_s = 30", "timeout_s = 3"))
    with open(os.devnull, "w") as sink, Store.open(tmp_path / "c.db") as store:
        with Interrupts() as interrupts:
            outcome = run_campaign(
                load_campaign(path),
                store,
                options=RunOptions(log_dir=tmp_path / "logs"),
                progress=CampaignProgress(sink),
                interrupts=interrupts,
            )
        attempts = {a.variant: a for a in store.attempts(outcome.campaign_id)}
        points = store.points(outcome.campaign_id)
    assert outcome.exit_code == 0
    assert outcome.failed_variants == ("baseline",)
    hung = attempts["baseline"]
    assert hung.status == "timeout"
    assert hung.verdict is not None and hung.verdict["tail"]
    assert attempts["ok"].status == "done"
    assert [p.variant for p in points] == ["ok"]


def test_busy_fixed_port_fails_at_once_naming_its_holder_and_exits_1(
    tmp_path: Path, port: int
) -> None:
    """A fixed port held by another process fails each server's preflight at once (not
    after release_timeout_s) naming the holder's PID; with nothing measured, exit 1."""
    path = write_campaign(
        tmp_path,
        """
        [[variant]]
        name = "baseline"

        [[variant]]
        name = "b"
        args = "--itl-ms 6"
        """,
    )
    text = path.read_text().replace('port = "auto"', f"port = {port}")
    path.write_text(text.replace("release_timeout_s = 10", "release_timeout_s = 600"))
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", port))
        sock.listen()
        out = servegate("run", path, "--db", tmp_path / "c.db", timeout=60)
    assert out.returncode == 1, out.stderr
    assert f"port {port} is in use by PID {os.getpid()}" in out.stderr
    assert "no variant could be measured" in out.stderr
    reasons = [str(r[0]) for r in query(tmp_path / "c.db", "SELECT reason FROM attempt")]
    assert len(reasons) == 2
    assert all(f"PID {os.getpid()}" in reason for reason in reasons)
    assert not (tmp_path / "c-logs").exists() or not any((tmp_path / "c-logs").iterdir())


def test_a_campaign_where_every_variant_crashes_exits_1(tmp_path: Path) -> None:
    """When no variant could be measured (every start crashed), run exits 1 and says so."""
    path = write_campaign(
        tmp_path,
        """
        [[variant]]
        name = "baseline"
        args = "--fail oom --fail-at load_weights"
        """,
    )
    out = servegate("run", path, "--db", tmp_path / "c.db")
    assert out.returncode == 1, out.stderr
    assert "Error: no variant could be measured" in out.stderr
    assert "baseline" in out.stdout  # the table still shows the crash


@pytest.mark.parametrize(
    ("setting", "key"),
    [("port = true", "server.port"), ("rate = nan", "bench.rate")],
)
def test_dry_run_checks_the_file_too(tmp_path: Path, setting: str, key: str) -> None:
    """--dry-run refuses what run refuses (port = true, rate = nan), with exit 2."""
    path = write_campaign(tmp_path, '[[variant]]\nname = "baseline"\n')
    text = path.read_text()
    if setting.startswith("port"):
        text = text.replace('port = "auto"', setting)
    else:
        text = text.replace("[bench]\n", f"[bench]\n{setting}\n")
    path.write_text(text)
    out = servegate("run", path, "--dry-run", "--db", tmp_path / "c.db", timeout=30)
    assert out.returncode == 2, out.stdout + out.stderr
    assert key in out.stderr
    assert len(out.stderr.strip().splitlines()) == 1
    assert not (tmp_path / "c.db").exists()
