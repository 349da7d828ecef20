"""Secrets kept out of the store: environment values and command-line values by name.

The runner redacts before it calls the store; the store redacts again, because a token
written into a database file is copied along with every report made from it.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence

REDACTED = "***"

# Names of variables and flags whose values are secrets (HF_TOKEN, OPENAI_API_KEY,
# --api-key, AWS_SECRET_ACCESS_KEY, DB_PASSWORD, ...).
_SECRET = re.compile(r"(token|secret|passw|api[_-]?key|access[_-]?key|credential|auth)", re.I)


def is_secret_name(name: str) -> bool:
    """Whether a variable or flag name looks like it holds a secret."""
    return bool(_SECRET.search(name))


def redact_env(env: Mapping[str, str]) -> dict[str, str]:
    """A copy of ``env`` with the values of secret-looking names replaced by ``***``."""
    return {key: (REDACTED if is_secret_name(key) else str(value)) for key, value in env.items()}


def redact_command(command: Sequence[str]) -> list[str]:
    """A copy of an argument list with the values of secret-looking flags replaced.

    Handles ``--api-key VALUE`` and ``--api-key=VALUE``.
    """
    out: list[str] = []
    hide_next = False
    for arg in command:
        text = str(arg)
        if hide_next:
            out.append(REDACTED)
            hide_next = False
            continue
        if text.startswith("-"):
            flag, sep, _value = text.partition("=")
            if is_secret_name(flag):
                if sep:
                    out.append(f"{flag}={REDACTED}")
                else:
                    out.append(text)
                    hide_next = True
                continue
        out.append(text)
    return out
