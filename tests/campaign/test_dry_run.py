"""``servegate run --dry-run``: the plan of a run, also one meant for another machine."""

from __future__ import annotations

import textwrap
from pathlib import Path

from tests.campaign.helpers import servegate, write_campaign


def _remote_campaign(folder: Path, host: str) -> Path:
    """A campaign whose engine is not installed here: its program is a name no PATH has."""
    path = folder / "remote.toml"
    path.write_text(
        textwrap.dedent(
            f"""\
            [campaign]
            name = "remote"
            baseline = "baseline"

            [server]
            engine = "vllm"
            host = "{host}"
            command = "no-such-engine-here serve /models/m --port {{port}}"
            port = "auto"

            [bench]
            concurrency = [1]
            requests = 4

            [[variant]]
            name = "baseline"
            """
        ),
        encoding="utf-8",
    )
    return path


def test_dry_run_plans_a_campaign_whose_program_is_not_here(tmp_path: Path) -> None:
    """A campaign for an SSH host whose engine is absent here is planned (exit 0), with a
    note that the program is looked for there; the host is not contacted. The run itself
    does not look for it here either: it goes on to the host (which does not resolve)."""
    path = _remote_campaign(tmp_path, "ssh://gpu-1.invalid")
    out = servegate("run", path, "--dry-run", "--db", tmp_path / "c.db", timeout=30)
    assert out.returncode == 0, out.stderr
    assert "server 1: no-such-engine-here serve /models/m --port {port}" in out.stdout
    assert out.stderr.splitlines() == [
        "Note: variant 'baseline': program 'no-such-engine-here' not found on PATH here; "
        "it is looked for on ssh://gpu-1.invalid at each start."
    ]
    run = servegate("run", path, "--db", tmp_path / "c.db", timeout=60)
    assert run.returncode == 2
    assert "ssh://gpu-1.invalid" in run.stderr and "not found on PATH" not in run.stderr
    assert not (tmp_path / "c.db").exists()


def test_dry_run_plans_a_local_campaign_for_a_later_machine(tmp_path: Path) -> None:
    """A local campaign whose program is absent is planned too, with a note that a run
    here refuses it; the run itself still refuses it (exit 2, one sentence)."""
    path = _remote_campaign(tmp_path, "local")
    plan = servegate("run", path, "--dry-run", "--db", tmp_path / "c.db", timeout=30)
    assert plan.returncode == 0, plan.stderr
    assert "server 1: no-such-engine-here serve" in plan.stdout
    assert "servegate run refuses it on this machine: install it or give its full path" in (
        plan.stderr
    )
    run = servegate("run", path, "--db", tmp_path / "c.db", timeout=30)
    assert run.returncode == 2
    assert run.stderr.startswith(f"Error: {path}: variant 'baseline': program ")
    assert not (tmp_path / "c.db").exists()


def test_dry_run_shows_an_auto_port_as_chosen_at_each_start(tmp_path: Path) -> None:
    """port = "auto": the plan says a free port is chosen at each start and shows {port}
    in the command, never --port 0."""
    path = write_campaign(tmp_path, '[[variant]]\nname = "baseline"\n')
    out = servegate("run", path, "--dry-run", "--db", tmp_path / "c.db", timeout=30)
    assert out.returncode == 0, out.stderr
    lines = out.stdout.splitlines()
    assert lines[0] == (
        "campaign t (baseline baseline), port auto (a free port is chosen at each start: "
        "{port} below)"
    )
    assert " --port {port} " in lines[1] + " "
    assert "--port 0" not in out.stdout
