"""Secrets in a campaign's env and command line, in the inherited environment and in URLs
are masked before anything is written or printed."""

from __future__ import annotations

import pytest

from servegate.gate.verdict import DetectedBy, Status, Verdict
from servegate.redact import MASK, MIN_SECRET_LEN, Redactor, is_secret_name, scrub


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


def test_url_user_info_is_masked_wherever_it_appears() -> None:
    """``scheme://user:pass@host`` loses its user-info in text, env values and argv; an
    ssh user name without a password stays readable."""
    redactor = Redactor.collect(inherited=False)
    line = "pulling https://alice:s3cret@models.example.com/m and git+https://ghp_tok@github.com/x"
    assert redactor.text(line) == (
        f"pulling https://{MASK}@models.example.com/m and git+https://{MASK}@github.com/x"
    )
    assert redactor.env({"MODEL_URL": "redis://:pw@cache:6379/0"}) == {
        "MODEL_URL": f"redis://{MASK}@cache:6379/0"
    }
    assert redactor.command(["srv", "--source=https://u:p@h/m"]) == [
        "srv",
        f"--source=https://{MASK}@h/m",
    ]
    assert redactor.text("ssh://root@gpu-1:22 and me@example.com") == (
        "ssh://root@gpu-1:22 and me@example.com"
    )
    assert redactor.text("ssh://root:pw@gpu-1") == f"ssh://{MASK}@gpu-1"


def test_inherited_secrets_are_masked_inside_text(monkeypatch: pytest.MonkeyPatch) -> None:
    """A token exported in the shell is masked in any text; ``inherited=False`` ignores it."""
    monkeypatch.setenv("HF_TOKEN", "hf_from_the_shell_42")
    assert Redactor.collect().text("token hf_from_the_shell_42 ok") == f"token {MASK} ok"
    assert scrub({"tail": ["x hf_from_the_shell_42"]}) == {"tail": [f"x {MASK}"]}
    assert "hf_from_the_shell_42" in Redactor.collect(inherited=False).text("hf_from_the_shell_42")


def test_short_and_setting_values_are_not_searched_for(monkeypatch: pytest.MonkeyPatch) -> None:
    """Values under MIN_SECRET_LEN characters, or setting words, are masked only by name."""
    monkeypatch.setenv("AUTH_ENABLED", "1")
    monkeypatch.setenv("AUTH_MODE", "disabled")
    monkeypatch.setenv("DB_PASSWORD", "hunter")  # exactly MIN_SECRET_LEN
    assert MIN_SECRET_LEN == 6
    redactor = Redactor.collect()
    assert redactor.text("step 1 of 10, auth disabled, user hunter") == (
        f"step 1 of 10, auth disabled, user {MASK}"
    )
    assert redactor.env({"AUTH_ENABLED": "1"}) == {"AUTH_ENABLED": MASK}


def test_compound_secret_names_count() -> None:
    """ACCESSTOKEN and CLIENTSECRET are secrets; TOKENIZERS and batched-tokens are not."""
    assert is_secret_name("GH_ACCESSTOKEN")
    assert is_secret_name("AZURE_CLIENTSECRET")
    assert not is_secret_name("HF_HUB_ENABLE_HF_TRANSFER")
    assert not is_secret_name("--max-total-tokens")


def test_frozen_records_are_redacted_field_by_field(monkeypatch: pytest.MonkeyPatch) -> None:
    """A Verdict (a frozen dataclass) comes back with its reason and tail masked."""
    monkeypatch.setenv("OPENAI_API_KEY", "sk-live-abcdef")
    verdict = Verdict(
        status=Status.CRASH,
        elapsed_s=1.0,
        started_at="t0",
        decided_at="t1",
        detected_by=DetectedBy.SIGNATURE,
        reason="login refused for sk-live-abcdef",
        kind=None,
        hint=None,
        matched_line="RuntimeError: sk-live-abcdef",
        exit_code=None,
        pid=1,
        engine="generic",
        url="http://u:p@127.0.0.1:8000",
        log_path=None,
        tail=("a", "key sk-live-abcdef"),
    )
    clean = scrub(verdict)
    assert (clean.reason, clean.matched_line, clean.url, clean.tail) == (
        f"login refused for {MASK}",
        f"RuntimeError: {MASK}",
        f"http://{MASK}@127.0.0.1:8000",
        ("a", f"key {MASK}"),
    )
