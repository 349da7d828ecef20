"""One home per OS facility: NVML in telemetry/nvml.py, Linux's prctl in _os.py.

A second copy of a facility's wrapper drifts from the first (which errors it catches,
whether it shuts down); so the source is searched: no other module may load it.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

from servegate.telemetry.nvml import Nvml, unavailable_reason

SRC = Path(__file__).resolve().parents[1] / "src" / "servegate"


def importers(module: str) -> list[str]:
    """The source files that import ``module`` (top level or in a function)."""
    found = []
    for path in sorted(SRC.rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            names = []
            if isinstance(node, ast.Import):
                names = [alias.name for alias in node.names]
            elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
                names = [node.module]
            if any(name == module or name.startswith(module + ".") for name in names):
                found.append(str(path.relative_to(SRC)))
                break
    return found


def test_only_telemetry_nvml_loads_nvml() -> None:
    """pynvml is imported by one module; the sampler, the campaign's GPU checks and the
    start history read the GPUs through it."""
    assert ["telemetry/nvml.py"] == importers("pynvml")


@pytest.mark.skipif(Nvml.open() is not None, reason="this machine has an NVIDIA GPU")
def test_without_a_gpu_nvml_is_none_and_says_why() -> None:
    """Without a driver (this machine), a session is None and the reason names NVML."""
    assert Nvml.open() is None
    assert "NVML" in unavailable_reason()
