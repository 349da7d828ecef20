"""The options a server's command line sets, and a failure line that names one of them.

A gate that launched the server knows its command. When the line a CRASH quotes names
one of the options that command set (``tp_size`` of ``--tp-size 2``) or quotes the value
the user gave one (``Cannot find the config file for awq`` after ``--quantization awq``,
``no attribute 'VERBOSE'`` after ``--log-level verbose``), the fix is in the command
line, whatever the words of the failure would suggest alone: the kind is ``bad-args``
and the hint names the option. This is read only where the line's words gave no more
specific family (a model that fails to load, an import, the engine's start, the
process's end): memory, CUDA, ports, disks, downloads and the distributed group keep
their kind, as they keep a fix of their own.

What counts as evidence:

- an option's name, as the engine spells it in messages (``tp_size``, ``tp-size``,
  ``--tp-size``, ``tp size``), when it is two words or more: one-word names (``model``,
  ``device``, ``port``) are the words of ordinary messages; the keys of a JSON value
  (``use_mmap`` of ``'{"use_mmap": true}'``) likewise, and its string values where the
  line quotes them (``'nats'`` of ``'{"publisher": "nats"}'``);
- an environment variable given to the server (``launch(env=...)``, or ``NAME=value``
  before the program), by its name as printed (``Unknown vLLM environment variable
  detected: VLLM_ATTENTION_BACKEND``) or its value;
- an option's value, as a whole word, as given or in capitals (``'VERBOSE'``, how
  enumerations echo it; a library's name begins a sentence in title case, ``Transformers
  does not recognize``, and is not the user's ``--model-impl transformers``), when it
  holds a letter and three characters or more and is neither a path (read as a path,
  below) nor a plain setting word
  (``auto``, ``true``, ``cpu``): ``gguf``, ``awq``; a class given by its module path
  by its own name (``PriorityScheduler``);
- a path given to an option or a variable, quoted by the line (``path_in_line``: a
  template, a config, a cache, a plugin that is missing or wrong), but not the model's
  path nor its parts' (a draft model, a LoRA adapter, a projector, a generation config);
- an option that overrides the model's configuration (``override_given``:
  ``--hf-overrides``), for a model that fails to load or start with it;
- never the model's own path or name (``--model``, ``--model-path``, ``-m``,
  ``--tokenizer``: a message that quotes the model is about the model's files), and
  never a secret's value (``--api-key``): it is not read, so it cannot be quoted.
"""

from __future__ import annotations

import ipaddress
import json
import os
import re
from collections.abc import Mapping, Sequence

from servegate.redact import is_secret_name

__all__ = [
    "Given",
    "cpu_asked",
    "dashed_flag_in_line",
    "file_for_folder",
    "file_where_folder",
    "flag_in_line",
    "folder_missing",
    "given_options",
    "host_unresolvable",
    "hosts_listed",
    "json_not_given",
    "kept",
    "load_format_forced",
    "module_given",
    "module_misspelt",
    "option_in_code",
    "override_given",
    "path_in_line",
    "path_not_there",
    "quantization_given",
    "tls_given",
    "uri_for_path",
    "url_host",
    "value_in_line",
    "zero_given",
    "zero_named",
]

# (the option's name without its dashes, as given; its value, "" for a switch)
Given = tuple[tuple[str, str], ...]

# the model's own options: a line quoting their value is about the model's files
_MODEL_OPTIONS = frozenset(
    {
        "m",
        "model",
        "model_path",
        "model_name",
        "model_id",
        "model_dir",
        "tokenizer",
        "tokenizer_path",
        "hf_repo",
        "hf_file",
        "hf_repo_id",
    }
)
# options whose file is a part of the model, not the user's setting: a draft model, a
# LoRA adapter, a vision projector, a generation or Hub config (their failures are the
# model's files' as often as not)
_MODEL_FILE_OPTION = re.compile(
    r"(?:^|_)(?:draft|lora(?:_modules)?$|mmproj|generation_config|hf_config|speculative_model"
    r"|adapter|vocab)|^md$|^lora$"
)
# options that override the model's own configuration: a model that fails to load
# with them failed with what they set
_OVERRIDE_OPTIONS = frozenset(
    {
        "hf_overrides",
        "json_model_override_args",
        "override_kv",
        "kv_overrides",
        "override_neuron_config",
    }
)
# values too common in messages to say which option a line is about
_PLAIN_VALUES = frozenset(
    {
        "auto",
        "true",
        "false",
        "none",
        "null",
        "yes",
        "off",
        "default",
        "cpu",
        "gpu",
        "cuda",
        "info",
        "debug",
        "warning",
        "error",
        "http",
        "https",
        "localhost",
    }
)
# families a named option does not override: the failure has a fix of its own there
_KEPT_FAMILIES = frozenset(
    {"memory", "disk", "port", "cuda", "distributed", "download", "arguments", "timeout", "user"}
)
_KEPT_KINDS = frozenset({"killed", "segfault"})
_SHORT = re.compile(r"-[A-Za-z]{1,3}")  # -m, -ngl, -ctk: a short option
_NUMBER = re.compile(r"-?\d+(?:\.\d+)?")
_VARIABLE = re.compile(r"[A-Z][A-Z0-9]*(?:_[A-Z0-9]+)+|[A-Z][A-Z0-9]{2,}")  # NAME of NAME=value


# a key of a JSON object given as an option's value, of two words or more
_JSON_KEY = re.compile(r"\"([a-z][a-z0-9]*(?:_[a-z0-9]+)+)\"\s*:")
# a string value in a JSON object given as an option's value
_JSON_STRING = re.compile(r":\s*\"([^\"]+)\"")
# a module path to a class or a function: its last name, six characters or more
_DOTTED = re.compile(r"[A-Za-z_]\w*(?:\.[A-Za-z_]\w*)+\.([A-Za-z_]\w{5,})")
# a file where the tokenizer's folder (or Hub id) is wanted: its own tokenizer.json,
# a SentencePiece model, a vocabulary (a model's path given as its weights file is read
# as the model's files: the model must change as often as the option)
_FILE_FOR_FOLDER = re.compile(r".+\.(?:json|model|txt)")
_TOKENIZER_OPTIONS = frozenset({"tokenizer", "tokenizer_path"})
_FOLDER_OPTIONS = _TOKENIZER_OPTIONS | {"hf_config_path", "generation_config"}


def _name(flag: str) -> str:
    return flag.lstrip("-").replace("-", "_").lower()


def given_options(command: Sequence[str], env: Mapping[str, str] | None = None) -> Given:
    """The options ``command`` sets: ``--name value``, ``--name=value``, ``-x value`` and
    switches (value ""), in order, names without dashes with ``_`` for ``-``; then the
    environment variables given to it (``env``, and the upper-case ``NAME=value`` words
    before the first option, as ``env NAME=value prog`` or a shell line gives them),
    named ``$NAME``;
    secrets (``--api-key``, ``HF_TOKEN``) left out. What comes before the first option
    (the program, a module, a subcommand) is not an option."""
    found: list[tuple[str, str]] = []
    args = [str(arg) for arg in command]
    variables = dict(env or {})
    index = 0
    while index < len(args) and not args[index].startswith("-"):
        # the words before the first option: the program, a module, a subcommand, and
        # the variables an ``env`` or a shell line sets before the program
        name, equals, value = args[index].partition("=")
        if equals and _VARIABLE.fullmatch(name):
            variables[name] = value
        index += 1
    while index < len(args):
        arg = args[index]
        index += 1
        if not arg.startswith("-") or arg in ("-", "--") or _NUMBER.fullmatch(arg):
            continue
        if not (arg.startswith("--") or _SHORT.fullmatch(arg) or "=" in arg):
            continue
        flag, equals, value = arg.partition("=")
        if not equals and index < len(args):
            following = args[index]
            if not following.startswith("-") or _NUMBER.fullmatch(following):
                value = following
                index += 1
        name = _name(flag)
        if name and not is_secret_name(name):  # a secret is never kept, so never quoted
            found.append((name, value))
    found.extend(
        (f"${name}", value) for name, value in variables.items() if not is_secret_name(name)
    )
    return tuple(found)


# the prefix of the environment variables that set an engine's options (llama-server's
# LLAMA_ARG_MODEL is its --model)
_OPTION_VARIABLE = re.compile(r"^\$(?:LLAMA_ARG_)?", re.IGNORECASE)


def _option_name(name: str) -> str:
    """The option a given name sets: itself, or for a variable its name without the
    engine's prefix, in lower case (``$LLAMA_ARG_MODEL`` sets ``model``, TGI's
    ``$MODEL_ID`` ``model_id``)."""
    if not name.startswith("$"):
        return name
    return _OPTION_VARIABLE.sub("", name).lower()


def _is_model_option(name: str) -> bool:
    """Whether a given name sets the model's path or a part of the model's."""
    option = _option_name(name)
    return option in _MODEL_OPTIONS or _MODEL_FILE_OPTION.search(option) is not None


def _value_words(value: str) -> str | None:
    """``value`` as evidence, or None when it says too little (see the module's notes)."""
    value = value.strip().strip("'\"")
    if len(value) < 3 or "/" in value or "\\" in value:
        return None
    if value.lower() in _PLAIN_VALUES or not re.search(r"[A-Za-z]", value):
        return None
    return value


def flag_in_line(line: str, given: Given) -> str | None:
    """The option of ``given`` that ``line`` names (``--quantization awq``), else None:
    its name in any case, its value as given or in capitals."""
    if not given or not line:
        return None
    lowered = line.lower()
    for name, value in given:
        if _option_name(name) in _MODEL_OPTIONS or is_secret_name(name.lstrip("$")):
            continue  # given_options left secrets out; options built by hand may not
        if name.startswith("$"):
            # an environment variable: its name as printed (VLLM_ATTENTION_BACKEND)
            shown = f"{name[1:]}={value}"
            if re.search(rf"(?<![\w$]){re.escape(name[1:])}(?!\w)", line):
                return shown
        else:
            shown = f"--{name.replace('_', '-')} {value}".rstrip()
        if "_" in name and not name.startswith("$"):
            # as a flag, an attribute, or in words ("No common block size for 7" after
            # --block-size 7)
            forms = (name, name.replace("_", "-"), name.replace("_", " "))
            for form in forms:
                if re.search(rf"(?<![\w.-])(?:--)?{re.escape(form)}(?![\w-])", lowered):
                    return shown
        for key in _JSON_KEY.findall(value):
            # a JSON option's own keys ("Unexpected extra config keys ...: {'use_mmap'}"
            # after --model-loader-extra-config '{"use_mmap": true}'): two words or more
            if re.search(rf"(?<![\w.-]){re.escape(key)}(?![\w-])", line):
                return shown
        for item in _JSON_STRING.findall(value):
            # a JSON option's string values, quoted back ("Unknown event publisher 'nats'"
            # after --kv-events-config '{"publisher": "nats", ...}')
            said = _value_words(item)
            if said is not None and (f"'{said}'" in line or f'"{said}"' in line):
                return shown
        words = _value_words(value)
        if words is None:
            continue
        values = [words, words.upper()]
        dotted = _DOTTED.fullmatch(words)
        if dotted is not None:
            # a class or a function by its module path (--scheduler-cls a.b.PriorityScheduler):
            # the whole path, or its own name, which an AttributeError quotes alone
            values.append(dotted.group(1))
        # a whole word, not a part of a dotted or a longer path (torch.float32, the
        # package folder of a library): bounded by what is neither a word, a dot nor "/"
        for form in values:
            pattern = rf"(?<![\w./-]){re.escape(form)}(?![\w/-]|\.\w)"
            if re.search(pattern, line):
                return shown
    return None


def kept(kind: str | None, family: str | None) -> bool:
    """True when a kind keeps its own fix whatever option its line names."""
    return kind in _KEPT_KINDS or family in _KEPT_FAMILIES


def _path_value(value: str) -> str | None:
    """``value`` as a path to look for in a line (``name=/path`` gives ``/path``), or
    None when it is no path or too short to say which file a line is about."""
    value = value.strip().strip("'\"")
    if "=" in value and "/" in value.split("=", 1)[0]:
        return None
    value = value.split("=", 1)[-1].rstrip("/")
    if len(value) < 5 or "/" not in value or value.startswith(("http://", "https://")):
        return None
    return value


def _joined(char: str) -> bool:
    """Whether ``char`` beside a path found in a line makes it part of a longer name."""
    return bool(char) and (char.isalnum() or char in "_-")


def path_in_line(line: str, given: Given) -> str | None:
    """The option of ``given`` whose path ``line`` quotes (``No such file or directory:
    '/tmp/logging.json'`` after ``VLLM_LOGGING_CONFIG_PATH=/tmp/logging.json``), else
    None: a file or folder the user named for a setting (a template, a config, a cache,
    a plugin) that is missing or wrong is the command's to fix. The model's own paths
    and its parts' (a draft model, a LoRA adapter, a projector) are not read: a line
    about them is about the model's files; nor is a path that the model's own lies
    under."""
    if not given or "/" not in line:
        return None
    found: tuple[int, str] | None = None
    model_hit = 0
    for name, value in given:
        path = _path_value(value)
        if path is None or is_secret_name(name.lstrip("$")):
            continue
        at = line.find(path)
        while at >= 0:
            after = line[at + len(path) : at + len(path) + 1]
            before = line[at - 1 : at] if at else ""
            if not _joined(after) and not _joined(before):
                break
            at = line.find(path, at + 1)
        if at < 0:
            continue
        if _is_model_option(name):
            model_hit = max(model_hit, len(path))
            continue
        if found is None or len(path) > found[0]:
            shown = (
                f"{name[1:]}={value}"
                if name.startswith("$")
                else f"--{name.replace('_', '-')} {value}"
            )
            found = (len(path), shown)
    if found is None or model_hit > found[0]:
        return None
    return found[1]


def override_given(given: Given) -> str | None:
    """The option of ``given`` that overrides the model's configuration
    (``--hf-overrides``, ``--json-model-override-args``, ``--override-kv``), else None."""
    for name, value in given:
        if name in _OVERRIDE_OPTIONS:
            return f"--{name.replace('_', '-')} {value}".rstrip()
    return None


_HOST_OPTIONS = frozenset({"host", "hostname", "bind", "listen_host"})
_SCHEME = re.compile(r"[a-z][a-z0-9+.-]*://", re.IGNORECASE)
# the options that give a group's rendezvous address (SGLang's --dist-init-addr, to
# which it adds tcp:// itself)
_RENDEZVOUS_OPTIONS = frozenset({"dist_init_addr", "data_parallel_address", "master_addr"})


def url_host(given: Given) -> str | None:
    """The host or rendezvous option of ``given`` whose value is a URL (``--host
    http://0.0.0.0``, ``--dist-init-addr tcp://10.0.0.1:5000``), as written, else None:
    a server binds, and a group rendezvouses at, a name or an address; a scheme in front
    makes both fail in their own words ("port number missing" from torch.distributed's
    tcp:// rendezvous, SGLang adding its own tcp://)."""
    for name, value in given:
        if name in _HOST_OPTIONS | _RENDEZVOUS_OPTIONS and _SCHEME.match(value.strip("'\"")):
            return f"--{name.replace('_', '-')} {value}"
    return None


_ANY_ADDRESS = frozenset({"", "0.0.0.0", "::", "localhost", "*"})


def host_unresolvable(given: Given) -> str | None:
    """The host option of ``given`` whose value is no address and no plain host name
    (``--host '[::1]'``, the URL's brackets; ``--host localhost:8000``, a port in it),
    as written, else None: the name lookup of the server's own socket fails on it
    ("socket.gaierror: [Errno -2] Name or service not known"), in a download's words."""
    for name, value in given:
        if name not in _HOST_OPTIONS:
            continue
        host = value.strip("'\"")
        if host in _ANY_ADDRESS:
            continue
        try:
            ipaddress.ip_address(host)
        except ValueError:
            if not _HOST_NAME.fullmatch(host):
                return f"--{name.replace('_', '-')} {value}"
    return None


_HOST_NAME = re.compile(
    r"(?=.{1,253}$)[A-Za-z0-9](?:[A-Za-z0-9-]{0,61}[A-Za-z0-9])?"
    r"(?:\.[A-Za-z0-9](?:[A-Za-z0-9-]{0,61}[A-Za-z0-9])?)*\.?"
)


def file_for_folder(given: Given) -> str | None:
    """The option of ``given`` that names a file where the engine reads a folder (the
    tokenizer's, ``--tokenizer /m/tokenizer.json``; vLLM's ``--hf-config-path`` and
    ``--generation-config``, ``/m/config.json``), else None."""
    for name, value in given:
        if name in _FOLDER_OPTIONS and _FILE_FOR_FOLDER.fullmatch(value.rstrip("/")):
            return f"--{name.replace('_', '-')} {value}"
    return None


_NO_MODULE = re.compile(r"No module named '([\w.]+)'")
_MODULE_PATH = re.compile(r"[A-Za-z_]\w*(?:\.[A-Za-z_]\w*)+")


def module_given(line: str, given: Given) -> str | None:
    """The option of ``given`` whose value is a module path (``--worker-cls
    vllm.worker.cpu_worker.CPUWorker``) that ``line``'s missing module (``No module named
    'vllm.worker'``) begins, else None: a class moved in another version, or misspelt,
    is the command's to change, not a package to install. Only a module inside a package
    (a dotted name: its package imported, the rest of the path did not): a package that
    is not there at all (``No module named 'acme_gateway'``) is one to install."""
    missing = _NO_MODULE.search(line)
    if missing is None or "." not in missing.group(1):
        return None
    module = missing.group(1)
    for name, value in given:
        if _is_model_option(name):
            continue  # python's own -m: the engine's module, whose absence is an install's
        path = value.strip().strip("'\"")
        if _MODULE_PATH.fullmatch(path) and (path == module or path.startswith(module + ".")):
            if name.startswith("$"):
                return f"{name[1:]}={value}"
            return f"--{name.replace('_', '-')} {value}"
    return None


def option_in_code(code: str, given: Given) -> str | None:
    """The option of ``given`` whose name (two words or more) the failing code spells,
    as an attribute or a variable (``assert cfg.tp_size % cfg.attn_dp_size == 0`` after
    ``--attn-dp-size 2``), else None: a bare assertion says no more than its code."""
    for name, value in given:
        if name.startswith("$") or "_" not in name or _option_name(name) in _MODEL_OPTIONS:
            continue
        # whole, or a part of a longer name between underscores (chat_template_arg)
        if re.search(rf"(?<![A-Za-z0-9]){re.escape(name)}(?![A-Za-z0-9])", code):
            return f"--{name.replace('_', '-')} {value}".rstrip()
    return None


# words of option names too common to say which option a piece of code is about
_COMMON_WORDS = frozenset(
    ("enable", "disable", "use", "max", "min", "num", "size", "path", "mode", "type", "model")
)


# options whose words all of a server's code says
_EVERYWHERE = frozenset(("device", "port", "host"))


def option_by_word(
    code: str, given: Given, *, reads_args: bool = True, files: bool = False
) -> str | None:
    """The option of ``given`` one of whose distinctive words (four letters or more,
    not ``enable``, ``size`` ...) the failing code's names hold, when the code reads the
    server's arguments (``server_args``; not asked where ``reads_args`` is False): a
    step named for the option (``handle_eplb_and_dispatch`` after ``--enable-eplb``,
    ``weight_cache/ipc_loader.py`` after ``--weight-cache-mode``), else None; with
    ``files``, only an option whose value is a file's path. The device, the port and
    the host are never named by their words (all code of a server says them)."""
    if reads_args and "server_args" not in code:
        return None
    names = set(re.findall(r"[A-Za-z]+", code.lower()))
    for name, value in given:
        if name.startswith("$") or _option_name(name) in _MODEL_OPTIONS or name in _EVERYWHERE:
            continue
        if files and not _names_file(value):
            continue
        words = [w for w in name.split("_") if len(w) >= 4 and w not in _COMMON_WORDS]
        if any(w in names or f"{w}s" in names for w in words):
            return f"--{name.replace('_', '-')} {value}".rstrip()
    return None


# counts that are 0 (or below) on purpose: no layers on the GPU, a seed, a port the
# system picks, a quiet log
_ZERO_ON_PURPOSE = re.compile(
    r"seed|port|gpu_layers|^ngl$|verbos|^v$|warmup|retries|offload|swap|^cpu_|spec"
)
_ZERO = re.compile(r"-?0+(?:\.0+)?|-\d+(?:\.\d+)?")


def zero_given(given: Given, near: str = "") -> str | None:
    """The option of ``given`` set to zero or below (``--tp-size 0``, ``--context-length
    0``), as written, else None; of several, the one whose name ``near`` (the failing
    code's lines) spells (``self.decode_log_interval``), else the first. A count of zero
    fails later as a bare ``ZeroDivisionError`` or ``IndexError``, far from the option."""
    zeros = [
        (name, value)
        for name, value in given
        if not name.startswith("$")
        and _ZERO.fullmatch(value.strip())
        and _ZERO_ON_PURPOSE.search(name) is None
    ]
    if not zeros:
        return None
    lowered = near.lower()
    name, value = next(
        ((n, v) for n, v in zeros if len(n) > 3 and n.split("_")[-1] in lowered and n in lowered),
        zeros[0],
    )
    return f"--{name.replace('_', '-')} {value}"


def folder_missing(line: str, given: Given, *, model_read: bool = False) -> str | None:
    """The path ``line`` quotes as no Hub id, as the command gave it, when no folder is
    there, else None. The Hub client takes a local path for a repository's name only
    where no such folder exists (``Repo id must be in the form ...: '~/models/x'``: a
    typo, an unexpanded ``~``, a path split at a space or only on the container's host):
    the command's to fix, whichever option gave it, the model's own included, and in a
    paste with no command too. ``model_read``: the failing code reads the tokenizer from
    the model's folder, which the engine had read its configuration from; that folder is
    there and lacks a file (model-load), unless a tokenizer option named the path.
    vLLM's ``Invalid repository ID or local directory`` is said of a folder that is
    there but empty as well: only an option apart from the model's own path is named by
    it (a configuration or draft model's folder)."""
    if "Repo id must" in line:
        found = _REPO_QUOTED.search(line)
        if found is None:
            return None
        quoted = found.group(1)
        path = quoted.strip()
        # a local path, an unexpanded variable, or a web page's URL copied for the id
        local = path.startswith(("/", "./", "../", "~", "http://", "https://")) or "${" in path
        if not local and quoted == path:
            return None
        for name, value in given:
            raw = value.strip("'\"").rstrip("/")
            if raw.strip() != path.rstrip("/") and raw != quoted.rstrip("/"):
                continue
            if model_read and not (name in _TOKENIZER_OPTIONS or "draft" in name):
                return None
            shown = f"{value!r}" if raw != raw.strip() else value
            return f"--{name.replace('_', '-')} {shown}"
        return None if model_read else f"the path {quoted!r}"
    if "Invalid repository ID or local directory" not in line:
        return None
    for name, value in given:
        inner = _JSON_PATH.search(value)
        if inner is not None and f"'{inner.group(1).rstrip('/')}'" in line:
            # a path inside a JSON value (--speculative-config '{"model": "/d"}')
            return f"--{name.replace('_', '-')} {value}"
        raw = value.strip("'\"").rstrip("/")
        path = raw.strip()
        if not path.startswith(("/", "./", "../", "~")):
            continue
        if raw != path and f"'{raw}'" in line:
            return f"--{name.replace('_', '-')} {value!r}"  # a stray space in the path
        own = _option_name(name) in _MODEL_OPTIONS and name not in _TOKENIZER_OPTIONS
        named = not own or "draft" in name
        if named and (f"'{path}'" in line or f"'{path}/'" in line):
            return f"--{name.replace('_', '-')} {value}"
    return None


_JSON_PATH = re.compile(r"^\s*\{.*?[\"'](/[^\"']+|~[^\"']*)[\"']")
# the id as quoted at the end of the Hub client's message ("... in the form 'repo_name'
# or 'namespace/repo_name': '~/m'.", "... maximum length is 96: '${MODEL_DIR}/m'.")
_REPO_QUOTED = re.compile(r"Repo id must .*: '([^']*)'\.?(?: Use `repo_type`.*)?$")


def load_format_forced(given: Given) -> str | None:
    """The command's ``--load-format`` when it forces a format (not ``auto``), as
    written, else None."""
    for name, value in given:
        if name == "load_format" and value.strip().strip("'\"").lower() not in ("", "auto"):
            return f"--load-format {value}"
    return None


def quantization_given(given: Given) -> str | None:
    """The command's quantization method option (``--quantization gguf``), as written,
    else None."""
    for name, value in given:
        if name in ("quantization", "quantize", "q") and value.strip():
            flag = f"--{name}" if len(name) > 1 else f"-{name}"
            return f"{flag} {value}"
    return None


def value_in_line(line: str, given: Given) -> str | None:
    """The option or variable of ``given`` whose value ``line`` quotes whole, in quotes
    (``Given number of CPU id list ['0-1'] doesn't match local world size 2.`` after
    ``VLLM_CPU_OMP_THREADS_BIND=0-1``), or a string inside its JSON object (ZeroMQ's
    ``Invalid argument (addr='127.0.0.1:5557')`` after ``--kv-events-config
    '{"endpoint": "127.0.0.1:5557"}'``), as written, else None; values of three characters
    or more, not the model's path."""
    for name, value in given:
        said = value.strip()
        if len(said) < 3 or _option_name(name) in _MODEL_OPTIONS:
            continue
        quoted = [said, *(leaf for leaf in _json_strings(said) if len(leaf) >= 3)]
        if any(f"'{text}'" in line or f'"{text}"' in line for text in quoted):
            return (
                f"{name[1:]}={value}"
                if name.startswith("$")
                else f"--{name.replace('_', '-')} {value}"
            )
    return None


def option_spelt(line: str, given: Given) -> str | None:
    """The option of ``given`` whose name ``line`` spells as an attribute, whole or by its
    last two words or more (``gpu_id`` for ``--base-gpu-id``), and whose value it quotes
    as a word (``NUMA index 3 (derived from the worker's global device id / gpu_id)``
    after ``--base-gpu-id 3``), as written, else None; not the model's path, the port
    or the host, and not a name of one word (every line says ``size``)."""
    lowered = line.lower()
    for name, value in given:
        said = value.strip()
        words = name.split("_")
        if name.startswith("$") or len(words) < 2 or not said or " " in said:
            continue
        if _option_name(name) in _MODEL_OPTIONS or name in _EVERYWHERE:
            continue
        if not re.search(rf"(?<![\w.-]){re.escape(said.lower())}(?![\w-]|\.\w)", lowered):
            continue
        for start in range(len(words) - 1):
            tail = words[start:]
            spelt = "[_-]".join(re.escape(w) for w in tail)
            if re.search(rf"(?<![a-z0-9]){spelt}(?![a-z0-9])", lowered):
                return f"--{name.replace('_', '-')} {value}"
    return None


def option_module(path: str, given: Given) -> str | None:
    """The option of ``given`` whose first distinctive word (five letters or more) the
    file name of ``path`` begins with (``offloader.py`` after ``--offload-group-size``):
    the module that does what the option asks, as written, else None."""
    stem = os.path.basename(path.replace("\\", "/")).lower().removesuffix(".py")
    for name, value in given:
        if name.startswith("$") or _option_name(name) in _MODEL_OPTIONS or name in _EVERYWHERE:
            continue
        words = [w for w in name.split("_") if len(w) >= 5 and w not in _COMMON_WORDS]
        if words and stem.startswith(words[0]):
            return f"--{name.replace('_', '-')} {value}".rstrip()
    return None


def option_named_module(paths: Sequence[str], given: Given) -> str | None:
    """The option of ``given`` whose whole name (``tool_server``) one of the traceback's
    file names spells (``.../mcp/tool_server.py``): the code that serves that option,
    as written, else None; names of one short word are not taken."""
    stems = {os.path.basename(p.replace("\\", "/")).removesuffix(".py") for p in paths}
    for name, value in given:
        if name.startswith("$") or _option_name(name) in _MODEL_OPTIONS or name in _EVERYWHERE:
            continue
        if "_" in name and name in stems:
            return f"--{name.replace('_', '-')} {value}".rstrip()
    return None


def _json_strings(value: str) -> list[str]:
    """The strings inside ``value`` read as a JSON object (an endpoint inside
    ``--kv-events-config``), none where it is not one."""
    if not value.startswith("{"):
        return []
    try:
        found = json.loads(value)
    except ValueError:
        return []
    strings: list[str] = []
    stack = [found]
    while stack:
        item = stack.pop()
        if isinstance(item, str):
            strings.append(item)
        elif isinstance(item, dict):
            stack.extend(item.values())
        elif isinstance(item, list):
            stack.extend(item)
    return strings


# the top packages of the engines: a module of theirs that is not there is not installed
_ENGINE_PACKAGES = frozenset(
    ("vllm", "sglang", "llama_cpp", "tensorrt_llm", "text_generation_server", "lmdeploy")
)


def module_misspelt(line: str, given: Given) -> str | None:
    """The command's ``-m MODULE`` when ``line`` says Python found no such module and its
    top package is none of the engines' (``llama_cpp_python.server``: the distribution's
    name, not its import name), as written, else None. An engine's own module that is
    not there is its package not installed."""
    found = _NO_MODULE_SPEC.search(line)
    if found is None:
        return None
    module = found.group(1)
    for name, value in given:
        if name == "m" and value.strip() == module:
            top = module.split(".")[0]
            return None if top in _ENGINE_PACKAGES else f"-m {module}"
    return None


_NO_MODULE_SPEC = re.compile(r"Error while finding module specification for '([\w.]+)'")


def model_shard_given(line: str, given: Given) -> str | None:
    """The command's model option when ``line`` says llama.cpp was given a split GGUF's
    later shard (``illegal split file idx: 1 (file: /m/x-00002-of-00002.gguf), model must
    be loaded with the first split``) and quotes that option's file, as written, else
    None (a runner that picked the shard itself is its own fault)."""
    found = _NOT_FIRST_SPLIT.search(line)
    if found is None:
        return None
    for name, value in given:
        if _option_name(name) in _MODEL_OPTIONS and value.strip() == found.group(1):
            flag = f"--{name.replace('_', '-')}" if len(name) > 1 else f"-{name}"
            return f"{flag} {value}"
    return None


_NOT_FIRST_SPLIT = re.compile(r"illegal split file idx: \d+ \(file: ([^)]+)\)")


def model_not_a_model(given: Given) -> str | None:
    """The command's model option when its file is a download's metadata beside the
    model, not the model (``model.gguf:Zone.Identifier``, which Windows writes next to a
    download and WSL shows as a file), as written, else None."""
    for name, value in given:
        if _option_name(name) in _MODEL_OPTIONS and _ZONE_FILE.search(value.strip()):
            flag = f"--{name.replace('_', '-')}" if len(name) > 1 else f"-{name}"
            return f"{flag} {value}"
    return None


_ZONE_FILE = re.compile(r":Zone\.Identifier$", re.IGNORECASE)


def adapter_as_model(line: str, given: Given) -> str | None:
    """The command's model option when the folder it names, quoted in ``line``, is a
    LoRA adapter's and not a model's: on this machine the folder holds
    ``adapter_config.json`` and no ``config.json``; where it is not on this machine, a
    part of its path says so (``adapters/sql-lora``), as written, else None."""
    for name, value in given:
        folder = value.strip().rstrip("/")
        if _option_name(name) not in _MODEL_OPTIONS or not folder.startswith("/"):
            continue
        if f"'{folder}'" not in line and f"'{folder}/'" not in line:
            continue
        flag = f"--{name.replace('_', '-')}" if len(name) > 1 else f"-{name}"
        if os.path.isdir(folder):
            there = os.path.isfile(os.path.join(folder, "adapter_config.json"))
            if there and not os.path.isfile(os.path.join(folder, "config.json")):
                return f"{flag} {value}"
            continue
        parts = folder.lower().split("/")[-2:]
        if any(_ADAPTER_WORD.search(part) for part in parts):
            return f"{flag} {value}"
    return None


_ADAPTER_WORD = re.compile(r"(?<![a-z])(?:q?lora|adapters?|peft)(?![a-z])")


def hosts_listed(given: Given) -> str | None:
    """The command's ``--host`` when it lists several addresses (``127.0.0.1,localhost``:
    the server binds one address, the name of the list's second), as written, else
    None."""
    for name, value in given:
        if name in ("host", "hostname") and ("," in value or " " in value.strip()):
            return f"--host {value}"
    return None


def warnings_as_errors(given: Given) -> str | None:
    """The setting of ``given`` that turns Python's warnings into exceptions
    (``PYTHONWARNINGS=error``, ``python -W error``), as written, else None."""
    for name, value in given:
        if name in ("$PYTHONWARNINGS", "w") and "error" in value.lower():
            return f"PYTHONWARNINGS={value}" if name.startswith("$") else f"-W {value}"
    return None


def cpu_asked(given: Given) -> bool:
    """Whether ``given`` asks the engine to run on the CPU (``--device cpu``)."""
    return any(name == "device" and value.lower() == "cpu" for name, value in given)


# a file the engine was told to open that is not there, in llama.cpp's words: the
# model's ("Model path does not exist: X", "failed to open GGUF file 'X' (No such file
# or directory)"), an adapter's ("failed to open 'X': No such file or directory")
_NOT_THERE = re.compile(
    r"Model path does not exist: (?P<said>.+?)\s*$"
    r"|failed to open GGUF file '(?P<gguf>[^']+)' \(No such file or directory\)"
    r"|\bfailed to open '(?P<file>[^']+)': No such file or directory"
)
# a split GGUF's later shard, which llama.cpp finds beside the first one it was given
_LATER_SHARD = re.compile(r"-0*(?:[2-9]|[1-9]\d+)-of-\d+\.gguf$")
# the Hugging Face cache's own layout: files the cache holds, not a path the user wrote
_HUB_CACHE = re.compile(r"/models--[^/]+/(?:snapshots|blobs)/")


def path_not_there(line: str, given: Given) -> str | None:
    """The path ``line`` says is not there (llama.cpp's ``Model path does not exist:``,
    ``failed to open GGUF file '...' (No such file or directory)``), as the command gave
    it (or ``the path '...'`` where a config file gave it), when the command is known,
    else None. A path that is not there is the command's to fix (a typo, an unexpanded
    ``~``, a URL or ``file://`` where a file is wanted, a path of another machine or
    container, two paths in one value), whichever option gave it, the model's own
    included; not a split GGUF's later shard, a file inside the Hugging Face cache, nor
    a link whose target is gone: those are files missing from what the command named
    right."""
    if not given:
        return None
    found = _NOT_THERE.search(line)
    if found is None:
        return None
    path = next(part for part in found.groups() if part)
    if _LATER_SHARD.search(path) or _HUB_CACHE.search(path) or os.path.islink(path):
        return None
    for name, value in given:
        if value.strip().strip("'\"").rstrip("/") not in (path.rstrip("/"), path.strip()):
            continue
        if name.startswith("$"):
            return f"{name[1:]}={value}"
        flag = f"--{name.replace('_', '-')}" if len(name) > 1 else f"-{name}"
        return f"{flag} {value}"
    return f"the path {path!r}"


def tls_given(given: Given) -> str | None:
    """The first TLS setting of ``given`` (``--ssl-keyfile``, ``SSL_KEYFILE``), as
    written, else None."""
    for name, value in given:
        if name.lstrip("$").lower().startswith("ssl_"):
            if name.startswith("$"):
                return f"{name[1:]}={value}"
            return f"--{name.replace('_', '-')} {value}"
    return None


# options whose value is a JSON object by their name (--model-loader-extra-config,
# --json-model-override-args, --hf-overrides, --speculative-config)
_JSON_OPTION = re.compile(r"(?:config|json|args|kwargs|overrides?)$")


def json_not_given(given: Given) -> str | None:
    """The option of ``given`` whose value should be JSON by its name and is not (no
    ``{`` or ``[``, no path of a file: ``--model-loader-extra-config num_threads=8``), as
    written, else None."""
    for name, value in given:
        if name.startswith("$") or not _JSON_OPTION.search(name):
            continue
        stripped = value.strip().strip("'")
        if not stripped or stripped[0] in "{[" or _path_value(stripped) is not None:
            continue
        if "/" in stripped or stripped.endswith((".json", ".yaml", ".yml")):
            continue
        return f"--{name.replace('_', '-')} {value}"
    return None


def _stems(word: str) -> set[str]:
    """``word`` and its stems without a plural's or a past's ending (queued: queue)."""
    stems = {word}
    for ending in ("s", "d", "ed", "es"):
        if word.endswith(ending) and len(word) - len(ending) >= 4:
            stems.add(word[: -len(ending)])
    return stems


def zero_named(line: str, given: Given) -> str | None:
    """The option of ``given`` set to zero or below whose distinctive words (four
    letters or more) all appear in ``line``, as a word or its stem (``--max-queued-requests
    0`` and "The request queue is full."), as written, else None: a count of zero that
    an engine takes and then fails on, in the words of the thing it counts."""
    said = set(re.findall(r"[a-z]+", line.lower()))
    said |= {stem for word in said for stem in _stems(word)}
    for name, value in given:
        if name.startswith("$") or not _ZERO.fullmatch(value.strip()):
            continue
        if _ZERO_ON_PURPOSE.search(name) is not None:
            continue
        words = [w for w in name.split("_") if len(w) >= 4 and w not in _COMMON_WORDS]
        if words and all(_stems(w) & said for w in words):
            return f"--{name.replace('_', '-')} {value}"
    return None


# the OS refusing a path whose part is a file ("[Errno 20] Not a directory:
# '/a/sql-lora/adapter_model.safetensors/adapter_config.json'")
_NOT_A_FOLDER = re.compile(r"\[Errno 20\] Not a directory: '([^']+)'")


def file_where_folder(line: str, given: Given) -> str | None:
    """The option of ``given`` whose path the OS found to be a file where the code looked
    inside it for another (``--lora-modules sql=/a/adapter_model.safetensors``, then
    ``Not a directory: '/a/adapter_model.safetensors/adapter_config.json'``), as
    written, else None: a file given where a folder is wanted is the command's."""
    found = _NOT_A_FOLDER.search(line)
    if found is None:
        return None
    quoted = found.group(1)
    for name, value in given:
        for part in re.split(r"[\s,]+", value):
            path = part.split("=", 1)[-1].strip("'\"").rstrip("/")
            if len(path) > 1 and path.startswith(("/", "~", ".")) and quoted.startswith(f"{path}/"):
                if name.startswith("$"):
                    return f"{name[1:]}={value}"
                flag = f"--{name.replace('_', '-')}" if len(name) > 1 else f"-{name}"
                return f"{flag} {value}"
    return None


def _names_file(value: str) -> bool:
    """Whether ``value`` (``name=/path`` too) is a path whose last part has a suffix (a
    file's: ``sums.sha256``), not a folder's (``/adapters/sql-lora``)."""
    path = _path_value(value)
    return path is not None and "." in path.rsplit("/", 1)[-1].lstrip(".")


def dashed_flag_in_line(line: str, given: Given) -> str | None:
    """The option of ``given`` that ``line`` spells as a flag, dashes and all
    (`` `--nnodes 2` must evenly divide the total world size``), one-word names too,
    as written, else None: a message that names the flag itself is about the
    command's value of it."""
    for name, value in given:
        if name.startswith("$") or len(name) < 3 or is_secret_name(name):
            continue
        if _option_name(name) in _MODEL_OPTIONS:
            continue
        flag = f"--{name.replace('_', '-')}"
        if re.search(rf"(?<![\w-]){re.escape(flag)}(?![\w-])", line):
            return f"{flag} {value}".rstrip()
    return None


def uri_for_path(line: str, given: Given, *, schemes: tuple[str, ...] = ("file",)) -> str | None:
    """The option of ``given`` whose value is a URI of one of ``schemes`` where a path is
    wanted, quoted back by ``line`` (SGLang's "Invalid connector type: file:///m", or the
    Hub's web address for ``--model-path``), as written, else None: give the path or
    the id."""
    for name, value in given:
        bare = value.strip().strip("'\"")
        scheme, sep, _ = bare.partition("://")
        if sep and scheme.lower() in schemes and bare in line:
            if name.startswith("$"):
                return f"{name[1:]}={value}"
            flag = f"--{name.replace('_', '-')}" if len(name) > 1 else f"-{name}"
            return f"{flag} {value}"
    return None
