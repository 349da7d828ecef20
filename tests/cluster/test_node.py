"""The node's side of a cluster start, without Ray: its events' frames, the log folder,
and a driver without Ray installed. These run in the main suite."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
from tests.cluster.helpers import servegate, write_campaign

from servegate.campaign import parse_campaign
from servegate.campaign.events import AttemptClosed, AttemptOpened, Placement, Said, Tone
from servegate.campaign.execute import StartSpec, tasks_of
from servegate.campaign.node import FRAMES, End, NodeJob, NodeSink, Opened, _log_dir, decode, encode


def _frames(data: bytes) -> list[object]:
    return [decode(line, FRAMES) for line in data.splitlines(keepends=True)]


def _opened(variant: str) -> AttemptOpened:
    return AttemptOpened(
        variant=variant,
        server_key="k",
        command=["sim"],
        env={},
        versions={},
        commit=None,
        start=1,
        placement=Placement(),
    )


def _spec(tmp_path: Path) -> StartSpec:
    plan = parse_campaign(write_campaign(tmp_path).read_text(), path=tmp_path / "c.toml")
    return StartSpec(cid=1, group=plan.groups[0], number=1, tag="[1/3]", names="baseline", todo=())


def test_the_log_folder_falls_back_to_the_nodes_temporary_folder(tmp_path: Path) -> None:
    """A driver's log folder the node cannot create: the node's temporary folder, with a
    warning that names both; a writable one is used as it is."""
    read, write = os.pipe()
    out = os.fdopen(write, "wb", buffering=0)
    sink = NodeSink(out.write)
    blocked = tmp_path / "a-file"
    blocked.write_text("not a folder")
    spec = _spec(tmp_path)
    assert _log_dir(tmp_path / "logs", sink, spec) == tmp_path / "logs"
    fallback = _log_dir(blocked / "logs", sink, spec)
    assert fallback.is_dir() and fallback.name == "servegate-logs"
    out.close()
    with os.fdopen(read, "rb") as pipe:
        [said] = _frames(pipe.read())
    assert isinstance(said, Said) and said.tone is Tone.WARNING
    assert f"{blocked / 'logs'} cannot be written on" in said.text
    assert f"kept there in {fallback}" in said.text


def test_the_events_are_framed_in_order_and_attempt_ids_are_the_nodes(tmp_path: Path) -> None:
    """Each event one line, in the order emitted, read back equal; attempt ids count
    from 1 on the node; request counts stay there."""
    read, write = os.pipe()
    out = os.fdopen(write, "wb", buffering=0)
    sink = NodeSink(out.write)
    first = sink.open_attempt(_opened("baseline"))
    sink.emit(Said(tone=Tone.INFO, text="launching"))
    sink.emit(Said(tone=Tone.COUNTS, text="3/8 requests"))  # stays on the node
    second = sink.open_attempt(_opened("fast"))
    out.close()
    with os.fdopen(read, "rb") as pipe:
        frames = _frames(pipe.read())
    assert (first, second) == (1, 2)
    assert frames == [
        Opened(local=1, details=_opened("baseline")),
        Said(tone=Tone.INFO, text="launching"),
        Opened(local=2, details=_opened("fast")),
    ]


def test_the_node_protocol_module_runs_the_start_given_on_stdin(tmp_path: Path) -> None:
    """``python -m servegate.campaign.node FD`` (what a Ray task and the remote agent
    start) executes the ``NodeJob`` on its stdin, each event a frame on the pipe FD: the
    baseline's attempt opened and closed, exit 0."""
    plan = parse_campaign(
        write_campaign(
            tmp_path, variants={"baseline": ""}, startup_s=0.2, repeats=1, requests=2
        ).read_text(),
        path=tmp_path / "c.toml",
    )
    group = plan.groups[0]
    todo = tuple(tasks_of(group, 1))
    spec = StartSpec(cid=1, group=group, number=1, tag="[1/1]", names="baseline", todo=todo)
    job = NodeJob(campaign=plan, spec=spec, log_dir=str(tmp_path / "logs"), placement=Placement())
    read, write = os.pipe()
    child = subprocess.Popen(
        [sys.executable, "-m", "servegate.campaign.node", str(write)],
        stdin=subprocess.PIPE,
        pass_fds=(write,),
    )
    os.close(write)
    try:
        assert child.stdin is not None
        child.stdin.write(encode(job))
        child.stdin.close()
        with os.fdopen(read, "rb") as pipe:
            frames = _frames(pipe.read())
    finally:
        if child.poll() is None and child.stdin is not None and not child.stdin.closed:
            child.kill()  # the job never arrived whole: nothing to wait for
        code = child.wait()
    assert code == 0
    opened = [frame for frame in frames if isinstance(frame, Opened)]
    closed = [frame for frame in frames if isinstance(frame, AttemptClosed)]
    assert [frame.details.variant for frame in opened] == ["baseline"]
    assert [frame.attempt for frame in closed] == [1]
    assert not any(isinstance(frame, End) for frame in frames)


def test_a_driver_without_ray_is_told_to_install_the_extra(tmp_path: Path) -> None:
    """servegate run --ray without Ray installed: exit 2, the extra named, no database."""
    file = write_campaign(tmp_path)
    code = (
        "import sys; sys.modules['ray'] = None; from servegate.cli import main; "
        f"main(['run', {str(file)!r}, '--ray', '127.0.0.1:1', '--db', {str(tmp_path / 'x.db')!r}])"
    )
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=60, check=False
    )
    assert done.returncode == 2, done.stderr
    assert done.stderr.strip() == (
        "Error: running on a Ray cluster needs Ray: install it with pip install 'servegate[ray]'."
    )
    assert not (tmp_path / "x.db").exists()


@pytest.mark.parametrize(
    ("address", "said"),
    [
        ("ray://head:10001", "Ray Client addresses are not supported; run servegate on a node"),
        ("head", "give the cluster's address as HOST:PORT (its GCS, port 6379 by default)"),
        ("head:port", "give the cluster's address as HOST:PORT"),
    ],
)
def test_addresses_ray_cannot_use_are_refused_first(
    tmp_path: Path, address: str, said: str
) -> None:
    """Exit 2 with one sentence, before Ray is imported or a database is made."""
    file = write_campaign(tmp_path)
    done = servegate("run", file, "--ray", address, "--db", tmp_path / "x.db", timeout=60)
    assert done.returncode == 2
    assert done.stderr.startswith(f"Error: --ray {address}: ")
    assert said in done.stderr
    assert done.stderr.count("\n") == 1
    assert not (tmp_path / "x.db").exists()
