"""The exception tree of servegate.

Every error the library raises is a ``ServegateError``; ``str(exc)`` is one sentence
that names what to fix, and ``exc.exit_code`` is the code the command line exits with.
Only ``servegate.cli`` catches them; under ``--json`` it prints ``exc.to_json()``, one
``servegate.error/1`` object (a GateError's is its ``servegate.verdict/1`` verdict).

    ServegateError                 exit 3: an internal error
    ├── UsageError                 exit 2: bad flags, bad config, bad input
    │   ├── ConfigError            a campaign or profile file is invalid (names file, key)
    │   ├── PortInUseError         the port a server should take is already taken
    │   ├── StoreVersionError      the database was written by a newer servegate
    │   ├── StoreDamagedError      the database file is damaged (restore it or use a new --db)
    │   └── RunnerBusyError        another `servegate run` is using the database
    ├── GateError                  a server did not become ready (carries the verdict)
    │   ├── ServerCrashed          exit 1: CRASH
    │   └── ServerTimeout          exit 124: TIMEOUT
    ├── ServerNotFound             exit 2: no tracked server by that name or PID
    ├── StoreError                 exit 3: the database could not be written (disk full, I/O)
    └── BenchError                 exit 1: the load generator could not measure
        ├── ModelNotServed         exit 2: the server does not serve the --model asked for
        └── ClientLimitError       exit 2: ulimit -n here cannot hold the point's streams
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from servegate.gate.verdict import Verdict

__all__ = [
    "ERROR_SCHEMA",
    "BenchError",
    "ClientLimitError",
    "ConfigError",
    "GateError",
    "ModelNotServed",
    "PortInUseError",
    "RunnerBusyError",
    "ServegateError",
    "ServerCrashed",
    "ServerNotFound",
    "ServerTimeout",
    "StoreDamagedError",
    "StoreError",
    "StoreVersionError",
    "UsageError",
    "error_json",
]

ERROR_SCHEMA = "servegate.error/1"


def error_json(message: str, exit_code: int) -> dict[str, Any]:
    """The ``servegate.error/1`` object that ``--json`` prints for a failed command."""
    return {"schema": ERROR_SCHEMA, "error": message, "exit_code": exit_code}


class ServegateError(Exception):
    """Base of every servegate error; ``exit_code`` is what the CLI exits with."""

    exit_code: int = 3

    def to_json(self) -> dict[str, Any]:
        """This error as the ``servegate.error/1`` object."""
        return error_json(str(self), self.exit_code)


class UsageError(ServegateError):
    """Bad flags, configuration or input: the message names the fix."""

    exit_code = 2


class ConfigError(UsageError):
    """A campaign or profile file is invalid; the message names the file and key."""

    def __init__(self, message: str, *, path: str | None = None, key: str | None = None) -> None:
        super().__init__(message)
        self.path = path
        self.key = key


class PortInUseError(UsageError):
    """The port a server is meant to take is already in use."""

    def __init__(self, message: str, *, port: int) -> None:
        super().__init__(message)
        self.port = port


class StoreVersionError(UsageError):
    """The database comes from a newer servegate and is left untouched."""


class StoreDamagedError(UsageError):
    """The database file is damaged: SQLite cannot read its header or one of its pages."""


class RunnerBusyError(UsageError):
    """Another ``servegate run`` is alive and writing to the same database."""


class StoreError(ServegateError):
    """The database could not be written or read: the disk is full, or an I/O error."""


class ServerNotFound(ServegateError):
    """No tracked server has that name or PID."""

    exit_code = 2


class GateError(ServegateError):
    """The server did not become ready; ``verdict`` says why and how."""

    def __init__(self, verdict: Verdict) -> None:
        super().__init__(verdict.line())
        self.verdict = verdict

    @property
    def log_tail(self) -> tuple[str, ...]:
        """The last lines of the server's log."""
        return self.verdict.tail

    @property
    def server_exit_code(self) -> int | None:
        """The server's own exit code when it exited, else None."""
        return self.verdict.exit_code

    def to_json(self) -> dict[str, Any]:
        """The verdict as the ``servegate.verdict/1`` JSON object."""
        return self.verdict.to_json()


class ServerCrashed(GateError):
    """CRASH: the server exited, lost an essential child, or printed a fatal line."""

    exit_code = 1


class ServerTimeout(GateError):
    """TIMEOUT: the deadline passed or the server made no progress for too long."""

    exit_code = 124


class BenchError(ServegateError):
    """The load generator could not measure (unreachable server, not OpenAI-compatible)."""

    exit_code = 1


class ModelNotServed(BenchError):
    """The server refused the model asked for (``--model``): bad input, so exit 2."""

    exit_code = 2


class ClientLimitError(BenchError):
    """The client's own open-files limit (``ulimit -n``) cannot hold the point's streams,
    and its hard limit forbids raising it: fixed here, not on the server, so exit 2."""

    exit_code = 2
