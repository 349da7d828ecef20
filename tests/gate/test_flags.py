"""A CRASH whose line names an option the server's command set is bad-args (gate/flags.py).

Each verdict comes from the real gate on a live process that prints the log and exits
(tests/gate/crash_replay.py), given the command's options as ``servegate launch`` gives
them; the same log without them shows the kind the words alone give, so that each test
fails where the options are not read. One test launches a real command end to end.
"""

from __future__ import annotations

import socket
from pathlib import Path

import pytest
from tests.gate.crash_replay import run_log
from tests.gate.helpers import PY, alive
from tests.launch.helpers import free_port

from servegate.errors import ServerCrashed
from servegate.gate.flags import (
    flag_in_line,
    folder_missing,
    given_options,
    host_unresolvable,
    override_given,
    path_in_line,
)
from servegate.gate.options import GateOptions
from servegate.gate.verdict import Verdict
from servegate.launch import launch

SGLANG_START = "[2026-12-06 08:03:47] server_args=ServerArgs(model_path='/models/m')"


def gate(tmp_path: Path, engine: str, lines: list[str], command: list[str]) -> Verdict:
    log = tmp_path / "server.log"
    log.write_text("".join(line + "\n" for line in lines))
    return run_log(log, engine=engine, exit=1, command=command)


def traceback(*last: str) -> list[str]:
    return [
        SGLANG_START,
        "Traceback (most recent call last):",
        '  File "/venv/lib/python3.11/site-packages/sglang/srt/configs/model_config.py", '
        "line 9, in _verify_quantization",
        "    raise ValueError(text)",
        *last,
    ]


def test_the_options_of_a_command_line() -> None:
    """Long and short options, ``=`` forms and switches; the program, its module and
    ``KEY=value`` words before them are not options; a secret is left out."""
    command = [
        "HF_HUB_OFFLINE=1",
        "/venv/bin/python",
        "-m",
        "sglang.launch_server",
        "--model-path",
        "/models/m",
        "--tp-size",
        "2",
        "--log-level=verbose",
        "--trust-remote-code",
        "-ngl",
        "-1",
        "--api-key",
        "sk-not-kept-123456",
    ]
    assert given_options(command) == (
        ("m", "sglang.launch_server"),
        ("model_path", "/models/m"),
        ("tp_size", "2"),
        ("log_level", "verbose"),
        ("trust_remote_code", ""),
        ("ngl", "-1"),
        ("$HF_HUB_OFFLINE", "1"),
    )


@pytest.mark.parametrize(
    ("line", "named"),
    [
        ("ValueError: Cannot find the config file for awq", "--quantization awq"),
        ("AttributeError: module 'logging' has no attribute 'VERBOSE'", "--log-level verbose"),
        ("AssertionError: ranks (dp_size * tp_size * pp_size = 2) exceed", "--tp-size 2"),
        ("ValueError: tp-size must divide the heads", "--tp-size 2"),
        # not evidence: the model's path, a library's name in title case, a dotted name,
        # a value too plain to tell
        ("OSError: /models/m is not a file.", None),
        ("ValueError: Transformers does not recognize this architecture", None),
        ("TypeError: expected torch.awq_tensor", None),
        ("RuntimeError: no kernel for the cpu", None),
    ],
)
def test_what_names_an_option(line: str, named: str | None) -> None:
    given = given_options(
        [
            "--model-path",
            "/models/m",
            "--quantization",
            "awq",
            "--log-level",
            "verbose",
            "--tp-size",
            "2",
            "--model-impl",
            "transformers",
            "--device",
            "cpu",
        ]
    )
    assert flag_in_line(line, given) == named


def test_a_message_quoting_the_value_given_is_bad_args_and_names_the_option(
    tmp_path: Path,
) -> None:
    """SGLang's quantization method without its config: the words alone say the model's
    files (model-load); with the command's ``--quantization awq`` the fix is the option."""
    cause = "ValueError: Cannot find the quantization config file for awq in the checkpoint"
    lines = traceback(cause)
    alone = gate(tmp_path, "sglang", lines, command=[])
    assert (alone.status, alone.kind) == ("crash", "model-load")
    verdict = gate(
        tmp_path, "sglang", lines, ["--model-path", "/models/m", "--quantization", "awq"]
    )
    assert (verdict.status, verdict.kind) == ("crash", "bad-args")
    assert verdict.matched_line == cause
    assert verdict.hint is not None and "--quantization awq" in verdict.hint


def test_an_enumeration_echoing_the_value_in_capitals(tmp_path: Path) -> None:
    """``--log-level verbose`` looked up as ``logging.VERBOSE``: an attribute missing
    from a module reads as an install problem alone, the option's value with the command."""
    lines = traceback("AttributeError: module 'logging' has no attribute 'VERBOSE'")
    assert gate(tmp_path, "sglang", lines, command=[]).kind == "install"
    verdict = gate(tmp_path, "sglang", lines, ["--log-level", "verbose"])
    assert verdict.kind == "bad-args"


def test_a_failure_with_a_fix_of_its_own_keeps_its_kind(tmp_path: Path) -> None:
    """Out of memory while naming the option's value, and a library that will not import
    though its name is the value: the kind stays oom and install."""
    oom = traceback(
        "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB for awq"
    )
    assert gate(tmp_path, "sglang", oom, ["--quantization", "awq"]).kind == "oom"
    missing = traceback("ModuleNotFoundError: No module named 'awq'")
    assert gate(tmp_path, "sglang", missing, ["--quantization", "awq"]).kind == "install"


def test_a_secret_given_on_the_command_is_never_evidence_nor_quoted(tmp_path: Path) -> None:
    secret = "sk-live-0123456789abcdef"
    lines = traceback(
        f"ValueError: Cannot find the quantization config file for {secret} in the checkpoint"
    )
    options = GateOptions(engine="sglang").for_command(["--api-key", secret, "--port", "1"])
    assert secret not in str(options.to_json())
    verdict = gate(tmp_path, "sglang", lines, ["--api-key", secret])
    assert verdict.kind == "model-load"
    assert secret not in (verdict.hint or "")


def test_a_launched_server_is_judged_against_its_own_command(tmp_path: Path) -> None:
    """``launch`` reads the options from the command it starts, through the keeper: the
    crash is bad-args naming the option, and nothing is left running."""
    script = tmp_path / "server.py"
    script.write_text(
        "import sys\n"
        "print(\"server_args=ServerArgs(model_path='/models/m')\", flush=True)\n"
        "print('Traceback (most recent call last):', flush=True)\n"
        "print('  File \"/venv/sglang/srt/configs/model_config.py\", line 9, in f', flush=True)\n"
        "print('ValueError: Cannot find the quantization config file for ' + sys.argv[-1]"
        " + ' in the checkpoint'"
        ", flush=True)\n"
        "sys.exit(1)\n"
    )
    with pytest.raises(ServerCrashed) as info:
        launch(
            [PY, str(script), "--model-path", "/models/m", "--quantization", "awq"],
            engine="sglang",
            port=free_port(),
            timeout_s=60,
            log_path=str(tmp_path / "server.log"),
        )
    verdict = info.value.verdict
    assert (verdict.status, verdict.kind) == ("crash", "bad-args")
    assert verdict.hint is not None and "--quantization awq" in verdict.hint
    assert verdict.pid is not None and not alive(verdict.pid)


def test_a_kind_found_by_words_takes_the_kinds_hint_not_one_lines(tmp_path: Path) -> None:
    """bad-args found by its words, no option named: the hint is the kind's, not that of
    the one signature of the kind about a host that is no address of this machine."""
    lines = traceback("ValueError: Cannot find the config file for awq")
    verdict = gate(tmp_path, "sglang", lines, command=[])
    assert verdict.kind == "bad-args"
    assert verdict.hint is not None and "host" not in verdict.hint
    assert "flag" in verdict.hint


def test_an_environment_variable_given_to_the_server_is_an_option_too(tmp_path: Path) -> None:
    """vLLM rejecting a variable it no longer knows: the variable set before the program
    (or in ``launch(env=...)``) is named; a flag named in the message with its dashes is
    an option as well."""
    cause = "ValueError: Unknown vLLM environment variable detected: VLLM_ATTENTION_BACKEND"
    lines = [
        "Traceback (most recent call last):",
        '  File "/venv/lib/python3.11/site-packages/vllm/envs.py", line 9, in validate',
        "    raise ValueError(msg)",
        cause,
    ]
    command = ["VLLM_ATTENTION_BACKEND=FLASH_ATTN", "python", "-m", "vllm", "--port", "8000"]
    assert gate(tmp_path, "vllm", lines, command=[]).kind != "bad-args"
    verdict = gate(tmp_path, "vllm", lines, command)
    assert verdict.kind == "bad-args"
    assert verdict.hint is not None and "VLLM_ATTENTION_BACKEND=FLASH_ATTN" in verdict.hint
    options = GateOptions(engine="vllm").for_command(["vllm"], {"VLLM_X_MODE": "fast"})
    assert ("$VLLM_X_MODE", "fast") in options.command_options
    given = given_options(["--enable-log-outputs"])
    named = "TypeError: Error: --enable-log-outputs requires --enable-log-requests"
    assert flag_in_line(named, given) == "--enable-log-outputs"


@pytest.mark.parametrize(
    ("line", "named"),
    [
        # a variable's folder, a file under it
        (
            "FileNotFoundError: [Errno 2] No such file or directory: '/run/prom/tmp8x_q'",
            "PROMETHEUS_MULTIPROC_DIR=/run/prom",
        ),
        # an option's file, at the end of the line
        (
            "failed to open static lookup cache: /var/cache/llama/static.bin",
            "--lookup-cache-static /var/cache/llama/static.bin",
        ),
        # the model's own path, and a part of the model (a draft): the model's files
        ("OSError: /models/m does not appear to have a file named config.json", None),
        ("failed to open GGUF file '/models/draft.gguf' (No such file or directory)", None),
        # a longer name that begins with the path is another file
        ("No such file or directory: '/run/prom-old/x'", None),
    ],
)
def test_what_quotes_a_path_the_command_gave(line: str, named: str | None) -> None:
    command = [
        "PROMETHEUS_MULTIPROC_DIR=/run/prom",
        "server",
        "--model",
        "/models/m",
        "--model-draft",
        "/models/draft.gguf",
        "--lookup-cache-static",
        "/var/cache/llama/static.bin",
    ]
    assert path_in_line(line, given_options(command)) == named


def test_a_missing_file_the_command_named_is_bad_args(tmp_path: Path) -> None:
    """A logging configuration given by a variable that is not there: the words alone
    name no family (the process's end); the variable's path quoted makes it bad-args,
    and the hint names the variable."""
    cause = (
        "RuntimeError: ('Could not load logging config. File does not exist: %s', "
        "'/etc/vllm/logging.json')"
    )
    lines = [
        "Traceback (most recent call last):",
        '  File "/venv/lib/python3.11/site-packages/vllm/logger.py", line 9, in _configure',
        "    raise RuntimeError(msg)",
        cause,
    ]
    assert gate(tmp_path, "vllm", lines, command=[]).kind != "bad-args"
    command = ["VLLM_LOGGING_CONFIG_PATH=/etc/vllm/logging.json", "python", "-m", "vllm"]
    verdict = gate(tmp_path, "vllm", lines, command)
    assert verdict.kind == "bad-args"
    assert verdict.matched_line == cause
    assert verdict.hint is not None and "VLLM_LOGGING_CONFIG_PATH" in verdict.hint


def test_a_model_that_fails_with_its_configuration_overridden_is_bad_args(
    tmp_path: Path,
) -> None:
    """A shape error in the model's load, with the command overriding its heads: the
    override is what to change; without one, the model's files are."""
    lines = traceback("RuntimeError: start (0) + length (192) exceeds dimension size (128).")
    lines[2] = (
        '  File "/venv/lib/python3.11/site-packages/sglang/srt/model_loader/loader.py", '
        "line 9, in load_model"
    )
    lines[3] = "    weight = loaded_weight.narrow(0, start, length)"
    alone = gate(tmp_path, "sglang", lines, command=[])
    command = ["python", "-m", "sglang.launch_server", "--json-model-override-args"]
    command.append('{"num_attention_heads": 3}')
    assert override_given(given_options(command)) is not None
    verdict = gate(tmp_path, "sglang", lines, command)
    assert alone.kind == "model-load"
    assert verdict.kind == "bad-args"
    assert verdict.hint is not None and "--json-model-override-args" in verdict.hint


def test_a_socket_path_under_a_folder_the_command_named(tmp_path: Path) -> None:
    """ZeroMQ's ipc socket under VLLM_RPC_BASE_PATH, a folder that is not there: the
    distributed family's words, but the path is the variable's."""
    cause = 'zmq.error.ZMQError: No such file or directory for ipc path "/run/vllm-ipc/7e05".'
    lines = [
        "Traceback (most recent call last):",
        '  File "/venv/lib/python3.11/site-packages/zmq/sugar/socket.py", line 9, in bind',
        "    super().bind(addr)",
        cause,
    ]
    assert gate(tmp_path, "vllm", lines, command=[]).kind == "distributed"
    command = ["VLLM_RPC_BASE_PATH=/run/vllm-ipc", "python", "-m", "vllm"]
    verdict = gate(tmp_path, "vllm", lines, command)
    assert verdict.kind == "bad-args"
    assert verdict.hint is not None and "VLLM_RPC_BASE_PATH" in verdict.hint


@pytest.mark.parametrize(
    ("line", "command", "named"),
    [
        # a JSON option's key
        (
            "ValueError: Unexpected extra config keys for load format AUTO: {'use_mmap'}",
            ["--model-loader-extra-config", '{"use_mmap": true}'],
            '--model-loader-extra-config {"use_mmap": true}',
        ),
        # a class by its module path, named alone
        (
            "AttributeError: module 'vllm.v1.core.sched' has no attribute 'PriorityScheduler'",
            ["--scheduler-cls", "vllm.v1.core.sched.PriorityScheduler"],
            "--scheduler-cls vllm.v1.core.sched.PriorityScheduler",
        ),
        # an option's name in words
        (
            "ValueError: No common block size for 7 (CPU_ATTN: [MultipleOf(32)]).",
            ["--block-size", "7"],
            "--block-size 7",
        ),
        # a word of one key is not the key
        ("ValueError: bad mmap", ["--model-loader-extra-config", '{"use_mmap": true}'], None),
    ],
)
def test_keys_classes_and_names_in_words(line: str, command: list[str], named: str | None) -> None:
    assert flag_in_line(line, given_options(command)) == named


def test_a_tokenizer_file_for_its_folder_and_a_cuda_driver_under_device_cpu(
    tmp_path: Path,
) -> None:
    """--tokenizer-path given the tokenizer's own JSON file, and torch's driver check
    under --device cpu: the command's (bad-args); without those options, the words'."""
    lines = traceback("KeyError: 'regular_tokens'")
    lines[2] = '  File "/venv/sglang/srt/hf_transformers_utils.py", line 9, in get_tokenizer'
    alone = gate(tmp_path, "sglang", lines, command=[])
    command = ["python", "-m", "sglang.launch_server", "--tokenizer-path", "/m/tokenizer.json"]
    verdict = gate(tmp_path, "sglang", lines, command)
    assert alone.kind != "bad-args"
    assert verdict.kind == "bad-args"
    assert verdict.hint is not None and "--tokenizer-path /m/tokenizer.json" in verdict.hint
    # vLLM's --hf-config-path and --generation-config take a folder too
    hub = "ValueError: Invalid repository ID or local directory specified: '/m/config.json'."
    base = ["python", "-m", "vllm.entrypoints.openai.api_server", "--model", "/m"]
    assert gate(tmp_path, "vllm", [hub], base).kind != "bad-args"
    verdict = gate(tmp_path, "vllm", [hub], [*base, "--hf-config-path", "/m/config.json"])
    assert verdict.kind == "bad-args"
    assert verdict.hint is not None and "--hf-config-path" in verdict.hint
    driver = traceback("RuntimeError: Found no NVIDIA driver on your system. Please check")
    assert gate(tmp_path, "sglang", driver, ["python", "--device", "cuda"]).kind == "cuda-error"
    assert gate(tmp_path, "sglang", driver, ["python", "--device", "cpu"]).kind == "bad-args"


def test_a_dotted_value_counts_whole_and_by_its_last_name() -> None:
    """A class path the line quotes whole (``Invalid logits processor FQCN 'a.b.C'``) or
    by its own name: both are the option's."""
    given = given_options(["--logits-processors", "acme_guard.logits.BanListProcessor"])
    whole = "ValueError: Invalid logits processor FQCN 'acme_guard.logits.BanListProcessor'."
    assert flag_in_line(whole, given) is not None
    assert flag_in_line("AttributeError: no attribute 'BanListProcessor'", given) is not None


def test_the_servers_own_tls_settings_refused_are_bad_args(tmp_path: Path) -> None:
    """ssl's "No cipher can be selected." under --ssl-ciphers: the server's own TLS
    settings, not a download's connection."""
    lines = [
        "Traceback (most recent call last):",
        '  File "/venv/lib/python3.11/site-packages/uvicorn/config.py", line 9, in ssl',
        "    ctx.set_ciphers(ciphers)",
        "ssl.SSLError: ('No cipher can be selected.',)",
    ]
    assert gate(tmp_path, "vllm", lines, command=[]).kind == "download"
    command = ["python", "-m", "vllm", "--ssl-ciphers", "TLS_AES_256_GCM_SHA384"]
    verdict = gate(tmp_path, "vllm", lines, command)
    assert verdict.kind == "bad-args"
    assert verdict.hint is not None and "--ssl-ciphers" in verdict.hint


def test_the_model_path_set_by_a_variable_is_the_models(tmp_path: Path) -> None:
    """LLAMA_ARG_MODEL is llama-server's --model: its file that is not there is the
    value's (bad-args, naming the variable), as it would be after -m, and one that is
    there but unreadable is the file's (permission); another variable's path quoted by
    the line stays the command's."""
    lines = [
        "0.00.008.700 I srv  llama_server: initializing ...",
        "0.00.008.711 E gguf_init_from_file: failed to open GGUF file '/models/g.gguf' (No "
        "such file or directory)",
        "0.00.008.900 E srv    load_model: failed to load model, '/models/g.gguf'",
    ]
    log = tmp_path / "server.log"
    log.write_text("".join(line + "\n" for line in lines))
    command = ["env", "LLAMA_ARG_MODEL=/models/g.gguf", "llama-server", "--port", "8080"]
    verdict = run_log(log, engine="llamacpp", exit=1, command=command)
    assert verdict.kind == "bad-args"
    assert "LLAMA_ARG_MODEL=/models/g.gguf is not there" in (verdict.hint or "")
    log.write_text(log.read_text().replace("No such file or directory", "Permission denied"))
    assert run_log(log, engine="llamacpp", exit=1, command=command).kind == "permission"
    log.write_text("".join(line + "\n" for line in lines))
    command[1] = "LLAMA_ARG_LOOKUP_CACHE=/models/g.gguf"
    assert run_log(log, engine="llamacpp", exit=1, command=command).kind == "bad-args"


def test_an_option_the_line_names_beats_a_kind_the_phase_gave(tmp_path: Path) -> None:
    """vLLM on the CPU with --block-size 16: "No common block size for 16" while the KV
    cache is sized; the phase alone says memory, the line names the option (bad-args).
    A line that says memory itself ("Available memory ... is less than requested memory
    for kv") keeps memory, though it names the variable that asked for it."""
    lines = [
        "(EngineCore pid=1) INFO 12-06 17:52:39 [kv_cache_utils.py:1000] Initializing the KV cache",
        "(Worker pid=6852) ERROR 12-06 17:52:40 [multiproc_executor.py:1063] ValueError: No "
        "common block size for 16 (CPU_ATTN: [MultipleOf(32)]).",
    ]
    log = tmp_path / "server.log"
    log.write_text("".join(line + "\n" for line in lines))
    command = ["python", "-m", "vllm.entrypoints.openai.api_server", "--block-size", "16"]
    assert run_log(log, engine="vllm", exit=1, command=command).kind == "bad-args"
    lines[-1] = (
        "(Worker pid=1) ERROR 12-06 04:04:27 [multiproc_executor.py:1063] ValueError: "
        "Available memory on node 0 (22.08/23.59 GiB) on kv cache allocation is less than "
        "requested memory for kv (64.0 GiB). Decrease VLLM_CPU_KVCACHE_SPACE."
    )
    log.write_text("".join(line + "\n" for line in lines))
    command = ["env", "VLLM_CPU_KVCACHE_SPACE=64", "python", "-m", "vllm"]
    assert run_log(log, engine="vllm", exit=1, command=command).kind == "oom"


def test_a_count_of_zero_that_fails_as_a_bare_division_or_index(tmp_path: Path) -> None:
    """SGLang given --decode-log-interval 0, --context-length 0 or --tp-size 0 fails far
    from the option, as a bare ZeroDivisionError or IndexError: the option set to zero is
    the command's to fix (the one the failing code spells, of several); a zero that is
    meant (--seed 0) is not named, nor a zero under another failure."""
    lines = [
        SGLANG_START,
        "Traceback (most recent call last):",
        '  File "/venv/lib/python3.11/site-packages/sglang/srt/managers/metrics_reporter.py",'
        " line 934, in report_decode_stats",
        "    if self.forward_ct_decode % self.decode_log_interval != 0:",
        "ZeroDivisionError: integer modulo by zero",
    ]
    command = ["python", "-m", "sglang.launch_server", "--model-path", "/m", "--seed", "0"]
    assert "--seed" not in (gate(tmp_path, "sglang", lines, command).hint or "")
    command += ["--dp-size", "0", "--decode-log-interval", "0"]
    verdict = gate(tmp_path, "sglang", lines, command)
    assert verdict.kind == "bad-args"
    assert verdict.hint is not None and "--decode-log-interval 0" in verdict.hint
    lines[-2:] = ["    infos = scheduler_infos[0]", "IndexError: list index out of range"]
    command = ["python", "-m", "sglang.launch_server", "--model-path", "/m", "--tp-size", "0"]
    verdict = gate(tmp_path, "sglang", lines, command)
    assert verdict.kind == "bad-args"
    assert verdict.hint is not None and "--tp-size 0" in verdict.hint
    lines[-1] = "IndexError: list index out of range, in the model's weights"
    assert gate(tmp_path, "sglang", lines, command).hint != verdict.hint


def test_a_module_path_given_to_an_option_that_moved(tmp_path: Path) -> None:
    """--worker-cls vllm.worker.cpu_worker.CPUWorker after the module moved: "No module
    named 'vllm.worker'" is the option's (bad-args); a package that is not installed at
    all ("No module named 'acme_gateway'" for --middleware acme_gateway.Auth) is an
    install's, and python's own -m is the engine's module."""
    lines = [
        "(VllmWorker-0 pid=1) ERROR 12-06 18:33:23 [multiproc_executor.py:953] "
        "ModuleNotFoundError: No module named 'vllm.worker'",
    ]
    base = ["python", "-m", "vllm.entrypoints.openai.api_server", "--model", "/m"]
    assert gate(tmp_path, "vllm", lines, base).kind == "install"
    verdict = gate(tmp_path, "vllm", lines, [*base, "--worker-cls", "vllm.worker.cpu.CPUWorker"])
    assert verdict.kind == "bad-args"
    assert verdict.hint is not None and "--worker-cls" in verdict.hint
    lines[0] = "ModuleNotFoundError: No module named 'acme_gateway'"
    assert gate(tmp_path, "vllm", lines, [*base, "--middleware", "acme_gateway.Auth"]).kind == (
        "install"
    )


def test_a_tokenizer_folder_that_is_not_there(tmp_path: Path) -> None:
    """--tokenizer-path /data/tokenizer that does not exist: the Hub's "Repo id must be in
    the form" quotes it; the option is the command's (bad-args), as the model's own path
    that is no folder is (both are paths to fix)."""
    lines = [
        SGLANG_START,
        "huggingface_hub.errors.HFValidationError: Repo id must be in the form 'repo_name' "
        "or 'namespace/repo_name': '/data/tokenizer'. Use `repo_type` argument if needed.",
    ]
    command = ["python", "-m", "sglang.launch_server", "--model-path", "/data/tokenizer"]
    assert gate(tmp_path, "sglang", lines, command).kind == "bad-args"
    command = ["python", "-m", "sglang.launch_server", "--model-path", "/m"]
    verdict = gate(tmp_path, "sglang", [*lines], [*command, "--tokenizer-path", "/data/tokenizer"])
    assert verdict.kind == "bad-args"
    assert verdict.hint is not None and "--tokenizer-path" in verdict.hint


def test_an_options_file_that_failed_before_the_failure_it_caused(tmp_path: Path) -> None:
    """vLLM logs that its --reasoning-parser-plugin file is not there, goes on, and dies
    of the parser that file would have registered: the file's line is the cause. Without
    the option, the last failure stays the cause."""
    lines = [
        "(APIServer pid=1) ERROR 12-06 18:30:44 [import_utils.py:95] Failed to load module "
        "'acme' from /p/acme.py.",
        "(APIServer pid=1) ERROR 12-06 18:30:44 [import_utils.py:95] FileNotFoundError: "
        "[Errno 2] No such file or directory: '/p/acme.py'",
        "(APIServer pid=1) INFO 12-06 18:30:44 [model.py:733] Resolved architecture: Llama",
        "Traceback (most recent call last):",
        '  File "/venv/lib/python3.11/site-packages/vllm/reasoning/__init__.py", line 9, in get',
        "    raise KeyError(f\"Reasoning parser '{name}' not found.\")",
        "KeyError: \"Reasoning parser 'acme' not found. Available parsers: deepseek_r1\"",
    ]
    base = ["python", "-m", "vllm.entrypoints.openai.api_server", "--model", "/m"]
    assert "Reasoning parser" in (gate(tmp_path, "vllm", lines, base).matched_line or "")
    command = [*base, "--reasoning-parser-plugin", "/p/acme.py", "--reasoning-parser", "acme"]
    verdict = gate(tmp_path, "vllm", lines, command)
    assert verdict.kind == "bad-args"
    assert "No such file or directory: '/p/acme.py'" in (verdict.matched_line or "")
    assert verdict.hint is not None and "--reasoning-parser-plugin" in verdict.hint


def test_a_bare_assertion_on_the_options_the_command_set(tmp_path: Path) -> None:
    """SGLang's "assert cfg.tp_size % cfg.attn_dp_size == 0", then a bare AssertionError,
    after --attn-dp-size 2: the check reads the option (bad-args, named); without it, or
    under an assertion that says its own words, nothing is named."""
    lines = [
        SGLANG_START,
        "Traceback (most recent call last):",
        '  File "/venv/sglang/srt/arg_groups/parallel_hook.py", line 326, in handle_dp',
        "    assert cfg.tp_size % cfg.attn_dp_size == 0",
        "AssertionError",
    ]
    lines[2] = '  File "/venv/sglang/srt/managers/scheduler.py", line 326, in init'
    base = ["python", "-m", "sglang.launch_server", "--model-path", "/m"]
    assert "--attn-dp-size" not in (gate(tmp_path, "sglang", lines, base).hint or "")
    verdict = gate(tmp_path, "sglang", lines, [*base, "--attn-dp-size", "2"])
    assert verdict.kind == "bad-args"
    assert verdict.hint is not None and "--attn-dp-size 2" in verdict.hint
    lines[-2] = "    assert weights.shape == expected"
    verdict = gate(tmp_path, "sglang", lines, [*base, "--attn-dp-size", "2"])
    assert "--attn-dp-size" not in (verdict.hint or "")


def test_a_port_no_socket_can_have_is_the_options(tmp_path: Path) -> None:
    """--nccl-port 295000: urllib's "Port out of range 0-65535" while the group forms is
    the option's value (bad-args), not the distributed group's."""
    lines = [
        SGLANG_START,
        "Traceback (most recent call last):",
        '  File "/venv/sglang/srt/distributed/parallel_state.py", line 2517, in '
        "init_distributed_environment",
        "    torch.distributed.init_process_group(",
        '  File "/usr/lib/python3.11/urllib/parse.py", line 184, in port',
        '    raise ValueError("Port out of range 0-65535")',
        "ValueError: Port out of range 0-65535",
    ]
    command = ["python", "-m", "sglang.launch_server", "--nccl-port", "295000"]
    assert gate(tmp_path, "sglang", lines, command).kind == "bad-args"


@pytest.mark.parametrize(
    ("value", "named"),
    [
        ("'[::1]'", "--host '[::1]'"),
        ("localhost:8000", "--host localhost:8000"),
        ("::1", None),
        ("0.0.0.0", None),
        ("llama-0.llama.svc.cluster.local", None),
        ("localhost", None),
    ],
)
def test_a_host_that_is_no_address_nor_name(value: str, named: str | None) -> None:
    """URL brackets around an address, or a port after a name, make a host no lookup
    resolves; an address or a plain name is one."""
    assert host_unresolvable(given_options(["serve", "--host", value])) == named


def test_the_name_lookup_of_the_servers_own_host_is_bad_args(tmp_path: Path) -> None:
    """vLLM's listening socket under --host '[::1]': "socket.gaierror: [Errno -2] Name or
    service not known" is the host option's (bad-args), in a download's words; with a
    plain address it stays the download's."""
    lines = [
        "(APIServer pid=1) INFO 12-06 22:10:01 [utils.py:253] non-default args: {'host': '[::1]'}",
        "Traceback (most recent call last):",
        '  File "/venv/vllm/entrypoints/launchers/launcher.py", line 348, in create_server_socket',
        "    sock.bind(addr)",
        "socket.gaierror: [Errno -2] Name or service not known",
    ]
    base = ["python", "-m", "vllm.entrypoints.openai.api_server", "--model", "/m"]
    assert gate(tmp_path, "vllm", lines, [*base, "--host", "0.0.0.0"]).kind == "download"
    verdict = gate(tmp_path, "vllm", lines, [*base, "--host", "'[::1]'"])
    assert verdict.kind == "bad-args"
    assert verdict.hint is not None and "--host '[::1]'" in verdict.hint


def test_a_template_that_is_not_utf8_is_its_options(tmp_path: Path) -> None:
    """A chat template saved as UTF-16: the bare UnicodeDecodeError names no file; the
    code above it reads the --chat-template option's (bad-args, named)."""
    lines = [
        "[2026-12-06 22:31:02] Fail to set RLIMIT_NOFILE: current limit exceeds maximum limit",
        "Traceback (most recent call last):",
        '  File "/venv/sglang/srt/parser/template_manager.py", line 250, in _load_explicit',
        "    self._load_jinja_template(tokenizer_manager, chat_template_arg)",
        '  File "/venv/sglang/srt/parser/template_manager.py", line 330, in _load_jinja_template',
        '    chat_template = "".join(f.readlines()).strip("\\n")',
        "UnicodeDecodeError: 'utf-8' codec can't decode byte 0xff in position 0: invalid "
        "start byte",
    ]
    base = ["python", "-m", "sglang.launch_server", "--model-path", "/m"]
    assert gate(tmp_path, "sglang", lines, base).kind != "bad-args"
    verdict = gate(tmp_path, "sglang", lines, [*base, "--chat-template", "/t/chat.jinja"])
    assert verdict.kind == "bad-args"
    assert verdict.hint is not None and "--chat-template /t/chat.jinja" in verdict.hint


def test_llama_servers_bind_failure_under_tls_options_is_theirs(tmp_path: Path) -> None:
    """llama-server says "couldn't bind HTTP server socket" when its TLS certificate does
    not load (a DER file): with --ssl-cert-file given that is the option's (bad-args);
    without TLS options it stays the port's."""
    lines = [
        "0.00.003.767 I srv  llama_server: initializing ...",
        "0.00.022.740 E srv         start: couldn't bind HTTP server socket, hostname: "
        "127.0.0.1, port: 39975",
        "0.00.022.894 E srv  llama_server: exiting due to HTTP server error",
    ]
    base = ["llama-server", "-m", "/m.gguf", "--port", "39975"]
    assert gate(tmp_path, "llamacpp", lines, base).kind == "port-in-use"
    verdict = gate(tmp_path, "llamacpp", lines, [*base, "--ssl-cert-file", "/c/server.cer"])
    assert verdict.kind == "bad-args"
    assert verdict.hint is not None and "TLS" in verdict.hint


def test_an_exception_of_no_family_raised_where_an_option_is_read(tmp_path: Path) -> None:
    """SGLang's "ValueError: Unknown separator style: chatml" names no family; the code
    above it loads the --chat-template option's file (``chat_template_arg``): bad-args,
    named. Without the option it keeps no kind."""
    lines = [
        "[2026-12-06 21:40:02] Fail to set RLIMIT_NOFILE: current limit exceeds maximum limit",
        "Traceback (most recent call last):",
        '  File "/venv/sglang/srt/parser/template_manager.py", line 252, in _load_explicit',
        "    self._load_json_chat_template(chat_template_arg)",
        '  File "/venv/sglang/srt/parser/template_manager.py", line 352, in _load_json',
        "    raise ValueError(",
        "ValueError: Unknown separator style: chatml",
    ]
    base = ["python", "-m", "sglang.launch_server", "--model-path", "/m"]
    assert gate(tmp_path, "sglang", lines, base).kind in (None, "exit")
    verdict = gate(tmp_path, "sglang", lines, [*base, "--chat-template", "/t/chatml.json"])
    assert verdict.kind == "bad-args"
    assert verdict.hint is not None and "--chat-template /t/chatml.json" in verdict.hint


def test_a_plugin_file_whose_code_fails_is_the_cause(tmp_path: Path) -> None:
    """vLLM tries --tool-parser-plugin's path as a module's name first (ModuleNotFoundError
    of a path), then loads the file, whose SyntaxError it logs and goes on; it dies of
    the parser the file would have registered. The file's SyntaxError is quoted
    (bad-args, naming the option); the path tried as a module is no missing package."""
    at = "(APIServer pid=1) ERROR 12-07 00:21:40 [import_utils.py:95]"
    syntax = f"{at} SyntaxError: expected ':'"
    lines = [
        f"{at} Traceback (most recent call last):",
        f'{at}   File "/venv/vllm/utils/import_utils.py", line 89, in import_plugin',
        f"{at}     return importlib.import_module(plugin_path)",
        f"{at} ModuleNotFoundError: No module named '/p/acme_tools'",
        f"{at} ",
        f"{at} During handling of the above exception, another exception occurred:",
        f"{at} ",
        f"{at} Traceback (most recent call last):",
        f'{at}   File "/venv/vllm/utils/import_utils.py", line 115, in import_from_path',
        f"{at}     spec.loader.exec_module(module)",
        f'{at}   File "/p/acme_tools.py", line 5',
        f"{at}     def parse(self",
        f"{at}                   ^",
        syntax,
        "Traceback (most recent call last):",
        '  File "/venv/vllm/tool_parsers/__init__.py", line 9, in get_tool_parser',
        "    raise KeyError(f'invalid tool call parser: {name}')",
        "KeyError: 'invalid tool call parser: acme (chose from { hermes,mistral })'",
    ]
    command = [
        *("python", "-m", "vllm.entrypoints.openai.api_server", "--model", "/m"),
        *("--tool-parser-plugin", "/p/acme_tools.py", "--tool-call-parser", "acme"),
    ]
    verdict = gate(tmp_path, "vllm", lines, command)
    assert (verdict.kind, verdict.matched_line) == ("bad-args", syntax)
    assert verdict.hint is not None and "--tool-parser-plugin /p/acme_tools.py" in verdict.hint
    assert "ModuleNotFoundError" not in verdict.reason


@pytest.mark.parametrize(
    ("command", "quoted", "model_read", "named"),
    [
        (["--model-path", "/m "], "/m ", False, "--model-path '/m '"),
        (
            ["--speculative-draft-model-path", "/d"],
            "/d",
            False,
            "--speculative-draft-model-path /d",
        ),
        (["--tokenizer-path", "/t"], "/t", True, "--tokenizer-path /t"),
        (["--model-path", "~/m"], "~/m", False, "--model-path ~/m"),
        (["--model-path", "/m"], "/m", False, "--model-path /m"),
        ([], "/m", False, "the path '/m'"),
        (["--model-path", "/m"], "/m", True, None),
        (["--model-path", "org/m"], "org/m", False, None),
        (
            ["--model", "https://hf.co/org/m"],
            "https://hf.co/org/m",
            False,
            "--model https://hf.co/org/m",
        ),
    ],
)
def test_a_path_taken_for_a_hub_id(
    command: list[str], quoted: str, model_read: bool, named: str | None
) -> None:
    """A path the Hub client took for a repository's name is no folder there: the
    command's, whichever option gave it (the model's own too), and in a paste with no
    command the path itself; the model's folder that the engine read its configuration
    from is there, and a tokenizer file it lacks is the model's (nothing named)."""
    line = (
        "huggingface_hub.errors.HFValidationError: Repo id must be in the form 'repo_name' "
        f"or 'namespace/repo_name': '{quoted}'. Use `repo_type` argument if needed."
    )
    given = given_options(["serve", *command])
    assert folder_missing(line, given, model_read=model_read) == named


def test_an_invalid_repository_id_names_a_folder_apart_from_the_models() -> None:
    """vLLM's "Invalid repository ID or local directory specified" is said of an empty
    model folder too: a configuration folder given apart from the model is the
    option's, the model's own path is not named by it."""
    line = "ValueError: Invalid repository ID or local directory specified: '/cfg/llama'."
    given = given_options(["serve", "--model", "/m", "--hf-config-path", "/cfg/llama"])
    assert folder_missing(line, given) == "--hf-config-path /cfg/llama"
    line = "ValueError: Invalid repository ID or local directory specified: '/m'."
    assert folder_missing(line, given) is None
    draft = '{"model": "/d", "num_speculative_tokens": 3}'
    given = given_options(["serve", "--model", "/m", "--speculative-config", draft])
    line = "Value error, Invalid repository ID or local directory specified: '/d'."
    assert folder_missing(line, given) == f"--speculative-config {draft}"


def test_a_model_folder_that_is_not_there_and_one_that_lacks_a_tokenizer(tmp_path: Path) -> None:
    """Through the gate: a model path that is no folder, in a one-line paste with no
    command, is bad-args; SGLang's tokenizer manager asking the Hub for a file of the
    model's folder, which the engine had read its configuration from, is model-load."""
    line = (
        "huggingface_hub.errors.HFValidationError: Repo id must be in the form 'repo_name' "
        "or 'namespace/repo_name': '/root/DeepSeek-V2-Lite'. Use `repo_type` argument if needed."
    )
    verdict = gate(tmp_path, "vllm", [line], [])
    assert (verdict.kind, verdict.matched_line) == ("bad-args", line)
    lines = [
        SGLANG_START,
        "Traceback (most recent call last):",
        '  File "/venv/sglang/srt/managers/tokenizer_manager.py", line 642, in '
        "init_tokenizer_and_processor",
        "    self.tokenizer = get_tokenizer(",
        '  File "/venv/sglang/srt/utils/hf_transformers/common.py", line 364, in '
        "_resolve_local_or_cached_file",
        "    return hf_hub_download(",
        line.replace("/root/DeepSeek-V2-Lite", "/models/m"),
    ]
    command = ["python", "-m", "sglang.launch_server", "--model-path", "/models/m"]
    case = tmp_path / "tokenizer"
    case.mkdir()
    assert gate(case, "sglang", lines, command).kind == "model-load"


def test_a_forced_load_format_without_its_weights(tmp_path: Path) -> None:
    """--load-format pt on a folder of safetensors: "Cannot find any model weights with"
    is the option's (bad-args, named); with the default format it is the folder's."""
    line = "RuntimeError: Cannot find any model weights with `/models/m`"
    lines = [
        "Traceback (most recent call last):",
        '  File "/venv/vllm/model_executor/model_loader/default_loader.py", line 179, in '
        "_prepare_weights",
        '    raise RuntimeError(f"Cannot find any model weights with `{model_name_or_path}`")',
        line,
    ]
    command = ["python", "-m", "vllm.entrypoints.openai.api_server", "--model", "/models/m"]
    verdict = gate(tmp_path, "vllm", lines, [*command, "--load-format", "pt"])
    assert (verdict.kind, verdict.matched_line) == ("bad-args", line)
    assert verdict.hint is not None and "--load-format pt" in verdict.hint
    for other in (["--load-format", "auto"], []):
        case = tmp_path / f"other{len(other)}"
        case.mkdir()
        assert gate(case, "vllm", lines, [*command, *other]).kind == "model-load"


def test_a_quantization_method_from_the_models_config(tmp_path: Path) -> None:
    """SGLang's "Unknown quantization method: exl2" with no --quantization: the model's
    config.json named it, a format this engine lacks (unsupported-model); given by
    --quantization, the option's (bad-args)."""
    line = "ValueError: Unknown quantization method: exl2. Must be one of ['fp8', 'awq']."
    command = ["python", "-m", "sglang.launch_server", "--model-path", "/models/m"]
    assert gate(tmp_path, "sglang", traceback(line), command).kind == "unsupported-model"
    case = tmp_path / "option"
    case.mkdir()
    verdict = gate(case, "sglang", traceback(line), [*command, "--quantization", "exl2"])
    assert verdict.kind == "bad-args"


def test_a_bare_assertion_quotes_the_check_it_made(tmp_path: Path) -> None:
    """A bare AssertionError is the same line for every assert: the verdict quotes the
    `assert ...` source line above it (past the carets), a worker's prefix kept; an
    assertion with words of its own is quoted as it is."""
    check = "    assert loaded_weight.shape[output_dim] == self.org_vocab_size"
    prefix = "(Worker pid=15010) ERROR 12-06 11:18:05 [multiproc_executor.py:953] "
    lines = [
        f"{prefix}Traceback (most recent call last):",
        f'{prefix}  File "/venv/vllm/model_executor/layers/vocab_parallel_embedding.py", '
        "line 460, in weight_loader",
        f"{prefix}{check}",
        f"{prefix}           ^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^",
        f"{prefix}AssertionError",
    ]
    verdict = gate(tmp_path, "vllm", lines, [])
    assert verdict.matched_line == f"{prefix}{check}".strip()
    # a progress bar's redraw right after it, joined to the error's line
    bar = "\rLoading safetensors checkpoint shards:   0% Completed | 0/1 [00:00<?, ?it/s]"
    case = tmp_path / "bar"
    case.mkdir()
    assert gate(case, "vllm", [*lines, bar], []).matched_line == f"{prefix}{check}".strip()
    lines[-1] = f"{prefix}AssertionError: vocab size mismatch"
    case = tmp_path / "words"
    case.mkdir()
    assert gate(case, "vllm", lines, []).matched_line == lines[-1].strip()


@pytest.mark.parametrize(
    ("line", "elsewhere"),
    [
        ("RuntimeError: 0 active drivers ([]). There should only be one.", "cuda-error"),
        ("RuntimeError: Found no NVIDIA driver on your system.", "cuda-error"),
        (
            "/venv/bin/python: error while loading shared libraries: libcuda.so.1: cannot open "
            "shared object file: No such file or directory",
            "install",
        ),
    ],
)
def test_a_gpu_driver_asked_for_under_device_cpu(tmp_path: Path, line: str, elsewhere: str) -> None:
    """Under --device cpu, a GPU driver that is not there (Triton's "0 active drivers",
    torch's "no NVIDIA driver", the loader's missing libcuda) was asked for by an option
    routed to GPU kernels: bad-args; without --device cpu, the driver's own kind."""
    command = ["python", "-m", "sglang.launch_server", "--model-path", "/m"]
    lines = [SGLANG_START, "Traceback (most recent call last):", line]
    assert gate(tmp_path, "sglang", lines, [*command, "--device", "cpu"]).kind == "bad-args"
    case = tmp_path / "gpu"
    case.mkdir()
    assert gate(case, "sglang", lines, command).kind == elsewhere


def test_a_host_that_lists_several_addresses(tmp_path: Path) -> None:
    """llama-server given --host 127.0.0.1,localhost binds the port twice, and says the
    second bind failed: the option's (bad-args); one address whose bind fails is the
    port's."""
    lines = [
        "0.00.009.302 I srv  llama_server: initializing ...",
        "0.00.012.151 E srv         start: couldn't bind HTTP server socket, hostname: "
        "localhost, port: 41715",
        "0.00.016.292 E srv  llama_server: exiting due to HTTP server error",
    ]
    command = ["llama-server", "-m", "/m.gguf", "--port", "41715", "--host"]
    verdict = gate(tmp_path, "llamacpp", lines, [*command, "127.0.0.1,localhost"])
    assert verdict.kind == "bad-args"
    assert verdict.hint is not None and "--host 127.0.0.1,localhost" in verdict.hint
    case = tmp_path / "one"
    case.mkdir()
    assert gate(case, "llamacpp", lines, [*command, "localhost"]).kind == "port-in-use"


def test_a_platform_method_the_cpu_lacks_is_the_option_that_called_it(tmp_path: Path) -> None:
    """SGLang's --weight-cache-mode client on the CPU: a bare NotImplementedError from the
    platform's get_device_uuid, under the weight cache's loader: bad-args naming the
    option; on a GPU platform (no --device cpu) nothing is named."""
    lines = [
        SGLANG_START,
        "Traceback (most recent call last):",
        '  File "/venv/sglang/srt/weight_cache/ipc_loader.py", line 459, in _fetch_from_cache',
        "    device_uuid = current_platform.get_device_uuid(int(device_config.gpu_id))",
        '  File "/venv/sglang/srt/platforms/device_mixin.py", line 201, in get_device_uuid',
        "    raise NotImplementedError",
        "NotImplementedError",
    ]
    command = ["python", "-m", "sglang.launch_server", "--model-path", "/m"]
    command += ["--weight-cache-mode", "client"]
    verdict = gate(tmp_path, "sglang", lines, [*command, "--device", "cpu"])
    assert verdict.kind == "bad-args"
    assert verdict.hint is not None and "--weight-cache-mode client" in verdict.hint
    case = tmp_path / "gpu"
    case.mkdir()
    assert "--weight-cache-mode" not in (gate(case, "sglang", lines, command).hint or "")


def test_a_warning_raised_as_an_error_is_the_setting_that_made_it_one(tmp_path: Path) -> None:
    """PYTHONWARNINGS=error: a deprecation in torch's own import ends vLLM as an
    exception; its words ("torch.compile") say nothing of what to fix, the setting does
    (bad-args, the hint naming it). ``python -W error`` too; with the setting out of the
    gate's sight, still bad-args (only a filter set to error raises a warning)."""
    lines = [
        "(APIServer pid=1) INFO 12-07 00:58:10 [api_utils.py:286] non-default args: {'port': 8000}",
        "Traceback (most recent call last):",
        '  File "/venv/lib/python3.11/site-packages/torch/jit/_script.py", line 371, in '
        "script_method",
        "    warnings.warn(",
        "DeprecationWarning: `torch.jit.script_method` is deprecated. Please switch to "
        "`torch.compile` or `torch.export`.",
    ]
    log = tmp_path / "server.log"
    log.write_text("".join(line + "\n" for line in lines))
    for command, said in (
        (["env", "PYTHONWARNINGS=error", "python", "-m", "vllm"], "PYTHONWARNINGS=error"),
        (["python", "-W", "error", "-m", "vllm"], "-W error"),
        (["python", "-m", "vllm"], "a warnings filter set to 'error'"),
    ):
        verdict = run_log(log, engine="vllm", exit=1, command=command)
        assert (verdict.kind, verdict.matched_line) == ("bad-args", lines[-1]), command
        assert verdict.hint is not None and verdict.hint.startswith(said), verdict.hint
        assert "judged" not in verdict.reason  # the words' guess is not the verdict


def test_a_warning_logged_with_its_file_is_no_error(tmp_path: Path) -> None:
    """A warning printed as warnings print them (its file and line first) is not raised:
    the failure after it keeps its own kind."""
    lines = [
        "/venv/lib/python3.11/site-packages/torch/cuda/__init__.py:63: FutureWarning: The "
        "pynvml package is deprecated.",
        "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB.",
    ]
    log = tmp_path / "server.log"
    log.write_text("".join(line + "\n" for line in lines))
    command = ["env", "PYTHONWARNINGS=error", "python", "-m", "vllm"]
    verdict = run_log(log, engine="vllm", exit=1, command=command)
    assert (verdict.kind, verdict.matched_line) == ("oom", lines[-1])


def test_the_models_path_resolved_while_the_arguments_are_read(tmp_path: Path) -> None:
    """vLLM resolves --model inside from_cli_args (the arguments are being read): a model
    path that is no folder, taken for a Hub id, is the command's path to fix (bad-args,
    the Hub's line quoted), not a settings file's; a YAML --config that does not parse
    there stays the command's."""
    head = [
        "(APIServer pid=1) INFO 12-07 00:56:02 [api_utils.py:286] non-default args: "
        "{'model_tag': 'Models/tiny', 'model': '/data/My'}",
        "Traceback (most recent call last):",
        '  File "/venv/lib/python3.11/site-packages/vllm/engine/arg_utils.py", line 1938, '
        "in from_cli_args",
        "    engine_args = cls(",
    ]
    model = [
        '  File "/venv/lib/python3.11/site-packages/vllm/engine/arg_utils.py", line 914, '
        "in __post_init__",
        "    self.model = get_model_path(self.model, self.revision)",
        '  File "/venv/lib/python3.11/site-packages/vllm/transformers_utils/repo_utils.py", '
        "line 301, in get_model_path",
        "    return hf_api().snapshot_download(",
        '  File "/venv/lib/python3.11/site-packages/huggingface_hub/utils/_validators.py", '
        "line 133, in validate_repo_id",
        "    raise HFValidationError(",
        "huggingface_hub.errors.HFValidationError: Repo id must be in the form 'repo_name' "
        "or 'namespace/repo_name': '/data/My'. Use `repo_type` argument if needed.",
    ]
    command = ["python", "-m", "vllm.entrypoints.openai.api_server", "--model", "/data/My"]
    log = tmp_path / "server.log"
    log.write_text("".join(line + "\n" for line in head + model))
    verdict = run_log(log, engine="vllm", exit=1, command=[*command, "Models/tiny"])
    assert (verdict.kind, verdict.matched_line) == ("bad-args", model[-1])
    assert verdict.hint is not None and "--model /data/My" in verdict.hint
    settings = [
        '  File "/venv/lib/python3.11/site-packages/vllm/utils/argparse_utils.py", line 420, '
        "in load_config_file",
        "    config = yaml.safe_load(config_file)",
        "yaml.scanner.ScannerError: mapping values are not allowed here",
    ]
    log.write_text("".join(line + "\n" for line in head + settings))
    verdict = run_log(log, engine="vllm", exit=1, command=[*command, "--config", "/c.yaml"])
    assert verdict.kind == "bad-args", verdict.reason


def test_the_servers_own_host_that_does_not_resolve_is_bad_args(tmp_path: Path) -> None:
    """`--host gpu-node-07.internal` on another machine: the name lookup fails where the
    server binds its own socket (bad-args, the hint naming --host); the same failure in
    code that does not bind (a download's) keeps the download's kind."""
    lines = [
        "(APIServer pid=1) INFO 12-07 03:18:40 [api_utils.py:286] non-default args: {}",
        "Traceback (most recent call last):",
        '  File "/venv/lib/python3.11/site-packages/vllm/entrypoints/launchers/launcher.py", '
        "line 348, in create_server_socket",
        "    sock.bind(addr)",
        "socket.gaierror: [Errno -2] Name or service not known",
    ]
    log = tmp_path / "server.log"
    log.write_text("".join(line + "\n" for line in lines))
    command = ["python", "-m", "vllm", "--host", "gpu-node-07.internal", "--port", "8000"]
    verdict = run_log(log, engine="vllm", exit=1, command=command)
    assert (verdict.kind, verdict.matched_line) == ("bad-args", lines[-1])
    assert verdict.hint is not None and "--host gpu-node-07.internal" in verdict.hint
    lines[2:4] = [
        '  File "/venv/lib/python3.11/site-packages/httpx/_transports/default.py", line 101, '
        "in map_httpcore_exceptions",
        "    yield",
    ]
    log.write_text("".join(line + "\n" for line in lines))
    assert run_log(log, engine="vllm", exit=1, command=command).kind == "download"


def test_a_device_whose_library_is_missing_is_the_device_option(tmp_path: Path) -> None:
    """`--device npu` on a machine without one: the NPU's library does not import (an
    install's words), and the re-raise names the device: bad-args, quoting that line,
    the hint naming --device. Under --device cuda the same missing module is install."""
    lines = [
        "Traceback (most recent call last):",
        '  File "/venv/lib/python3.11/site-packages/sglang/srt/utils/common.py", line 876, in '
        "get_npu_memory_capacity",
        "    import torch_npu  # noqa: F401",
        "ModuleNotFoundError: No module named 'torch_npu'",
        "",
        "During handling of the above exception, another exception occurred:",
        "",
        "Traceback (most recent call last):",
        '  File "/venv/lib/python3.11/site-packages/sglang/srt/utils/common.py", line 880, in '
        "get_npu_memory_capacity",
        '    raise ImportError("torch_npu is required when run on npu device.")',
        "ImportError: torch_npu is required when run on npu device.",
    ]
    log = tmp_path / "server.log"
    log.write_text("".join(line + "\n" for line in lines))
    command = ["python", "-m", "sglang.launch_server", "--model-path", "/m", "--device", "npu"]
    verdict = run_log(log, engine="sglang", exit=1, command=command)
    assert (verdict.kind, verdict.matched_line) == ("bad-args", lines[-1])
    assert verdict.hint is not None and "--device npu" in verdict.hint
    command[-1] = "cuda"
    assert run_log(log, engine="sglang", exit=1, command=command).kind == "install"


def test_a_bare_assertion_in_a_step_named_for_an_option(tmp_path: Path) -> None:
    """SGLang's `--enable-eplb` on a dense model: a bare `AssertionError` in
    handle_eplb_and_dispatch(server_args): bad-args naming --enable-eplb; without the
    option the assertion names nothing."""
    lines = [
        SGLANG_START,
        "Traceback (most recent call last):",
        '  File "/venv/lib/python3.11/site-packages/sglang/srt/arg_groups/resolution_hooks.py", '
        "line 139, in run_hook",
        "    step(server_args)",
        '  File "/venv/lib/python3.11/site-packages/sglang/srt/arg_groups/parallel_hook.py", '
        "line 791, in handle_eplb_and_dispatch",
        "    assert resolved_view(server_args).ep_size > 1",
        "AssertionError",
    ]
    command = ["python", "-m", "sglang.launch_server", "--model-path", "/m", "--enable-eplb"]
    verdict = gate(tmp_path, "sglang", lines, command)
    assert verdict.kind == "bad-args"
    assert verdict.hint is not None and "--enable-eplb" in verdict.hint
    hint = gate(tmp_path, "sglang", lines, command[:-1]).hint
    assert hint is not None and "--enable-eplb" not in hint


def test_a_negative_memory_setting_worked_out_from_a_count_of_zero(tmp_path: Path) -> None:
    """`--chunked-prefill-size 0`: SGLang works out a negative memory fraction and says
    there is no memory for the KV cache (memory's words): bad-args naming the zero;
    without a zero given it stays a memory failure."""
    lines = [
        SGLANG_START,
        "[2026-12-07 03:25:52] Scheduler hit an exception: Traceback (most recent call last):",
        '  File "/venv/lib/python3.11/site-packages/sglang/srt/managers/scheduler.py", line 1100, '
        "in init_memory_pools",
        "    self.init_target_memory_pool()",
        '  File "/venv/lib/python3.11/site-packages/sglang/srt/model_executor/model_runner.py", '
        "line 982, in alloc_memory_pool",
        "    result = self.kv_cache_configurator.configure(",
        '  File "/venv/lib/python3.11/site-packages/sglang/srt/mem_cache/'
        'kv_cache_configurator.py", line 3050, in _profile_available_bytes',
        "    raise ValueError(",
        "ValueError: Loaded weights leave no GPU memory for the KV cache under "
        "--mem-fraction-static=-0.047. Raise --mem-fraction-static above 0.008 (minimum "
        "viable = 1 - available/pre = 0.0077). If using speculative decoding, draft weights "
        "are now counted.",
        "",
        "[2026-12-07 03:25:52] Received sigquit from a child process. It usually means the "
        "child failed.",
    ]
    command = ["python", "-m", "sglang.launch_server", "--chunked-prefill-size", "0"]
    verdict = gate(tmp_path, "sglang", lines, command)
    assert verdict.kind == "bad-args"
    assert verdict.hint is not None and "--chunked-prefill-size 0" in verdict.hint
    assert gate(tmp_path, "sglang", lines, command[:-2]).kind == "oom"


def test_a_value_the_command_gave_quoted_back_by_a_failed_check(tmp_path: Path) -> None:
    """VLLM_CPU_OMP_THREADS_BIND=0-1 under --tensor-parallel-size 2: "Given number of CPU
    id list ['0-1'] doesn't match local world size 2." quotes the variable's value
    (bad-args naming it), where its words alone say world size (mpi)."""
    lines = [
        "(EngineCore pid=16993) ERROR 12-07 06:19:17 [core.py:1510] AssertionError: Given "
        "number of CPU id list ['0-1'] doesn't match local world size 2.",
    ]
    command = ["python", "-m", "vllm.entrypoints.openai.api_server", "--model", "/m"]
    command += ["--tensor-parallel-size", "2"]
    verdict = gate(tmp_path, "vllm", lines, ["VLLM_CPU_OMP_THREADS_BIND=0-1", *command])
    assert verdict.kind == "bad-args"
    assert verdict.hint is not None and "VLLM_CPU_OMP_THREADS_BIND=0-1" in verdict.hint
    case = tmp_path / "words"
    case.mkdir()
    assert gate(case, "vllm", lines, command).kind == "mpi"


@pytest.mark.parametrize(
    ("engine", "module", "kind"),
    [
        ("llamacpp", "llama_cpp_python.server", "bad-args"),
        ("sglang", "sglang.launch_server", "install"),
    ],
)
def test_a_module_python_cannot_find(tmp_path: Path, engine: str, module: str, kind: str) -> None:
    """python -m given the distribution's name for the import name
    (llama_cpp_python.server) is the command's (bad-args); an engine's own module that is
    not there is its package not installed (install)."""
    top = module.split(".", maxsplit=1)[0]
    lines = [
        f"/venv/bin/python: Error while finding module specification for '{module}' "
        f"(ModuleNotFoundError: No module named '{top}')",
    ]
    command = ["/venv/bin/python", "-m", module, "--port", "8000"]
    assert gate(tmp_path, engine, lines, command).kind == kind


def test_python_without_its_standard_library(tmp_path: Path) -> None:
    """A PYTHONHOME left pointing at another prefix: Python's fatal init_fs_encoding, with
    "No module named 'encodings'" under it, which is quoted; bad-args naming the variable
    the command set, install where the command set none."""
    missing = "ModuleNotFoundError: No module named 'encodings'"
    lines = [
        "Python path configuration:",
        "  PYTHONHOME = '/usr/local'",
        "Fatal Python error: init_fs_encoding: failed to get the Python codec of the "
        "filesystem encoding",
        "Python runtime state: core initialized",
        missing,
        "",
        "Current thread 0x00007f7cdfc55b80 (most recent call first):",
        "  <no Python frame>",
    ]
    command = ["/venv/bin/python", "-m", "llama_cpp.server", "--model", "/m.gguf"]
    verdict = gate(tmp_path, "llamacpp", lines, ["PYTHONHOME=/usr/local", *command])
    assert verdict.kind == "bad-args"
    assert verdict.matched_line in (missing, lines[2])  # the one under it, once read
    assert verdict.hint is not None and "PYTHONHOME=/usr/local" in verdict.hint
    case = tmp_path / "unset"
    case.mkdir()
    assert gate(case, "llamacpp", lines, command).kind == "install"


def test_a_models_own_code_that_needs_a_package_not_installed(tmp_path: Path) -> None:
    """A --trust-remote-code model whose modelling file imports flash_attn: transformers'
    check is logged as a warning, then vLLM says the architecture is not supported; the
    warning's line is quoted, install."""
    needs = (
        "(APIServer pid=11406) WARNING 12-07 06:15:37 [dynamic_module.py:61] ImportError: "
        "This modeling file requires the following packages that were not found in your "
        "environment: flash_attn. Run `pip install flash_attn`"
    )
    lines = [
        needs,
        "pydantic_core._pydantic_core.ValidationError: 1 validation error for ModelConfig",
        "  Value error, Model architectures ['AcmeLlamaForCausalLM'] are not supported for "
        "now. Supported architectures: dict_keys(['LlamaForCausalLM'])",
    ]
    command = ["python", "-m", "vllm.entrypoints.openai.api_server", "--model", "/m"]
    verdict = gate(tmp_path, "vllm", lines, [*command, "--trust-remote-code"])
    assert (verdict.kind, verdict.matched_line) == ("install", needs)
    case = tmp_path / "plain"
    case.mkdir()
    assert gate(case, "vllm", lines[1:], command).kind == "unsupported-model"


def test_a_split_gguf_named_by_a_later_shard(tmp_path: Path) -> None:
    """llama-server -m x-00002-of-00002.gguf: "illegal split file idx: 1 (file: ...), model
    must be loaded with the first split" quotes the command's file (bad-args naming it);
    a runner that picked the shard itself (no such -m) leaves it the model's."""
    shard = "/models/x-00002-of-00002.gguf"
    lines = [
        f"0.00.008.367 E llama_model_load: error loading model: illegal split file idx: 1 "
        f"(file: {shard}), model must be loaded with the first split",
    ]
    verdict = gate(tmp_path, "llamacpp", lines, ["llama-server", "-m", shard])
    assert verdict.kind == "bad-args"
    assert verdict.hint is not None and f"-m {shard}" in verdict.hint
    case = tmp_path / "runner"
    case.mkdir()
    assert gate(case, "llamacpp", lines, ["llama-server", "-m", "/models/other.gguf"]).kind == (
        "model-load"
    )


def test_an_unexpanded_variable_in_the_models_path(tmp_path: Path) -> None:
    """A YAML config's `model-path: ${MODEL_DIR}/tiny-llama`, never expanded: the Hub
    client's "Repo id must use alphanumeric chars ...: '${MODEL_DIR}/tiny-llama'" is no
    folder (bad-args)."""
    line = (
        "huggingface_hub.errors.HFValidationError: Repo id must use alphanumeric chars, '-', "
        "'_' or '.'. The name cannot start or end with '-' or '.' and the maximum length is "
        "96: '${MODEL_DIR}/tiny-llama'."
    )
    given = given_options(["serve", "--config", "/c.yaml"])
    assert folder_missing(line, given) == "the path '${MODEL_DIR}/tiny-llama'"
    assert folder_missing(line.replace("${MODEL_DIR}/tiny-llama", "org-name"), given) is None
    verdict = gate(tmp_path, "sglang", [SGLANG_START, line], ["sglang", "--config", "/c.yaml"])
    assert verdict.kind == "bad-args"


def test_steps_named_for_an_option_that_fail_on_what_it_was_given(tmp_path: Path) -> None:
    """SGLang's --kv-canary on the CPU (torch's CPU Stream takes no device: a TypeError,
    install by its words) and --model-checksum given a sha256sum text file (the
    verifier's JSONDecodeError): each fails in a step named for the option (bad-args,
    named); PYTHONOPTIMIZE=2 strips the docstrings transformers builds classes from."""
    base = ["python", "-m", "sglang.launch_server", "--model-path", "/m", "--device", "cpu"]
    canary = [
        SGLANG_START,
        "Traceback (most recent call last):",
        '  File "/venv/sglang/srt/kv_canary/runner/canary_manager.py", line 95, in __init__',
        "    self._stream = torch.cpu.Stream(device=device)",
        "TypeError: Stream.__init__() got an unexpected keyword argument 'device'",
    ]
    verdict = gate(tmp_path, "sglang", canary, [*base, "--kv-canary", "log"])
    assert verdict.kind == "bad-args"
    assert verdict.hint is not None and "--kv-canary log" in verdict.hint
    checksum = [
        SGLANG_START,
        "Traceback (most recent call last):",
        '  File "/venv/sglang/srt/utils/model_file_verifier.py", line 76, in verify',
        "    expected = _load_checksums(checksums_source)",
        '  File "/usr/lib/python3.11/json/decoder.py", line 340, in decode',
        '    raise JSONDecodeError("Extra data", s, end)',
        "json.decoder.JSONDecodeError: Extra data: line 1 column 2 (char 1)",
    ]
    case = tmp_path / "checksum"
    case.mkdir()
    verdict = gate(case, "sglang", checksum, [*base, "--model-checksum", "/m/sums.sha256"])
    assert verdict.kind == "bad-args"
    assert verdict.hint is not None and "--model-checksum /m/sums.sha256" in verdict.hint
    case = tmp_path / "plain"
    case.mkdir()
    assert gate(case, "sglang", checksum, base).kind != "bad-args"
    docstring = [
        SGLANG_START,
        "ValueError: No `Args` or `Parameters` section is found in the docstring of "
        "`BaseModelOutputWithPast`. Make sure it has a docstring",
    ]
    case = tmp_path / "optimize"
    case.mkdir()
    verdict = gate(case, "sglang", docstring, ["PYTHONOPTIMIZE=2", *base])
    assert verdict.kind == "bad-args"
    assert verdict.hint is not None and "PYTHONOPTIMIZE=2" in verdict.hint


def test_a_downloads_zone_note_given_as_the_model(tmp_path: Path) -> None:
    """WSL shows Windows' `model.gguf:Zone.Identifier` note beside a download; given to
    -m, llama.cpp reads "[Zon" where "GGUF" is wanted: the command's file (bad-args),
    where a file with a bad magic given as the model stays the model's."""
    lines = [
        "gguf_init_from_reader: invalid magic characters: '[Zon', expected 'GGUF'",
        "llama_model_load: error loading model: llama_model_loader: failed to load model",
    ]
    command = ["python", "-m", "llama_cpp.server", "--model", "/m/model.gguf:Zone.Identifier"]
    verdict = gate(tmp_path, "llamacpp", lines, command)
    assert verdict.kind == "bad-args"
    assert verdict.hint is not None and "Zone.Identifier" in verdict.hint
    case = tmp_path / "model"
    case.mkdir()
    assert gate(case, "llamacpp", lines, [*command[:-1], "/m/model.gguf"]).kind == "model-load"


def test_offline_with_no_cached_copy_of_the_model(tmp_path: Path) -> None:
    """llama-server --offline -hf org/repo with an empty cache: the loader is given no
    file ("exactly one out metadata, path_model, and file must be defined"): a download's
    failure, not the model's; without --offline, the model's."""
    lines = [
        "0.00.011.595 E llama_model_load_from_file_impl: exactly one out metadata, "
        "path_model, and file must be defined",
        "0.00.011.700 E srv    load_model: failed to load model",
    ]
    command = ["llama-server", "-hf", "org/repo-GGUF", "--port", "8080"]
    assert gate(tmp_path, "llamacpp", lines, [*command, "--offline"]).kind == "download"
    case = tmp_path / "online"
    case.mkdir()
    assert gate(case, "llamacpp", lines, command).kind != "download"


def test_an_endpoint_variable_without_its_scheme(tmp_path: Path) -> None:
    """HF_ENDPOINT=hf-mirror.example.com: httpx refuses the URL before sending it, and the
    config's load then says it could not be fetched; the refusal is quoted, bad-args
    naming the variable; with the scheme given, the refusal is no one's setting."""
    refused = (
        "httpx.UnsupportedProtocol: Request URL is missing an 'http://' or 'https://' protocol."
    )
    lines = [
        SGLANG_START,
        "Traceback (most recent call last):",
        '  File "/venv/httpx/_transports/default.py", line 101, in map_httpcore_exceptions',
        "    raise mapped_exc(message) from exc",
        refused,
        "",
        "The above exception was the direct cause of the following exception:",
        "",
        "Traceback (most recent call last):",
        '  File "/venv/transformers/configuration_utils.py", line 721, in _get_config_dict',
        "    raise OSError(",
        "OSError: Can't load the configuration of 'Qwen/Qwen2.5-0.5B-Instruct'.",
    ]
    command = ["python", "-m", "sglang.launch_server", "--model-path", "Qwen/Qwen2.5-0.5B-Instruct"]
    verdict = gate(tmp_path, "sglang", lines, ["HF_ENDPOINT=hf-mirror.example.com", *command])
    assert (verdict.kind, verdict.matched_line) == ("bad-args", refused)
    assert verdict.hint is not None and "HF_ENDPOINT=hf-mirror.example.com" in verdict.hint
    case = tmp_path / "scheme"
    case.mkdir()
    verdict = gate(case, "sglang", lines, ["HF_ENDPOINT=https://hf-mirror.example.com", *command])
    assert "HF_ENDPOINT" not in (verdict.hint or "")


def test_a_logging_configs_file_handler_whose_folder_is_not_there(tmp_path: Path) -> None:
    """SGLANG_LOGGING_CONFIG_PATH whose file handler writes under a folder never made:
    logging's dictConfig re-raises the FileNotFoundError as "Unable to configure handler
    'file'"; the error that names the file is quoted, bad-args (the user's setting)."""
    missing = "FileNotFoundError: [Errno 2] No such file or directory: '/var/log/sglang/server.log'"
    lines = [
        "Traceback (most recent call last):",
        '  File "/usr/lib/python3.11/logging/config.py", line 573, in configure',
        "    handler = self.configure_handler(handlers[name])",
        '  File "/usr/lib/python3.11/logging/config.py", line 757, in configure_handler',
        "    result = factory(**kwargs)",
        '  File "/usr/lib/python3.11/logging/__init__.py", line 1213, in _open',
        "    return open_func(self.baseFilename, self.mode,",
        missing,
        "",
        "The above exception was the direct cause of the following exception:",
        "",
        "Traceback (most recent call last):",
        '  File "/venv/sglang/srt/entrypoints/engine.py", line 1152, in _launch_subprocesses',
        "    configure_logger(server_args)",
        '  File "/venv/sglang/srt/utils/common.py", line 2627, in configure_logger',
        "    logging.config.dictConfig(custom_config)",
        '  File "/usr/lib/python3.11/logging/config.py", line 823, in dictConfig',
        "    dictConfigClass(config).configure()",
        '  File "/usr/lib/python3.11/logging/config.py", line 580, in configure',
        "    raise ValueError('Unable to configure handler '",
        "ValueError: Unable to configure handler 'file'",
    ]
    command = ["python", "-m", "sglang.launch_server", "--model-path", "/m"]
    verdict = gate(tmp_path, "sglang", lines, ["SGLANG_LOGGING_CONFIG_PATH=/c/log.json", *command])
    assert (verdict.kind, verdict.matched_line) == ("bad-args", missing)


def test_an_options_folder_there_without_its_weights(tmp_path: Path) -> None:
    """A LoRA adapter folder copied without its safetensors: "Cannot find any model
    weights with `/loras/chat`" quotes the option's path, but the folder is there and
    lacks its files (model-load); a forced --load-format stays the option's."""
    line = (
        "RuntimeError: Failed to load LoRA adapter chat: Cannot find any model weights with "
        "`/loras/chat`"
    )
    command = ["python", "-m", "sglang.launch_server", "--model-path", "/m"]
    command += ["--enable-lora", "--lora-paths", "chat=/loras/chat"]
    assert gate(tmp_path, "sglang", [SGLANG_START, line], command).kind == "model-load"


LLAMA_SERVER = ["llama-server", "-c", "1024", "--port", "8080"]
LCPP = ["python", "-m", "llama_cpp.server", "--n_ctx", "1024"]


@pytest.mark.parametrize(
    ("command", "line", "kind"),
    [
        # two paths in one -m value: not there, the command's
        (
            [*LLAMA_SERVER, "-m", "/m/a.gguf,/m/b.gguf"],
            "gguf_init_from_file: failed to open GGUF file '/m/a.gguf,/m/b.gguf' "
            "(No such file or directory)",
            "bad-args",
        ),
        # a GGUF file given with a folder's trailing slash
        (
            [*LCPP, "--model", "/m/a.gguf/"],
            "ValueError: Model path does not exist: /m/a.gguf/",
            "bad-args",
        ),
        # a path a config file gave (not in the command), with an unexpanded ~
        (
            [*LCPP, "--config_file", "/c/server.yaml"],
            "ValueError: Model path does not exist: ~/models/a.gguf",
            "bad-args",
        ),
        # a LoRA adapter's path that is not there
        (
            [*LLAMA_SERVER, "-m", "/m/a.gguf", "--lora", "/l/sql.gguf"],
            "llama_adapter_lora_init: failed to open '/l/sql.gguf': No such file or directory",
            "bad-args",
        ),
        # controls: a split GGUF's later shard, a file inside the Hub cache: the files
        (
            [*LLAMA_SERVER, "-m", "/m/a-00001-of-00002.gguf"],
            "gguf_init_from_file: failed to open GGUF file '/m/a-00002-of-00002.gguf' "
            "(No such file or directory)",
            "model-load",
        ),
        (
            [*LLAMA_SERVER, "-m", "/h/models--o--r/snapshots/0a1b/a.gguf"],
            "gguf_init_from_file: failed to open GGUF file "
            "'/h/models--o--r/snapshots/0a1b/a.gguf' (No such file or directory)",
            "model-load",
        ),
    ],
)
def test_a_path_the_command_gave_that_is_not_there(
    tmp_path: Path, command: list[str], line: str, kind: str
) -> None:
    """llama.cpp's "Model path does not exist" and "failed to open GGUF file ... (No
    such file or directory)" of a path the command (or its config file) gave: the
    value is wrong (bad-args), whichever option gave it; a split GGUF's later shard and
    a file in the Hugging Face cache are files missing from what was named right."""
    verdict = gate(tmp_path, "llamacpp", [line], command)
    assert verdict.kind == kind
    assert (verdict.matched_line or "").endswith(line)


def test_a_path_not_there_in_a_paste_without_its_command(tmp_path: Path) -> None:
    """With no command, nothing says the path was the user's value: the files'."""
    line = "ValueError: Model path does not exist: /m/a.gguf/"
    assert gate(tmp_path, "llamacpp", [line], []).kind == "model-load"


def test_a_link_whose_target_is_gone_is_the_files(tmp_path: Path) -> None:
    """A model path that is a link to a deleted file: the link is there, its file is
    not (model-load); the same path with no link there is the command's."""
    link = tmp_path / "current.gguf"
    link.symlink_to(tmp_path / "deleted.gguf")
    line = f"ValueError: Model path does not exist: {link}"
    assert gate(tmp_path, "llamacpp", [line], [*LCPP, "--model", str(link)]).kind == "model-load"
    link.unlink()
    assert gate(tmp_path, "llamacpp", [line], [*LCPP, "--model", str(link)]).kind == "bad-args"


def test_a_tls_key_given_without_its_certificate(tmp_path: Path) -> None:
    """uvicorn's bare `assert self.ssl_certfile` when a key is given alone (here by a
    variable a base image left set): the TLS setting's; without any TLS setting the
    same check keeps the engine's reading."""
    lines = [
        "Traceback (most recent call last):",
        '  File "/venv/lib/python3.11/site-packages/uvicorn/config.py", line 400, in load',
        "    assert self.ssl_certfile",
        "AssertionError",
    ]
    command = [*LCPP, "--model", "/m/a.gguf"]
    verdict = gate(tmp_path, "llamacpp", lines, ["SSL_KEYFILE=/k/server.key", *command])
    assert (verdict.kind, verdict.matched_line) == ("bad-args", "assert self.ssl_certfile")
    assert "SSL_KEYFILE" in (verdict.hint or "")
    assert gate(tmp_path, "llamacpp", lines, command).kind != "bad-args"


def test_an_option_that_takes_json_given_key_value(tmp_path: Path) -> None:
    """SGLang's `--model-loader-extra-config num_threads=8` read by orjson: the option's
    value is no JSON (bad-args); given JSON, the same error stays the model's."""
    lines = [
        SGLANG_START,
        "Traceback (most recent call last):",
        '  File "/venv/sglang/srt/model_executor/model_runner_components/load_model_utils.py", '
        "line 222, in build_load_config",
        "    return LoadConfig(",
        '  File "/venv/sglang/srt/configs/load_config.py", line 137, in __post_init__',
        "    self.model_loader_extra_config = orjson.loads(model_loader_extra_config)",
        "orjson.JSONDecodeError: invalid literal, expected 'null': line 1 column 1 (char 0)",
    ]
    command = ["python", "-m", "sglang.launch_server", "--model-path", "/m"]
    bad = [*command, "--model-loader-extra-config", "num_threads=8"]
    verdict = gate(tmp_path, "sglang", lines, bad)
    assert verdict.kind == "bad-args"
    assert "--model-loader-extra-config num_threads=8" in (verdict.hint or "")
    good = [*command, "--model-loader-extra-config", '{"num_threads": 8}']
    assert gate(tmp_path, "sglang", lines, good).kind != "bad-args"


def test_a_count_of_zero_failing_in_the_words_of_what_it_counts(tmp_path: Path) -> None:
    """`--max-queued-requests 0`: SGLang's warm-up request is refused ("The request
    queue is full."), the engine's start failing; the zero's (bad-args). Another zero
    the line's words do not name leaves the engine's reading."""
    line = (
        'AssertionError: {"object":"error","message":"The request queue is full.",'
        '"type":"503","param":null,"code":503}'
    )
    command = ["python", "-m", "sglang.launch_server", "--model-path", "/m"]
    lines = [
        SGLANG_START,
        "[2026-12-07 08:50:46] Initialization failed. warmup error: Traceback (most recent "
        "call last):",
        '  File "/venv/sglang/srt/entrypoints/http_server.py", line 1921, in '
        "_execute_server_warmup",
        '    assert res.status_code == 200, f"{res.text}"',
        line,
    ]
    verdict = gate(tmp_path, "sglang", lines, [*command, "--max-queued-requests", "0"])
    assert verdict.kind == "bad-args"
    assert "--max-queued-requests 0" in (verdict.hint or "")
    other = gate(tmp_path, "sglang", lines, [*command, "--stream-interval", "0"])
    assert other.kind != "bad-args"


def test_an_error_with_no_family_in_the_words_of_an_option(tmp_path: Path) -> None:
    """prometheus's "Buckets not in sorted order" after `--bucket-e2e-request-latency 1
    0.5 2 5`: the option's (bad-args); without it the plain exit keeps no kind of words."""
    lines = [
        "Traceback (most recent call last):",
        '  File "/venv/sglang/srt/entrypoints/engine.py", line 203, in init_tokenizer_manager',
        "    tokenizer_manager = TokenizerManagerClass(server_args, port_args)",
        '  File "/venv/sglang/srt/managers/tokenizer_manager.py", line 843, in '
        "init_metric_collector_watchdog",
        "    self.metrics_collector = tokenizer_collector_cls(",
        '  File "/venv/sglang/srt/observability/metrics_collector.py", line 2067, in __init__',
        "    self.histogram_e2e_request_latency = Histogram(",
        '  File "/venv/prometheus_client/metrics.py", line 645, in _prepare_buckets',
        "    raise ValueError('Buckets not in sorted order')",
        "ValueError: Buckets not in sorted order",
    ]
    command = ["python", "-m", "sglang.launch_server", "--model-path", "/m", "--enable-metrics"]
    buckets = ["--bucket-e2e-request-latency", "1", "0.5", "2", "5"]
    verdict = gate(tmp_path, "sglang", lines, [*command, *buckets])
    assert verdict.kind == "bad-args"
    assert "--bucket-e2e-request-latency" in (verdict.hint or "")
    assert gate(tmp_path, "sglang", lines, command).kind != "bad-args"


def test_a_package_version_the_engine_asks_for_is_install(tmp_path: Path) -> None:
    """`--safetensors-load-strategy torchao` without torchao: "Please use torchao version
    >= 0.15.0" quotes the option's value but asks for a package (install)."""
    line = "ValueError: Please use torchao version >= 0.15.0 to load torchao safetensors checkpoint"
    command = ["python", "-m", "vllm.entrypoints.openai.api_server", "--model", "/m"]
    command += ["--safetensors-load-strategy", "torchao"]
    assert gate(tmp_path, "vllm", [line], command).kind == "install"


def test_a_file_given_where_a_folder_is_wanted(tmp_path: Path) -> None:
    """`--lora-modules sql=/a/sql/adapter_model.safetensors`: vLLM looks for
    adapter_config.json inside it, "[Errno 20] Not a directory"; the option's (bad-args).
    A path the command did not give stays the files'."""
    line = (
        "NotADirectoryError: [Errno 20] Not a directory: "
        "'/a/sql/adapter_model.safetensors/adapter_config.json'"
    )
    command = ["python", "-m", "vllm.entrypoints.openai.api_server", "--model", "/m"]
    lora = ["--enable-lora", "--lora-modules", "sql=/a/sql/adapter_model.safetensors"]
    verdict = gate(tmp_path, "vllm", [line], [*command, *lora])
    assert verdict.kind == "bad-args"
    assert "sql=/a/sql/adapter_model.safetensors names a file" in (verdict.hint or "")
    other = [*command, "--enable-lora", "--lora-modules", "sql=/b/sql"]
    assert gate(tmp_path, "vllm", [line], other).kind != "bad-args"


def test_a_json_error_inside_an_options_folder_is_the_files(tmp_path: Path) -> None:
    """An adapter folder whose adapter_config.json has a trailing comma: the JSON error
    in the LoRA step is the adapter's files (model-load), not the option's; the step of
    an option that gave a file (`--model-checksum sums.sha256`) stays the option's."""
    lines = [
        "Traceback (most recent call last):",
        '  File "/venv/vllm/lora/worker_manager.py", line 121, in _load_adapter',
        "    peft_helper = PEFTHelper.from_local_dir(",
        '  File "/venv/vllm/lora/peft_helper.py", line 183, in from_local_dir',
        "    config = json.load(f)",
        "json.decoder.JSONDecodeError: Expecting value: line 11 column 3 (char 212)",
    ]
    command = ["python", "-m", "vllm.entrypoints.openai.api_server", "--model", "/m"]
    lora = ["--enable-lora", "--lora-modules", "sql=/a/sql-lora"]
    assert gate(tmp_path, "vllm", lines, [*command, *lora]).kind == "model-load"


def test_a_bracketed_host_fails_first_where_the_server_binds(tmp_path: Path) -> None:
    """SGLang's `--host [::1]`: uvicorn's name lookup fails and the server goes on
    without its port, to die two minutes later of its own refused warmup request; the
    lookup's line is quoted (bad-args naming the host). A host that is an address
    leaves the warmup's failure."""
    lookup = "[2026-12-07 09:25:33] ERROR:    [Errno -2] Name or service not known"
    refused = (
        "requests.exceptions.ConnectionError: HTTPConnectionPool(host='::1', port=5948): "
        "Max retries exceeded with url: /model_info (Caused by NewConnectionError("
        "\"HTTPConnection(host='::1', port=5948): Failed to establish a new connection: "
        '[Errno 111] Connection refused"))'
    )
    lines = [
        SGLANG_START,
        lookup,
        "[2026-12-07 09:27:33] Initialization failed. warmup error: Traceback (most recent "
        "call last):",
        '  File "/venv/requests/adapters.py", line 700, in send',
        "    raise ConnectionError(e, request=request)",
        refused,
    ]
    command = ["python", "-m", "sglang.launch_server", "--model-path", "/m", "--port", "5948"]
    verdict = gate(tmp_path, "sglang", lines, [*command, "--host", "[::1]"])
    assert (verdict.kind, verdict.matched_line) == ("bad-args", lookup)
    assert "--host [::1]" in (verdict.hint or "")
    other = gate(tmp_path, "sglang", lines, [*command, "--host", "::1"])
    assert other.matched_line != lookup


def test_a_check_that_names_the_flag_in_a_distributed_settings_words(tmp_path: Path) -> None:
    """vLLM's "Invalid data-parallel launch options: `--nnodes 2` must evenly divide the
    total world size (1)": world size is a distributed word, but the check refuses the
    flag it names (bad-args); without --nnodes in the command the words keep theirs."""
    line = (
        "ValueError: Invalid data-parallel launch options: `--nnodes 2` must evenly divide "
        "the total world size (1). Adjust `--nnodes`, `--data-parallel-size`."
    )
    command = ["python", "-m", "vllm.entrypoints.openai.api_server", "--model", "/m"]
    verdict = gate(tmp_path, "vllm", [line], [*command, "--nnodes", "2", "--node-rank", "1"])
    assert verdict.kind == "bad-args"
    assert "--nnodes 2" in (verdict.hint or "")
    assert gate(tmp_path, "vllm", [line], command).kind != "bad-args"


def test_a_file_uri_given_for_the_models_path(tmp_path: Path) -> None:
    """SGLang's `--model-path file:///m`: "Invalid connector type: file:///m" is the
    value's (bad-args, the hint saying to drop the scheme)."""
    line = "ValueError: Invalid connector type: file:///m/tiny"
    command = ["python", "-m", "sglang.launch_server", "--model-path", "file:///m/tiny"]
    verdict = gate(tmp_path, "sglang", [SGLANG_START, line], command)
    assert verdict.kind == "bad-args"
    assert "file:// URI" in (verdict.hint or "")


def test_a_web_address_given_for_the_models_path(tmp_path: Path) -> None:
    """SGLang's `--model-path https://huggingface.co/org/m` (the Hub's page, for the id):
    "Invalid connector type: https://..." is the value's (bad-args), though the address
    names the Hub; a download that failed on that address keeps its kind."""
    url = "https://huggingface.co/tiny-org/tiny-llama"
    command = ["python", "-m", "sglang.launch_server", "--model-path", url]
    refused = traceback(f"ValueError: Invalid connector type: {url}")
    verdict = gate(tmp_path, "sglang", refused, command)
    assert verdict.kind == "bad-args"
    assert "web address" in (verdict.hint or "")
    fetch = (
        "requests.exceptions.ConnectionError: HTTPSConnectionPool(host='huggingface.co', "
        f"port=443): Max retries exceeded with url: {url} (Caused by NameResolutionError: "
        "Failed to resolve 'huggingface.co' ([Errno -3] Temporary failure in name resolution))"
    )
    assert gate(tmp_path, "sglang", traceback(fetch), command).kind == "download"


def test_an_address_inside_an_options_json_quoted_back(tmp_path: Path) -> None:
    """ZeroMQ's `Invalid argument (addr='127.0.0.1:5557')` after `--kv-events-config`
    whose endpoint has no `tcp://`: the option's value (bad-args), not a peer's socket."""
    lines = [
        SGLANG_START,
        "Traceback (most recent call last):",
        '  File "/venv/lib/python3.11/site-packages/zmq/sugar/socket.py", line 348, in connect',
        "    super().connect(addr)",
        "zmq.error.ZMQError: Invalid argument (addr='127.0.0.1:5557')",
    ]
    command = ["python", "-m", "sglang.launch_server", "--model-path", "/m"]
    config = '{"publisher": "zmq", "endpoint": "127.0.0.1:5557", "topic": "kv-events"}'
    verdict = gate(tmp_path, "sglang", lines, [*command, "--kv-events-config", config])
    assert verdict.kind == "bad-args"
    assert "--kv-events-config" in (verdict.hint or "")
    assert gate(tmp_path, "sglang", lines, command).kind == "distributed"


LORA = ["python", "-m", "sglang.launch_server", "--model-path", "/m", "--lora-paths", "chat=/a"]


@pytest.mark.parametrize(
    "reason",
    [
        "Unterminated string starting at: line 8 column 3 (char 162)",
        "Expecting value: line 1 column 1 (char 0)",
        "unsupported operand type(s) for /: 'int' and 'str'",
    ],
)
def test_an_adapters_config_cut_short_or_of_the_wrong_type(tmp_path: Path, reason: str) -> None:
    """SGLang's "Failed to load LoRA adapter chat: <why>" where the adapter's config is
    no JSON or holds a value of the wrong type: the adapter's files (model-load, the
    adapter hint), not the option that names them."""
    lines = [
        SGLANG_START,
        "Traceback (most recent call last):",
        '  File "/venv/lib/python3.11/site-packages/sglang/srt/lora/lora_manager.py", line 760, '
        "in init_lora_adapters",
        "    raise RuntimeError(",
        f"RuntimeError: Failed to load LoRA adapter chat: {reason}",
    ]
    verdict = gate(tmp_path, "sglang", lines, LORA)
    assert verdict.kind == "model-load"
    assert "adapter_config.json" in (verdict.hint or "")


def _vllm_worker(*frames: str, last: str) -> list[str]:
    prefix = "(Worker pid=30500) ERROR 12-07 11:06:01 [multiproc_executor.py:1063] "
    body = ["Traceback (most recent call last):", *frames, last]
    return ["INFO 12-07 11:05:40 [utils.py:253] non-default args: {'model': '/m'}"] + [
        prefix + line for line in body
    ]


def test_a_lora_config_value_of_the_wrong_type_in_vllm(tmp_path: Path) -> None:
    """vLLM's PEFTHelper computing with `"lora_alpha": null`: a TypeError in the frames
    that read the adapter's config is the adapter's files (model-load); the same error
    elsewhere is not."""
    last = "TypeError: unsupported operand type(s) for /: 'NoneType' and 'int'"
    helper = "/venv/lib/python3.11/site-packages/vllm/lora/peft_helper.py"
    frames = (
        f'  File "{helper}", line 186, in from_local_dir',
        "    return cls.from_dict(config)",
        f'  File "{helper}", line 115, in __post_init__',
        "    self.vllm_lora_scaling_factor = self._scaling(self.r, self.lora_alpha)",
        f'  File "{helper}", line 120, in _scaling',
        "    return alpha / rank",
    )
    command = ["vllm", "serve", "/m", "--enable-lora", "--lora-modules", "sql=/a"]
    verdict = gate(tmp_path, "vllm", _vllm_worker(*frames, last=last), command)
    assert verdict.kind == "model-load"
    assert "adapter_config.json" in (verdict.hint or "")
    other = (
        '  File "/venv/lib/python3.11/site-packages/vllm/v1/worker/cpu_worker.py", line 90, '
        "in determine_available_memory",
        "    return total / rank",
    )
    assert gate(tmp_path, "vllm", _vllm_worker(*other, last=last), command).kind != "model-load"


def test_a_config_json_read_into_a_list(tmp_path: Path) -> None:
    """config.json wrapped in a JSON list: "'list' object has no attribute 'get'" where
    vLLM reads the model's configuration is the model's files (model-load), not the
    packages; the same error in other code is not."""
    last = "AttributeError: 'list' object has no attribute 'get'"

    def lines(path: str) -> list[str]:
        return [
            "INFO 12-07 11:05:40 [utils.py:253] non-default args: {'model': '/m'}",
            "Traceback (most recent call last):",
            f'  File "/venv/lib/python3.11/site-packages/vllm/{path}", line 787, in read',
            "    config.get('speculators_config')",
            last,
        ]

    command = ["vllm", "serve", "/m"]
    verdict = gate(tmp_path, "vllm", lines("transformers_utils/config.py"), command)
    assert verdict.kind == "model-load"
    assert "config.json" in (verdict.hint or "")
    assert gate(tmp_path, "vllm", lines("entrypoints/chat_utils.py"), command).kind != "model-load"


@pytest.mark.parametrize(
    ("option", "last"),
    [
        (
            ["--quantization", "gguf"],
            "ValueError: No module or parameter named 'lm_head.weight' in TransformersForCausalLM.",
        ),
        (
            ["--load-format", "bitsandbytes"],
            "AttributeError: Model TransformersForCausalLM does not support BitsAndBytes "
            "quantization yet.",
        ),
    ],
)
def test_a_format_forced_on_weights_saved_in_another(
    tmp_path: Path, option: list[str], last: str
) -> None:
    """SGLang's `--quantization gguf` on safetensors, `--load-format bitsandbytes` on a
    model saved unquantized: the loader's words are the model's, the choice the
    command's (bad-args naming it); without the option the model's (model-load)."""
    lines = [
        SGLANG_START,
        "Traceback (most recent call last):",
        '  File "/venv/lib/python3.11/site-packages/sglang/srt/model_loader/loader.py", '
        "line 677, in load_weights_and_postprocess",
        "    model.load_weights(weights)",
        last,
    ]
    command = ["python", "-m", "sglang.launch_server", "--model-path", "/m"]
    verdict = gate(tmp_path, "sglang", lines, [*command, *option])
    assert verdict.kind == "bad-args"
    assert " ".join(option) in (verdict.hint or "")
    assert gate(tmp_path, "sglang", lines, command).kind == "model-load"


def test_a_compiler_variable_set_and_the_compiler_failing(tmp_path: Path) -> None:
    """`TORCHINDUCTOR_FREEZING=1` and Inductor's assertion while vLLM compiles the model
    (in its memory profiling): the variable (bad-args naming it), not the phase's
    memory; without it the kind is not bad-args."""
    inductor = "/venv/lib/python3.11/site-packages/torch/_inductor/compile_fx.py"
    frames = (
        '  File "/venv/lib/python3.11/site-packages/vllm/v1/worker/cpu_model_runner.py", '
        "line 120, in profile_run",
        "    self._dummy_run(max_num_tokens)",
        f'  File "{inductor}", line 2723, in compile_fx',
        "    return _maybe_wrap_and_compile_fx_main(",
        f'  File "{inductor}", line 3061, in _compile_fx_main',
        '    raise AssertionError(f"expected OutputCode, got {type(obj)}")',
    )
    lines = [
        "INFO 12-07 10:23:20 [gpu_worker.py:300] Memory profiling takes 1.2 seconds",
        *_vllm_worker(*frames, last="AssertionError: expected OutputCode, got <class 'function'>"),
    ]
    command = ["vllm", "serve", "/m"]
    verdict = gate(tmp_path, "vllm", lines, ["TORCHINDUCTOR_FREEZING=1", *command])
    assert verdict.kind == "bad-args"
    assert "TORCHINDUCTOR_FREEZING=1" in (verdict.hint or "")
    assert gate(tmp_path, "vllm", lines, command).kind != "bad-args"


def test_a_bare_exception_handled_by_one_that_says_what_is_missing(tmp_path: Path) -> None:
    """SGLang's platform raising a bare `NotImplementedError`, handled by a RuntimeError
    that says no accelerator is there: that one is quoted; under `--device cpu` the
    option that asked for a device is the command's (bad-args)."""
    said = (
        "RuntimeError: No accelerator (CUDA, XPU, HPU, NPU, MUSA, MPS) or platform plugin "
        "is available."
    )
    common = "/venv/lib/python3.11/site-packages/sglang/srt/utils/common.py"
    lines = [
        SGLANG_START,
        "[2026-12-07 11:08:03] Scheduler hit an exception: Traceback (most recent call last):",
        f'  File "{common}", line 1122, in get_device',
        "    return current_platform.get_device(device_id)",
        '  File "/venv/lib/python3.11/site-packages/sglang/srt/platforms/device_mixin.py", '
        "line 189, in get_device",
        "    raise NotImplementedError",
        "NotImplementedError",
        "",
        "During handling of the above exception, another exception occurred:",
        "",
        "Traceback (most recent call last):",
        '  File "/venv/lib/python3.11/site-packages/sglang/srt/models/transformers.py", '
        "line 676, in _init_parameters",
        "    device=get_device(),",
        f'  File "{common}", line 1124, in get_device',
        "    raise RuntimeError(",
        said,
        "",
        "[2026-12-07 11:08:03] Received sigquit from a child process. It usually means the "
        "child failed.",
    ]
    command = ["python", "-m", "sglang.launch_server", "--model-path", "/m", "--device", "cpu"]
    verdict = gate(tmp_path, "sglang", lines, [*command, "--load-format", "layered"])
    assert verdict.matched_line == said
    assert verdict.kind == "bad-args"
    assert "--device cpu" in (verdict.hint or "")


def test_a_unix_socket_path_for_llama_servers_host(tmp_path: Path) -> None:
    """llama-server's `--host /run/x.sock` that could not be bound (the path is a
    folder, or its folder is not there): bad-args naming --host, not a taken port; a
    bind failure of an address, or of a path where a socket file is already, keeps
    port-in-use."""
    sock = "/tmp/run/llama.sock"
    line = (
        "0.00.002.617 E srv         start: couldn't bind HTTP server socket, hostname: "
        f"{sock}, port: 8080"
    )
    command = [*LLAMA_SERVER, "-m", "/m/a.gguf", "--host", sock]
    verdict = gate(tmp_path, "llamacpp", [line], command)
    assert verdict.kind == "bad-args"
    assert f"--host {sock}" in (verdict.hint or "")
    address = line.replace(sock, "127.0.0.1")
    control = [*LLAMA_SERVER, "-m", "/m/a.gguf", "--host", "127.0.0.1"]
    assert gate(tmp_path, "llamacpp", [address], control).kind == "port-in-use"
    # a socket file already at the path (a stale one, another server's): in use
    stale = tmp_path / "stale.sock"
    with socket.socket(socket.AF_UNIX) as listener:
        listener.bind(str(stale))
    taken = line.replace(sock, str(stale))
    command = [*LLAMA_SERVER, "-m", "/m/a.gguf", "--host", str(stale)]
    assert gate(tmp_path, "llamacpp", [taken], command).kind == "port-in-use"


def test_a_scheme_in_sglangs_rendezvous_address(tmp_path: Path) -> None:
    """SGLang's `--dist-init-addr tcp://127.0.0.1:5000` (it adds tcp:// itself): torch's
    "port number missing" is the option's (bad-args), not a peer's."""
    lines = traceback(
        "ValueError: Error initializing torch.distributed using tcp:// rendezvous: port "
        "number missing"
    )
    command = ["python", "-m", "sglang.launch_server", "--model-path", "/m"]
    verdict = gate(
        tmp_path, "sglang", lines, [*command, "--dist-init-addr", "tcp://127.0.0.1:5000"]
    )
    assert verdict.kind == "bad-args"
    assert "--dist-init-addr tcp://127.0.0.1:5000" in (verdict.hint or "")
    assert gate(tmp_path, "sglang", lines, command).kind == "distributed"


def test_an_encoding_python_does_not_have(tmp_path: Path) -> None:
    """`PYTHONIOENCODING=utf8mb4` (a database's charset name): Python's fatal start
    error waits for the line under it, which is quoted, bad-args naming the variable."""
    lines = [
        "Fatal Python error: init_stdio_encoding: failed to get the Python codec name of "
        "the stdio encoding",
        "Python runtime state: core initialized",
        "LookupError: unknown encoding: utf8mb4",
        "",
        "Current thread 0x00007f753cc21b80 (most recent call first):",
        "  <no Python frame>",
    ]
    command = [*LCPP, "--model", "/m/a.gguf"]
    verdict = gate(tmp_path, "llamacpp", lines, ["PYTHONIOENCODING=utf8mb4", *command])
    assert verdict.kind == "bad-args"
    assert verdict.matched_line == "LookupError: unknown encoding: utf8mb4"
    assert "PYTHONIOENCODING=utf8mb4" in (verdict.hint or "")
    assert gate(tmp_path, "llamacpp", lines, command).kind != "bad-args"


def test_a_library_that_cannot_load_its_own(tmp_path: Path) -> None:
    """oneMKL's `Cannot load .../libtorch_cpu.so.` (the process's working folder deleted
    under it) is install, not judged by the exit code's usual meaning."""
    line = (
        "Intel oneMKL FATAL ERROR: Cannot load "
        "/venv/lib/python3.11/site-packages/torch/lib/libtorch_cpu.so."
    )
    verdict = gate(tmp_path, "vllm", [line], ["vllm", "serve", "/m"])
    assert verdict.kind == "install"


def test_an_adapters_tensors_of_another_shape(tmp_path: Path) -> None:
    """vLLM's layer taking a LoRA adapter whose lora_A and lora_B are swapped: the shape
    error in set_lora is the adapter's files (model-load), not the option that named the
    adapter."""
    last = (
        "RuntimeError: The size of tensor a (16) must match the size of tensor b (128) at "
        "non-singleton dimension 0"
    )
    layer = (
        '  File "/venv/lib/python3.11/site-packages/vllm/lora/layers/column_parallel_linear.py", '
        "line 341, in set_lora",
        "    ].copy_(lora_a_i, non_blocking=True)",
    )
    command = ["vllm", "serve", "/m", "--enable-lora", "--lora-modules", "sql=/a"]
    verdict = gate(tmp_path, "vllm", _vllm_worker(*layer, last=last), command)
    assert verdict.kind == "model-load"
    assert "adapter_config.json" in (verdict.hint or "")


def test_an_adapters_file_missing_under_lora_paths(tmp_path: Path) -> None:
    """SGLang's `--lora-paths chat=/a` whose weights file is not there (or not readable
    by its user): the adapter's files (model-load, the adapter hint), as an adapter of
    vLLM's --lora-modules is."""
    lines = [
        SGLANG_START,
        "Traceback (most recent call last):",
        '  File "/venv/lib/python3.11/site-packages/sglang/srt/lora/lora_manager.py", line 760, '
        "in init_lora_adapters",
        "    raise RuntimeError(",
        "RuntimeError: Failed to load LoRA adapter chat: No such file or directory: "
        "/a/adapter_model.safetensors",
    ]
    verdict = gate(tmp_path, "sglang", lines, LORA)
    assert verdict.kind == "model-load"
    assert "LoRA adapter" in (verdict.hint or "")


def test_a_model_refused_for_a_mode_the_command_asked_for(tmp_path: Path) -> None:
    """SGLang's `--encoder-only` with a text model ("is not supported for encoder
    disaggregation"): the option's (bad-args naming it); where no option of the command
    spells the mode's words, still the command's (only an option asks for a mode), the
    hint naming the mode."""
    lines = traceback(
        "ValueError: Model type LlamaForCausalLM is not supported for encoder disaggregation. "
        "Supported architectures: Qwen2VL, Qwen3VL"
    )
    command = ["python", "-m", "sglang.launch_server", "--model-path", "/m"]
    verdict = gate(tmp_path, "sglang", lines, [*command, "--encoder-only"])
    assert verdict.kind == "bad-args"
    assert "--encoder-only" in (verdict.hint or "")
    plain = gate(tmp_path, "sglang", lines, [*command, "--language-only"])
    assert plain.kind == "bad-args"
    assert "encoder disaggregation" in (plain.hint or "")


def test_a_model_whose_attention_the_engine_cannot_replace(tmp_path: Path) -> None:
    """SGLang's Transformers backend given T5: "does not support custom attention
    backends" is unsupported-model; a warning that the model is not backend-compatible,
    "Proceeding anyway", is quoted over the bare TypeError its model code then raises."""
    command = ["python", "-m", "sglang.launch_server", "--model-path", "/m"]
    t5 = traceback(
        "ValueError: Model <class 'transformers.models.t5.modeling_t5.T5ForConditionalGeneration'>"
        " does not support custom attention backends (_supports_attention_backend=False)."
    )
    assert gate(tmp_path, "sglang", t5, command).kind == "unsupported-model"
    warned = (
        "[2026-12-07 12:10:25] The Transformers implementation of MambaForCausalLM reports it "
        "is not backend-compatible (_supports_attention_backend=False). Proceeding anyway "
        "because --model-impl=transformers was explicitly requested."
    )
    crash = [
        "[2026-12-07 12:10:25] Scheduler hit an exception: Traceback (most recent call last):",
        '  File "/venv/lib/python3.11/site-packages/sglang/srt/models/transformers.py", '
        "line 700, in __init__",
        "    if self.hidden % self.heads:",
        "TypeError: unsupported operand type(s) for %: 'NoneType' and 'int'",
    ]
    verdict = gate(tmp_path, "sglang", [SGLANG_START, warned, *crash], command)
    assert verdict.kind == "unsupported-model"
    assert "not backend-compatible" in (verdict.matched_line or "")
    assert gate(tmp_path, "sglang", [SGLANG_START, *crash], command).kind != "unsupported-model"


def test_a_port_out_of_range(tmp_path: Path) -> None:
    """SGLang's `--port -1`: uvicorn's `[Errno -8] Servname not supported` is quoted over
    the warmup request's URL error that ends the run, bad-args naming --port; with a
    port in range the same lines are not blamed on it."""
    lines = [
        SGLANG_START,
        "[2026-12-07 12:34:42] ERROR:    [Errno -8] Servname not supported for ai_socktype",
        "[2026-12-07 12:36:58] Initialization failed. warmup error: Traceback (most recent "
        "call last):",
        '  File "/venv/lib/python3.11/site-packages/urllib3/util/url.py", line 425, in parse_url',
        '    raise LocationParseError(f"{host_port!r} is not a valid host or port")',
        "urllib3.exceptions.LocationParseError: Failed to parse: '127.0.0.1:-1' is not a valid "
        "host or port",
    ]
    command = ["python", "-m", "sglang.launch_server", "--model-path", "/m"]
    verdict = gate(tmp_path, "sglang", lines, [*command, "--port", "-1"])
    assert verdict.kind == "bad-args"
    assert verdict.matched_line is not None and "Servname not supported" in verdict.matched_line
    assert "--port -1 is no port" in (verdict.hint or "")
    other = gate(tmp_path, "sglang", lines, [*command, "--port", "8000"])
    assert "is no port" not in (other.hint or "")


def test_a_kv_cache_smaller_than_one_request_foretold(tmp_path: Path) -> None:
    """SGLang's warning that its KV pool holds fewer tokens than one request of the
    context length, then the warmup refused (no family of its own): the warning is
    quoted, oom; without it the warmup's refusal is not memory."""
    warned = (
        "[2026-12-07 12:30:20] KV pool holds 16 tokens, fewer than --context-length 1024. One "
        "full-length request cannot fit, so long requests will be refused or truncated at "
        "serving time. Lower --context-length, raise --mem-fraction-static, or free memory"
    )
    crash = [
        "[2026-12-07 12:30:22] Initialization failed. warmup error: Traceback (most recent "
        "call last):",
        '  File "/venv/lib/python3.11/site-packages/sglang/srt/entrypoints/warmup.py", line 80, '
        "in _execute_server_warmup",
        '    assert res.status_code == 200, f"{res.text}"',
        'AssertionError: {"error":{"message":"Input length (24 tokens) exceeds the maximum '
        'allowed length (10 tokens). Use a shorter input or enable --allow-auto-truncate."}}',
    ]
    command = ["python", "-m", "sglang.launch_server", "--model-path", "/m"]
    verdict = gate(tmp_path, "sglang", [SGLANG_START, warned, *crash], command)
    assert verdict.kind == "oom"
    assert "KV pool holds 16 tokens" in (verdict.matched_line or "")
    assert gate(tmp_path, "sglang", [SGLANG_START, *crash], command).kind != "oom"


@pytest.mark.parametrize(
    ("line", "kind"),
    [
        ("RuntimeError: NIXL is not available", "install"),
        ("RuntimeError: CUDA is not available", None),
    ],
)
def test_a_library_said_to_be_not_available(tmp_path: Path, line: str, kind: str | None) -> None:
    """An exception that says only that a library is not available (vLLM's NIXL KV
    connector without its package) is install, though the library's name is a
    distributed word; a device that is not available is not."""
    lines = _vllm_worker(
        '  File "/venv/lib/python3.11/site-packages/vllm/distributed/kv_transfer/nixl.py", '
        "line 90, in __init__",
        "    raise RuntimeError(msg)",
        last=line,
    )
    verdict = gate(tmp_path, "vllm", lines, ["vllm", "serve", "/m"])
    if kind is not None:
        assert verdict.kind == kind
    else:
        assert verdict.kind != "install"


def test_a_value_python_refuses_for_its_own_variable(tmp_path: Path) -> None:
    """`PYTHONUTF8=yes`: Python's fatal start error names the variable; the command set
    it (bad-args naming it); without it in the command the error stays Python's."""
    line = (
        "Fatal Python error: preconfig_init_utf8_mode: invalid PYTHONUTF8 environment "
        "variable value"
    )
    lines = [line, "Python runtime state: preinitializing", ""]
    command = [*LCPP, "--model", "/m/a.gguf"]
    verdict = gate(tmp_path, "llamacpp", lines, ["PYTHONUTF8=yes", *command])
    assert verdict.kind == "bad-args"
    assert "PYTHONUTF8=yes" in (verdict.hint or "")
    assert gate(tmp_path, "llamacpp", lines, command).kind != "bad-args"


def test_a_device_given_for_the_models_file(tmp_path: Path) -> None:
    """llama-server's `-m /dev/null` (a placeholder left in a unit file): "failed to read
    magic" is the option's (bad-args), not a damaged file's."""
    line = "0.00.004.626 E gguf_init_from_reader: failed to read magic"
    verdict = gate(tmp_path, "llamacpp", [line], [*LLAMA_SERVER, "-m", "/dev/null"])
    assert verdict.kind == "bad-args"
    assert "-m /dev/null is a device" in (verdict.hint or "")
    assert (
        gate(tmp_path, "llamacpp", [line], [*LLAMA_SERVER, "-m", "/m/a.gguf"]).kind == "model-load"
    )


def test_a_quantization_forced_failing_in_its_own_class(tmp_path: Path) -> None:
    """SGLang's `--quantization compressed-tensors` on weights saved without it: the
    method's config class fails to build (bad-args naming it); without the option the
    hint does not name it."""
    lines = [
        SGLANG_START,
        "Traceback (most recent call last):",
        '  File "/venv/lib/python3.11/site-packages/sglang/srt/model_loader/weight_utils.py", '
        "line 375, in get_quant_config",
        "    return quant_cls(**config)",
        "TypeError: CompressedTensorsConfig.__init__() missing 5 required positional "
        "arguments: 'target_scheme_map', 'ignore', 'quant_format', 'sparsity_scheme_map', "
        "and 'sparsity_ignore_list'",
    ]
    command = ["python", "-m", "sglang.launch_server", "--model-path", "/m"]
    verdict = gate(tmp_path, "sglang", lines, [*command, "--quantization", "compressed-tensors"])
    assert verdict.kind == "bad-args"
    assert "--quantization compressed-tensors" in (verdict.hint or "")
    assert "--quantization" not in (gate(tmp_path, "sglang", lines, command).hint or "")


def test_a_class_the_command_named_failing(tmp_path: Path) -> None:
    """vLLM's `--worker-cls vllm.v1.worker.gpu_worker.Worker` on a CPU build: "Unsupported
    device type: cpu" raised in that class's module is the option's (bad-args naming
    it); the same error in another module is not."""

    def frames(module: str) -> tuple[str, ...]:
        return (
            f'  File "/venv/lib/python3.11/site-packages/vllm/v1/worker/{module}.py", line 543, '
            "in init_device",
            '    raise RuntimeError(f"Unsupported device type: {self.device_config.device}")',
        )

    last = "RuntimeError: Unsupported device type: cpu"
    command = ["vllm", "serve", "/m", "--worker-cls", "vllm.v1.worker.gpu_worker.Worker"]
    verdict = gate(tmp_path, "vllm", _vllm_worker(*frames("gpu_worker"), last=last), command)
    assert verdict.kind == "bad-args"
    assert "--worker-cls vllm.v1.worker.gpu_worker.Worker" in (verdict.hint or "")
    other = gate(tmp_path, "vllm", _vllm_worker(*frames("cpu_worker"), last=last), command)
    assert other.kind != "bad-args"


def test_a_zero_no_option_gave_while_memory_is_sized(tmp_path: Path) -> None:
    """SGLang dividing by zero while it sizes the KV cache, no option of the command
    zero (config.json's max_position_embeddings: 0): the model's (model-load), not the
    memory phase's kind; with an option set to zero, that option's."""
    lines = [
        SGLANG_START,
        "[2026-12-07 13:04:53] Load weight begin. avail mem=19.20 GB",
        "[2026-12-07 13:04:53] Load weight end. elapsed=0.02 s, type=TransformersForCausalLM, "
        "avail mem=19.20 GB, mem usage=-0.00 GB.",
        "[2026-12-07 13:05:10] Scheduler hit an exception: Traceback (most recent call last):",
        '  File "/venv/lib/python3.11/site-packages/sglang/srt/managers/scheduler.py", line 1100, '
        "in init_memory_pools",
        "    self.init_target_memory_pool()",
        '  File "/venv/lib/python3.11/site-packages/sglang/srt/model_executor/model_runner.py", '
        "line 982, in alloc_memory_pool",
        "    self.kv_config = configurator.configure()",
        '  File "/venv/lib/python3.11/site-packages/sglang/srt/mem_cache/'
        'kv_cache_configurator.py", line 3123, in resolve_max_num_reqs',
        "    per_req = self.max_total_num_tokens // self.context_len",
        "ZeroDivisionError: integer division or modulo by zero",
    ]
    command = ["python", "-m", "sglang.launch_server", "--model-path", "/m"]
    verdict = gate(tmp_path, "sglang", lines, command)
    assert verdict.kind == "model-load"
    assert "config.json" in (verdict.hint or "")
    zero = gate(tmp_path, "sglang", lines, [*command, "--context-length", "0"])
    assert zero.kind == "bad-args"


def test_a_denial_inside_the_folder_the_failure_names(tmp_path: Path) -> None:
    """vLLM refused a file inside the model's folder (no search bit for this user), then
    says only that the folder is no model: the denial is quoted (permission), the
    retried one not; a denial of another folder leaves the failure as it was."""

    def lines(denied: str) -> list[str]:
        head = "(APIServer pid=25717) ERROR 12-07 13:19:4{} [repo_utils.py:12{}] "
        return [
            "(APIServer pid=25717) INFO 12-07 13:19:40 [utils.py:253] non-default args: "
            "{'model': '/data/m'}",
            head.format(2, 6) + "Error retrieving file list: [Errno 13] Permission denied: "
            f"'{denied}', retrying 1 of 2",
            head.format(4, 4) + "Error retrieving file list: [Errno 13] Permission denied: "
            f"'{denied}'",
            "pydantic_core._pydantic_core.ValidationError: 1 validation error for ModelConfig",
            "  Value error, Invalid repository ID or local directory specified: '/data/m'.",
        ]

    command = ["vllm", "serve", "/data/m"]
    verdict = gate(tmp_path, "vllm", lines("/data/m/tokenizer.json"), command)
    assert verdict.kind == "permission"
    assert (verdict.matched_line or "").endswith("Permission denied: '/data/m/tokenizer.json'")
    other = gate(tmp_path, "vllm", lines("/data/other/tokenizer.json"), command)
    assert other.kind != "permission"
    assert "Invalid repository ID" in (other.matched_line or "")


@pytest.mark.parametrize(
    ("option", "frames", "last", "kind"),
    [
        # SGLang's --device hpu without Gaudi: the tool its memory probe runs is missing
        (
            ["--device", "hpu"],
            (
                '  File "/venv/lib/python3.11/site-packages/sglang/srt/utils/common.py", '
                "line 852, in get_hpu_memory_capacity",
                '    raise RuntimeError(f"hl-smi error: {result.stderr.strip()}")',
            ),
            "RuntimeError: hl-smi error: /bin/sh: 1: hl-smi: not found",
            "exit",
        ),
        # an Ascend attention backend on a machine without torch_npu
        (
            ["--attention-backend", "ascend"],
            (
                '  File "/venv/lib/python3.11/site-packages/sglang/srt/layers/attention/'
                'attention_registry.py", line 143, in create_ascend_backend',
                "    from sglang.srt.hardware_backend.npu.attention.ascend_backend import (",
                '  File "/venv/lib/python3.11/site-packages/sglang/srt/hardware_backend/npu/'
                'attention/ascend_backend.py", line 7, in <module>',
                "    import torch_npu",
            ),
            "ModuleNotFoundError: No module named 'torch_npu'",
            "install",
        ),
    ],
)
def test_a_device_or_backend_the_command_chose_failing_in_its_own_code(
    tmp_path: Path, option: list[str], frames: tuple[str, ...], last: str, kind: str
) -> None:
    """A device or a device's backend the command chose, failing in that device's own
    code: bad-args naming the option; without the option the failure keeps its kind."""
    lines = [SGLANG_START, *_LOADED, "Traceback (most recent call last):", *frames, last]
    command = ["python", "-m", "sglang.launch_server", "--model-path", "/m"]
    verdict = gate(tmp_path, "sglang", lines, [*command, *option])
    assert verdict.kind == "bad-args"
    assert " ".join(option) in (verdict.hint or "")
    assert gate(tmp_path, "sglang", lines, command).kind == kind


# SGLang's lines once the weights are in: the failure is past the arguments' phase
_LOADED = (
    "[2026-12-07 13:04:53] Load weight begin. avail mem=19.20 GB",
    "[2026-12-07 13:04:53] Load weight end. elapsed=0.02 s, type=TransformersForCausalLM, "
    "avail mem=19.20 GB, mem usage=-0.00 GB.",
)


def test_a_check_naming_an_option_by_its_attribute_and_value(tmp_path: Path) -> None:
    """SGLang's NUMA binding on a CPU with one node after `--base-gpu-id 3`: the check
    says `gpu_id` and the value 3 (bad-args naming the option); another value is not
    the option's."""
    lines = [
        SGLANG_START,
        *_LOADED,
        *traceback(
            "AssertionError: NUMA index 3 (derived from the worker's global device id / "
            "gpu_id) is out of range for 1 numa nodes."
        )[1:],
    ]
    command = ["python", "-m", "sglang.launch_server", "--model-path", "/m"]
    verdict = gate(tmp_path, "sglang", lines, [*command, "--base-gpu-id", "3"])
    assert verdict.kind == "bad-args"
    assert "--base-gpu-id 3" in (verdict.hint or "")
    assert "--base-gpu-id" not in (
        gate(tmp_path, "sglang", lines, [*command, "--base-gpu-id", "2"]).hint or ""
    )


def test_a_bare_lookup_failing_in_the_module_an_option_sets_up(tmp_path: Path) -> None:
    """SGLang's `--offload-group-size 2 --offload-num-in-group 3`: a bare IndexError in
    offloader.py is the options' (bad-args naming the first); without them, not."""

    def lines() -> list[str]:
        return [
            SGLANG_START,
            "Traceback (most recent call last):",
            '  File "/venv/lib/python3.11/site-packages/sglang/srt/model_executor/'
            'model_runner.py", line 1330, in load_model',
            "    get_offloader().post_init()",
            '  File "/venv/lib/python3.11/site-packages/sglang/srt/utils/offloader.py", '
            "line 283, in post_init",
            "    self.offloaders[i].start_onload()",
            "IndexError: list index out of range",
        ]

    command = ["python", "-m", "sglang.launch_server", "--model-path", "/m"]
    given = [*command, "--offload-group-size", "2", "--offload-num-in-group", "3"]
    verdict = gate(tmp_path, "sglang", lines(), given)
    assert verdict.kind == "bad-args"
    assert "--offload-group-size 2" in (verdict.hint or "")
    assert gate(tmp_path, "sglang", lines(), command).kind != "bad-args"


def test_an_adapters_folder_given_as_the_model(tmp_path: Path) -> None:
    """vLLM given a LoRA adapter's folder as `--model`: bad-args naming it, by the folder's
    files where it is on this machine, by its path's words where it is not; a model's
    folder with the same refusal is not the option's."""
    adapter = tmp_path / "chat"
    adapter.mkdir()
    (adapter / "adapter_config.json").write_text("{}")
    model = tmp_path / "model"
    model.mkdir()
    (model / "config.json").write_text("{}")

    def refused(folder: str) -> list[str]:
        return [
            "pydantic_core._pydantic_core.ValidationError: 1 validation error for ModelConfig",
            f"  Value error, Invalid repository ID or local directory specified: '{folder}'.",
        ]

    for folder in (str(adapter), "/data/adapters/sql-lora"):
        verdict = gate(tmp_path, "vllm", refused(folder), ["vllm", "serve", "--model", folder])
        assert verdict.kind == "bad-args", folder
        assert "LoRA adapter's folder" in (verdict.hint or "")
    plain = gate(tmp_path, "vllm", refused(str(model)), ["vllm", "serve", "--model", str(model)])
    assert "LoRA" not in (plain.hint or "")


def test_llama_cpp_pythons_context_failure_quotes_the_exception_under_it(
    tmp_path: Path,
) -> None:
    """llama-cpp-python's `--n_ctx 3000000000`: the C++ constructor's `std::bad_alloc` is
    quoted (oom) over the wrapper's "Failed to create llama_context"."""
    lines = [
        "llama_context: n_ctx_seq (3000000000) > n_ctx_train (32768) -- possible training "
        "context overflow",
        "llama_init_from_model: failed to initialize the context: std::bad_alloc",
        "Traceback (most recent call last):",
        '  File "/venv/lib/python3.11/site-packages/llama_cpp/_internals.py", line 300, in '
        "__init__",
        '    raise ValueError("Failed to create llama_context")',
        "ValueError: Failed to create llama_context",
    ]
    verdict = gate(tmp_path, "llamacpp", lines, [*LCPP, "--model", "/m/a.gguf"])
    assert verdict.kind == "oom"
    assert (verdict.matched_line or "").endswith("failed to initialize the context: std::bad_alloc")


def test_a_number_option_given_something_else_in_llama_server(tmp_path: Path) -> None:
    """llama-server whose config file says `parallel = "2"`: all it prints is `stoi`, the
    conversion's exception (bad-args, quoted); a longer line with the word is not."""
    verdict = gate(tmp_path, "llamacpp", ["stoi"], [*LLAMA_SERVER, "-m", "/m/a.gguf"])
    assert verdict.kind == "bad-args"
    assert verdict.matched_line == "stoi"
    other = gate(tmp_path, "llamacpp", ["called stoi on it"], [*LLAMA_SERVER, "-m", "/m/a.gguf"])
    assert other.kind != "bad-args"


def test_a_gguf_readers_own_reason_above_its_summary(tmp_path: Path) -> None:
    """A GGUF with a key twice: the reader's `duplicate key ...` line is quoted over its
    `failed to read key-value pairs` after it."""
    lines = [
        "gguf_init_from_reader: duplicate key 'general.name' for KV pair 3",
        "gguf_init_from_reader: failed to read key-value pairs",
        "llama_model_load: error loading model: llama_model_loader: failed to load model "
        "from /m/a.gguf",
    ]
    verdict = gate(tmp_path, "llamacpp", lines, [*LLAMA_SERVER, "-m", "/m/a.gguf"])
    assert verdict.kind == "model-load"
    assert "duplicate key 'general.name'" in (verdict.matched_line or "")


def test_sglangs_warmup_thread_dying_is_a_crash(tmp_path: Path) -> None:
    """SGLang's warmup thread raising before its request (the input file
    `--debug-tensor-dump-input-file` names is missing): /health answers 503 for as long
    as the server runs, so the gate decides CRASH while it runs, quoting the thread's
    exception (bad-args, the command's path)."""
    lines = [
        SGLANG_START,
        "[2026-12-07 15:16:01] INFO:     Uvicorn running on http://127.0.0.1:39017",
        "Exception in thread Thread-1 (_wait_and_warmup):",
        "Traceback (most recent call last):",
        '  File "/venv/lib/python3.11/site-packages/sglang/srt/entrypoints/http_server.py", '
        "line 2464, in _execute_server_warmup",
        '    json_data["input_ids"] = np.load(',
        "FileNotFoundError: [Errno 2] No such file or directory: '/d/in.npy'",
    ]
    log = tmp_path / "server.log"
    log.write_text("".join(line + "\n" for line in lines))
    command = ["python", "-m", "sglang.launch_server", "--model-path", "/m"]
    given = [*command, "--debug-tensor-dump-input-file", "/d/in.npy"]
    verdict = run_log(log, engine="sglang", exit=None, timeout_s=30, command=given)
    assert verdict.status == "crash"
    assert verdict.kind == "bad-args"
    assert (verdict.matched_line or "").startswith("FileNotFoundError")


def test_a_variable_that_moves_pythons_library(tmp_path: Path) -> None:
    """`PYTHONPLATLIBDIR=lib64` where the library is under lib: Python finds no
    `encodings` (bad-args naming the variable); without it, install."""
    lines = [
        "Fatal Python error: init_fs_encoding: failed to get the Python codec of the "
        "filesystem encoding",
        "Python runtime state: core initialized",
        "ModuleNotFoundError: No module named 'encodings'",
    ]
    command = [*LCPP, "--model", "/m/a.gguf"]
    verdict = gate(tmp_path, "llamacpp", lines, ["PYTHONPLATLIBDIR=lib64", *command])
    assert verdict.kind == "bad-args"
    assert "PYTHONPLATLIBDIR=lib64" in (verdict.hint or "")
    assert gate(tmp_path, "llamacpp", lines, command).kind == "install"


def test_a_gguf_path_that_is_a_folder_on_this_machine(tmp_path: Path) -> None:
    """`--model /mnt/m.gguf` where a container's bind mount left a folder of that name:
    "failed to read magic" is the option's (bad-args); a file there is not."""
    folder = tmp_path / "m.gguf"
    folder.mkdir()
    line = "gguf_init_from_reader: failed to read magic"
    verdict = gate(tmp_path, "llamacpp", [line], [*LCPP, "--model", str(folder)])
    assert verdict.kind == "bad-args"
    assert "is a folder on this machine" in (verdict.hint or "")
    file = tmp_path / "f.gguf"
    file.write_bytes(b"")
    assert gate(tmp_path, "llamacpp", [line], [*LCPP, "--model", str(file)]).kind == "model-load"


def test_a_remote_load_format_given_a_local_folder(tmp_path: Path) -> None:
    """SGLang's `--load-format remote` with a local `--model-path`: no connector serves a
    plain path (bad-args naming the format); without the format, not."""
    lines = [SGLANG_START, *_LOADED, "ValueError: Invalid connector type: /data/m"]
    command = ["python", "-m", "sglang.launch_server", "--model-path", "/data/m"]
    verdict = gate(tmp_path, "sglang", lines, [*command, "--load-format", "remote"])
    assert verdict.kind == "bad-args"
    assert "--load-format remote" in (verdict.hint or "")
    assert "--load-format" not in (gate(tmp_path, "sglang", lines, command).hint or "")


def test_a_package_an_option_needs_is_install(tmp_path: Path) -> None:
    """ "FlexKV is not installed. Please install the FlexKV package to use
    --enable-flexkv.": install, the hint naming the option."""
    lines = [
        SGLANG_START,
        *_LOADED,
        "RuntimeError: FlexKV is not installed. Please install the FlexKV package to use "
        "--enable-flexkv.",
    ]
    command = ["python", "-m", "sglang.launch_server", "--model-path", "/m", "--enable-flexkv"]
    verdict = gate(tmp_path, "sglang", lines, command)
    assert verdict.kind == "install"
    assert "--enable-flexkv" in (verdict.hint or "")


@pytest.mark.parametrize(
    ("line", "option"),
    [
        (
            "ValueError: Model type LlamaForCausalLM is not supported for encoder "
            "disaggregation. Supported architectures: Qwen2VL, Qwen3VL",
            ["--language-only"],
        ),
        (
            "ValueError: Default modality-specific LoRA(s) were provided for a non "
            "multimodal model",
            ["--default-mm-loras", '{"image": "/a"}'],
        ),
    ],
)
def test_a_mode_the_command_asked_for_refused_for_the_model(
    tmp_path: Path, line: str, option: list[str]
) -> None:
    """A model named and refused for a mode the command asked for, or given something
    for a kind of model it is not: bad-args; a model refused for a device stays
    unsupported-model."""
    command = ["python", "-m", "sglang.launch_server", "--model-path", "/m"]
    verdict = gate(tmp_path, "sglang", [SGLANG_START, *_LOADED, line], [*command, *option])
    assert verdict.kind == "bad-args"
    device = "ValueError: Model type LlamaForCausalLM is not supported for the CPU backend."
    assert gate(tmp_path, "sglang", [SGLANG_START, *_LOADED, device], command).kind != "bad-args"


def test_a_python_childs_own_error_over_its_parents_report(tmp_path: Path) -> None:
    """vLLM's registry subprocess refused its output file: the child's `PermissionError`,
    printed under "Error raised in subprocess:", is quoted (permission) over the parent's
    `CalledProcessError`."""
    head = "(APIServer pid=7772) ERROR 12-07 15:18:12 [registry.py:1120] "
    body = [
        "Error in inspecting model architecture 'LlamaForCausalLM'",
        "Traceback (most recent call last):",
        '  File "/venv/lib/python3.11/subprocess.py", line 502, in check_returncode',
        "    raise CalledProcessError(self.returncode, self.args, self.stdout,",
        "subprocess.CalledProcessError: Command '['/venv/bin/python', '-m', "
        "'vllm.model_executor.models.registry']' returned non-zero exit status 1.",
        "",
        "The above exception was the direct cause of the following exception:",
        "",
        "Traceback (most recent call last):",
        '  File "/venv/lib/python3.11/site-packages/vllm/model_executor/models/registry.py", '
        "line 1572, in _run_in_subprocess",
        "    raise RuntimeError(",
        "RuntimeError: Error raised in subprocess:",
        "Traceback (most recent call last):",
        '  File "/venv/lib/python3.11/site-packages/vllm/model_executor/models/registry.py", '
        "line 1590, in _run",
        '    with open(output_file, "wb") as f:',
        "PermissionError: [Errno 13] Permission denied: '/t/registry_output.tmp'",
    ]
    verdict = gate(tmp_path, "vllm", [head + line for line in body], ["vllm", "serve", "/m"])
    assert verdict.kind == "permission"
    assert "PermissionError" in (verdict.matched_line or "")


def test_sigbus_is_a_mapped_file_nothing_backs(tmp_path: Path) -> None:
    """A server killed by SIGBUS (a full tmpfs under PROMETHEUS_MULTIPROC_DIR, /dev/shm):
    disk, with a hint naming /dev/shm; SIGSEGV stays a segfault."""
    log = tmp_path / "server.log"
    log.write_text("INFO: loading\n")
    verdict = run_log(log, engine="vllm", exit=-7, command=["vllm", "serve", "/m"])
    assert verdict.kind == "disk"
    assert "/dev/shm" in (verdict.hint or "")
    assert run_log(log, engine="vllm", exit=-11, command=["vllm", "serve", "/m"]).kind == (
        "segfault"
    )


def test_a_ready_line_whose_port_never_answers_times_out_saying_so(tmp_path: Path) -> None:
    """llama-server run under `unshare -n`: it says it listens, and its port refuses
    where the gate probes. Not READY: the deadline's TIMEOUT says the ready line was
    seen and nothing answered."""
    port = free_port()
    log = tmp_path / "server.log"
    log.write_text(
        f"main: server is listening on http://127.0.0.1:{port} - starting the main loop\n"
    )
    command = [*LLAMA_SERVER[:-2], "--port", str(port), "-m", "/m/a.gguf"]
    verdict = run_log(log, engine="llamacpp", exit=None, timeout_s=3, command=command)
    assert verdict.status == "timeout"
    assert "nothing answered" in verdict.reason
    assert "network namespace" in (verdict.hint or "")


def test_a_program_the_engine_runs_is_missing(tmp_path: Path) -> None:
    """vLLM's CPU build runs `lscpu` through a shell, on a service whose PATH holds only
    the venv: the shell's `lscpu: not found` far above is quoted (install) over the
    `CalledProcessError` with status 127; another status keeps the exception."""

    def lines(status: int) -> list[str]:
        return [
            "/bin/sh: 1: lscpu: not found",
            "INFO 12-07 15:59:30 [core.py:100] starting",
            "Traceback (most recent call last):",
            '  File "/venv/lib/python3.11/site-packages/vllm/platforms/cpu.py", line 88, in '
            "get_cpus",
            "    lscpu_output = subprocess.check_output(",
            "subprocess.CalledProcessError: Command 'lscpu --json --extended=CPU,CORE,NODE "
            f"--online' returned non-zero exit status {status}.",
        ]

    verdict = gate(tmp_path, "vllm", lines(127), ["vllm", "serve", "/m"])
    assert verdict.kind == "install"
    assert verdict.matched_line == "/bin/sh: 1: lscpu: not found"
    assert "CalledProcessError" in (
        gate(tmp_path, "vllm", lines(1), ["vllm", "serve", "/m"]).matched_line or ""
    )


def test_a_binary_the_install_lacks_is_install(tmp_path: Path) -> None:
    """`VLLM_USE_RUST_FRONTEND=1` on a build without `vllm-rs`: "the vllm-rs binary was
    not found at ..." is install."""
    line = (
        "FileNotFoundError: VLLM_RUST_FRONTEND_PATH=auto but the vllm-rs binary was not found "
        "at /venv/lib/python3.11/site-packages/vllm/bin/vllm-rs"
    )
    verdict = gate(tmp_path, "vllm", _vllm_worker(last=line), ["vllm", "serve", "/m"])
    assert verdict.kind == "install"


def test_the_openmp_runtime_refusing_what_its_variable_asked(tmp_path: Path) -> None:
    """`GOMP_CPU_AFFINITY=8-15` on a 2-CPU machine: libgomp's "Thread creation failed"
    is the variable's (bad-args naming it); without it, not."""
    line = "libgomp: Thread creation failed: Invalid argument"
    command = [*LLAMA_SERVER, "-m", "/m/a.gguf"]
    verdict = gate(tmp_path, "llamacpp", [line], ["GOMP_CPU_AFFINITY=8-15", *command])
    assert verdict.kind == "bad-args"
    assert "GOMP_CPU_AFFINITY=8-15" in (verdict.hint or "")
    assert gate(tmp_path, "llamacpp", [line], command).kind != "bad-args"


def test_a_connection_refused_to_what_an_option_names(tmp_path: Path) -> None:
    """vLLM's `--tool-server 127.0.0.1:55803` with no server there: the MCP client's
    refused connection, in code named for the option, is the option's (bad-args naming
    it), not the engine's peers (distributed)."""
    lines = [
        "Traceback (most recent call last):",
        '  File "/venv/lib/python3.11/site-packages/vllm/entrypoints/mcp/tool_server.py", '
        "line 24, in list_server_and_tools",
        "    async with sse_client(url=server_url) as streams:",
        '  File "/venv/lib/python3.11/site-packages/httpx/_transports/default.py", line 112, '
        "in map_httpcore_exceptions",
        "    raise mapped_exc(message) from exc",
        "httpx.ConnectError: All connection attempts failed",
    ]
    command = ["vllm", "serve", "/m"]
    verdict = gate(tmp_path, "vllm", lines, [*command, "--tool-server", "127.0.0.1:55803"])
    assert verdict.kind == "bad-args"
    assert "--tool-server 127.0.0.1:55803" in (verdict.hint or "")
    assert gate(tmp_path, "vllm", lines, command).kind != "bad-args"


def test_an_option_asking_the_models_config_for_what_it_lacks(tmp_path: Path) -> None:
    """SGLang's `--enable-return-routed-experts` on a dense model: "'LlamaConfig' object
    has no attribute 'num_experts_per_tok'" is the option's (bad-args naming it); without
    it, not."""
    lines = [
        SGLANG_START,
        *_LOADED,
        "AttributeError: 'LlamaConfig' object has no attribute 'num_experts_per_tok'",
    ]
    command = ["python", "-m", "sglang.launch_server", "--model-path", "/m"]
    verdict = gate(tmp_path, "sglang", lines, [*command, "--enable-return-routed-experts"])
    assert verdict.kind == "bad-args"
    assert "--enable-return-routed-experts" in (verdict.hint or "")
    assert "--enable" not in (gate(tmp_path, "sglang", lines, command).hint or "")


def test_a_check_listing_the_only_values_it_takes(tmp_path: Path) -> None:
    """ "Currently only ['fa3', 'triton'] attention backends are supported for
    deterministic inference, but you explicitly specified 'intel_amx'.": the command's
    choice (bad-args), whatever the words of the backends' names."""
    lines = [
        SGLANG_START,
        *_LOADED,
        "ValueError: Currently only ['ascend', 'fa3', 'fa4', 'flashinfer', 'intel_xpu', "
        "'triton'] attention backends are supported for deterministic inference, but you "
        "explicitly specified 'intel_amx'.",
    ]
    command = ["python", "-m", "sglang.launch_server", "--model-path", "/m"]
    verdict = gate(tmp_path, "sglang", lines, [*command, "--rl-on-policy-target", "fsdp"])
    assert verdict.kind == "bad-args"
    assert "only choices" in (verdict.hint or "")
