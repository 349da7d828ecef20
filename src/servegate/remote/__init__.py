"""Servers on other hosts, over SSH: servegate runs there and streams its output back.

    from servegate.remote import parse_host, run_job, Output
    host = parse_host("ssh://root@gpu-1")          # or a Host alias of ~/.ssh/config
    code = run_job(host, "launch", ["--port", "8000", "--", "vllm", "serve", "m"],
                   output=Output(out=print, err=print))

``hosts`` parses ``--host``; ``transport`` is ssh (the system client, a control master
per host); ``agent`` is the remote side; ``client`` the local side (jobs that survive a
dropped connection, commands inside one connection); ``install`` puts this servegate
on a host; ``build`` packs it as wheels.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from servegate.remote.client import Output, RemoteVersionError, run_cli, run_job
    from servegate.remote.hosts import Host, is_local, parse_host
    from servegate.remote.transport import ConnectError, HostKeyError

# each name's module, imported on first use: the client (ssh, the wire, the build's
# packaging) costs a command that never leaves this machine tens of milliseconds
_WHERE = {
    "Output": "client",
    "RemoteVersionError": "client",
    "run_cli": "client",
    "run_job": "client",
    "Host": "hosts",
    "is_local": "hosts",
    "parse_host": "hosts",
    "ConnectError": "transport",
    "HostKeyError": "transport",
}


def __getattr__(name: str) -> Any:
    module = _WHERE.get(name)
    if module is None:
        raise AttributeError(f"module 'servegate.remote' has no attribute {name!r}")
    return getattr(importlib.import_module(f"servegate.remote.{module}"), name)


__all__ = [
    "ConnectError",
    "Host",
    "HostKeyError",
    "Output",
    "RemoteVersionError",
    "is_local",
    "parse_host",
    "run_cli",
    "run_job",
]
