"""How much of a model's files the page cache holds (``mincore``), and where they are.

A cold start reads the weights from disk (or the network); a warm one finds them in
memory. ``resident(paths)`` maps each file without reading it (``mmap``, no page is
touched) and asks the kernel which pages are in memory (``mincore``), through libc via
ctypes: Linux only; elsewhere it says it could not tell. At most ``MAX_BYTES`` of files
are examined, biggest first, and the answer says when it stopped short.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import mmap
import os
import sys
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

__all__ = ["MAX_BYTES", "PageCache", "model_files", "resident"]

MAX_BYTES = 256 << 30  # at most 256 GiB examined: about 3 s where all of it is in memory
_CHUNK = 1 << 30  # mincore one GiB at a time: a 256 KiB vector
_PROT_READ = 0x1
_MAP_SHARED = 0x01
_LOW_BIT = bytes(i & 1 for i in range(256))  # mincore: bit 0 says resident, the rest reserved
_WEIGHTS = (".safetensors", ".bin", ".gguf", ".pt", ".pth", ".engine", ".plan", ".npz")


@dataclass(frozen=True, slots=True, kw_only=True)
class PageCache:
    """The model's files and how many of their bytes were in the page cache."""

    files: int
    bytes: int
    resident_bytes: int
    truncated: bool  # stopped at MAX_BYTES
    seconds: float  # what the measurement cost

    @property
    def pct(self) -> float | None:
        """Resident share in percent, None without files."""
        return None if self.bytes == 0 else round(100.0 * self.resident_bytes / self.bytes, 1)

    def to_json(self) -> dict[str, Any]:
        """The measurement as a JSON object."""
        return {
            "files": self.files,
            "bytes": self.bytes,
            "resident_bytes": self.resident_bytes,
            "pct": self.pct,
            "truncated": self.truncated,
            "seconds": round(self.seconds, 4),
        }


def _libc() -> ctypes.CDLL | None:
    if not sys.platform.startswith("linux"):
        return None
    libc = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6", use_errno=True)
    libc.mmap.restype = ctypes.c_void_p
    libc.mmap.argtypes = (
        ctypes.c_void_p,
        ctypes.c_size_t,
        ctypes.c_int,
        ctypes.c_int,
        ctypes.c_int,
        ctypes.c_long,
    )
    libc.munmap.argtypes = (ctypes.c_void_p, ctypes.c_size_t)
    libc.mincore.argtypes = (ctypes.c_void_p, ctypes.c_size_t, ctypes.c_void_p)
    return libc


_LIBC = _libc()
_FAILED = ctypes.c_void_p(-1).value


def _resident_file(libc: ctypes.CDLL, path: str, size: int) -> int:
    """Bytes of ``path`` (``size`` long) in the page cache; 0 when it cannot be mapped."""
    page = mmap.PAGESIZE
    try:
        fd = os.open(path, os.O_RDONLY | os.O_CLOEXEC)
    except OSError:
        return 0
    try:
        address = libc.mmap(None, size, _PROT_READ, _MAP_SHARED, fd, 0)
    finally:
        os.close(fd)
    if address is None or address == _FAILED:
        return 0
    pages = 0
    try:
        offset = 0
        while offset < size:
            length = min(_CHUNK, size - offset)
            count = (length + page - 1) // page
            vector = (ctypes.c_ubyte * count)()
            if libc.mincore(ctypes.c_void_p(address + offset), length, vector) != 0:
                return 0
            pages += bytes(vector).translate(_LOW_BIT).count(1)
            offset += length
    finally:
        libc.munmap(ctypes.c_void_p(address), size)
    return min(size, pages * page)


def resident(paths: Sequence[Path]) -> PageCache | None:
    """Measure ``paths`` (biggest first, up to MAX_BYTES); None where mincore is missing."""
    if _LIBC is None:
        return None
    started = time.perf_counter()
    sized = []
    for path in paths:
        try:
            sized.append((path.stat().st_size, str(path)))
        except OSError:
            continue
    sized.sort(reverse=True)
    total = kept = files = 0
    truncated = False
    for size, name in sized:
        if size == 0:
            continue
        if total + size > MAX_BYTES:
            truncated = True
            break
        total += size
        files += 1
        kept += _resident_file(_LIBC, name, size)
    return PageCache(
        files=files,
        bytes=total,
        resident_bytes=kept,
        truncated=truncated,
        seconds=time.perf_counter() - started,
    )


def model_files(model: str | None, env: Mapping[str, str] | None = None) -> list[Path]:
    """The files of ``model``: a file, a folder (weights in it, else all its files), or a
    Hugging Face Hub id found in the hub cache (``$HF_HUB_CACHE``, ``$HF_HOME/hub``,
    ``~/.cache/huggingface/hub``; its newest snapshot). Nothing found: an empty list."""
    if not model:
        return []
    env = os.environ if env is None else env
    path = Path(os.path.expanduser(model))
    if path.is_file():
        return [path]
    if not path.is_dir():
        path = _hub_snapshot(model, env) or path
        if not path.is_dir():
            return []
    found = [p for p in sorted(path.rglob("*")) if p.is_file()]
    weights = [p for p in found if p.suffix in _WEIGHTS]
    return weights or found


def _hub_snapshot(model: str, env: Mapping[str, str]) -> Path | None:
    if model.count("/") != 1 or model.startswith(("/", ".", "~")):
        return None
    home = env.get("HOME") or os.path.expanduser("~")
    hub = env.get("HF_HUB_CACHE") or env.get("HUGGINGFACE_HUB_CACHE")
    if not hub:
        hf_home = env.get("HF_HOME") or os.path.join(
            env.get("XDG_CACHE_HOME") or os.path.join(home, ".cache"), "huggingface"
        )
        hub = os.path.join(hf_home, "hub")
    snapshots = Path(hub) / f"models--{model.replace('/', '--')}" / "snapshots"
    try:
        candidates = [p for p in snapshots.iterdir() if p.is_dir()]
    except OSError:
        return None
    return max(candidates, key=lambda p: p.stat().st_mtime) if candidates else None
