"""One home per OS facility: NVML in telemetry/nvml.py, Linux's prctl in _os.py.

A second copy of a facility's wrapper drifts from the first (which errors it catches,
whether it shuts down); so the source is searched: no other module may load it.
"""

from __future__ import annotations

import ast
import os
import signal
import subprocess
import sys
from pathlib import Path

import psutil
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


def test_only_os_calls_prctl() -> None:
    """prctl is called in _os.py alone, the code that children run from a string included."""
    callers = [
        str(path.relative_to(SRC))
        for path in sorted(SRC.rglob("*.py"))
        if "prctl(" in path.read_text() and path.relative_to(SRC) != Path("_os.py")
    ]
    assert [] == callers


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="prctl is Linux's")
def test_a_child_that_asked_dies_with_its_parent_and_carries_its_name() -> None:
    """A grandchild that called die_with_parent(SIGKILL) and set_name dies when its parent
    is SIGKILLed, and was named meanwhile."""
    child = (
        "import signal, sys, time\n"
        "from servegate._os import die_with_parent, set_name\n"
        "assert die_with_parent(signal.SIGKILL) and set_name('sg-os-test')\n"
        "print('armed', flush=True)\n"
        "time.sleep(300)\n"
    )
    parent = (
        "import subprocess, sys\n"
        "child = subprocess.Popen([sys.executable, '-c', sys.argv[1]], stdout=subprocess.PIPE)\n"
        "assert child.stdout.readline() == b'armed\\n'\n"
        "print(child.pid, flush=True)\n"
        "child.wait()\n"
    )
    with subprocess.Popen(
        [sys.executable, "-c", parent, child], stdout=subprocess.PIPE, text=True
    ) as proc:
        assert proc.stdout is not None
        pid = int(proc.stdout.readline())
        grandchild = psutil.Process(pid)
        try:
            assert "sg-os-test" == grandchild.name()
            proc.send_signal(signal.SIGKILL)
            proc.wait()
            grandchild.wait(timeout=60)  # psutil.TimeoutExpired: it outlived its parent
        finally:
            if grandchild.is_running():
                os.kill(pid, signal.SIGKILL)
