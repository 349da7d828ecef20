"""The simulated inference engine: ``servegate sim``.

A real HTTP server process that starts, fails, serves and reports metrics the way
SGLang, vLLM or llama.cpp do, on a machine without a GPU.

    config = resolve(profile="fast", flags={"engine": "vllm", "port": 8123})
    exit_code = run(config)
"""

from __future__ import annotations

from servegate.sim.config import ENGINES, FAILURES, PHASES, SimConfig, resolve, shipped_profiles
from servegate.sim.lifecycle import run

__all__ = ["ENGINES", "FAILURES", "PHASES", "SimConfig", "resolve", "run", "shipped_profiles"]
