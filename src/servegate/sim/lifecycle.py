"""The simulated engine's life: children, the startup log, the port, failures, shutdown.

``run(config)`` plays the engine's startup script against absolute deadlines (so the
printed timeline matches the configured one however busy the loop is), opens the port
when and how the engine does (vLLM binds early but listens only when ready), injects the
configured failure, then serves until SIGTERM or SIGINT. It returns the exit code, or
ends the process by a signal when the real engine would.
"""

from __future__ import annotations

import asyncio
import contextlib
import errno
import os
import resource
import signal
import socket
import sys
import time
import traceback
from pathlib import Path

from servegate.sim.children import Children, roles_for
from servegate.sim.config import SimConfig
from servegate.sim.failures import Failure, after_ready_failure, plan_failure
from servegate.sim.server import App, State
from servegate.sim.startup import Event, LogFormat, ScriptContext, build_script
from servegate.sim.work import Work

__all__ = ["run"]

WATCHDOG_S = 5.0  # vLLM's VLLM_WATCHDOG_TIME_S: an API server outlives its engine this long
STATS_EVERY_S = 10.0


class _PortInUse(Exception):
    """The port could not be bound."""


class _Stopped(Exception):
    """SIGTERM or SIGINT while hung (the event loop is blocked, as a real hang blocks it)."""


def _stop_hang(signum: int, frame: object) -> None:
    raise _Stopped


def wait_for_nccl_peers() -> None:
    """Wait for peers that never come: the simulated hang, idle, in a named function.

    Blocks the whole process (its event loop too), as a rank stuck in a collective does;
    a stack dump names this function. SIGTERM or SIGINT ends it.
    """
    while True:
        time.sleep(3600)


def _write(data: bytes) -> None:
    """Write all of ``data`` to stdout, unbuffered (the gate reads the pipe live)."""
    view = memoryview(data)
    while view:
        try:
            written = os.write(1, view)
        except InterruptedError:
            continue
        except BrokenPipeError:
            return
        view = view[written:]


class Runner:
    """One simulated engine process."""

    def __init__(self, config: SimConfig) -> None:
        self.config = config
        self.children = Children(config.engine, roles_for(config.engine, config.tp))
        self.log_format = LogFormat(
            engine=config.engine, pid=os.getpid(), children=self.children.pids()
        )
        self.sock: socket.socket | None = None
        self.server: asyncio.Server | None = None
        self.exit_code: int | None = None
        self.done: asyncio.Event | None = None
        self.app: App | None = None
        self.listening = False
        self.stats_task: asyncio.Task[None] | None = None
        self.work: Work | None = None

    # --- output -------------------------------------------------------------------------

    def line(self, text: str) -> None:
        """Print one log line (``{ts}`` filled in)."""
        _write(self._fill(text).encode() + b"\n")

    def _fill(self, text: str) -> str:
        if "{ts}" in text:
            text = text.replace("{ts}", time.strftime(self.log_format.timestamp_format()))
        return text

    def emit(self, event: Event) -> None:
        """Print or do one startup event."""
        if event.kind == "line":
            self.line(event.text)
        elif event.kind == "progress":
            _write(b"\r" + self._fill(event.text).encode())
        elif event.kind == "progress_end":
            _write(b"\r" + self._fill(event.text).encode() + b"\n")
        elif event.kind == "bind":
            self._bind()
        elif event.kind == "listen":
            self._listen()
        elif event.kind == "ready":
            assert self.app is not None
            self.app.state = State.READY

    # --- the port -----------------------------------------------------------------------

    def _bind(self) -> None:
        if self.config.fail == "port-in-use":
            raise _PortInUse
        if self.sock is not None:
            return
        family = socket.AF_INET6 if ":" in self.config.host else socket.AF_INET
        sock = socket.socket(family, socket.SOCK_STREAM)
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            sock.bind((self.config.host, self.config.port))
        except OSError as exc:
            sock.close()
            if exc.errno == errno.EADDRINUSE:
                raise _PortInUse from None
            raise
        sock.setblocking(False)
        self.sock = sock

    def _listen(self) -> None:
        self._bind()
        assert self.sock is not None and self.app is not None
        loop = asyncio.get_running_loop()
        # listen now, so that a client who read the line is queued, not refused; the
        # server task starts accepting a moment later
        self.sock.listen(4096)
        task = loop.create_task(loop.create_server(self.app.protocol, sock=self.sock, backlog=4096))
        task.add_done_callback(self._served)
        self.listening = True

    def _served(self, task: asyncio.Task[asyncio.Server]) -> None:
        if not task.cancelled() and task.exception() is None:
            self.server = task.result()

    # --- the run ------------------------------------------------------------------------

    async def main(self) -> int:
        """Start, serve, and return the exit code."""
        loop = asyncio.get_running_loop()
        self.done = asyncio.Event()
        self.app = App(self.config, self.line)
        speed = self.app.model.speed
        if self.config.per_start_speed:
            # stderr, so the engine's own log on stdout stays as the engine writes it
            where = f"start {speed.start}" if speed.start is not None else "unseeded start"
            if speed.regime is not None:
                where += f", regime {speed.regime + 1} of {len(self.config.regimes)}"
            print(
                f"servegate sim: instance speed factor {speed.factor:.4f} ({where})",
                file=sys.stderr,
                flush=True,
            )
        for signum in (signal.SIGTERM, signal.SIGINT):
            loop.add_signal_handler(signum, self._shutdown)
        startup = loop.create_task(self._startup())
        startup.add_done_callback(self._startup_done)
        await self.done.wait()
        startup.cancel()
        with contextlib.suppress(asyncio.CancelledError, Exception):
            await startup
        self._teardown()
        return self.exit_code if self.exit_code is not None else 0

    def _startup_done(self, task: asyncio.Task[None]) -> None:
        """A bug in the script must end the process (exit 3), never leave it hanging."""
        if task.cancelled() or task.exception() is None:
            return
        exc = task.exception()
        traceback.print_exception(exc, file=sys.stderr)
        self.exit_code = 3
        assert self.done is not None
        self.done.set()

    async def _sleep_until(self, when: float) -> None:
        loop = asyncio.get_running_loop()
        delay = when - loop.time()
        if delay > 0:
            await asyncio.sleep(delay)

    async def _startup(self) -> None:
        config = self.config
        loop = asyncio.get_running_loop()
        t0 = loop.time()
        script = build_script(config, ScriptContext(pid=os.getpid(), children=self.children.pids()))
        fail_wall = (
            t0 + config.fail_at_s
            if config.fail_at_s is not None
            and config.fail_phase is None
            and config.fail not in ("crash-after-ready", "engine-dead")
            else None
        )
        cursor = t0
        try:
            work = dict(config.work)
            for phase, seconds in config.phases:
                failing_here = config.fail_phase == phase
                if phase in work and seconds > 0:
                    await self._sleep_until(cursor)
                    self.work = await Work.start(work[phase], seconds)
                for event in script.get(phase, []):
                    at = cursor + event.at * seconds
                    if failing_here and (event.at >= 0.5 or event.kind == "ready"):
                        break
                    if fail_wall is not None and at > fail_wall:
                        await self._sleep_until(fail_wall)
                        await self._fail(config.fail or "")
                        return
                    await self._sleep_until(at)
                    self.emit(event)
                if failing_here:
                    await self._sleep_until(cursor + 0.5 * seconds)
                    await self._fail(config.fail or "")
                    return
                if fail_wall is not None and cursor + seconds >= fail_wall:
                    await self._sleep_until(fail_wall)
                    await self._fail(config.fail or "")
                    return
                if self.work is not None:
                    await self._sleep_until(cursor + seconds)
                    await self.work.stop()
                    self.work = None
                cursor += seconds
                if phase == "jit_compile" and config.jit_cache is not None:
                    await self._sleep_until(cursor)
                    _fill_jit_cache(config.jit_cache)
        except _PortInUse:
            await self._fail("port-in-use")
            return
        self.stats_task = loop.create_task(self._stats())
        if config.fail in ("crash-after-ready", "engine-dead"):
            assert self.app is not None
            if config.fail_at_request is not None:
                # with the Nth generation request, whenever the client sends it
                kind = config.fail
                self.app.fail_at_request = (config.fail_at_request, lambda: self._fail_now(kind))
                return
            await asyncio.sleep(config.fail_at_s or 0.0)
            await self._after_ready(config.fail)

    async def _fail(self, kind: str) -> None:
        """Print the failure's lines and end the way the engine does."""
        phase = self.config.fail_phase
        if phase is None:
            # a failure given in seconds happens in whichever phase is running then
            phase = self._phase_at(self.config.fail_at_s or 0.0)
        failure = plan_failure(self.config, self.log_format, kind, phase)
        if self.work is not None:
            await self.work.stop()
            self.work = None
        await self._finish(failure)

    def _phase_at(self, seconds: float) -> str:
        cursor = 0.0
        for name, length in self.config.phases:
            if cursor + length >= seconds:
                return name
            cursor += length
        return self.config.phases[-1][0]

    async def _finish(self, failure: Failure) -> None:
        assert self.app is not None and self.done is not None
        for text in failure.lines:
            self.line(text)
        if failure.end == "exit":
            self.app.state = State.CRASHED
            self.app.abort_all()
            self.exit_code = failure.code
            self.done.set()
        elif failure.end == "signal":
            self.app.abort_all()
            self._die(failure.code)
        elif failure.end == "hang":
            self._hang()
        elif failure.end == "stall":
            await self._stall(failure.heartbeat)
        elif failure.end == "child-death":
            self.children.kill(failure.child)
            if failure.after_child:
                await asyncio.sleep(0.05)
                for text in failure.after_child:
                    self.line(text)
                self.app.state = State.CRASHED
                self.exit_code = 1
                self.done.set()
                return
            self.app.state = State.ZOMBIE
            await asyncio.Event().wait()

    def _hang(self) -> None:
        """Hang idle in ``wait_for_nccl_peers``, the ranks too, until SIGTERM or SIGINT."""
        assert self.done is not None
        self.children.hang()
        previous = {sig: signal.signal(sig, _stop_hang) for sig in (signal.SIGTERM, signal.SIGINT)}
        try:
            wait_for_nccl_peers()
        except _Stopped:
            self.exit_code = 0
            self.done.set()
        finally:
            for sig, handler in previous.items():
                signal.signal(sig, handler)

    async def _stall(self, heartbeat: str) -> None:
        """Keep printing the same progress, never advancing."""
        loop = asyncio.get_running_loop()
        start = loop.time()
        period = min(
            10.0,
            max(0.2, 10.0 * (self.config.startup_s / 60.0 if self.config.startup_s < 60 else 1.0)),
        )
        while True:
            elapsed = int(loop.time() - start) + 5
            text = heartbeat.replace("{elapsed}", f"{elapsed // 60:02d}:{elapsed % 60:02d}")
            if text.startswith("\r"):
                _write(self._fill(text).encode())
            else:
                self.line(text)
            await asyncio.sleep(period)

    async def _after_ready(self, kind: str) -> None:
        finishing = self._fail_now(kind)
        if finishing is not None:
            await finishing

    def _fail_now(self, kind: str) -> asyncio.Task[None] | None:
        """Fail after READY, at once: the crash's task (its lines and exit), or None for
        vLLM's engine death, armed for the request in hand and the next."""
        assert self.app is not None
        if kind == "crash-after-ready":
            self.app.state = State.CRASHED
            failure = after_ready_failure(self.config, self.log_format)
            return asyncio.get_running_loop().create_task(self._finish(failure))
        # vLLM: the engine core dies silently; the API server finds out at the next request
        self.children.kill("EngineCore_DP0")
        self.app.engine_dead_armed = True
        self.app.on_engine_dead = self._engine_dead
        return None

    def _engine_dead(self) -> None:
        log = self.log_format
        self.line(
            log.main("AsyncLLM output_handler failed.", level="ERROR", src="async_llm.py:480")
        )
        self.line(
            f"(APIServer pid={log.pid}) vllm.v1.engine.exceptions.EngineDeadError: "
            "EngineCore encountered an issue. See stack trace (above) for the root cause."
        )
        asyncio.get_running_loop().call_later(WATCHDOG_S, self._watchdog_exit)

    def _watchdog_exit(self) -> None:
        log = self.log_format
        self.line(
            log.main("Engine is gracefully shutting down.", level="ERROR", src="launcher.py:99")
        )
        self._uvicorn_shutdown()
        self.exit_code = 1
        assert self.done is not None
        self.done.set()

    async def _stats(self) -> None:
        """The engine's periodic throughput line, when it served something."""
        assert self.app is not None
        m = self.app.metrics
        last_prompt, last_gen = m.prompt_tokens, m.generation_tokens
        last_drafts, last_acc = m.spec_drafts, m.spec_accepted
        while True:
            await asyncio.sleep(STATS_EVERY_S)
            if self.app.state is not State.READY:
                return
            prompt, gen = m.prompt_tokens - last_prompt, m.generation_tokens - last_gen
            drafts, acc = m.spec_drafts - last_drafts, m.spec_accepted - last_acc
            last_prompt, last_gen = m.prompt_tokens, m.generation_tokens
            last_drafts, last_acc = m.spec_drafts, m.spec_accepted
            m.gen_throughput = gen / STATS_EVERY_S
            if not (prompt or gen or m.running()):
                continue
            self._stats_line(prompt, gen, drafts, acc)

    def _stats_line(self, prompt: int, gen: int, drafts: int, acc: int) -> None:
        assert self.app is not None
        m, log, every = self.app.metrics, self.log_format, STATS_EVERY_S
        if self.config.engine == "vllm":
            self.line(
                log.main(
                    f"Engine 000: Avg prompt throughput: {prompt / every:.1f} tokens/s, Avg "
                    f"generation throughput: {gen / every:.1f} tokens/s, Running: {m.running()} "
                    f"reqs, Waiting: {m.waiting()} reqs, GPU KV cache usage: "
                    f"{100 * min(1.0, m.running() * 1024 / 426_560):.1f}%, Prefix cache hit rate: "
                    "0.0%",
                    src="loggers.py:127",
                )
            )
            if drafts:
                self.line(
                    log.main(
                        f"SpecDecoding metrics: Mean acceptance length: {1 + acc / drafts:.2f}, "
                        f"Accepted throughput: {acc / every:.2f} tokens/s, Drafted throughput: "
                        f"{drafts * self.config.spec_draft_tokens / every:.2f} tokens/s, Accepted: "
                        f"{acc} tokens, Drafted: {drafts * self.config.spec_draft_tokens} tokens, "
                        f"Avg Draft acceptance rate: "
                        f"{100 * acc / (drafts * self.config.spec_draft_tokens):.1f}%",
                        src="metrics.py:96",
                    )
                )
        elif self.config.engine == "sglang":
            accept = f"accept len: {1 + acc / drafts:.2f}, " if drafts else ""
            self.line(
                log.rank(
                    0,
                    (
                        f"Decode batch, #running-req: {m.running()}, #token: {m.running() * 1024}, "
                        f"token usage: {min(1.0, m.running() * 1024 / 417_792):.2f}, {accept}"
                        f"cuda graph: True, gen throughput (token/s): {gen / every:.2f}, "
                        f"#queue-req: {m.waiting()}"
                    ),
                )
            )

    # --- the end ------------------------------------------------------------------------

    def _uvicorn_shutdown(self) -> None:
        if not self.listening or self.config.engine == "llamacpp":
            return
        log = self.log_format
        self.line(log.uvicorn("Shutting down"))
        self.line(log.uvicorn("Waiting for application shutdown."))
        self.line(log.uvicorn("Application shutdown complete."))
        self.line(log.uvicorn(f"Finished server process [{log.pid}]"))

    def _shutdown(self) -> None:
        """SIGTERM or SIGINT: stop serving, end the children, exit 0."""
        assert self.done is not None
        if self.done.is_set():
            return
        if self.config.engine == "llamacpp":
            self.line("srv    operator(): operator(): cleaning up before exit...")
        else:
            self._uvicorn_shutdown()
        self.exit_code = 0
        self.done.set()

    def _teardown(self) -> None:
        if self.work is not None:
            self.work.kill()
        if self.server is not None:
            self.server.close()
        if self.app is not None:
            self.app.abort_all()
            self.app.close()
        if self.sock is not None:
            with contextlib.suppress(OSError):
                self.sock.close()
        self.children.stop_all()

    def _die(self, signum: int) -> None:
        """End the process by ``signum``, as the engine does (children first)."""
        self._teardown()
        if signum == signal.SIGABRT:
            # an abort without a core file in the working directory
            with contextlib.suppress(ValueError, OSError):
                resource.setrlimit(resource.RLIMIT_CORE, (0, 0))
        if signum != signal.SIGKILL:
            signal.signal(signum, signal.SIG_DFL)
        os.kill(os.getpid(), signum)


def run(config: SimConfig) -> int:
    """Run the simulated engine until it exits; its exit code."""
    runner = Runner(config)
    try:
        return asyncio.run(runner.main())
    finally:
        runner.children.stop_all()


def _fill_jit_cache(path: Path) -> None:
    """Leave the compiled kernels where the backend caches them: the next start is warm."""
    if path.exists():
        return
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(b"\x7fELF" + bytes(4092))  # 4 KiB: a cache that grew
    except OSError:
        pass  # a read-only home: every start stays cold, as the engine's would
