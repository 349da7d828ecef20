"""Engine profiles: how each inference engine says ready, progressing or failed.

    from servegate.engines import get_profile
    profile = get_profile("sglang")
    profile.default_port, profile.probe_path, profile.metric_names["prompt_tokens"]

One module per engine holds its profile as plain data (strings from the engines'
sources, see docs/gate.md); this module only maps names to them.
"""

from __future__ import annotations

from collections.abc import Iterable

from servegate.engines import generic, llamacpp, sglang, tgi, trtllm, vllm
from servegate.engines.profile import METRIC_KEYS, EngineProfile, Phase, Signature
from servegate.errors import UsageError

__all__ = [
    "ENGINE_NAMES",
    "METRIC_KEYS",
    "EngineProfile",
    "Phase",
    "Signature",
    "engine_of_metrics",
    "get_profile",
]

_PROFILES: dict[str, EngineProfile] = {
    module.PROFILE.name: module.PROFILE for module in (sglang, vllm, llamacpp, tgi, trtllm, generic)
}

ENGINE_NAMES: tuple[str, ...] = tuple(_PROFILES)


def get_profile(name: str) -> EngineProfile:
    """The profile of engine ``name``; UsageError naming the choices when unknown."""
    try:
        return _PROFILES[name]
    except KeyError:
        raise UsageError(
            f"unknown engine {name!r}: pass --engine with one of {', '.join(ENGINE_NAMES)}."
        ) from None


def engine_of_metrics(names: Iterable[str]) -> str | None:
    """The engine whose ``metric_prefix`` starts one of ``names`` (a server's /metrics)."""
    names = list(names)
    for profile in _PROFILES.values():
        prefix = profile.metric_prefix
        if prefix and any(name.startswith(prefix) for name in names):
            return profile.name
    return None
