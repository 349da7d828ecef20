"""The campaign file's format, as pydantic models, and its validation errors as sentences.

Every table forbids unknown keys. A validation error becomes one ``ConfigError`` that
names the file, the line (when it can be found) and the key, and says what to do: the
closest allowed key for a misspelling, "add it" for a missing one, the value given for a
wrong type.
"""

from __future__ import annotations

import difflib
import math
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

from servegate._text import describe, unprintable
from servegate.campaign.locate import loc_line
from servegate.errors import ConfigError

__all__ = [
    "MAX_MATRIX_VARIANTS",
    "MAX_RESTARTS",
    "BenchOverride",
    "BenchTable",
    "CampaignFile",
    "CampaignTable",
    "ClusterTable",
    "MatrixTable",
    "Scalar",
    "ServerTable",
    "VariantTable",
    "config_error",
    "name_problem",
    "percentage",
]

Scalar = str | int | float | bool
MAX_MATRIX_VARIANTS = 1000  # a [matrix] expanding to more is a mistake unless max_variants says
# starts of one server configuration: far beyond any campaign (hours each on a GPU), and
# small enough that the plan, built before the first start, is built at once
MAX_RESTARTS = 1000


# --- the file, as pydantic models (extra keys forbidden) ---------------------------------


def name_problem(name: str) -> str | None:
    """Why ``name`` cannot name a campaign or a variant, or None: a control character
    (a newline, CR, an ANSI escape, C1, DEL, a bidi override) would let it print a forged
    line in run, report, check and the step summary."""
    char = unprintable(name)
    if char is None:
        return None
    return f"a name cannot hold {describe(char)}; use printable characters only"


def _printable_name(value: object) -> object:
    if isinstance(value, str) and (problem := name_problem(value)) is not None:
        raise ValueError(problem)
    return value


class _Table(BaseModel):
    # strict: TOML has types, so true is never the number 1 and 8000.0 never a port;
    # nan and inf are never a rate, a timeout or a length
    model_config = ConfigDict(extra="forbid", frozen=True, strict=True, allow_inf_nan=False)


class CampaignTable(_Table):
    """``[campaign]``: the name results are stored under, and the reference variant."""

    name: str = Field(min_length=1, max_length=200)
    baseline: str = Field(min_length=1)
    description: str = ""
    min_effect: str | None = None  # "2%": the smallest change reports call better or worse

    _names = field_validator("name", "baseline")(_printable_name)

    @field_validator("min_effect", mode="before")
    @classmethod
    def _min_effect(cls, value: object) -> object:
        if value is None or (isinstance(value, str) and percentage(value) is not None):
            return value
        raise ValueError('a percentage from 0 to 100 as a string, e.g. min_effect = "2%"')


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
    gpus: int = Field(default=0, ge=0)  # GPUs one server needs (a Ray cluster's GPU resource)
    resources: dict[str, float | int] = Field(default_factory=dict)  # custom Ray resources

    @field_validator("resources", mode="after")
    @classmethod
    def _resources(cls, value: dict[str, float | int]) -> dict[str, float | int]:
        for name, amount in value.items():
            if name in ("CPU", "GPU", "memory"):
                raise ValueError(f"{name} is not a custom resource; set [server] gpus for GPUs")
            if not name or amount <= 0:
                raise ValueError("each resource is a name and an amount above 0, e.g. {nvlink = 1}")
        return value

    @field_validator("port", mode="before")
    @classmethod
    def _port(cls, value: object) -> object:
        if value is None or value == "auto":
            return value
        if isinstance(value, bool) or not isinstance(value, int) or not 1 <= value <= 65535:
            raise ValueError('a port is a whole number from 1 to 65535, or "auto"')
        return value


class BenchTable(_Table):
    """``[bench]``: the load points and how often each is measured."""

    api: Literal["completions", "chat"] = "completions"
    concurrency: list[int] | int | None = None  # [1]; with a rate: no cap
    rate: list[float] | float | None = None
    burstiness: float = Field(default=1.0, gt=0)  # gamma shape of the gaps: 1 is Poisson
    percentiles: list[float] = Field(default_factory=list)  # beside p50, p90, p99
    # "isolate": each point's prompts salted by (repeat, point); "share": the same prompts
    cache: Literal["isolate", "share"] = "isolate"
    tokenizer: str | None = None  # token-exact prompts: "server" or a tokenizer.json path
    requests: int = Field(default=200, ge=1)
    duration_s: float | None = Field(default=None, gt=0)
    warmup: int = Field(default=8, ge=0)
    input_len: int = Field(default=1024, ge=1)
    # None: 256 for random and prefix, a file's or trace's own lengths (without ignore_eos)
    output_len: int | None = Field(default=None, ge=1)
    # the one-line form (random, prefix:..., trace:FILE, FILE.jsonl, sharegpt:FILE; files
    # relative to the campaign file) or the canonical [bench.dataset] table (kind = ...)
    dataset: str | dict[str, Any] = "random"
    repeats: int = Field(default=3, ge=1)
    restarts: int = Field(default=1, ge=1, le=MAX_RESTARTS)  # server starts per configuration
    seed: int = 0
    # dollars per GPU-hour: each point's cost per million output tokens (with energy)
    price_per_gpu_hour: float | None = Field(default=None, gt=0)
    # capacity under [slo]: each start searches for the largest load that meets it
    find_max: str | None = None  # "concurrency" or "rate" (checked in config.py)
    max_probes: int = 15
    precision: float | str = 0.05  # a share (0.05) or a percentage ("5%")
    max_concurrency: int | None = None
    max_rate: float | None = None
    retry_below_crash: bool = False  # a crash while probing: search on below it, on a new start


class BenchOverride(_Table):
    """A variant's ``bench`` sub-table: only the settings it changes."""

    api: Literal["completions", "chat"] | None = None
    concurrency: list[int] | int | None = None
    rate: list[float] | float | None = None
    burstiness: float | None = Field(default=None, gt=0)
    percentiles: list[float] | None = None
    cache: Literal["isolate", "share"] | None = None
    tokenizer: str | None = None
    requests: int | None = Field(default=None, ge=1)
    duration_s: float | None = Field(default=None, gt=0)
    warmup: int | None = Field(default=None, ge=0)
    input_len: int | None = Field(default=None, ge=1)
    output_len: int | None = Field(default=None, ge=1)
    dataset: str | dict[str, Any] | None = None
    repeats: int | None = Field(default=None, ge=1)
    seed: int | None = None


class VariantTable(_Table):
    """``[[variant]]``: one change against the template (args, env, command or bench)."""

    name: str = Field(min_length=1, max_length=100)
    _name = field_validator("name")(_printable_name)
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
    max_variants: int = Field(default=MAX_MATRIX_VARIANTS, ge=1)  # refuse a larger matrix
    args: str | list[str] = ""
    env: dict[str, Scalar] = Field(default_factory=dict)
    command: str | None = None


class ClusterTable(_Table):
    """``[cluster]``: run the variants as tasks on a Ray cluster (servegate[ray])."""

    ray: str = Field(min_length=1)  # the cluster's address: "auto" or its GCS "HOST:6379"


class CampaignFile(_Table):
    """The whole file."""

    campaign: CampaignTable
    server: ServerTable
    cluster: ClusterTable | None = None
    bench: BenchTable = Field(default_factory=BenchTable)
    vars: dict[str, Scalar] = Field(default_factory=dict)
    variant: list[VariantTable] = Field(default_factory=list)
    matrix: MatrixTable | None = None
    # [slo]: metric_stat = "bound with unit" (ttft_p99 = "500ms"), and attainment = 0.95;
    # checked in config.py against the same grammar as bench --slo
    slo: dict[str, str | float] | None = None


def percentage(text: str, *, upper: float = 100.0) -> float | None:
    """``"2%"``, ``"2 %"`` or ``"2"`` as the fraction 0.02; None unless from 0 below ``upper``."""
    try:
        value = float(text.strip().removesuffix("%").strip())
    except ValueError:
        return None
    return value / 100.0 if 0.0 <= value < upper else None


def config_error(exc: ValidationError, data: dict[str, Any], text: str, where: str) -> ConfigError:
    """The first pydantic error as one sentence naming the key, its line and the fix."""
    error, tags = _pick(exc.errors(), data)
    loc = _clean_loc(tuple(error["loc"]), data)[0]
    key = _key_name(loc, data)
    line = loc_line(text, _line_loc(loc))
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
        said = str(error["msg"]).removeprefix("Value error, ")
        if tags:  # no member of a union took the value's type
            words = list(dict.fromkeys(_TYPE_WORDS.get(t, t) for t in tags))
            said = "should be " + ", ".join(words[:-1]) + " or " + words[-1]
        message = f"{key}: {said} (got {_shown(error.get('input'))}); fix the value"
    return ConfigError(f"{where}{line}: {message}.", path=where, key=key)


# how a union member's tag in pydantic's error location reads in a message
_TYPE_WORDS = {
    "str": "a string",
    "int": "a whole number",
    "float": "a number",
    "bool": "a boolean (true or false)",
    "list[int]": "a list of whole numbers",
    "list[float]": "a list of numbers",
    "list[str]": "a list of strings",
    "literal['auto']": '"auto"',
    "literal['completions','chat']": '"completions" or "chat"',
}
_SHOWN_CHARS = 60


def _shown(value: Any) -> str:
    """A value as the file wrote it (true, nan), cut short: the message stays one line."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, float) and not math.isfinite(value):
        return str(value)
    shown = repr(value)
    return shown if len(shown) <= _SHOWN_CHARS else shown[: _SHOWN_CHARS - 3] + "..."


def _pick(errors: list[Any], data: dict[str, Any]) -> tuple[Any, list[str]]:
    """The error worth showing for the first key that failed, and the union's tags when
    the value fit none of its types (then no single member's message says it)."""
    first = _clean_loc(tuple(errors[0]["loc"]), data)
    base = first[0][: first[2]] if first[2] is not None else first[0]
    same = []
    for error in errors:
        clean, tags, cut = _clean_loc(tuple(error["loc"]), data)
        if clean[: len(base)] == base:
            same.append((error, clean, tags, cut))
    # a constraint broken by a value of the right type says the most; then a failure
    # inside a value whose container type fitted (one list item)
    for error, _, _, _ in same:
        if not str(error["type"]).endswith("_type"):
            return error, []
    deeper = [entry for entry in same if len(entry[1]) > len(base)]
    if deeper:
        return deeper[0][0], []
    tags = [tag for _, _, found, _ in same for tag in found]
    return same[0][0], tags if len(tags) > 1 else []


def _clean_loc(
    loc: tuple[Any, ...], data: dict[str, Any]
) -> tuple[tuple[Any, ...], list[str], int | None]:
    """``loc`` without pydantic's union-member tags, the tags, and where the first was.

    A string part is a key only where the value reached so far is a table; elsewhere it
    names the member of a union that was tried (``list[int]``, ``float``).
    """
    clean: list[Any] = []
    tags: list[str] = []
    cut: int | None = None
    node: Any = data
    for part in loc:
        if isinstance(part, str) and not isinstance(node, dict):
            tags.append(part)
            cut = len(clean) if cut is None else cut
            continue
        clean.append(part)
        node = node[part] if isinstance(node, dict | list) and _has(node, part) else None
    return tuple(clean), tags, cut


def _line_loc(loc: tuple[Any, ...]) -> tuple[Any, ...]:
    """The part of ``loc`` that names a key written in the file (no list item numbers)."""
    if loc and loc[0] == "variant":
        return loc[:3]
    kept = []
    for part in loc:
        if isinstance(part, int):
            break
        kept.append(part)
    return tuple(kept)


def _key_name(loc: tuple[Any, ...], data: dict[str, Any]) -> str:
    """A dotted key, with list items named by their variant name when there is one."""
    parts: list[str] = []
    node: Any = data
    for part in loc:
        if isinstance(part, int):
            name = (
                node[part].get("name")
                if isinstance(node, list) and part < len(node) and isinstance(node[part], dict)
                else None
            )
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
    "cluster": ClusterTable,
}


def _allowed_keys(loc: tuple[Any, ...]) -> list[str]:
    path = ".".join(str(part) for part in loc if not isinstance(part, int))
    model = _MODELS.get(path)
    return sorted(model.model_fields) if model is not None else []
