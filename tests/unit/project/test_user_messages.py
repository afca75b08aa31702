"""No message, report text or --help points a pip user to a path inside this repository (issue 55): a pip-installed
beluga has no benchmarks/, tests/, docs/*.md or RESULTS.md. Messages name a command, a config snippet or say it in
place instead. Code comments and docstrings (read in the source) may cite them; a command's docstring is its --help
and is checked through the command tree."""

from __future__ import annotations

import ast
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import typer

import beluga_core
from beluga_core.cli.app import app

PACKAGE = Path(beluga_core.__file__).parent
REPO_PATH = re.compile(r"(?<![\w./-])(benchmarks/|tests/|docs/[\w./-]*\.md|[\w./-]*RESULTS\.md)")

# Modules whose strings are written into this repository, not shown to a user: the paths are right there.
ALLOWED = {
    "api/kinds_table.py": "a developer tool that rewrites docs/guides/extending.md in this repository",
}


def _docstrings(tree: ast.AST) -> set[int]:
    out = set()
    for node in ast.walk(tree):
        if isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)) and node.body:
            first = node.body[0]
            if isinstance(first, ast.Expr) and isinstance(first.value, ast.Constant):
                out.add(id(first.value))
    return out


def _literals() -> Iterator[tuple[str, int, str]]:
    """(module, line, text) of every string literal of beluga_core but docstrings (f-strings' literal parts
    included)."""
    for path in sorted(PACKAGE.rglob("*.py")):
        tree = ast.parse(path.read_text(encoding="utf-8"))
        docs = _docstrings(tree)
        for node in ast.walk(tree):
            if isinstance(node, ast.Constant) and isinstance(node.value, str) and id(node) not in docs:
                yield path.relative_to(PACKAGE).as_posix(), node.lineno, node.value


def _help_texts(command: Any, name: str = "beluga") -> Iterator[tuple[str, str]]:
    """(command or option, its help) over typer's command tree (typer's own click: duck-typed)."""
    yield name, " ".join(t for t in (command.help, command.short_help, command.epilog) if t)
    for param in command.params:
        yield f"{name} {param.name}", getattr(param, "help", None) or ""
    for sub_name, sub in getattr(command, "commands", {}).items():
        yield from _help_texts(sub, f"{name} {sub_name}")


def test_no_message_names_a_repository_path() -> None:
    hits = [(module, line, text) for module, line, text in _literals() if REPO_PATH.search(text)]
    shown = [f"{m}:{line}: {REPO_PATH.search(t)[0]!r} in {t[:100]!r}" for m, line, t in hits  # type: ignore[index]
             if m not in ALLOWED]
    assert not shown, "user-facing strings that name a path a pip user lacks:\n" + "\n".join(shown)
    # The allow-list stays as short as it needs to be.
    assert {m for m, _, _ in hits} == set(ALLOWED)


def test_no_help_names_a_repository_path() -> None:
    command = typer.main.get_command(app)
    texts = dict(_help_texts(command))
    assert "beluga power" in texts and "beluga suite info" in texts
    shown = [f"{where}: {text[:120]!r}" for where, text in texts.items() if REPO_PATH.search(text)]
    assert not shown, "--help texts that name a path a pip user lacks:\n" + "\n".join(shown)


def test_the_pattern() -> None:
    for text in ("e.g. benchmarks/quick-seeds.toml", "(docs/method.md, 'Replicates')", "benchmarks/RESULTS.md",
                 "see tests/unit/x.py"):
        assert REPO_PATH.search(text), text
    for text in ("runs/my-run.duckdb", "README.md", "my_tests/x", "store.md", "builtin:sst2"):
        assert not REPO_PATH.search(text), text
