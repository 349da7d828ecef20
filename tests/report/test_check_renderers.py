"""servegate check's renderers live beside the report's: report/check.py decides and
words a check; console.py, markdown.py and export.py render it."""

from __future__ import annotations

import ast
from pathlib import Path

import servegate.report as report

SRC = Path(report.__file__).parent


def test_check_py_renders_nothing_and_each_format_module_renders_the_check() -> None:
    """No render_* function is defined in report/check.py; the check's table, markdown
    and JSON are rendered by console.py, markdown.py and export.py."""
    defined = {
        name: {
            node.name
            for node in ast.parse((SRC / f"{name}.py").read_text()).body
            if isinstance(node, ast.FunctionDef)
        }
        for name in ("check", "console", "markdown", "export")
    }
    assert {n for n in defined["check"] if n.startswith("render")} == set()
    assert "render_check_table" in defined["console"]
    assert {"render_check_markdown", "check_error_markdown"} <= defined["markdown"]
    assert "render_check_json" in defined["export"]
