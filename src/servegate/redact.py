"""Secret redaction for everything servegate writes or prints.

A token given in a campaign's ``env`` (``HF_TOKEN``, ``OPENAI_API_KEY``, ...), passed on the
command line (``--api-key sk-...``), or simply exported in the shell and inherited by the
server must never reach the database, a state file, a progress line or a report that is
pasted into a pull request. A server often echoes such values at start, so secret VALUES
are masked wherever they occur, not only in ``KEY=value`` forms.

A ``Redactor`` is built from the environments and argument lists in play (the inherited
environment is always included) and then applied to whatever is about to be written:

    redactor = Redactor.collect(envs=[env], commands=[argv])
    redactor.text("loading with hf_abc...")   # -> "loading with ***"

What is masked:

- the value of every variable whose name holds one of the words TOKEN, KEY, SECRET,
  PASSWORD, PASSWD, CREDENTIAL(S) or AUTH (``HF_TOKEN``, ``OPENAI_API_KEY``; whole words,
  so ``TOKENIZERS_PARALLELISM`` is not one; ``ACCESSTOKEN``-like compounds count too), and
  of every such flag (``--api-key X``, ``--token=X``);
- those values wherever they appear inside other text, when they are at least
  ``MIN_SECRET_LEN`` (6) characters long and not a plain setting word such as ``true`` or
  ``disabled`` (masking ``1`` everywhere would destroy every log line, and a value that
  short protects nothing);
- the user-info of every URL: ``https://user:pass@host`` becomes ``https://***@host``.
  A bare user name on ``ssh://`` (no password: ssh authenticates with keys) is kept, so
  ``ssh://root@gpu-1`` stays readable.
"""

from __future__ import annotations

import dataclasses
import os
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, TypeVar

__all__ = ["MASK", "MIN_SECRET_LEN", "Redactor", "is_secret_name", "scrub"]

MASK = "***"

# words that mark an environment variable or a flag as holding a secret: HF_TOKEN,
# OPENAI_API_KEY, --api-key; whole words, so --max-num-batched-tokens is not one
_SECRET_WORDS = frozenset(
    {"token", "key", "apikey", "secret", "password", "passwd", "credential", "credentials", "auth"}
)
# endings that make a compound word a secret too: ACCESSTOKEN, CLIENTSECRET, DBPASSWORD
_SECRET_ENDINGS = ("token", "secret", "password", "passwd", "apikey", "credentials")
# values shorter than this are not searched for inside other text (too many false hits)
MIN_SECRET_LEN = 6
# setting words that secret-named variables often hold (AUTH_ENABLED=true): not secrets
_SETTING_WORDS = frozenset(
    {"true", "false", "enabled", "disabled", "default", "none", "null", "required", "optional"}
)
# scheme://userinfo@ ; userinfo stops at whitespace, '/', '?', '#', '@' and quotes
_URL_USERINFO = re.compile(
    r"(?P<scheme>\b[A-Za-z][A-Za-z0-9+.\-]*://)(?P<userinfo>[^\s/?#@\"'<>]+)@(?=[^\s@])"
)

T = TypeVar("T")


def is_secret_name(name: str) -> bool:
    """Whether an environment variable or flag called ``name`` holds a secret."""
    words = [word for word in re.split(r"[-_.\s]+", name.lower()) if word]
    return any(word in _SECRET_WORDS or word.endswith(_SECRET_ENDINGS) for word in words)


def _searchable(value: str) -> bool:
    """Whether ``value`` is worth masking wherever it appears (long, not a setting word)."""
    return len(value) >= MIN_SECRET_LEN and value.strip().lower() not in _SETTING_WORDS


def _mask_userinfo(match: re.Match[str]) -> str:
    scheme, userinfo = match.group("scheme"), match.group("userinfo")
    if ":" not in userinfo and scheme.lower() in ("ssh://", "sftp://"):
        return match.group(0)
    return f"{scheme}{MASK}@"


def mask_urls(text: str) -> str:
    """``text`` with the user-info of every URL masked."""
    if "://" not in text:
        return text
    return _URL_USERINFO.sub(_mask_userinfo, text)


@dataclass(frozen=True, slots=True, kw_only=True)
class Redactor:
    """Masks secret values (and URL credentials) wherever they appear."""

    secrets: frozenset[str]

    @classmethod
    def collect(
        cls,
        *,
        envs: Iterable[Mapping[str, str]] = (),
        commands: Iterable[Sequence[str]] = (),
        inherited: bool = True,
    ) -> Redactor:
        """A redactor for the secrets in these environments and argument lists.

        ``inherited``: also the secrets of this process's own environment, which every
        server it starts inherits (a token exported in the shell).
        """
        found: set[str] = set()
        for env in [os.environ, *envs] if inherited else envs:
            found.update(value for key, value in env.items() if is_secret_name(key) and value)
        for argv in commands:
            found.update(value for _, value in _secret_args(argv) if value)
        # a secret inside a URL is masked as user-info already; keep the value too
        return cls(secrets=frozenset(value for value in found if _searchable(value)))

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
        """``text`` with every known secret and every URL's user-info masked."""
        for secret in sorted(self.secrets, key=len, reverse=True):
            if secret in text:
                text = text.replace(secret, MASK)
        return mask_urls(text)

    def lines(self, lines: Iterable[str]) -> list[str]:
        """Each line passed through ``text``."""
        return [self.text(line) for line in lines]

    def json(self, value: T) -> T:
        """Every string inside a value (dicts, lists, tuples, frozen dataclasses such as a
        ``Verdict``) through ``text``.

        A mapping value whose key names a secret (``{"HF_TOKEN": ...}``) is masked whole.
        """
        return self._walk(value)  # type: ignore[no-any-return]

    def _walk(self, value: Any) -> Any:
        if isinstance(value, str):
            return self.text(value)
        if isinstance(value, Mapping):
            return {
                key: MASK
                if isinstance(key, str) and isinstance(item, str) and item and is_secret_name(key)
                else self._walk(item)
                for key, item in value.items()
            }
        if isinstance(value, list):
            return [self._walk(item) for item in value]
        if isinstance(value, tuple):
            return tuple(self._walk(item) for item in value)
        return self.record(value)

    def record(self, value: T) -> T:
        """A frozen dataclass with every string field (and JSON-like field) redacted."""
        if not dataclasses.is_dataclass(value) or isinstance(value, type):
            return value
        changes = {}
        for field in dataclasses.fields(value):
            old = getattr(value, field.name)
            if isinstance(old, str | Mapping | list | tuple):  # never arrays: no == on them
                new = self._walk(old)
                if new != old:
                    changes[field.name] = new
        return dataclasses.replace(value, **changes) if changes else value


def scrub(value: T) -> T:
    """``value`` (text, JSON-like or a dataclass) with the inherited environment's secrets and URL
    credentials masked: the last guard before anything is written or printed."""
    return Redactor.collect().json(value)


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
