"""Secret redaction for everything a campaign writes: logs, the store, reports.

A token given in a campaign's ``env`` (``HF_TOKEN``, ``OPENAI_API_KEY``, ...) or on the
command line (``--api-key sk-...``) must never reach the database or a report that is
pasted into a pull request. A ``Redactor`` is built once from the campaign's commands and
environments and then applied to whatever is about to be written.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass

__all__ = ["MASK", "Redactor", "is_secret_name"]

MASK = "***"

# words that mark an environment variable or a flag as holding a secret: HF_TOKEN,
# OPENAI_API_KEY, --api-key; whole words, so --max-num-batched-tokens is not one
_SECRET_WORDS = frozenset(
    {"token", "key", "apikey", "secret", "password", "passwd", "credential", "credentials", "auth"}
)
# values shorter than this are not searched for inside other text (too many false hits)
_MIN_SECRET_LEN = 4


def is_secret_name(name: str) -> bool:
    """Whether an environment variable or flag called ``name`` holds a secret."""
    return any(word in _SECRET_WORDS for word in re.split(r"[-_.\s]+", name.lower()))


@dataclass(frozen=True, slots=True, kw_only=True)
class Redactor:
    """Masks secret values wherever they appear."""

    secrets: frozenset[str]

    @classmethod
    def collect(
        cls, *, envs: Iterable[Mapping[str, str]] = (), commands: Iterable[Sequence[str]] = ()
    ) -> Redactor:
        """A redactor for the secrets found in these environments and argument lists."""
        found: set[str] = set()
        for env in envs:
            found.update(value for key, value in env.items() if is_secret_name(key) and value)
        for argv in commands:
            found.update(value for _, value in _secret_args(argv) if value)
        return cls(secrets=frozenset(found))

    def env(self, env: Mapping[str, str]) -> dict[str, str]:
        """``env`` with secret values masked (by name, and any known secret inside)."""
        return {
            key: MASK if is_secret_name(key) and value else self.text(value)
            for key, value in env.items()
        }

    def command(self, argv: Sequence[str]) -> list[str]:
        """``argv`` with the values of secret flags and any known secret masked."""
        out = [self.text(token) for token in argv]
        for index, _ in _secret_args(argv):
            token = out[index]
            out[index] = token.split("=", 1)[0] + "=" + MASK if "=" in token else MASK
        return out

    def text(self, text: str) -> str:
        """``text`` with every known secret replaced by the mask."""
        for secret in sorted(self.secrets, key=len, reverse=True):
            if len(secret) >= _MIN_SECRET_LEN:
                text = text.replace(secret, MASK)
        return text

    def lines(self, lines: Iterable[str]) -> list[str]:
        """Each line passed through ``text``."""
        return [self.text(line) for line in lines]


def _secret_args(argv: Sequence[str]) -> list[tuple[int, str]]:
    """(index of the token holding the value, value) for ``--api-key X`` and ``--token=X``."""
    found: list[tuple[int, str]] = []
    for index, token in enumerate(argv):
        if not token.startswith("-"):
            continue
        flag, eq, value = token.partition("=")
        if not is_secret_name(flag.lstrip("-")):
            continue
        if eq:
            found.append((index, value))
        elif index + 1 < len(argv) and not argv[index + 1].startswith("-"):
            found.append((index + 1, argv[index + 1]))
    return found
