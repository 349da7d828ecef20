"""This installation as wheels: servegate itself and its dependencies, for another host.

Nothing is downloaded: each wheel is packed from what is installed here. servegate's own
wheel is packed from its package folder (an editable install included); a dependency's
from the files its ``RECORD`` lists. The wheels keep their tags, so they install on a
host with the same Python minor version and machine type (``remote install`` checks).

``build_id()`` names this exact code: a hash of the package's files, compared with the
remote's on every connection, so that an edited tree is never run remotely as if it were
the installed one.
"""

from __future__ import annotations

import base64
import functools
import hashlib
import io
import os
import re
import zipfile
from collections.abc import Iterator
from dataclasses import dataclass
from importlib import metadata
from pathlib import Path

from packaging.markers import Marker

from servegate._version import __version__
from servegate.errors import ServegateError

__all__ = ["Wheel", "build_id", "dependencies", "package_files", "wheels"]

PACKAGE = "servegate"
_SKIP_DIST_FILES = {"RECORD", "INSTALLER", "REQUESTED", "direct_url.json"}
_NAME = re.compile(r"^\s*([A-Za-z0-9][A-Za-z0-9._-]*)")


@dataclass(frozen=True, slots=True)
class Wheel:
    """One wheel packed here: its file name, distribution, version and bytes."""

    filename: str
    name: str  # normalized distribution name
    version: str
    data: bytes


def normalize(name: str) -> str:
    """A distribution name as pip compares them (PEP 503)."""
    return re.sub(r"[-_.]+", "-", name).lower()


def package_files() -> list[tuple[str, Path]]:
    """servegate's own files, ``(path in the wheel, file)``, sorted; caches left out."""
    root = Path(__file__).resolve().parents[1]
    found = []
    for folder, dirs, files in os.walk(root):
        dirs[:] = sorted(d for d in dirs if d != "__pycache__")
        for file in files:
            if file.endswith((".pyc", ".pyo")):
                continue
            path = Path(folder) / file
            found.append((f"{PACKAGE}/{path.relative_to(root).as_posix()}", path))
    return sorted(found)


@functools.cache
def build_id() -> str:
    """A short hash of servegate's files: equal on two hosts when the code is the same."""
    digest = hashlib.sha256()
    for arcname, path in package_files():
        digest.update(arcname.encode() + b"\0" + path.read_bytes() + b"\0")
    return digest.hexdigest()[:12]


def _applies(marker: str) -> bool:
    """Whether a requirement's environment marker holds here (``packaging``, as pip)."""
    if not marker.strip():
        return True
    return bool(Marker(marker).evaluate())


def dependencies() -> list[metadata.Distribution]:
    """The installed distributions servegate's core needs, transitively (no extras)."""
    seen: dict[str, metadata.Distribution] = {}
    todo = [PACKAGE]
    while todo:
        name = todo.pop()
        for requirement in metadata.requires(name) or []:
            spec, _, marker = requirement.partition(";")
            if "extra" in marker or not _applies(marker):
                continue
            match = _NAME.match(spec)
            if match is None:
                continue
            dep = normalize(match.group(1))
            if dep in seen:
                continue
            try:
                dist = metadata.distribution(dep)
            except metadata.PackageNotFoundError:
                if marker.strip():
                    continue  # a requirement for another platform or Python
                raise ServegateError(
                    f"{dep}, which servegate needs, is not installed here: "
                    f"pip install {dep}, then run servegate remote install again."
                ) from None
            seen[dep] = dist
            todo.append(dep)
    return [seen[name] for name in sorted(seen)]


def _record_line(arcname: str, data: bytes) -> str:
    digest = base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()
    return f"{arcname},sha256={digest},{len(data)}"


def _pack(files: Iterator[tuple[str, bytes]], dist_info: str) -> bytes:
    """A wheel's bytes from its files; RECORD written last."""
    buffer = io.BytesIO()
    records = []
    with zipfile.ZipFile(buffer, "w", zipfile.ZIP_DEFLATED, compresslevel=1) as zf:
        for arcname, data in files:
            zf.writestr(arcname, data)
            records.append(_record_line(arcname, data))
        records.append(f"{dist_info}/RECORD,,")
        zf.writestr(f"{dist_info}/RECORD", "\n".join(records) + "\n")
    return buffer.getvalue()


def _dist_info_files(dist: metadata.Distribution, dist_info: str) -> Iterator[tuple[str, bytes]]:
    """The metadata files of an installed distribution, as a wheel holds them."""
    for name in ("METADATA", "WHEEL", "entry_points.txt", "top_level.txt"):
        text = dist.read_text(name)
        if text is not None:
            yield f"{dist_info}/{name}", text.encode()


def _wheel_tag(dist: metadata.Distribution) -> str:
    """The first tag of an installed wheel (compatible here, since it is installed here)."""
    for line in (dist.read_text("WHEEL") or "").splitlines():
        if line.startswith("Tag:"):
            return line.split(":", 1)[1].strip()
    return "py3-none-any"


def _servegate_wheel() -> Wheel:
    dist = metadata.distribution(PACKAGE)
    dist_info = f"{PACKAGE}-{__version__}.dist-info"

    def files() -> Iterator[tuple[str, bytes]]:
        for arcname, path in package_files():
            yield arcname, path.read_bytes()
        yield from _dist_info_files(dist, dist_info)

    return Wheel(
        filename=f"{PACKAGE}-{__version__}-py3-none-any.whl",
        name=PACKAGE,
        version=__version__,
        data=_pack(files(), dist_info),
    )


def _repacked(dist: metadata.Distribution) -> Wheel:
    """An installed distribution as a wheel, from the files its RECORD lists."""
    name = dist.metadata["Name"]
    version = dist.version
    old_info = next(
        (f.parts[0] for f in dist.files or [] if f.parts[0].endswith(".dist-info")), None
    )
    if old_info is None or dist.files is None:
        raise ServegateError(
            f"{name} {version} has no file list here (RECORD): reinstall it with pip, "
            "then run servegate remote install again."
        )
    dist_info = f"{re.sub(r'[-.]+', '_', name)}-{version}.dist-info"

    def files() -> Iterator[tuple[str, bytes]]:
        for file in dist.files or []:
            parts = file.parts
            if parts[0] == ".." or "__pycache__" in parts:
                continue  # scripts (pip writes them again) and caches
            if parts[0] == old_info:
                if parts[-1] in _SKIP_DIST_FILES:
                    continue
                arcname = "/".join((dist_info, *parts[1:]))
            else:
                arcname = file.as_posix()
            path = Path(str(file.locate()))
            if path.is_file():
                yield arcname, path.read_bytes()

    stem = re.sub(r"[-.]+", "_", name)
    return Wheel(
        filename=f"{stem}-{version}-{_wheel_tag(dist)}.whl",
        name=normalize(name),
        version=version,
        data=_pack(files(), dist_info),
    )


def wheels(skip: dict[str, str] | None = None) -> list[Wheel]:
    """servegate's wheel and its dependencies' (with pip's, to install them), packed from
    this installation; ``skip`` maps names to versions the target already has."""
    skip = skip or {}
    found = [_servegate_wheel(), _repacked(metadata.distribution("pip"))]  # pip: always
    for dist in dependencies():
        if skip.get(normalize(dist.metadata["Name"])) != dist.version:
            found.append(_repacked(dist))
    return found
