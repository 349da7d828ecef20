"""The agent's frames: what the local side asks (``REQUESTS``) and what the agent says
(``EVENTS``), each a line of ``remote.codec``.

The first line of every connection is the agent's ``hello``, with the ``PROTOCOL`` it
speaks; one request follows, then the request's events until ``exit`` (or ``error``).

    {"event":"hello","protocol":1,"version":"0.9.0","build":"3fa2c1d0",...}
    {"event":"run_job","id":"...","command":"launch","argv":[...],"env":{},"offset":0}
    {"event":"out","text":"READY in 3.2s"}
    {"event":"exit","code":0}
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any, Literal

from servegate.remote.codec import kinds

__all__ = [
    "EVENTS",
    "REQUESTS",
    "Cancel",
    "Err",
    "Error",
    "Exit",
    "Fetch",
    "File",
    "Hello",
    "Out",
    "RunCli",
    "RunJob",
    "RunNode",
    "plain_name",
]

Command = Literal["launch", "wait", "stop", "ps", "dump", "bench"]
_JOB_ID = re.compile(r"[0-9a-f]{32}")


# --- what the agent says -----------------------------------------------------------------


@dataclass(frozen=True, slots=True, kw_only=True)
class Hello:
    """The first line: the protocol and what runs on the host."""

    protocol: int
    version: str
    build: str
    python: str
    machine: str
    dir: str  # servegate's folder there


@dataclass(frozen=True, slots=True, kw_only=True)
class Out:
    """A line of the command's stdout."""

    text: str


@dataclass(frozen=True, slots=True, kw_only=True)
class Err:
    """A line of the command's stderr."""

    text: str


@dataclass(frozen=True, slots=True, kw_only=True)
class Exit:
    """The command ended with ``code``: the last event."""

    code: int


@dataclass(frozen=True, slots=True, kw_only=True)
class Error:
    """The request could not be served: ``message`` (one sentence), exit ``code``."""

    message: str
    code: int


@dataclass(frozen=True, slots=True, kw_only=True)
class File:
    """A chunk of a fetched file (``first``: the file's first chunk; ``data``: base64)."""

    name: str
    first: bool
    data: str

    def __post_init__(self) -> None:
        plain_name(self.name)


EVENTS = kinds(Hello, Out, Err, Exit, Error, File)


def plain_name(name: str) -> str:
    """``name`` when it names a file in a folder (not ``..``, no ``/``); else ValueError."""
    if name in ("", ".", "..") or "/" in name or "\0" in name:
        raise ValueError(f"{name!r} is not a file name")
    return name


# --- what the local side asks ------------------------------------------------------------


def _job_id(value: str) -> None:
    if not _JOB_ID.fullmatch(value):
        raise ValueError(f"bad job id {value!r}")


@dataclass(frozen=True, slots=True, kw_only=True)
class RunJob:
    """``servegate COMMAND ARGV`` as a job that outlives the connection, streamed from
    byte ``offset`` of its events (a dropped connection asks again from there)."""

    id: str
    command: Literal["launch", "wait"]
    argv: list[str]
    env: dict[str, str] = field(default_factory=dict)  # never argv, never a file
    offset: int = 0

    def __post_init__(self) -> None:
        _job_id(self.id)


@dataclass(frozen=True, slots=True, kw_only=True)
class RunNode:
    """A campaign's start as a job: ``job`` is the node's job (``campaign.node.NodeJob``),
    read by the node's process, not here."""

    id: str
    job: dict[str, Any]
    offset: int = 0

    def __post_init__(self) -> None:
        _job_id(self.id)


@dataclass(frozen=True, slots=True, kw_only=True)
class RunCli:
    """A command inside this connection; with ``foreground`` it ends with the connection."""

    command: Command
    argv: list[str]
    env: dict[str, str] = field(default_factory=dict)
    foreground: bool = False


@dataclass(frozen=True, slots=True, kw_only=True)
class Cancel:
    """SIGINT to a job's command."""

    id: str

    def __post_init__(self) -> None:
        _job_id(self.id)


@dataclass(frozen=True, slots=True, kw_only=True)
class Fetch:
    """The files of ``folder`` (under the remote folder) that ``have`` (name -> size) lacks."""

    folder: str
    have: dict[str, int] = field(default_factory=dict)


REQUESTS = kinds(RunJob, RunNode, RunCli, Cancel, Fetch)
