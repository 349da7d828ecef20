"""Names and relayed text made safe to print: no control character reaches a reader.

A variant name with a newline could print a forged result line; an ANSI escape could
recolour or erase a terminal's lines; a bidirectional override (U+202E) could show a
name backwards. Names are refused at input (``unprintable``); what is printed anyway
(names stored by an older version, a host's relayed output, a log's tail) goes through
``printable``, which shows each such character as an escape (``\\n``, ``\\x1b``,
``\\u202e``), so that one stored or relayed value is one printed line.

    >>> printable("fast\\n\\x1b[31m")
    'fast\\\\n\\\\x1b[31m'
"""

from __future__ import annotations

import re

__all__ = ["code_span", "describe", "markdown_text", "printable", "unprintable"]

# C0 controls, DEL, C1 controls, the line and paragraph separators (str.splitlines ends a
# line there), and the bidirectional embeddings, overrides and isolates
_CONTROL = re.compile("[\x00-\x1f\x7f-\x9f\u2028\u2029\u202a-\u202e\u2066-\u2069]")
_CONTROL_BUT_TAB = re.compile("[\x00-\x08\x0a-\x1f\x7f-\x9f\u2028\u2029\u202a-\u202e\u2066-\u2069]")
_SHORT = {"\n": "\\n", "\r": "\\r", "\t": "\\t"}
_MARKDOWN = re.compile(r"([\\|`])")


def _escape(match: re.Match[str]) -> str:
    char = match.group(0)
    if char in _SHORT:
        return _SHORT[char]
    code = ord(char)
    return f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}"


def unprintable(text: str) -> str | None:
    """The first control character in ``text`` (C0, DEL, C1, a line separator, a bidi
    override), or None."""
    match = _CONTROL.search(text)
    return match.group(0) if match else None


def describe(char: str) -> str:
    """One control character as a reader can name it: ``a newline (\\n)``, ``U+202E``."""
    names = {"\n": "a newline (\\n)", "\r": "a carriage return (\\r)", "\t": "a tab (\\t)"}
    if char in names:
        return names[char]
    if char == "\x1b":
        return "an escape character (\\x1b, ANSI)"
    return f"the control character U+{ord(char):04X}"


def printable(text: str, *, keep_tab: bool = False) -> str:
    """``text`` with each control character shown as an escape (one line of text).

    ``keep_tab``: a tab stays a tab (log lines, where it is layout, not a forgery).
    """
    pattern = _CONTROL_BUT_TAB if keep_tab else _CONTROL
    return pattern.sub(_escape, text) if pattern.search(text) else text


def markdown_text(text: str) -> str:
    """``text`` as literal text in markdown, on one line and in its table cell: printable,
    with ``\\``, ``|`` and backticks escaped (a name cannot end a cell or open code)."""
    return _MARKDOWN.sub(r"\\\1", printable(text))


def code_span(text: str) -> str:
    """``text`` as a markdown code span (outside a table), fenced by more backticks than it
    holds in a row, as CommonMark allows: a backtick in a name cannot end the span."""
    text = printable(text)
    longest = max((len(run) for run in re.findall("`+", text)), default=0)
    fence = "`" * (longest + 1)
    pad = " " if text.startswith("`") or text.endswith("`") else ""
    return f"{fence}{pad}{text}{pad}{fence}"
