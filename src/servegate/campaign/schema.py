"""The campaign file's format, as pydantic models, and its validation errors as sentences.

Every table forbids unknown keys. A validation error becomes one ``ConfigError`` that
names the file, the line (when it can be found) and the key, and says what to do: the
closest allowed key for a misspelling, "add it" for a missing one, the value given for a
wrong type.
"""

from __future__ import annotations

import difflib
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from servegate.campaign.locate import loc_line
from servegate.errors import ConfigError

__all__ = [
    "BenchOverride",
    "BenchTable",
    "CampaignFile",
    "CampaignTable",
    "MatrixTable",
    "Scalar",
    "ServerTable",
    "VariantTable",
    "config_error",
]

Scalar = str | int | float | bool


# --- the file, as pydantic models (extra keys forbidden) ---------------------------------


class _Table(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True, strict=False)


class CampaignTable(_Table):
    """``[campaign]``: the name results are stored under, and the reference variant."""

    name: str = Field(min_length=1, max_length=200)
    baseline: str = Field(min_length=1)
    description: str = ""


class ServerTable(_Table):
    """``[server]``: how to start the server; variants change args, env or command."""

    engine: str = "generic"
    host: str = "local"
    command: str = Field(min_length=1)
    port: int | Literal["auto"] | None = None
    model: str | None = None
    env: dict[str, Scalar] = Field(default_factory=dict)
    cwd: str | None = None
    timeout_s: float = Field(default=900.0, gt=0)
    stall_s: float | None = Field(default=None, gt=0)
    stop_grace_s: float = Field(default=10.0, ge=0)
    release_timeout_s: float = Field(default=60.0, ge=0)
    ready: list[str] = Field(default_factory=list)  # extra ready-line regexes
    crash: list[str] = Field(default_factory=list)  # extra fatal-line regexes
    health_url: str | None = None  # probe this URL (placeholders allowed) instead


class BenchTable(_Table):
    """``[bench]``: the load points and how often each is measured."""

    api: Literal["completions", "chat"] = "completions"
    concurrency: list[int] | int = Field(default_factory=lambda: [1])
    rate: list[float] | float | None = None
    requests: int = Field(default=200, ge=1)
    duration_s: float | None = Field(default=None, gt=0)
    warmup: int = Field(default=8, ge=0)
    input_len: int = Field(default=1024, ge=1)
    output_len: int = Field(default=256, ge=1)
    dataset: str = "random"  # random, FILE.jsonl or sharegpt:FILE (relative to the file)
    repeats: int = Field(default=3, ge=1)
    seed: int = 0


class BenchOverride(_Table):
    """A variant's ``bench`` sub-table: only the settings it changes."""

    api: Literal["completions", "chat"] | None = None
    concurrency: list[int] | int | None = None
    rate: list[float] | float | None = None
    requests: int | None = Field(default=None, ge=1)
    duration_s: float | None = Field(default=None, gt=0)
    warmup: int | None = Field(default=None, ge=0)
    input_len: int | None = Field(default=None, ge=1)
    output_len: int | None = Field(default=None, ge=1)
    dataset: str | None = None
    repeats: int | None = Field(default=None, ge=1)
    seed: int | None = None


class VariantTable(_Table):
    """``[[variant]]``: one change against the template (args, env, command or bench)."""

    name: str = Field(min_length=1, max_length=100)
    description: str = ""
    args: str | list[str] = ""
    env: dict[str, Scalar] = Field(default_factory=dict)
    command: str | None = None
    vars: dict[str, Scalar] = Field(default_factory=dict)
    bench: BenchOverride | None = None


class MatrixTable(_Table):
    """``[matrix]``: every combination of the axes' values becomes one variant."""

    axes: dict[str, list[Scalar]]
    name: str | None = None
    args: str | list[str] = ""
    env: dict[str, Scalar] = Field(default_factory=dict)
    command: str | None = None


class CampaignFile(_Table):
    """The whole file."""

    campaign: CampaignTable
    server: ServerTable
    bench: BenchTable = Field(default_factory=BenchTable)
    vars: dict[str, Scalar] = Field(default_factory=dict)
    variant: list[VariantTable] = Field(default_factory=list)
    matrix: MatrixTable | None = None


def config_error(exc: ValidationError, data: dict[str, Any], text: str, where: str) -> ConfigError:
    """The first pydantic error as one sentence naming the key, its line and the fix."""
    error = exc.errors()[0]
    loc = tuple(error["loc"])
    key = _key_name(loc, data)
    line = loc_line(text, loc)
    kind = error["type"]
    if kind == "extra_forbidden":
        allowed = _allowed_keys(loc[:-1])
        guess = difflib.get_close_matches(str(loc[-1]), allowed, n=1)
        hint = f"did you mean {guess[0]!r}? " if guess else ""
        message = (
            f"unknown key {key}; {hint}the keys allowed there are {', '.join(allowed)}"
            if allowed
            else f"unknown key {key}; remove it"
        )
    elif kind == "missing":
        message = f"missing key {key}; add it"
    else:
        message = f"{key}: {error['msg']} (got {error.get('input')!r}); fix the value"
    return ConfigError(f"{where}{line}: {message}.", path=where, key=key)


def _key_name(loc: tuple[Any, ...], data: dict[str, Any]) -> str:
    """A dotted key, with list items named by their variant name when there is one."""
    parts: list[str] = []
    node: Any = data
    for part in loc:
        if isinstance(part, int):
            name = node[part].get("name") if isinstance(node, list) and part < len(node) else None
            parts[-1] += f"[{name!r}]" if isinstance(name, str) else f"[{part + 1}]"
        else:
            parts.append(str(part))
        node = node[part] if isinstance(node, dict | list) and _has(node, part) else None
    return ".".join(parts)


def _has(node: dict[str, Any] | list[Any], part: Any) -> bool:
    if isinstance(node, dict):
        return part in node
    return isinstance(part, int) and part < len(node)


_MODELS: dict[str, type[BaseModel]] = {
    "": CampaignFile,
    "campaign": CampaignTable,
    "server": ServerTable,
    "bench": BenchTable,
    "variant": VariantTable,
    "variant.bench": BenchOverride,
    "matrix": MatrixTable,
}


def _allowed_keys(loc: tuple[Any, ...]) -> list[str]:
    path = ".".join(str(part) for part in loc if not isinstance(part, int))
    model = _MODELS.get(path)
    return sorted(model.model_fields) if model is not None else []
