"""Fixtures of the report tests: the store's connection check applies here too."""

from __future__ import annotations

from tests.store.conftest import connections_closed

__all__ = ["connections_closed"]
