"""The documentation covers the command line and refers only to files of the repository.

Every command of the command table, and every long option of each, is written in
README.md or docs/ (an option in a page that names its command). Every relative link,
and every mention that looks like a path of the repository (``gate/core.py``,
``benchmarks/gate_latency.py``, ``DESIGN.md``), names a file or folder that exists in
the repository; nothing points outside it.
"""

from __future__ import annotations

import re
from pathlib import Path

import click
import pytest
from tests.cli.test_grammar import NAMES
from tests.cli.test_grammar import command as cli_command

REPO = Path(__file__).resolve().parents[1]
SRC = REPO / "src" / "servegate"
PAGES = sorted([REPO / "README.md", *(REPO / "docs").glob("*.md")])

# first parts of a path that make a mention a path of this repository
TOP = {path.name for path in REPO.iterdir() if not path.name.startswith(".")} | {".ci"}
LAYERS = {path.name for path in SRC.iterdir() if path.is_dir() and path.name != "__pycache__"}

LINK = re.compile(r"\[[^\]]*\]\(([^)\s]+)\)")
# a relative path with a folder (``docs/gate.md``, ``../x``), or a capitalised .md name
MENTION = re.compile(
    r"(?<![\w./~:-])((?:\.\.?/)*[\w.-]+(?:/[\w.-]+)+/?|[A-Z][A-Z_]+\.md)(?![\w/-])"
)


def page_text(page: Path) -> str:
    """A page's text."""
    return page.read_text(encoding="utf-8")


def options_of(name: str) -> list[str]:
    """The long spellings of command ``name``'s options (``--json``, ``--no-x``)."""
    command = cli_command(name)
    spelled = []
    for param in command.params:
        if isinstance(param, click.Option):
            spelled += [opt for opt in (*param.opts, *param.secondary_opts) if opt[:2] == "--"]
    return [opt for opt in spelled if opt != "--help"]


def names_command(text: str, name: str) -> bool:
    """Whether a page names ``servegate NAME``."""
    return re.search(rf"servegate {re.escape(name)}\b", text) is not None


def resolves(mention: str, page: Path) -> Path | None:
    """The file or folder of the repository a mention names, or None."""
    mention = mention.rstrip("/")
    for base in (page.parent, REPO, SRC, REPO / "src"):
        found = (base / mention).resolve()
        if found.exists() and found.is_relative_to(REPO):
            return found
    return None


def repo_like(mention: str) -> bool:
    """Whether a mention looks like a path of this repository (not a user's file or a
    URL path): it climbs with ``..``, starts at a top-level folder or a layer of
    src/servegate, or is a capitalised markdown name (DESIGN.md)."""
    first = mention.split("/", maxsplit=1)[0]
    return first == ".." or first in TOP or first in LAYERS or "/" not in mention


@pytest.mark.parametrize("name", NAMES)
def test_every_command_and_option_is_documented(name: str) -> None:
    """Each command is named as ``servegate NAME``; each of its options is written in a
    page that names the command."""
    pages = [page for page in PAGES if names_command(page_text(page), name)]
    assert pages, f"servegate {name} is in no page of docs/ nor README.md"
    text = "\n".join(page_text(page) for page in pages)
    missing = [opt for opt in options_of(name) if not re.search(rf"{opt}(?![\w-])", text)]
    shown = ", ".join(str(page.relative_to(REPO)) for page in pages)
    assert not missing, f"servegate {name}: {', '.join(missing)} in none of {shown}"


@pytest.mark.parametrize("page", PAGES, ids=lambda page: str(page.relative_to(REPO)))
def test_links_and_paths_name_files_of_the_repository(page: Path) -> None:
    """Relative links and path-like mentions name files that exist, inside the repository."""
    text = page_text(page)
    wrong = []
    for target in LINK.findall(text):
        if re.match(r"[a-z]+:", target) or target.startswith("#"):
            continue  # a URL, or an anchor of the same page
        if resolves(target.split("#")[0], page) is None:
            wrong.append(f"link {target}")
    for mention in MENTION.findall(text):
        if repo_like(mention) and resolves(mention, page) is None:
            wrong.append(f"mention {mention}")
    assert not wrong, f"{page.relative_to(REPO)} names what the repository lacks: {wrong}"


@pytest.mark.parametrize("page", PAGES, ids=lambda page: str(page.relative_to(REPO)))
def test_nothing_points_outside_the_repository(page: Path) -> None:
    """No page names the checkout's own absolute path or the shared folder beside it (a
    checkout under /tmp must not fail on a page's /tmp/d example)."""
    text = page_text(page)
    assert str(REPO) not in text and str(REPO.parent / "shared") not in text
    assert "../shared" not in text


def test_the_path_check_catches_missing_and_outside_files() -> None:
    """The checks above fail on a missing file, a folder outside, and DESIGN.md."""
    page = REPO / "docs" / "campaigns.md"
    for mention in ("DESIGN.md", "gate/nothing.py", "../shared/notes.md", "benchmarks/x.py"):
        assert repo_like(mention) and resolves(mention, page) is None, mention
    for mention in ("gate/cause.py", "../README.md", "benchmarks/README.md", "CHANGELOG.md"):
        assert resolves(mention, page) is not None or not repo_like(mention), mention
    assert not repo_like("out/report.html") and not repo_like("v1/models")
    found = MENTION.findall("see `gate/cause.py`, /proc/1/stack, http://h/x/y and DESIGN.md.")
    assert found == ["gate/cause.py", "DESIGN.md"]
