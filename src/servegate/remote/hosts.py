"""Where a server runs: this machine, or an SSH destination.

``--host`` takes ``local`` (the default; also ``localhost`` and ``127.0.0.1``),
``ssh://[user@]host[:port]``, or a bare name, which ssh resolves itself: a ``Host`` alias
of ``~/.ssh/config`` (with its ``HostName``, ``User``, ``Port``, ``IdentityFile``,
``ProxyJump``), or a host name. Nothing of the user's SSH setup is read here: the
system ``ssh`` reads it, so it works as it does for ``ssh HOST``.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

from servegate.errors import UsageError

__all__ = ["LOCAL_NAMES", "Host", "is_local", "parse_host"]

LOCAL_NAMES = ("local", "localhost", "127.0.0.1")

# an ssh destination word: letters, digits and . _ - (an alias, a host name, an address)
_NAME = re.compile(r"[A-Za-z0-9_][A-Za-z0-9._-]*")
_USER = re.compile(r"[A-Za-z0-9_][A-Za-z0-9._-]*")
_IPV6 = re.compile(r"\[([0-9A-Fa-f:.]+)\]")


@dataclass(frozen=True, slots=True)
class Host:
    """An SSH destination: the spelling the user gave and what ssh is told."""

    spec: str  # as given: ssh://root@gpu-1:2222 or an alias; what messages name
    hostname: str  # the host part (an alias stays an alias: ssh resolves it)
    user: str | None = None
    port: int | None = None

    @property
    def destination(self) -> str:
        """The ``[user@]host`` argument of ssh."""
        return f"{self.user}@{self.hostname}" if self.user else self.hostname

    def ssh_args(self) -> list[str]:
        """The destination arguments of ssh: ``-p PORT`` when given, then ``[user@]host``."""
        args = ["-p", str(self.port)] if self.port is not None else []
        return [*args, "--", self.destination]

    def to_json(self) -> dict[str, Any]:
        """The host as a JSON object (what results record)."""
        return {"spec": self.spec, "hostname": self.hostname, "user": self.user, "port": self.port}


def is_local(value: str | None) -> bool:
    """Whether ``--host value`` means this machine."""
    return value is None or value in LOCAL_NAMES


def parse_host(value: str) -> Host:
    """``value`` as an SSH destination; UsageError naming the accepted spellings."""
    bad = UsageError(
        f"--host {value!r} is not a host: pass ssh://[user@]host[:port], a Host alias "
        "of ~/.ssh/config, or local."
    )
    if value in LOCAL_NAMES:
        raise UsageError(f"--host {value!r} is this machine: drop --host to run locally.")
    if not value.startswith("ssh://"):
        if "://" in value or not _NAME.fullmatch(value):
            raise bad
        return Host(spec=value, hostname=value)
    rest = value.removeprefix("ssh://").rstrip("/")
    user: str | None = None
    if "@" in rest:
        user, _, rest = rest.rpartition("@")
        if not _USER.fullmatch(user):
            raise bad
    port: int | None = None
    ipv6 = _IPV6.match(rest)
    if ipv6:
        hostname, tail = ipv6.group(1), rest[ipv6.end() :]
    else:
        hostname, _, port_text = rest.partition(":")
        tail = f":{port_text}" if port_text else ""
    if tail:
        if not tail.startswith(":") or not tail[1:].isdigit() or not 0 < int(tail[1:]) < 65536:
            raise bad
        port = int(tail[1:])
    if not ipv6 and not _NAME.fullmatch(hostname):
        raise bad
    return Host(spec=value, hostname=hostname, user=user, port=port)
