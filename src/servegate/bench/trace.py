"""Timed traces to replay: each row a send time, an input and an output length.

Three formats, told apart by ``format=`` or else by the file:

- Mooncake JSONL (``.jsonl``): ``{"timestamp": 27482, "input_length": 6955,
  "output_length": 52, "hash_ids": [46, 47, ...]}``, the timestamp in milliseconds, each
  hash id one block of ``block`` tokens (512 in Mooncake's traces);
- Azure LLM inference CSV (a ``ContextTokens`` column): ``TIMESTAMP,ContextTokens,
  GeneratedTokens`` with ``2023-11-16 18:15:46.6805900`` timestamps;
- BurstGPT CSV (a ``Request tokens`` column): ``Timestamp,Model,Request tokens,
  Response tokens,Total tokens,Log Type``, the timestamp in seconds.

Send times are taken from the first row and divided by ``speed``. A prompt is made of
its hash ids' blocks, each block's words drawn from (seed, hash id), so requests that
share hash ids share those blocks' text and a server's prefix cache sees the trace's
reuse; what the hash ids do not cover, and every prompt of a trace without hash ids, is
words of the row's own.
"""

from __future__ import annotations

import csv
import datetime as dt
import io
import json
import random
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from servegate.bench.prompts import salted_seed
from servegate.bench.spec import DatasetSpec
from servegate.errors import UsageError

__all__ = ["TraceRow", "read_trace", "trace_words"]


@dataclass(frozen=True, slots=True, kw_only=True)
class TraceRow:
    """One request of a trace."""

    at_s: float  # send time, seconds after the trace's first row, before ``speed``
    input_len: int
    output_len: int
    hash_ids: tuple[int, ...] = ()


def read_trace(spec: DatasetSpec) -> list[TraceRow]:
    """The rows of the spec's trace file in time order, or a UsageError naming the line."""
    assert spec.file is not None
    where = f"--dataset trace:{spec.file}"
    try:
        text = Path(spec.file).read_text(encoding="utf-8")
    except FileNotFoundError:
        raise UsageError(f"{where}: the file does not exist; check the path.") from None
    except (OSError, UnicodeDecodeError) as exc:
        raise UsageError(f"{where}: the file cannot be read ({exc}); check the path.") from None
    fmt = spec.get("format") or _detect(spec.file, text)
    rows = _mooncake(text, where) if fmt == "mooncake" else _csv(text, where, fmt)
    if not rows:
        raise UsageError(f"{where} holds no requests; give a trace with at least one row.")
    rows.sort(key=lambda r: r.at_s)
    first = rows[0].at_s
    return [
        TraceRow(
            at_s=r.at_s - first, input_len=r.input_len, output_len=r.output_len, hash_ids=r.hash_ids
        )
        for r in rows
    ]


def trace_words(
    rows: list[TraceRow], block: int, seed: int, vocabulary: list[str]
) -> list[list[str]]:
    """Each row's prompt as words: its hash ids' shared blocks, then words of its own."""
    blocks: dict[int, list[str]] = {}
    out = []
    for index, row in enumerate(rows):
        words: list[str] = []
        for h in row.hash_ids:
            if len(words) >= row.input_len:
                break
            if h not in blocks:
                blocks[h] = random.Random(salted_seed(seed, "block", h)).choices(
                    vocabulary, k=block
                )
            words += blocks[h]
        del words[row.input_len :]
        if len(words) < row.input_len:
            own = random.Random(salted_seed(seed, "row", index))
            words += own.choices(vocabulary, k=row.input_len - len(words))
        out.append(words)
    return out


def _detect(path: str, text: str) -> str:
    """The format from the file: JSONL is Mooncake's, a CSV by its header's columns."""
    if not path.endswith(".csv"):
        return "mooncake"
    header = text.split("\n", 1)[0]
    if "ContextTokens" in header:
        return "azure"
    if "Request tokens" in header:
        return "burstgpt"
    raise UsageError(
        f"--dataset trace:{path}: the CSV header has neither ContextTokens (Azure) nor "
        "'Request tokens' (BurstGPT); give format=azure or format=burstgpt with such a file."
    )


def _positive(value: Any) -> int | None:
    """``value`` as a positive integer, or None."""
    try:
        number = int(value)
    except (TypeError, ValueError):
        return None
    return number if number > 0 and number == float(value) else None


def _mooncake(text: str, where: str) -> list[TraceRow]:
    """Rows of a Mooncake JSONL trace (timestamp in ms)."""
    example = '{"timestamp": 0, "input_length": 512, "output_length": 64, "hash_ids": [0]} per line'
    rows = []
    for number, line in enumerate(text.splitlines(), 1):
        if not line.strip():
            continue
        try:
            row = json.loads(line)
        except json.JSONDecodeError as exc:
            raise UsageError(
                f"{where}: line {number} is not JSON ({exc.msg}); write {example}."
            ) from None
        if not isinstance(row, dict):
            raise UsageError(f"{where}: line {number} is not an object; write {example}.")
        stamp = row.get("timestamp")
        n_in, n_out = _positive(row.get("input_length")), _positive(row.get("output_length"))
        ids = row.get("hash_ids", [])
        if (
            isinstance(stamp, bool)
            or not isinstance(stamp, int | float)
            or stamp < 0
            or n_in is None
            or n_out is None
            or not isinstance(ids, list)
            or not all(isinstance(h, int) and not isinstance(h, bool) for h in ids)
        ):
            raise UsageError(
                f"{where}: line {number} needs a timestamp (ms), positive input_length and "
                f"output_length, and hash_ids as a list of integers; write {example}."
            )
        rows.append(
            TraceRow(
                at_s=float(stamp) / 1000.0, input_len=n_in, output_len=n_out, hash_ids=tuple(ids)
            )
        )
    return rows


def _csv(text: str, where: str, fmt: str) -> list[TraceRow]:
    """Rows of an Azure or BurstGPT CSV trace."""
    if fmt == "azure":
        columns = ("TIMESTAMP", "ContextTokens", "GeneratedTokens")
    else:
        columns = ("Timestamp", "Request tokens", "Response tokens")
    reader = csv.DictReader(io.StringIO(text))
    missing = [c for c in columns if c not in (reader.fieldnames or [])]
    if missing:
        raise UsageError(
            f"{where}: the {fmt} CSV has no column {missing[0]!r}; its header must hold "
            f"{', '.join(columns)}."
        )
    rows = []
    for number, row in enumerate(reader, 2):
        stamp_text, n_in, n_out = (row[c] for c in columns)
        n_in_ok = _positive(n_in)
        # a response of 0 tokens (a failed request in BurstGPT) still asks for one
        n_out_ok = _positive(n_out) or (1 if str(n_out).strip() == "0" else None)
        stamp = _azure_time(stamp_text) if fmt == "azure" else _seconds(stamp_text)
        if stamp is None or n_in_ok is None or n_out_ok is None:
            raise UsageError(
                f"{where}: line {number} needs a {columns[0]} and token counts "
                f"({columns[1]}, {columns[2]}) as positive integers; fix or remove it."
            )
        rows.append(TraceRow(at_s=stamp, input_len=n_in_ok, output_len=n_out_ok))
    return rows


def _seconds(text: str) -> float | None:
    """A BurstGPT timestamp (seconds), or None."""
    try:
        value = float(text)
    except (TypeError, ValueError):
        return None
    return value if value >= 0 else None


def _azure_time(text: str) -> float | None:
    """An Azure trace's ``2023-11-16 18:15:46.6805900`` as epoch seconds, or None."""
    head, _, frac = str(text).strip().partition(".")
    try:
        when = dt.datetime.strptime(head, "%Y-%m-%d %H:%M:%S").replace(tzinfo=dt.UTC)
        fraction = float("0." + frac) if frac else 0.0
    except ValueError:
        return None
    return when.timestamp() + fraction
