"""Which dataset a load point sends, parsed once from ``--dataset`` or ``[bench.dataset]``.

A dataset is a kind and its parameters. The campaign file's ``[bench.dataset]`` table is
the canonical form; the command line's one-line form is a convenience that says the same:

    prefix:groups=8,per_group=16,shared=512,unique=128
    trace:traces/mooncake.jsonl,speed=2
    sharegpt:ShareGPT_V3.json
    prompts.jsonl                   (a bare JSONL path: the same as jsonl:prompts.jsonl)

The rule for a file path in the one-line form: the path is everything after ``KIND:`` up
to the first ``,KEY=`` whose KEY is one of that kind's keys, so a path may hold ``:``,
``,`` and ``=``. A path that itself holds such a ``,KEY=`` is written last as
``file=PATH``: everything after ``file=`` is the path, verbatim. `DatasetSpec.text`
writes a spec back in the one-line form, the form stored with each point (its
workload), and parsing that text gives the same spec.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass
from typing import Any

from servegate.bench.lengths import parse_lengths
from servegate.errors import UsageError

__all__ = ["KINDS", "DatasetSpec", "parse_dataset", "spec_from_table"]

# kind -> {key: (type, default)}; a kind with a "file" reads one
KINDS: dict[str, dict[str, tuple[type, Any]]] = {
    "random": {"input": (str, None), "output": (str, None)},
    "jsonl": {"file": (str, None)},
    "sharegpt": {"file": (str, None)},
    "prefix": {
        "groups": (int, 8),
        "per_group": (int, 16),
        "shared": (int, 512),
        "unique": (int, 128),
    },
    "multiturn": {
        "turns": (int, 4),
        "first": (int, 256),
        "user": (int, 64),
        "think": (float, 0.0),
    },
    "agentic": {
        "turns": (int, 3),
        "fanout": (int, 2),
        "sub_turns": (int, 2),
        "first": (int, 256),
        "user": (int, 64),
        "sub_first": (int, 128),
        "think": (float, 0.0),
    },
    "trace": {
        "file": (str, None),
        "speed": (float, 1.0),
        "format": (str, None),
        "block": (int, 512),
    },
}
TRACE_FORMATS = ("mooncake", "azure", "burstgpt")
ZERO_OK = {"think"}  # keys that may be 0; every other number must be positive
_EXAMPLE = (
    "give random[:input=lognormal:1024:0.5,output=uniform:64:512], "
    "prefix[:groups=8,per_group=16,shared=512,unique=128], "
    "multiturn[:turns=4,first=256,user=64,think=0], agentic[:turns=3,fanout=2,...], "
    "jsonl:FILE, "
    "sharegpt:FILE, trace:FILE[,speed=2] or a FILE.jsonl path"
)


@dataclass(frozen=True, slots=True, kw_only=True)
class DatasetSpec:
    """A dataset kind, its file (for the kinds that read one) and its other parameters."""

    kind: str
    file: str | None = None
    params: tuple[tuple[str, Any], ...] = ()  # every key of the kind, defaults filled in

    def get(self, key: str) -> Any:
        """The value of parameter ``key``."""
        return dict(self.params)[key]

    @property
    def text(self) -> str:
        """The one-line form, keys in a fixed order; parsing it gives this spec again."""
        items = [f"{k}={_show(v)}" for k, v in self.params if v is not None]
        if self.file is None:
            return self.kind + (":" + ",".join(items) if items else "")
        keys = "|".join(re.escape(k) for k in KINDS[self.kind])
        if re.search(rf",({keys})=", self.file) or re.match(rf"({keys})=", self.file):
            return f"{self.kind}:" + ",".join([*items, f"file={self.file}"])
        return f"{self.kind}:" + ",".join([self.file, *items])


def _show(value: Any) -> str:
    """A parameter value as the one-line form writes it (2.0 as 2)."""
    if isinstance(value, float) and value.is_integer():
        return str(int(value))
    return str(value)


def parse_dataset(text: str, where: str = "--dataset") -> DatasetSpec:
    """The spec that ``text`` (the one-line form) names, or a UsageError naming the fix."""
    kind, sep, rest = text.partition(":")
    if kind not in KINDS:
        if text.endswith(".jsonl"):
            return DatasetSpec(kind="jsonl", file=text)
        raise UsageError(f"{where} {text!r} is not a dataset; {_EXAMPLE}.")
    keys = KINDS[kind]
    values: dict[str, str] = {}
    if "file" in keys:
        pattern = "|".join(re.escape(k) for k in keys)
        if re.match(rf"({pattern})=", rest):
            items = rest
        else:
            cut = re.search(rf",({pattern})=", rest)
            values["file"] = rest[: cut.start()] if cut else rest
            items = rest[cut.start() + 1 :] if cut else ""
    else:
        items = rest
    while items:
        key, eq, tail = items.partition("=")
        if not eq or key not in keys:
            raise UsageError(
                f"{where} {text!r}: {key!r} is not a key of {kind} "
                f"(keys: {', '.join(keys) or 'none'}); write KIND:KEY=VALUE,..."
            )
        if key in values:
            raise UsageError(f"{where} {text!r} gives {key} twice; give it once.")
        if key == "file":
            values[key], items = tail, ""
        else:
            values[key], _, items = tail.partition(",")
    if sep and not rest and "file" not in keys:
        raise UsageError(f"{where} {text!r} ends in ':'; give KEY=VALUE after it or drop the ':'.")
    return _build(kind, values, where)


def spec_from_table(table: dict[str, Any], where: str) -> DatasetSpec:
    """The spec a ``[bench.dataset]`` table gives: ``kind`` and that kind's keys."""
    kind = table.get("kind")
    if kind not in KINDS:
        raise UsageError(
            f"{where}: kind = {kind!r} is not a dataset kind; give one of: {', '.join(KINDS)}."
        )
    values = {k: v for k, v in table.items() if k != "kind"}
    for key in values:
        if key not in KINDS[kind]:
            raise UsageError(
                f"{where}: {key!r} is not a key of {kind} "
                f"(keys: {', '.join(KINDS[kind]) or 'none'}); remove it."
            )
    return _build(kind, values, where)


def _build(kind: str, values: dict[str, Any], where: str) -> DatasetSpec:
    """Check each value against its kind's key and fill in the defaults."""
    keys = KINDS[kind]
    params: list[tuple[str, Any]] = []
    file = None
    for key, (typ, default) in keys.items():
        raw = values.get(key, default)
        if key == "file":
            if not isinstance(raw, str) or not raw:
                raise UsageError(f"{where}: {kind} needs a file; write {kind}:FILE.")
            file = raw
            continue
        if raw is None:
            params.append((key, None))
            continue
        params.append((key, _value(kind, key, typ, raw, where)))
    return DatasetSpec(kind=kind, file=file, params=tuple(params))


def _value(kind: str, key: str, typ: type, raw: Any, where: str) -> Any:
    """One parameter's value, checked: positive numbers, a known trace format."""
    if typ is str:
        value = str(raw)
        if key in ("input", "output"):
            parse_lengths(value, f"{where}: {kind} {key}")
        if key == "format" and value not in TRACE_FORMATS:
            raise UsageError(
                f"{where}: {kind} format={value!r} is not one of: {', '.join(TRACE_FORMATS)}."
            )
        return value
    try:
        number = typ(raw) if not isinstance(raw, bool) else math.nan
        if typ is int and isinstance(raw, float) and not raw.is_integer():
            raise ValueError
    except (TypeError, ValueError):
        number = math.nan
    low_ok = key in ZERO_OK and number == 0
    if not (number > 0 or low_ok) or not math.isfinite(number):
        kind_word = "integer" if typ is int else "number"
        if key in ZERO_OK:
            kind_word = "zero or a positive " + kind_word
        else:
            kind_word = "a positive " + kind_word
        raise UsageError(
            f"{where}: {kind} {key}={raw} must be {kind_word}, e.g. {key}={KINDS[kind][key][1]}."
        )
    return number
