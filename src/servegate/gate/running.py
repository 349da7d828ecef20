"""Gate a server someone else started, from its log file, PID and/or URL: ``wait()``.

It never kills anything; ``servegate.launch`` starts a server and gates it with the same
machinery (``decide.Gate``).
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable, Sequence
from urllib.parse import urlsplit

import psutil

from servegate.engines import get_profile
from servegate.errors import UsageError
from servegate.gate.decide import Gate, GateSources
from servegate.gate.defaults import STALL_S, TIMEOUT_S
from servegate.gate.options import GateOptions, check_log_path
from servegate.gate.verdict import Verdict, raise_for_verdict
from servegate.telemetry.model import Snapshot

__all__ = ["wait"]


def wait(
    *,
    log_path: str | None = None,
    pid: int | None = None,
    url: str | None = None,
    engine: str = "generic",
    ready: Sequence[str] = (),
    crash: Sequence[str] = (),
    port: int | None = None,
    health_url: str | None = None,
    host: str = "127.0.0.1",
    timeout_s: float = TIMEOUT_S,
    stall_s: float | None = STALL_S,
    model: str | None = None,
    sample_s: float = 1.0,
    on_note: Callable[[str], None] | None = None,
    on_status: Callable[[Snapshot], None] | None = None,
) -> Verdict:
    """Gate a server that is already running; return its READY verdict.

    Args:
        log_path: its log file, followed from the start (truncation and rotation too).
        pid: its main process: its exit is a CRASH, and essential children are watched.
        url: its base URL (``http://host:port``); the profile's probe path is added.
            Where nothing else can tell readiness (generic, no ``ready``), the URL
            itself is probed: any 2xx.
        engine: the profile: sglang, vllm, llamacpp, tgi, trtllm or generic.
        ready: extra ready-line regexes; crash: extra fatal-line regexes.
        port: probe ``http://host:port`` + the profile's probe path.
        health_url: probe exactly this URL (any 2xx).
        timeout_s: hard cap; stall_s: no new output for this long (None: never).
        model: model name for the 1-token completion (vLLM).
        sample_s: the telemetry period until the verdict (0: none): the process tree of
            ``pid`` (without one, only the network and GPUs), in ``verdict.snapshots``.
        on_note: called with each live note while it waits (a silent server found busy).
        on_status: called with each sample while it waits (a live status line).

    Raises:
        UsageError: bad options, a missing log folder, or no such process.
        ServerCrashed: CRASH (``.verdict`` says why).
        ServerTimeout: TIMEOUT.
    """
    if log_path is None and pid is None and url is None:
        raise UsageError("wait needs something to watch: pass --log FILE, --pid PID or --url URL.")
    if url is not None and health_url is None:
        parts = urlsplit(url)
        if parts.scheme not in ("http", "https") or not parts.hostname:
            raise UsageError(
                f"--url {url!r} is not an http(s) URL: pass e.g. http://127.0.0.1:8000."
            )
        profile = get_profile(engine)
        if parts.path not in ("", "/") or not (profile.probe_path or profile.ready_lines or ready):
            # a path, or nothing else can tell (generic): the URL itself is the probe
            health_url = url
        else:
            host = parts.hostname
            port = parts.port or (443 if parts.scheme == "https" else 80)
    options = GateOptions(
        engine=engine,
        ready=tuple(ready),
        crash=tuple(crash),
        port=port,
        host=host,
        health_url=health_url,
        timeout_s=timeout_s,
        stall_s=stall_s,
        model=model,
        sample_s=sample_s,
    )
    resolved = options.resolve()
    if log_path is not None:
        check_log_path(log_path)
    started_wall: float | None = None
    started_mono: float | None = None
    if pid is not None:
        try:
            created = psutil.Process(pid).create_time()
        except psutil.Error:
            raise UsageError(f"no process has PID {pid}: pass the server's PID to --pid.") from None
        # the clock starts when the server did, as the user counts it
        started_wall = created
        started_mono = time.monotonic() - max(0.0, time.time() - created)
    sources = GateSources(
        pid=pid,
        log_path=os.path.abspath(log_path) if log_path else None,
        started_wall=started_wall,
        started_mono=started_mono,
        on_note=on_note,
        on_sample=on_status,
    )
    return raise_for_verdict(Gate(resolved, sources).run())
