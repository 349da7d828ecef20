"""The cause and kind of a crash in the shapes blind batches 2026-12-05zi..zp showed.

Each log is written by a live process that then exits, kills itself or stays alive
(tests/gate/crash_replay.py), and the real gate decides: argparse's error on any
argument, an exception that calls an option's value invalid, a model's files against an
argument, a driver's out-of-memory above the device loss it causes, Windows' access
violation, a loader's reason relayed inside a wrapper's HTTP answer, a supervisor's
line that a signal ended its child, tritonserver's model that failed to load, ggml's
``file:line: message`` before its abort, and a GPU pipeline the backend cannot build.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from tests.gate.crash_replay import TIMEOUT_S, run_log

from servegate.gate.cause import is_source_line
from servegate.gate.verdict import Verdict


def gate(tmp_path: Path, engine: str, lines: list[str], exit: int | None = 1) -> Verdict:
    """The verdict on a live process that prints ``lines`` and ends as ``exit`` says."""
    log = tmp_path / "server.log"
    log.write_text("".join(line + "\n" for line in lines))
    return run_log(log, engine=engine, exit=exit)


def test_argparses_error_on_an_argument_is_bad_args_whatever_its_message(
    tmp_path: Path,
) -> None:
    """``PROG: error: argument --x/-y: MESSAGE`` with a type converter's message (not
    argparse's own ``invalid ...``) is still the command line's error."""
    cause = (
        'vllm serve: error: argument --speculative-config/-sc: Value {{"method": "x"}} '
        "cannot be converted to <function loads at 0xe96cbb0ed4e0>."
    )
    lines = ["usage: vllm serve [model_tag] [options]", cause]
    verdict = gate(tmp_path, "vllm", lines, exit=2)
    assert (verdict.status, verdict.kind, verdict.matched_line) == ("crash", "bad-args", cause)


@pytest.mark.parametrize(
    "cause",
    [
        "KeyError: 'invalid tool call parser: openai (chose from { deepseek_v3, hermes })'",
        "ValueError: Invalid reasoning backend 'xgrammar2'",
        "ValueError: foo is not available (choose from a, b, c)",
    ],
)
def test_an_exception_that_calls_an_options_value_invalid_is_bad_args(
    tmp_path: Path, cause: str
) -> None:
    """An exception whose message says a named option's value is invalid, or lists the
    values to choose from, asks for another value: ``bad-args``."""
    lines = [
        "Traceback (most recent call last):",
        '  File "/app/vllm/entrypoints/openai/api_server.py", line 1460, in validate',
        '    raise KeyError(f"invalid tool call parser: {name}")',
        cause,
    ]
    verdict = gate(tmp_path, "vllm", lines)
    assert (verdict.kind, verdict.matched_line) == ("bad-args", cause)


def test_a_model_config_against_an_argument_is_the_arguments_fault(tmp_path: Path) -> None:
    """What the model's files say against what an argument says (the checkpoint's
    quantization and ``--quantization``): the argument must change, whatever frame
    (``get_model_config``) raised it."""
    cause = (
        "ValueError: Quantization method specified in the model config (compressed-tensors) "
        "does not match the quantization method specified in the `quantization` argument (awq)."
    )
    lines = [
        "Traceback (most recent call last):",
        '  File "/sgl/srt/server_args.py", line 6735, in get_model_config',
        "    self.model_config = ModelConfig.from_server_args(self)",
        '  File "/sgl/srt/configs/model_config.py", line 1129, in _verify_quantization',
        "    raise ValueError(",
        cause,
    ]
    verdict = gate(tmp_path, "sglang", lines)
    assert (verdict.kind, verdict.matched_line) == ("bad-args", cause)


def test_a_drivers_out_of_memory_is_the_root_of_the_device_it_lost(tmp_path: Path) -> None:
    """RADV's ``Not enough memory for command submission``, then llama.cpp's loader's
    ``vk::Queue::submit: ErrorDeviceLost``: the lost device is the consequence."""
    root = ".radv/amdgpu: Not enough memory for command submission."
    lines = [
        "load_tensors:      Vulkan0 model buffer size = 72207.88 MiB",
        root,
        "llama_model_load: error loading model: vk::Queue::submit: ErrorDeviceLost",
        "llama_model_load_from_file_impl: failed to load model",
        "main: exiting due to model loading error",
    ]
    verdict = gate(tmp_path, "llamacpp", lines)
    assert (verdict.kind, verdict.matched_line) == ("oom", root)


def test_a_lost_device_alone_stays_a_device_error(tmp_path: Path) -> None:
    """Without a line that says memory ran out, the Vulkan call's error is the cause."""
    cause = "llama_model_load: error loading model: vk::Queue::submit: ErrorDeviceLost"
    lines = ["load_tensors:      Vulkan0 model buffer size = 7207.88 MiB", cause]
    verdict = gate(tmp_path, "llamacpp", lines)
    assert (verdict.kind, verdict.matched_line) == ("cuda-error", cause)


@pytest.mark.parametrize(
    "status",
    ["0xc0000005", "0xC0000005", "3221225477", "STATUS_ACCESS_VIOLATION"],
)
def test_windows_access_violation_is_a_segfault(tmp_path: Path, status: str) -> None:
    """A wrapper that quotes its child's Windows exit status of an access violation
    (not the install family's ``exit status N`` of a failed build)."""
    cause = (
        "Failed to generate a response: error response: status=500 body=unable to load "
        "runner: error waiting for runner to be ready: llama.cpp terminated unexpectedly: "
        f"llama.cpp exit status: exit status {status}"
    )
    verdict = gate(tmp_path, "llamacpp", ["docker model run ai/gemma3", cause])
    assert (verdict.kind, verdict.matched_line) == ("segfault", cause)


def test_the_loaders_reason_inside_a_relayed_answer_is_the_root_of_its_generic_line(
    tmp_path: Path,
) -> None:
    """A wrapper relays llama-server's stderr inside its HTTP answer (``status=500
    body=... error loading model: illegal split file idx: 3``); llama.cpp's generic
    ``failed to load model`` that follows is its consequence."""
    root = (
        "Failed to generate a response: error response: status=500 body=unable to load "
        "runner: llama.cpp failed: llama_model_load: error loading model: illegal split "
        "file idx: 3 (file: /m/model-00004-of-00004.gguf), model must be loaded with the "
        "first split"
    )
    lines = [
        root,
        "llama_model_load_from_file_impl: failed to load model",
        "main: exiting due to model loading error",
    ]
    verdict = gate(tmp_path, "llamacpp", lines)
    assert (verdict.kind, verdict.matched_line) == ("model-load", root)


@pytest.mark.parametrize(
    ("what", "exit", "kind"),
    [("terminated", -15, "exit"), ("killed", -9, "killed"), ("segmentation fault", 1, "segfault")],
)
def test_a_supervisors_line_that_a_signal_ended_its_child_is_the_cause(
    tmp_path: Path, what: str, exit: int, kind: str
) -> None:
    """Go's ``cmd.Wait() returned error: signal: X`` (llama-swap), at DEBUG level: the
    line that says how the child ended, with the signal's kind."""
    cause = f"[DEBUG] <qwen3-8b> cmd.Wait() returned error: signal: {what}"
    lines = [
        "[DEBUG] <qwen3-8b> Health check error on http://localhost:5805/health, "
        "status code: 503 (normal during startup)",
        cause,
        "[DEBUG] <qwen3-8b> Process stopped OK",
        "[INFO] <qwen3-8b> process exited but not StateStopping, current state: starting",
    ]
    verdict = gate(tmp_path, "llamacpp", lines, exit=exit)
    assert (verdict.kind, verdict.matched_line) == (kind, cause)


def test_tritonservers_model_that_failed_to_load_is_the_root_of_its_ensemble(
    tmp_path: Path,
) -> None:
    """``Model 'x' loading failed with error: ...`` is the root; the ensemble that
    ``depends on 'x' which has no loaded version``, its consequence; both model-load."""
    root = (
        "E0410 10:00:00.000000 1 model_lifecycle.cc:654] Model 'encoders' loading failed "
        "with error: version 1 is at UNAVAILABLE state: Internal: Stub process "
        "'encoders_0_0' is not healthy."
    )
    lines = [
        root,
        "E0410 10:00:00.100000 1 model_repository_manager.cc:703] Invalid argument: "
        "ensemble 'ensemble' depends on 'encoders' which has no loaded version.",
    ]
    verdict = gate(tmp_path, "trtllm", lines)
    assert (verdict.kind, verdict.matched_line) == ("model-load", root)


def test_ggmls_source_line_before_its_abort_is_the_cause(tmp_path: Path) -> None:
    """GGML_ABORT's ``clip.cpp:4391: Unknown projector type`` (the file, the line, the
    message), then ``ggml_abort`` and a wrapper's SIGABRT exit: the message says what
    failed, and its words give the kind."""
    cause = "tools/mtmd/clip.cpp:4391: Unknown projector type"
    lines = [
        cause,
        "ggml_abort",
        "  → clip_graph::clip_graph",
        "llama.cpp exited with error code ExitStatus(unix_wait_status(6))   # SIGABRT",
    ]
    verdict = gate(tmp_path, "llamacpp", lines, exit=-6)
    assert (verdict.kind, verdict.matched_line) == ("unsupported-model", cause)


def test_ggmls_source_line_gives_way_to_the_root_above_it(tmp_path: Path) -> None:
    """ggml's ``ggml-cuda.cu:97: ROCm error`` only repeats the runtime's error: the
    driver's own line above it is the root."""
    root = (
        ".....:0:rocdevice.cpp            :3587: 1012355198 us:  Callback: Queue "
        "0x7cb113a00000 aborting with error : HSA_STATUS_ERROR_EXCEPTION: An HSAIL "
        "operation resulted in a hardware exception. code: 0x1016"
    )
    lines = [root, "/llama.cpp/ggml/src/ggml-cuda/ggml-cuda.cu:97: ROCm error", "ggml_abort"]
    verdict = gate(tmp_path, "llamacpp", lines, exit=-6)
    assert (verdict.kind, verdict.matched_line) == ("cuda-error", root)


def test_a_gpu_pipeline_the_backend_cannot_build_is_cuda_arch(tmp_path: Path) -> None:
    """Metal's ``failed to compile pipeline:`` then ``Function kernel_... was not found
    in the library``: a kernel this GPU generation lacks, quoted at the failing line
    (the lines below it only name the kernel)."""
    cause = "ggml_metal_library_compile_pipeline: failed to compile pipeline:"
    lines = [
        cause,
        "base = 'kernel_mul_mv_ext_bf16_f32_r1_2',",
        "name = 'kernel_mul_mv_ext_bf16_f32_r1_2_nsg=2_nxpsg=16'",
        "ggml_metal_library_compile_pipeline: Function kernel_mul_mv_ext_bf16_f32_r1_2",
        "was not found in the library",
    ]
    verdict = gate(tmp_path, "llamacpp", lines, exit=-6)
    assert (verdict.kind, verdict.matched_line) == ("cuda-arch", cause)


def test_a_wrappers_line_that_the_server_failed_to_run_ends_the_wait(tmp_path: Path) -> None:
    """GPUStack's worker says it could not run the server, and why, and keeps running
    itself (indented as a paste left it: no traceback's source line reads so): CRASH on
    sight, its kind from the words after the colon (a program not there: install)."""
    cause = (
        "      Failed to run the vllm server: [Errno 2] No such file or directory: "
        "'/usr/local/bin/vllm'"
    )
    verdict = gate(tmp_path, "vllm", [cause], exit=None)
    assert (verdict.status, verdict.detected_by) == ("crash", "signature")
    assert (verdict.kind, verdict.matched_line) == ("install", cause.strip())


def test_a_wrapper_that_says_it_will_try_again_is_no_crash(tmp_path: Path) -> None:
    """A launcher whose failure line says it retries is not done: the gate waits on, to
    its deadline here (a live process that prints nothing more)."""
    log = tmp_path / "server.log"
    log.write_text("Failed to start the vllm server: connection refused, retrying in 5 s\n")
    verdict = run_log(log, engine="vllm", exit=None, timeout_s=TIMEOUT_S)
    assert (verdict.status, verdict.kind) == ("timeout", "deadline"), verdict


@pytest.mark.parametrize(
    "line",
    [
        "      Failed to run the vllm server: [Errno 2] No such file or directory: 'x'",
        "      Could not start the engine: [Errno 2] No such file or directory: 'x'",
    ],
)
def test_an_indented_failure_sentence_is_no_source_line(line: str) -> None:
    """A paste's indentation does not make a sentence that says something failed a
    traceback's source line (no language's code reads so); code stays source."""
    assert not is_source_line(line)
    assert is_source_line('      raise RuntimeError(f"Failed to run the {name} server: {e}")')


@pytest.mark.parametrize(
    ("cause", "kind"),
    [
        # Lemonade on Windows: the status of a fail-fast abort, as a signed number
        ("[ERROR] llama-server process has terminated with exit code: -1073740791", "abort"),
        # Tabby's supervisor at WARN: no status that names why
        (
            " WARN llama_cpp_server::supervisor: crates/llama-cpp-server/src/supervisor.rs:99: "
            "llama-server <embedding> exited with status code -1",
            "child-exit",
        ),
        # Unsloth Studio: the server crashed, said in the wrapper's own words
        (
            "[studio] llama-server crashed at startup on both the vision and text-only attempts",
            "child-exit",
        ),
        # Jan on Windows: Rust's ExitStatus of an illegal instruction (SIGILL's bare exit)
        (
            "Failed to load llama-server: llamacpp error: Process exited with code "
            "ExitStatus(ExitStatus(3221225501))",
            "exit",
        ),
    ],
)
def test_a_supervisor_that_says_its_server_ended_with_a_code_ends_the_wait(
    tmp_path: Path, cause: str, kind: str
) -> None:
    """A supervisor that keeps running says the server process it runs ended with a code:
    CRASH on sight (no deadline), its kind from the code's words where they name one."""
    verdict = gate(tmp_path, "llamacpp", [cause], exit=None)
    assert (verdict.status, verdict.detected_by) == ("crash", "signature")
    assert (verdict.kind, verdict.matched_line) == (kind, cause.strip())


@pytest.mark.parametrize(
    ("engine", "line", "kind"),
    [
        # SGLang through GPUStack: the metrics port was held by another process
        (
            "sglang",
            "ValueError: metrics_port at 40290 is not available in 30 seconds. metrics_port "
            "is used by a process already.",
            "port-in-use",
        ),
        # llama-swap's --listen without a host:port (Go's net package)
        (
            "llamacpp",
            "2025/07/03 14:41:53 Fatal server error: listen tcp: address 8000: missing port "
            "in address",
            "bad-args",
        ),
    ],
)
def test_a_port_taken_or_an_address_without_one(
    tmp_path: Path, engine: str, line: str, kind: str
) -> None:
    """A port another process holds is port-in-use; an address with no port, bad-args."""
    verdict = gate(tmp_path, engine, ["starting", line], exit=1)
    assert (verdict.kind, verdict.matched_line) == (kind, line)
    assert "judged" not in verdict.reason  # a rule's words, not a likelihood


def test_a_go_supervisors_exit_status_quotes_the_loaders_line_above(tmp_path: Path) -> None:
    """llama-swap relays its child's output, then says the child exited (Go's ExitError)
    and keeps serving: CRASH, and the dynamic loader's line above is why (install)."""
    cause = (
        "llama-swap  | /app/llama-server: error while loading shared libraries: libmtmd.so.0: "
        "cannot open shared object file: No such file or directory"
    )
    lines = [
        'llama-swap  | [INFO] Request 172.28.0.1 "GET /v1/models HTTP/1.1" 200 4223',
        cause,
        "llama-swap  | [WARN] <m> ExitError >> exit status 127, exit code: 127",
        "llama-swap  | [INFO] <m> process exited but not StateStopping, current state: starting",
    ]
    verdict = gate(tmp_path, "llamacpp", lines, exit=None)
    assert (verdict.status, verdict.kind, verdict.matched_line) == ("crash", "install", cause)


def test_a_color_eyre_panic_is_quoted_with_its_message(tmp_path: Path) -> None:
    """color-eyre prints a panic's message on the line after its header: the two are one
    line, read for its words (permission), and a flag in the message (``--log-disable``)
    does not say the program goes on."""
    lines = [
        "The application panicked (crashed).",
        'Message:  Failed to start llama-server with command Command { std: "llama-server" '
        '"--log-disable" }: Permission denied (os error 13)',
        "Location: crates/llama-cpp-server/src/supervisor.rs:80",
    ]
    verdict = gate(tmp_path, "llamacpp", lines, exit=101)
    assert verdict.kind == "permission"
    assert verdict.matched_line == f"{lines[0]} {lines[1]}"


@pytest.mark.parametrize(
    ("line", "kind"),
    [
        (
            "openai_harmony.HarmonyError: error downloading or loading vocab file: failed to "
            "download or load vocab file",
            "download",
        ),
        (
            "ValueError: There is no module or parameter named 'lm_head.input_scale' in "
            "Qwen3_5MoeForCausalLM.",
            "model-load",
        ),
        (
            "ValueError: Chunked MM input disabled but max_tokens_per_mm_item (2496) is larger "
            "than max_num_batched_tokens (2048). Please increase max_num_batched_tokens.",
            "bad-args",
        ),
    ],
)
def test_a_failed_download_a_weight_with_no_place_and_two_options_apart(
    tmp_path: Path, line: str, kind: str
) -> None:
    """A download that says it failed is download (over the vocabulary it fetched); a
    checkpoint's tensor the model has no parameter for is model-load; one option's value
    against another's is bad-args. By the rules' words, not judged."""
    verdict = gate(tmp_path, "vllm", ["INFO starting", line], exit=1)
    assert (verdict.kind, verdict.matched_line) == (kind, line)
    assert "judged" not in verdict.reason
