"""The simulated engine's HTTP application: probes, models, metrics and generation.

Routes and probe answers follow the engine being simulated (SGLang's ``/health`` is 503
until warmup ends; llama.cpp answers 503 ``Loading model`` to everything but
``/v1/models`` while loading). Each generation is a small state machine driven by
``loop.call_at`` at absolute deadlines from the performance model; every step that is
due is written in one ``transport.write``.
"""

from __future__ import annotations

import asyncio
import enum
import json
import time
from collections.abc import Callable
from typing import IO

from servegate.sim.api import DONE, VOCAB, ApiError, Encoder, Request, error_body, parse_request
from servegate.sim.cache import KvCache, Lookup
from servegate.sim.config import SimConfig
from servegate.sim.http import Connection, HttpRequest
from servegate.sim.metrics import Metrics, render
from servegate.sim.model import PerfModel, Scheduler
from servegate.sim.tokenize import tokenize_route
from servegate.sim.tokens import load_tokenizer

__all__ = ["App", "State"]

# asyncio sleeps in whole milliseconds (epoll), so a timer fires up to 1 ms late: wake
# half a millisecond early and write what is due within that window, which centres the
# error on the deadline instead of always being late
EARLY = 5e-4
EPS = EARLY + 1e-4  # steps due within this many seconds are written with the current one


class State(enum.Enum):
    """Where the engine is, as its HTTP surface shows it."""

    LOADING = "loading"  # listening, model not ready (probe unhealthy)
    READY = "ready"  # serving
    ZOMBIE = "zombie"  # SGLang's scheduler died: HTTP answers, generation never does
    ENGINE_DEAD = "engine-dead"  # vLLM's engine core died: completions fail with 500
    CRASHED = "crashed"  # the process is going down


class App:
    """Routes, state and the generations in flight."""

    def __init__(self, config: SimConfig, log: Callable[[str], None]) -> None:
        self.config = config
        self.log = log
        self.loop = asyncio.get_running_loop()
        self.state = State.LOADING
        self.model = PerfModel(config)
        self.tokenizer = load_tokenizer(config.tokenizer)
        self.kv = KvCache(
            capacity_blocks=config.kv_blocks,
            block_size=config.block_size,
            enabled=config.prefix_cache,
        )
        self.scheduler = Scheduler(self.model, self.loop.time, self.kv)
        self.metrics = Metrics(config.spec_draft_tokens)
        self.metrics.kv = self.kv
        self.metrics.running = lambda: self.scheduler.running
        self.metrics.waiting = self.scheduler.waiting_count
        self.connections: set[Connection] = set()
        self.server_name = (
            b"uvicorn" if config.engine in ("sglang", "vllm", "generic") else b"llama.cpp"
        )
        self.created = int(time.time())
        # wall-clock = loop clock + offset, for the record file
        self.epoch_offset = time.time() - self.loop.time()
        self.record: IO[str] | None = None
        if config.record is not None:
            self.record = config.record.open("a", encoding="utf-8", buffering=1)
        self.engine_dead_armed = False
        self.on_engine_dead: Callable[[], None] | None = None
        self.hung: list[Connection] = []  # requests a dead scheduler never answers
        # an after-READY failure set to come with the Nth generation request, and its
        # trigger; the generation requests seen so far
        self.fail_at_request: tuple[int, Callable[[], object]] | None = None
        self.generations = 0

    def protocol(self) -> Connection:
        """A new connection bound to this app."""
        conn = Connection(self.handle, self.server_name)
        return conn

    def close(self) -> None:
        """Close the record file."""
        if self.record is not None:
            self.record.close()
            self.record = None

    def abort_all(self) -> None:
        """Drop every open connection (the process is crashing)."""
        for conn in list(self.connections):
            conn.abort()

    # --- routing ------------------------------------------------------------------------

    def handle(self, conn: Connection, req: HttpRequest) -> None:
        """Answer one request; never raises."""
        try:
            self._route(conn, req)
        except Exception as exc:  # an answer, never a crash of the server
            conn.respond(500, error_body(500, f"Internal error: {exc}", "InternalServerError"))

    def _route(self, conn: Connection, req: HttpRequest) -> None:
        engine = self.config.engine
        path, method = req.path, req.method
        if (
            engine == "llamacpp"
            and self.state is State.LOADING
            and path not in ("/models", "/v1/models", "/api/tags")
        ):
            conn.respond(
                503, b'{"error":{"code":503,"message":"Loading model","type":"unavailable_error"}}'
            )
            return
        if path in ("/v1/completions", "/v1/chat/completions", "/completions", "/chat/completions"):
            if method != "POST":
                self._error(conn, 405, f"Method {method} not allowed on {path}; use POST.")
                return
            self._generate(conn, req, chat=path.endswith("chat/completions"))
            return
        if path in ("/tokenize", "/v1/tokenize", "/apply-template"):
            if method != "POST":
                self._error(conn, 405, f"Method {method} not allowed on {path}; use POST.")
                return
            status, answer = tokenize_route(self, path, req.body)
            conn.respond(status, answer)
            return
        if method not in ("GET", "HEAD") and path not in ("/ping",):
            if path in _GET_ROUTES:
                self._error(conn, 405, f"Method {method} not allowed on {path}; use GET.")
                return
            self._error(conn, 404, f"Route {method} {path} not found.", "NotFoundError")
            return
        if path in ("/health", "/health_generate", "/v1/health"):
            self._health(conn)
        elif path in ("/v1/models", "/models"):
            conn.respond(200, self._models())
        elif path == "/metrics":
            text = render(
                engine,
                self.config.model,
                self.metrics,
                spec=self.config.spec_enabled,
                kv_tokens=self.kv.capacity * self.kv.block_size,
            )
            conn.respond(200, text.encode(), b"text/plain; version=0.0.4; charset=utf-8")
        elif path == "/ping":
            conn.respond(200, b"")
        elif path == "/version":
            conn.respond(200, b'{"version":"0.11.1"}')
        elif path in ("/get_model_info", "/model_info"):
            body = {
                "model_path": self.config.model,
                "tokenizer_path": self.config.model,
                "is_generation": True,
            }
            conn.respond(200, json.dumps(body).encode())
        else:
            self._error(conn, 404, f"Route {method} {path} not found.", "NotFoundError")

    def _error(
        self, conn: Connection, status: int, message: str, kind: str = "BadRequestError"
    ) -> None:
        conn.respond(status, error_body(status, message, kind))

    def _health(self, conn: Connection) -> None:
        engine, state = self.config.engine, self.state
        if state is State.READY:
            body = b'{"status":"ok"}' if engine in ("llamacpp", "generic") else b""
            conn.respond(200, body)
        elif state is State.ZOMBIE:
            # SGLang's health check waits for the detokenizer, then gives up
            self.loop.call_later(self.config.health_check_timeout_s, conn.respond, 503, b"")
        elif engine == "generic" and state is State.LOADING:
            conn.respond(503, b'{"status":"loading"}')
        else:
            conn.respond(503, b"")

    def _models(self) -> bytes:
        owner = {"sglang": "sglang", "vllm": "vllm", "llamacpp": "llamacpp"}.get(
            self.config.engine, "generic"
        )
        card = {
            "id": self.config.model,
            "object": "model",
            "created": self.created,
            "owned_by": owner,
            "root": self.config.model,
            "parent": None,
            "max_model_len": self.config.max_model_len,
        }
        return json.dumps({"object": "list", "data": [card]}, separators=(",", ":")).encode()

    # --- generation ---------------------------------------------------------------------

    def _generate(self, conn: Connection, req: HttpRequest, *, chat: bool) -> None:
        self.generations += 1
        if self.fail_at_request is not None and self.generations >= self.fail_at_request[0]:
            fire = self.fail_at_request[1]
            self.fail_at_request = None
            fire()
        if self.state in (State.ZOMBIE, State.CRASHED):
            # the scheduler is gone: the request is accepted and never answered
            self.hung.append(conn)
            return
        if self.state is State.ENGINE_DEAD or self.engine_dead_armed:
            self._engine_dead(conn)
            return
        try:
            parsed = parse_request(
                req.body,
                chat=chat,
                engine=self.config.engine,
                model=self.config.model,
                max_model_len=self.config.max_model_len,
                tokenizer=self.tokenizer,
            )
        except ApiError as exc:
            conn.respond(exc.status, error_body(exc.status, exc.message, exc.kind, exc.param))
            return
        if self.model.fails():
            self.metrics.errors += 1
            conn.respond(
                500,
                error_body(
                    500, "The engine failed to generate this request.", "InternalServerError"
                ),
            )
            return
        gen = Generation(self, conn, parsed)
        self.scheduler.submit(gen)

    def _engine_dead(self, conn: Connection) -> None:
        conn.respond(
            500,
            error_body(
                500,
                "EngineCore encountered an issue. See stack trace (above) for the root cause.",
                "InternalServerError",
            ),
        )
        if self.state is not State.ENGINE_DEAD:
            self.state = State.ENGINE_DEAD
            if self.on_engine_dead is not None:
                self.on_engine_dead()

    def finished(self, gen: Generation, now: float) -> None:
        """Account for a generation that sent its last token."""
        m = self.metrics
        m.requests += 1
        m.finished[gen.reason] += 1
        m.e2e.observe(now - gen.arrival)
        if gen.emitted > 1:
            m.tpot.observe((now - gen.first_at) / (gen.emitted - 1))
        m.decode_seconds += now - gen.first_at
        kv = self.scheduler.kv
        if kv is not None and kv.enabled and gen.emitted:
            n = len(VOCAB)
            text = b"".join(VOCAB[(gen.base + j) % n] for j in range(gen.emitted)).decode()
            kv.remember(gen.ids + self.tokenizer.encode(text, special=False))
        self.scheduler.finish(gen)
        if self.record is not None:
            off = self.epoch_offset
            line = {
                "id": gen.enc.rid,
                "stream": gen.stream,
                "prompt_tokens": gen.prompt_tokens,
                "cached_tokens": gen.cached_tokens,
                "completion_tokens": gen.emitted,
                "finish_reason": gen.reason,
                "arrival_s": round(gen.arrival + off, 6),
                "admitted_s": round(gen.admitted + off, 6),
                "first_token_s": round(gen.first_at + off, 6),
                "end_s": round(now + off, 6),
                "ttft_ms": round((gen.first_at - gen.arrival) * 1000, 3),
                "chunk_s": [round(t + off, 6) for t in gen.chunk_times],
            }
            self.record.write(json.dumps(line, separators=(",", ":")) + "\n")


_GET_ROUTES = (
    "/health",
    "/health_generate",
    "/v1/health",
    "/v1/models",
    "/models",
    "/metrics",
    "/version",
    "/get_model_info",
    "/model_info",
)


class Generation:
    """One request's life: queued, admitted, tokens at deadlines, the end."""

    __slots__ = (
        "admitted",
        "app",
        "arrival",
        "base",
        "blocks",
        "cached_tokens",
        "cancelled",
        "chat",
        "chunk_times",
        "conn",
        "emitted",
        "enc",
        "first_at",
        "ids",
        "include_usage",
        "last_write",
        "lookup",
        "next_at",
        "prompt_tokens",
        "reason",
        "remaining",
        "stall_after",
        "started",
        "stream",
        "texts",
        "timer",
    )

    def __init__(self, app: App, conn: Connection, req: Request) -> None:
        self.app = app
        self.conn = conn
        self.prompt_tokens = req.prompt_tokens
        self.ids = req.ids
        self.lookup: Lookup | None = None
        self.cached_tokens = 0
        self.blocks = 0
        self.stream = req.stream
        self.include_usage = req.include_usage
        self.chat = req.chat
        self.cancelled = False
        self.started = False
        self.arrival = app.loop.time()
        self.admitted = self.arrival
        self.first_at = 0.0
        self.next_at = 0.0
        self.last_write = -1.0
        target = app.model.output_len(req.max_tokens, req.ignore_eos)
        self.remaining = target
        self.emitted = 0
        self.reason = "length" if target == req.max_tokens else "stop"
        self.enc = Encoder(app.config.engine, app.config.model, req.chat)
        self.enc.finish(self.reason)
        self.base = int.from_bytes(self.enc.rid[-4:].encode(), "big")
        self.texts: list[bytes] = []
        self.chunk_times: list[float] = []
        self.timer: asyncio.TimerHandle | None = None
        self.stall_after = app.config.stall_stream_after if req.stream else None
        conn.on_close = self.cancel
        app.connections.add(conn)
        if self.stream:
            conn.start_stream()

    def start(self, admitted_at: float, first_token_at: float) -> None:
        """Admitted by the scheduler: the first token is due at ``first_token_at``."""
        self.started = True
        self.admitted = admitted_at
        self.next_at = first_token_at
        self.app.metrics.queue.observe(admitted_at - self.arrival)
        self.timer = self.app.loop.call_at(first_token_at - EARLY, self.tick)

    def suspend(self) -> None:
        """Preempted: no token until the scheduler admits it again."""
        self.started = False
        if self.timer is not None:
            self.timer.cancel()
            self.timer = None

    def cancel(self) -> None:
        """The client went away: stop generating, and count the request as aborted, never
        as finished (what it generated until now stays counted, as the engines count
        tokens as they go)."""
        if self.cancelled:
            return
        self.cancelled = True
        app = self.app
        app.connections.discard(self.conn)
        if self.timer is not None:
            self.timer.cancel()
            self.timer = None
        app.metrics.aborted += 1  # waiting or running, as SGLang's abort_request counts
        if self.started:
            app.scheduler.finish(self)

    def tick(self) -> None:
        """Write every step that is due, then wait for the next deadline."""
        self.timer = None
        if self.cancelled or not self.started or self.app.state not in (State.READY, State.LOADING):
            return
        conn = self.conn
        if conn.paused:
            conn.on_resume = self.tick
            return
        app = self.app
        m = app.metrics
        model = app.model
        loop_time = app.loop.time
        now = loop_time()
        parts: list[bytes] = []
        enc = self.enc
        n_vocab = len(VOCAB)
        chunks = 0
        wrote_before = self.last_write >= 0.0
        while self.remaining > 0 and self.next_at <= now + EPS:
            if self.stall_after is not None and self.emitted >= self.stall_after:
                break
            if self.emitted == 0:
                tokens = 1
                self.first_at = now
                m.ttft.observe(now - self.arrival)
                m.prompt_tokens += self.prompt_tokens
                m.prompt_seconds += now - self.admitted
            else:
                step = model.step(self.remaining)
                tokens = step.tokens
                if step.drafted:
                    m.spec_step(step.drafted, step.accepted)
            start = self.base + self.emitted
            if tokens == 1:
                text = VOCAB[start % n_vocab]
            else:
                text = b"".join(VOCAB[(start + j) % n_vocab] for j in range(tokens))
            self.emitted += tokens
            self.remaining -= tokens
            app.scheduler.grow(self, self.prompt_tokens + self.emitted)
            m.generation_tokens += tokens
            running = app.scheduler.running
            m.decode_steps += 1
            m.busy_slots += running
            if self.stream:
                tail = enc.mid_tail if self.remaining else enc.last_tail
                if self.emitted == tokens and self.chat:
                    parts.append(enc.role)
                parts.append(enc.head + text + tail)
            else:
                self.texts.append(text)
            chunks += 1
            self.chunk_times.append(now)
            self.next_at += model.step_s(running)
        if chunks:
            # the gap before this write, then zero gaps for steps written together
            gaps = chunks if wrote_before else chunks - 1
            if gaps and wrote_before:
                m.itl.observe(now - self.last_write)
                gaps -= 1
            if gaps:
                m.itl.observe(0.0, gaps)
            self.last_write = now
        if self.remaining <= 0:
            self._end(parts, now)
            return
        if parts:
            conn.send(b"".join(parts))
        if self.stall_after is not None and self.emitted >= self.stall_after:
            return  # a stalled stream: the connection stays open, nothing more comes
        self.timer = app.loop.call_at(self.next_at - EARLY, self.tick)

    def _end(self, parts: list[bytes], now: float) -> None:
        app = self.app
        conn = self.conn
        conn.on_close = None
        app.connections.discard(conn)
        if self.stream:
            if self.include_usage:
                parts.append(
                    self.enc.usage_chunk(self.prompt_tokens, self.emitted, self.cached_tokens)
                )
            parts.append(DONE)
            conn.end_stream(b"".join(parts))
        else:
            text = b"".join(self.texts).decode()
            conn.respond(
                200,
                self.enc.full(
                    text, self.reason, self.prompt_tokens, self.emitted, self.cached_tokens
                ),
            )
        app.finished(self, now)
