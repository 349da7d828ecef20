"""Where a key is written in a campaign file: the line an error message points at.

``tomllib`` parses values but keeps no positions; these helpers find the line of a key
in its table (or of the n-th ``[[variant]]``) by reading the text, so that an error can
say ``fusion.toml:14:`` instead of only the key. When unsure they return "", and the
message names the key alone.
"""

from __future__ import annotations

import re
import tomllib
from typing import Any

__all__ = ["key_line", "loc_line", "variant_line"]

_HEADER = re.compile(r"^\s*(\[\[?)\s*([A-Za-z0-9_.\-\"' ]+?)\s*\]\]?\s*(#.*)?$")


def headers(text: str) -> list[tuple[int, bool, str]]:
    """(line number, is an array of tables, name) for each TOML table header."""
    found = []
    for number, line in enumerate(text.splitlines(), start=1):
        match = _HEADER.match(line)
        if match:
            found.append((number, match.group(1) == "[[", match.group(2)))
    return found


def key_in_section(text: str, start: int, key: str) -> int | None:
    """The line of ``key = ...`` in the table whose header is on line ``start``."""
    lines = text.splitlines()
    pattern = re.compile(rf"^\s*[\"']?{re.escape(key)}[\"']?\s*=")
    for number in range(start + 1, len(lines) + 1):
        line = lines[number - 1]
        if _HEADER.match(line):
            return None
        if pattern.match(line):
            return number
    return None


def key_line(text: str, table: str, key: str) -> str:
    for number, is_array, name in headers(text):
        if name == table and not is_array:
            found = key_in_section(text, number, key)
            return f":{found or number}"
    return ""


def header_line(text: str, table: str) -> str:
    for number, _, name in headers(text):
        if name == table:
            return f":{number}"
    return ""


def nth_header_key_line(text: str, table: str, index: int, key: str) -> str:
    numbers = [number for number, is_array, name in headers(text) if is_array and name == table]
    if index >= len(numbers):
        return ""
    found = key_in_section(text, numbers[index], key)
    return f":{found or numbers[index]}"


def variant_line(text: str, name: str, *, nth: int) -> str:
    """The line of the ``nth`` ``name = "..."`` inside a [[variant]] table."""
    count = 0
    lines = text.splitlines()
    for number, is_array, table in headers(text):
        if not (is_array and table == "variant"):
            continue
        found = key_in_section(text, number, "name")
        if found is None:
            continue
        try:
            value = tomllib.loads(lines[found - 1].strip()).get("name")
        except tomllib.TOMLDecodeError:
            continue
        if value == name:
            count += 1
            if count == nth:
                return f":{found}"
    return ""


def loc_line(text: str, loc: tuple[Any, ...]) -> str:
    """``:N`` for the line where the key at pydantic's ``loc`` is written, or ""."""
    if not loc:
        return ""
    if loc[0] == "variant" and len(loc) >= 3 and isinstance(loc[1], int):
        return nth_header_key_line(text, "variant", loc[1], str(loc[2]))
    if len(loc) == 2 and isinstance(loc[0], str):
        return key_line(text, loc[0], str(loc[1]))
    if len(loc) == 1:
        return header_line(text, str(loc[0]))
    return ""
