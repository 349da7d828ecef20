"""A small campaign whose servers run on the SSH host: the runner and the store here, each
start (preflight, launch, gate, bench, stop) there, its logs copied back."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import psutil
import pytest
from tests.campaign.helpers import query, wait_for_points, write_campaign
from tests.remote.helpers import run
from tests.remote.sshd import Remote

from servegate.campaign.config import load_campaign
from servegate.campaign.interrupt import Interrupts
from servegate.campaign.progress import CampaignProgress
from servegate.campaign.rounds import RunOptions, run_campaign
from servegate.campaign.ssh import SshHost
from servegate.store import Store


def test_a_campaign_on_the_host_is_stored_here(host: Remote, tmp_path: Path) -> None:
    """Two variants, one of them crashing while it starts, on the simulator over SSH:
    the store here holds the READY variant's points and the CRASH; logs copied back,
    readable by their owner only (0600)."""
    path = write_campaign(
        tmp_path,
        """
        [[variant]]
        name = "baseline"

        [[variant]]
        name = "oom"
        args = "--fail oom --fail-at load_weights"
        """,
        name="remote-demo",
    )
    path.write_text(path.read_text().replace("{python}", host.python))
    campaign = load_campaign(path)
    logs = tmp_path / "logs"
    with (
        Store.open(tmp_path / "c.db") as store,
        Interrupts() as interrupts,
        open(os.devnull, "w") as sink,
    ):
        outcome = run_campaign(
            campaign,
            store,
            options=RunOptions(log_dir=logs),
            progress=CampaignProgress(sink),
            interrupts=interrupts,
            cluster=SshHost(host.alias, campaign),
        )
        attempts = {a.variant: a for a in store.attempts(outcome.campaign_id)}
        points = store.points(outcome.campaign_id)
    assert attempts["baseline"].status == "done"
    assert attempts["oom"].status == "crash"
    assert {(p.variant, p.load) for p in points} == {("baseline", "c=1"), ("baseline", "c=4")}
    copied = sorted(p.name for p in logs.iterdir())
    assert any("baseline" in name for name in copied) and any("oom" in name for name in copied)
    assert "Load weight begin" in next(logs.glob("*oom*")).read_text()
    modes = {p.name: oct(p.stat().st_mode & 0o777) for p in logs.iterdir()}
    assert set(modes.values()) == {"0o600"}, modes  # as a local server's log: may hold tokens
    code, out, _ = run(host, "cli", "ps")
    assert (code, out) == (0, [])


def test_a_dropped_connection_during_a_start_is_followed_again(
    host: Remote, tmp_path: Path
) -> None:
    """The connection of a start is killed while its server runs: the start goes on on the
    host, the runner follows it again, and every point is stored here."""
    path = write_campaign(tmp_path, '[[variant]]\nname = "baseline"\n', name="remote-drop")
    path.write_text(path.read_text().replace("{python}", host.python))
    campaign = load_campaign(path)
    dropped = threading.Event()

    def drop_once() -> None:
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline and not dropped.is_set():
            servers = [p for p in psutil.process_iter(["cmdline"]) if _is_sim(p, host)]
            if servers and host.sessions():
                host.drop_connections()
                dropped.set()
                return
            time.sleep(0.02)

    dropper = threading.Thread(target=drop_once, daemon=True)
    dropper.start()
    with (
        Store.open(tmp_path / "c.db") as store,
        Interrupts() as interrupts,
        open(os.devnull, "w") as sink,
    ):
        outcome = run_campaign(
            campaign,
            store,
            options=RunOptions(log_dir=tmp_path / "logs"),
            progress=CampaignProgress(sink),
            interrupts=interrupts,
            cluster=SshHost(host.alias, campaign),
        )
        attempts = store.attempts(outcome.campaign_id)
        points = store.points(outcome.campaign_id)
    dropper.join(timeout=60)
    assert dropped.is_set()
    assert [a.status for a in attempts] == ["done"]
    assert len(points) == 4  # two load points, two repeats


def _is_sim(proc: psutil.Process, host: Remote) -> bool:
    """A simulator started on the host (by its venv's python) for a campaign."""
    cmd = proc.info["cmdline"] or []
    return cmd[:1] == [host.python] and "sim" in cmd and "--profile" in cmd


def test_servegate_run_with_server_host(host: Remote, tmp_path: Path) -> None:
    """servegate run on a file whose [server] host is the SSH host: exit 0, the results
    table here, the attempts recorded with that host."""
    path = write_campaign(
        tmp_path,
        '[[variant]]\nname = "baseline"\n',
        name="remote-cli",
        server_extra=f'host = "{host.alias}"',
    )
    path.write_text(path.read_text().replace("{python}", host.python))
    done = subprocess.run(
        [sys.executable, "-m", "servegate", "run", str(path), "--db", str(tmp_path / "c.db"), "-q"],
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
        env=host.env(),
        cwd=tmp_path,
    )
    assert done.returncode == 0, done.stderr
    with Store.open(tmp_path / "c.db") as store:
        (campaign,) = store.campaigns()
        attempts = store.attempts(campaign.id)
    assert [(a.status, a.host) for a in attempts] == [("done", host.alias)]


@pytest.mark.slow
def test_ctrl_c_during_a_campaign_on_the_host_keeps_its_points_and_resume_ends_it(
    host: Remote, tmp_path: Path
) -> None:
    """Ctrl-C while a start on the host is benchmarking: the server there is stopped, the
    points measured so far are kept here (exit 130), and --resume measures only the rest."""
    path = write_campaign(
        tmp_path,
        '[[variant]]\nname = "baseline"\n\n[[variant]]\nname = "b"\nargs = "--itl-ms 6"\n',
        name="remote-interrupt",
        server_extra=f'host = "{host.alias}"',
        bench="concurrency = [1, 2]\nrequests = 6\nrepeats = 3",
    )
    path.write_text(path.read_text().replace("{python}", host.python))
    db = tmp_path / "c.db"
    command = [sys.executable, "-m", "servegate", "run", str(path), "--db", str(db), "-q"]
    runner = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                              text=True, env=host.env(), cwd=tmp_path)  # fmt: skip
    with runner:
        wait_for_points(db, 2, timeout=120)
        runner.send_signal(signal.SIGINT)
        _, stderr = runner.communicate(timeout=120)
    assert runner.returncode == 130, stderr
    assert query(db, "SELECT status FROM campaign") == [("interrupted",)]
    assert ("interrupted",) in query(db, "SELECT status FROM attempt")
    kept = int(query(db, "SELECT count(*) FROM point")[0][0])  # type: ignore[call-overload]
    assert kept >= 2
    done = subprocess.run([*command, "--resume"], capture_output=True, text=True, timeout=300,
                          check=False, env=host.env(), cwd=tmp_path)  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert query(db, "SELECT status FROM campaign") == [("done",)]
    # every point once: 2 variants x 2 loads x 3 repeats, the kept ones not measured again
    assert int(query(db, "SELECT count(*) FROM point")[0][0]) == 12  # type: ignore[call-overload]
