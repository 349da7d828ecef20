"""Which log line is the cause of a crash: severity, specificity, the root of a chain.

A crashing engine prints many error-looking lines: the frames of a traceback (whose
source lines may even contain the error text, ``raise RuntimeError(f"NCCL error: ...")``),
the exception that ends each traceback, ordinary ``ERROR`` lines of its logger, a Rust
panic, and consequences that only say *that* something failed (``Engine core
initialization failed``, ``Scheduler hit an exception``, TGI's ``Webserver Crashed`` and
``Shard process was signaled``). This module reads the tail as messages (gate/normal.py:
behind any logger, container or launcher prefix, JSON parsed, wrapped lines and
tritonserver's table rows joined) and picks the one that says *what* failed.

The rule, over the tail:

1. Never a source line of a frame (``File "..."``, indented code, ``raise ...``,
   carets, the line after a frame even when a paste took its indentation), never a line
   a recovery withdrew (gate/watch.py), never a line that only introduces what follows
   (an ``ERROR`` message ending in ``:``: the lines after it, up to its logger's next
   line, are its report, and count as error lines whatever their own level when they
   say that something failed; a warning in a shard's output is not a cause). A later
   line of a message printed as one line (JSON) is matched by its own words only.
2. Only the failure's own episode counts: the lines after the last sign that the engine
   moved on (a phase opening, a ready line) before the last candidate line. An error the
   engine printed and then moved on from (a benign early ``ERROR``) is not the cause.
   A sign of moving on that comes after a line saying one of its processes died
   (``terminated with 255``) is no recovery.
3. The most specific class wins: a line a fatal signature names; then an error line (an
   exception, a panic, ``what():``, a ``FATAL`` or ``ERROR`` level, ``error: ...``)
   whose words name a family of kinds (engines/families.py); then a line with no level
   at all that says something failed in a family's words (the dynamic loader's ``error
   while loading shared libraries``, llama.cpp's backends' ``Device memory allocation
   of size N failed.``, NVSHMEM's ``non-zero status: 7 No devices selected.``; not one
   that says the engine goes on: ``falling back``, ``Ignore import error``); then any
   other exception, panic or ``FATAL`` line (one that names no family: a consequence
   such as ``'NoneType' object has no attribute`` is less specific than a line that
   names what failed); then a reported line whose words name a family (in a dump that
   an error line introduced, the dump's exception is what it reports); then a line
   that says a process was ended by a signal (TGI's ``Download process was signaled to
   shutdown with signal 9:``, a colon after it or not: its kind the signal's, 9
   ``killed``, 11 ``segfault``, 6 ``abort``), the root of the launcher's ``Error:
   DownloadError``; then a wrapper or consequence signature (and a signature's hit
   inside another program's HTTP answer that the line relays, ``status=500
   body=...``); then an ``ERROR`` line naming no family; last, a line that says it
   will retry (``retrying (1/3)``) or that a wrapper gave up after its retries (``more
   than 5 times, cancelling``). An exception logged
   at ``WARNING`` or below was handled: it is no error line, except at ``INFO`` at the
   end of a traceback (a wrapper that relays its child's output at ``INFO``, line by
   line).
4. Within a class: the higher severity (``FATAL`` or a panic, then an exception, then an
   ``ERROR`` line), then the earliest line, the root: the first exception of a chained
   traceback, the shard's error before the launcher's ``Webserver Crashed``. Wrappers go
   by the profile's order (most specific first), then the latest.
5. A signature with ``explained_by`` (SGLang's unsupported architecture after ``Ignore
   import error when loading ...``) gives way to the line that explains it; a
   ``rooted`` one (llama-server's callers' lines under the loader's error) to the first
   line of its episode that a logger printed at an error level.
6. With no candidate at all, a ``raise X("...")`` statement (a paste cut before its
   exception line) gives the kind its message names; it is not quoted.
7. The line that ends a traceback is its exception, whatever its class is called
   (``huggingface_hub.errors.OfflineModeIsEnabled: ...``).
8. An exception whose words name no family takes the kind its class and module name
   (``huggingface_hub``'s ``OfflineModeIsEnabled``: ``download``), else the phase its
   traceback's innermost frame names: loading weights (``load_weights``) is
   ``model-load``, a warmup (``_wait_and_warmup``) ``engine-init``,
   ``init_process_group`` ``distributed``. An exception or ERROR line that still names
   none takes what the nearest of the lines above it says the engine was doing
   (``Loading safetensors checkpoint shards``), unless a nearer one says it was done;
   the gate (gate/decide.py) then tries the startup phase still open (``phase_kind``).
   Before those, an earlier line (a warning, often) that says in install's words that a
   module failed to import is the cause when the exception names that module
   (``Failed to import from vllm._core_C with ImportError(...)``, then ``Tried to
   instantiate class '_core_C.ScalarType'``).
9. A failure line's detail printed right below it (NCCL's ``Last error:`` then its line,
   a runtime's ``stderr: ...`` continued on the next line) is the cause in its place
   where its words name a family.
10. A class named with its module path (``pkg.mod.Name: ...``) is an exception line
    anywhere, and so is the exception a one-line paste glued after ``raise X(``.
11. A signature of a process's generic end (``Fatal Python error: Aborted``,
    ``Segmentation fault``) gives way to any line of its episode that names what failed
    at an error level (``what():  NPU out of memory ...``, before or after it: each rank
    prints its own failure and its own end).
12. A shell's line that the program it was to run is not there, in the common locales'
    words (``./start.sh: línea 18: ./llama-server: No existe el archivo o el
    directorio``, ``sh: 1: x: not found``), ranks as a line that names a family:
    ``install``, or ``model-load`` where what is missing is a model's file.
13. A C source's own report of why it aborts (GGML_ABORT's ``clip.cpp:4391: Unknown
    projector type``) says that something failed, as a line with no level does: above
    the abort and a wrapper's SIGABRT, below a runtime's own line that it only repeats.
    A line with no level that ends in ``:`` and says in a family's words what failed
    (Metal's ``failed to compile pipeline:``) is that failure, not only its detail's
    introduction. Go's ``signal: terminated`` of a child (a supervisor's ``cmd.Wait()
    returned error: ...``) says that a signal ended it, at whatever level it is logged.

The message inside a panic (``panicked at ...: called `Result::unwrap()` on an `Err`
value: ...``) or a Rust error's debug form (``Error: Warmup(Generation("..."))``) is the
cause's text; the verdict quotes the line as printed (joined lines as they were split).

It runs only when a verdict needs a cause (the process exited, a wrapper waited long
enough, an essential child died), over the bounded tail, so the log-follow fast path
keeps its literal prefilter and never runs these expressions per line.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, replace

from servegate.engines.families import (
    KIND_HINTS,
    Words,
    family_of,
    kind_order,
    words_hint,
    words_kind,
)
from servegate.engines.profile import Signature
from servegate.gate.normal import Logical, Normal, logical_lines, normalise
from servegate.gate.scan import required_literal

__all__ = [
    "GENERIC_ENDS",
    "Cause",
    "exception_text",
    "explain",
    "is_source",
    "is_source_line",
    "phase_kind",
    "relays_answer",
    "says_signalled",
    "select_cause",
    "strip_prefix",
]

_FRAME = re.compile(r'\s*File ["“][^"”]*["”],? line \d+')  # a paste may curl the quotes
_MARKERS = re.compile(r"\s*[\^~]+\s*$")
# a C++ backtrace's frame under c10's "Exception raised from ... (most recent call
# first):" (torch prints one under a warning it retries, too): the message above it says
# what failed; a frame only names the functions it passed through (DistNetworkError's)
_CPP_FRAME = re.compile(r"\s*frame #\d+: ")
# gdb's backtrace, which ggml prints on an abort: a frame ("#3  0x00007f16 in f () from
# lib.so") and the source line it cannot show ("58\t../sysdeps/nptl/libc_start_call_
# main.h: No such file or directory."): the debugger's, not the process's failure
_GDB = re.compile(r"#\d+\s+0x[0-9a-f]+ in |\d+\t(?:in )?\S+(?:: No such file or directory\.)?\s*$")
# SomethingError: message, a bare Exception: / Error:, dotted names, a message-less raise
_EXCEPTION = re.compile(
    r"(?:[A-Za-z_]\w*\.)*(?:[A-Za-z_]\w*)?(?:Error|Exception|Exit|Interrupt|Failure)"
    r"(?::\s+\S|:?\s*$)"
)
# pydantic's ValidationError: a header that only counts the errors, each error's own
# line below it ("Value error, ..."), then a link: the detail is the exception's words
_PYDANTIC_HEADER = re.compile(
    r"(?:(?:[\w.]+\.)?ValidationError: )?\d+ validation errors? for \w+\s*$"
)
_PYDANTIC_DETAIL = ("Value error, ", "Assertion failed, ")
# any error's own line, with the error type pydantic appends ("Input should be greater
# than or equal to 0 [type=greater_than_equal, input_value=-1, input_type=int]")
_PYDANTIC_TYPED = re.compile(r"\S.* \[type=[a-z_]+, input_value=.*\]$")
# an exception's class, dotted or not, and its message: read as one only where it ends
# a traceback (a line "Name: message" elsewhere is a logger's or a program's)
_CLASS_LINE = re.compile(r"(?:[A-Za-z_]\w*\.)*[A-Z]\w*: \S")
_PYDANTIC_LINK = "For further information visit https://errors.pydantic.dev/"
# a class named with its module path (``huggingface_hub.utils._http.OfflineModeIsEnabled:
# ...``): an exception line wherever it stands (a logger's name has no capital class)
_QUALIFIED = re.compile(r"(?:[a-z_][a-z0-9_]*\.)+_?[A-Z]\w*: \S")
# a one-line paste that glued a raise statement to its exception ("raise RuntimeError(
# RuntimeError: Cannot re-initialize CUDA ..."): the exception after the statement
_RAISE_THEN = re.compile(
    r"raise\s+[\w.]+\(\s*(?P<exc>(?:[A-Za-z_]\w*\.)*[A-Za-z_]\w*"
    r"(?:Error|Exception|Exit|Interrupt|Failure): \S)"
)
# an exception named with its module path after a frame's source, in the same line
_GLUED = re.compile(r"\s(?:[a-z_][a-z0-9_]*\.)+_?[A-Z]\w*: \S")
_WHAT = re.compile(r"\s*what\(\):\s+\S")  # std::terminate's report of a C++ exception
_CHAINED = (
    "During handling of the above exception",
    "The above exception was the direct cause",
)
_PANIC = re.compile(r"panicked at (?:'(?P<old>.*)', \S+:\d+:\d+|[^\s']+:\d+:\d+:\s*(?P<new>.+))")
_UNWRAP = re.compile(r"called `\w+::\w+\(\)` on an? `\w+` value: (?P<inner>.+)")
_DEBUG_FORM = re.compile(r'(?:Error: )?\w+(?:\(\w+)*\("(?P<inner>.+?)"\)+\s*$')
_RETRY = re.compile(
    r"\bretry(?:ing)?\b|\bwill retry\b|\btrying again\b|\battempt \d+ ?(?:/|of) ?\d+"
    # a wrapper that gives up after its retries, or cancels its own work for it
    r"|\b(?:more than|after) \d+ (?:times|attempts|tries|retries)\b|\bcancel(?:l?ing|l?ed)\b"
    r"|\bgiv(?:e|ing) up\b|\bgave up\b",
    re.IGNORECASE,
)
_SEVERITY = {"fatal": 4, "error": 2}
# a line without a level that says the engine goes on after what failed
# (not inside a flag or a name: "--log-disable", "ignore_eos" say nothing of the kind)
_GOES_ON = re.compile(
    r"(?<![-_])(?:\bfall(?:ing)? ?back\b|\bignor(?:e|ed|ing)\b|\bskipp(?:ing|ed)\b"
    r"|\binstead\b|\bcontinu(?:e|es|ing)\b|\bwill (?:use|try)\b|\bdisabl(?:e|ed|ing)\b)",
    re.IGNORECASE,
)
# words that say something failed, in a line that has no level of its own (llama.cpp
# prints most of its errors so: "ggml_vulkan: Device memory allocation of ... failed."),
# in the line in lower case: "error" anywhere (OutOfMemoryError, ErrorOutOfDeviceMemory),
# or one of these words (a third of the time re.IGNORECASE takes)
_FAILS = re.compile(
    r"\b(?:fail(?:ed|ure|s)?|cannot|can't|could ?n[o']t|unable|not found|no such|errno"
    r"|denied|refused|killed|abort(?:ed)?|exception|invalid|missing|out of memory|no space"
    r"|no matching"
    r"|undefined|illegal|(?:seg)?fault|crash(?:ed)?|died|exceed(?:s|ed)?|insufficient"
    r"|not enough|mismatch|unsupported|not supported|not installed|not available"
    r"|non-zero (?:exit )?(?:status|code)|signal(?:l)?ed|no longer supported"
    # a parser's problem (PyYAML's "expected alphabetic or numeric character, but found")
    r"|expected\b.{1,60}\bbut (?:found|got)"
    # docker compose's end of a service's container: "<service> exited with code 139"
    r"|exited with (?:exit )?code [1-9]\d*)\b"
)


# a shell's report that a program it was to run (or a file named to a command) is not
# there, in the common locales' words: bash's "./start.sh: line 18: ./llama-server: No
# such file or directory" (Spanish: "línea 18: ...: No existe el archivo o el
# directorio"), "bash: llama-server: command not found", dash's "sh: 1: x: not found",
# zsh's "zsh: command not found: x"
_NO_SUCH_FILE = (
    r"No such file or directory|No existe el archivo o el directorio"
    r"|Aucun fichier ou dossier de ce (?:nom|type)|Datei oder Verzeichnis nicht gefunden"
    r"|File o directory non esistente|Arquivo ou diret[oó]rio inexistente"
    r"|Ficheiro ou pasta inexistente|Nie ma takiego pliku ani katalogu"
    r"|Bestand of map bestaat niet|Нет такого файла или каталога|没有那个文件或目录"
    r"|沒有此一檔案或目錄|そのようなファイルやディレクトリはありません"
)
_NO_COMMAND = (
    r"(?:command )?not found|orden no encontrada|no se encontr[oó] la orden"
    r"|commande introuvable|(?:Kein )?Befehl (?:nicht )?gefunden|comando non trovato"
    r"|comando n[aã]o encontrado|nie znaleziono polecenia|opdracht niet gevonden"
    r"|команда не найдена|未找到命令|コマンドが見つかりません"
)
_SHELL_MISSING = re.compile(
    # the first word a program's (a shell's, a command's): not a level or an exception
    r"^(?![\w.]*(?:error|exception|warning)\b|fatal\b)[^\s:]+: "
    r"(?:(?:line|l[ií]nea|ligne|Zeile|riga|linha|linia|regel|строка|行) ?\d+: |\d+: )?"
    rf"(?:exec: )?(?P<what>[^\s:]+): (?:{_NO_SUCH_FILE}|{_NO_COMMAND})\.?\s*$"
    r"|^zsh: (?:command not found|no such file or directory): (?P<zsh>\S+)\s*$",
    re.IGNORECASE,
)
# what a missing path names: a model's file (weights, configuration, tokenizer) is the
# model's; anything else a shell was to run is the program, or the install
_MODEL_FILE = re.compile(
    r"\.(?:gguf|ggml|safetensors|bin|pt|pth|onnx|json|model|tiktoken|engine|plan)$",
    re.IGNORECASE,
)


def _shell_missing(text: str) -> tuple[str, str] | None:
    """The kind and title of a shell's line that a program or file is missing
    (``_SHELL_MISSING``): ``model-load`` for a model's file, else ``install``."""
    match = _SHELL_MISSING.match(text)
    if match is None:
        return None
    what = (match.group("what") or match.group("zsh") or "").strip("'\"`")
    if _MODEL_FILE.search(what) is not None:
        return "model-load", "a file of the model is not where the command names it"
    return "install", "the program the command runs is not installed where it is named"


def _says_failure(text: str) -> bool:
    """True when ``text`` says that something failed (``_FAILS``), or is a C source's
    report of why it aborts (``_SOURCE_ABORT``)."""
    low = text.lower()
    return (
        "error" in low
        or _FAILS.search(low) is not None
        or (":" in text and _SOURCE_ABORT.match(text) is not None)
    )


# lines that end a process by themselves: an assertion (C, glog's CHECK, GGML_ASSERT,
# TensorRT-LLM's), a Go panic, the interpreter's own fatal error
_FATAL = re.compile(
    r"(?:GGML_ASSERT|Fatal Python error|panic: |fatal error: |Check failed: "
    r"|.*\bAssertion (?:`.*' )?failed)"
)
# the same, inside a line (looked for only when its words are there): ggml's GGML_ABORT
# and a compiler's "path/ggml-impl.h:319: fatal error", a GGML_ASSERT after its source
# ("ggml/src/ggml.c:6490: GGML_ASSERT(x) failed"); the dynamic loader's errors,
# which end the process before it starts
_FATAL_INSIDE = re.compile(
    r"[^\s:]*:\d+(?::\d+)?: (?:fatal error\b|GGML_ASSERT\()"
    r"|(?:error while loading shared libraries|symbol lookup error): "
)
_FATAL_WORDS = ("fatal error", "shared libraries", "symbol lookup error", "GGML_ASSERT")
# a C or C++ source's own report of why it aborts, as ggml's GGML_ABORT prints it
# ("tools/mtmd/clip.cpp:4391: Unknown projector type", then "ggml_abort" and the
# backtrace): the file and line, then the message (a compiler's warning or note is none);
# it says that something failed whatever its words, as a line with no level does
_SOURCE_ABORT = re.compile(
    r"(?:[\w.+-]*/)*[\w.+-]+\.(?:c|cc|cpp|cxx|cu|cuh|h|hpp|m|mm):\d+: (?!(?:warning|note)\b)\S"
)


def _is_fatal(text: str) -> bool:
    """True for a line that ends a process by itself (``_FATAL``, ``_FATAL_INSIDE``)."""
    if _FATAL.match(text) is not None:
        return True
    return any(word in text for word in _FATAL_WORDS) and _FATAL_INSIDE.search(text) is not None


# the functions that set a server up from its own options and variables: a file read
# there is one the command gave (a logging configuration, an arguments file)
_SETTINGS_FRAME = re.compile(
    r"^(?:configure_logg|setup_logg|_configure_\w*logg|dictConfig$|fileConfig$|parse_args$"
    r"|from_cli_args$|load_config_file$|_pull_args_from_config$)"
)
_SETTINGS_FILE = Words(
    kind="bad-args",
    title="a file the command gave for the server's own settings could not be read",
    pattern="",
)
# a raise statement with a literal message: what its exception line would have said
_RAISE = re.compile(
    r"""raise\s+(?P<name>[A-Za-z_][\w.]*)\(\s*[fr]?(?P<q>["'])(?P<message>.+?)(?P=q)"""
)
_EXCEPTION_SEVERITY = 3
# classes of candidate lines, most specific first: a signature; an error line whose words
# name a family; a line with no level that says something failed in a family's words;
# an exception, panic or FATAL line naming no family; a line of another program's output
# that an error line introduced, whose words name a family; a wrapper signature; an
# ERROR line naming no family; a line that says it will retry
_SIGNATURE, _FAMILY, _SAID, _EXCEPTIONAL = 8, 7, 6, 5
# a signature of a process's generic end whose message, after the match, may name what
# failed (llama.cpp's "what():  vk::...: ErrorOutOfDeviceMemory"): those words decide
_MESSAGE_KINDS = frozenset(("abort",))
# ... and the operating system's reason, where a line gives one after what failed
# ("failed to open GGUF file '/m/x.gguf' (Permission denied)"): a file of the model that
# the process may not read is the permissions', not the model's
_REASON_KINDS = frozenset(("permission", "disk"))
# ... a line that says a process was ended by a signal (a launcher's child: TGI's
# "Download process was signaled to shutdown with signal 9"), above the wrapper's
# own report that the part failed ("Error: DownloadError"), its consequence
_REPORTED, _ENDED, _WRAPPER, _ERROR, _RETRIED = 4, 3, 2, 1, 0
# an exception logged at these levels was handled (vLLM's warnings with a traceback),
# except at INFO at the end of a traceback printed line by line at INFO: a wrapper that
# relays its child's output so (olmocr's "- __main__ - INFO - " before each line)
_HANDLED = frozenset(("warning", "info", "debug"))
# the function of a traceback's frame, and the phase it names for an exception whose own
# words name no family (the innermost frame that names one decides): weights loaded
# into the model class, the server's warmup request
_FRAME_FUNCTION = re.compile(r'\s*File ["“][^"”]*["”],? line \d+, in (?P<name>[\w<>.]+)')
_FRAME_PHASES: tuple[tuple[re.Pattern[str], str, str], ...] = (
    (
        _SETTINGS_FRAME,
        "bad-args",
        "a file the command gave for the server's own settings could not be read",
    ),
    # the LoRA code sizing or loading an adapter the command gave (a GPT-2 adapter's
    # c_proj on a Llama: "get_hidden_dim not implemented for c_proj")
    (
        re.compile(r"lora", re.IGNORECASE),
        "bad-args",
        "a LoRA adapter the command gave does not fit the model (its modules or sizes)",
    ),
    (
        re.compile(r"load_weights|weight_loader|load_state_dict|load_checkpoint"),
        "model-load",
        "the model's weights do not fit its class (loading them failed)",
    ),
    (re.compile(r"warmup", re.IGNORECASE), "engine-init", "the warmup request failed"),
    (
        re.compile(
            r"init_process_group|init_distributed|initialize_model_parallel"
            r"|init_torch_distributed|new_group|rendezvous"
        ),
        "distributed",
        "the distributed group failed to start",
    ),
    (
        re.compile(
            r"profile_run|determine_num_available_blocks|determine_available_memory"
            r"|initialize_kv_cache|init_memory_pool|profile_max_num_token|available_gpu_memory"
        ),
        "oom",
        "measuring the memory left for the KV cache failed",
    ),
    (
        re.compile(r"snapshot_download|hf_hub_download|download_weights|download_model"),
        "download",
        "downloading the model failed",
    ),
    (re.compile(r"capture|cuda_graph"), "cuda-graph", "CUDA-graph capture failed"),
    (
        re.compile(
            r"load_model|get_model|initialize_model|from_pretrained|get_config|load_config"
            r"|get_tokenizer|load_tokenizer"
        ),
        "model-load",
        "loading the model failed",
    ),
)
# the exception's class and its module, for an exception whose words name no family:
# the library that raised it says which part failed
_CLASS_KINDS: tuple[tuple[re.Pattern[str], str, str], ...] = (
    # a value pydantic rejected, with the error type it appends ("Input should be greater
    # than or equal to 0 [type=greater_than_equal, input_value=-1, ...]"): a setting's
    (
        re.compile(r"\s\[type=[a-z_]+, input_value="),
        "bad-args",
        "a setting has a value its configuration does not accept",
    ),
    (
        re.compile(
            r"^huggingface_hub\.[\w.]*: |^(?:[\w.]+\.)?(?:OfflineModeIsEnabled|HfHubHTTPError"
            r"|ConnectTimeout\w*|ConnectionError|ProxyError|SSLError|NameResolutionError"
            r"|gaierror)\b"
        ),
        "download",
        "the model could not be downloaded",
    ),
    # the model's configuration or class lacks a field this engine reads
    (
        re.compile(r"^AttributeError: '\w*(?:Config|For[A-Z]\w*|Model)' object has no attribute"),
        "unsupported-model",
        "the model's configuration or class lacks what this engine reads",
    ),
    # a Triton kernel whose blocks need more shared memory than this GPU has
    (
        re.compile(r"^(?:[\w.]+\.)?OutOfResources: out of resource: shared memory"),
        "cuda-arch",
        "a kernel needs more shared memory than this GPU has",
    ),
    (
        re.compile(r"^(?:jinja2\.[\w.]*)?Template(?:Syntax)?Error: "),
        "model-load",
        "the model's chat template could not be read",
    ),
)
# what the lines just above an exception or error say the engine was doing (the nearest
# such line decides), for a cause that names no family by its words, class or frames
_ABOVE_PHASES: tuple[tuple[re.Pattern[str], str, str], ...] = (
    (
        re.compile(
            r"\bload(?:ing)? (?:the )?(?:model )?(?:weights|checkpoint|safetensors|shards)"
            r"|\bLoading model from\b",
            re.IGNORECASE,
        ),
        "model-load",
        "it failed while loading the model's weights",
    ),
    (
        re.compile(
            r"\bprofil(?:e|ing)\b|\bKV cache\b|\bmemory pool\b|\bnum_gpu_blocks\b",
            re.IGNORECASE,
        ),
        "oom",
        "it failed while sizing the KV cache",
    ),
    (
        re.compile(
            r"\binit(?:ializ\w*)? (?:the )?(?:distributed|process group|torch\.distributed"
            r"|nccl)|\binit_process_group\b|\bworld_size=",
            re.IGNORECASE,
        ),
        "distributed",
        "it failed while the distributed group started",
    ),
    (
        # not a line that says graphs are off ("Disable prefill CUDA graph because ...")
        re.compile(
            r"^(?!.*\bdisabl).*?(?:\bcapturing (?:cuda ?)?graphs?\b|\bcuda ?graph)",
            re.IGNORECASE,
        ),
        "cuda-graph",
        "it failed while capturing CUDA graphs",
    ),
    (re.compile(r"\bdownloading\b", re.IGNORECASE), "download", "it failed while downloading"),
)
_ABOVE_LINES = 12  # how far above the cause a phase line may stand


def _class_kind(text: str) -> tuple[str, str] | None:
    """The kind and title an exception's class and module name, if they name one."""
    head = text[:200]
    for pattern, kind, title in _CLASS_KINDS:
        if pattern.search(head) is not None:
            return kind, title
    return None


# a frame that finds or fetches the model itself (vLLM's engine arguments resolve the
# model's path: from_cli_args, then get_model_path and the Hub's snapshot_download)
_MODEL_FRAME = re.compile(r"model|snapshot_download|hf_hub_download")


def _settings_read(functions: Sequence[str]) -> bool:
    """Whether the innermost of ``functions`` that sets the server up from its options
    read the file itself, not through a frame below it that finds the model."""
    at = next(
        (n for n in range(len(functions) - 1, -1, -1) if _SETTINGS_FRAME.search(functions[n])),
        None,
    )
    if at is None:
        return False
    return not any(_MODEL_FRAME.search(name) for name in functions[at + 1 :])


def _frame_phase(functions: Sequence[str]) -> tuple[str, str] | None:
    """The kind and title the innermost frame of ``functions`` names, if one does."""
    for name in reversed(functions):
        for pattern, kind, title in _FRAME_PHASES:
            if pattern.search(name):
                return kind, title
    return None


@dataclass(frozen=True, slots=True, kw_only=True)
class Cause:
    """The line that says what failed, the signature that names it, and its kind."""

    line: str  # the log line as printed (for matched_line); lines it spans, joined
    text: str  # its message without prefixes (for the verdict's reason)
    signature: Signature | None = None  # the fatal signature it matched, if any
    # the kind its signature or its words name (None: an error line naming no family,
    # or a wrapper), with the title and the hint that go with it
    kind: str | None = None
    title: str | None = None
    hint: str | None = None
    # the detail a failure line introduced right above it ("Last error:", "stderr: ..."),
    # chosen over that line: a signature's hit gives way to it where it names the root
    detail: bool = False


def strip_prefix(line: str) -> str:
    """``line`` without the logger, process and container prefixes engines print."""
    return normalise(line).body


# an indented line that opens with a sentence saying something failed ("Failed to run the
# vllm server: ..."): no language's source line reads so (two words and no operator); a
# wrapper indented it
_FAILURE_SENTENCE = re.compile(r"(?:Failed|Unable) to [a-z]+ |(?:Could not|Cannot) [a-z]+ ")


def is_source(normal: Normal) -> bool:
    """True for a traceback's frame header, source line, caret marks or continuation, and
    a C++ backtrace's frame.

    Indentation counts only once the wrappers are off (a launcher's tab is not a
    traceback's); an indented line that reads as an exception or ``what():`` is one.
    """
    body = normal.body
    text = body.strip()
    if not text:
        return False
    frame = _FRAME.match(body)
    if frame is not None:
        # a one-line paste that glued the frame, its source and its exception ("File
        # "...", line 519, in send raise ConnectionError(e) requests.exceptions.
        # ConnectionError: ..."): the exception is there to read
        return _GLUED.search(body, frame.end()) is None
    if _MARKERS.match(body) or _CPP_FRAME.match(body) or _GDB.match(body):
        return True
    if text.startswith(("raise ", "raise(")) or text == "raise":
        return _RAISE_THEN.match(text) is None
    if normal.indent < 4:
        return False
    return not (_EXCEPTION.match(text) or _WHAT.match(text) or _FAILURE_SENTENCE.match(text))


def is_source_line(line: str) -> bool:
    """``is_source`` of a line as printed."""
    return is_source(normalise(line))


def _exception(normal: Normal) -> str | None:
    if is_source(normal):
        return None
    text = normal.text
    if _WHAT.match(text) or _EXCEPTION.match(text) or text.startswith(_PYDANTIC_DETAIL):
        return text
    if text.endswith("]") and _PYDANTIC_TYPED.match(text):
        return text
    glued = _RAISE_THEN.match(text)
    if glued is not None:
        return text[glued.start("exc") :]
    return None


def exception_text(line: str) -> str | None:
    """The exception (or ``what():``) text of an error line, or None if it is not one."""
    return _exception(normalise(line))


def _inner(text: str) -> tuple[str, bool]:
    """The message inside a panic or a Rust error's debug form; True for a panic."""
    panic = _PANIC.search(text)
    if panic is not None:
        inner = (panic.group("old") or panic.group("new") or "").strip()
        unwrapped = _UNWRAP.search(inner)
        if unwrapped is not None:
            inner = unwrapped.group("inner")
        debug = _DEBUG_FORM.match(inner)
        return (debug.group("inner") if debug else inner) or text, True
    debug = _DEBUG_FORM.match(text)
    if debug is not None and text.startswith("Error: "):
        return debug.group("inner"), False
    return text, False


@dataclass(frozen=True, slots=True)
class _Candidate:
    position: int  # in the logical lines
    rank: int  # _SIGNATURE ... _RETRIED
    severity: int
    order: int  # the signature's place in the profile's order (wrappers)
    cause: Cause
    relayed: bool = False  # the detail that the failure line just above introduced


@functools.lru_cache(maxsize=4096)
def _literal(pattern: str) -> str:
    """A literal every match of ``pattern`` holds ("" when none is known)."""
    return required_literal(pattern.removeprefix("^")) or ""


# a fatal rule with the literal every match of it holds ("" when none is known)
_Rule = tuple[str, re.Pattern[str], Signature]


def _first_rule(
    rules: Sequence[_Rule], text: str, line: str
) -> tuple[Signature, re.Match[str] | None] | None:
    """The first rule that matches the message (with its match), or the line as printed
    (a pattern that spans the prefix: no match of the message to cut out)."""
    haystack = line if text in line else f"{line}\n{text}"  # JSON: the message differs
    for literal, pattern, signature in rules:
        if literal not in haystack:
            continue  # neither can match: the search would only confirm it, slower
        match = pattern.search(text)
        if match is not None:
            return signature, match
        if pattern.search(line) is not None:
            return signature, None
    return None


def _any(patterns: Sequence[tuple[str, re.Pattern[str]]], text: str) -> bool:
    return any(
        literal in text and pattern.search(text) is not None for literal, pattern in patterns
    )


def _candidate(
    position: int,
    entry: Logical,
    rules: Sequence[_Rule],
    hints: Mapping[str, str],
    *,
    reported: bool = False,
    inside: bool = False,
    frames: Sequence[str] = (),
    continued: bool = False,
) -> _Candidate | None:
    """``entry`` as a cause candidate, or None when it cannot be one; ``reported``: it
    is part of what an error line introduced (a shard's standard error), so it counts as
    an error line whatever its own level; ``inside``: it is a later line of a message
    printed as one line (JSON), so only its own text is matched, not the line printed;
    ``frames``: the functions of the traceback it ends (outermost first), empty when it
    ends none; ``continued``: a line follows it in the log."""
    normal = entry.normal
    text = normal.text
    exception = _exception(normal)
    if exception is None and (
        (frames and _CLASS_LINE.match(text) is not None) or _QUALIFIED.match(text) is not None
    ):
        # the line that ends a traceback is its exception, whatever the class is called
        # (huggingface_hub's OfflineModeIsEnabled: no Error in its name), and so is a
        # class named with its module path anywhere
        exception = text
    shown, panic = _inner(text)
    severity = _SEVERITY.get(normal.level or "", 0)
    relayed = normal.level == "info" and bool(frames)
    if exception is not None and (normal.level not in _HANDLED or relayed):
        severity = max(severity, _EXCEPTION_SEVERITY)
    if panic or _is_fatal(text):
        severity = _SEVERITY["fatal"]
    own = severity
    if reported:
        severity = max(severity, _SEVERITY["error"])
    line = entry.line.strip()
    hit = _first_rule(rules, text, text if inside else entry.line)
    if (
        hit is not None
        and hit[1] is not None
        and not hit[0].wrapper
        and (
            _ANSWER.search(text, 0, hit[1].start()) is not None
            or _QUOTES_ORIGINAL.search(text, 0, hit[1].start()) is not None
        )
    ):
        # the hit is inside another program's answer that this line relays
        # (``relays_answer``): a wrapper's line here
        hit = (replace(hit[0], wrapper=True), hit[1])
    if hit is not None and not hit[0].wrapper:
        signature = hit[0]
        said = None if hit[1] is None else _said_kind(signature, text[hit[1].end() :])
        if said is not None:
            signature = replace(
                signature,
                kind=said.kind,
                title=said.title,
                hint=words_hint(said, hints) or "",
            )
        return _Candidate(
            position,
            _SIGNATURE,
            severity,
            0,
            Cause(
                line=line,
                text=shown,
                signature=signature,
                kind=signature.kind,
                title=signature.title,
                hint=signature.hint,
            ),
        )
    wrapper = hit[0] if hit is not None else None
    missing = None
    if wrapper is None and normal.level not in _HANDLED and ": " in text:
        missing = _shell_missing(text)
    if missing is not None:
        # a shell says the program it was to run is not there: nothing of it ran
        kind, title = missing
        rank = _FAMILY if own >= _SEVERITY["error"] else _SAID
        cause = Cause(
            line=line,
            text=text,
            kind=kind,
            title=title,
            hint=hints.get(kind, KIND_HINTS.get(kind)),
        )
        return _Candidate(position, rank, severity, 0, cause)
    if (
        own > 0 or reported or normal.level is None or _GO_SIGNAL.search(text) is not None
    ) and _SIGNALLED.search(text) is not None:
        # a process a signal ended: how it ended is what the line says, whatever the
        # process's name says it did ("Download process"); a colon after it opens the
        # process's output, often empty
        return _ended(position, entry, shown=shown, severity=severity, wrapper=wrapper)
    if wrapper is None and (
        # a line that introduces its detail, unless it has no level and says in a
        # family's words what failed (Metal's "ggml_metal_library_compile_pipeline: failed
        # to compile pipeline:", then the pipeline's name and "was not found in the
        # library"): that line is the failure, its detail only names the kernel
        (
            text.endswith(":")
            and (normal.level is not None or words_kind(text) is None)
            # an exception that ends a traceback, its message going on below ("ValueError:
            # parallel topology is inconsistent (...):", then what is): the failure itself
            and not (frames and exception is not None and normal.level is None and continued)
        )
        or _PYDANTIC_HEADER.match(text) is not None  # its detail lines follow
        or text.startswith(_PYDANTIC_LINK)
        or (own == 0 and not reported and normal.level is not None)
        or (own == 0 and not _says_failure(text))
    ):
        # a line that only introduces what follows; one with no error level of its own
        # (what an error line introduced, too: a warning in a shard's standard error)
        # that says nothing failed; one whose level says it is no error (INFO, WARNING)
        return None
    # a wrapper's line may say what failed after its own words
    words_in = text
    if hit is not None and hit[1] is not None:
        words_in = text[: hit[1].start()] + " " + text[hit[1].end() :]
    typed = words_in.find(" [type=")
    if typed > 0 and _PYDANTIC_TYPED.match(words_in) is not None:
        # pydantic's error type and the input it rejected: what was given, not words of
        # what failed (a model's path in input_value)
        words_in = words_in[:typed]
    response = words_in.find("<Response [")
    if response >= 0:
        # a requests Response and its body: the answer of a server the process asked (its
        # own warmup request, through a proxy), not the words of what failed in it
        words_in = words_in[:response]
    words = words_kind(words_in)
    order = 0
    if wrapper is not None:
        order = next(n for n, (_, _, sig) in enumerate(rules) if sig.pattern == wrapper.pattern)
    if wrapper is None and severity == 0 and (words is None or _GOES_ON.search(text)):
        # says something failed, with no level: naming no family, or saying that the
        # engine goes on without it ("falling back to ...", "Ignore import error ...")
        return None
    if (
        (
            (words is None and (_OS_ERROR_PATH.search(text) or _HANDLER.search(text)))
            or (words is not None and words.kind in ("model-load", "install"))
        )
        and exception is not None
        and wrapper is None
        and _settings_read(frames)
    ):
        # a file that is no JSON or YAML, read while the server set itself up from its
        # options (SGLang's configure_logger reading SGLANG_LOGGING_CONFIG_PATH), not
        # while it loaded the model: the file the command gave; a module a logging
        # configuration names (``ext://sys.stdot``) is that file's mistake, not a package
        # to install
        words = _SETTINGS_FILE
    if words is not None:
        if own >= _SEVERITY["error"] or wrapper is not None:
            rank = _FAMILY
        else:
            rank = _REPORTED if reported else _SAID
        cause = Cause(
            line=line,
            text=shown,
            signature=wrapper,
            kind=words.kind,
            title=words.title,
            hint=words_hint(words, hints),
        )
    else:
        if wrapper is not None:
            rank = _WRAPPER
        else:
            rank = _EXCEPTIONAL if severity >= _EXCEPTION_SEVERITY else _ERROR
        phase = None
        if exception is not None and wrapper is None:
            phase = _class_kind(exception) or _frame_phase(frames)
        if phase is None:
            cause = Cause(line=line, text=shown, signature=wrapper)
        else:
            kind, title = phase
            hint = hints.get(kind, KIND_HINTS.get(kind))
            cause = Cause(line=line, text=shown, kind=kind, title=title, hint=hint)
    if wrapper is None and _RETRY.search(text):
        rank = _RETRIED
    return _Candidate(position, rank, severity, order, cause)


def select_cause(
    lines: Sequence[str],
    fatal: Iterable[tuple[re.Pattern[str], Signature]],
    *,
    progress: Sequence[re.Pattern[str]] = (),
    hints: Mapping[str, str] | None = None,
    literals: Mapping[str, str] | None = None,
) -> Cause | None:
    """The cause among ``lines`` (oldest first) by the rule above; None if none says one.

    ``fatal`` is the profile's compiled fatal rules in priority order; ``progress`` the
    patterns of lines that show the engine moving on (phase openings, ready lines);
    ``hints`` the profile's hint per kind, for a kind found by its words; ``literals``
    the literal each pattern's matches hold, by pattern (gate/watch.py's ``Rules`` has
    them: the gate's first verdict then computes none).
    """
    known = literals or {}

    def literal(pattern: re.Pattern[str]) -> str:
        found = known.get(pattern.pattern)
        return _literal(pattern.pattern) if found is None else found

    rules = tuple((literal(pattern), pattern, sig) for pattern, sig in fatal)
    moves = tuple((literal(pattern), pattern) for pattern in progress)
    entries = logical_lines(lines)
    found: list[_Candidate] = []
    moved_on: list[int] = []
    died: list[int] = []  # lines that say a process ended with a failing status
    after_frame = False  # the line after a frame's header is its source line
    # inside what an error line introduced ("Shard 3 failed to start:", then the shard's
    # own output), until the reporter's next line: the logger family of the reporter
    reporter: str | None = None
    reporting = False
    raised: Logical | None = None  # the last raise statement with a literal message
    # the next line is the detail a failure line introduced: NCCL's "Last error:" under
    # its error, a line that relays another program's "stderr: ..."
    relay_next = False
    last_failing = -2  # the position of the last candidate at ERROR severity or above
    functions: list[str] = []  # the frames of the traceback being read, outermost first
    for position, entry in enumerate(entries):
        normal = entry.normal
        text = normal.text
        if not text:
            continue
        if text.startswith("Traceback (most recent call last)"):
            functions = []
            continue
        if reporting and normal.source == reporter:
            reporting = False
        framed, after_frame = after_frame, bool(_FRAME.match(normal.body))
        if after_frame:
            function = _FRAME_FUNCTION.match(normal.body)
            functions.append(function.group("name") if function else "")
        if text.startswith(_CHAINED) or is_source(normal):
            if _RAISE.search(text):
                raised = entry
            continue
        if framed and not (_EXCEPTION.match(text) or _WHAT.match(text)):
            continue  # a source line a paste or a logger took the indentation from
        frames, functions = functions, []  # a traceback ends at its first other line
        if _SURVIVED.search(text):
            # llama-server's estimate of memory failed, and it goes on to load for real:
            # what failed in the estimate fails again, in the load that ends the start
            moved_on.append(position)
            continue
        if _any(moves, text) and _first_rule(rules, text, text) is None:
            # a phase's opening, unless a fatal rule names the line ("error loading
            # model: ..." holds the opening's "loading model")
            moved_on.append(position)
            continue
        if any(word in text for word in _DIED_WORDS) and _DIED.search(text) is not None:
            died.append(position)
        inside = position > 0 and entries[position - 1].line is entry.line
        relayed, relay_next = relay_next, False
        candidate = _candidate(
            position,
            entry,
            rules,
            hints or {},
            reported=reporting or relayed,
            inside=inside,
            frames=frames,
            continued=position + 1 < len(entries) and bool(entries[position + 1].normal.text),
        )
        if candidate is not None:
            if relayed:
                candidate = replace(candidate, relayed=True)
            found.append(candidate)
            if candidate.severity >= _SEVERITY["error"]:
                last_failing = position
            relay_next = _RELAYS.search(text) is not None
        elif text.endswith(":") and normal.level is None and last_failing == position - 1:
            relay_next = True  # "Last error:" right under a failure line
        if text.endswith(":") and _SEVERITY.get(normal.level or "", 0) >= _SEVERITY["error"]:
            reporter, reporting = normal.source, True
    if not found:
        if raised is not None:
            return _from_raise(raised, rules, hints or {})
        return _before_usage(entries, hints or {}) or _last_failure(entries, hints or {})
    last = found[-1].position
    # a sign of moving on after a process of the engine died (SGLang's HTTP server that
    # starts after its schedulers "terminated with 255") is no recovery: the failure
    # that killed the process, above, stays in the episode
    moved_on = [
        p
        for p in moved_on
        if not any(
            max((c.position for c in found if c.position < p), default=-1) < d < p for d in died
        )
    ]
    start = max((p for p in moved_on if p < last), default=-1)
    found = _without_generic_ends([c for c in found if c.position > start])
    best = max(c.rank for c in found)
    chosen = [c for c in found if c.rank == best]
    if best == _WRAPPER:
        pick = min(chosen, key=lambda c: (c.order, -c.position))
    elif best == _RETRIED:
        pick = chosen[-1]
    else:
        chosen = _past_library_roots(entries, _unhandled(entries, chosen))
        # a line that quotes another error as its original ("Failed to load model - not
        # enough GPU memory ... (original error: CUDA out of memory ...)") is that
        # error's consequence: the error's own line, where the log holds it, is the cause
        pick = min(
            chosen,
            key=lambda c: (
                -c.severity,
                _QUOTES_ORIGINAL.search(c.cause.text) is not None
                or (_CHILD_FAILED.search(c.cause.text) is not None and c is not chosen[-1]),
                c.position,
            ),
        )
    pick = _said_first(entries, found, pick, hints or {})
    missing = _program_missing(entries, pick)
    if missing is not None:
        return missing
    detail = next(
        (
            c
            for c in found
            if c.relayed and 0 < c.position - pick.position <= _DETAIL_LINES and c.cause.kind
        ),
        None,
    )
    if detail is not None and (
        best != _SIGNATURE or kind_order(detail.cause.kind) < kind_order(pick.cause.kind)
    ):
        # the detail the chosen line introduces right below it names what failed ("NCCL
        # error ... unhandled cuda error", then "Last error: Failed to CUDA calloc ...")
        pick = replace(detail, cause=replace(detail.cause, detail=True))
    if pick.cause.text.endswith(_TRACEBACK_OPENS):
        ending = _traceback_end(entries, pick.position)
        if ending is not None:
            # the line only announces a traceback (TGI's "Download encountered an error:
            # Traceback ..."): the exception that ends it is what failed; its words'
            # kind if they name one, else the announcing line's
            words = words_kind(ending.normal.text)
            kind = pick.cause.kind if words is None else words.kind
            title = pick.cause.title if words is None else words.title
            hint = pick.cause.hint
            if words is not None:
                hint = words_hint(words, hints)
            return replace(
                pick.cause,
                line=ending.line.strip(),
                text=ending.normal.text,
                kind=kind,
                title=title,
                hint=hint,
            )
    if _EMPTY_MESSAGE.fullmatch(pick.cause.text) is not None:
        # an exception whose message starts on the next line ("ImportError: ", then
        # "[sgl_kernel] CRITICAL: Could not load any common_ops library!"): that line
        # says what failed, the class its kind
        following = next(
            (e for e in entries[pick.position + 1 : pick.position + 3] if e.normal.text),
            None,
        )
        if following is not None:
            return replace(
                pick.cause,
                line=following.line.strip(),
                text=f"{pick.cause.text.strip()} {following.normal.text}",
            )
    if (
        pick.cause.kind not in ("port-in-use", "permission")
        and _ERRNO.match(pick.cause.text) is not None
        and _after_app_startup(entries, pick.position)
    ):
        # uvicorn's error while it binds, right after the app started: the address it was
        # given to listen on ("[Errno -2] Name or service not known": a --host that does
        # not resolve), not a download's name lookup
        return replace(pick.cause, kind="bad-args", title=_LISTEN_TITLE, hint=_LISTEN_HINT)
    signature = pick.cause.signature
    if best == _SIGNATURE and signature is not None and signature.rooted:
        root = _root(entries, found, pick, hints or {})
        if root is not None:
            return root
    if best == _SIGNATURE and signature is not None and signature.explained_by:
        root = _explaining(entries[: pick.position], signature.explained_by, hints or {})
        if root is not None:
            return root
    if pick.cause.kind is None and signature is None and pick.severity >= _SEVERITY["error"]:
        failed = _failed_import(entries[: pick.position], pick.cause.text, hints or {})
        if failed is not None:
            return failed
        above = _above_phase(entries, pick.position, start)
        if above is not None:
            kind, title = above
            hint = (hints or {}).get(kind, KIND_HINTS.get(kind))
            return replace(pick.cause, kind=kind, title=title, hint=hint)
    return _in_context(found, pick)


# a module that is not installed, and the engine's re-raise of it saying how to install it
_NO_MODULE = re.compile(r"ModuleNotFoundError: No module named '(?P<module>[\w.]+)'")
_PLEASE_INSTALL = re.compile(
    r"\b(?:[Pp]lease|[Yy]ou (?:need|must)) (?:to )?install\b|\bInstall it with: "
    # llama-cpp-python's "Llama.from_pretrained requires the huggingface-hub package.
    # You can install it with `pip install huggingface-hub`."
    r"|\brequires the [\w.-]+ package\b.*\b[Yy]ou can install it\b"
)
_INSTALL_AFTER = 90  # logical lines: one chained traceback
# an exception's message, after its class: what a logged line may end with
_MESSAGE_AFTER_CLASS = re.compile(r"(?:[A-Za-z_]\w*\.)*[A-Z]\w*: (?P<message>.{12,})")


def _in_context(found: Sequence[_Candidate], pick: _Candidate) -> Cause:
    """``pick``'s cause, quoted from the line that logged it with what was being done,
    where an earlier line of the episode says what failed (``Failed to``, ``Unable
    to``, ``Could not``, ``Cannot``) and ends with the exception's whole message
    (``Failed to read config file /etc/serve.yaml: while scanning a simple key``, then
    the traceback of ``yaml.scanner.ScannerError: while scanning a simple key``): the
    same failure, the earliest line of it, naming its object. A missing module's
    ``ModuleNotFoundError`` is quoted from the engine's re-raise below it that says how
    to install it (``ImportError: Please install bitsandbytes>=0.46.1 via ...``). The
    kind stays the exception's."""
    missing = _NO_MODULE.search(pick.cause.text)
    if missing is not None:
        # the engine's own re-raise of a missing module says how to install it
        # ("ImportError: Please install bitsandbytes>=0.46.1 via `pip install ...`")
        module = missing.group("module").split(".")[0]
        for candidate in found:
            text = candidate.cause.text
            if (
                0 < candidate.position - pick.position <= _INSTALL_AFTER
                and _PLEASE_INSTALL.search(text) is not None
                and (module in text or module.replace("_", "-") in text)
            ):
                return replace(pick.cause, line=candidate.cause.line, text=text)
        return pick.cause
    matched = _MESSAGE_AFTER_CLASS.match(pick.cause.text)
    if matched is None:
        return pick.cause
    message = matched.group("message").strip()
    for candidate in found:
        if candidate.position >= pick.position:
            break
        text = candidate.cause.text
        if (
            _FAILURE_SENTENCE.match(text) is not None
            and text.endswith(message)
            and text[-len(message) - 2 :].startswith(": ")
        ):
            return replace(pick.cause, line=candidate.cause.line, text=text)
    return pick.cause


# a process's generic end: how it died, whatever failed (a signature of these kinds)
GENERIC_ENDS = frozenset(("segfault", "fatal-python", "abort"))


def _without_generic_ends(found: list[_Candidate]) -> list[_Candidate]:
    """``found`` (one episode) less the signatures of a process's generic end (``Fatal
    Python error: Aborted``, ``Segmentation fault``) where a line names what failed, in a
    family's words or by a signature of its own, at an error level or above (an
    accelerator's ``what():  NPU out of memory ...`` before the interpreter's abort):
    the end only says how a process died, of that failure. Before or after it: each
    rank of a group prints its own failure and its own end, interleaved."""
    if not any(c.rank == _SIGNATURE and c.cause.kind in GENERIC_ENDS for c in found):
        return found
    specific = any(
        c.rank >= _FAMILY
        and c.severity >= _SEVERITY["error"]
        and c.cause.kind not in GENERIC_ENDS
        and family_of(c.cause.kind) not in (None, "process")
        for c in found
    )
    if not specific:
        return found
    return [c for c in found if not (c.rank == _SIGNATURE and c.cause.kind in GENERIC_ENDS)]


_DURING_HANDLING = "During handling of the above exception, another exception occurred"


def _unhandled(entries: Sequence[Logical], chosen: list[_Candidate]) -> list[_Candidate]:
    """``chosen`` less the exceptions whose handler raised the same class again (TGI's
    download: ``No .safetensors weights found``, then, during handling of it, the
    fallback's ``No .bin weights found``): the fallback failed as well, and its
    exception, the last, is the failure that ended the process. The same message again
    is no fallback: another rank's report of the same failure (SGLang's two
    data-parallel schedulers, each with its own traceback)."""
    if len(chosen) < 2:
        return chosen
    handled = [n for n, e in enumerate(entries) if _DURING_HANDLING in e.normal.text]
    if not handled:
        return chosen
    kept = []
    for c in chosen:
        name = c.cause.text.split(":", 1)[0].strip()
        again = any(
            d.position > c.position
            and d.cause.text.split(":", 1)[0].strip() == name
            and d.cause.text != c.cause.text
            and any(c.position < h < d.position for h in handled)
            for d in chosen
        )
        if not again:
            kept.append(c)
    return kept or chosen


# a library's own exception at the root of a chain, in its terms (a JSON parser's
# position, a socket's name lookup), that the code which called it re-raised in the
# user's: the file that is not JSON, the host it could not reach
_LIBRARY_ROOT = re.compile(
    # the parser's "not JSON at all" (an empty file, another format); a message that says
    # what is wrong in the file ("Unexpected UTF-8 BOM") is kept
    r"(?:json\.decoder\.)?JSONDecodeError: Expecting value: line 1 column 1 \(char 0\)"
    r"|(?:httpcore|httpx|requests\.exceptions|urllib3\.exceptions)\.\w*(?:Connect|NameResolution)"
    r"\w*: |socket\.gaierror: "
    # the Hub client's wrap of the same, between the socket's and the caller's
    r"|(?:huggingface_hub\.errors\.)?LocalEntryNotFoundError: An error happened while"
    # a lookup in a table by the value given (a registry of publishers, of backends)
    r"|KeyError: (?P<key>'[^']+')$"
)
# a path given where a module's name is looked up ("No module named '/p/acme_tools'")
_PATH_AS_MODULE = re.compile(r"ModuleNotFoundError: No module named '[^']*/")
# an option of a command line, as a message names it
_NAMES_OPTION = re.compile(r"(?<![\w-])--[a-z][a-z0-9]*(?:-[a-z0-9]+)*\b")
# a file not found inside a folder (the folder as written)
_MISSING_INSIDE = re.compile(r"FileNotFoundError: \[Errno 2\] [^:]+: '(?P<folder>/[^']+)/[^/']+'$")
# the re-raise names the file or the address
_NAMES_WHAT = re.compile(r"['\"`](?:/|https?://)[^'\"`]+['\"`]")


# a file read as text that is not in the codec, at the root of a chain
# logging's dictConfig that re-raises a handler's failure without its path ("Unable to
# configure handler 'file'"), over the OS error that names the file
_HANDLER = re.compile(r"\bUnable to configure (?:handler|formatter|filter)\b")
_OS_ERROR_PATH = re.compile(r"^(?:\w+\.)*\w+Error: \[Errno \d+\] [^:]+: '/")
_JSON_NAMED = re.compile(r"\.json['\"`]")
_UNDECODED = re.compile(
    r"^(?:\w+\.)*UnicodeDecodeError: '[\w-]+' codec can't decode byte 0x[0-9a-f]+ in "
    r"position (?P<at>\d+)"
)


def _text_undecoded(text: str) -> bool:
    """Whether ``text`` is a codec's failure past the file's first two bytes: text in
    another codec (Latin-1's ``0xf6 in position 29``); at its start, the file is no
    text at all (gzip's ``0x8b in position 1``), which the re-raise says better."""
    found = _UNDECODED.search(text)
    return found is not None and int(found.group("at")) >= 2


def _said_first(
    entries: Sequence[Logical],
    found: Sequence[_Candidate],
    pick: _Candidate,
    hints: Mapping[str, str],
) -> _Candidate:
    """The line above ``pick`` that says its failure in its own words, with ``pick``'s
    kind: the ``UnicodeDecodeError`` at the root of its chain, where the re-raise says
    only that the file is no JSON (``OSError: It looks like the config file at
    '/m/config.json' is not a valid JSON file.`` over a config.json saved in Latin-1),
    or llama.cpp's grammar parser's ``error parsing grammar: expecting name at {`` above
    ``failed to parse grammar``; or the OS error that names the file, under logging's
    ``Unable to configure handler 'file'``; or the detail below a line that ends with a colon
    (``JSON schema conversion failed:``, then ``JSON schema error at #: cannot resolve
    $ref ...``); else ``pick``."""
    if pick.cause.kind is None:
        return pick
    # a JSON file that is not UTF-8 text (another path, an archive or a weights file
    # given for the folder, is what the re-raise names: that line says what to fix)
    chains = [n for n, e in enumerate(entries) if e.normal.text.startswith(_CHAINED)]
    root = next(
        (
            c
            for c in found
            if c.position < pick.position
            and (
                (_text_undecoded(c.cause.text) and _JSON_NAMED.search(pick.cause.text))
                or (_OS_ERROR_PATH.search(c.cause.text) and _HANDLER.search(pick.cause.text))
            )
            and any(c.position < n < pick.position for n in chains)
        ),
        None,
    )
    if root is not None:
        was = pick.cause
        cause = replace(root.cause, kind=was.kind, title=was.title, hint=was.hint)
        return replace(root, cause=cause)
    text = pick.cause.text
    # the next line may be a wrapper's own report of the same failure (SGLang's
    # "Received sigquit from a child process. It usually means the child failed.",
    # after an exception whose message is empty), not the detail
    signed = {c.position for c in found if c.cause.signature is not None}
    if text.endswith(":") and pick.position + 1 < len(entries):
        below = entries[pick.position + 1]
        said = below.normal.text
        if (
            _SAYS_ERROR.search(said)
            and len(said.split()) >= _DETAIL_WORDS
            and pick.position + 1 not in signed
        ):
            # the line announces its detail on the next ("JSON schema conversion failed:",
            # then "JSON schema error at #: cannot resolve $ref ...")
            line = below.line.strip()
            words = words_kind(said)
            if words is None:
                return replace(pick, cause=replace(pick.cause, line=line, text=said))
            hint = words_hint(words, hints)
            detail = Cause(line=line, text=said, kind=words.kind, title=words.title, hint=hint)
            return replace(pick, cause=detail)
    if _GRAMMAR_FAILED.search(pick.cause.text):
        above = entries[max(0, pick.position - _GRAMMAR_ABOVE) : pick.position]
        parsed = next((e for e in reversed(above) if _GRAMMAR_SAYS.search(e.normal.text)), None)
        if parsed is not None:
            # llama.cpp's parser said where the grammar went wrong, above its caller's
            # report ("failed to parse grammar"): the same failure, in its own words
            line, text = parsed.line.strip(), parsed.normal.text
            whole, own = _GRAMMAR_WHOLE.search(line), _GRAMMAR_WHOLE.search(text)
            if whole is not None and own is not None:
                # a message that ends with its own words; what the run joined after it
                # (the abort's "terminate called ...") is another line's
                line, text = line[: whole.end()], text[: own.end()]
            return replace(pick, cause=replace(pick.cause, line=line, text=text))
    return pick


# an exception raised without a message (its assertions aside: their source line says
# what was checked)
_BARE_EXCEPTION = re.compile(r"^(?:\w+\.)*(?!AssertionError\b)\w+(?:Error|Exception):?\s*$")


def _past_library_roots(entries: Sequence[Logical], chosen: list[_Candidate]) -> list[_Candidate]:
    """``chosen`` less a library's exception at the root of a chain (``_LIBRARY_ROOT``)
    where a later exception of the chain, past a chaining line, says it again naming the
    file or the address (``OSError: It looks like the config file at '/m/config.json' is
    not a valid JSON file.``, ``OSError: We couldn't connect to 'https://huggingface.co'
    ...``), or a table's ``KeyError: 'nats'`` where it says the key again (``ValueError:
    Unknown event publisher 'nats'``): that one says what failed in the user's terms."""
    if len(chosen) < 2:
        return chosen
    chains = [n for n, e in enumerate(entries) if e.normal.text.startswith(_CHAINED)]
    if not chains:
        return chosen
    kept = []
    for c in chosen:
        if _PATH_AS_MODULE.search(c.cause.text) is not None and any(
            d.position > c.position and any(c.position < n < d.position for n in chains)
            for d in chosen
        ):
            # a file's path tried as a module's name first (vLLM's plugin import), then,
            # during handling, loaded from the path: that load's error is what failed
            continue
        said = _MESSAGE_AFTER_CLASS.search(c.cause.text)
        if said is not None and any(
            d.position > c.position
            and said.group("message") in d.cause.text
            and _NAMES_OPTION.search(d.cause.text.replace(said.group("message"), "")) is not None
            and any(c.position < n < d.position for n in chains)
            for d in chosen
        ):
            # the root's message again, after the option it belongs to ("--tool-call-parser
            # mistral cannot be used with the tokenizer of '/m': Mistral parser could not
            # locate ..."): the re-raise says what the user must change
            continue
        if _BARE_EXCEPTION.match(c.cause.text) and any(
            d.position > c.position
            and not _BARE_EXCEPTION.match(d.cause.text)
            and any(c.position < n < d.position for n in chains)
            for d in chosen
        ):
            # an exception with no message at the chain's root (a platform's bare
            # NotImplementedError), handled by code that raised one that says what was
            # missing ("No accelerator (CUDA, XPU, ...) or platform plugin is available.")
            continue
        inside = _MISSING_INSIDE.search(c.cause.text)
        if inside is not None and any(
            d.position > c.position
            and inside.group("folder") in d.cause.text
            and family_of(d.cause.kind) in (None, family_of(c.cause.kind))
            and any(c.position < n < d.position for n in chains)
            for d in chosen
        ):
            # a file the code looked for inside a folder the user gave (an adapter's
            # adapter_config.json), and the re-raise that names the folder ("No adapter
            # found for /m"): the folder is what the user gave, and what is wrong
            continue
        root = _LIBRARY_ROOT.match(c.cause.text)
        if root is not None and any(
            d.position > c.position
            and (
                _NAMES_WHAT.search(d.cause.text) is not None
                if root.group("key") is None
                else root.group("key") in d.cause.text
            )
            and family_of(d.cause.kind) in (None, family_of(c.cause.kind))
            and any(c.position < n < d.position for n in chains)
            for d in chosen
        ):
            continue
        kept.append(c)
    return kept or chosen


# a line that wraps another error's message as its original one
def _program_missing(entries: Sequence[Logical], pick: _Candidate) -> Cause | None:
    """The shell's ``/bin/sh: 1: lscpu: not found`` above ``pick``, a
    ``CalledProcessError`` of that program with the shell's status for a program not
    found (127), as the cause (install): the program is what is missing, the
    exception its parent's report."""
    failed = _NOT_FOUND_STATUS.search(pick.cause.text)
    if failed is None:
        return None
    program = failed.group(1).rsplit("/", 1)[-1]
    said = re.compile(rf"(?:^|: ){re.escape(program)}: (?:command )?not found\s*$")
    for entry in reversed(entries[: pick.position]):
        if said.search(entry.normal.text):
            return replace(
                pick.cause,
                line=entry.line.strip(),
                text=entry.normal.text,
                kind="install",
                title=f"{program} is not installed or not on PATH",
                hint=f"install {program}, or put the folder that holds it on the server's "
                "PATH (a service's PATH is often shorter than a shell's)",
            )
    return None


# a program run through a shell that the shell did not find: the status 127
_NOT_FOUND_STATUS = re.compile(
    r"CalledProcessError: Command '\[?'?([^' \],]+)[^\]]*?\]?' returned non-zero exit "
    r"status 127\b"
)
# a child process's failure said by its parent: the child's own error, printed after
# it ("RuntimeError: Error raised in subprocess:" and the child's traceback), says why
_CHILD_FAILED = re.compile(r"CalledProcessError: Command .* returned non-zero exit status")
_QUOTES_ORIGINAL = re.compile(r"\((?:original (?:error|exception)|caused by):? ", re.IGNORECASE)
# a line that says a process ended with a failing status ("Scheduler 848532 terminated
# with 255", "worker exited with code 1")
_DIED_WORDS = ("terminated", "exited", "died")
_DIED = re.compile(
    r"\b(?:terminated|exited|died)\b(?: (?:with|by))?(?: exit)?(?: (?:code|status))?:? ?"
    r"-?[1-9]\d*\b"
)
# a line that relays another program's standard error after its own words
_RELAYS = re.compile(r"\bstderr: \S")
# a line that quotes another server's HTTP answer ("status=500 body=...")
_ANSWER = re.compile(r"\bbody[=:] ?\S|\bresponse body\b", re.IGNORECASE)


def relays_answer(line: str, signature: Signature) -> bool:
    """True when ``signature``'s hit in ``line`` stands inside another program's HTTP
    answer that the line relays (a client's ``preload failed: status=500 body=...
    failed to load model``): it says only that the other program failed, and that
    program's own lines, when the log holds them, say why; the hit is a wrapper's. So is
    a hit inside the original error a line quotes (vLLM's ``Failed to load model - not
    enough GPU memory ... (original error: CUDA out of memory ...)``): that error's own
    line, in the traceback below, is the cause."""
    lowered = line.lower()
    if "body" not in lowered and "original" not in lowered and "caused by" not in lowered:
        return False
    text = normalise(line).text
    match = re.search(signature.pattern, text)
    return match is not None and (
        _ANSWER.search(text, 0, match.start()) is not None
        or _QUOTES_ORIGINAL.search(text, 0, match.start()) is not None
    )


# the line itself says the engine goes on without what failed ("... does not appear to
# have a file named generation_config.json ... Proceeding without generation config.")
_PROCEEDS = re.compile(
    r"\b(?:proceeding|continuing|going on|carrying on) (?:without|anyway)\b"
    r"|\bfalling back to\b|\bwill be ignored\b",
    re.IGNORECASE,
)


def goes_on(line: str, signature: Signature) -> bool:
    """True when ``line``, after ``signature``'s hit in it, says the engine proceeds
    without what failed: a warning, not a failure."""
    found = _PROCEEDS.search(line)
    if found is None:
        return False
    match = re.search(signature.pattern, line)
    return match is not None and found.start() > match.start()


_DETAIL_LINES = 4  # how far below the chosen line the detail it introduces may stand
# a line that says an activity ended (a bar's "50% Completed" is not done)
_DONE = re.compile(
    r"\b(?:took|done|complete|finished|succeeded|loaded|ready|end(?:ed)?)\b|\b100 ?%", re.IGNORECASE
)


def _above_phase(entries: Sequence[Logical], position: int, start: int) -> tuple[str, str] | None:
    """The kind the nearest line above ``position`` (after ``start``) names by what the
    engine was doing (``_ABOVE_PHASES``), if one of the last ``_ABOVE_LINES`` does; none
    once a nearer line says that something was done (``took 4.1 seconds``, ``100%``):
    the failure came after that activity."""
    low = max(start + 1, position - _ABOVE_LINES, 0)
    for entry in reversed(entries[low:position]):
        normal = entry.normal
        if is_source(normal) or _FRAME.match(normal.body):
            continue
        if _DONE.search(normal.text) is not None:
            return None
        for pattern, kind, title in _ABOVE_PHASES:
            if pattern.search(normal.text) is not None:
                return kind, title
    return None


# a module that a line says could not be imported ("Failed to import from vllm._core_C
# with ImportError(...)", "No module named 'x'", "cannot import name 'y' from 'z'"); not
# the words after "import" that say what happened to it (SGLang's "Ignore import error
# when loading ...": no module called "error", which any later error would name)
_IMPORTED = re.compile(
    r"\bimport (?:from )?(?!(?:error|errors|failed|failure|warning)\b)['\"]?(?P<a>[\w.]+)"
    r"|No module named ['\"](?P<b>[\w.]+)"
    r"|cannot import name ['\"]\w+['\"] from ['\"](?P<c>[\w.]+)"
)


def _failed_import(entries: Sequence[Logical], text: str, hints: Mapping[str, str]) -> Cause | None:
    """The earlier line (a warning, often: the engine went on) that says a module failed
    to import, in install's words, when ``text`` (an exception naming no family) names
    that module (vLLM's ``Failed to import from vllm._core_C with ImportError(
    'libtorch_hip.so: cannot open shared object file')``, then ``Tried to instantiate
    class '_core_C.ScalarType'``): the missing module is the root of the failure."""
    for entry in reversed(entries):
        line_text = entry.normal.text
        if "import" not in line_text and "module named" not in line_text:
            continue
        words = words_kind(line_text)
        if words is None or words.kind != "install":
            continue
        for match in _IMPORTED.finditer(line_text):
            name = (match.group("a") or match.group("b") or match.group("c")).strip(".")
            # a name of its own: not a short common one ("vllm._C": its "_C" counts)
            parts = [p for p in name.split(".") if len(p) >= 4 or p.startswith("_")]
            if parts and re.search(rf"(?<!\w){re.escape(parts[-1])}(?!\w)", text):
                return Cause(
                    line=entry.line.strip(),
                    text=line_text,
                    kind=words.kind,
                    title=words.title,
                    hint=words_hint(words, hints),
                )
    return None


_TRACEBACK_OPENS = "Traceback (most recent call last):"
# Go's os/exec error for a child process a signal ended (ExitError's "signal: killed")
_GO_SIGNAL = re.compile(
    r"\bsignal: (?:killed|terminated|segmentation fault|aborted|interrupt|hangup|quit"
    r"|bus error|illegal instruction|floating point exception|user defined signal \d)\b"
)
# a line that says the engine tries again (not advice to the user: "Retry with ...")
_RETRYING = re.compile(r"\bretrying\b|\bwill retry\b|\btrying again\b", re.IGNORECASE)


def _traceback_end(entries: Sequence[Logical], position: int) -> Logical | None:
    """The exception line that ends the traceback the entry at ``position`` opens."""
    for entry in entries[position + 1 :]:
        normal = entry.normal
        if is_source(normal) or _FRAME.match(normal.body):
            continue
        if _EXCEPTION.match(normal.text) and not normal.text.startswith("Error: "):
            return entry
    return None


_SIGNALLED = re.compile(
    r"\bsignal(?:l)?ed\b.*\bsignal \d+|\bkilled by signal\b"
    r"|\b(?:killed|terminated|exited|died) (?:by|with|of) (?:signal \d+|<?Signals\.SIG[A-Z]+)"
    # Go's os/exec error of a child a signal ended, which a supervisor logs at any level
    # (llama-swap's "cmd.Wait() returned error: signal: terminated")
    r"|" + _GO_SIGNAL.pattern,
    re.IGNORECASE,
)
# the number or name of the signal a line says ended a process
_SIGNAL_NUMBER = re.compile(
    r"\bsignal (?P<number>\d+)|\bSIG(?P<name>KILL|SEGV|ABRT)\b"
    r"|\bsignal: (?P<go>killed|segmentation fault|aborted)\b"
)
# the kind of a process's end by the signal that ended it (another signal: none, so the
# gate's own reading of how the process ended decides)
_SIGNAL_KINDS: dict[str, tuple[str, str, str]] = {
    "9": (
        "killed",
        "a process was killed (SIGKILL)",
        "SIGKILL without a message is often the OOM killer or a container's memory limit: "
        "check dmesg and the memory limit",
    ),
    "11": (
        "segfault",
        "a process crashed with a segmentation fault (SIGSEGV)",
        "a native extension crashed: check that torch, CUDA and the engine were built for "
        "each other",
    ),
    "6": (
        "abort",
        "a process aborted itself (SIGABRT)",
        "the process aborted itself: the cause is in the lines just above",
    ),
}
_SIGNAL_NAMES = {
    "KILL": "9",
    "SEGV": "11",
    "ABRT": "6",
    "killed": "9",
    "segmentation fault": "11",
    "aborted": "6",
}


def _ended(
    position: int, entry: Logical, *, shown: str, severity: int, wrapper: Signature | None
) -> _Candidate:
    """The candidate of a line that says a process was ended by a signal: its kind is
    the signal's (9 ``killed``, 11 ``segfault``, 6 ``abort``), else none."""
    match = _SIGNAL_NUMBER.search(entry.normal.text)
    number = None
    if match is not None:
        number = match.group("number") or _SIGNAL_NAMES[match.group("name") or match.group("go")]
    known = _SIGNAL_KINDS.get(number or "")
    cause = Cause(line=entry.line.strip(), text=shown, signature=wrapper)
    if known is not None:
        kind, title, hint = known
        if wrapper is not None and wrapper.kind == kind:
            title, hint = wrapper.title, wrapper.hint  # the profile's own words
        cause = replace(cause, kind=kind, title=title, hint=hint)
    return _Candidate(position, _ENDED, severity, 0, cause)


def says_signalled(text: str) -> bool:
    """True when ``text`` says a process was ended by a signal (``Download process was
    signaled to shutdown with signal 4``, ``killed by signal 9``): how it ended, not why."""
    return _SIGNALLED.search(text) is not None


def _reads_as_failure(normal: Normal) -> bool:
    """Whether a line says something failed (``_last_failure``'s test)."""
    text = normal.text
    if not text or normal.level in _HANDLED or is_source(normal) or _FRAME.match(normal.body):
        return False
    if _MARKERS.match(text) or text.startswith(_CHAINED) or _GOES_ON.search(text):
        return False
    if text.startswith(_PYDANTIC_LINK) or _RETRYING.search(text):
        return False
    return (
        _SEVERITY.get(normal.level or "", 0) > 0
        or _says_failure(text)
        or _EXCEPTION.match(text) is not None
        or _DEBUG_FORM.search(text) is not None
    )


_REPORTED_AGAIN = 12  # logical lines above a failure where its first report may stand


def _first_report(entries: Sequence[Logical], at: int) -> Logical:
    """The first of the failure lines just above ``entries[at]`` that end in its
    message (llama.cpp's ``common_docker_resolve_model: Docker Model download failed:
    HTTPS is not supported. ...``, then the server's ``failed to download model: HTTPS
    is not supported. ...``): the caller only says again what its callee said first."""
    message = entries[at].normal.text.rsplit(": ", 1)[-1]
    first = entries[at]
    if len(message) < 20:
        return first
    for entry in entries[max(0, at - _REPORTED_AGAIN) : at]:
        text = entry.normal.text
        if text.endswith(message) and text != message and _reads_as_failure(entry.normal):
            return entry
    return first


# a step that only estimates, whose failure the engine survives: it loads for real next;
# vLLM's look at a folder's config.json (its tokenizer's too), which it logs at ERROR and
# goes on from ("Error parsing config for /t: Unrecognized model in /t"): what fails
# later, reading the folder for real, says what is wrong
_SURVIVED = re.compile(
    r"\bencountered an error while trying to fit params\b"
    r"|\[mtmd\] failed to get memory usage of mmproj"
    r"|^Error parsing config for \S+: "
)
# the lines of a YAML error that say where, not what
_YAML_WHERE = re.compile(r"^(?:while \w+ing\b|in \"[^\"]*\", line \d+, column \d+)")
# the first line of a command-line program's usage text ("usage: __main__.py [-h] ...")
_USAGE = re.compile(r"^usage: \S+")


def _before_usage(entries: Sequence[Logical], hints: Mapping[str, str]) -> Cause | None:
    """The message a program printed right before its usage text, when no line ranked
    (llama-cpp-python's server on a config file it refuses: ``'str' object has no
    attribute 'get'``, or YAML's ``expected a single document in the stream`` and its
    lines, then ``usage: __main__.py [-h] ...``): a program that answers with its usage
    says its settings were refused, whatever the message's words; the first line of the
    message's paragraph is quoted (of a YAML error, its problem, not the context that
    only says where). argparse's own error comes after the usage, and a
    signature of its own reads it."""
    at = next((n for n, entry in enumerate(entries) if _USAGE.match(entry.normal.text)), None)
    if at is None or at == 0:
        return None
    start = at
    while start > 0 and entries[start - 1].normal.text.strip() and at - start < 8:
        start -= 1
    if start == at:
        return None
    # a YAML error's context ("while scanning a double-quoted scalar") and its marks
    # ('  in "/srv/server.yaml", line 5, column 12') say where; its problem ("found
    # unknown escape character 'm'"), what
    entry = next(
        (e for e in entries[start:at] if not _YAML_WHERE.match(e.normal.text)), entries[start]
    )
    words = words_kind(entry.normal.text)
    kind = "bad-args" if words is None or family_of(words.kind) == "arguments" else words.kind
    hint = hints.get(kind, KIND_HINTS.get(kind))
    if words is not None and words.kind == kind:
        hint = words_hint(words, hints) or hint
    return Cause(
        line=entry.line.strip(),
        text=entry.normal.text,
        kind=kind,
        title="the program printed its usage after this message: its settings were refused",
        hint=hint,
    )


# the name of a C++ string-to-number conversion, alone on its line: its exception's what()
_CONVERSION = re.compile(r"(?:std::)?sto(?:i|l|ll|ul|ull|f|d|ld)")


def _last_failure(entries: Sequence[Logical], hints: Mapping[str, str]) -> Cause | None:
    """The last line that reads as a failure, when no line ranked (a short paste).

    A paste of one or two lines often holds its one error line with no level and no
    traceback around it (a bare ``NotImplementedError`` line, ``failed to open FILE: No
    such file or directory``, a wrapper's ``vLLM failed to start.``), or only an ERROR line
    that ends in a colon whose details were not pasted: with nothing ranked, the last
    line that says something failed (its words, an ERROR or FATAL level, an exception's
    shape or a Rust error's Debug form) is quoted. A line whose level says it is no
    error (INFO, WARNING, DEBUG), a source line and one that says the engine goes on
    (``falling back``, ``ignoring``, ``retrying``) never are.
    """
    for at in range(len(entries) - 1, -1, -1):
        entry = entries[at]
        if _CONVERSION.fullmatch(entry.normal.text):
            # a number option given a value std::stoi (stof, stoul ...) cannot read,
            # from the command or a config file (`parallel = "2"`): the exception's
            # what() is the function's name, all that llama-server prints
            return Cause(
                line=entry.line.strip(),
                text=entry.normal.text,
                kind="bad-args",
                title="an option's value is not a number",
                hint="a number option (from the command, LLAMA_ARG_* or a config file) was "
                "given something else: check each value is a bare number, without quotes "
                "or units",
            )
        if not _reads_as_failure(entry.normal):
            continue
        entry = _first_report(entries, at)
        text = entry.normal.text
        shown, _ = _inner(text)
        # a process killed by a signal: a process kind, whatever its name says it did
        words = None if _SIGNALLED.search(text) else words_kind(text)
        if words is None:
            return Cause(line=entry.line.strip(), text=shown)
        return Cause(
            line=entry.line.strip(),
            text=shown,
            kind=words.kind,
            title=words.title,
            hint=words_hint(words, hints),
        )
    return None


def _from_raise(entry: Logical, rules: Sequence[_Rule], hints: Mapping[str, str]) -> Cause | None:
    """The kind a raise statement's message names, when the tail holds no cause line.

    A paste that ends at the last frame (``raise ValueError("sharded is not supported")``)
    never printed the exception line: the statement says what it would have been. It is
    not quoted (the cause line stays empty); only its kind counts.
    """
    match = _RAISE.search(entry.normal.text)
    if match is None:
        return None
    text = f"{match.group('name').rsplit('.', 1)[-1]}: {match.group('message')}"
    hit = _first_rule(rules, text, text)
    if hit is not None and not hit[0].wrapper:
        kind, title, hint = hit[0].kind, hit[0].title, hit[0].hint
    else:
        words = words_kind(text)
        if words is None:
            return None
        kind, title = words.kind, words.title
        hint = hints.get(kind, KIND_HINTS.get(kind, ""))
    return Cause(
        line="",
        text=f"{text} (raised; its exception line is not in the log)",
        kind=kind,
        title=title,
        hint=hint,
    )


_ERRNO = re.compile(r"\[Errno -?\d+\] ")
_APP_STARTED = ("Application startup complete.", "Waiting for application startup.")
_LISTEN_TITLE = "the server cannot listen on the address it was given"
_LISTEN_HINT = (
    "check the host (--host) and port flags: the host must be this machine's name or address"
)


def _after_app_startup(entries: Sequence[Logical], position: int) -> bool:
    """Whether the line at ``position`` comes right after uvicorn's app started (its
    next step is to bind the listening socket)."""
    for entry in reversed(entries[:position]):
        text = entry.normal.text
        if text:
            return text.endswith(_APP_STARTED)
    return False


def _root(
    entries: Sequence[Logical],
    found: Sequence[_Candidate],
    pick: _Candidate,
    hints: Mapping[str, str],
) -> Cause | None:
    """The root of ``pick``, a rooted signature's hit, as the cause (the kind its own
    signature or words name, else ``pick``'s): the first line of ``found`` (the
    episode's candidates) above it that a logger printed at an error level; in a log
    with no levels, the first of the lines right above it that each say, as
    ``function: message``, that something failed (llama.cpp's plain format:
    ``gguf_init_from_reader: failed to read magic``, then ``llama_model_load: error
    loading model: ...``). None where there is none, or where that line is itself a
    rooted consequence (the explanation, if any, then decides)."""
    signature = pick.cause.signature
    assert signature is not None
    for c in found:
        if c.position >= pick.position:
            break
        normal = entries[c.position].normal
        if not normal.header or _SEVERITY.get(normal.level or "", 0) < _SEVERITY["error"]:
            continue
        if c.rank == _RETRIED or (c.cause.signature is not None and c.cause.signature.rooted):
            return None
        cause = c.cause
        if cause.kind is None:
            cause = replace(cause, kind=signature.kind, title=signature.title, hint=signature.hint)
        which = next(
            (
                d
                for d in found
                if _READ_FAILED.search(c.cause.text)
                and c.position < d.position <= pick.position + _WHICH_AFTER
                and _WHICH_FILE.search(d.cause.text)
            ),
            None,
        )
        if which is not None:
            # the root's words are the reader's ("failed to read magic"); a later line
            # names which of the command's files it read (a LoRA adapter, a draft model)
            return replace(cause, line=which.cause.line, text=which.cause.text, hint=_WHICH_HINT)
        return cause
    if entries[pick.position].normal.level is not None:
        return _said_after(pick, signature, hints)
    top = None
    at = pick.position - 1
    while at >= 0 and _FUNCTION_FAILED.match(entries[at].normal.text) is not None:
        top, at = at, at - 1
    if top is None:
        return _said_after(pick, signature, hints)
    entry = entries[top]
    text = entry.normal.text
    words = words_kind(text[text.find(":") + 1 :])
    kind, title = (signature.kind, signature.title) if words is None else (words.kind, words.title)
    hint = signature.hint if words is None else hints.get(kind, KIND_HINTS.get(kind))
    return Cause(line=entry.line.strip(), text=text, kind=kind, title=title, hint=hint)


def _said_after(pick: _Candidate, signature: Signature, hints: Mapping[str, str]) -> Cause | None:
    """``pick``, a rooted signature's hit with no root above it, with the kind its
    message after the hit names in a family's words, where that is another family's
    ("error loading model: device CUDA0 does not support split buffers": the split
    option's); None otherwise."""
    text = pick.cause.text
    match = re.search(signature.pattern, text)
    if match is None:
        return None
    words = words_kind(text[match.end() :])
    if words is None or family_of(words.kind) in (None, "process", family_of(signature.kind)):
        return None
    hint = words_hint(words, hints)
    return replace(pick.cause, kind=words.kind, title=words.title, hint=hint)


# llama.cpp's grammar: the caller's report, and the parser's own words above it with
# where the text went wrong ("parse: error parsing grammar: expecting name at {")
_GRAMMAR_FAILED = re.compile(r"\bfailed to parse grammar\b")
_GRAMMAR_SAYS = re.compile(
    r"\berror parsing grammar: \S|\bgrammar does not contain an? '\w+' symbol"
    r"|\bUndefined rule identifier\b"
)
_GRAMMAR_ABOVE = 60
_GRAMMAR_WHOLE = re.compile(r"\bgrammar does not contain an? '\w+' symbol")
# a message's detail on the line below it
_DETAIL_WORDS = 4  # fewer: a bare name of the error ("Error: DownloadError"), no detail
_SAYS_ERROR = re.compile(r"\b(?:error|failed|cannot|invalid)\b", re.IGNORECASE)

# llama.cpp's line that names which extra file of the command failed to load
_WHICH_FILE = re.compile(r"failed to load (?:the )?(?:lora adapter|draft model),? '")
_WHICH_AFTER = 4  # lines below the rooted hit: the caller's report of it
# a reader's words that it could not read, with nothing of what it read or where
_READ_FAILED = re.compile(r": failed to (?:read|open) [\w ]+$")
_WHICH_HINT = (
    "check the file that line names (--lora, --model-draft): a complete GGUF made for "
    "this model by a llama.cpp converter of this version"
)


# a C function's report that something failed ("gguf_init_from_reader: failed to read
# magic", "ggml_aligned_malloc: insufficient memory (attempted to allocate ...)", "key
# 'general.alignment' must be of type u32 but is u64", "duplicate key 'general.name' for
# KV pair 3")
_FUNCTION_FAILED = re.compile(
    r"[a-z_][a-z0-9_]*(?:::\w+)*: (?:[^:]*: )?.{0,80}\b(?:[Ff]ail(?:ed|ure)?|[Ee]rror|invalid"
    r"|insufficient|unable|cannot|can't|couldn't|exceeds?|not found|[Nn]o such|mismatch"
    r"|only supports?|unsupported|(?:not|no longer) supported|must be|duplicate)\b"
)


def _explaining(entries: Sequence[Logical], pattern: str, hints: Mapping[str, str]) -> Cause | None:
    """The last of ``entries`` that ``pattern`` finds, as the cause it explains."""
    compiled = re.compile(pattern)
    for entry in reversed(entries):
        text = entry.normal.text
        if compiled.search(text):
            words = words_kind(text[text.find(":") + 1 :] if ":" in text else text)
            return Cause(
                line=entry.line.strip(),
                text=text,
                kind=None if words is None else words.kind,
                title=None if words is None else words.title,
                hint=None if words is None else words_hint(words, hints),
            )
    return None


# an exception line with no message after its class ("ImportError: ")
_EMPTY_MESSAGE = re.compile(r"(?:[A-Za-z_][\w]*\.)*[A-Z]\w*(?:Error|Exception):\s*")


def _said_kind(signature: Signature, after: str) -> Words | None:
    """The family that ``after`` (a hit's message after the hit) names, where it
    overrides ``signature``'s kind: any family's, for a process's generic end (an
    uncaught exception's ``what():``: Vulkan's ErrorOutOfDeviceMemory); the operating
    system's reason (permissions, disk), for any other signature ("failed to open GGUF
    file '...' (Permission denied)"); None otherwise."""
    if signature.kind in _REASON_KINDS:
        return None
    words = words_kind(after)
    if words is None:
        return None
    if signature.kind in _MESSAGE_KINDS:
        return None if words.kind in _MESSAGE_KINDS else words
    return words if words.kind in _REASON_KINDS else None


def message_cause(line: str, signature: Signature, hints: Mapping[str, str]) -> Cause | None:
    """``line`` (a hit of ``signature``) with the kind its message names after the hit
    (``_said_kind``); None where it names none that overrides the signature's."""
    text = normalise(line).text
    match = re.search(signature.pattern, text)
    if match is None:
        return None
    words = _said_kind(signature, text[match.end() :])
    if words is None:
        return None
    return Cause(
        line=line.strip(),
        text=text,
        kind=words.kind,
        title=words.title,
        hint=words_hint(words, hints),
    )


def explain(lines: Sequence[str], signature: Signature, hints: Mapping[str, str]) -> Cause | None:
    """The line of ``lines`` that explains a hit of ``signature`` (its ``explained_by``)."""
    if not signature.explained_by:
        return None
    return _explaining(logical_lines(lines), signature.explained_by, hints)


# the startup phase the server had reached when it died, as the last evidence of a
# quoted exception's or error line's kind (phase names of the engines' profiles)
_PHASE_KINDS: tuple[tuple[re.Pattern[str], str, str], ...] = (
    (re.compile(r"download"), "download", "it failed while downloading the model"),
    (re.compile(r"load_weights|load_model"), "model-load", "it failed while loading the model"),
    (re.compile(r"kv_cache"), "oom", "it failed while sizing the KV cache"),
    (re.compile(r"init_distributed"), "distributed", "it failed while the group started"),
    (re.compile(r"cuda_graph"), "cuda-graph", "it failed while capturing CUDA graphs"),
    (re.compile(r"warmup|torch_compile"), "engine-init", "it failed in the warmup"),
    (re.compile(r"parse_args"), "bad-args", "it failed while reading its arguments"),
)


def phase_kind(cause: Cause, phase: str | None, lines: Sequence[str]) -> tuple[str, str] | None:
    """The kind and title that ``phase`` (the startup phase open when the server died)
    gives ``cause`` when nothing else named one: only for a quoted exception or ERROR /
    FATAL line (a bare line such as ``Illegal instruction`` is how the process ended,
    not a failure of the phase), and not when the line of ``lines`` (the tail) just
    above it says that an activity was done (the phase's end line may be unprinted)."""
    if phase is None or cause.kind is not None or not cause.line:
        return None
    entries = logical_lines(lines)
    at = next(
        (n for n in range(len(entries) - 1, -1, -1) if entries[n].line.strip() == cause.line),
        None,
    )
    if at is not None:
        before = (e for e in reversed(entries[:at]) if not is_source(e.normal) and e.normal.text)
        previous = next(before, None)
        if previous is not None and _DONE.search(previous.normal.text) is not None:
            return None
    normal = normalise(cause.line)
    erring = _SEVERITY.get(normal.level or "", 0) > 0
    if not erring and _exception(normal) is None and _QUALIFIED.match(normal.text) is None:
        return None
    if _SIGNALLED.search(normal.text) is not None:
        return None  # a process a signal ended: how it ended, whatever the phase
    for pattern, kind, title in _PHASE_KINDS:
        if pattern.search(phase) is not None:
            return kind, title
    return None
