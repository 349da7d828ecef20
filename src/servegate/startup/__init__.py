"""The startup record: cold or warm, the page cache, the ETA, and the start history.

    record = StartupRecord.before(engine="vllm", command=argv, env=extra_env, via="launch")
    record.eta                      # from past starts of this configuration, or None
    record.auto_timeout()           # --timeout auto and its rule, or None without history
    startup = record.finish(verdict.to_json())   # the verdict JSON's "startup" object

``before`` measures the engine's caches and how much of the model's files the page
cache holds, and reads the history; ``finish`` measures the caches again, decides cold
or warm, and adds the start to the history (servegate.startup.history). A history that
cannot be opened costs a one-line warning, never the start.
"""

from __future__ import annotations

import os
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from servegate.errors import UsageError
from servegate.gate.options import model_from_command
from servegate.startup.caches import CacheState, measure
from servegate.startup.eta import AutoTimeout, Eta, auto_rule, estimate, expected_cold, is_cold
from servegate.startup.history import ConfigKey, History, StartRow, config_key, gpu_model
from servegate.startup.pagecache import PageCache, model_files, resident

__all__ = ["StartupRecord", "command_model"]


def command_model(command: Sequence[str]) -> str | None:
    """The model path or Hub id a server command loads (``--model``, ``--model-path``,
    ``-m``, ``vllm serve M``), or None."""
    for flag in ("--model-path", "--model", "-m", "--model-id"):
        for index, arg in enumerate(command):
            if arg == flag and index + 1 < len(command):
                return command[index + 1]
            if arg.startswith(flag + "=") and flag.startswith("--"):
                return arg.split("=", 1)[1]
    found = model_from_command(command)
    return found


@dataclass(slots=True, kw_only=True)
class StartupRecord:
    """One start's cold/warm evidence and ETA, from before it to its verdict."""

    key: ConfigKey
    via: str
    env: Mapping[str, str]
    caches_before: tuple[CacheState, ...]
    page_cache: PageCache | None
    measure_s: float
    history: list[StartRow]
    expected_cold: bool | None
    eta: Eta | None
    warnings: list[str] = field(default_factory=list)
    timeout_auto: AutoTimeout | None = None  # --timeout auto chose the timeout this way

    @classmethod
    def before(
        cls,
        *,
        engine: str,
        command: Sequence[str],
        env: Mapping[str, str] | None = None,
        via: str,
    ) -> StartupRecord:
        """Measure the caches and the page cache, and read the history, before a start."""
        started = time.perf_counter()
        full_env = {**os.environ, **(env or {})}
        key = config_key(engine, command, env=env, gpu=gpu_model())
        caches = measure(engine, full_env)
        files = model_files(command_model(command), full_env)
        page = resident(files) if files else None
        warnings: list[str] = []
        rows: list[StartRow] = []
        try:
            with History.open() as history:
                rows = history.starts(config=key.key, limit=50)
        except UsageError as exc:
            warnings.append(f"start history not read: {exc}")
        expected = expected_cold(caches, rows[0] if rows else None)
        return cls(
            key=key,
            via=via,
            env=full_env,
            caches_before=caches,
            page_cache=page,
            measure_s=time.perf_counter() - started,
            history=rows,
            expected_cold=expected,
            eta=estimate(rows, expected),
            warnings=warnings,
        )

    def auto_timeout(self) -> AutoTimeout | None:
        """``--timeout auto`` for this start, or None without a past READY start; kept
        for the ``startup`` object (``timeout_auto``)."""
        self.timeout_auto = auto_rule(self.history, self.expected_cold)
        return self.timeout_auto

    def finish(
        self, verdict: Mapping[str, Any], *, telemetry: Mapping[str, Any] | None = None
    ) -> dict[str, Any]:
        """Measure the caches again, decide cold or warm, record the start; the
        ``startup`` object for the verdict JSON."""
        after = measure(self.key.engine, self.env)
        # a wait on a server that was already up saw no start: neither cold nor warm
        already_up = bool(verdict.get("already_up"))
        cold = None if already_up else is_cold(self.caches_before, after)
        old = {state.name: state for state in self.caches_before}
        actual = float(verdict["elapsed_s"])
        eta_s = None if self.eta is None else round(self.eta.total_s, 3)
        startup: dict[str, Any] = {
            "cold": cold,
            "expected_cold": self.expected_cold,
            "caches": [
                {
                    "name": state.name,
                    "path": state.path,
                    "before": _counts(old.get(state.name)),
                    "after": _counts(state),
                }
                for state in after
            ],
            "page_cache_pct": None if self.page_cache is None else self.page_cache.pct,
            "page_cache": None if self.page_cache is None else self.page_cache.to_json(),
            "eta_s": eta_s,
            "actual_s": round(actual, 3),
            "eta_error_pct": (
                round(100.0 * (eta_s - actual) / actual, 1)
                if eta_s is not None
                and actual > 0
                and verdict.get("status") == "ready"
                and not already_up
                else None
            ),
            "eta": None if self.eta is None else self.eta.to_json(),
            "timeout_auto": None if self.timeout_auto is None else self.timeout_auto.to_json(),
            "already_up": already_up,  # left out of the ETA (startup.eta)
            "config_key": self.key.key,
            "measure_s": round(self.measure_s, 4),
        }
        try:
            with History.open() as history:
                startup["history_id"] = history.record(
                    self.key,
                    via=self.via,
                    verdict=verdict,
                    cold=cold,
                    startup=startup,
                    telemetry=telemetry,
                )
        except UsageError as exc:
            self.warnings.append(f"start not recorded in the history: {exc}")
        return startup

    def take_warnings(self) -> list[str]:
        """The warnings collected so far, once (the caller says them)."""
        taken, self.warnings[:] = list(self.warnings), []
        return taken


def _counts(state: CacheState | None) -> dict[str, Any] | None:
    if state is None:
        return None
    return {"files": state.files, "bytes": state.bytes, "truncated": state.truncated}
