"""The compile and JIT caches the engines fill on a cold start, measured before and after.

Where each cache lives, with the environment variables that move it (read from the
engines' and libraries' own sources):

- ``flashinfer``: ``$FLASHINFER_WORKSPACE_BASE/.cache/flashinfer`` (base: the home folder)
- ``triton``: ``$TRITON_CACHE_DIR``, else ``$TRITON_HOME/.triton/cache`` (home: ``~``)
- ``torchinductor``: ``$TORCHINDUCTOR_CACHE_DIR``, else ``$TMPDIR/torchinductor_$USER``
- ``vllm_torch_compile``: ``$VLLM_CACHE_ROOT/torch_compile_cache``, the root defaulting
  to ``$XDG_CACHE_HOME/vllm`` (``~/.cache/vllm``)
- ``deep_gemm``: ``$SGLANG_DG_CACHE_DIR`` / ``$SGL_DG_CACHE_DIR`` / ``$DG_JIT_CACHE_DIR``,
  else ``~/.cache/deep_gemm`` (SGLang's DeepGEMM JIT kernels)
- ``sglang``: ``$SGLANG_CACHE_DIR``, else ``~/.cache/sglang`` (newer SGLang keeps its
  DeepGEMM kernels there)
- ``tvm_ffi``: ``$TVM_FFI_CACHE_DIR``, else ``~/.cache/tvm-ffi`` (newer FlashInfer's JIT)
- ``torch_extensions``: ``$TORCH_EXTENSIONS_DIR``, else ``$XDG_CACHE_HOME/torch_extensions``
  (older FlashInfer and other JIT extensions)
- ``cuda``: ``$CUDA_CACHE_PATH``, else ``~/.nv/ComputeCache`` (the driver's PTX JIT cache)

This is the one map of those folders: the campaign's preflight looks for stale JIT
locks in the same folders (``lock_dirs``).

The server's environment (the caller's, plus ``--env``) decides, as it does for the
engine. A walk stops at ``MAX_FILES`` files and says so (``truncated``).
"""

from __future__ import annotations

import os
import tempfile
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

__all__ = [
    "ENGINE_CACHES",
    "MAX_FILES",
    "CacheState",
    "cache_paths",
    "engine_caches",
    "lock_dirs",
    "measure",
]

MAX_FILES = 200_000

# the caches each engine's start can fill (generic: every one of them)
ENGINE_CACHES: dict[str, tuple[str, ...]] = {
    "vllm": ("vllm_torch_compile", "torchinductor", "triton", "flashinfer", "tvm_ffi", "cuda"),
    "sglang": (
        "flashinfer",
        "tvm_ffi",
        "triton",
        "torchinductor",
        "deep_gemm",
        "sglang",
        "torch_extensions",
        "cuda",
    ),
    "trtllm": ("flashinfer", "tvm_ffi", "triton", "torchinductor", "torch_extensions", "cuda"),
    "tgi": ("triton", "torchinductor", "torch_extensions", "cuda"),
    "llamacpp": ("cuda",),
}
_ALL = (
    "vllm_torch_compile",
    "torchinductor",
    "triton",
    "flashinfer",
    "deep_gemm",
    "sglang",
    "tvm_ffi",
    "torch_extensions",
    "cuda",
)


@dataclass(frozen=True, slots=True, kw_only=True)
class CacheState:
    """One cache folder at one moment: how many files and bytes it holds."""

    name: str
    path: str
    files: int  # 0 when the folder does not exist
    bytes: int
    truncated: bool = False  # the walk stopped at MAX_FILES

    @property
    def empty(self) -> bool:
        """True when the folder is missing or holds no file."""
        return self.files == 0

    def to_json(self) -> dict[str, Any]:
        """The state as a JSON object."""
        return {
            "name": self.name,
            "path": self.path,
            "files": self.files,
            "bytes": self.bytes,
            "truncated": self.truncated,
        }

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> CacheState:
        """Rebuild from ``to_json()`` output."""
        return cls(
            name=str(data["name"]),
            path=str(data["path"]),
            files=int(data["files"]),
            bytes=int(data["bytes"]),
            truncated=bool(data.get("truncated", False)),
        )


def _home(env: Mapping[str, str]) -> str:
    return env.get("HOME") or os.path.expanduser("~")


def _xdg_cache(env: Mapping[str, str]) -> str:
    return env.get("XDG_CACHE_HOME") or os.path.join(_home(env), ".cache")


def _user(env: Mapping[str, str]) -> str:
    try:
        import getpass

        name = env.get("USER") or getpass.getuser()
    except (KeyError, OSError):
        name = f"uid_{os.getuid()}"
    return "".join("_" if ch in '\\/:*?"<>|' else ch for ch in name)


def _vllm_root(env: Mapping[str, str]) -> str:
    return env.get("VLLM_CACHE_ROOT") or os.path.join(_xdg_cache(env), "vllm")


def cache_paths(env: Mapping[str, str] | None = None) -> dict[str, Path]:
    """Every known cache's folder for a server started with ``env`` (default: ours)."""
    env = os.environ if env is None else env
    home = _home(env)
    vllm_root = _vllm_root(env)
    triton_home = env.get("TRITON_HOME") or home
    tmp = env.get("TMPDIR") or tempfile.gettempdir()
    paths = {
        "vllm_torch_compile": os.path.join(vllm_root, "torch_compile_cache"),
        "torchinductor": env.get("TORCHINDUCTOR_CACHE_DIR")
        or os.path.join(tmp, f"torchinductor_{_user(env)}"),
        "triton": env.get("TRITON_CACHE_DIR") or os.path.join(triton_home, ".triton", "cache"),
        "flashinfer": os.path.join(
            env.get("FLASHINFER_WORKSPACE_BASE") or home, ".cache", "flashinfer"
        ),
        "deep_gemm": env.get("SGLANG_DG_CACHE_DIR")
        or env.get("SGL_DG_CACHE_DIR")
        or env.get("DG_JIT_CACHE_DIR")
        or os.path.join(home, ".cache", "deep_gemm"),
        "sglang": env.get("SGLANG_CACHE_DIR") or os.path.join(home, ".cache", "sglang"),
        "tvm_ffi": env.get("TVM_FFI_CACHE_DIR") or os.path.join(home, ".cache", "tvm-ffi"),
        "torch_extensions": env.get("TORCH_EXTENSIONS_DIR")
        or os.path.join(_xdg_cache(env), "torch_extensions"),
        "cuda": env.get("CUDA_CACHE_PATH") or os.path.join(home, ".nv", "ComputeCache"),
    }
    return {name: Path(os.path.expanduser(path)) for name, path in paths.items()}


def lock_dirs(env: Mapping[str, str] | None = None) -> list[Path]:
    """The folders where a JIT build of a server started with ``env`` can leave a lock.

    Every cache of ``cache_paths`` but the driver's (``cuda`` holds no lock files), with
    vLLM's whole cache root in place of its compile cache (one folder of that root).
    """
    env = os.environ if env is None else env
    paths = cache_paths(env)
    paths["vllm_torch_compile"] = Path(os.path.expanduser(_vllm_root(env)))
    del paths["cuda"]
    found: list[Path] = []
    for path in paths.values():
        if path not in found:
            found.append(path)
    return found


def engine_caches(engine: str) -> tuple[str, ...]:
    """The names of the caches ``engine``'s start can fill."""
    return ENGINE_CACHES.get(engine, _ALL)


def measure(
    engine: str, env: Mapping[str, str] | None = None, *, names: Sequence[str] | None = None
) -> tuple[CacheState, ...]:
    """Walk the engine's caches (or ``names``) now: files and bytes in each."""
    paths = cache_paths(env)
    return tuple(_walk(name, paths[name]) for name in (names or engine_caches(engine)))


def _walk(name: str, root: Path) -> CacheState:
    files = size = 0
    truncated = False
    stack = [str(root)]
    seen: set[tuple[int, int]] = set()
    while stack and not truncated:
        folder = stack.pop()
        try:
            with os.scandir(folder) as entries:
                for entry in entries:
                    try:
                        if entry.is_dir(follow_symlinks=False):
                            stat = entry.stat(follow_symlinks=False)
                            if (stat.st_dev, stat.st_ino) not in seen:
                                seen.add((stat.st_dev, stat.st_ino))
                                stack.append(entry.path)
                        elif entry.is_file(follow_symlinks=False):
                            files += 1
                            size += entry.stat(follow_symlinks=False).st_size
                            if files >= MAX_FILES:
                                truncated = True
                                break
                    except OSError:
                        continue
        except OSError:
            continue
    return CacheState(name=name, path=str(root), files=files, bytes=size, truncated=truncated)


def timed_measure(
    engine: str, env: Mapping[str, str] | None = None
) -> tuple[tuple[CacheState, ...], float]:
    """``measure`` and the seconds it took."""
    started = time.perf_counter()
    states = measure(engine, env)
    return states, time.perf_counter() - started
