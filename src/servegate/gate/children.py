"""Watch a server's descendants: snapshot them, and notice an essential one dying.

SGLang's HTTP process can outlive its scheduler (the server looks alive and never
answers), so the profile names the children a server cannot live without. Each one
found gets a pidfd in the gate's loop, so its death is seen the moment it happens.
A child may take its role name only after it started (SGLang's scheduler sets its
process title once its imports are done), so a descendant that matches nothing is
looked at again on every scan for a while (``RENAME_WINDOW_S``). A process forked by
an essential child inherits its name; it is the child's helper, not a second one of
that role, and its exit is not watched.
"""

from __future__ import annotations

import os
import re
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import psutil

__all__ = ["RENAME_WINDOW_S", "ChildWatch", "EssentialChild", "descendants"]

# how long after it was first seen an unmatched descendant may still take a role name:
# a spawned Python worker imports torch and the engine (often 10-30 s) before renaming
RENAME_WINDOW_S = 120.0


def descendants(pid: int) -> list[psutil.Process]:
    """Every live descendant of ``pid`` (empty when it is gone)."""
    try:
        return list(psutil.Process(pid).children(recursive=True))
    except psutil.Error:
        return []


def describe(proc: psutil.Process) -> str:
    """``name`` and command line of a process, for matching and messages."""
    try:
        return f"{proc.name()} {' '.join(proc.cmdline())}"
    except psutil.Error:
        return ""


@dataclass(frozen=True, slots=True, kw_only=True)
class EssentialChild:
    """A child process the server cannot live without, and its pidfd."""

    pid: int
    label: str
    pidfd: int


class ChildWatch:
    """Find essential children of ``root`` by name or command line; hold a pidfd each."""

    def __init__(
        self,
        root: int,
        patterns: Sequence[str],
        *,
        window_s: float = RENAME_WINDOW_S,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.root = root
        self._patterns = [re.compile(p) for p in patterns]
        self.known: dict[int, EssentialChild] = {}
        self._window_s = window_s
        self._clock = clock
        # (pid, create time) -> until when to look again (inf: matched, never again)
        self._seen: dict[tuple[int, float], float] = {}

    def scan(self) -> list[EssentialChild]:
        """Look for new essential children; return those found now."""
        if not self._patterns:
            return []
        found: list[EssentialChild] = []
        now = self._clock()
        alive: set[tuple[int, float]] = set()
        procs = []
        for proc in descendants(self.root):
            try:
                procs.append(((proc.create_time(), proc.pid), proc))
            except psutil.Error:
                continue
        # oldest first: a parent is matched before the helpers it forked
        for (created, pid), proc in sorted(procs, key=lambda item: item[0]):
            key = (pid, created)
            alive.add(key)
            until = self._seen.setdefault(key, now + self._window_s)
            if now > until:
                continue  # matched already, or never took a role name in time
            text = describe(proc)
            match = next((m for p in self._patterns if (m := p.search(text))), None)
            if match is None:
                continue
            self._seen[key] = -1.0  # matched: never looked at again
            try:
                pidfd = os.pidfd_open(proc.pid)
            except OSError:
                continue
            # the word that matched, e.g. sglang::scheduler_TP0
            start = text.rfind(" ", 0, match.start()) + 1
            end = text.find(" ", match.end())
            label = text[start : end if end >= 0 else len(text)]
            if self._forked_from(proc, label):
                os.close(pidfd)
                continue
            child = EssentialChild(pid=proc.pid, label=label, pidfd=pidfd)
            self.known[proc.pid] = child
            found.append(child)
        for key in [key for key in self._seen if key not in alive]:
            del self._seen[key]  # gone: a new process may take its PID
        return found

    def _forked_from(self, proc: psutil.Process, label: str) -> bool:
        """Whether ``proc`` descends from an essential child of the same name: a helper
        it forked (torch.compile's workers inherit ``VLLM::Worker``), whose exit is
        normal, not the role's death."""
        try:
            ancestors = proc.parents()
        except psutil.Error:
            return False
        for ancestor in ancestors:
            if ancestor.pid == self.root:
                return False
            known = self.known.get(ancestor.pid)
            if known is not None and known.label == label:
                return True
        return False

    def forget(self, pid: int) -> None:
        """Close the pidfd of a child that was handled."""
        child = self.known.pop(pid, None)
        if child is not None:
            os.close(child.pidfd)

    def close(self) -> None:
        """Close every pidfd."""
        for pid in list(self.known):
            self.forget(pid)
