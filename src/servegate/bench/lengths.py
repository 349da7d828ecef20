"""Length distributions for the random dataset's prompts and outputs, drawn by the seed.

One grammar for ``input=`` and ``output=`` (fields separated by ``:``; lengths in tokens,
every draw rounded and at least 1):

    fixed:N                 every request N (a bare N is the same)
    uniform:LOW:HIGH        an integer from LOW to HIGH, both included
    normal:MEAN:STD         a normal draw
    lognormal:MEDIAN:SIGMA  exp of a normal draw around ln(MEDIAN): a long right tail
    file:PATH               a value of the file, each as likely (one number a line)
"""

from __future__ import annotations

import math
import random
from collections.abc import Callable
from pathlib import Path

from servegate.errors import UsageError

__all__ = ["Draw", "parse_lengths"]

Draw = Callable[[random.Random], int]
_FORMS = "fixed:N, uniform:LOW:HIGH, normal:MEAN:STD, lognormal:MEDIAN:SIGMA or file:PATH"


def parse_lengths(text: str, where: str) -> Draw:
    """The draw that ``text`` names, or a UsageError naming the forms."""
    kind, _, rest = str(text).partition(":")
    if not rest and kind.isdigit():
        kind, rest = "fixed", kind
    if kind == "file":
        return _file(rest, where)
    fields = rest.split(":") if rest else []
    sizes = {"fixed": 1, "uniform": 2, "normal": 2, "lognormal": 2}
    numbers = [_number(f) for f in fields]
    if kind not in sizes or len(fields) != sizes[kind] or any(n is None for n in numbers):
        raise UsageError(f"{where}={text!r} is not a length distribution; give {_FORMS}.")
    a = float(numbers[0] or 0)
    b = float(numbers[1] or 0) if len(numbers) > 1 else 0.0
    if kind == "fixed":
        n = _at_least_1(a, text, where)
        return lambda rng: n
    if kind == "uniform":
        low, high = _at_least_1(a, text, where), _at_least_1(b, text, where)
        if high < low:
            raise UsageError(f"{where}={text!r}: HIGH is below LOW; give uniform:LOW:HIGH.")
        return lambda rng: rng.randint(low, high)
    if a <= 0 or b < 0:
        raise UsageError(f"{where}={text!r}: give a positive {kind} centre and a spread >= 0.")
    if kind == "normal":
        return lambda rng: max(1, round(rng.gauss(a, b)))
    mu = math.log(a)
    return lambda rng: max(1, round(rng.lognormvariate(mu, b)))


def _number(text: str) -> float | None:
    try:
        value = float(text)
    except ValueError:
        return None
    return value if math.isfinite(value) else None


def _at_least_1(value: float, text: str, where: str) -> int:
    if value < 1 or not value.is_integer():
        raise UsageError(f"{where}={text!r}: lengths are whole tokens of at least 1.")
    return int(value)


def _file(path: str, where: str) -> Draw:
    """Draws from the numbers of a file, one a line (blank lines skipped)."""
    try:
        lines = Path(path).read_text(encoding="utf-8").split()
    except (OSError, UnicodeDecodeError) as exc:
        raise UsageError(f"{where}=file:{path}: the file cannot be read ({exc}).") from None
    values = []
    for number, line in enumerate(lines, 1):
        value = _number(line)
        if value is None or value < 1 or not value.is_integer():
            raise UsageError(
                f"{where}=file:{path}: value {number} ({line!r}) is not a whole number of "
                "tokens of at least 1; write one length a line."
            )
        values.append(int(value))
    if not values:
        raise UsageError(f"{where}=file:{path} holds no lengths; write one length a line.")
    return lambda rng: rng.choice(values)
