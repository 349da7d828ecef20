"""``servegate sim``: serve a simulated inference engine.

Every flag defaults to None here so that a ``--profile`` can set it; the defaults that
apply when neither does are `servegate.sim.config.DEFAULTS`, shown in each help.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import click

from servegate.cli.options import examples
from servegate.sim.config import DEFAULTS, ENGINES, check_engine

__all__ = ["sim"]


def _default(key: str) -> str:
    """``[default: VALUE]`` for a flag whose value falls back to ``DEFAULTS[key]``."""
    value = DEFAULTS[key]
    return f"[default: {value:g}]" if isinstance(value, float) else f"[default: {value}]"


class _SimulatedEngine(click.Choice[str]):
    """The simulated engines as a choice; an unknown name is the simulator's one-sentence
    usage error (naming the choices), not click's usage block."""

    def convert(self, value: Any, param: click.Parameter | None, ctx: click.Context | None) -> Any:
        if isinstance(value, str):
            check_engine(value)
        return super().convert(value, param, ctx)


@click.command(
    "sim",
    context_settings={"help_option_names": ["-h", "--help"], "max_content_width": 100},
    epilog=examples(
        "servegate sim --engine vllm --port 8123 --profile fast",
        "servegate sim --engine sglang --port 30000 --fail oom --fail-at load_weights",
        "servegate sim --engine vllm --port 8123 --spec-accept-length 2.5 --itl-ms 12",
        "servegate sim --port 30000 --regimes 1.0:0.7,0.85:0.3 --start-counter starts.txt",
        "servegate sim --engine vllm --phase jit_compile=40 --work jit_compile=cpu",
        "servegate sim --phase download=20 --work download=disk --fail hang --fail-at kv_cache",
        "servegate sim --mem-fraction-static 0.94 --quantization fp8 --attention-backend fa3",
    ),
)
@click.option(
    "--engine",
    type=_SimulatedEngine(ENGINES),
    help=f"The engine to simulate {_default('engine')}",
)
@click.option("--port", type=int, help="Port to serve on [default: the engine profile's]")
@click.option("--host", help=f"Address to bind {_default('host')}")
@click.option("--model", help=f"Served model name {_default('model')}")
@click.option("--profile", help="A shipped profile (fast, big-8gpu) or a TOML file.")
@click.option(
    "--startup",
    type=float,
    help=f"Seconds from start to ready, spread over phases {_default('startup')}",
)
@click.option(
    "--phase",
    "phases",
    multiple=True,
    metavar="NAME=S",
    help="Exact seconds of one phase (repeatable), e.g. capture_cuda_graphs=5.",
)
@click.option(
    "--work",
    "work",
    multiple=True,
    metavar="PHASE=KIND",
    help="Real work during a phase (repeatable), silent unless the phase prints: cpu "
    "(a compile burning one core) or disk (a download reading from disk), "
    "e.g. jit_compile=cpu, download=disk.",
)
@click.option(
    "--time-scale",
    type=float,
    help=f"Multiply every startup duration (0.01: 100x faster) {_default('time_scale')}",
)
@click.option(
    "--fail",
    help="oom, nccl, cuda-arch, port-in-use, traceback-exit, silent-exit, "
    "hang, child-death, stall, crash-after-ready or engine-dead.",
)
@click.option(
    "--fail-at",
    metavar="PHASE|SECONDS|Nreq",
    help="Where the failure happens: a phase, or seconds since start "
    "(since READY for crash-after-ready and engine-dead, or with the Nth generation "
    "request: 3req).",
)
@click.option(
    "--ttft-ms",
    type=float,
    help=f"Time to first token on an idle engine (ms) {_default('ttft_ms')}",
)
@click.option(
    "--prefill-tok-s",
    type=float,
    help=f"Prefill speed, tokens/s (0: prompts cost nothing) {_default('prefill_tok_s')}",
)
@click.option(
    "--itl-ms",
    type=float,
    help=f"Decode step time with one running request (ms) {_default('itl_ms')}",
)
@click.option(
    "--batch-slowdown",
    type=float,
    help="Extra step time per additional running request, as a fraction "
    f"{_default('batch_slowdown')}",
)
@click.option(
    "--max-running",
    type=int,
    help=f"Requests decoded at once; the rest wait {_default('max_running')}",
)
@click.option(
    "--spec-accept-length",
    type=float,
    help=f"Speculative decoding: mean tokens per step (1: off) {_default('spec_accept_length')}",
)
@click.option(
    "--spec-draft-tokens",
    type=int,
    help="Draft tokens proposed per step [default: the acceptance length - 1, rounded up]",
)
@click.option(
    "--jitter",
    type=float,
    help=f"Relative noise on every duration (0.05 = 5 %) {_default('jitter')}",
)
@click.option(
    "--seed", type=int, help=f"Seed of the noise and the output lengths {_default('seed')}"
)
@click.option(
    "--regimes",
    metavar="SPEED:P,...",
    help="Each start runs at one of these speed factors with its probability, "
    "e.g. 1.0:0.7,0.85:0.3 (durations are divided by the factor).",
)
@click.option(
    "--instance-sd",
    type=float,
    help="Each start draws a lognormal speed factor with mean 1 and this log-sd "
    "(0.05: starts differ by about 5 %) " + _default("instance_sd"),
)
@click.option(
    "--start-counter",
    type=click.Path(dir_okay=False, path_type=Path),
    help="File counting starts: each start's speed is drawn from --seed and its number "
    "(reproducible); without it, from os.urandom.",
)
@click.option(
    "--max-model-len",
    type=int,
    help=f"Context length; longer requests get HTTP 400 {_default('max_model_len')}",
)
@click.option("--tp", type=int, help=f"Tensor-parallel ranks (child processes) {_default('tp')}")
@click.option(
    "--error-rate",
    type=float,
    help=f"Fraction of completions answered with HTTP 500 {_default('error_rate')}",
)
@click.option(
    "--stall-stream-after",
    type=int,
    metavar="N",
    help="Streams stop sending after N tokens and stay open.",
)
@click.option(
    "--record-file",
    "record",
    type=click.Path(dir_okay=False, path_type=Path),
    metavar="FILE",
    help="Append one JSON line of server-side timings per finished request to FILE.",
)
@click.option(
    "--health-check-timeout",
    type=float,
    help="Seconds SGLang's /health waits before a 503 once its scheduler is dead "
    f"{_default('health_check_timeout')}",
)
@click.option(
    "--kv-blocks",
    type=int,
    metavar="N",
    help="KV capacity in blocks: running requests hold blocks, the rest cache prefixes, and "
    "a request that needs a block when none is free preempts the newest [default: 417,792 "
    "tokens' worth]",
)
@click.option(
    "--block-size",
    type=int,
    metavar="TOKENS",
    help="Tokens per KV block, the prefix cache's unit [default: 16; SGLang: 1]",
)
@click.option(
    "--prefix-cache/--no-prefix-cache",
    default=None,
    help="Reuse the KV blocks of cached prompt prefixes (hits skip prefill) [default: on]",
)
@click.option(
    "--tokenizer",
    type=click.Path(exists=True, path_type=Path),
    help="A tokenizer.json (or its folder, with tokenizer_config.json's chat_template) for "
    "prompt counts and /tokenize; needs servegate[tokens] [default: one token per word]",
)
@click.option(
    "--mem-fraction-static",
    type=float,
    help="SGLang's share of GPU memory for weights and KV cache: higher holds more requests "
    "at once, too high fails out of memory while capturing CUDA graphs (docs/sim.md, the "
    "tuning surface) [default: 0.88 once a tuning flag is given]",
)
@click.option(
    "--cuda-graph-max-bs",
    type=int,
    metavar="N",
    help="CUDA graphs up to batch N: faster decode steps up to N running, a longer "
    "capture at startup, more memory [default: 160 once a tuning flag is given]",
)
@click.option(
    "--chunked-prefill-size",
    type=int,
    metavar="TOKENS",
    help="Prefill chunk: smaller gives a slower first token, larger slower decode steps "
    "[default: 8192 once a tuning flag is given]",
)
@click.option(
    "--attention-backend",
    help="fa3, flashinfer, triton or torch_native: each its own speed; flashinfer and "
    "triton JIT-compile on a cold cache [default: flashinfer once a tuning flag is given]",
)
@click.option(
    "--quantization",
    help="fp8 halves the weights and the activation memory, a little faster, a slower "
    "load [default: none]",
)
@click.option(
    "--model-params-b",
    type=float,
    help="Simulated model size, billions of parameters, for the tuning flags' memory [default: 8]",
)
@click.option(
    "--gpu-memory-gb",
    type=float,
    help="Simulated GPU memory (GiB) for the tuning flags [default: 80]",
)
@click.option("--list-profiles", is_flag=True, help="Print the shipped profiles and exit.")
def sim(
    phases: tuple[str, ...],
    work: tuple[str, ...],
    list_profiles: bool,
    profile: str | None,
    **flags: Any,
) -> None:
    """Serve a simulated SGLang, vLLM or llama.cpp: its startup log, probes, failures,
    OpenAI-compatible streaming API and Prometheus metrics, with no GPU.

    The startup log goes to stdout, one flushed line at a time. Exit codes: 0 after
    SIGTERM or SIGINT; 2 for a bad flag or profile; otherwise what the simulated
    engine exits with when it fails (SGLang's failures end by SIGKILL, as SGLang's do).
    """
    from servegate.sim.config import parse_phase, parse_work, resolve, shipped_profiles
    from servegate.sim.lifecycle import run

    if list_profiles:
        for name in shipped_profiles():
            click.echo(name)
        return
    flags["phases"] = dict(parse_phase(text) for text in phases) if phases else None
    flags["work"] = dict(parse_work(text) for text in work) if work else None
    config = resolve(profile=profile, flags=flags)
    code = run(config)
    raise SystemExit(code)
