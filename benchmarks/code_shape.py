"""Line counts per package of src/servegate and its largest functions.

Usage:
    python benchmarks/code_shape.py [ROOT] [--top 10]

ROOT is a checkout (default: this one); run it on an older checkout (``git worktree add``)
to compare. A function's size counts its decorators' lines out and its signature,
docstring and body in (``end_lineno - lineno + 1``).
"""

from __future__ import annotations

import argparse
import ast
from pathlib import Path


def count_lines(path: Path) -> int:
    with path.open(encoding="utf-8") as handle:
        return sum(1 for _ in handle)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("root", nargs="?", default=str(Path(__file__).resolve().parents[1]))
    parser.add_argument("--top", type=int, default=10)
    args = parser.parse_args()
    root = Path(args.root)
    src = root / "src" / "servegate"
    per_package: dict[str, int] = {}
    functions: list[tuple[int, str]] = []
    for path in sorted(src.rglob("*.py")):
        relative = path.relative_to(src)
        package = relative.parts[0] if len(relative.parts) > 1 else "(top level)"
        per_package[package] = per_package.get(package, 0) + count_lines(path)
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
                size = (node.end_lineno or node.lineno) - node.lineno + 1
                functions.append((size, f"{relative}:{node.lineno} {node.name}"))
    print("| package | lines |\n| --- | ---: |")
    for package, lines in sorted(per_package.items()):
        print(f"| {package} | {lines} |")
    print(f"| src/servegate | {sum(per_package.values())} |")
    for folder in ("tests", "benchmarks", "bench", "docs"):
        if (root / folder).is_dir():
            files = [p for p in (root / folder).rglob("*") if p.suffix in (".py", ".md", ".sh")]
            print(f"| {folder}/ (.py .md .sh) | {sum(count_lines(p) for p in files)} |")
    functions.sort(reverse=True)
    print(f"\n{args.top} largest functions:\n")
    for size, name in functions[: args.top]:
        print(f"- {size:4d}  {name}")
    over_80 = sum(1 for size, _ in functions if size > 80)
    over_50 = sum(1 for size, _ in functions if size > 50)
    print(f"\nfunctions over 80 lines: {over_80}; over 50 lines: {over_50}")


if __name__ == "__main__":
    main()
