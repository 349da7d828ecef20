"""The installed version of servegate."""

from __future__ import annotations

from importlib.metadata import PackageNotFoundError, version

try:
    __version__ = version("servegate")
except PackageNotFoundError:  # running from a source tree that was not installed
    __version__ = "0.0.0+source"
