"""``servegate remote install HOST``: this servegate, with its dependencies, on a host.

The wheels are packed here from this installation (``build.wheels``) and copied over
SSH (a tar stream on ssh's stdin); the host needs no internet, no pip and no compiler:
only a Python of the same minor version and machine type, which makes the venv
(``python -m venv --without-pip``) that pip, run from its own wheel, installs into.
Dependencies the venv already has at the same version are not copied again. What a
login shell prints before servegate's own output (a banner of ``~/.bashrc``) is skipped
with a warning. A copy or an install that fails (a full disk) leaves no wheels behind.
"""

from __future__ import annotations

import io
import json
import platform
import shlex
import tarfile
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from servegate._version import __version__
from servegate.errors import ServegateError, UsageError
from servegate.remote.build import PACKAGE, build_id, normalize, wheels
from servegate.remote.client import banner_warning, connect
from servegate.remote.hosts import Host
from servegate.remote.transport import run

__all__ = ["Installed", "install"]

_DIR = 'd="${SERVEGATE_REMOTE_DIR:-$HOME/.servegate}"; '

# run by the host's Python: what it is, and what servegate's venv holds
_PROBE = """
import json, os, platform, subprocess, sys
d = sys.argv[1]
py = os.path.join(d, "venv", "bin", "python")
venv = None
if os.access(py, os.X_OK):
    code = ("import json, platform, importlib.metadata as m; print(json.dumps({'python': "
            "platform.python_version(), 'dists': {x.metadata['Name']: x.version "
            "for x in m.distributions()}}))")
    done = subprocess.run([py, "-c", code], capture_output=True, text=True)
    if done.returncode == 0:
        venv = json.loads(done.stdout)
print(json.dumps({"python": platform.python_version(), "machine": platform.machine(),
                  "dir": d, "venv": venv}))
"""

_UNTAR = """
import sys, tarfile
with tarfile.open(fileobj=sys.stdin.buffer, mode="r|") as tar:
    if hasattr(tarfile, "data_filter"):
        tar.extractall(sys.argv[1], filter="data")
    else:
        tar.extractall(sys.argv[1])
"""


@dataclass(frozen=True, slots=True)
class Installed:
    """What ``install`` did."""

    host: str
    version: str
    build: str
    path: str  # the venv on the host
    python: str
    copied: tuple[str, ...]  # the wheels copied
    copied_bytes: int
    duration_s: float

    def to_json(self) -> dict[str, Any]:
        """The result as a JSON object."""
        return {
            "schema": "servegate.remote-install/1",
            "host": self.host,
            "version": self.version,
            "build": self.build,
            "path": self.path,
            "python": self.python,
            "copied": list(self.copied),
            "copied_bytes": self.copied_bytes,
            "duration_s": round(self.duration_s, 3),
        }

    def line(self) -> str:
        """One line for people."""
        size = self.copied_bytes / 1e6
        return (
            f"servegate {self.version} (build {self.build}) installed on {self.host} in "
            f"{self.path} ({len(self.copied)} wheels, {size:.1f} MB copied, "
            f"{self.duration_s:.1f}s)"
        )


def _sh(line: str) -> str:
    """A POSIX shell line, whatever the login shell of the remote user is."""
    return "exec sh -c " + shlex.quote(_DIR + line)


def _minor(version: str) -> str:
    return ".".join(version.split(".")[:2])


def install(
    host: Host, *, python: str = "python3", on_note: Callable[[str], None] | None = None
) -> Installed:
    """Install this servegate on ``host`` in a venv of its own; what was done.

    Raises:
        UsageError: the host's Python cannot take these wheels (another minor version or
            machine type), or ssh could not connect (host key, login).
    """
    started = time.monotonic()
    note = on_note or (lambda text: None)
    py = shlex.quote(python)
    here = (_minor(platform.python_version()), platform.machine())
    try:
        printed = run(host, _sh(f'exec {py} -c {shlex.quote(_PROBE)} "$d"'))
    except UsageError:
        raise  # ssh's own failures (host key, login) say what to do
    except ServegateError as exc:
        raise UsageError(
            f"{python} did not run on {host.spec} ({exc}): pass --python with the path of "
            f"a Python {here[0]} there."
        ) from None
    *banner, last = printed.rstrip(b"\n").split(b"\n") or [b""]
    try:
        probe = json.loads(last)
    except ValueError:
        raise UsageError(
            f"{python} on {host.spec} printed no answer servegate can read (last line: "
            f"{last[:80]!r}): pass --python with the path of a Python {here[0]} there."
        ) from None
    if banner:
        note(banner_warning(host, banner))
    there = (_minor(probe["python"]), probe["machine"])
    if here != there:
        raise UsageError(
            f"{python} on {host.spec} is Python {there[0]} on {there[1]}, and the wheels from "
            f"here are for Python {here[0]} on {here[1]}: pass --python with a Python "
            f"{here[0]} of {host.spec} (e.g. --python python{here[0]})."
        )
    venv = probe.get("venv")
    fresh = venv is None or _minor(venv["python"]) != here[0]
    have = {} if fresh else {normalize(k): v for k, v in venv["dists"].items()}
    packed = wheels(skip=have)
    size = sum(len(w.data) for w in packed)
    note(f"copying {len(packed)} wheels ({size / 1e6:.1f} MB) to {host.spec}")
    archive = io.BytesIO()
    with tarfile.open(fileobj=archive, mode="w") as tar:
        for wheel in packed:
            info = tarfile.TarInfo(wheel.filename)
            info.size = len(wheel.data)
            info.mode = 0o644
            tar.addfile(info, io.BytesIO(wheel.data))
    _run_cleaning(
        host,
        f'rm -rf "$d/wheels" && mkdir -p "$d/wheels" && {py} -c {shlex.quote(_UNTAR)} "$d/wheels"',
        where=probe["dir"],
        size=size,
        input_data=archive.getvalue(),
    )
    own = next(w.filename for w in packed if w.name == PACKAGE)
    pip = next(w.filename for w in packed if w.name == "pip")
    # pip runs from its wheel and stays out of the venv (so it is always copied)
    installed = " ".join(shlex.quote(w.filename) for w in packed if w.name != "pip")
    pip_install = (
        f'"$d/venv/bin/python" {shlex.quote(pip)}/pip install --no-index --find-links . '
        "--quiet --disable-pip-version-check --no-warn-script-location"
    )
    note(f"installing servegate {__version__} in {probe['dir']}/venv")
    _run_cleaning(
        host,
        ('rm -rf "$d/venv"; ' if fresh else "")
        + f'( [ -x "$d/venv/bin/python" ] || {py} -m venv --without-pip "$d/venv" ) && '
        # every copied wheel named: the venv takes these versions, also where an older
        # one there would satisfy servegate's requirements
        + f'cd "$d/wheels" && {pip_install} {installed} && '
        + f"{pip_install} --no-deps --force-reinstall {shlex.quote(own)} && "
        + 'rm -rf "$d/wheels"',
        where=probe["dir"],
        size=size,
    )
    agent = connect(host, warn=note)  # checks that the remote now runs this very build
    agent.close()
    return Installed(
        host=host.spec,
        version=__version__,
        build=build_id(),
        path=f"{probe['dir']}/venv",
        python=probe["python"],
        copied=tuple(w.filename for w in packed),
        copied_bytes=size,
        duration_s=time.monotonic() - started,
    )


def _run_cleaning(host: Host, line: str, *, where: str, size: int, input_data: bytes = b"") -> None:
    """Run ``line`` on ``host``; when it fails the wheels' folder is removed, and a full
    disk there is said as such, with the room the install needs."""
    try:
        cleaning = f'( {line} ) || {{ code=$?; rm -rf "$d/wheels"; exit $code; }}'
        run(host, _sh(cleaning), input_data=input_data)
    except UsageError:
        raise
    except ServegateError as exc:
        if "No space left on device" in str(exc) or "Disk quota exceeded" in str(exc):
            raise UsageError(
                f"no space left on {host.spec} in {where} ({exc}); nothing of the copy was "
                f"left there: free about {2 * size / 1e6:.0f} MB there (df -h {where}), or set "
                f"SERVEGATE_REMOTE_DIR for that host to a folder on another disk, and run "
                f"servegate remote install {host.spec} again."
            ) from None
        raise
