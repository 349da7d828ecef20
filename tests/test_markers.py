"""Which tests a run selects: the tests of CI's own steps (``real_engine``, ``ray``) only
where ``-m`` names their marker, whatever else ``-m`` says (``-m "not slow"``)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
TINY = """
import pytest

def test_plain():
    pass

@pytest.mark.slow
def test_slow():
    pass

@pytest.mark.real_engine
def test_real_engine():
    pass

@pytest.mark.ray
class TestRay:
    def test_ray(self):
        pass
"""


def collected(tmp_path: Path, *args: str) -> list[str]:
    """The tests an inner pytest with this project's configuration collects from TINY."""
    file = tmp_path / "test_tiny.py"
    file.write_text(TINY)
    done = subprocess.run(
        [sys.executable, "-m", "pytest", "-c", str(ROOT / "pyproject.toml"),
         "--rootdir", str(ROOT), "-p", "tests.conftest", "-p", "no:cacheprovider",
         "--collect-only", "-q", *args, str(file)],
        capture_output=True, text=True, cwd=ROOT, timeout=120, check=False,
    )  # fmt: skip
    assert done.returncode == 0, done.stdout + done.stderr
    return sorted(line.split("::")[-1] for line in done.stdout.splitlines() if "::" in line)


@pytest.mark.parametrize(
    ("args", "expected"),
    [
        ((), ["test_plain", "test_slow"]),
        (("-m", "not slow"), ["test_plain"]),
        (("-m", "ray"), ["test_ray"]),
        (("-m", "real_engine"), ["test_real_engine"]),
        (("-m", "slow or ray"), ["test_ray", "test_slow"]),
    ],
)
def test_ci_steps_tests_run_only_where_m_names_them(
    tmp_path: Path, args: tuple[str, ...], expected: list[str]
) -> None:
    """-m "not slow" still leaves out the real-engine and Ray tests; -m ray and
    -m real_engine (CI's own steps) select them."""
    assert expected == collected(tmp_path, *args)
