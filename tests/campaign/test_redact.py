"""Secrets in a campaign's env and command line never reach logs, the store or reports."""

from __future__ import annotations

from servegate.redact import MASK, Redactor, is_secret_name


def test_secret_names_are_whole_words() -> None:
    """HF_TOKEN and --api-key are secrets; --max-num-batched-tokens is not."""
    assert is_secret_name("HF_TOKEN")
    assert is_secret_name("OPENAI_API_KEY")
    assert is_secret_name("--api-key")
    assert is_secret_name("DB_PASSWORD")
    assert not is_secret_name("--max-num-batched-tokens")
    assert not is_secret_name("TOKENIZERS_PARALLELISM")
    assert not is_secret_name("--skip-tokenizer-init")


def test_env_and_command_are_masked_everywhere_the_secret_appears() -> None:
    """A secret from env is masked in env, in a flag value, inside other text and log lines."""
    env = {"HF_TOKEN": "hf_abcdef123", "CUDA_VISIBLE_DEVICES": "0,1"}
    argv = ["srv", "--api-key", "sk-secret-1", "--token=tok-2222", "--port", "8000"]
    redactor = Redactor.collect(envs=[env], commands=[argv])
    assert redactor.env(env) == {"HF_TOKEN": MASK, "CUDA_VISIBLE_DEVICES": "0,1"}
    assert redactor.command(argv) == ["srv", "--api-key", MASK, f"--token={MASK}", "--port", "8000"]
    assert redactor.command(["srv", "--header", "Bearer hf_abcdef123"]) == [
        "srv",
        "--header",
        f"Bearer {MASK}",
    ]
    assert redactor.lines(["loading with token hf_abcdef123", "ok"]) == [
        f"loading with token {MASK}",
        "ok",
    ]


def test_a_flag_followed_by_a_flag_hides_nothing() -> None:
    """``--enable-auth --port 1`` keeps the port: only a value after a secret flag is hidden."""
    redactor = Redactor.collect(commands=[["srv", "--enable-auth", "--port", "1"]])
    assert redactor.command(["srv", "--enable-auth", "--port", "1"]) == [
        "srv",
        "--enable-auth",
        "--port",
        "1",
    ]
