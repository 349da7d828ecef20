"""The statuses a stored campaign and a stored attempt can have.

They are stored as their plain strings (``'done'``), so a database written before these
enums existed reads back the same; compare them with the members or with the strings.
"""

from __future__ import annotations

from enum import StrEnum

__all__ = ["AttemptStatus", "CampaignStatus"]


class CampaignStatus(StrEnum):
    """Where a campaign stands."""

    RUNNING = "running"  # a runner is at work on it (or was, and died: read as interrupted)
    DONE = "done"  # every planned start ran (some may have failed: that is a result)
    INTERRUPTED = "interrupted"  # stopped by Ctrl-C, a signal, a full disk or a dead runner
    FAILED = "failed"  # the runner stopped on an internal error


class AttemptStatus(StrEnum):
    """Where one server start stands."""

    RUNNING = "running"  # launched, no verdict yet
    READY = "ready"  # the gate said READY; benchmarking may be under way
    CRASH = "crash"  # the gate said CRASH
    TIMEOUT = "timeout"  # the gate said TIMEOUT
    DONE = "done"  # benchmarked and stopped
    FAILED = "failed"  # preflight failed, or it died or broke after READY (mid-benchmark)
    INTERRUPTED = "interrupted"  # the runner was stopped (Ctrl-C, SIGKILL found on resume)
    LOST = "lost"  # the cluster node running it was lost: not a failure of the variant
