"""pytest fixtures that launch a server, gate it, benchmark it and stop its whole tree.

Installed with servegate as a ``pytest11`` entry point, so any test session where
servegate is installed has them, with no conftest:

    def test_throughput(servegate_server, servegate_bench):
        server = servegate_server([sys.executable, "-m", "servegate", "sim",
                                   "--engine", "sglang", "--port", "{port}"], engine="sglang")
        result = servegate_bench(server, concurrency=8, requests=64)
        assert result.summary["output_throughput"] > 100

- ``servegate_server``: a factory; each call launches and gates one server and returns
  the READY ``servegate.launch.Server``. CRASH or TIMEOUT fails the caller (an error in
  setup when called from a fixture) with the verdict line and the log tail. Every
  server it started is stopped, tree and all, when the test ends however it ends, and
  the stop is checked: a process or the port left behind fails the teardown.
- ``servegate_server_session``: the same, for servers shared by the whole session.
- ``servegate_bench``: runs one load point and returns the ``PointResult``.

Options: ``--servegate-timeout-scale``, ``--servegate-keep``, ``--servegate-log-dir``.
See docs/pytest.md. Importing this module loads nothing beyond pytest: the launcher and
the load generator load the first time a fixture uses them, and tests that use none of
the fixtures are unchanged.
"""

from __future__ import annotations

import argparse
import functools
import re
import socket
from collections.abc import Callable, Iterator, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

from servegate.gate.defaults import STALL_S, TIMEOUT_S

if TYPE_CHECKING:
    from servegate.bench import PointResult
    from servegate.errors import GateError
    from servegate.launch import Server, StopReport

__all__ = ["Bench", "ServerFactory", "port_placeholder", "stop_problems"]

PORT_PLACEHOLDER = "{port}"
TAIL_LINES = 40  # log lines shown under a CRASH or TIMEOUT verdict
_PORT_ATTEMPTS = 3  # a port picked here and taken before the launch: pick again
_KEPT = pytest.StashKey[list[str]]()


def _positive_float(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        value = float("nan")
    if not value > 0 or value == float("inf"):
        raise argparse.ArgumentTypeError(f"{text!r} is not a positive number: use e.g. 2 or 0.5")
    return value


def pytest_addoption(parser: pytest.Parser) -> None:
    """The plugin's command-line options (shown under ``servegate`` in ``pytest --help``)."""
    group = parser.getgroup("servegate", "servegate: servers launched by the servegate_* fixtures")
    group.addoption(
        "--servegate-timeout-scale",
        type=_positive_float,
        default=1.0,
        metavar="FACTOR",
        help="Multiply every server's start timeout and stall limit (2: a slow CI machine).",
    )
    group.addoption(
        "--servegate-keep",
        action="store_true",
        default=False,
        help="Leave servers running after their tests (and after a CRASH or TIMEOUT) "
        "for a look; the summary says how to stop each one.",
    )
    group.addoption(
        "--servegate-log-dir",
        default=None,
        metavar="DIR",
        help="Write server logs under DIR/<test>/ instead of pytest's temporary folders.",
    )


def pytest_terminal_summary(terminalreporter: Any, config: pytest.Config) -> None:
    """Under --servegate-keep: list the servers left running and how to stop them."""
    kept = config.stash.get(_KEPT, [])
    if kept:
        terminalreporter.section("servegate: servers kept running")
        for line in kept:
            terminalreporter.write_line(line)


def port_placeholder(command: Sequence[str]) -> bool:
    """True when an argument of ``command`` contains ``{port}``."""
    return any(PORT_PLACEHOLDER in str(arg) for arg in command)


def _free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def stop_problems(name: str, report: StopReport) -> list[str]:
    """What a stop left behind (processes of the tree, the port), one sentence each."""
    problems = []
    if report.survivors:
        pids = ", ".join(map(str, report.survivors))
        problems.append(f"server {name!r}: processes still alive after the stop: {pids}")
    if report.port_free is False and not report.port_holders:
        problems.append(f"server {name!r}: port {report.port} still in use after the stop")
    return problems


def _failure_text(
    exc: GateError,
    name: str,
    kept: str | None,
    *,
    env: Mapping[str, str] | None = None,
    argv: Sequence[str] = (),
) -> str:
    from servegate.redact import Redactor

    verdict = exc.verdict
    lines = [f"servegate: server {name!r} did not start: {verdict.line()}"]
    tail = verdict.tail[-TAIL_LINES:]
    if tail:
        where = f" of {verdict.log_path}" if verdict.log_path else ""
        lines.append(f"--- last {len(tail)} lines{where} ---")
        lines.extend(tail)
    elif verdict.log_path:
        lines.append(f"(the log {verdict.log_path} is empty)")
    if kept:
        lines.append(kept)
    redactor = Redactor.collect(envs=[env or {}], commands=[argv])
    return redactor.text("\n".join(lines))


def _safe_dirname(nodeid: str) -> str:
    return re.sub(r"[^A-Za-z0-9._-]+", "_", nodeid).strip("_")[:120] or "session"


class ServerFactory:
    """Launches servers for one test (or one session) and stops them all at its end.

    Call it with the server's command (``{port}`` in an argument becomes ``port``, or a
    free port when ``port`` is None) and ``servegate.launch.launch``'s options; it
    returns the READY ``Server`` (``url``, ``port``, ``name``, ``pid``, ``verdict``,
    ``log_path``, ``alive()``).
    """

    def __init__(
        self,
        *,
        log_dir: Path,
        timeout_scale: float = 1.0,
        keep: bool = False,
        kept: list[str] | None = None,
    ) -> None:
        self.log_dir = log_dir
        self.timeout_scale = timeout_scale
        self.keep = keep
        self._kept = kept if kept is not None else []
        self.servers: list[Server] = []

    def __call__(
        self,
        command: Sequence[str],
        *,
        engine: str = "generic",
        port: int | None = None,
        timeout: float = TIMEOUT_S,
        stall: float | None = STALL_S,
        env: Mapping[str, str] | None = None,
        name: str | None = None,
        cwd: str | None = None,
        ready: Sequence[str] = (),
        crash: Sequence[str] = (),
        health_url: str | None = None,
        model: str | None = None,
        log_path: str | None = None,
    ) -> Server:
        """Launch ``command``, gate it, and return it READY; fail the caller otherwise.

        Args:
            command: the server's argument list (no shell); ``{port}`` is replaced.
            engine: profile name: sglang, vllm, llamacpp, tgi, trtllm or generic.
            port: the port it serves on; None: a free port when the command has
                ``{port}``, else what ``launch`` picks (``--port N``, the profile's).
            timeout: seconds allowed for the start; stall: seconds without new output
                (None: no limit); both multiplied by ``--servegate-timeout-scale``.
            env: extra environment variables; cwd: its working folder.
            name: the name ``servegate ps`` / ``stop`` show (default: the engine's).
            ready, crash, health_url, model: as ``servegate.launch.launch``.
            log_path: its log (default: NAME.log in this test's log folder).
        """
        from servegate.launch import launch

        start = functools.partial(
            launch,
            engine=engine,
            timeout_s=timeout * self.timeout_scale,
            stall_s=None if stall is None else stall * self.timeout_scale,
            env=env,
            cwd=cwd,
            name=name,
            keep=self.keep,
            ready=ready,
            crash=crash,
            health_url=health_url,
            model=model,
        )
        picked = port is None and port_placeholder(command)
        for attempt in range(_PORT_ATTEMPTS):
            use_port = _free_port() if picked else port
            argv = [
                str(arg).replace(PORT_PLACEHOLDER, str(use_port))
                if use_port is not None
                else str(arg)
                for arg in command
            ]
            log = log_path if log_path is not None else self._new_log(name or engine)
            retry = picked and attempt + 1 < _PORT_ATTEMPTS
            result = self._attempt(
                start, argv, port=use_port, log_path=log, retry=retry, label=name or engine, env=env
            )
            if result is None:
                continue  # another process took the free port in between
            if isinstance(result, str):
                # outside any except clause: the report shows this text, not a chain
                pytest.fail(result, pytrace=False)
            self.servers.append(result)
            return result
        raise AssertionError("unreachable: every attempt returns or fails")

    def _attempt(
        self,
        start: Callable[..., Server],
        argv: list[str],
        *,
        port: int | None,
        log_path: str,
        retry: bool,
        label: str,
        env: Mapping[str, str] | None,
    ) -> Server | str | None:
        """One launch: the READY server, the text to fail with, or None to try another port."""
        from servegate.errors import GateError, PortInUseError, ServegateError

        try:
            return start(argv, port=port, log_path=log_path)
        except PortInUseError as exc:
            return None if retry else f"servegate: {exc}"
        except GateError as exc:
            return _failure_text(exc, label, self._keep_note(exc), env=env, argv=argv)
        except ServegateError as exc:
            return f"servegate: {exc}"

    def _new_log(self, stem: str) -> str:
        """A log path in this factory's folder that no earlier start here has used."""
        self.log_dir.mkdir(parents=True, exist_ok=True)
        path, index = self.log_dir / f"{stem}.log", 2
        while path.exists():  # another start of the same name in this test
            path, index = self.log_dir / f"{stem}-{index}.log", index + 1
        return str(path)

    def _keep_note(self, exc: GateError) -> str | None:
        """Under --servegate-keep: how to stop the failed server that was left running."""
        if not self.keep or exc.verdict.pid is None:
            return None
        from servegate.launch import state

        pid = exc.verdict.pid
        names = [t.name for t in state.list_tracked(prune=False) if t.pid == pid]
        handle = names[0] if names else str(pid)
        status = exc.verdict.status.upper()
        self._kept.append(f"{handle} pid {pid} ({status}): servegate stop {handle}")
        return f"kept running for a look (--servegate-keep): servegate stop {handle}"

    def close(self) -> None:
        """Stop every server started here (keep it under --servegate-keep); fail on leftovers."""
        problems: list[str] = []
        while self.servers:
            server = self.servers.pop()
            if self.keep:
                server.detach()
                self._kept.append(
                    f"{server.name} pid {server.pid} {server.url} (READY): "
                    f"servegate stop {server.name}"
                )
                continue
            try:
                report = server.stop()
            except Exception as exc:  # stop the others first, then report it
                problems.append(f"server {server.name!r}: the stop failed: {exc}")
                continue
            problems.extend(stop_problems(server.name, report))
        if problems:
            pytest.fail("servegate: " + "; ".join(problems), pytrace=False)


class Bench:
    """Runs one load point against a server (or a URL) and returns its ``PointResult``."""

    def __call__(
        self,
        target: Server | str,
        *,
        concurrency: int | None = 1,
        requests: int | None = 200,
        input_len: int = 1024,
        output_len: int | None = 256,
        **settings: Any,
    ) -> PointResult:
        """Benchmark ``target``; the keyword arguments are ``BenchSettings`` fields.

        The result's ``summary`` holds the metrics (``output_throughput``,
        ``ttft_ms_p99``, ``tpot_ms_p50``, ...), ``completed`` and ``failed`` the counts.
        A server that cannot be reached or bad settings fail the test with one sentence.
        """
        from servegate.bench import BenchSettings, run_point
        from servegate.errors import ServegateError

        if isinstance(target, str):
            url = target
        else:
            url = target.url or f"http://127.0.0.1:{target.port}"
            engine = target.tracked.engine
            if engine != "generic":
                settings.setdefault("engine", engine)
        unknown = sorted(set(settings) - _bench_fields())
        if unknown:
            pytest.fail(
                f"servegate bench: unknown setting(s) {', '.join(unknown)}: "
                "pass BenchSettings fields only.",
                pytrace=False,
            )
        failure = None
        try:
            return run_point(
                BenchSettings(
                    url=url,
                    concurrency=concurrency,
                    requests=requests,
                    input_len=input_len,
                    output_len=output_len,
                    **settings,
                )
            )
        except ServegateError as exc:
            failure = f"servegate bench: {exc}"
        pytest.fail(failure, pytrace=False)  # outside the except clause: no chained report


def _bench_fields() -> set[str]:
    import dataclasses

    from servegate.bench import BenchSettings

    return {field.name for field in dataclasses.fields(BenchSettings)} - {"url"}


def _serve(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory, folder: str
) -> Iterator[ServerFactory]:
    """The fixtures' one body: a factory whose servers are stopped at the scope's end.

    Logs go under a fresh temporary ``folder``, or ``--servegate-log-dir``/<test or session>.
    """
    config = request.config
    log_dir = tmp_path_factory.mktemp(folder, numbered=True)
    custom = config.getoption("servegate_log_dir")
    if custom:
        log_dir = Path(custom).resolve() / _safe_dirname(
            request.node.nodeid if request.scope == "function" else "session"
        )
    factory = ServerFactory(
        log_dir=log_dir,
        timeout_scale=float(config.getoption("servegate_timeout_scale")),
        keep=bool(config.getoption("servegate_keep")),
        kept=config.stash.setdefault(_KEPT, []),
    )
    try:
        yield factory
    finally:
        factory.close()


@pytest.fixture
def servegate_server(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[ServerFactory]:
    """Launch and gate servers for this test; each is stopped, whole tree, when it ends."""
    yield from _serve(request, tmp_path_factory, "servegate")


@pytest.fixture(scope="session")
def servegate_server_session(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[ServerFactory]:
    """Like ``servegate_server``, for servers shared by the session; stopped at its end."""
    yield from _serve(request, tmp_path_factory, "servegate-session")


@pytest.fixture
def servegate_bench() -> Bench:
    """Benchmark a server: ``servegate_bench(server, concurrency=8, requests=64)``."""
    return Bench()
