"""Real engine logs from public issue threads, replayed through the real gate.

Every fixture in tests/fixtures/crash_logs is written by a live process that then exits,
kills itself or stays alive as the engine did; the verdict's status, kind and quoted
cause line must match the fixture's sidecar. The replays run concurrently once per
module (each takes well under a second), and each fixture is checked as its own test.
"""

from __future__ import annotations

import pytest
from tests.gate.crash_replay import Fixture, Outcome, load_fixtures, replay_all, split_of

FIXTURES = load_fixtures()


@pytest.fixture(scope="module")
def outcomes() -> dict[str, Outcome]:
    """Every fixture replayed once, by name."""
    return {outcome.fixture.name: outcome for outcome in replay_all(FIXTURES)}


def test_enough_real_logs() -> None:
    """At least 40 real logs, each with its source thread, split by file name."""
    assert len(FIXTURES) >= 40, len(FIXTURES)
    for fixture in FIXTURES:
        assert fixture.source.startswith("https://github.com/"), fixture.name
        assert fixture.split == split_of(fixture.log.stem), fixture.name


@pytest.mark.parametrize("fixture", FIXTURES, ids=[f.name for f in FIXTURES])
def test_real_log_verdict(fixture: Fixture, outcomes: dict[str, Outcome]) -> None:
    """The gate reaches the sidecar's status, kind and cause line on the real log."""
    outcome = outcomes[fixture.name]
    assert outcome.ok, outcome.describe()
