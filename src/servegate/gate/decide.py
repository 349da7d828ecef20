"""The gate: race output, process exits, probes and timers, and decide at once.

One ``selectors`` loop waits on everything at the same time: the server's output (a
pipe we own, or a log file via inotify), a pidfd for the main process and for each
essential child, the probe thread's wake-up pipe, and the nearest timer (deadline,
stall, child snapshot, file backstop). Nothing sleeps and polls: the first event that
settles the question ends the loop, within milliseconds of it happening.

When the log is silent past ``--stall`` and telemetry is given (``GateSources.snapshots``),
the gate looks before it decides: busy on any signal is *slow* (keep waiting, say so
through ``on_note``), idle on every signal for the stall period is *stuck* (TIMEOUT, kind
``stuck``). Every TIMEOUT takes the stacks of the tree first (``servegate.diag``).
"""

from __future__ import annotations

import contextlib
import ipaddress
import os
import re
import selectors
import signal
import stat
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace
from typing import BinaryIO
from urllib.parse import urlsplit

from servegate.diag.diagnosis import Diagnosis
from servegate.diag.stacks import Stacks
from servegate.engines.families import (
    ADAPTER_FILES,
    ADAPTER_METHOD,
    KIND_HINTS,
    SHM_TOO_SMALL,
    family_of,
    kind_order,
    words_kind,
)
from servegate.engines.profile import Signature
from servegate.gate.cause import (
    GENERIC_ENDS,
    Cause,
    exception_text,
    goes_on,
    message_cause,
    phase_kind,
    relays_answer,
    says_signalled,
    select_cause,
    strip_prefix,
)
from servegate.gate.children import ChildWatch
from servegate.gate.flags import (
    adapter_as_model,
    cpu_asked,
    dashed_flag_in_line,
    file_for_folder,
    file_where_folder,
    flag_in_line,
    folder_missing,
    host_unresolvable,
    hosts_listed,
    json_not_given,
    kept,
    load_format_forced,
    model_not_a_model,
    model_shard_given,
    module_given,
    module_misspelt,
    option_by_word,
    option_in_code,
    option_module,
    option_named_module,
    option_spelt,
    override_given,
    path_in_line,
    path_not_there,
    quantization_given,
    tls_given,
    uri_for_path,
    url_host,
    value_in_line,
    warnings_as_errors,
    zero_given,
    zero_named,
)
from servegate.gate.follow import FileFollower
from servegate.gate.learned import likely_kind
from servegate.gate.normal import normalise
from servegate.gate.options import JSON_TAIL_LINES, Resolved
from servegate.gate.probe import Prober
from servegate.gate.stamps import LineClock
from servegate.gate.verdict import DetectedBy, Kind, PhaseSpan, Status, Verdict, iso
from servegate.gate.watch import LineHit, LogWatcher, withdrawn
from servegate.telemetry.activity import activity, phase_activity
from servegate.telemetry.model import Activity, Snapshot
from servegate.telemetry.sampler import Sampler

__all__ = ["Gate", "GateSources", "exit_status"]

_SNAPSHOT_EVERY_S = 0.5  # descendant scan period (also after output, at most this often)
# engines spawn their workers early; scan often at first so one that dies young is seen
_SNAPSHOT_EARLY_S = 0.05
_EARLY_WINDOW_S = 5.0
_BACKSTOP_S = 0.25  # re-check a followed file even without inotify events
_PIPE_READ = 1 << 20
_EXIT_DRAIN_S = 0.5  # after the main process exits, read what is left for this long at most
_WRAPPER_WAIT_S = 0.5  # after a wrapper signature, wait this long for the specific cause
# after a signature that a recovery line can withdraw, wait this long for that line. The
# engine prints it in the same breath (llama.cpp: microseconds after the out-of-memory
# lines, before it retries), so 1 s is ample on a loaded machine, and a real failure of a
# process that keeps running is decided 1 s later than on sight (an exit decides at once)
_WITHDRAW_WAIT_S = 1.0
# a ready line printed before the port is bound (EngineProfile.ready_before_bind), with
# no probe to confirm it: READY after this long without a fatal line or an exit (uvicorn
# logs a failed bind and exits within milliseconds of its "Application startup complete.")
_BEFORE_BIND_WAIT_S = 0.2
# exit codes with which a shell or a container runtime reports a child killed by
# SIGABRT, SIGKILL or SIGSEGV (128 + the signal)
_SHELL_SIGNALS = (
    128 + signal.SIGILL,
    128 + signal.SIGABRT,
    128 + signal.SIGKILL,
    128 + signal.SIGSEGV,
)
# a shell's own exit codes for a command it could not run: not found (the program, or
# the dynamic loader's library), found but not executable
_SHELL_CANNOT_RUN = {
    127: (
        "install",
        "a shell's 127: the program or a shared library it needs was not found",
        "check the command's path and that the image or environment has the engine "
        "and its native libraries (the loader's error names the missing one)",
    ),
    126: (
        "permission",
        "a shell's 126: the program is not executable",
        "check the command's path and its mode (chmod +x), or run it with its interpreter",
    ),
}
_CHILD_GRACE_S = 0.3  # after an essential child dies, wait this long for the main to follow
_PARTIAL_QUIET_S = 0.1  # output quiet this long: match an unfinished last line as it stands
# a slow (busy) server is looked at again this often: the stall period / 10, within bounds
_RECHECK_MIN_S = 0.5
_RECHECK_MAX_S = 30.0
_DEADLINE_WINDOW_S = 30.0  # at the deadline, "still working" means busy over this long
_COVERED = 0.8  # stuck needs telemetry over this share of the stall period at least
_DUMP_TIMEOUT_S = 10.0  # py-spy on one process at most this long


def exit_status(status: int) -> int:
    """A ``waitpid`` status as an exit code; a signal N becomes -N (like subprocess)."""
    if os.WIFSIGNALED(status):
        return -os.WTERMSIG(status)
    return os.WEXITSTATUS(status)


@dataclass(slots=True, kw_only=True)
class GateSources:
    """Where the gate's events come from; any of them may be absent."""

    pid: int | None = None  # the main process
    is_parent: bool = False  # we may waitpid() it to learn its exit code
    pipe_fd: int | None = None  # its output, a pipe we own (non-blocking)
    tee: BinaryIO | None = None  # append what the pipe gives to this log file
    log_path: str | None = None  # or follow this file
    started_wall: float | None = None  # when the server started (default: now)
    started_mono: float | None = None
    # extra descriptors for the caller's own channels: fd -> callback when readable,
    # which returns False to stop watching that descriptor
    extra: dict[int, Callable[[], bool]] = field(default_factory=dict)
    # the telemetry so far (the sampler's snapshots, clock = seconds since started_mono);
    # None: no telemetry, a silent log past --stall is a TIMEOUT as it stands
    snapshots: Callable[[], Sequence[Snapshot]] | None = None
    # a live note for the user ("no output for 240 s during jit_compile; slow: ...")
    on_note: Callable[[str], None] | None = None
    # take the stacks of the tree on TIMEOUT, before the verdict (needs ``pid``)
    dump_stacks: bool = True
    # each new snapshot of the gate's own sampler, on its thread (a live status line)
    on_sample: Callable[[Snapshot], None] | None = None


class Gate:
    """Decide READY, CRASH or TIMEOUT for one server; ``run()`` returns the verdict."""

    def __init__(self, resolved: Resolved, sources: GateSources) -> None:
        self.resolved = resolved
        self.options = resolved.options
        self.sources = sources
        self.watcher = LogWatcher(resolved.rules, tail_lines=JSON_TAIL_LINES)
        now_mono, now_wall = time.monotonic(), time.time()
        self.started_mono = sources.started_mono or now_mono
        self.started_wall = sources.started_wall or now_wall - (now_mono - self.started_mono)
        self.last_progress = self.started_mono  # silence is measured from the start
        # a backlog (wait on a server already up) is placed by the engine's own stamps
        self._clock = LineClock(
            started_wall=self.started_wall,
            process_start=sources.pid is not None and sources.started_wall is not None,
        )
        self.watcher.line_time = self._line_time
        self._peek_at: float | None = None  # when to look at an unfinished last line
        self._ready_line_s: float | None = None  # the ready line's own stamp, if read late
        # the log as it was when the gate began is being read / held the ready line: a
        # server that was already up (wait), whose start this gate did not see
        self._in_backlog = False
        self._ready_in_backlog = False
        self.exit_code: int | None = None
        self._verdict: Verdict | None = None
        self._sel = selectors.DefaultSelector()
        self._follower: FileFollower | None = None
        self._pidfd: int | None = None
        self._prober: Prober | None = None
        self._wake_r, self._wake_w = os.pipe2(os.O_NONBLOCK | os.O_CLOEXEC)
        self._children = (
            ChildWatch(sources.pid, resolved.profile.essential_children)
            if sources.pid is not None
            else None
        )
        self._next_snapshot = 0.0
        self._ready_line_at: float | None = None
        self._wrapper: tuple[Signature, str, float] | None = None  # signature, line, until
        # fatal hits that a recovery line may still withdraw (oldest first), and until when
        self._held: list[tuple[Signature, str]] = []
        self._elsewhere: str | None = None  # the port the server says it listens on instead
        self._held_until: float | None = None
        # a ready line printed before the port is bound, and until when READY waits
        self._ready_hold: tuple[str, float] | None = None
        self._child_gone: tuple[int, str, float] | None = None  # pid, label, until
        self.essential_pids: tuple[int, ...] = ()  # essential children alive at the verdict
        # the flight recorder: from the gate's start to the verdict (--sample; 0: none)
        self.sampler: Sampler | None = None
        # stuck or slow: the next look at a busy quiet server, and what was last said
        self._recheck_at: float | None = None
        self._diagnosis: Diagnosis | None = None
        self._noted: tuple[float, str] | None = None  # (silence spell start, bound) last noted
        self._noted_silence = 0.0
        self._refusal_noted = False  # the probe's 4xx was told to the user

    # -- the loop ---------------------------------------------------------------------

    def run(self, *, close: bool = True) -> Verdict:
        """Wait for the first decisive event; return the verdict.

        ``close=False`` leaves the cleanup (probe thread, descriptors) to a later
        ``close()``, so that the verdict can be passed on first.
        """
        try:
            self._setup()
            while self._verdict is None:
                self._turn()
            return self._verdict
        except BaseException:
            self.close()
            raise
        finally:
            if close:
                self.close()

    def last_sample(self, verdict: Verdict) -> Verdict:
        """``verdict`` with one more sample, taken now, in its series and summary: call it
        once the verdict is sent, so that the recording reaches the verdict's moment."""
        if self.sampler is None or self.sampler.sample_now() is None:
            return verdict
        snaps = tuple(self.sampler.snapshots())
        return replace(
            verdict,
            telemetry=self.sampler.summary(),
            snapshots=snaps,
            phases=_bound_phases(verdict.phases, snaps, verdict.elapsed_s),
        )

    def close(self) -> None:
        """Stop the probe and the sampler, and release every descriptor."""
        if self.sampler is not None:
            self.sampler.stop()
        if self._prober is not None:
            self._prober.stop()
            self._prober = None
        self._sel.close()
        for fd in (self._wake_r, self._wake_w, self._pidfd):
            if fd is not None:
                with contextlib.suppress(OSError):
                    os.close(fd)
        self._pidfd = None
        self._wake_r = self._wake_w = -1
        if self._follower is not None:
            self._follower.close()
            self._follower = None
        if self._children is not None:
            self._children.close()

    def _setup(self) -> None:
        src = self.sources
        if self.options.sample_s > 0 and src.snapshots is None:
            self.sampler = Sampler(
                src.pid,
                period_s=self.options.sample_s,
                zero=self.started_mono,
                on_sample=src.on_sample,
            ).start()
            src.snapshots = self.sampler.snapshots
        self._sel.register(self._wake_r, selectors.EVENT_READ, "probe")
        if src.pipe_fd is not None:
            self._sel.register(src.pipe_fd, selectors.EVENT_READ, "pipe")
        elif src.log_path is not None:
            self._follower = FileFollower(src.log_path)
            fd = self._follower.fileno()
            if fd is not None:
                self._sel.register(fd, selectors.EVENT_READ, "file")
        if src.pid is not None:
            try:
                self._pidfd = os.pidfd_open(src.pid)
            except ProcessLookupError:
                self._pidfd = None
                self._on_exit()
                return
            self._sel.register(self._pidfd, selectors.EVENT_READ, "exit")
        for fd, callback in src.extra.items():
            self._sel.register(fd, selectors.EVENT_READ, callback)
        res = self.resolved
        if res.probe_url is not None:
            self._prober = Prober(
                res.probe_url,
                wake_fd=self._wake_w,
                any_2xx=self.options.health_url is not None,
                # a URL the user names must exist; a profile's route may be missing
                absent_ok=res.profile.probe_absent_ok and self.options.health_url is None,
                generate_url=res.generate_url,
                model=self.options.model,
                interval_s=self.options.probe_interval_s,
            ).start()
        said = self.options.port_note()
        if said is not None:
            self._note(
                f"note: {said}; the probe asks port {self.options.port} "
                "(right if something maps it there)"
            )
        if self._follower is not None:
            self._in_backlog = True
            self._read_file()
            self._in_backlog = False
            if self._verdict is None and not self._follower.found:
                self._note(f"waiting for the log to appear: {self._follower.path}")

    def _turn(self) -> None:
        now = time.monotonic()
        events = self._sel.select(max(0.0, self._next_timer(now) - now))
        kinds = {key.data for key, _ in events if isinstance(key.data, str)}
        # output first: a fatal line printed just before exiting beats the bare exit
        if "pipe" in kinds:
            self._read_pipe()
        if "file" in kinds:
            assert self._follower is not None
            self._follower.drain_events()
            self._read_file()
        for key, _ in events:
            if self._verdict is not None:
                return
            if callable(key.data):
                if not key.data():
                    self._sel.unregister(key.fd)
            elif key.data == "exit":
                self._on_exit()
            elif isinstance(key.data, tuple):
                self._on_child_exit(key.data[1], key.data[2])
        if self._verdict is None and "probe" in kinds:
            self._on_probe()
        if self._verdict is None:
            self._timers(time.monotonic())

    def _next_timer(self, now: float) -> float:
        deadline = self.started_mono + self.options.timeout_s
        timers = [deadline]
        if self.options.stall_s is not None:
            timers.append(self._stall_due())
        if self._wrapper is not None:
            timers.append(self._wrapper[2])
        if self._held_until is not None:
            timers.append(self._held_until)
        if self._ready_hold is not None:
            timers.append(self._ready_hold[1])
        if self._child_gone is not None:
            timers.append(self._child_gone[2])
        if self._children is not None:
            timers.append(self._next_snapshot)
        if self._follower is not None:
            timers.append(now + _BACKSTOP_S)
        if self._peek_at is not None:
            timers.append(self._peek_at)
        return min(timers)

    # -- event handlers ---------------------------------------------------------------

    def _rel(self, mono: float | None = None) -> float:
        return (mono if mono is not None else time.monotonic()) - self.started_mono

    def _read_pipe(self, *, until: float | None = None) -> None:
        """Read once, or (``until`` given) until the pipe is empty or that time passes."""
        fd = self.sources.pipe_fd
        assert fd is not None
        while True:
            try:
                data = os.read(fd, _PIPE_READ)
            except BlockingIOError:
                return
            except OSError:
                data = b""
            if not data:
                self._sel.unregister(fd)
                self.sources.pipe_fd = None
                self._hits(self.watcher.finish(self._rel()))
                return
            if self.sources.tee is not None:
                self.sources.tee.write(data)
                self.sources.tee.flush()
            self._feed(data)
            if self._verdict is not None or until is None or time.monotonic() > until:
                return

    def _read_file(self, *, to_end: bool = False) -> None:
        assert self._follower is not None
        while True:
            result = self._follower.read()
            if result.restarted:
                self.watcher.reset()
            for chunk in result.chunks:
                self._feed(chunk)
                if self._verdict is not None:
                    return
            if not result.more or (not to_end and not result.chunks):
                return
            if not to_end:
                # a big backlog: let other events in between, come back at once
                os.write(self._wake_w, b"f")
                return

    def _line_time(self, line: str, now: float) -> float:
        placed = self._clock.place(line, now)
        return now if placed is None else placed

    def _feed(self, data: bytes) -> None:
        self._peek_at = time.monotonic() + _PARTIAL_QUIET_S
        novel = self.watcher.novel_blocks
        hits = self.watcher.feed(data, self._rel())
        if self.watcher.novel_blocks != novel:
            self._progress()
        self._hits(hits)

    def _progress(self) -> None:
        now = time.monotonic()
        self.last_progress = now
        if self._children is not None and now >= self._next_snapshot:
            self._snapshot(now)

    def _hits(self, hits: list[LineHit]) -> None:
        for hit in hits:
            if self._verdict is not None:
                return
            if hit.what == "recover":
                self._held = [(sig, line) for sig, line in self._held if not withdrawn(sig, hit)]
                if not self._held:
                    self._held_until = None
            elif hit.what == "fatal":
                assert hit.signature is not None
                if goes_on(hit.line, hit.signature):
                    continue  # the line says the engine proceeds without it
                self._ready_hold = None  # a failure after a ready line of a port not bound
                relays = relays_answer(hit.line, hit.signature)
                if hit.signature.withdrawn_by is not None and not relays:
                    if not self._held:
                        self._held_until = time.monotonic() + _WITHDRAW_WAIT_S
                    self._held.append((hit.signature, hit.line))
                elif not hit.signature.wrapper and not relays:
                    # a held hit came first: it is the more specific line (llama.cpp's
                    # generic "failed to load model" cascade follows its cause)
                    self._crash_signature(
                        *(self._held[0] if self._held else (hit.signature, hit.line))
                    )
                elif self._wrapper is None:
                    until = time.monotonic() + _WRAPPER_WAIT_S
                    self._wrapper = (hit.signature, hit.line, until)
            elif self._ready_line_at is None:
                self._ready_line_at = time.monotonic()
                self._ready_in_backlog = self._in_backlog
                self._ready_line_s = self._clock.place(hit.line, self._rel(self._ready_line_at))
                if self._prober is not None:
                    self._prober.nudge()
                elif hit.before_bind or self._given_port() is not None:
                    # a ready line printed before the port is bound; or one of a command
                    # whose port is known, whose line saying where it listens may follow
                    self._ready_hold = (hit.line, time.monotonic() + _BEFORE_BIND_WAIT_S)
                else:
                    self._ready_by_line(hit.line)

    def _ready_by_line(self, line: str) -> None:
        elsewhere = self._listening_elsewhere()
        if elsewhere is not None:
            # the server says it listens on another port than its command's (a variable
            # of the platform's that overrides --port): what the gate would probe never
            # answers; the deadline decides, and says so
            self._elsewhere = elsewhere
            return
        self._decide(
            Status.READY,
            DetectedBy.LOG,
            f"ready line seen: {line.strip()[:200]}",
            matched_line=line,
        )

    def _option_file_missing(self, line: str) -> bool:
        """Whether ``line`` is a bare ``FileNotFoundError`` or ``IsADirectoryError`` (no
        path: the C call does not say which) raised where the server loads its TLS files
        or binds its unix socket, by the traceback's source line right above it."""
        if not _BARE_NOT_FOUND.search(line):
            return False
        lines, at = self._tail_at(line)
        if not at:  # not held, or the tail's first line: no source line above it
            return False
        return _OPTION_FILE_CALL.search(lines[at - 1]) is not None

    def _device_library_missing(self, kind: str | None, line: str) -> tuple[str, str] | None:
        """The line of the tail that names the device or the device's backend the
        command chose (``--device npu``, ``--attention-backend ascend``), and that
        option, when the failure is an install's (``No module named 'torch_npu'``) or
        one without a family raised in that device's own code (``hl-smi: not found``
        from ``get_hpu_memory_capacity`` after ``--device hpu``): the device's software
        is missing because the machine has no such device."""
        install = family_of(kind) == "install"
        if not (install or kind in (None, "exit", "bad-args") or family_of(kind) == "engine"):
            return None
        chosen = [
            (name, value.strip())
            for name, value in self.options.command_options
            if not name.startswith("$")
            and value.strip()
            and (
                (name == "device" and value.strip().lower() not in _COMMON_DEVICES)
                or value.strip().lower() in _DEVICE_BACKENDS
            )
        ]
        if not chosen:
            return None
        lines = [item.strip() for item in self.watcher.tail.last()]
        frames = _frame_words(self._traceback_above(line))
        for name, value in chosen:
            word = re.compile(rf"(?<![\w-]){re.escape(value)}(?![\w-])", re.IGNORECASE)
            said = any(word.search(strip_prefix(text)) for text in (line, *lines[-3:]))
            if not (value.lower() in frames or (install and said)):
                continue
            named = f"--{name.replace('_', '-')} {value}"
            # the last exception that names the device, else the failure itself
            for text in reversed(lines):
                if exception_text(text) is not None and word.search(strip_prefix(text)):
                    return text, named
            return line.strip(), named
        return None

    def _environment_first(self, kind: str | None) -> tuple[str, str, str] | None:
        """The line of the tail that says what the environment lacked first, its kind and
        hint, where the failure that ended the process is its consequence: Python's own
        ``No module named 'encodings'`` under its fatal error (a PYTHONHOME that points
        elsewhere: bad-args where the command set it, else install); a model's own code
        that needs a package not installed (``This modeling file requires the following
        packages that were not found in your environment: flash_attn``, logged as a
        warning) before the engine says the architecture is not supported (install)."""
        lines = self.watcher.tail.last()
        if kind in ("fatal-python", "install"):
            # Python's fatal start error, or the line under it that a wrapper signature
            # waited for (ModuleNotFoundError of its own standard library)
            for text in lines:
                invalid = _INVALID_VARIABLE.search(text)
                setting = invalid and self._variable(names=(invalid.group(1),))
                if setting:
                    # Python refusing a value of its own variable ("invalid PYTHONUTF8
                    # environment variable value" after PYTHONUTF8=yes)
                    return (
                        text,
                        "bad-args",
                        f"the command's {setting} is a value Python refuses before it runs "
                        "any code: give one `python --help-env` lists, or unset it",
                    )
                unknown = _UNKNOWN_ENCODING.search(strip_prefix(text))
                setting = unknown and self._variable(encoding=unknown.group(1))
                if setting:
                    # Python's stdio given an encoding it does not have (a database's
                    # charset name in PYTHONIOENCODING): its init fails before any code
                    return (
                        text,
                        "bad-args",
                        f"the command's {setting} names an encoding Python does not have: "
                        "give one it has (utf-8), or unset it",
                    )
            found = next((t for t in lines if _NO_ENCODINGS.search(strip_prefix(t))), None)
            if found is None and kind == "fatal-python":
                # the fatal line itself, where the one under it is not read yet
                found = next((t for t in lines if _NO_CODEC.search(t)), None)
            if found is None:
                return None
            # the variables that tell Python where its standard library is
            setting = self._variable(names=("PYTHONHOME", "PYTHONPATH", "PYTHONPLATLIBDIR"))
            if setting is not None:
                return (
                    found,
                    "bad-args",
                    (
                        f"the command's {setting} points Python away from its own standard "
                        "library: unset it, or point it at this Python's prefix"
                    ),
                )
            return (
                found,
                "install",
                (
                    "Python could not find its own standard library: check PYTHONHOME and "
                    "PYTHONPATH, and that this Python's installation is whole"
                ),
            )
        schemeless = self._variable(schemeless=True)
        if schemeless is not None:
            found = next((t for t in lines if _NO_SCHEME.search(t)), None)
            if found is not None:
                # an endpoint variable without its scheme: the Hub client's request fails
                # before it is sent, then the config's load says it could not be fetched
                return (
                    found,
                    "bad-args",
                    (f"the command's {schemeless} has no scheme: write it as https://host"),
                )
        if kind == "unsupported-model":
            found = next((t for t in reversed(lines) if _REMOTE_CODE_NEEDS.search(t)), None)
            if found is not None:
                return (
                    found,
                    "install",
                    (
                        "the model's own code (--trust-remote-code) imports a package this "
                        "environment lacks: install the one the line names, or serve the model "
                        "without its custom code"
                    ),
                )
        return None

    def _variable(
        self, *, names: Sequence[str] = (), encoding: str = "", schemeless: bool = False
    ) -> str | None:
        """The first variable the command sets, as ``NAME=value``, that is one of
        ``names``, or whose value names ``encoding`` (``latin9:strict``), or, with
        ``schemeless``, an endpoint's without its ``scheme://``; else None."""
        for name, value in self.options.command_options:
            bare = name[1:]
            if not name.startswith("$"):
                continue
            if (
                bare in names
                or (encoding and value.strip().split(":")[0].lower() == encoding.lower())
                or (schemeless and _URL_VARIABLE.search(bare) and "://" not in value)
            ):
                return f"{bare}={value}"
        return None

    def _port_first(self, line: str) -> tuple[str, str, str] | None:
        """Where the command's ``--port`` is no port (below 0, above 65535): the tail's
        bind failure of it (uvicorn's ``[Errno -8] Servname not supported``), else
        ``line`` (the engine's own request to that address, refused as a URL), bad-args
        and a hint naming it."""
        value = next((v for n, v in self.options.command_options if n == "port"), None)
        try:
            port = int(value.strip().strip("'\"")) if value is not None else None
        except ValueError:
            return None
        if port is None or 0 <= port <= _MAX_PORT:
            return None
        lines, at = self._tail_at(line)
        bound = next((t for t in lines[:at] if _BIND_REFUSED.search(strip_prefix(t))), line)
        return (
            bound,
            "bad-args",
            f"the command's --port {value} is no port: give one from 1 to {_MAX_PORT} "
            "(0: any free port)",
        )

    def _warned_first(self, kind: str | None, line: str) -> tuple[str, str, str] | None:
        """The tail's warning that foretold the failure (``_FORETOLD``: the model is not
        supported and the engine goes on anyway, "The Transformers implementation of
        MambaForCausalLM reports it is not backend-compatible ... Proceeding anyway"; the
        KV cache holds less than one request, "KV pool holds 16 tokens, fewer than
        --context-length 1024"), its kind and a hint, where ``line`` is an error with no
        family's words of its own (a bare ``TypeError`` in the model's code, the warmup
        request refused)."""
        text = strip_prefix(line)
        if exception_text(text) is None or not (
            kind in (None, "exit", "model-load") or family_of(kind) == "engine"
        ):
            return None
        if words_kind(text) is not None:
            return None
        lines, at = self._tail_at(line)
        for said in reversed(lines[:at]):
            for warning, warned, fix in _FORETOLD:
                if warning.search(said):
                    return said, warned, fix
        return None

    def _denied_first(self, kind: str | None, line: str) -> tuple[str, str, str] | None:
        """The tail's last ``[Errno 13] Permission denied`` on the path ``line`` names or
        a path inside it, permission and a hint, where ``line`` says only that the
        folder is no model (vLLM's ``Invalid repository ID or local directory
        specified: '/m'`` after its file listing was refused ``/m/tokenizer.json``: a
        folder without its search bit for this user). A retried denial is not the
        last word: the line that gave up is."""
        if not (kind in (None, "exit", "bad-args") or family_of(kind) == "model"):
            return None
        lines, at = self._tail_at(line)
        quoted = {path.rstrip("/") for path in _QUOTED_PATH.findall(strip_prefix(line))}
        if not quoted or not at:
            return None
        for said in reversed(lines[:at]):
            text = strip_prefix(said)
            denied = _DENIED.search(text)
            if denied is None or _RETRYING.search(text):
                continue
            path = denied.group(1)
            if any(path == folder or path.startswith(f"{folder}/") for folder in quoted):
                return (
                    said,
                    "permission",
                    (
                        f"this user may not read {path}: give its files read permission and "
                        "its folders search (x) permission, or run as their owner"
                    ),
                )
        return None

    def _host_first(self, line: str) -> tuple[str, str, str] | None:
        """The tail's name-lookup failure of the server's own socket, bad-args and a hint,
        where the command's host is no address and no name (``--host '[::1]'``): uvicorn
        logs it and the server goes on without its port, to die later of what that
        brings (its own warmup request refused), which ``line`` is."""
        named = host_unresolvable(self.options.command_options)
        if named is None or _NAME_LOOKUP.search(line):
            return None
        lines, at = self._tail_at(line)
        for said in reversed(lines[:at]):
            text = strip_prefix(said)
            if _NAME_LOOKUP.search(text) and not _FETCHING.search(text):
                return (
                    said,
                    "bad-args",
                    (
                        f"the command's {named} is not an address nor a host name: give an "
                        "address (0.0.0.0, 127.0.0.1, ::1, without brackets) or a name, "
                        "without a port"
                    ),
                )
        return None

    def _option_file_failed(self, kind: str | None, line: str) -> tuple[str, str] | None:
        """An earlier line of the tail that says a file or folder an option of the
        command names could not be opened (``FileNotFoundError: ... No such file or
        directory: '/plugins/acme.py'`` after ``--reasoning-parser-plugin
        /plugins/acme.py``), and that option, when ``line``, the failure the process
        died of, quotes no path of its own and its kind keeps no fix of its own: the
        server logged the file's failure and went on, and died of what the file would
        have given (``Reasoning parser 'acme' not found``)."""
        given = self.options.command_options
        if not given or (kind != "bad-args" and kept(kind, family_of(kind))):
            return None
        text = strip_prefix(line)
        if path_in_line(text, given) is not None:
            return None
        lines, at = self._tail_at(line)
        if at is None:
            return None
        framed: tuple[int, str] | None = None  # a frame in a file an option names
        for n, earlier in enumerate(lines[:at]):
            if 'File "' in earlier:
                said = strip_prefix(earlier)
                named = path_in_line(said, given) if _FRAME_FILE.search(said) else None
                if named is not None:
                    framed = (n, named)
                continue
            if framed is not None and n - framed[0] <= _FRAME_TO_EXCEPTION:
                if exception_text(earlier) is not None:
                    # the code of the option's own file failed (a plugin's SyntaxError)
                    return earlier, framed[1]
            elif framed is not None:
                framed = None
            if "[Errno " not in earlier:
                continue  # most lines: no exception with an errno
            said = strip_prefix(earlier)
            if _FILE_FAILED.search(said) is None:
                continue
            named = path_in_line(said, given)
            if named is not None:
                return earlier, named
        return None

    def _given_port(self) -> int | None:
        """The port the server was told to listen on: the gate's, else its command's."""
        given = self.options.port or self.options.command_port
        if given is None:
            given = next(
                (int(v) for n, v in self.options.command_options if n == "port" and v.isdigit()),
                None,
            )
        return given

    def _listening_elsewhere(self) -> str | None:
        """The server's own line that it listens on a port other than the one its
        command gave (``listening on http://127.0.0.1:8080`` after ``--port 35525``),
        among the last lines read; None where it says none or the same."""
        given = self._given_port()
        if given is None:
            return None
        for text in reversed(self.watcher.tail.last()[-_LISTEN_LINES:]):
            found = _LISTENING.search(text)
            if found is not None and int(found.group(1)) != given:
                return f"the server says it listens on port {found.group(1)}, not {given}"
        return None

    def _on_probe(self) -> None:
        try:
            data = os.read(self._wake_r, 4096)
        except BlockingIOError:
            return
        if b"f" in data and self._follower is not None:
            self._read_file()
        if b"a" in data:
            self._note_refusal()
        if b"p" in data and self._prober is not None and self._prober.ok_at is not None:
            probe = self._prober.url
            if self._ready_line_at is not None:
                what = f"ready line seen and GET {probe} answered"
                if self._prober.route_absent:
                    what += " 404 (this build has no such route)"
                self._decide(
                    Status.READY, DetectedBy.LOG, what, matched_line=self.watcher.ready_line
                )
            else:
                self._decide(
                    Status.READY, DetectedBy.PROBE, f"GET {probe} answered", matched_line=None
                )

    def _on_exit(self) -> None:
        # the process is gone: read what it left in the pipe or file before deciding
        if self.sources.pipe_fd is not None:
            self._read_pipe(until=time.monotonic() + _EXIT_DRAIN_S)
        if self._follower is not None:
            self._read_file(to_end=True)
        if self._verdict is None:
            self._hits(self.watcher.finish(self._rel()))
        if self.sources.is_parent and self.sources.pid is not None:
            try:
                _, status = os.waitpid(self.sources.pid, 0)
                self.exit_code = exit_status(status)
            except ChildProcessError:
                pass
        if self._verdict is not None:
            return
        if self._held:
            # gone before any recovery line: the held hit decides
            self._crash_signature(*self._held[0])
            return
        if self._wrapper is not None:
            self._settle_wrapper()
            return
        code = self.exit_code
        last = self.watcher.last_error
        kind: str
        number = None  # the signal that ended it, if one did
        if code is not None and code < 0:
            number = -code
        elif code in _SHELL_SIGNALS:
            number = code - 128  # a shell (or docker) reports a child's signal N as 128 + N
        if number is not None:
            sig = _signal_name(number)
            if number == signal.SIGSEGV:
                kind, hint = Kind.SEGFAULT, "a native extension crashed: check that torch, CUDA "
                hint += "and the engine were built for each other"
            elif number == signal.SIGKILL:
                kind = Kind.KILLED
                hint = "SIGKILL without a message is often the OOM killer: check dmesg and memory"
            elif number == signal.SIGBUS:
                # a page of a memory-mapped file that nothing backs: the file was cut
                # short under the mapping, or its tmpfs (/dev/shm) is full
                kind = "disk"
                hint = "SIGBUS is a mapped file that cannot be backed: /dev/shm or the "
                hint += "filesystem of a mapped file (the model, a cache, "
                hint += "PROMETHEUS_MULTIPROC_DIR) is full, or the file shrank; in a "
                hint += "container raise --shm-size"
            elif number == signal.SIGILL:
                kind = Kind.EXIT
                hint = "the program ran a CPU instruction this machine lacks (AVX2, "
                hint += "AVX-512, ...): use a build made for this CPU"
            elif number == signal.SIGABRT:
                # abort() is called from inside: a failed assertion, an uncaught C++
                # exception (std::terminate), a heap check ("free(): invalid pointer")
                kind = Kind.ABORT
                hint = "the server aborted itself: the cause is in the lines just above"
            else:
                kind, hint = Kind.EXIT, "something sent the server a signal: check who stops it"
            if number == signal.SIGABRT:
                reason = f"the server aborted itself ({sig})"
            elif number == signal.SIGILL:
                reason = f"the server died of an illegal instruction ({sig})"
            else:
                reason = f"the server was killed by {sig}"
            if code is not None and code > 0:
                reason += f" (exit code {code}, as a shell reports it)"
        elif code in _SHELL_CANNOT_RUN:
            kind, what, hint = _SHELL_CANNOT_RUN[code]
            reason = f"the server exited with code {code} ({what})"
        else:
            kind = Kind.EXIT
            if code == 0:
                reason = "the server exited with code 0 before it was ready"
                hint = "the command returned instead of serving: check it starts a server"
            else:
                shown = "an unknown code" if code is None else f"code {code}"
                reason = f"the server exited with {shown}"
                hint = "the cause is in the log tail"
        if last:
            reason += f" after {last[:200]}"
        cause = self._phased(self.watcher.cause())
        if cause is not None and cause.kind is not None:
            # the cause line names the failure: its kind, not how the process ended
            kind, hint = cause.kind, cause.hint or hint
        elif (
            cause is not None
            and cause.line
            and kind == Kind.EXIT
            and number is None
            and not says_signalled(cause.line)
        ):
            # an error line no rule names, after a plain exit: the kind its words share
            # with the known crashes' cause lines (gate/learned.py), said to be judged so
            likely = likely_kind(cause.line)
            if likely is not None:
                kind = likely.kind
                hint = self.watcher.rules.hints.get(kind, KIND_HINTS.get(kind, hint))
                reason += f"; judged {kind} by its words ({', '.join(likely.words[:3])})"
        self._decide(
            Status.CRASH,
            DetectedBy.EXIT,
            reason,
            kind=kind,
            hint=hint,
            matched_line=self.watcher.cause_line,
        )

    def _on_child_exit(self, pid: int, label: str) -> None:
        assert self._children is not None
        child = self._children.known.get(pid)
        if child is not None:
            self._sel.unregister(child.pidfd)
            self._children.forget(pid)
        if self._child_gone is None:
            # children often die first when the main process exits: give it a moment
            self._child_gone = (pid, label, time.monotonic() + _CHILD_GRACE_S)

    def _settle_child(self) -> None:
        assert self._child_gone is not None
        pid, label, _ = self._child_gone
        kind: str = Kind.CHILD_EXIT
        hint = (
            "the engine lost a worker and will not serve: the cause is in the log tail "
            "(exit -9 without a message is usually the OOM killer)"
        )
        cause = self.watcher.cause()
        if cause is not None and cause.kind is not None:
            kind, hint = cause.kind, cause.hint or hint
        self._decide(
            Status.CRASH,
            DetectedBy.CHILD_EXIT,
            f"essential child {label} (pid {pid}) exited while the server kept running",
            kind=kind,
            hint=hint,
            matched_line=self.watcher.cause_line,
        )

    def _settle_wrapper(self) -> None:
        assert self._wrapper is not None
        if self._held:
            # a wrapper confirms a held failure: that hit is the specific cause
            self._crash_signature(*self._held[0])
            return
        signature, line, _ = self._wrapper
        reason = signature.title
        kind, hint = signature.kind, signature.hint
        # the wrapper says that something failed; quote the line that says what, and
        # take its kind when its words name one
        cause = self.watcher.cause()
        if cause is not None and self._whole_value(line, cause.line):
            cause = None
        if cause is not None and cause.line != line.strip():
            reason += f": {cause.text[:200]}"
            line = cause.line
        if cause is not None and cause.kind is not None:
            kind, hint = cause.kind, cause.hint or hint
        self._decide(
            Status.CRASH,
            DetectedBy.SIGNATURE,
            reason,
            kind=kind,
            hint=hint,
            matched_line=line,
        )

    def _whole_value(self, line: str, detail: str) -> bool:
        """Whether ``detail``, pydantic's error of one value ("Input should be an object
        [type=dataclass_type, ...]"), stands right under ``line``, the count of errors:
        with no field named between, it is the whole value's, and ``line`` (which names
        the option) says more; so does ``line`` when it counts several errors, or when
        the one error is a key the option does not take ("Unexpected keyword argument"
        under ``level``). Under a field's name (``kv_role``), the one error about a value
        says what the field must be."""
        if _PYDANTIC_ERROR.search(detail) is None:
            return False
        if _SEVERAL_ERRORS.search(line) is not None:
            return True  # several fields wrong: the count's line, which names the option
        if _UNKNOWN_KEY.search(detail) is not None:
            return True  # a key the option does not take: no value to say, the option's line
        lines = [text.strip() for text in self.watcher.tail.last() if text.strip()]
        at = next((n for n in range(len(lines) - 1, 0, -1) if lines[n] == detail), None)
        return at is not None and lines[at - 1] == line.strip()

    def _snapshot(self, now: float) -> None:
        assert self._children is not None
        early = now - self.started_mono < _EARLY_WINDOW_S
        self._next_snapshot = now + (_SNAPSHOT_EARLY_S if early else _SNAPSHOT_EVERY_S)
        for child in self._children.scan():
            self._sel.register(child.pidfd, selectors.EVENT_READ, ("child", child.pid, child.label))

    def _timers(self, now: float) -> None:
        if self._follower is not None:
            self._read_file()
            if self._verdict is not None:
                return
        if self._children is not None and now >= self._next_snapshot:
            self._snapshot(now)
        if self._peek_at is not None and now >= self._peek_at:
            self._peek_at = None
            self._hits(self.watcher.peek(self._rel(now)))
            if self._verdict is not None:
                return
        if self._held_until is not None and now >= self._held_until:
            self._crash_signature(*self._held[0])  # no recovery line came in time
            return
        if self._wrapper is not None and now >= self._wrapper[2]:
            self._settle_wrapper()
            return
        if self._child_gone is not None and now >= self._child_gone[2]:
            self._settle_child()
            return
        if self._ready_hold is not None and now >= self._ready_hold[1]:
            line, self._ready_hold = self._ready_hold[0], None
            self._ready_by_line(line)  # nothing contradicted it
            if self._verdict is not None:
                return
        if now >= self.started_mono + self.options.timeout_s:
            self._deadline(now)
        elif self.options.stall_s is not None and now >= self._stall_due():
            self._quiet(now, self.options.stall_s)

    # -- stuck or slow ----------------------------------------------------------------

    def _stall_due(self) -> float:
        """When the silence is next looked at: the stall limit, or a slow server's recheck."""
        assert self.options.stall_s is not None
        due = self.last_progress + self.options.stall_s
        return due if self._recheck_at is None else max(due, self._recheck_at)

    def _telemetry(self) -> Sequence[Snapshot] | None:
        """The snapshots so far; None without telemetry (or none sampled yet).

        Without a process (a ``wait`` on a log or a URL alone) there is no tree to look
        at: a host's quiet network alone does not make a server stuck.
        """
        if self.sources.snapshots is None or self.sources.pid is None:
            return None
        try:
            snaps = self.sources.snapshots()
        except Exception:  # the sampler's trouble must never decide for the gate
            return None
        return snaps or None

    def _quiet(self, now: float, stall_s: float) -> None:
        """The log has been silent for ``stall_s``: slow (wait on) or stuck (TIMEOUT)."""
        where = self.watcher.phases.describe()
        silence = now - self.last_progress
        snaps = self._telemetry()
        if snaps is None:
            self._timeout_stall(now, stall_s, where)
            return
        act = activity(snaps, stall_s)
        first = self._rel(now) - snaps[0].t_s
        if act.busy:
            self._slow(now, silence, where, act, stall_s)
        elif first < _COVERED * stall_s:
            # sampled for less than the stall period: idle so far, but not for long enough
            self._recheck_at = now + (stall_s - first)
        else:
            self._stuck(silence, where, act)

    def _slow(self, now: float, silence: float, where: str, act: Activity, stall_s: float) -> None:
        self._recheck_at = now + min(_RECHECK_MAX_S, max(_RECHECK_MIN_S, stall_s / 10.0))
        self._diagnosis = Diagnosis(state="slow", silent_s=silence, phase=where, activity=act)
        spell = self.last_progress
        # say so when a quiet spell turns slow, when what it is bound by changes, and
        # again after every further stall period of silence
        if (
            self._noted is None
            or self._noted != (spell, act.bound)
            or silence - self._noted_silence >= stall_s
        ):
            self._noted = (spell, act.bound)
            self._noted_silence = silence
            self._note(
                f"no output for {silence:.0f} s {where}; slow, still working: {act.evidence}"
            )

    def _stuck(self, silence: float, where: str, act: Activity) -> None:
        stacks = self._stacks()
        self._diagnosis = Diagnosis(
            state="stuck", silent_s=silence, phase=where, activity=act, stacks=stacks
        )
        reason = f"stuck {where}: no output for {silence:.1f}s and {act.evidence}"
        self._decide(
            Status.TIMEOUT,
            DetectedBy.STALL,
            reason + _stacks_note(stacks) + self._probe_note() + self._log_note(),
            kind=Kind.STUCK,
            hint=self._timeout_hint(
                "a hang: the stacks show where it waits (--json: diagnosis.stacks; "
                "servegate dump NAME while it runs); raise --stall if this phase is known to "
                "be quiet and idle"
            ),
        )

    def _timeout_stall(self, now: float, stall_s: float, where: str) -> None:
        """No telemetry: a silent log past --stall is a TIMEOUT (kind stall)."""
        stacks = self._stacks()
        self._diagnosis = Diagnosis(
            state=None, silent_s=now - self.last_progress, phase=where, stacks=stacks
        )
        reason = f"no progress for {stall_s:.1f}s {where}"
        self._decide(
            Status.TIMEOUT,
            DetectedBy.STALL,
            reason + _stacks_note(stacks) + self._probe_note() + self._log_note(),
            kind=Kind.STALL,
            hint=self._timeout_hint(
                "a hang, or a silent phase such as a cold JIT compile: raise "
                "--stall if this phase is known to be quiet"
            ),
        )

    def _deadline(self, now: float) -> None:
        where = self.watcher.phases.describe()
        reason = f"not ready within --timeout {self.options.timeout_s:.1f}s ({where})"
        hint = "raise --timeout if this server is only slow to start"
        if self._elsewhere is None:
            self._elsewhere = self._listening_elsewhere()  # a probe that never answered
        if self._elsewhere is not None:
            reason += f"; {self._elsewhere}"
            hint = (
                f"{self._elsewhere}: a variable or a config file overrides --port "
                "(AIP_HTTP_PORT, PORT, LLAMA_ARG_PORT); unset it or probe that port"
            )
        elif self._ready_line_at is not None and self._prober is not None:
            # the server said it was ready and its port never answered: it listens
            # where the gate does not reach
            reason += f"; its ready line was seen, and nothing answered {self.resolved.url}"
            hint = (
                "the server says it is ready where the gate cannot reach it: a network "
                "namespace of its own (unshare -n, a container's port not published), a "
                "firewall, or a --host that binds another address"
            )
        snaps = self._telemetry()
        act = None
        if snaps is not None:
            act = activity(snaps, min(_DEADLINE_WINDOW_S, self.options.stall_s or 1e9))
            if act.busy:
                reason += f"; still working: {act.evidence}"
                hint = "it was still working: raise --timeout if this start is only slow"
        stacks = self._stacks()
        self._diagnosis = Diagnosis(
            state="slow" if act is not None and act.busy else None,
            silent_s=now - self.last_progress,
            phase=where,
            activity=act,
            stacks=stacks,
        )
        self._decide(
            Status.TIMEOUT,
            DetectedBy.DEADLINE,
            reason + _stacks_note(stacks) + self._probe_note() + self._log_note(),
            kind=Kind.DEADLINE,
            hint=self._timeout_hint(hint),
        )

    def _stacks(self) -> Stacks | None:
        """The stacks of the tree, when there is one and dumps are on."""
        if self.sources.pid is None or not self.sources.dump_stacks:
            return None
        from servegate.diag.dump import dump_tree

        try:
            return dump_tree(self.sources.pid, timeout_s=_DUMP_TIMEOUT_S)
        except Exception:  # a dump is evidence, never a reason to fail the verdict
            return None

    def _note(self, text: str) -> None:
        if self.sources.on_note is not None:
            try:
                self.sources.on_note(text)
            except Exception:  # a closed terminal must not stop the gate
                self.sources.on_note = None

    def _probe_note(self) -> str:
        prober = self._prober
        if prober is None:
            return ""
        if self._ready_line_at is not None:
            return f"; a ready line was seen but the probe failed ({prober.last_error})"
        if prober.refused_status is not None:
            return f"; GET {prober.url} answered {prober.refused_status}, never a ready status"
        return ""

    def _log_note(self) -> str:
        """``; the log PATH never appeared: check the --log path`` (a followed log that was
        never there), else empty."""
        if self._follower is None or self._follower.found:
            return ""
        return f"; the log {self._follower.path} never appeared: check the --log path"

    def _refusal_fix(self) -> str | None:
        """What to pass when the probe's URL answers with a 4xx that waiting will not
        change (a 404 at ``/``: the server is up, but that is no readiness route)."""
        prober = self._prober
        if prober is None or prober.refused_status is None:
            return None
        parts = urlsplit(prober.url)
        if parts.path.rstrip("/") == "/health":
            return "pass --health-url with a route that answers 2xx once it is ready"
        return f"pass --health-url {parts.scheme}://{parts.netloc}/health"

    def _note_refusal(self) -> None:
        """Say once, as soon as it is known, that the probe's URL answers but never ready."""
        fix = self._refusal_fix()
        if fix is None or self._refusal_noted:
            return
        self._refusal_noted = True
        assert self._prober is not None
        self._note(
            f"GET {self._prober.url} answered {self._prober.refused_status}: the server is "
            f"up, but this URL will not say it is ready; {fix}"
        )

    def _timeout_hint(self, hint: str) -> str:
        """A TIMEOUT's hint, led by the likelier cause: a probe URL that answers but never
        ready (its fix replaces the hint), or a --port the command contradicts while
        nothing answers there (a container may map it, so the hint stays)."""
        fix = self._refusal_fix()
        if fix is not None:
            self._note_refusal()
            return f"the server answers, but not as ready at this URL: {fix}"
        said = self.options.port_note()
        if said is not None and (self._prober is None or self._prober.last_status is None):
            return (
                f"{said}: pass --port {self.options.command_port} unless something maps "
                f"{self.options.port} to it; else {hint}"
            )
        return hint

    def _phased(self, cause: Cause | None) -> Cause | None:
        """``cause`` with the kind of the startup phase the server had reached, where
        nothing else named one (gate/cause.py's ``phase_kind``): the last evidence."""
        if cause is None or cause.kind is not None:
            return cause
        current = self.watcher.phases.current()  # a closed phase: it came after it
        name = None if current is None else current.name
        found = phase_kind(cause, name, self.watcher.tail.last())
        if found is None:
            return cause
        kind, title = found
        hint = self.watcher.rules.hints.get(kind, KIND_HINTS.get(kind))
        return replace(cause, kind=kind, title=title, hint=hint)

    def _failure_before(self, line: str) -> Cause | None:
        """The cause chosen over the tail up to the first copy of ``line`` (a process's
        generic end: the lines read after it in the same chunk came later), when it is a
        line of its own that names what failed (a family other than the process's)."""
        lines = self.watcher.tail.last()
        hit = line.strip()
        cut = next((n for n, text in enumerate(lines) if text.strip() == hit), len(lines) - 1)
        rules = self.watcher.rules
        found = select_cause(
            lines[: cut + 1],
            rules.fatal,
            progress=rules.progress_marks,
            hints=rules.hints,
            literals=rules.literals,
        )
        if found is None or found.line == hit or family_of(found.kind) in (None, "process"):
            return None
        return found

    def _crash_signature(self, signature: Signature, line: str) -> None:
        reason, kind, hint = signature.title, signature.kind, signature.hint
        root = self.watcher.explain(signature, line)
        if root is None:
            # an uncaught exception's message names what failed (what():  ...: ErrorOutOf
            # DeviceMemory): its words give the kind, the line stays
            said = message_cause(line, signature, self.watcher.rules.hints)
            if said is not None:
                reason, kind, hint = f"{reason}: {said.title}", said.kind or kind, said.hint or hint
        if root is None:
            # the detail the failure line introduced below it, where it names the root of
            # the chain (NCCL's "Last error:" then "Failed to CUDA calloc ...": memory)
            found = self.watcher.cause()
            if found is not None and found.detail and kind_order(found.kind) < kind_order(kind):
                root = found
            elif signature.kind in GENERIC_ENDS:
                # a process's generic end (``Fatal Python error: Aborted``) after a line
                # that says what failed (an accelerator's out-of-memory) is its consequence
                root = self._failure_before(line)
        if root is not None:
            # an earlier line says why (SGLang: the model's module failed to import)
            reason = f"{reason}: {root.text[:200]}"
            kind, hint, line = root.kind or kind, root.hint or hint, root.line
        self._decide(
            Status.CRASH,
            DetectedBy.SIGNATURE,
            reason,
            kind=kind,
            hint=hint,
            matched_line=line,
        )

    # -- the verdict ------------------------------------------------------------------

    def _decide(
        self,
        status: Status,
        detected_by: DetectedBy,
        reason: str,
        *,
        kind: str | None = None,
        hint: str | None = None,
        matched_line: str | None = None,
    ) -> None:
        if self._verdict is not None:
            return
        if status == Status.CRASH and matched_line:
            device = self._device_library_missing(kind, matched_line)
            earlier = None if device is not None else self._option_file_failed(kind, matched_line)
            first = (
                self._environment_first(kind)
                or self._denied_first(kind, matched_line)
                or self._host_first(matched_line)
                or self._warned_first(kind, matched_line)
                or self._port_first(matched_line)
            )
            if first is not None and device is None and earlier is None:
                matched_line, kind, hint = first
            elif device is not None:
                line, named = device
                kind, matched_line = "bad-args", line
                hint = (
                    f"the command's {named} asks for a device this machine's software does "
                    "not support (its library or tool is not installed): give the device "
                    "this machine has (--device cpu or cuda) or a backend made for it, or "
                    "install that device's stack"
                )
            elif earlier is not None:
                line, named = earlier
                reason = f"{reason} (first: {strip_prefix(line)[:200]})"
                kind, matched_line = "bad-args", line
                hint = (
                    f"the file that {named} names failed first: check that path and what "
                    "the file holds"
                )
            else:
                flagged, hint = self._flag_kind(kind, hint, matched_line)
                if flagged != kind:  # the words' guess is not what was decided
                    reason = _JUDGED.sub("", reason)
                kind = flagged
            matched_line = self._assertion_source(matched_line)
        if self._children is not None:
            self.essential_pids = tuple(self._children.known)
        now_mono = time.monotonic()
        elapsed = now_mono - self.started_mono
        ready = status == Status.READY
        # open phases end with the verdict, or with the ready line's own stamp in a backlog
        ready_s = elapsed if self._ready_line_s is None else min(elapsed, self._ready_line_s)
        self._verdict = Verdict(
            status=status,
            elapsed_s=elapsed,
            started_at=iso(self.started_wall),
            decided_at=iso(self.started_wall + elapsed),
            detected_by=detected_by,
            reason=reason,
            kind=kind,
            hint=hint,
            matched_line=matched_line.strip() if matched_line else None,
            exit_code=self.exit_code,
            pid=self.sources.pid,
            engine=self.resolved.profile.name,
            url=self.resolved.url,
            log_path=self.sources.log_path,
            phases=self.watcher.phases.spans(round(ready_s, 3) if ready else None),
            tail=() if ready else self.watcher.tail.last(),
            diagnosis=self._diagnosis,
            already_up=ready and self._already_up(),
        )
        if self.sampler is not None:  # the recording ends with the verdict
            self.sampler.stop()
            snaps = tuple(self.sampler.snapshots())
            self._verdict = replace(
                self._verdict,
                telemetry=self.sampler.summary(),
                snapshots=snaps,
                phases=_bound_phases(self._verdict.phases, snaps, elapsed),
            )

    def _flag_kind(
        self, kind: str | None, hint: str | None, line: str
    ) -> tuple[str | None, str | None]:
        """bad-args, with a hint naming the option, when the CRASH's line names an option
        the server's command set or quotes a path it gave one, or the command overrides
        the model's configuration and the model failed to load or start, and the line's
        words named bad-args or no family with a fix of its own (gate/flags.py);
        ``(kind, hint)`` unchanged otherwise."""
        if kind in (None, "exit", "model-load") and self._option_file_missing(line):
            return "bad-args", (
                "a file or folder an option names is not there, or is a folder where a "
                "file is wanted (the TLS certificate or key, the unix socket's folder): "
                "check the paths of --ssl-certfile, --ssl-keyfile and --uds"
            )
        given = self.options.command_options
        text = strip_prefix(line)
        for told, words, fix in _NARROW_HINTS:
            if kind == told and words.search(text):
                return kind, fix
        named = option_named_module(_FRAME_PATH.findall("\n".join(self.watcher.tail.last())), given)
        if named is not None and _CONNECT_FAILED.search(text) and kind != "bad-args":
            # a connection the code that serves an option made, refused (vLLM's MCP
            # client after --tool-server 127.0.0.1:55803 with no server there): the
            # address the option gives, not the engine's own peers
            return "bad-args", (
                f"nothing answered at what the command's {named} names: start that "
                "server first, or give its right address"
            )
        method = quantization_given(given)
        if (
            method is not None
            and (kind in (None, "exit", "bad-args") or family_of(kind) == "model")
            and _squashed(method.split(" ", 1)[-1]) in _squashed(text)
        ):
            # a quantization the command named, failing in its own class on weights saved
            # without it ("CompressedTensorsConfig.__init__() missing 5 required positional
            # arguments" after --quantization compressed-tensors)
            return "bad-args", (
                f"the command's {method} is not how the model's weights were saved: give "
                "the method its config.json names, or leave --quantization out"
            )
        named = _class_given(self._traceback_above(line), given)
        if named is not None and (kind in (None, "exit") or family_of(kind) == "engine"):
            # the code that failed is the class an option of the command named (a GPU
            # worker class on a CPU build: "Unsupported device type: cpu")
            return "bad-args", (
                f"the failing code is the class that the command's {named} names: give a "
                "class for this platform, or leave the option out"
            )
        if (
            family_of(kind) == "memory"
            and _BARE_ARITHMETIC.search(text)
            and zero_given(given, self._code_above(line)) is None
            and not self._says_family(text, kind)
        ):
            # a count of zero that no option gave, while memory is sized: a value of the
            # model's config (max_position_embeddings: 0)
            return "model-load", (
                "a count is zero where the engine sizes its memory, and no option set it: "
                "check the model's config.json (max_position_embeddings, heads, layers)"
            )
        device = next(
            (
                f"-{n} {v}" if len(n) == 1 else f"--{n.replace('_', '-')} {v}"
                for n, v in given
                if n in ("m", "model") and v.startswith("/dev/") and not v.startswith("/dev/shm/")
            ),
            None,
        )
        if device is not None and kind in (None, "exit", "model-load"):
            # a device given for the model's file (/dev/null as a placeholder)
            return "bad-args", (
                f"the command's {device} is a device, not a model file: give the model's file"
            )
        folder = next(
            (
                f"-{n} {v}" if len(n) == 1 else f"--{n.replace('_', '-')} {v}"
                for n, v in given
                if n in ("m", "model") and v.lower().endswith(".gguf") and os.path.isdir(v)
            ),
            None,
        )
        if folder is not None and kind in (None, "exit", "model-load") and _NO_MAGIC.search(text):
            # a GGUF's path that is a folder on this machine (a bind mount of a file
            # that was not there, which Docker creates as an empty folder)
            return "bad-args", (
                f"the command's {folder} is a folder on this machine, not a file (a "
                "container's bind mount of a missing file makes one): give the GGUF file"
            )
        missing = _ADAPTER_WEIGHTS_MISSING.search(text)
        if missing is not None and kind in (None, "exit", "model-load", "bad-args"):
            folder = os.path.dirname(missing.group(1))
            if any(value.split("=", 1)[-1].rstrip("/") == folder for _, value in given):
                # the adapter's folder the command named is there (its config was read),
                # its weights file is not, or not for this user: the adapter's files
                return "model-load", _ADAPTER_FILES_FIX
        purpose = _NOT_SUPPORTED_FOR.search(text) if kind == "unsupported-model" else None
        provided = _PROVIDED_FOR.search(text) if kind == "unsupported-model" else None
        named = (purpose and option_by_word(purpose.group(1), given, reads_args=False)) or (
            provided and option_by_word(provided.group(1), given, reads_args=False)
        )
        if named:
            # a model that is fine in itself, refused for a mode the command asked for
            # ("Model type LlamaForCausalLM is not supported for encoder disaggregation."
            # after --encoder-only; "Default modality-specific LoRA(s) were provided for
            # a non multimodal model" after --default-mm-loras)
            return "bad-args", (
                f"the model does not support what the command's {named} asks for: leave "
                "it out, or serve a model that supports it"
            )
        missing = (
            _CONFIG_LACKS.search(text)
            if kind in (None, "exit") or family_of(kind) in _OVERRIDDEN
            else None
        )
        named = missing and option_by_word(missing.group(1), given, reads_args=False)
        if named and missing:
            # the model's config lacks what an option asks of it (SGLang's
            # --enable-return-routed-experts on a dense model: "'LlamaConfig' object has
            # no attribute 'num_experts_per_tok'")
            return "bad-args", (
                f"the command's {named} asks the model for {missing.group(1)}, which its "
                "config does not have: leave the option out for this model"
            )
        if _ONLY_LISTED.search(text) and kind not in ("oom", "port-in-use", "permission"):
            # a check listing the only values it takes ("Currently only ['ascend', 'fa3',
            # ...] attention backends are supported for deterministic inference"): a
            # choice of the command's, whichever option made it
            return "bad-args", (
                "the line lists the only choices supported here: give one of them (an "
                "option of the command, or one it implies, chose another)"
            )
        if purpose and _MODE_REFUSED.search(text) and not _DEVICE_WORDS.search(purpose.group(1)):
            # the model named and refused for a mode, not for this machine: the mode is
            # the command's even where no option spells its words (--language-only for
            # "encoder disaggregation")
            return "bad-args", (
                f"the model does not support {purpose.group(1).strip()}, which an option of "
                "the command asks for: leave that option out, or serve a model that supports it"
            )
        if kind in (None, "exit", "bad-args") and (
            (_DATA_ERROR.match(text) and _ADAPTER_CONFIG_FRAME.search(self._traceback_above(line)))
            or (
                _SHAPE_ERROR.search(text) and _ADAPTER_SET_FRAME.search(self._traceback_above(line))
            )
        ):
            # a value of the adapter's config that is not a number where LoRA computes
            # with it (vLLM's PEFTHelper: "unsupported operand type(s) for /: 'NoneType'
            # and 'int'" for "lora_alpha": null), or its tensors of another shape than
            # its config says where a layer takes them (lora_A and lora_B swapped: "The
            # size of tensor a (16) must match the size of tensor b (128)" in set_lora)
            return "model-load", _ADAPTER_FILES_FIX
        if kind != "bad-args" and not self._says_family(text, kind):
            named = _compiler_setting(given, self._traceback_above(line))
            if named is not None:
                # a variable that changes how torch compiles, set by the command, and
                # the compiler failing inside (TORCHINDUCTOR_FREEZING=1 on a model
                # vLLM compiles: "AssertionError: expected OutputCode, got <class
                # 'function'>" while the memory is profiled)
                return "bad-args", (
                    f"the command's {named} changes how torch compiles the model, and the "
                    "compiler failed: unset it (or run with --enforce-eager)"
                )
        if kind in (None, "exit", "install", "bad-args") and _WRONG_SHAPE.match(text):
            frames = _FRAME_PATH.findall(self._traceback_above(line))
            if frames and _CONFIG_READER.search(frames[-1]):
                # the model's config.json read into another shape than an object (a
                # list around it, a string for a section): its files, not the packages
                return "model-load", (
                    "the model's config.json does not hold what its keys should (a JSON "
                    "object at the top, objects for its sections): check the file"
                )
        if kind in (None, "exit", "install", "model-load", "bad-args"):
            shadow = _shadowing_file(self._traceback_above(line))
            if shadow is not None:
                # a file of the working folder (or PYTHONPATH) named like a package the
                # engine imports, imported in its place
                path, module = shadow
                return "install", (
                    f"{path} is imported in place of the package {module!r} (a file of that "
                    "name in the working folder or on PYTHONPATH): rename or move it"
                )
        if kind in (None, "exit", "model-load"):
            named = path_not_there(text, given)
            if named is not None:
                # a file the command named is not there (a typo, an unexpanded ~, a URL,
                # a path of another machine or container): its value, not the files
                said = _said(named)
                return "bad-args", (
                    f"{said} is not there: check the path (a typo, an unexpanded ~, a "
                    "URL or file:// where a file is wanted, a path of another machine)"
                )
        if kind in (None, "exit", "model-load", "bad-args"):
            named = uri_for_path(text, given)
            if named is not None:
                return "bad-args", (f"the command's {named} is a file:// URI: give the plain path")
            named = file_where_folder(text, given)
            if named is not None:
                # the code looked inside a path the command gave, and it is a file (an
                # adapter's weights file given for the adapter's folder)
                return "bad-args", (
                    f"the command's {named} names a file where a folder is wanted: give "
                    "the folder that holds it"
                )
        forced = load_format_forced(given)
        if (
            forced is not None
            and _NO_CONNECTOR.search(text)
            and (kind in (None, "exit", "bad-args") or family_of(kind) in _OVERRIDDEN)
        ):
            # a format that loads from a remote store (--load-format remote) given a
            # local folder: no connector serves a plain path
            return "bad-args", (
                f"the command's {forced} loads from a remote store, and the model's path "
                "names no connector (a URL such as redis:// or s3://): give such a URL, or "
                "leave --load-format out for a local folder"
            )
        if kind == "download":
            named = uri_for_path(text, given, schemes=("http", "https"))
            if named is not None and not self._says_family(_URI.sub("", text), kind):
                # a web address given where a path or a Hub id is wanted, refused as a
                # value (SGLang's "Invalid connector type: https://huggingface.co/org/m"):
                # only the address's own words read as a download
                return "bad-args", (
                    f"the command's {named} is a web address: give the Hub id (org/name) "
                    "or a local folder"
                )
        alone = tls_given(given)
        if alone is not None and (text.startswith("assert ") or _BARE_ASSERTION.search(text)):
            code = self._assertion_source(line) + "\n" + self._code_above(line)
            if _TLS_CHECK.search(code):
                # uvicorn's check that a key comes with its certificate: one TLS setting
                # given (a variable a base image left set) without its pair
                return "bad-args", (
                    f"the command sets {alone} without its pair: give both the certificate "
                    "and the key (--ssl-certfile and --ssl-keyfile), or neither"
                )
        normal = normalise(line)
        if normal.level is None and _WARNING_RAISED.match(normal.text):
            # a warning that ends the process as an exception: warnings are errors here,
            # whatever the warning's words (a deprecation in torch's own import)
            setting = warnings_as_errors(given) or "a warnings filter set to 'error'"
            return "bad-args", (
                f"{setting} turns the engine's warnings into errors: unset it, or "
                "ignore that warning's category"
            )
        if kind in (None, "exit") or family_of(kind) in _OVERRIDDEN:
            named = folder_missing(text, given, model_read=self._reads_tokenizer(line))
            if named is not None:
                # a path the Hub client took for a repository's name: no folder is there
                said = _said(named)
                return "bad-args", f"{said} is no folder here (and no Hub id): check the path"
        if not given:
            return kind, hint
        fix = self.watcher.rules.hints.get("bad-args", KIND_HINTS["bad-args"])
        if kind == "bad-args" and _UNKNOWN_METHOD.search(text) and not quantization_given(given):
            # the method comes from the model's config.json (its quantization_config),
            # not from the command: a checkpoint format this engine version lacks
            return "unsupported-model", (
                "the model's config.json names a quantization method this engine version "
                "does not implement: use a checkpoint in a format it supports, or an "
                "engine version that reads this one"
            )
        forced = load_format_forced(given)
        # the folder holds weights in another format than the one the command forced;
        # or a format or quantization the command forced on weights saved in another:
        # the loader finds tensors it has no place for, or a class without that path
        # (SGLang's "--quantization gguf" on safetensors: "No module or parameter named
        # 'lm_head.weight'"; "--load-format bitsandbytes" on a model saved unquantized:
        # "does not support BitsAndBytes quantization yet")
        for words, named, fits in (
            (_NO_WEIGHTS, forced, "finds no weights of that format in the model's folder"),
            (
                _WEIGHTS_UNFIT,
                forced or quantization_given(given),
                "does not fit the weights the model's folder holds",
            ),
        ):
            if (
                named is not None
                and words.search(text)
                and (kind in (None, "exit") or family_of(kind) in _OVERRIDDEN)
            ):
                return "bad-args", (
                    f"the command's {named} {fits}: give the format and quantization its "
                    "files were saved in, or leave the option out"
                )
        named = adapter_as_model(text, given)
        if named is not None and (kind in (None, "exit") or family_of(kind) in _OVERRIDDEN):
            # a LoRA adapter's folder given as the model: no config.json, no weights of
            # a whole model; the engine refuses it as no model at all
            return "bad-args", (
                f"the command's {named} is a LoRA adapter's folder, not a model's: give "
                "the base model, and the adapter with --lora-modules (vLLM) or "
                "--lora-paths (SGLang)"
            )
        named = model_not_a_model(given)
        if named is not None and (kind in (None, "exit") or family_of(kind) in _OVERRIDDEN):
            return "bad-args", (
                f"the command's {named} is the download's Zone.Identifier note, not the "
                "model: give the file without ':Zone.Identifier'"
            )
        if any(name == "offline" for name, _ in given) and _NO_MODEL_PATH.search(text):
            # offline, a model named by its Hub repository that the cache does not hold:
            # no file to load
            return "download", (
                "the command's --offline finds no copy of the model in the cache: run once "
                "online to fetch it, or give the model's file with -m"
            )
        named = model_shard_given(text, given)
        if named is not None:
            # the command named a split GGUF by another shard than its first
            return "bad-args", (
                f"the command's {named} is not the first shard of a split GGUF: give the "
                "first (...-00001-of-N.gguf); llama.cpp finds the others beside it"
            )
        named = module_misspelt(text, given)
        if named is not None and family_of(kind) == "install":
            # python's -m given a name no package of this environment has, and no
            # engine's: the distribution's name for the import name, a typo
            return "bad-args", (
                f"the command's {named} names no module of this environment: give the "
                "module's import name (llama_cpp.server, vllm.entrypoints.openai.api_server)"
            )
        named = value_in_line(text, given)
        if named is not None and (
            kind in (None, "exit") or family_of(kind) in ("mpi", "distributed")
        ):
            # the value the command gave, quoted back by a check it failed (a CPU list of
            # one range for two ranks: "Given number of CPU id list ['0-1'] doesn't match
            # local world size 2.")
            return "bad-args", f"the line quotes the value of {named}: {fix}"
        frames = _FRAME_PATH.findall(self._traceback_above(line))
        named = option_module(frames[-1], given) if frames else None
        if (
            named is not None
            and _BARE_LOOKUP.match(text)
            and (kind in (None, "exit", "model-load") or family_of(kind) == "engine")
        ):
            # a lookup with no words of its own, failing in the module that does what an
            # option asks ("IndexError: list index out of range" in offloader.py after
            # --offload-group-size 2 --offload-num-in-group 3)
            return "bad-args", (
                f"the failing code is the part that the command's {named} sets up: check "
                "its values against each other and the model (--help says what each takes)"
            )
        named = option_spelt(text, given)
        if named is not None and (
            kind in (None, "exit", "bad-args") or family_of(kind) == "engine"
        ):
            # a check that names the option by its attribute and quotes its value ("NUMA
            # index 3 (derived from the worker's global device id / gpu_id) is out of
            # range for 1 numa nodes" after --base-gpu-id 3)
            return "bad-args", f"the line names {named} and its value: {fix}"
        if _OPENMP_SAID.match(text) and kind in (None, "exit", "abort", "bad-args"):
            named = next((f"{n[1:]}={v}" for n, v in given if _OPENMP_VARIABLE.match(n)), None)
            if named is not None:
                # the OpenMP runtime refusing what its variable asked of it (libgomp's
                # "Thread creation failed: Invalid argument" after GOMP_CPU_AFFINITY
                # names CPUs this machine does not have)
                return "bad-args", (
                    f"the OpenMP runtime failed on what the command's {named} asks of "
                    "it (CPUs this machine lacks, a value it does not read): fix or unset it"
                )
        if _OPTIMIZED_AWAY.search(text):
            named = next((f"{n[1:]}={v}" for n, v in given if n == "$PYTHONOPTIMIZE"), None)
            if named is not None:
                # docstrings stripped (-OO), and a library builds its classes from them
                return "bad-args", (
                    f"the command's {named} strips the docstrings that a library reads at "
                    "import: unset it, or set it to 1"
                )
        if _NOT_JSON.search(text) and (kind in (None, "exit") or family_of(kind) in _OVERRIDDEN):
            named = json_not_given(given)
            if named is not None:
                # an option that takes a JSON object given key=value or a bare word
                return "bad-args", (
                    f"the command's {named} is not JSON: give a JSON object "
                    """('{"key": value}'), quoted for the shell"""
                )
        if exception_text(text) is not None and (
            kind in (None, "exit") or family_of(kind) == "engine"
        ):
            named = zero_named(text, given)
            if named is not None:
                # a count of zero the engine took, failing in the words of what it
                # counts (--max-queued-requests 0: "The request queue is full.")
                return "bad-args", (
                    f"the command sets {named}, and the failure is about what it counts: "
                    "give 1 or more (or leave the option out for its default)"
                )
        refused = cpu_asked(given) and family_of(kind) == "install" and _CALL_REFUSED.search(text)
        unread = _NOT_JSON.search(text) and (
            kind in (None, "exit") or family_of(kind) in _OVERRIDDEN
        )
        if exception_text(text) is not None and (refused or unread):
            code = self._traceback_above(line)
            named = option_by_word(code, given, reads_args=False, files=bool(unread))
            if named is not None:
                # a step named for an option the command set (SGLang's kv_canary under
                # --kv-canary on the CPU, whose torch lacks the call; the checksum
                # verifier under --model-checksum given a file that is no JSON)
                return "bad-args", f"the failing step is that of {named} of the command: {fix}"
        if forced is None and _NO_WEIGHTS.search(text) and family_of(kind) == "model":
            # a folder the command named is there, without its weights (a LoRA adapter
            # copied without its safetensors): its files, not the command
            return kind, hint
        if _BARE_NOT_IMPLEMENTED.search(text) and cpu_asked(given):
            code = self._traceback_above(line)
            if _PLATFORM_CODE.search(code):
                # the CPU platform lacks a method a GPU feature the command turned on
                # calls (the weight cache's device UUID)
                named = option_by_word(code, given, reads_args=False) or "an option it sets"
                return "bad-args", (
                    f"the command asks for --device cpu, and {named} needs what the CPU "
                    "platform does not implement: drop it, or run on a GPU"
                )
        if family_of(kind) == "memory" and _NEGATIVE_SETTING.search(text):
            named = zero_given(given, self._code_above(line))
            if named is not None:
                # a memory setting the engine worked out below zero from a count of zero
                # (--chunked-prefill-size 0: "--mem-fraction-static=-0.047"): no memory
                # is short, the count is wrong
                return "bad-args", (
                    f"the command sets {named}, from which the engine worked out a "
                    "negative memory setting: give a count of 1 or more (or leave the "
                    "option out for its default)"
                )
        if _BARE_ARITHMETIC.search(text):
            named = zero_given(given, self._code_above(line))
            if named is not None:
                # a count of zero fails far from its option, as a bare division or index
                # (--tp-size 0: no ranks, so no rank's answer; --context-length 0)
                return "bad-args", (
                    f"the command sets {named}: give a count of 1 or more (or leave the "
                    "option out for its default)"
                )
        if _BARE_ASSERTION.search(text) and (kind == "bad-args" or not kept(kind, family_of(kind))):
            code = self._code_above(line)
            named = option_in_code(code, given) or option_by_word(code, given)
            if named is not None:
                # a bare assertion on the options the command set ("assert cfg.tp_size %
                # cfg.attn_dp_size == 0"), or in a step named for one of them
                # (handle_eplb_and_dispatch after --enable-eplb): its code names them
                return "bad-args", f"the failing check reads {named} of the command: {fix}"
        if kind in (None, "exit") and exception_text(text) is not None:
            named = option_in_code(self._code_above(line), given)
            if named is not None:
                # an exception that names no family, raised by code that reads an option
                # the command set (a chat template's unknown "sep_style"): that option's
                return "bad-args", f"the failing code reads {named} of the command: {fix}"
        if _NOT_DECODED.search(text) and not kept(kind, family_of(kind)):
            named = option_in_code(self._code_above(line), given)
            if named is not None:
                # a file an option names that is not text in the codec read with (a
                # template saved as UTF-16): the error names neither, its code the option
                return "bad-args", (
                    f"the file that {named} names is not text the engine can read: save it as UTF-8"
                )
        if cpu_asked(given) and (
            (kind == "cuda-error" and _NO_DRIVER.search(line))
            or (family_of(kind) == "install" and "libcuda" in line)
            or _NO_ACCELERATOR.search(line)
        ):
            # torch asked for its driver while the command asked for the CPU: an option
            # of it initialises CUDA (a hierarchical cache's pinned memory), or asks the
            # platform for a device (SGLang's "No accelerator (CUDA, XPU, ...) or
            # platform plugin is available." under --load-format layered)
            return "bad-args", (
                "the command asks for --device cpu, and something it turned on needs "
                "a GPU: drop that option, or run on a GPU"
            )
        named = url_host(given)
        if named is not None and (
            kind in (None, "exit") or family_of(kind) in ("distributed", "download", "port")
        ):
            # a scheme before the address: the bind, the group's rendezvous or the name
            # lookup fails in its own words
            return "bad-args", (
                f"the command's {named} is a URL: give a host name or an address "
                "(0.0.0.0, 127.0.0.1), with its port where the option takes one, without "
                "a scheme"
            )
        named = hosts_listed(given)
        if named is not None and family_of(kind) == "port":
            # the server binds one address; the port it took is taken again by the list's
            # next address (llama-server's "couldn't bind ..., hostname: localhost")
            return "bad-args", (
                f"the command's {named} lists several addresses, and the server listens on "
                "one: give one address (0.0.0.0 or :: for all)"
            )
        if (
            family_of(kind) == "port"
            and _HTTP_BIND.search(text)
            and any(n.startswith("ssl_") for n, _ in given)
        ):
            # llama-server's HTTPS server is not made when its key or certificate does not
            # load (a DER file, another pair's key), and it says so as a bind failure of
            # the port, which was free
            return "bad-args", (
                "the server could not set up TLS from its --ssl-key-file and "
                "--ssl-cert-file: give a PEM certificate and its own unencrypted PEM key"
            )
        socket = next((v for n, v in given if n == "host" and v.strip().startswith("/")), None)
        if (
            family_of(kind) == "port"
            and _HTTP_BIND.search(text)
            and socket is not None
            and not _is_socket(socket)
        ):
            # llama-server given a unix socket's path for --host (its "hostname: /run/x.sock"
            # in the bind failure): a folder, under a folder not there, too long; a socket
            # file already there (a stale one, another server's) is the address in use,
            # checked on this machine
            return "bad-args", (
                f"the command's --host {socket} is a unix socket's path that could not be "
                "bound: give a new file's path in a folder that exists and is writable"
            )
        named = host_unresolvable(given) if _NAME_LOOKUP.search(text) else None
        if (
            named is None
            and _NAME_LOOKUP.search(text)
            and family_of(kind) in (None, "download")
            and _BINDS.search(self._code_above(line))
        ):
            host = next((f"--host {v}" for n, v in given if n == "host" and _is_name(v)), None)
            if host is not None:
                # the server's own socket, bound to a name this machine cannot look up
                # (a host name copied from another machine)
                return "bad-args", (
                    f"the command's {host} does not resolve on this machine: give an "
                    "address of this machine (0.0.0.0, 127.0.0.1, ::) or a name it resolves"
                )
        if named is not None and family_of(kind) in (None, "download"):
            # the server's own socket: its host is no address nor a name (URL brackets
            # around an IPv6 address, a port after the name), and its lookup fails in the
            # words of a download's
            return "bad-args", (
                f"the command's {named} is not an address nor a host name: give an "
                "address (0.0.0.0, 127.0.0.1, ::1, without brackets) or a name, without a port"
            )
        if kind != "bad-args" and kept(kind, family_of(kind)):
            named = None
            if family_of(kind) == "distributed":
                # a socket path under a folder the command named (ZeroMQ's "No such file
                # or directory for ipc path" under VLLM_RPC_BASE_PATH): that setting's
                named = path_in_line(text, given)
            elif family_of(kind) == "download" and "SSL" in text:
                # the server's own TLS settings refused ("No cipher can be selected."
                # after --ssl-ciphers), not a download's connection
                tls = [f"--{n.replace('_', '-')}" for n, _ in given if n.startswith("ssl_")]
                if tls:
                    return "bad-args", (
                        f"the server's own TLS settings ({', '.join(tls)}) were refused: "
                        "check the certificate, the key and the cipher names they give"
                    )
            if named is not None:
                return "bad-args", f"the line quotes the path of {named} of the command: {fix}"
            named = dashed_flag_in_line(text, given) if _REFUSED_OPTIONS.search(text) else None
            if named is not None:
                # a check of the command's options that names the flag, in a
                # distributed setting's words ("Invalid data-parallel launch options:
                # `--nnodes 2` must evenly divide the total world size (1)")
                return "bad-args", f"the line names {named} of the command: {fix}"
            if self._says_family(text, kind):
                return kind, hint
            # a kind that only the phase or the lines around gave: the option the line
            # names, if it names one, is the better evidence
            named = flag_in_line(text, given)
            if named is None:
                return kind, hint
            return "bad-args", f"the line names {named} of the command: {fix}"
        named = module_given(text, given)
        if named is not None:
            return "bad-args", (
                f"the command's {named} names a module that is not there: check the "
                "module path for this engine version"
            )
        if kind == "install" and _IMPORT_FAILURE.search(text):
            return kind, hint  # a library's import names its own words, not the user's
        if kind == "install" and _NOT_INSTALLED.search(text):
            # a package an option needs, said to be missing ("FlexKV is not installed.
            # Please install the FlexKV package to use --enable-flexkv."): installing
            # it is the fix, or leaving the option out
            named = flag_in_line(text, given)
            if named is not None:
                return kind, (
                    f"the command's {named} needs a package this environment lacks: "
                    "install the one the line names, or leave the option out"
                )
            return kind, hint
        named = flag_in_line(text, given)
        if named is not None:
            return "bad-args", f"the line names {named} of the command: {fix}"
        named = path_in_line(text, given)
        if named is not None:
            return "bad-args", f"the line quotes the path of {named} of the command: {fix}"
        named = file_for_folder(given)
        if named is not None and (kind in (None, "exit") or family_of(kind) in _OVERRIDDEN):
            return "bad-args", (
                f"the command's {named} names a file: give the folder that holds it (or the Hub id)"
            )
        named = override_given(given)
        if named is not None and (kind in (None, "exit") or family_of(kind) in _OVERRIDDEN):
            # a model that fails to load or start with its configuration overridden
            # failed with what the override set (heads that do not divide the width)
            return "bad-args", (
                f"the command overrides the model's configuration ({named}): "
                "check the values it sets against the model's config.json"
            )
        if kind in (None, "exit") and exception_text(text) is not None:
            named = option_by_word(exception_text(text) or "", given, reads_args=False)
            if named is not None:
                # an error with no family of its own, in the words of an option the
                # command set ("Buckets not in sorted order" after
                # --bucket-e2e-request-latency 1 0.5 2 5)
                flag = named.split(" ", 1)[0]
                return "bad-args", f"the error is about {flag} of the command: {fix}"
        return kind, hint

    def _tail_at(self, line: str) -> tuple[list[str], int | None]:
        """The tail's lines, stripped, and the index of the last that is ``line``
        (stripped), None where the tail no longer holds it."""
        lines = [text.strip() for text in self.watcher.tail.last()]
        said = line.strip()
        at = next((n for n in range(len(lines) - 1, -1, -1) if lines[n] == said), None)
        return lines, at

    def _traceback_above(self, line: str) -> str:
        """The lines the tail holds above ``line`` back to the traceback's head: its
        frames and their code."""
        lines, at = self._tail_at(line)
        if at is None:
            return ""
        heads = (n for n in range(at - 1, max(-1, at - 200), -1) if "Traceback (most" in lines[n])
        top = next(heads, max(0, at - 60))
        return "\n".join(lines[top:at])

    def _reads_tokenizer(self, line: str) -> bool:
        """Whether the traceback that ends at ``line`` passed through a function that
        loads a tokenizer (``get_tokenizer``, ``init_tokenizer_manager``)."""
        return _TOKENIZER_FRAME.search(self._traceback_above(line)) is not None

    def _assertion_source(self, line: str) -> str:
        """The ``assert ...`` source line right above ``line``, a bare
        ``AssertionError`` (the check the code made says what failed; the error's own
        line is the same for every assert), else ``line``. ``line`` may be a logical
        line joined from several (a progress bar's text after the error): its first
        physical line is the error's."""
        whole = line.strip()
        lines = self.watcher.tail.last()
        found = (
            n
            for n in range(len(lines) - 1, -1, -1)
            if (said := lines[n].strip()) and (said == whole or whole.startswith(f"{said} "))
        )
        at = next(found, None)
        if at is None or not _BARE_ASSERTION.search(strip_prefix(lines[at])):
            return line
        for above in lines[max(0, at - 4) : at][::-1]:
            said = strip_prefix(above).strip()
            if not said or _CARETS.fullmatch(said):
                continue
            return above if said.startswith("assert ") else line
        return line

    def _code_above(self, line: str) -> str:
        """The few lines the tail holds above ``line``: a traceback's failing code."""
        lines, at = self._tail_at(line)
        return "" if at is None else "\n".join(lines[max(0, at - 6) : at])

    def _says_family(self, text: str, kind: str | None) -> bool:
        """Whether ``text`` names ``kind``'s family itself, by its words or by a fatal
        signature of that family: a kind that only the phase or the lines around gave
        ("No common block size for 16" while the KV cache was sized) does not keep its
        fix against an option the line names."""
        family = family_of(kind)
        words = words_kind(text)
        if words is not None and family_of(words.kind) == family:
            return True
        return any(
            family_of(signature.kind) == family and pattern.search(text) is not None
            for pattern, signature in self.watcher.rules.fatal
        )

    def _already_up(self) -> bool:
        """Whether the server was ready when the gate began (a ``wait`` on a server that
        was up): its ready line was in the log already, or the probe's first try passed."""
        if self.sources.is_parent:  # launch: the gate saw the whole start
            return False
        return self._ready_in_backlog or (self._prober is not None and self._prober.at_once)


# a traceback's frame in a file, and how far below it its exception may be (a
# SyntaxError's source line and caret come between)
_FRAME_FILE = re.compile(r'^\s*File "/[^"]+", line \d+')
_FRAME_TO_EXCEPTION = 4
# an exception that a file or folder could not be opened, with its path
_FILE_FAILED = re.compile(
    r"^(?:\w+\.)*(?:FileNotFoundError|PermissionError|IsADirectoryError|NotADirectoryError"
    r"|OSError): \[Errno \d+\] [^:]+: '"
)


def _is_name(host: str) -> bool:
    """Whether ``host`` is a host name (what a lookup can fail on), not an address."""
    try:
        ipaddress.ip_address(host.strip().strip("'\"[]"))
    except ValueError:
        return bool(host.strip())
    return False


# the code that binds the server's own socket (a name lookup failing there is its host's)
_BINDS = re.compile(r"\.bind\(|\bcreate_server\b|\bbind_socket\b")
# devices a machine commonly has: their libraries come with the engine's own install
# a lookup's failure that says nothing of what was looked up
_BARE_LOOKUP = re.compile(r"(?:IndexError: (?:list|tuple) index out of range|StopIteration)\s*$")
# llama.cpp's reader finding no file's first bytes to read
_NO_MAGIC = re.compile(r"\bfailed to read magic\b|\bfailed to read (?:the )?header\b")
# a client's connection that nothing accepted
_CONNECT_FAILED = re.compile(
    r"\bConnectError\b|\bConnection refused\b|\bAll connection attempts failed\b"
    r"|\bClientConnectorError\b|\bConnectionRefusedError\b"
)
# the OpenMP runtimes' own error lines, and the variables that steer them
_OPENMP_SAID = re.compile(r"(?:libgomp|OMP|libiomp5?\w*): ")
_OPENMP_VARIABLE = re.compile(r"\$(?:GOMP|OMP|KMP)_")
# a connector (remote store) asked of a path with no scheme it knows
_NO_CONNECTOR = re.compile(r"\bInvalid connector type: /")
_FRAME_WHERE = re.compile(r'File "([^"]+)", line \d+, in (\S+)')
_COMMON_DEVICES = frozenset(("cpu", "cuda", "auto", "gpu"))
# values that choose a device other than the CPU and NVIDIA's, or a backend made for one
# (SGLang's --attention-backend ascend, vLLM's and SGLang's --device hpu / xpu / npu)
_DEVICE_BACKENDS = frozenset(
    ("npu", "ascend", "hpu", "gaudi", "habana", "xpu", "musa", "mlu", "tpu", "neuron", "rocm")
)
# an option shown with a value below zero in a message (a setting the engine worked out)
_NEGATIVE_SETTING = re.compile(r"--[a-z][\w-]*=-\d")
# an assertion with no message: only its code says what was checked
_BARE_ASSERTION = re.compile(r"^(?:\w+\.)*AssertionError:?\s*$")
_ADAPTER_FILES_FIX = (
    "the LoRA adapter's own files are not a LoRA adapter this engine reads: check its "
    "adapter_config.json (r, lora_alpha, target_modules) and that its weights were saved "
    "by PEFT (adapter_model.safetensors), or that it is a LoRA adapter at all"
)
# a kind's hint for a case narrower than its engine's: the kind, the words, the fix
_NARROW_HINTS = (
    (
        "disk",
        re.compile(SHM_TOO_SMALL),
        "the shared-memory folder /dev/shm is too small for the engine's buffers: give "
        "the container more (docker run --shm-size 8g, or --ipc=host)",
    ),
    (
        "unsupported-model",
        re.compile(ADAPTER_METHOD),
        "the LoRA adapter was trained with a method this engine does not serve (DoRA, "
        "LoRA bias, whole modules saved): use a plain LoRA adapter, or merge it into "
        "the model",
    ),
    (
        "model-load",
        re.compile(ADAPTER_FILES),
        _ADAPTER_FILES_FIX,
    ),
)
# the frames that read a LoRA adapter's config (vLLM's PEFTHelper)
_ADAPTER_CONFIG_FRAME = re.compile(
    r"[/\\]lora[/\\]peft_helper\.py\", line \d+, in (?:from_local_dir|from_dict|__post_init__)"
)
# a value of a builtin type where another shape was read ("'list' object has no
# attribute 'get'"), and the frames where a model's configuration is read
_WRONG_SHAPE = re.compile(
    r"^(?:\w+\.)*(?:AttributeError|TypeError): '(?:list|dict|str|int|float|bool|NoneType)' "
    r"object (?:has no attribute|is not subscriptable|is not iterable)\b"
)
_FRAME_PATH = re.compile(r'\bFile "([^"]+)", line \d+')
_CONFIG_READER = re.compile(
    r"[/\\](?:transformers_utils[/\\]config|configuration_utils|hf_transformers_utils)\.py$"
)
_MAX_PORT = 65535
# a server's socket refused for its port's value (uvicorn's getaddrinfo of port -1)
_BIND_REFUSED = re.compile(
    r"\[Errno -?\d+\] (?:Servname not supported|error while attempting to bind)"
    r"|\bport must be 0-65535\b"
)
# an engine's warnings that foretell a failure: it goes on with a model it says it does
# not support; its KV cache holds less than one request of the context length
# a denial naming its path (Python's errno text), and a path quoted whole in a line
_DENIED = re.compile(r"\[Errno 13\] Permission denied: '(/[^']+)'")
_QUOTED_PATH = re.compile(r"'(/[^']+)'")
_RETRYING = re.compile(r"\bretrying\b|\bwill retry\b", re.IGNORECASE)

_FORETOLD = (
    (
        re.compile(
            r"\b(?:is not|isn't) (?:backend-compatible|supported)\b.*\b[Pp]roceeding anyway\b"
        ),
        "unsupported-model",
        "the engine warned that it does not support this model and went on anyway: serve "
        "it with an engine or implementation that supports it (another --model-impl, "
        "another engine version)",
    ),
    (
        re.compile(r"\bKV (?:pool|cache) holds \d+ tokens, fewer than\b"),
        "oom",
        "the KV cache holds fewer tokens than one request of the context length: give it "
        "more (--max-total-tokens, --mem-fraction-static) or lower --context-length",
    ),
)
# an adapter's weights file not found inside its folder
_ADAPTER_WEIGHTS_MISSING = re.compile(
    r"No such file or directory:? '?(/[^'\s]+/adapter_model\.(?:safetensors|bin))\b"
)
# a model refused for a purpose ("is not supported for encoder disaggregation.")
# something the user gave, refused for the model ("Default modality-specific LoRA(s)
# were provided for a non multimodal model"): its words before "provided"
_PROVIDED_FOR = re.compile(r"^(?:\w+Error: )?([\w ()-]+?) (?:were|was) provided for a non\b")
# a model's config without an attribute the code asked of it, and a check that lists
# the only values it takes
_CONFIG_LACKS = re.compile(r"AttributeError: '\w*Config' object has no attribute '(\w+)'")
_ONLY_LISTED = re.compile(r"\bonly \[[^\]]{1,300}\] [\w -]{0,60}\b(?:is|are) supported\b")
# a model named by its type and refused for a mode; words of a machine or a device
_MODE_REFUSED = re.compile(r"\bModel (?:type|architecture) \S+ is not supported for\b")
_DEVICE_WORDS = re.compile(
    r"\b(?:cpu|gpu|cuda|rocm|hip|xpu|npu|hpu|tpu|device|platform|hardware|backend)s?\b", re.I
)
_NOT_SUPPORTED_FOR = re.compile(r"\bis not supported (?:for|with|in) ([\w -]+)")
# the frames where a layer takes a LoRA adapter's tensors, and a shape that did not fit
_ADAPTER_SET_FRAME = re.compile(r"[/\\]lora[/\\][\w/\\]*\.py\", line \d+, in set_lora\b")
_SHAPE_ERROR = re.compile(
    r"\bThe size of tensor a \(\d+\) must match\b|\b(?:size|shape) mismatch\b"
    r"|\bshape '\[[\d, ]*\]' is invalid for input of size\b"
)
# an error in a value's type or contents, not in the system around it
_DATA_ERROR = re.compile(r"^(?:\w+\.)*(?:TypeError|ValueError|KeyError|JSONDecodeError): ")
# a check that refuses the options themselves
_REFUSED_OPTIONS = re.compile(r"\b[Ii]nvalid\b[\w\s-]{0,40}\boptions?\b|\b[Aa]djust `?--")
# a check on the server's TLS files (uvicorn's "assert self.ssl_certfile")
_TLS_CHECK = re.compile(r"\bssl_(?:certfile|keyfile|cert_file|key_file)\b")


# llama.cpp's loader given no model file ("exactly one out metadata, path_model, and file
# must be defined")
_NO_MODEL_PATH = re.compile(r"\bexactly one out metadata, path_model\b")
# a request whose URL has no scheme (httpx's), and the variables that give an endpoint
_NO_SCHEME = re.compile(r"UnsupportedProtocol: Request URL is missing an 'http://'")
_URL_VARIABLE = re.compile(r"ENDPOINT|_URL$|_HOST$")
# Python without its standard library (PYTHONHOME pointing elsewhere)
_NO_ENCODINGS = re.compile(r"^(?:\w+\.)*ModuleNotFoundError: No module named 'encodings'")
_INVALID_VARIABLE = re.compile(r"\binvalid (PYTHON\w+) environment variable value\b")
_UNKNOWN_ENCODING = re.compile(r"^LookupError: unknown encoding: (\S+)")
_NO_CODEC = re.compile(r"Fatal Python error: init_fs_encoding: failed to get the Python codec")
# transformers' check of a model's own code for the packages it imports
_REMOTE_CODE_NEEDS = re.compile(
    r"requires the following packages that were not found in your environment: \w"
)


# "import numpy as np" / "from numpy import x": the module a traceback's code imports
_IMPORTS = re.compile(r"^(?:import|from)\s+([A-Za-z_]\w*)")
_FRAME_MODULE = re.compile(
    r'^File "(?P<path>[^"<]+?/(?P<name>[A-Za-z_]\w*)(?:/__init__)?\.py)", line'
)
# where installed packages and the standard library live
_INSTALLED = re.compile(r"/(?:site|dist)-packages/|/lib/python\d[\d.]*/|/lib64/python")


def _frame_words(frames: str) -> set[str]:
    """The words (split at anything not a letter or digit, lowercase) of the last three
    frames' file paths and function names in ``frames``: where the failure was raised
    (``get_hpu_memory_capacity``, ``hardware_backend/npu/.../ascend_backend.py``)."""
    found = _FRAME_WHERE.findall(frames)[-3:]
    return {
        word for path, func in found for word in re.split(r"[^a-z0-9]+", f"{path} {func}".lower())
    }


def _shadowing_file(frames: str) -> tuple[str, str] | None:
    """The file and the module name where a traceback's ``import X`` went on into a file
    ``X.py`` (or ``X/__init__.py``) outside the installed packages and the standard
    library, else None: a script of the working folder named like a package (a
    scratch ``numpy.py``), imported instead of it."""
    imported: str | None = None
    for raw in frames.splitlines():
        said = raw.strip()
        frame = _FRAME_MODULE.match(said)
        if frame is not None:
            path = frame.group("path")
            if (
                imported is not None
                and frame.group("name") == imported
                and not _INSTALLED.search(path)
            ):
                return path, imported
            imported = None
            continue
        found = _IMPORTS.match(said)
        if found is not None:
            imported = found.group(1)
    return None


# variables that steer a part of torch, and where that part's frames are
_COMPILER_VARIABLES = (
    ("TORCHINDUCTOR_", "/torch/_inductor/"),
    ("TORCHDYNAMO_", "/torch/_dynamo/"),
    ("TORCH_COMPILE_", "/torch/_dynamo/"),
)


def _compiler_setting(given: Sequence[tuple[str, str]], frames: str) -> str | None:
    """The command's variable (``TORCHINDUCTOR_FREEZING=1``) that steers the part of
    torch whose frames the traceback passes through, as written, else None."""
    for name, value in given:
        for prefix, where in _COMPILER_VARIABLES:
            if name.startswith(f"${prefix}") and where in frames.replace("\\", "/"):
                return f"{name[1:]}={value}"
    return None


def _squashed(text: str) -> str:
    """``text`` lower-cased without dashes and underscores (compressed-tensors and
    CompressedTensors alike)."""
    return re.sub(r"[-_\s]", "", text.lower())


# a class named by its module path (vllm.v1.worker.gpu_worker.Worker)
_CLASS_PATH = re.compile(r"[A-Za-z_]\w*(?:\.[A-Za-z_]\w*){2,}")


def _class_given(frames: str, given: Sequence[tuple[str, str]]) -> str | None:
    """The option of ``given`` whose value is a class path whose module holds the
    traceback's last frame, as written, else None."""
    paths = _FRAME_PATH.findall(frames)
    if not paths:
        return None
    last = paths[-1].replace("\\", "/")
    for name, value in given:
        bare = value.strip().strip("'\"")
        if name.startswith("$") or not _CLASS_PATH.fullmatch(bare):
            continue
        module = bare.rsplit(".", 1)[0].replace(".", "/")
        if last.endswith(f"/{module}.py"):
            return f"--{name.replace('_', '-')} {value}"
    return None


def _is_socket(path: str) -> bool:
    """Whether ``path`` is a unix socket's file on this machine."""
    try:
        return stat.S_ISSOCK(os.stat(path.strip().strip("'\"")).st_mode)
    except OSError:
        return False


def _said(named: str) -> str:
    """An option as written (``--model ~/x``) as the command's, a bare path as is."""
    return f"the command's {named}" if named.startswith("-") else named


# a library that builds its classes from docstrings, under python -OO
_OPTIMIZED_AWAY = re.compile(r"\bin the docstring of\b|\bdocstring\b.{0,40}\bis None\b")
# a call the installed library does not take (an argument it lacks)
_CALL_REFUSED = re.compile(r"TypeError: .*\bgot an unexpected keyword argument\b")
# a JSON parser's error with no file named
_NOT_JSON = re.compile(r"^(?:\w+\.)*JSONDecodeError: ")
_BARE_NOT_IMPLEMENTED = re.compile(r"^(?:\w+\.)*NotImplementedError:?\s*$")
# a platform's own code (SGLang's platforms/device_mixin.py, current_platform.x())
_PLATFORM_CODE = re.compile(r"/platforms?/|\bcurrent_platform\.")
_TOKENIZER_FRAME = re.compile(r", in \w*tokenizer\w*$", re.MULTILINE)
_CARETS = re.compile(r"[\^~]+")
_UNKNOWN_METHOD = re.compile(r"Unknown quantization method\b")
_NO_WEIGHTS = re.compile(r"Cannot find any model weights with|Could not find checkpoint files")
_WEIGHTS_UNFIT = re.compile(
    r"\bno (?:module or )?parameter named\b|\bdoes not support \w+ quantization\b", re.IGNORECASE
)
_NO_DRIVER = re.compile(r"NVIDIA driver|\b0 active drivers\b")
_NO_ACCELERATOR = re.compile(r"\bNo accelerator\b.*\bis available\b")
# what a plain exit's reason says of a kind its words gave (``_on_exit``)
_JUDGED = re.compile(r"; judged [\w-]+ by its words \([^)]*\)$")
# a Python warning raised as the exception that ends a traceback (warnings as errors);
# logged warnings carry a file and line, or a level, before their class
_WARNING_RAISED = re.compile(r"^(?:[A-Za-z_]\w*\.)*[A-Z]\w*Warning: \S")
# a file read as text that is not in the codec (no path in the message)
_NOT_DECODED = re.compile(r"^(?:\w+\.)*UnicodeDecodeError: '[\w-]+' codec can't decode")
# llama-server's HTTP server that did not bind (its TLS files too did not load)
_HTTP_BIND = re.compile(r"couldn't bind HTTP server socket")
# a URI in a line (its host's words are not the line's)
_URI = re.compile(r"\b[a-zA-Z][\w+.-]*://\S+")
# a name lookup that failed (the host of the server's own socket, or of a download)
# a lookup for a download or a request, not for the server's own socket
_FETCHING = re.compile(r"https?://|huggingface|\bHTTPS?Connection|\burl\b", re.IGNORECASE)
_NAME_LOOKUP = re.compile(
    r"\bgaierror\b|Name or service not known|nodename nor servname|Temporary failure in name"
)
# a bare division or index error: what a count of zero fails as, far from its option
_BARE_ARITHMETIC = re.compile(
    r"^(?:\w+\.)*(?:ZeroDivisionError|IndexError): (?:(?:integer |float )?(?:division|modulo)"
    r"(?: or modulo)? by zero|list index out of range|(?:tuple|string) index out of range)\s*$"
    r"|\bdivision by zero\s*$"
)
# argparse's count of pydantic's errors, when there are several
_SEVERAL_ERRORS = re.compile(r": (?:[2-9]|\d{2,}) validation errors for \w+")
# pydantic's error of one value, with the type it appends
_PYDANTIC_ERROR = re.compile(r" \[type=[a-z_]+, input_value=")
# pydantic's error of a key that the model does not have ("Unexpected keyword argument",
# "Extra inputs are not permitted"): it says what is not allowed, not what must be
_UNKNOWN_KEY = re.compile(r"\[type=(?:unexpected_keyword_argument|extra_forbidden),")
# a FileNotFoundError (or a folder's IsADirectoryError) without the path, and the calls
# that raise one for an option's file
_BARE_NOT_FOUND = re.compile(
    r"(?:FileNotFoundError: \[Errno 2\] No such file or directory"
    r"|IsADirectoryError: \[Errno 21\] Is a directory)\s*$"
)
_OPTION_FILE_CALL = re.compile(r"\bload_cert_chain\(|\bload_verify_locations\(|\bsock\w*\.bind\(")
# a server's line that it listens on an address, with its port
_LISTENING = re.compile(
    r"\b(?:listening|running|serving|started) (?:on|at) (?:https?://)?[\w.\-\[\]:]*?:(\d{2,5})\b",
    re.IGNORECASE,
)
_LISTEN_LINES = 30  # how far back a ready line looks for that line
# the families a model-configuration override is read for: the model's load, the
# engine's start
_OVERRIDDEN = frozenset({"model", "engine"})
_NOT_INSTALLED = re.compile(r"\bis not installed\b|\b[Pp]lease install\b")
_IMPORT_FAILURE = re.compile(
    r"ImportError|ModuleNotFoundError|cannot import|undefined symbol|No module named"
    r"|[Ss]hared (?:library|object)|cannot open shared"
    # the engine's re-raise that says how to install what is missing
    r"|\bpip install\b|\bInstall it with: "
    # a package at a version the engine needs ("Please use torchao version >= 0.15.0")
    r"|\b[Pp]lease use [\w.-]+ version\s*(?:>=|==|\d)"
)


def _bound_phases(
    phases: Sequence[PhaseSpan], snapshots: Sequence[Snapshot], elapsed_s: float
) -> tuple[PhaseSpan, ...]:
    """``phases`` with what each was bound by, from the snapshots sampled during it."""
    out = []
    for phase in phases:
        end = phase.end_s if phase.end_s is not None else elapsed_s
        act = phase_activity(snapshots, phase.start_s, end)
        if act is None:
            out.append(phase)
        else:
            out.append(replace(phase, bound=act.bound, bound_evidence=act.evidence))
    return tuple(out)


def _stacks_note(stacks: Stacks | None) -> str:
    """``; stacks: 3 of 5 processes in wait_for_nccl_peers`` (empty without stacks)."""
    if stacks is None or not stacks.processes:
        return ""
    return f"; stacks: {stacks.summary}"


def _signal_name(number: int) -> str:
    try:
        return signal.Signals(number).name
    except ValueError:
        return f"signal {number}"
