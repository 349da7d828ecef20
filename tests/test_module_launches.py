"""Processes started as ``python -m servegate...`` cross layers too: each such launch of
another layer is named in docs/architecture.md ("Module launches"), as imports are in
"Allowed crossings" (tests/test_architecture.py)."""

from __future__ import annotations

import ast
import itertools
import re
from pathlib import Path

from tests.test_architecture import DOC, SRC, is_module, layer_of

SECTION = "## Module launches"


def module_launches(src: Path) -> set[tuple[str, str, str]]:
    """(layer, launched module, file:line) for each ``"-m", "servegate..."`` pair of string
    constants in a list or tuple of the source tree."""
    found = set()
    for path in sorted(src.rglob("*.py")):
        tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
        for node in ast.walk(tree):
            if not isinstance(node, (ast.List, ast.Tuple)):
                continue
            items = node.elts
            for flag, target in itertools.pairwise(items):
                if (
                    isinstance(flag, ast.Constant)
                    and flag.value == "-m"
                    and isinstance(target, ast.Constant)
                    and isinstance(target.value, str)
                    and re.fullmatch(r"servegate(\.\w+)*", target.value)
                ):
                    where = f"{path.relative_to(src.parents[1])}:{target.lineno}"
                    found.add((layer_of(path, src), target.value, where))
    return found


def documented(doc: Path = DOC) -> set[tuple[str, str]]:
    """The table "Module launches": (layer, module) pairs."""
    text = doc.read_text(encoding="utf-8")
    assert f"\n{SECTION}\n" in text, f"{doc} has no '{SECTION}' section"
    section = text.split(f"\n{SECTION}\n", 1)[1].split("\n## ", 1)[0]
    pairs = set()
    for row in section.splitlines():
        if not row.startswith("| `"):
            continue
        cells = [cell.strip() for cell in row.strip().strip("|").split("|")]
        layer = cells[0].strip("`")
        for module in re.findall(r"`(servegate[\w.]*)`", cells[1]):
            pairs.add((layer, module))
    return pairs


def _layer_of_module(module: str) -> str:
    parts = module.split(".")
    return "servegate" if len(parts) == 1 else parts[1]


def test_each_module_launch_of_another_layer_is_documented() -> None:
    """A launch of a module of another layer (the remote agent starting a campaign's
    start, or the command line) is a row of the table; a row names a launch that exists."""
    launches = module_launches(SRC)
    across = {(layer, module) for layer, module, _ in launches if _layer_of_module(module) != layer}
    table = documented()
    missing = sorted(
        f"{where}: {layer} starts python -m {module}, not in {DOC.name} '{SECTION}'"
        for layer, module, where in launches
        if (layer, module) in across - table
    )
    assert not missing, "\n".join(missing)
    assert table <= across, f"rows for launches that do not exist: {sorted(table - across)}"
    for _, module in table:
        assert module == "servegate" or is_module(module, SRC), module


def test_the_scan_sees_a_launch_in_a_list(tmp_path: Path) -> None:
    """The scan finds ``[sys.executable, "-m", "servegate.x.y", ...]`` with its layer."""
    src = tmp_path / "src" / "servegate"
    (src / "remote").mkdir(parents=True)
    (src / "remote" / "agent.py").write_text(
        'import sys\nargv = [sys.executable, "-m", "servegate.campaign.node", "3"]\n'
    )
    assert module_launches(src) == {
        ("remote", "servegate.campaign.node", "src/servegate/remote/agent.py:2")
    }
