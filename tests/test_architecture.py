"""The import graph of ``src/servegate`` is the one docs/architecture.md allows.

The table "Allowed crossings" of docs/architecture.md is the rule: each row names a
layer (a package under ``src/servegate``, or a top-level module) and what it may import
of the others. An entry is a layer (``gate``: any of its modules), one module
(``bench.metrics``), a layer's front door only (``bench`` (front door): the names
``servegate.bench`` exports, none of its modules), or an import for annotations only
(``gate.verdict`` (types): under ``if TYPE_CHECKING:``). Every layer may import its
own modules and the top-level modules ``errors``, ``redact`` and ``_version``. ``click``
is imported only by ``cli``. The graph is read from the source (ast), imports inside
functions and under ``TYPE_CHECKING`` included.
"""

from __future__ import annotations

import ast
import re
import subprocess
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
SRC = REPO / "src" / "servegate"
DOC = REPO / "docs" / "architecture.md"

EVERYONE = ("errors", "redact", "_version", "_proc", "_text", "_files", "_os", "_stats")  # any may
ROOT = "servegate"  # the layer of src/servegate/__init__.py
TAGS = ("types", "front door")


@dataclass(frozen=True)
class Import:
    """One import of a servegate module (or of click) in one file."""

    path: Path
    line: int
    module: str  # dotted, resolved: "servegate.bench.metrics", "click"
    types_only: bool  # under ``if TYPE_CHECKING:``

    def where(self, src: Path) -> str:
        """``src/servegate/store/x.py:12``, relative to the repository when it is in it."""
        path = self.path.relative_to(src.parents[1]) if src == SRC else self.path
        return f"{path}:{self.line}"


@dataclass(frozen=True)
class Entry:
    """One allowed target of a layer: a layer or a module, maybe tagged (``TAGS``)."""

    target: str
    tag: str | None


def layer_of(path: Path, src: Path) -> str:
    """The layer a source file belongs to: its package under src, or its module's name."""
    rel = path.relative_to(src)
    if len(rel.parts) > 1:
        return rel.parts[0]
    return ROOT if rel.stem == "__init__" else rel.stem


def module_of(path: Path, src: Path) -> str:
    """The dotted name of a source file (``servegate.gate.core``)."""
    parts = path.relative_to(src.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def is_module(dotted: str, src: Path) -> bool:
    """Whether ``dotted`` names a module or package of the source tree."""
    base = src.parent.joinpath(*dotted.split("."))
    return base.with_suffix(".py").is_file() or (base / "__init__.py").is_file()


def _is_type_checking(test: ast.expr) -> bool:
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING"
    )


def imports(path: Path, src: Path) -> Iterator[Import]:
    """The servegate and click imports of one file, with relative imports resolved."""
    tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
    module = module_of(path, src)
    package = module if path.name == "__init__.py" else module.rpartition(".")[0]

    def visit(node: ast.AST, types_only: bool) -> Iterator[Import]:
        for child in ast.iter_child_nodes(node):
            if isinstance(child, ast.If) and _is_type_checking(child.test):
                for statement in child.body:
                    yield from visit_one(statement, True)
                for statement in child.orelse:
                    yield from visit_one(statement, types_only)
            else:
                yield from visit_one(child, types_only)

    def visit_one(node: ast.AST, types_only: bool) -> Iterator[Import]:
        if isinstance(node, ast.Import):
            for alias in node.names:
                yield Import(path, node.lineno, alias.name, types_only)
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                parts = package.split(".")
                base = ".".join(parts[: len(parts) - node.level + 1])
                full = f"{base}.{node.module}" if node.module else base
            else:
                full = node.module or ""
            for alias in node.names:
                named = f"{full}.{alias.name}"  # ``from servegate.bench import metrics``
                found = named if is_module(named, src) else full
                yield Import(path, node.lineno, found, types_only)
        else:
            yield from visit(node, types_only)

    for found in visit(tree, False):
        top = found.module.split(".")[0]
        if top in ("servegate", "click"):
            yield found


def allowed_crossings(doc: Path = DOC) -> dict[str, tuple[Entry, ...]]:
    """The table "Allowed crossings" of the architecture document: layer -> entries."""
    text = doc.read_text(encoding="utf-8")
    assert "\n## Allowed crossings\n" in text, f"{doc} has no '## Allowed crossings' section"
    section = text.split("\n## Allowed crossings\n", 1)[1].split("\n## ", 1)[0]
    table: dict[str, tuple[Entry, ...]] = {}
    for row in section.splitlines():
        if not row.startswith("| `"):
            continue
        cells = [cell.strip() for cell in row.strip().strip("|").split("|")]
        entries = tuple(
            Entry(target, tag or None)
            for target, tag in re.findall(r"`([\w.]+)`(?: \(([a-z ]+)\))?", cells[1])
        )
        for entry in entries:
            assert entry.tag in (None, *TAGS), f"{doc}: unknown tag ({entry.tag}) in: {row}"
        for layer in re.findall(r"`([\w.]+)`", cells[0]):
            assert layer not in table, f"{doc}: layer {layer} has two rows"
            table[layer] = entries
    return table


def allows(entries: tuple[Entry, ...], found: Import) -> bool:
    """Whether one of a layer's entries allows the import ``found`` of another layer."""
    rel = found.module.removeprefix("servegate").removeprefix(".")  # "bench.metrics"
    layer = rel.split(".")[0] if rel else ROOT
    for entry in entries:
        if entry.target == layer:
            if entry.tag is None:
                return True
            if entry.tag == "types" and found.types_only:
                return True
            if entry.tag == "front door" and rel == layer:
                return True
        elif "." in entry.target and (rel == entry.target or rel.startswith(entry.target + ".")):
            return entry.tag != "types" or found.types_only
    return False


def layers(src: Path) -> set[str]:
    """Every layer of the source tree."""
    return {layer_of(path, src) for path in src.rglob("*.py")}


def violations(src: Path, table: dict[str, tuple[Entry, ...]]) -> list[str]:
    """One sentence per import that the table does not allow, naming the file and line."""
    found_wrong = []
    for path in sorted(src.rglob("*.py")):
        layer = layer_of(path, src)
        entries = table.get(layer, ())
        for found in dict.fromkeys(imports(path, src)):  # one line importing several names
            where = found.where(src)
            if found.module.split(".")[0] == "click":
                if layer != "cli":
                    found_wrong.append(
                        f"{where}: {layer} imports click; only cli may (raise a ServegateError "
                        "and let the command line print it)"
                    )
                continue
            rel = found.module.removeprefix("servegate").removeprefix(".")
            target = rel.split(".")[0] if rel else ROOT
            if target in (layer, *EVERYONE) or allows(entries, found):
                continue
            spelled = ", ".join(
                entry.target + (f" ({entry.tag})" if entry.tag else "") for entry in entries
            )
            kind = "for annotations " if found.types_only else ""
            found_wrong.append(
                f"{where}: {layer} imports {found.module} {kind}but docs/architecture.md "
                f"allows {layer} only {spelled or 'nothing'} (and {', '.join(EVERYONE)})"
            )
    return found_wrong


def test_every_layer_has_a_row() -> None:
    """The table lists exactly the layers of the tree: a new package needs its row."""
    table = allowed_crossings()
    assert layers(SRC) == set(table), (
        f"layers without a row in docs/architecture.md: {sorted(layers(SRC) - set(table))}; "
        f"rows without a layer: {sorted(set(table) - layers(SRC))}"
    )
    for layer, entries in table.items():
        for entry in entries:
            layer_name = entry.target.split(".")[0]
            assert layer_name in table and layer_name != layer, f"{layer}: {entry.target}"
            assert is_module(f"servegate.{entry.target}", SRC), f"{layer}: {entry.target}"


def test_each_layer_imports_only_what_the_document_allows() -> None:
    """Every import of src/servegate crosses layers only where the document allows it."""
    wrong = violations(SRC, allowed_crossings())
    assert not wrong, "\n".join(wrong)


def test_top_level_modules_load_no_layer() -> None:
    """The top-level modules (errors, redact, _version, _proc, _text, _files, _os, _stats) load no
    layer of servegate: every layer can import them."""
    code = (
        f"import sys; import {', '.join(f'servegate.{name}' for name in EVERYONE)}\n"
        "print(' '.join(sorted(m for m in sys.modules if m.startswith('servegate'))))"
    )
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True, timeout=60
    )
    loaded = set(done.stdout.split())
    assert loaded == {"servegate", *(f"servegate.{name}" for name in EVERYONE)}, loaded


def module_map(doc: Path = DOC) -> list[str]:
    """The paths of the document's module map, relative to src/servegate."""
    text = doc.read_text(encoding="utf-8")
    block = text.split("```\nsrc/servegate/\n", 1)[1].split("```", 1)[0]
    paths, package = [], ""
    for line in block.splitlines():
        name = line.split()[0]
        if line.startswith("    "):
            paths.append(package + name)
        else:
            package = name if name.endswith("/") else ""
            paths.append(name)
    return paths


def test_the_module_map_is_true() -> None:
    """Every path of the module map exists, and every layer of the tree is in it."""
    paths = module_map()
    missing = [path for path in paths if not (SRC / path).exists()]
    assert not missing, (
        f"docs/architecture.md's module map names what src/servegate lacks: {missing}"
    )
    named = {path.split("/")[0].removesuffix(".py") for path in paths}
    absent = sorted(layers(SRC) - named - {ROOT})
    assert not absent, f"layers missing from docs/architecture.md's module map: {absent}"


def definitions(path: Path) -> set[str]:
    """The functions and classes a module defines: ``name`` and ``Class.method``."""
    names: set[str] = set()
    for node in ast.parse(path.read_text(encoding="utf-8")).body:
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
            names.add(node.name)
        if isinstance(node, ast.ClassDef):
            names.update(
                f"{node.name}.{item.name}"
                for item in node.body
                if isinstance(item, ast.FunctionDef | ast.AsyncFunctionDef)
            )
    return names


def test_where_is_x_decided_names_what_exists() -> None:
    """Each "Where is X decided" entry names files that exist, and the functions and
    methods it names (``Gate._decide``, ``ttft(chunks)``) are defined in those files."""
    text = DOC.read_text(encoding="utf-8")
    section = text.split("\n## Where is X decided\n", 1)[1].split("\n## ", 1)[0]
    wrong = []
    for entry in section.split("\n- **")[1:]:
        title = entry.split("**", 1)[0]
        files = [SRC / name for name in re.findall(r"`([\w/]+\.py)`", entry)]
        assert files, f"'{title}' names no file"
        wrong += [
            f"{title}: {path.relative_to(SRC)} is missing" for path in files if not path.is_file()
        ]
        defined = set().union(*(definitions(path) for path in files if path.is_file()))
        named = re.findall(r"`([A-Za-z_]\w*\.[A-Za-z_]\w*|[A-Za-z_]\w*(?=\())", entry)
        wrong += [
            f"{title}: {name} is in none of its files" for name in named if name not in defined
        ]
    assert not wrong, "; ".join(wrong)


@pytest.fixture
def tree(tmp_path: Path) -> Path:
    """A small source tree with one allowed and three forbidden imports."""
    src = tmp_path / "src" / "servegate"
    for package in ("store", "bench", "campaign", "cli", "report"):
        (src / package).mkdir(parents=True)
        (src / package / "__init__.py").write_text("")
    (src / "__init__.py").write_text("")
    (src / "errors.py").write_text("")
    (src / "bench" / "metrics.py").write_text("")
    (src / "bench" / "runner.py").write_text("")
    (src / "store" / "records.py").write_text(
        "from __future__ import annotations\n"
        "from typing import TYPE_CHECKING\n"
        "from servegate.errors import StoreError\n"
        "from servegate.bench import metrics\n"
        "if TYPE_CHECKING:\n"
        "    from servegate.campaign import RunOptions\n"
        "def load() -> None:\n"
        "    from ..bench.runner import run_point\n"
    )
    (src / "report" / "html.py").write_text("import click\n")
    (src / "cli" / "run.py").write_text("import click\nfrom servegate.campaign.runner import x\n")
    return src


def test_the_check_names_each_forbidden_import_and_its_file(tree: Path, tmp_path: Path) -> None:
    """The check finds a forbidden import inside a function, through a relative import,
    past a front door and outside annotations, and lets the allowed ones pass."""
    doc = tmp_path / "architecture.md"
    doc.write_text(
        "# Layers\n\n## Allowed crossings\n\n| layer | may import |\n|---|---|\n"
        "| `store` | `bench.metrics`, `campaign` (types) |\n"
        "| `bench`, `report`, `servegate`, `errors` | |\n"
        "| `campaign` | `bench` (front door) |\n"
        "| `cli` | `campaign` (front door) |\n\n## Next\n"
    )
    table = allowed_crossings(doc)
    assert table["store"] == (Entry("bench.metrics", None), Entry("campaign", "types"))
    wrong = violations(tree, table)
    assert wrong == [
        f"{tree / 'cli' / 'run.py'}:2: cli imports servegate.campaign.runner but "
        "docs/architecture.md allows cli only campaign (front door) (and errors, redact, "
        "_version, _proc, _text, _files, _os, _stats)",
        f"{tree / 'report' / 'html.py'}:1: report imports click; only cli may (raise a "
        "ServegateError and let the command line print it)",
        f"{tree / 'store' / 'records.py'}:8: store imports servegate.bench.runner but "
        "docs/architecture.md allows store only bench.metrics, campaign (types) (and errors, "
        "redact, _version, _proc, _text, _files, _os, _stats)",
    ]
