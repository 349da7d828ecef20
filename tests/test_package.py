"""The package's public face: exports, entry points, help text."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from tests.gate.helpers import FAKE

import servegate
from servegate.cli import COMMANDS

ROOT = Path(__file__).resolve().parents[1]

# In a fresh interpreter: each name of __all__ as the kind of thing its docs say it is,
# then every public name the module holds that is not a submodule (nor a __future__ flag)
KINDS = """
import __future__, inspect, json, types
import servegate
from servegate import *  # every name of __all__ resolves
from servegate.errors import ServegateError

def kind(value):
    if isinstance(value, type) and issubclass(value, ServegateError):
        return "error"
    if isinstance(value, type):
        return "class"
    if callable(value):
        return "callable " + str(inspect.signature(value).return_annotation)
    return type(value).__name__

kinds = {name: kind(getattr(servegate, name)) for name in servegate.__all__}
public = sorted(
    name for name, value in vars(servegate).items()
    if not name.startswith("_") and name not in servegate.__all__
    and not isinstance(value, (types.ModuleType, __future__._Feature))
)
print(json.dumps({"all": servegate.__all__, "kinds": kinds, "others": public,
                  "dir": sorted(set(servegate.__all__) - set(dir(servegate)))}))
"""


def test_all_is_sorted_and_importable() -> None:
    """__all__ is sorted and every name in it exists."""
    assert list(servegate.__all__) == sorted(servegate.__all__)
    for name in servegate.__all__:
        assert hasattr(servegate, name), name


def test_public_names_are_all_and_each_is_what_its_docs_say() -> None:
    """The module's public names are exactly __all__ (dir() lists them too), and each is
    of its documented kind: the errors, classes, launch and wait returning a Server and
    a Verdict, the version a string."""
    done = subprocess.run(
        [sys.executable, "-c", KINDS], capture_output=True, text=True, check=False, cwd=ROOT
    )
    assert done.returncode == 0, done.stderr
    found = json.loads(done.stdout)
    errors = [name for name in found["all"] if name.endswith(("Error", "Crashed", "Timeout"))]
    errors.append("ServerNotFound")
    expected = {
        **dict.fromkeys(errors, "error"),
        "Server": "class",
        "StopReport": "class",
        "Verdict": "class",
        "launch": "callable Server",
        "wait": "callable Verdict",
        "__version__": "str",
    }
    assert expected == found["kinds"]
    assert [] == found["others"]
    assert [] == found["dir"]


def test_launch_starts_a_server_after_an_import_of_its_package(port: int) -> None:
    """``servegate.launch(cmd, ...)`` starts and gates a server even after an ``import
    servegate.launch.tree`` (which makes the package that attribute of ``servegate``)."""
    code = (
        "import sys\n"
        "import servegate.launch.tree\n"
        "import servegate\n"
        "py, fake, port = sys.argv[1:]\n"
        "with servegate.launch([py, fake, 'sglang', port], engine='sglang', port=int(port),\n"
        "                      timeout_s=60) as server:\n"
        "    print(server.verdict.status, server.port)\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", code, sys.executable, FAKE, str(port)],
        capture_output=True,
        text=True,
        check=False,
        cwd=ROOT,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr[-2000:]
    assert f"ready {port}" == done.stdout.strip()


def test_every_command_has_help_with_an_example() -> None:
    """Each command's --help exits 0 and ends with a runnable example."""
    for name in COMMANDS:
        out = subprocess.run(
            [sys.executable, "-m", "servegate", name, "--help"],
            capture_output=True,
            text=True,
            check=False,
        )
        assert out.returncode == 0, (name, out.stderr)
        assert "Example" in out.stdout, name
        assert "servegate " + name in out.stdout, name


def test_unknown_command_exits_2() -> None:
    """An unknown command is a usage error: exit 2."""
    out = subprocess.run(
        [sys.executable, "-m", "servegate", "no-such-command"],
        capture_output=True,
        text=True,
        check=False,
    )
    assert out.returncode == 2
