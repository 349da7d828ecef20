"""The wheels ``servegate remote install`` packs: which dependencies they carry."""

from __future__ import annotations

import re
import tomllib
from pathlib import Path

from servegate.remote import build

ROOT = Path(__file__).resolve().parents[2]


def test_markers_are_read_with_packaging_a_declared_dependency() -> None:
    """A dependency's environment marker is evaluated with ``packaging``, which servegate
    declares (never pip's vendored copy, which is pip's own business)."""
    declared = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["dependencies"]
    names = [re.split(r"[<>=!~ ;\[]", item, maxsplit=1)[0] for item in declared]
    assert "packaging" in names
    assert "pip._vendor" not in Path(build.__file__).read_text()
    assert build._applies('python_version >= "3.11"')
    assert not build._applies('sys_platform == "win32"')
