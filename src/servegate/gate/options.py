"""Gate options: what to watch for, validated once at the boundary.

``GateOptions`` is the one value the command line, the Python API and the keeper
process share; ``resolve()`` checks it (engine, regular expressions, numbers) and
returns the compiled rules with the probe address.
"""

from __future__ import annotations

import os
import shlex
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any
from urllib.parse import urlsplit

from servegate.engines import EngineProfile, get_profile
from servegate.errors import UsageError
from servegate.gate.defaults import TIMEOUT_S
from servegate.gate.flags import given_options
from servegate.gate.watch import Rules

__all__ = [
    "JSON_TAIL_LINES",
    "GateOptions",
    "Resolved",
    "check_log_path",
    "model_from_command",
    "port_from_command",
    "port_out_of_range",
]

JSON_TAIL_LINES = 300
MIN_SAMPLE_S = 0.05  # --sample below this costs more than it tells (benchmarks/README.md)


def port_from_command(command: Sequence[str]) -> int | None:
    """The port a server command line says it serves on, if it says one.

    ``--port N`` and ``--port=N``, the flag of SGLang, vLLM, llama.cpp, TGI and
    TensorRT-LLM (the last one given wins, as their parsers do); ``-p N`` only for TGI's
    ``text-generation-launcher``, since elsewhere ``-p`` is docker's HOST:CONTAINER
    mapping or llama.cpp's prompt; and the same inside ``sh -c "..."``.
    """
    args = list(command)
    found: int | None = None
    for value in _port_values(args):
        if value.isdigit() and 0 < int(value) < 65536:
            found = int(value)
    return found


def port_out_of_range(command: Sequence[str]) -> str | None:
    """The value of a ``--port`` of ``command`` that is a number above 65535
    (``--port 70000``), else None: no server can listen there (llama-server takes it
    modulo 65536 and says it listens on 70000), so no gate can probe it."""
    for value in _port_values(list(command)):
        if value.isdigit() and int(value) > 65535:
            return value
    return None


def _port_values(args: list[str]) -> list[str]:
    """The values given to the port's flag in ``args`` (see ``port_from_command``)."""
    if len(args) >= 3 and os.path.basename(args[0]) in _SHELLS and args[1] == "-c":
        try:
            args = shlex.split(args[2])
        except ValueError:  # unbalanced quotes: the shell will say so
            return []
    short = any(os.path.basename(arg) == "text-generation-launcher" for arg in args)
    values = []
    for index, arg in enumerate(args):
        if arg == "--port" or (short and arg == "-p"):
            if index + 1 < len(args):
                values.append(args[index + 1])
        elif arg.startswith("--port="):
            values.append(arg.split("=", 1)[1])
    return values


_SHELLS = frozenset({"sh", "bash", "dash", "zsh"})


def model_from_command(command: Sequence[str]) -> str | None:
    """The served model name in a vLLM-style command line (for the 1-token check)."""
    for flag in ("--served-model-name", "--model"):
        for index, arg in enumerate(command):
            if arg == flag and index + 1 < len(command):
                return command[index + 1]
            if arg.startswith(flag + "="):
                return arg.split("=", 1)[1]
    for index, arg in enumerate(command[:-1]):
        if arg == "serve" and not command[index + 1].startswith("-"):
            return command[index + 1]
    return None


def check_log_path(log_path: str) -> None:
    """UsageError unless the log's folder exists (the file itself may come later)."""
    folder = os.path.dirname(os.path.abspath(log_path))
    if not os.path.isdir(folder):
        raise UsageError(f"the folder of --log {log_path!r} does not exist: create {folder} first.")


@dataclass(frozen=True, slots=True, kw_only=True)
class GateOptions:
    """What makes a server READY, CRASHED or TIMED OUT (see docs/gate.md)."""

    engine: str = "generic"
    ready: tuple[str, ...] = ()  # extra ready regexes (--ready)
    crash: tuple[str, ...] = ()  # extra fatal regexes (--crash)
    port: int | None = None  # probe this port on ``host`` (--port)
    host: str = "127.0.0.1"
    health_url: str | None = None  # probe exactly this URL, any 2xx (--health-url)
    timeout_s: float = TIMEOUT_S  # hard cap (--timeout)
    stall_s: float | None = None  # no progress for this long; None: never (--stall: STALL_S)
    tail: int = 50  # lines shown on CRASH / TIMEOUT (--tail)
    probe_interval_s: float = 0.5  # probe period before a ready line
    model: str | None = None  # model name for the 1-token completion
    sample_s: float = 1.0  # telemetry period (--sample); 0: no telemetry
    # the port the server's command says (--port N); one that is not ``port`` is named
    # in a note and a TIMEOUT's hint, never refused: a container may map one to the other
    command_port: int | None = None
    # the options the server's command sets (gate/flags.py): a CRASH whose line names one
    # of them is bad-args, its hint naming the option
    command_options: tuple[tuple[str, str], ...] = ()

    def to_json(self) -> dict[str, Any]:
        """The options as plain JSON (for the keeper process)."""
        return {
            "engine": self.engine,
            "ready": list(self.ready),
            "crash": list(self.crash),
            "port": self.port,
            "host": self.host,
            "health_url": self.health_url,
            "timeout_s": self.timeout_s,
            "stall_s": self.stall_s,
            "tail": self.tail,
            "probe_interval_s": self.probe_interval_s,
            "model": self.model,
            "sample_s": self.sample_s,
            "command_port": self.command_port,
            "command_options": [list(pair) for pair in self.command_options],
        }

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> GateOptions:
        """Options from ``to_json()``."""
        return cls(
            engine=data["engine"],
            ready=tuple(data["ready"]),
            crash=tuple(data["crash"]),
            port=data["port"],
            host=data["host"],
            health_url=data["health_url"],
            timeout_s=data["timeout_s"],
            stall_s=data["stall_s"],
            tail=data["tail"],
            probe_interval_s=data["probe_interval_s"],
            model=data["model"],
            sample_s=float(data.get("sample_s", 1.0)),
            command_port=data.get("command_port"),
            command_options=tuple(
                (str(name), str(value)) for name, value in data.get("command_options", ())
            ),
        )

    def for_command(
        self, command: Sequence[str], env: Mapping[str, str] | None = None
    ) -> GateOptions:
        """These options for ``command``: the port ``port``, else the command's
        ``--port N``, else (without a health URL) the profile's default; the model
        ``model``, else the command's (for vLLM's 1-token check); the options it sets
        and the variables ``env`` gives it (what a CRASH's line is read against,
        gate/flags.py). A ``port`` that the
        command's contradicts is kept (a container may map one to the other) and named in
        notes (``command_port``)."""
        said = port_from_command(command)
        port = self.port if self.port is not None else said
        if port is None and self.health_url is None:
            port = get_profile(self.engine).default_port
        return replace(
            self,
            port=port,
            model=self.model or model_from_command(command),
            command_port=said,
            command_options=given_options(command, env),
        )

    def port_note(self) -> str | None:
        """``--port 8162 but the command says --port 8163``, when they differ."""
        if self.command_port is None or self.port is None or self.command_port == self.port:
            return None
        return f"--port {self.port} but the command says --port {self.command_port}"

    def resolve(self) -> Resolved:
        """Check every option and compile the rules; UsageError naming the flag if bad."""
        profile = get_profile(self.engine)
        if not self.timeout_s > 0:
            raise UsageError(
                f"--timeout must be a positive number of seconds, not {self.timeout_s}."
            )
        if self.stall_s is not None and not self.stall_s > 0:
            raise UsageError(f"--stall must be a positive number of seconds, not {self.stall_s}.")
        if not (self.sample_s == 0 or self.sample_s >= MIN_SAMPLE_S):
            raise UsageError(
                f"--sample must be 0 (no telemetry) or at least {MIN_SAMPLE_S} seconds, "
                f"not {self.sample_s}."
            )
        if self.tail < 0:
            raise UsageError(f"--tail must be 0 or more lines, not {self.tail}.")
        if self.port is not None and not 0 < self.port < 65536:
            raise UsageError(f"--port must be between 1 and 65535, not {self.port}.")
        rules = Rules(profile, ready=self.ready, crash=self.crash)
        probe_url: str | None = None
        base_url: str | None = None
        if self.health_url:
            parts = urlsplit(self.health_url)
            if parts.scheme not in ("http", "https") or not parts.hostname:
                raise UsageError(
                    f"--health-url {self.health_url!r} is not an http(s) URL: "
                    "pass e.g. http://127.0.0.1:8000/health."
                )
            probe_url = self.health_url
            base_url = f"{parts.scheme}://{parts.netloc}"
        elif self.port is not None and profile.probe_path:
            base_url = f"http://{_url_host(self.host)}:{self.port}"
            probe_url = base_url + profile.probe_path
        elif self.port is not None:
            base_url = f"http://{_url_host(self.host)}:{self.port}"
        if probe_url is None and not (profile.ready_lines or self.ready):
            raise UsageError(
                f"nothing can tell that a {profile.name} server is ready: pass --port N, "
                "--health-url URL or --ready REGEX."
            )
        generate_url = base_url + "/v1/completions" if base_url and profile.generate_check else None
        return Resolved(
            options=self,
            profile=profile,
            rules=rules,
            url=base_url,
            probe_url=probe_url,
            generate_url=generate_url,
        )


def _url_host(host: str) -> str:
    if host in ("0.0.0.0", ""):
        return "127.0.0.1"
    if host == "::":
        return "[::1]"
    return f"[{host}]" if ":" in host else host


@dataclass(frozen=True, slots=True, kw_only=True)
class Resolved:
    """Checked options: the profile, compiled rules and the probe's URLs."""

    options: GateOptions
    profile: EngineProfile
    rules: Rules
    url: str | None  # the server's base URL, when known
    probe_url: str | None
    generate_url: str | None
