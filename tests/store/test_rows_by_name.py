"""The store reads its rows by column name (``row["status"]``), never by place
(``row[9]``): a column added, dropped or moved in a SELECT then cannot shift the others."""

from __future__ import annotations

import ast
from pathlib import Path

STORE = Path(__file__).resolve().parents[2] / "src" / "servegate" / "store"


def test_no_row_is_read_by_its_place() -> None:
    """No subscript of a store module reads a row's column by a number."""
    found = []
    for path in sorted(STORE.glob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            if (
                isinstance(node, ast.Subscript)
                and isinstance(node.value, ast.Name)
                and (node.value.id == "r" or "row" in node.value.id.lower())
                and isinstance(node.slice, ast.Constant)
                and isinstance(node.slice.value, int)
            ):
                found.append(f"{path.name}:{node.lineno}")
    assert [] == found
