"""The one codec of what servegate's processes send each other: frames as JSON lines.

A frame is a frozen dataclass; on the wire it is one line of JSON, an object whose
``event`` names the frame (its class name in snake case: ``Exit`` -> ``exit``,
``PointMeasured`` -> ``point_measured``) and whose other keys are its fields. Reading a
line takes the frames the channel allows (``kinds``) and checks every field against
its annotation (``str``, ``int``, ``float``, ``bool``, ``None``, unions, ``Literal``,
enums, ``tuple``, ``list``, ``Sequence``, ``dict[str, ...]``, ``Path``, ``Any`` for a
JSON value, and nested dataclasses, written as objects without ``event``): a line is
data, never code, and anything else is a ``FrameError`` whose message is one sentence.
NaN and infinities are written as Python's json writes them.

    line = encode(Exit(code=0))                  # b'{"event":"exit","code":0}\\n'
    frame = decode(line, kinds(Out, Err, Exit))  # Exit(code=0), or FrameError

``PROTOCOL`` is the number every agent says in its ``hello``: a change of any frame
that an older or newer servegate would read otherwise is a new number.
"""

from __future__ import annotations

import dataclasses
import enum
import json
import re
import types
import typing
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any, TypeVar

from servegate.errors import ServegateError

__all__ = ["MAX_LINE", "PROTOCOL", "FrameError", "Kinds", "decode", "encode", "kinds", "name_of"]

PROTOCOL = 1
MAX_LINE = 1 << 28  # 256 MiB: a point's raw samples fit many times over
KEY = "event"

T = TypeVar("T")
Kinds = Mapping[str, type[Any]]


class FrameError(ServegateError):
    """A line that is not a frame this channel allows (its message: one sentence)."""


def name_of(cls: type[Any]) -> str:
    """A frame's name on the wire: ``PointMeasured`` -> ``point_measured``."""
    return re.sub(r"(?<!^)(?=[A-Z])", "_", cls.__name__).lower()


def kinds(*classes: type[Any]) -> dict[str, type[Any]]:
    """The frames a channel allows, by their names on the wire."""
    return {name_of(cls): cls for cls in classes}


def encode(frame: object) -> bytes:
    """One frame as one line of JSON, ending with a newline."""
    if not dataclasses.is_dataclass(frame) or isinstance(frame, type):
        raise TypeError(f"not a frame: {frame!r}")
    if any(f.name == KEY for f in dataclasses.fields(frame)):
        raise TypeError(f"a frame's field cannot be named {KEY!r}: {type(frame).__name__}")
    data = {KEY: name_of(type(frame)), **_plain(frame)}
    return json.dumps(data, separators=(",", ":")).encode() + b"\n"


def decode(line: bytes | str, allowed: Kinds) -> Any:
    """The frame one line holds, every field checked; FrameError when it is not one of
    ``allowed`` (see ``kinds``) or a field is not what its frame says."""
    if len(line) > MAX_LINE:
        raise FrameError(f"a line of {len(line)} bytes (at most {MAX_LINE} are read)")
    try:
        data = json.loads(line)
    except (ValueError, UnicodeDecodeError):
        raise FrameError(f"a line that is not JSON: {_shown(line)}") from None
    if not isinstance(data, dict):
        raise FrameError(f"a JSON value that is not an object: {_shown(line)}")
    name = data.pop(KEY, None)
    cls = allowed.get(name) if isinstance(name, str) else None
    if cls is None:
        known = ", ".join(sorted(allowed))
        raise FrameError(f"an unknown event {_shown(name)} (known here: {known})")
    return _build(cls, data, f"event {name!r}")


def value_of(hint: Any, value: Any, where: str) -> Any:
    """``value`` (parsed JSON) checked against the annotation ``hint``; FrameError if not."""
    return _value(hint, value, where)


# --- writing -----------------------------------------------------------------------------


def _plain(value: Any) -> Any:
    """A frame's value as JSON values (a dataclass as an object of its fields)."""
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return {f.name: _plain(getattr(value, f.name)) for f in _fields(type(value))}
    if isinstance(value, enum.Enum):
        return _plain(value.value)
    if isinstance(value, (str, int, float, bool)) or value is None:
        return value
    if isinstance(value, Path):
        return str(value)
    if isinstance(value, Mapping):
        return {str(k): _plain(v) for k, v in value.items()}
    if isinstance(value, (list, tuple, Sequence)):
        if all(type(v) in _PLAIN for v in value):  # a sample's chunk times: fast
            return list(value)
        return [_plain(v) for v in value]
    raise TypeError(f"a {type(value).__name__} cannot be sent in a frame")


# --- reading -----------------------------------------------------------------------------

_HINTS: dict[type[Any], dict[str, Any]] = {}
_PLAIN = (str, int, float, bool, type(None))
# the element types a list of plain values is checked against at once
_FAST: dict[Any, tuple[type[Any], ...]] = {float: (float, int), int: (int,), str: (str,)}


def _fields(cls: type[Any]) -> list[dataclasses.Field[Any]]:
    return [f for f in dataclasses.fields(cls) if f.init]


def _hints(cls: type[Any]) -> dict[str, Any]:
    hints = _HINTS.get(cls)
    if hints is None:
        hints = _HINTS[cls] = typing.get_type_hints(cls)
    return hints


def _build(cls: type[T], data: Any, where: str) -> T:
    if not isinstance(data, dict):
        raise FrameError(f"{where} must be an object, not {_shown(data)}")
    fields = {f.name: f for f in _fields(cls)}
    unknown = sorted(set(data) - set(fields))
    if unknown:
        raise FrameError(f"{where} has an unknown field {_shown(unknown[0])}")
    hints = _hints(cls)
    values = {}
    for name, field in fields.items():
        if name not in data:
            missing = field.default is dataclasses.MISSING
            if missing and field.default_factory is dataclasses.MISSING:
                raise FrameError(f"{where} lacks its field {name!r}")
            continue
        values[name] = _value(hints[name], data[name], f"field {name!r} of {where}")
    try:
        return cls(**values)
    except (ServegateError, ValueError, TypeError) as exc:  # the class's own checks
        raise FrameError(f"{where}: {_first_line(exc)}") from None


def _value(hint: Any, value: Any, where: str) -> Any:
    origin = typing.get_origin(hint)
    args = typing.get_args(hint)
    if hint is Any:
        return value
    if hint is type(None):
        if value is None:
            return None
        raise FrameError(f"{where} must be null, not {_shown(value)}")
    if origin in (typing.Union, types.UnionType):
        for option in args:
            try:
                return _value(option, value, where)
            except FrameError:
                continue
        raise FrameError(f"{where} must be {_names(args)}, not {_shown(value)}")
    if origin is typing.Literal:
        if value in args and not isinstance(value, bool):
            return value
        raise FrameError(f"{where} must be one of {_names(args)}, not {_shown(value)}")
    if hint is bool:
        if isinstance(value, bool):
            return value
        raise FrameError(f"{where} must be true or false, not {_shown(value)}")
    if hint is int:
        if isinstance(value, int) and not isinstance(value, bool):
            return value
        raise FrameError(f"{where} must be an integer, not {_shown(value)}")
    if hint is float:
        if isinstance(value, (int, float)) and not isinstance(value, bool):
            return float(value)
        raise FrameError(f"{where} must be a number, not {_shown(value)}")
    if hint is str:
        if isinstance(value, str):
            return value
        raise FrameError(f"{where} must be a string, not {_shown(value)}")
    if hint is Path:
        return Path(_value(str, value, where))
    if isinstance(hint, type) and issubclass(hint, enum.Enum):
        try:
            return hint(value)
        except ValueError:
            allowed = _names(hint)
            raise FrameError(f"{where} must be one of {allowed}, not {_shown(value)}") from None
    if isinstance(hint, type) and dataclasses.is_dataclass(hint):
        return _build(hint, value, where)
    if origin in (dict, Mapping):
        if not isinstance(value, dict):
            raise FrameError(f"{where} must be an object, not {_shown(value)}")
        return {k: _value(args[1], v, f"{where}[{k!r}]") for k, v in value.items()}
    if origin in (tuple, list, Sequence):
        if not isinstance(value, list):
            raise FrameError(f"{where} must be a list, not {_shown(value)}")
        if origin is tuple and not (len(args) == 2 and args[1] is Ellipsis):
            if len(value) != len(args):
                raise FrameError(f"{where} must have {len(args)} items, not {len(value)}")
            pairs = enumerate(zip(args, value, strict=True))
            return tuple(_value(a, v, f"{where}[{i}]") for i, (a, v) in pairs)
        item = args[0]
        if item in _FAST and all(type(v) in _FAST[item] for v in value):  # a sample's chunks
            items = [float(v) for v in value] if item is float else list(value)
        else:
            items = [_value(item, v, f"{where}[{i}]") for i, v in enumerate(value)]
        return items if origin is list else tuple(items)
    raise TypeError(f"{where}: the codec cannot read a {hint!r}")


def _names(options: Any) -> str:
    """``an integer or null``, ``'ready', 'crash'``: what a field may be."""
    words = {int: "an integer", float: "a number", str: "a string", bool: "true or false"}
    if isinstance(options, type) and issubclass(options, enum.Enum):
        return ", ".join(repr(m.value) for m in options)
    parts = []
    for option in options:
        if option is type(None):
            parts.append("null")
        elif option in words:
            parts.append(words[option])
        elif isinstance(option, type):
            parts.append(f"a {option.__name__}")
        else:
            parts.append(repr(option))
    return " or ".join(parts)


def _shown(value: Any) -> str:
    """A value as the message quotes it: short, one line, escaped."""
    text = repr(value)
    return text if len(text) <= 60 else text[:57] + "..."


def _first_line(exc: BaseException) -> str:
    lines = str(exc).strip().splitlines()
    return (lines[0] if lines else type(exc).__name__).rstrip(".")
