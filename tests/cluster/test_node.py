"""The node's side of a cluster start, without Ray: the calls' frames, the log folder,
and a driver without Ray installed. These run in the main suite."""

from __future__ import annotations

import os
import pickle
import struct
import subprocess
import sys
from pathlib import Path

import pytest
from tests.cluster.helpers import servegate, write_campaign

from servegate.campaign import parse_campaign
from servegate.campaign.cluster import _Calls, _log_dir
from servegate.campaign.execute import StartSpec


def _frames(data: bytes) -> list[tuple[str, tuple[object, ...], dict[str, object]]]:
    out = []
    while data:
        size = struct.unpack("!I", data[:4])[0]
        out.append(pickle.loads(data[4 : 4 + size]))
        data = data[4 + size :]
    return out


def _spec(tmp_path: Path) -> StartSpec:
    plan = parse_campaign(write_campaign(tmp_path).read_text(), path=tmp_path / "c.toml")
    return StartSpec(cid=1, group=plan.groups[0], number=1, tag="[1/3]", names="baseline", todo=())


def test_the_log_folder_falls_back_to_the_nodes_temporary_folder(tmp_path: Path) -> None:
    """A driver's log folder the node cannot create: the node's temporary folder, with a
    warning that names both; a writable one is used as it is."""
    read, write = os.pipe()
    sink = _Calls(write)
    blocked = tmp_path / "a-file"
    blocked.write_text("not a folder")
    spec = _spec(tmp_path)
    assert _log_dir(tmp_path / "logs", sink, spec) == tmp_path / "logs"
    fallback = _log_dir(blocked / "logs", sink, spec)
    assert fallback.is_dir() and fallback.name == "servegate-logs"
    sink._out.close()
    with os.fdopen(read, "rb") as pipe:
        [(method, args, _)] = _frames(pipe.read())
    assert method == "warning"
    assert f"{blocked / 'logs'} cannot be written on" in str(args[0])
    assert f"kept there in {fallback}" in str(args[0])


def test_the_calls_are_framed_in_order_and_attempt_ids_are_the_nodes(tmp_path: Path) -> None:
    """Each call one frame, in the order made; attempt ids count from 1 on the node."""
    read, write = os.pipe()
    sink = _Calls(write)
    first = sink.attempt(variant="baseline", start=1)
    sink.info("launching")
    sink.counts("3/8 requests")  # stays on the node
    second = sink.attempt(variant="fast", start=1)
    sink._out.close()
    with os.fdopen(read, "rb") as pipe:
        frames = _frames(pipe.read())
    assert (first, second) == (1, 2)
    assert [(m, a, k.get("local")) for m, a, k in frames] == [
        ("attempt", (), 1),
        ("info", ("launching",), None),
        ("attempt", (), 2),
    ]


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
