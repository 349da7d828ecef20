"""Fixtures of the report tests: a constructed campaign database."""

from __future__ import annotations

from pathlib import Path

import pytest


@pytest.fixture(scope="module")
def campaign_db(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A database holding the constructed four-variant campaign (built once per module)."""
    from .campaign import build

    path = tmp_path_factory.mktemp("db") / "servegate.db"
    build(path)
    return path
