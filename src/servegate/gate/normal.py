"""A log line as the engine meant it: its level and its message, whatever wrapped it.

Lines reach the gate through wrappers that add text of their own: a container runtime's
stamp, docker compose's ``service-1  | ``, kubectl's ``[pod/name/container] ``,
journald's ``Dec 04 12:00:00 host unit[12]: ``, torch's ``[rank0]:``, Ray's and vLLM's
``(Worker pid=12)``, a launcher that indents every line with a tab. Under them each
engine's logger prints a header that says the line's level: Python logging (vLLM's
``ERROR 12-04 12:00:00 [core.py:12]``, ``ERROR:root:``, uvicorn's ``ERROR:    ``,
``... - name - ERROR - ``, loguru's), glog (tritonserver's ``E1204 12:00:00.123456 12
file.cc:34] ``, torch's ``[W1204 ... file.cpp:56] ``), Rust tracing (TGI's
``2026-12-04T12:00:00.1Z ERROR text_generation_launcher: ``) and env_logger
(``[2026-12-04T12:00:00Z ERROR target] ``), llama.cpp's ``0.01.234.567 E ``,
TensorRT-LLM's ``[TRT-LLM] [E] `` and ``[TensorRT-LLM][ERROR] ``, protobuf's
``[libprotobuf ERROR file.cc:335] `` (tritonserver's config.pbtxt); and some print JSON
lines (llama.cpp's old server, TGI's ``--json-output``, docker's json-file driver) or
logfmt (Go's slog: ``level=ERROR msg="..."``).

``normalise(line)`` takes all of that off: what is left is the message, its level (None
when the line says none), and the indentation that belongs to the message (a
traceback's frames keep theirs; a launcher's tab is not kept). ``logical_lines`` does
the same over a run of lines and joins what one message printed over several: a logger
message that goes on without a header (wrapped at a fixed width by whoever pasted it,
or a message with a line break), a Rust panic's message on the line after
``panicked at``, and tritonserver's model table, whose status cell spans rows.

Normalising is for the few lines that matter: the prefilter's candidates while a log is
followed (gate/watch.py), and the tail when a verdict needs a cause (gate/cause.py).
"""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from dataclasses import dataclass

__all__ = ["Logical", "Normal", "logical_lines", "normalise"]

_LEVEL = {
    "TRACE": "debug",
    "DEBUG": "debug",
    "VERBOSE": "debug",
    "V": "debug",
    "D": "debug",
    "INFO": "info",
    "NOTICE": "info",
    "SUCCESS": "info",
    "I": "info",
    "WARNING": "warning",
    "WARN": "warning",
    "W": "warning",
    "ERROR": "error",
    "ERR": "error",
    "E": "error",
    "CRITICAL": "fatal",
    "FATAL": "fatal",
    "PANIC": "fatal",
    "F": "fatal",
}
_PY = "DEBUG|INFO|WARNING|WARN|ERROR|CRITICAL"
_STAMP = r"\d{4}-\d\d-\d\d[T\ ]\d\d:\d\d:\d\d(?:[.,]\d+)?"
# What loggers, launchers and terminals put before an engine's message. Alternatives
# are tried at the start of the line, repeatedly (prefixes nest: a container's stamp,
# then vLLM's process tag, then vLLM's logger header); a group named l<N> holds a level.
_PREFIX = re.compile(
    rf"""
    (?: [│┃|]\ ?                                               # a log viewer's frame
      | >\                                                     # a quote in a paste
      | `(?!`)(?=.*`\s*$)                                      # a paste's inline code
      | (?P<l1>{_PY})\ \d\d-\d\d\ \d\d:\d\d:\d\d(?:[.,]\d+)?
        \ \[?[\w./-]+:\d+\[?\]\ ?                              # vLLM's logger
      | \d{{4}}-\d\d-\d\d\ \d\d:\d\d:\d\d(?:[.,]\d+)?\ (?P<l2>{_PY})
        (?:\ \d+)?\ \[[\w./-]+:\d+\]\ ?                        # vLLM's older logger
      | {_STAMP}\ -\ [\w.-]+\ -\ (?P<l3>{_PY})\ -\ ?            # Python's "- name - LEVEL -"
      | {_STAMP}\ \|\ (?P<l4>{_PY}|SUCCESS|TRACE)\ *\|\ [^|]*?\ -\ ?  # loguru
      | {_STAMP}(?:Z|[+-]\d\d:?\d\d)?(?:\ +(?:stdout|stderr)\ [FP])?\ +  # stamps, CRI
      | (?P<l5>TRACE|DEBUG|INFO|WARN|ERROR)\ +                  # Rust tracing: spans, target
        (?:(?!(?:error|warning|fatal|note):)[a-z_][\w-]*(?:\{{[^}}]*\}})?
           (?::[a-z_][\w-]*(?:\{{[^}}]*\}})?)*:\ ){{1,3}}
        (?:[\w./-]+\.rs:\d+:\ )?
      | \[\d{{4}}-\d\d-\d\dT[\d:.]+Z?\ (?P<l6>TRACE|DEBUG|INFO|WARN|ERROR)
        \ +[\w:.-]*\]\ ?                                       # env_logger
      | \[\d{{4}}-\d\d-\d\dT\d\d:\d\d:\d\d(?:[.,]\d+)?Z?\]\ ?    # CI stamps
      | \[(?:\d{{4}}-\d\d-\d\d\ )?\d\d:\d\d:\d\d(?:[.,]\d+)?(?:\ [A-Z]+\d+)*\]\ ?  # SGLang
      | [\w.-]+[-_]\d+\ +\|\ ?                                 # docker compose service
      | [a-z][\w.-]*\ +\|\ (?=\S)                              # (by its name alone)
      | \[pod/[\w.-]+/[\w.-]+\]\ ?                             # kubectl logs --prefix
      | [A-Z][a-z]{{2}}\ [\ \d]\d\ \d\d:\d\d:\d\d\ [\w.-]+\ [\w.@/-]+(?:\[\d+\])?:\ ?  # syslog
      | \([\w.= -]+?\ pid=\d+(?:,\ ip=[\w.:]+)?\)\ ?           # vLLM / Ray process tags
      | \[rank\d+\]:\ ?                                        # torch's rank prefix
      | \[(?P<l7>[IWEF])(?:\d{{4}}\ \d\d:\d\d:\d\d(?:\.\d+)?)?(?:\ \d+)?
        \ [\w./-]+:\d+\]\ ?                                    # torch's c10 logging
      | (?P<l8>[IWEF])\d{{4}}\ \d\d:\d\d:\d\d\.\d+\ +\d+\ [\w./-]+:\d+\]\ ?  # glog
      | \[\d\d/\d\d/\d{{4}}-\d\d:\d\d:\d\d\]\ ?                 # TensorRT-LLM's stamp
      | \[TRT(?:-LLM)?\]\ ?(?:\[(?P<l9>[VIWEF])\]\ ?)?          # TensorRT(-LLM)'s Python
      | \[TensorRT-LLM\]\[(?P<l10>VERBOSE|INFO|WARNING|ERROR|FATAL)\]\ ?  # and its C++
      | \d+\.\d\d\.\d\d\d\.\d\d\d\ (?P<l11>[IWED])\ +          # llama.cpp --log-prefix
      | (?P<l12>{_PY}):(?:[\w.]+:|\ +)                         # ERROR:root: / uvicorn
      | \[(?P<l13>{_PY}|FATAL)\]\ ?                            # [ERROR]
      | \[[\w.-]+\]:\ ?                                        # a launcher's [name]: tag
      | \[libprotobuf\ (?P<l14>INFO|WARNING|ERROR|FATAL)\ [\w./-]+:\d+\]\ ?  # protobuf
    )
    """,
    re.VERBOSE,
)
# each level group and the logger family it belongs to (a dump of another program's
# output, inside an error report, ends at the next line of the reporter's own family)
_LEVEL_GROUPS: dict[str, str] = {
    "l1": "python",
    "l2": "python",
    "l3": "python",
    "l4": "loguru",
    "l5": "tracing",
    "l6": "env_logger",
    "l7": "c10",
    "l8": "glog",
    "l9": "trtllm",
    "l10": "trtllm",
    "l11": "llamacpp",
    "l12": "python",
    "l13": "python",
    "l14": "protobuf",
}
# C++ loggers pad their messages with spaces; no Python traceback follows their header
_PADDED = frozenset(("c10", "glog", "trtllm"))
_MAX_PREFIXES = 8
_ANSI = re.compile(r"\x1b(?:\[[0-?]*[ -/]*[@-~]|\][^\x07\x1b]*(?:\x07|\x1b\\)?|[ -/]*[0-~])")
# ANSI escapes that a log shipper spelled out (SageMaker and CloudWatch: "#033[31m")
_SPELLED_ANSI = re.compile(r"#033\[[0-?]*[ -/]*[@-~]")
# Rust tracing's span fields after a message (TGI: "Starting shard rank=0")
_FIELDS = re.compile(r"(?:\s+[a-z_]+=[\w.:/-]+)+\s*$")
_LOGFMT = re.compile(r'(\w+)=("(?:[^"\\]|\\.)*"|\S*)')
_JSON_LEVEL = ("level", "levelname", "severity", "lvl", "log.level")
_JSON_MESSAGE = ("message", "msg", "MESSAGE", "textPayload", "log")
# a JSON line cut short (a paste, a 16 KiB log-driver limit): its fields one by one
_JSON_FIELD = re.compile(r'"(\w+(?:\.\w+)?)"\s*:\s*"((?:[^"\\]|\\.)*)"')
# a message that says its own level: "error: ...", "Error: ...", "prog: fatal error: ...",
# "warning: ..." (llama.cpp's "warning: failed to mlock ...": no error)
_SAYS_ERROR = re.compile(
    r"(?:[\w./-]+:\ )?(?P<word>error|fatal error|fatal|FATAL|ERROR|Error|Fatal"
    r"|warning|WARNING|Warning)\b(?:\[\w+\])?:\s"
)

_SAID_LEVEL = {"f": "fatal", "e": "error", "w": "warning"}


@dataclass(frozen=True, slots=True)
class Normal:
    """One line's message without its wrappers, and the level its header said."""

    body: str  # the message, with a traceback's own indentation kept
    level: str | None  # fatal | error | warning | info | debug; None: the line says none
    header: bool = False  # a logger header, JSON or logfmt was recognised
    source: str | None = None  # the logger family that said the level (python, glog, ...)

    @property
    def text(self) -> str:
        """The message without indentation."""
        return self.body.strip()

    @property
    def indent(self) -> int:
        """Spaces before the message (a traceback's frames and source lines have some)."""
        return len(self.body) - len(self.body.lstrip())


def normalise(line: str) -> Normal:
    """``line`` without the prefixes of loggers, launchers and containers; JSON parsed."""
    rest = line.rstrip("\r\n")
    if "#033[" in rest:
        rest = _SPELLED_ANSI.sub("", rest)
    level: str | None = None
    source: str | None = None
    header = False
    coded = False  # a paste's inline code mark opened the line: its closing one goes too
    for _ in range(_MAX_PREFIXES):
        stripped = rest.lstrip(" \t")
        match = _PREFIX.match(stripped)
        if match is None or match.end() == 0:
            # a wrapper's tab is never a traceback's indentation (Python prints spaces)
            rest = rest.lstrip("\t")
            break
        header = True
        coded = coded or match.group() == "`"
        name = match.lastgroup  # the alternative's level group, if it has one
        if name is not None:
            level, source = _LEVEL.get(match.group(name).upper(), level), _LEVEL_GROUPS[name]
        rest = stripped[match.end() :]
        if source in _PADDED:
            rest = rest.lstrip()
    body = rest.rstrip().rstrip("│┃").rstrip()
    if coded:
        body = body.removesuffix("`")
    if body.startswith("{"):
        parsed = _from_json(body)
        if parsed is not None:
            return parsed
    elif body.startswith(("time=", "level=", "ts=")):
        parsed = _from_logfmt(body)
        if parsed is not None:
            return parsed
    if source == "tracing" and "=" in body:
        body = _FIELDS.sub("", body)
    if level is None:
        said = _SAYS_ERROR.match(body.lstrip())
        if said is not None:
            level = _SAID_LEVEL[said.group("word").lower()[:1]]
    return Normal(body, level, header, source)


def _from_json(body: str) -> Normal | None:
    """A JSON log line's message and level (TGI, llama.cpp, docker's json-file)."""
    try:
        data = json.loads(body) if body.endswith("}") else None
    except ValueError:
        data = None
    if data is None:
        data = _json_fields(body)
    if not isinstance(data, dict):
        return None
    fields = data.get("fields")
    sources = (data, fields) if isinstance(fields, dict) else (data,)
    message = next(
        (s[k] for s in sources for k in _JSON_MESSAGE if isinstance(s.get(k), str)), None
    )
    if message is None:
        return None
    word = next((s[k] for s in sources for k in _JSON_LEVEL if isinstance(s.get(k), str)), None)
    message = _ANSI.sub("", message).rstrip("\r\n")
    if "\n" not in message:
        inner = normalise(message)  # docker's {"log": "<the engine's own line>"}
        if word is None or inner.level is not None:
            return Normal(inner.body, inner.level, True, inner.source or "json")
    level = _LEVEL.get(word.upper()) if word else None
    return Normal(message, level, True, "json")


def _json_fields(body: str) -> dict[str, object] | None:
    """The string fields of a JSON object cut short, as far as it goes."""
    if not body.startswith('{"'):
        return None
    fields: dict[str, object] = {}
    for key, raw in _JSON_FIELD.findall(body):
        try:
            fields.setdefault(key, json.loads(f'"{raw}"'))
        except ValueError:
            continue
    return fields or None


def _from_logfmt(body: str) -> Normal | None:
    """A logfmt line's message (with its error attribute) and level (Go's slog)."""
    pairs = {key: value.strip('"') for key, value in _LOGFMT.findall(body)}
    message = pairs.get("msg")
    if message is None:
        return None
    error = pairs.get("error") or pairs.get("err")
    if error:
        message = f"{message}: {error}"
    word = pairs.get("level", "")
    return Normal(message.replace('\\"', '"'), _LEVEL.get(word.upper()), True, "logfmt")


@dataclass(frozen=True, slots=True)
class Logical:
    """One message of a run of lines: as printed, and normalised."""

    line: str  # as printed: one line, or the lines it spans joined
    normal: Normal
    index: int  # its first line's index in the run


_TABLE_BORDER = re.compile(r"\s*\+[-=+]+\+\s*$")
_TABLE_ROW = re.compile(r"\s*\|.*\|\s*$")
# what a container, a pod or a shipper puts before each line, the table's rows included
_WRAPPERS = re.compile(
    r"""(?:[\w.-]+[-_]\d+\ +\|\ ?|[a-z][\w.-]*\ +\|\ (?=\S)|\[pod/[\w.-]+/[\w.-]+\]\ ?
      |\d{4}-\d\d-\d\d[T\ ]\d\d:\d\d:\d\d(?:[.,]\d+)?(?:Z|[+-]\d\d:?\d\d)?
       (?:\ +(?:stdout|stderr)\ [FP])?\ +|\t|>\ |[│┃]\ ?
      |[A-Z][a-z]{2}\ [\ \d]\d\ \d\d:\d\d:\d\d\ [\w.-]+\ [\w.@/-]+(?:\[\d+\])?:\ ?)*""",
    re.VERBOSE,
)


def _table_line(line: str) -> str | None:
    """``line`` without its wrappers when it is a row or a border of a table, else None."""
    if "|" not in line and "+-" not in line:
        return None
    match = _WRAPPERS.match(line)
    bare = (line[match.end() :] if match is not None else line).rstrip().rstrip("│┃")
    return bare if _TABLE_BORDER.match(bare) or _TABLE_ROW.match(bare) else None


_BACKTRACE = re.compile(r"\s*#?\d+\s+(?:0x[0-9a-fA-F]+|\S+\(\+0x)")
_FRAME_START = re.compile(r'\s*(?:File "|Traceback \(|During handling|The above exception)')
# an exception's line, or the interpreter's report of one it ignored (an atexit callback)
_EXCEPTION_START = re.compile(
    r"(?:[A-Za-z_]\w*\.)*[A-Za-z_]\w*(?:Error|Exception|Exit|Interrupt):|Exception ignored in "
)
_PANIC_TAIL = re.compile(r"panicked at [^\s']+:\d+:\d+:\s*$")
# color-eyre's panic report (Rust): the header line, then "Message:  <the panic's message>"
_EYRE_HEAD = re.compile(r"The application panicked \(crashed\)\.\s*$")
_ERROR_COUNT = re.compile(r"\d+ validation errors? for \w+$")
_WRAP_WIDTH = 80  # a line this long that a plain line continues was wrapped at a width
_MAX_JOINED = 8


_PROCESS_TAG = re.compile(r"(\([\w.= -]+? pid=\d+\))\ ")


def _rejoined(line: str) -> list[str] | None:
    """The lines a paste joined into ``line``, split at each repeat of its own process
    tag (``(APIServer pid=7) ... (APIServer pid=7)     raise X( (APIServer pid=7) X:``,
    a traceback copied as prose), each after what came before the first tag (a wrapper's
    prefix), or None when the tag does not come back (at least twice more: one repeat
    may be a message that quotes it)."""
    if " pid=" not in line:
        return None
    tag = _PROCESS_TAG.search(line)
    if tag is None or line.count(tag.group(1)) < 3:
        return None
    prefix, *parts = line.rstrip().split(tag.group(1))
    return [prefix + tag.group(1) + part.rstrip() for part in parts if part.strip()]


def logical_lines(lines: Sequence[str]) -> list[Logical]:
    """``lines`` as messages: wrapped lines, panics and table rows joined; JSON split.

    A line without a header continues the logger message before it (one with a level
    of warning or above) unless it starts something of its own (a traceback, a frame,
    an exception, a backtrace, a table, a blank line). A line of 80 characters or more
    that ends inside a word (on a letter), followed by one that goes on with a lower-case
    letter and names no source of its own (``note: ...``), was wrapped at a width: the
    two are joined without a space, as are the lines after it of that same width.
    """
    out: list[Logical] = []
    index = 0
    count = len(lines)
    while index < count:
        line = lines[index]
        if _table_line(line) is not None:
            index = _table(lines, index, out)
            continue
        rejoined = _rejoined(line)
        if rejoined is not None:
            # a paste that joined lines into one, each still behind its process tag
            for sub in rejoined:
                out.append(Logical(line, normalise(sub), index))
            index += 1
            continue
        normal = normalise(line)
        if "\n" in normal.body:
            # a JSON message that holds many lines (a shard's whole standard error)
            for number, sub in enumerate(normal.body.split("\n")):
                inner = normalise(sub)
                level = inner.level or (normal.level if number == 0 else None)
                source = normal.source if number == 0 else inner.source
                out.append(Logical(line, Normal(inner.body, level, True, source), index))
            index += 1
            continue
        pieces = [line]
        joined, body = line, normal.body
        nxt = index + 1
        while nxt < count and len(pieces) < _MAX_JOINED:
            joins = _continues(pieces, normal, lines[nxt])
            if joins is None:
                break
            joiner, more = joins
            pieces.append(lines[nxt])
            joined += joiner + lines[nxt]  # as printed
            body += joiner + more.body  # each piece without its own wrappers
            nxt += 1
        if len(pieces) > 1:
            body = _FIELDS.sub("", body) if normal.source == "tracing" else body
            normal = Normal(body, normal.level, normal.header, normal.source)
        out.append(Logical(joined, normal, index))
        index = nxt
    return out


def _continues(pieces: Sequence[str], head: Normal, line: str) -> tuple[str, Normal] | None:
    """How ``line`` joins the message printed so far as ``pieces``: the joiner and the
    line normalised; None when it does not join."""
    if not line.strip() or _FRAME_START.match(line) or _BACKTRACE.match(line):
        return None
    if _table_line(line) is not None:
        return None
    previous = pieces[-1]
    if len(pieces) == 1 and _PANIC_TAIL.search(head.text):
        return " ", normalise(line)  # Rust 1.73+: "panicked at src/x.rs:1:2:", the message
    if len(pieces) == 1 and _EYRE_HEAD.search(head.text) and line.startswith("Message:"):
        return " ", normalise(line)  # color-eyre's report: its message on the next line
    if _FIELDS.fullmatch(line) and head.header:
        return "", Normal(line, None)  # tracing's span fields after a line break
    # wrapped at a width: the first break inside a word (a letter, then a lower-case
    # letter that starts no line of its own), the next ones at that same width
    width = len(pieces[0])
    wrapped = (
        width >= _WRAP_WIDTH
        and len(previous) == width
        and line[:1].isalnum()
        and (len(pieces) > 1 or (previous[-1:].isalpha() and line[:1].islower()))
        # pydantic's count of errors ("... 2 validation errors for ModelConfig"), then
        # the first error's field ("hf_overrides.dict[str,any]"): a line of its own
        and _ERROR_COUNT.search(previous) is None
    )
    # a logger's message that went on after a line break, mid-sentence (one that ends
    # in ":" introduces what follows: gate/cause.py reads that as its report)
    ends = head.text[-1:]
    goes_on = (
        head.header
        and head.level in ("warning", "error", "fatal")
        and len(pieces) == 1
        and (ends.isalnum() or ends == ",")
    )
    if not (wrapped or goes_on) or _NAMED.match(line):
        return None
    service = _SERVICE.match(pieces[0])
    if service is not None and line.startswith(service.group(1) + " "):
        return None  # docker compose's own line about that service ("app-1 exited with ...")
    normal = normalise(line)  # only now: most lines were ruled out above
    if normal.header or _EXCEPTION_START.match(normal.text):
        return None
    return ("" if wrapped else " "), normal


# "llama_model_load: error ..." and "prog: message": a line that names its own source
_NAMED = re.compile(r"[\w.-]+: ")
# docker compose's prefix, and the service it names
_SERVICE = re.compile(r"([\w.-]+)\s+\|")


def _table(lines: Sequence[str], start: int, out: list[Logical]) -> int:
    """tritonserver's model table from ``start``: one Logical per model, its status cell
    joined over the rows it spans; returns the index after the table."""
    index = start
    rows: list[tuple[list[str], list[str]]] = []  # (cells, the lines printed)
    header: list[str] | None = None
    count = len(lines)
    while index < count:
        line = lines[index]
        bare = _table_line(line)
        if bare is None:
            break
        index += 1
        if _TABLE_BORDER.match(bare):
            continue
        cells = [cell.strip() for cell in bare.strip().strip("|").split("|")]
        if header is None:
            header = cells
            continue
        if rows and cells and not cells[0] and len(cells) == len(rows[-1][0]):
            previous, printed = rows[-1]
            for column, cell in enumerate(cells):
                if cell:
                    previous[column] = f"{previous[column]} {cell}".strip()
            printed.append(line)
            continue
        rows.append((cells, [line]))
    for cells, printed in rows:
        text = " | ".join(cell for cell in cells if cell)
        status = cells[-1] if cells else ""
        level = "error" if status.upper().startswith(("UNAVAILABLE", "FAILED", "ERROR")) else None
        joined = " ".join(p.strip() for p in printed)
        out.append(Logical(joined, Normal(text, level, True, "table"), start))
    if header is not None and not rows:
        out.append(Logical(lines[start], Normal(" | ".join(header), None, True, "table"), start))
    return index
