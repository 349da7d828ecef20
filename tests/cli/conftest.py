"""Fixtures shared with the load generator tests."""

from tests.bench.conftest import sse_server  # noqa: F401 (a fixture, used by name)
