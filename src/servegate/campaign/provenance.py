"""Where a result came from: tool and engine versions, the git commit, the host.

A number in the store is only comparable with another when one knows what produced it:
the servegate and Python versions, the engine's package version (and the torch, triton
and flashinfer next to it, since a stack change is a common variant), and the git
commit of the working directory the campaign ran from.
"""

from __future__ import annotations

import json
import platform
import subprocess
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from servegate._version import __version__

__all__ = ["engine_versions", "git_commit", "tool_versions"]

# packages whose versions are recorded when the server is a Python module
_STACK = ("torch", "triton", "flashinfer-python", "sgl-kernel", "vllm", "sglang")
_PROBE = (
    "import importlib.metadata as m, json, sys\n"
    "out = {}\n"
    "for name in sys.argv[1:]:\n"
    "    try:\n"
    "        out[name] = m.version(name)\n"
    "    except m.PackageNotFoundError:\n"
    "        pass\n"
    "print(json.dumps(out))\n"
)
_TIMEOUT_S = 15.0


def tool_versions() -> dict[str, Any]:
    """servegate, Python and platform versions of the runner itself."""
    return {
        "servegate": __version__,
        "python": platform.python_version(),
        "platform": platform.platform(),
        "hostname": platform.node(),
    }


def engine_versions(argv: Sequence[str], env: dict[str, str] | None = None) -> dict[str, str]:
    """Package versions in the interpreter of a ``PYTHON -m package ...`` server command.

    Reads installed metadata only (no import of torch), so it takes a fraction of a
    second; other commands (a binary such as ``llama-server``) give an empty dict.
    """
    if len(argv) < 3 or argv[1] != "-m" or "python" not in Path(argv[0]).name:
        return {}
    package = argv[2].split(".")[0]
    names = [package.replace("_", "-"), *(n for n in _STACK if n != package)]
    try:
        out = subprocess.run(
            [argv[0], "-c", _PROBE, *names],
            capture_output=True,
            encoding="utf-8",
            errors="replace",  # file names and versions as printed, in any encoding
            timeout=_TIMEOUT_S,
            env=env,
            check=False,
        )
        found = json.loads(out.stdout) if out.returncode == 0 else {}
    except (OSError, subprocess.TimeoutExpired, json.JSONDecodeError):
        return {}
    if not isinstance(found, dict):
        return {}
    return {str(k): str(v) for k, v in found.items()}


def git_commit(directory: Path | None = None) -> str | None:
    """The commit checked out in ``directory`` (``+dirty`` with local changes), or None."""
    cwd = str(directory or Path.cwd())
    try:
        head = subprocess.run(
            ["git", "-C", cwd, "rev-parse", "HEAD"],
            capture_output=True,
            encoding="utf-8",
            errors="replace",  # file names and versions as printed, in any encoding
            timeout=_TIMEOUT_S,
            check=False,
        )
        if head.returncode != 0:
            return None
        dirty = subprocess.run(
            ["git", "-C", cwd, "status", "--porcelain", "--untracked-files=no"],
            capture_output=True,
            encoding="utf-8",
            errors="replace",  # file names and versions as printed, in any encoding
            timeout=_TIMEOUT_S,
            check=False,
        )
    except (OSError, subprocess.TimeoutExpired):
        return None
    commit = head.stdout.strip()
    return f"{commit}+dirty" if dirty.returncode == 0 and dirty.stdout.strip() else commit
