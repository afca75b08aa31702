"""docs/project/development.md's table of statistical margins ("Statistical margins in the tests") stays true: every
test it names exists, the bound it states is a piece of that test's source (parsed: a loosened literal no longer
matches), and the margins that say what they are (a ``*MARGIN*`` or ``*TOL*`` constant, a bound of k standard
deviations) are all in it."""

from __future__ import annotations

import ast
import re

import pytest
from helpers import DOCS, REPO

SECTION = "## Statistical margins in the tests"
COLUMNS = ["test", "quantity", "bound", "history", "runs", "observed", "measured in"]


def _section() -> str:
    text = (DOCS / "project" / "development.md").read_text(encoding="utf-8")
    assert SECTION in text, f"docs/project/development.md has no section '{SECTION}'"
    body = text[text.index(SECTION) + len(SECTION):]
    return body[:body.find("\n## ")] if "\n## " in body else body


def _cells(line: str) -> list[str]:
    """A Markdown table row's cells (``\\|`` is a pipe inside a cell)."""
    return [c.strip().replace("\\|", "|") for c in re.split(r"(?<!\\)\|", line.strip())[1:-1]]


def _code(cell: str) -> str:
    m = re.fullmatch(r"`([^`]+)`", cell)
    assert m, f"expected one code span, got {cell!r}"
    return m.group(1)


def table() -> list[dict[str, str]]:
    lines = [ln for ln in _section().splitlines() if ln.startswith("|")]
    assert _cells(lines[0]) == COLUMNS
    return [dict(zip(COLUMNS, _cells(ln), strict=True)) for ln in lines[2:]]


ROWS = table()


def _function(tree: ast.Module, name: str) -> ast.FunctionDef:
    found = [n for n in ast.walk(tree) if isinstance(n, ast.FunctionDef) and n.name == name]
    assert len(found) == 1, f"{name}: {len(found)} functions of that name"
    return found[0]


def _parsed(path: str) -> ast.Module:
    file = REPO / path
    assert file.is_file(), f"{path} does not exist"
    return ast.parse(file.read_text(encoding="utf-8"))


@pytest.mark.parametrize("row", ROWS, ids=[f"{r['test'].split('::')[-1][:50]}:{r['bound'][:40]}" for r in ROWS])
def test_each_listed_bound_is_in_its_tests_source(row: dict[str, str]) -> None:
    path, _, name = _code(row["test"]).partition("::")
    tree = _parsed(path)
    function = _function(tree, name)
    bound = ast.parse(_code(row["bound"]))
    (statement,) = bound.body
    if isinstance(statement, ast.Assign):
        # A module constant (DRIFT_MARGIN = 4.0): assigned so in the module, and read by the test.
        assigned = [ast.dump(n) for n in tree.body if isinstance(n, ast.Assign)]
        assert ast.dump(statement) in assigned, f"{path}: no module-level `{_code(row['bound'])}`"
        names = {t.id for t in statement.targets if isinstance(t, ast.Name)}
        assert names & {n.id for n in ast.walk(function) if isinstance(n, ast.Name)}, f"{name} does not read {names}"
        return
    assert isinstance(statement, ast.Expr)
    want = ast.dump(statement.value)
    assert any(ast.dump(n) == want for n in ast.walk(function)), \
        f"{path}::{name} has no `{_code(row['bound'])}`: the bound changed? Update its row (and say why)."


def test_every_row_says_where_its_spread_comes_from_or_that_none_was_measured() -> None:
    assert len(ROWS) >= 40
    for row in ROWS:
        assert all(row[c] for c in COLUMNS), row
        measured = row["runs"] not in ("–", "")
        assert measured or "not measured" in row["observed"], row
        assert not measured or row["measured in"] not in ("–", ""), row
    # A loosened bound names its commits: "X (abc1234) → Y (def5678)".
    for row in ROWS:
        for commit in re.findall(r"\(([0-9a-f]{7})\b", row["history"]):
            assert re.fullmatch(r"[0-9a-f]{7}", commit)
    summary = " ".join(_section().split())
    loosened = sum("→" in r["history"] for r in ROWS)
    assert f"Of the {len(ROWS)} margins, {loosened} were loosened" in summary


def _is_spread(node: ast.expr) -> bool:
    """``sd`` / ``se``, or ``math.sqrt(…)``: the unit of a bound of k standard deviations."""
    if isinstance(node, ast.Name):
        return node.id in ("sd", "se")
    return isinstance(node, ast.Call) and ast.unparse(node.func) == "math.sqrt"


def _self_declared_margins() -> set[tuple[str, str]]:
    """(file, name) of every module constant named like a margin or tolerance, and of every function holding a
    bound of k standard deviations (``< 4 * sd``, ``< 4 * math.sqrt(...)``), in tests/."""
    found: set[tuple[str, str]] = set()
    for file in sorted((REPO / "tests").rglob("*.py")):
        if "data" in file.relative_to(REPO / "tests").parts:
            continue
        rel = file.relative_to(REPO).as_posix()
        tree = ast.parse(file.read_text(encoding="utf-8"))
        for node in tree.body:
            if isinstance(node, ast.Assign):
                for target in node.targets:
                    if isinstance(target, ast.Name) and re.search(r"MARGIN|TOLERANCE|(^|_)TOL($|_)", target.id):
                        found.add((rel, target.id))
        for fn in (n for n in ast.walk(tree) if isinstance(n, ast.FunctionDef)):
            for cmp in (n for n in ast.walk(fn) if isinstance(n, ast.Compare)):
                for right in cmp.comparators:
                    if (isinstance(right, ast.BinOp) and isinstance(right.op, ast.Mult)
                            and isinstance(right.left, ast.Constant)
                            and _is_spread(right.right)):
                        found.add((rel, fn.name))
    return found


def test_every_self_declared_margin_is_listed() -> None:
    listed = {(_code(r["test"]).split("::")[0], _code(r["test"]).split("::")[1]) for r in ROWS}
    constants = {(_code(r["test"]).split("::")[0], _code(r["bound"]).split("=")[0].strip()) for r in ROWS
                 if isinstance(ast.parse(_code(r["bound"])).body[0], ast.Assign)}
    missing = sorted(_self_declared_margins() - listed - constants)
    assert missing == [], f"margins not in docs/project/development.md's table: {missing}"


def test_the_parser_catches_a_loosened_literal() -> None:
    """The check itself: the same row against a source whose literal moved fails to match."""
    tree = ast.parse("def t(rhos):\n    assert min(rhos['local']) >= 0.3, rhos\n")
    want = ast.dump(ast.parse("min(rhos['local']) >= 0.35").body[0].value)  # type: ignore[attr-defined]
    assert not any(ast.dump(n) == want for n in ast.walk(_function(tree, "t")))
    same = ast.dump(ast.parse('min(rhos["local"]) >= 0.35').body[0].value)  # type: ignore[attr-defined]
    assert same == want                       # quotes and spacing do not matter, the value does
