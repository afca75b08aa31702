"""The score formulas as store macros (migration 14): known answers, defined once, documented, and a store written
before them migrates to them and reads the same."""

from __future__ import annotations

import gzip
import json
import re
from collections.abc import Iterator
from pathlib import Path

import duckdb
import pytest
from helpers import DATA, REPO, as_recorded, query, run_cli

from beluga_core.store.migrations import SCHEMA_VERSION, migrate, refresh_views
from beluga_core.store.reader import VIEWS, read_meta
from tools.fixtures import golden_rows  # "a view's rows" as the recorder defined them

# (replicate_key, migration 18's id for users' SQL, is no view's: tests/unit/store/test_replicate_key.py.)
MACROS = {"pass_rate", "suite_score", "g_score", "case_group", "mean_of", "sum_of", "std_of", "same_replicate",
          "same_draw", "same_cell", "same_cell_draw", "same_over_tasks", "same_recipe", "same_suite"}
# The version before the macros, and the store it wrote (tools/fixtures/build_golden.py store; tests/data/stores).
BEFORE = 13


@pytest.fixture(scope="module")
def con() -> Iterator[duckdb.DuckDBPyConnection]:
    """A new store's schema, in memory: every migration and the views, as a writer creates them."""
    c = duckdb.connect()
    migrate(c, 0)
    refresh_views(c)
    yield c
    c.close()


def one(con: duckdb.DuckDBPyConnection, sql: str) -> object:
    row = con.execute(f"SELECT {sql}").fetchone()
    assert row is not None
    return row[0]


def test_g_score_known_answers(con: duckdb.DuckDBPyConnection) -> None:
    # 2·0.6·0.9 / (0.6 + 0.9) = 1.08 / 1.5 = 0.72
    assert one(con, "g_score(0.6::DOUBLE, 0.9::DOUBLE)") == pytest.approx(0.72)
    # 2·1.0·0.25 / 1.25 = 0.5 / 1.25 = 0.4; symmetric
    assert one(con, "g_score(1.0::DOUBLE, 0.25::DOUBLE)") == pytest.approx(0.4)
    assert one(con, "g_score(0.25::DOUBLE, 1.0::DOUBLE)") == pytest.approx(0.4)
    # equal scores: 2·0.5·0.5 / 1.0 = 0.5, their own value
    assert one(con, "g_score(0.5::DOUBLE, 0.5::DOUBLE)") == pytest.approx(0.5)
    # one score 0: 2·0·0.8 / 0.8 = 0
    assert one(con, "g_score(0.0::DOUBLE, 0.8::DOUBLE)") == 0.0
    # both 0: 0 / 0 is undefined; G is 0 there (the harmonic mean's limit), not NULL
    assert one(con, "g_score(0.0::DOUBLE, 0.0::DOUBLE)") == 0.0
    # either missing (a scenario key without an s_iid, a grid point without iid_val): NULL, even beside a 0
    for args in ("NULL, 0.5::DOUBLE", "0.5::DOUBLE, NULL", "NULL::DOUBLE, 0.0::DOUBLE", "NULL, NULL"):
        assert one(con, f"g_score({args})") is None, args
    # integers divide as reals: 2·1·3 / 4 = 1.5
    assert one(con, "g_score(1, 3)") == 1.5
    assert one(con, "typeof(g_score(0.6::DOUBLE, 0.9::DOUBLE))") == "DOUBLE"


def test_pass_rate_known_answers(con: duckdb.DuckDBPyConnection) -> None:
    assert one(con, "pass_rate(3, 1)") == 0.75               # 3 / (3 + 1)
    assert one(con, "pass_rate(1::BIGINT, 2::BIGINT)") == pytest.approx(1 / 3)   # not integer division (0)
    assert one(con, "typeof(pass_rate(1::BIGINT, 2::BIGINT))") == "DOUBLE"
    assert one(con, "pass_rate(0, 5)") == 0.0                # 0 / 5
    assert one(con, "pass_rate(2, 0)") == 1.0                # 2 / 2
    assert one(con, "pass_rate(0, 0)") is None               # every case skipped: no evaluable case, no rate
    # the counts a view passes: skips are neither passes nor failures (2 pass, 1 fail, 3 skip: 2 / 3)
    assert one(con, """pass_rate(count(*) FILTER (WHERE o = 'pass'), count(*) FILTER (WHERE o = 'fail'))
                       FROM (VALUES ('pass'), ('skip'), ('fail'), ('skip'), ('pass'), ('skip')) t(o)""") == \
        pytest.approx(2 / 3)


def test_suite_score_known_answers(con: duckdb.DuckDBPyConnection) -> None:
    groups = """(VALUES ('k', 0.5, false), ('k', 1.0, false), ('k', NULL, false), ('k', 0.0, true), ('k', 0.25, false),
                        ('all-out', 0.9, true), ('all-out', NULL, false)) t(key, rate, excluded)"""
    rows = dict(con.execute(f"SELECT key, suite_score(rate, excluded) FROM {groups} GROUP BY key").fetchall())
    # k: the excluded 0.0 and the NULL (no evaluable case) left out: (0.5 + 1.0 + 0.25) / 3 = 1.75 / 3
    assert rows["k"] == pytest.approx(1.75 / 3)
    # no group counts: no s_T
    assert rows["all-out"] is None


def test_case_group_known_answers(con: duckdb.DuckDBPyConnection) -> None:
    groups = """'{"class": "Negation", "length": "short", "x y": "g"}'"""
    assert one(con, f"case_group('MFT', {groups}, 'test_type')") == "MFT"    # a case field, not in groups
    assert one(con, f"case_group('MFT', {groups}, 'length')") == "short"
    assert one(con, f"case_group('MFT', {groups}, 'x y')") == "g"          # a level name is quoted in the path
    assert one(con, f"case_group('MFT', {groups}, 'functionality')") is None   # no group at that level
    assert one(con, f"case_group('MFT', {groups}, NULL)") is None


def test_every_view_calls_the_macros_instead_of_writing_a_formula_out() -> None:
    views = {p.name: p.read_text(encoding="utf-8") for p in (REPO / "beluga_core/store/sql/views").glob("*.sql")}
    written_out = {
        "G": re.compile(r"2(\.0)?\s*\*\s*[\w.]+\s*\*\s*[\w.]+\s*/"),
        "a pass rate": re.compile(r"n_pass::DOUBLE|= 'pass'\)\)::DOUBLE"),
        "a case's group": re.compile(r"'\$\.\"' \|\|"),
        "s_T": re.compile(r"avg\(pass_rate\) FILTER"),
    }
    found = [(name, what) for name, text in views.items() for what, pattern in written_out.items()
             if pattern.search(re.sub(r"--[^\n]*", "", text))]
    assert found == []
    used = {m for text in views.values() for m in MACROS if re.search(rf"\b{m}\(", re.sub(r"--[^\n]*", "", text))}
    assert used == MACROS


def test_every_macro_is_documented(con: duckdb.DuckDBPyConnection) -> None:
    doc = (REPO / "docs" / "reference" / "store.md").read_text(encoding="utf-8")
    names = {r[0] for r in con.execute("SELECT function_name FROM duckdb_functions() "
                                       "WHERE database_name = current_database() AND NOT internal").fetchall()}
    assert names >= MACROS
    assert sorted(n for n in names if f"`{n}(" not in doc) == []


def _macros(store: Path) -> set[str]:
    return {r[0] for r in query(store, "SELECT function_name FROM duckdb_functions() WHERE function_type = 'macro' "
                                       "AND NOT internal AND database_name = current_database()")}


def test_a_store_of_the_previous_schema_migrates_to_the_macros_and_reads_the_same(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    stores = DATA / "stores"
    store = tmp_path / f"schema{BEFORE}.duckdb"
    store.write_bytes(gzip.decompress((stores / f"schema{BEFORE}.duckdb.gz").read_bytes()))
    assert read_meta(store)["schema_version"] == str(BEFORE) and _macros(store) == set()
    recorded = json.loads(gzip.decompress((stores / f"schema{BEFORE}.views.json.gz").read_bytes()))
    # A reader brings it up to date: migration 14 adds the macros, the re-created views call them.
    code, out, err = run_cli(capsys, "sql", store, "SELECT count(*) AS n FROM g_scores WHERE g IS NULL",
                             "--format", "csv")
    assert (code, out) == (0, "n\n1\n"), err
    assert read_meta(store)["schema_version"] == str(SCHEMA_VERSION)
    assert _macros(store) == MACROS | {"replicate_key"}
    # G is written once, in g_scores_on_cases (g_scores is its rows on every case), as the macro.
    (sql,) = query(store, "SELECT sql FROM duckdb_views() WHERE view_name = 'g_scores_on_cases'")[0]
    assert "g_score(" in sql and "2 *" not in sql
    # Every view's rows are those the previous beluga read from the same store (its grid points, cross-suite
    # evaluations and edge cases included: groups without an evaluable case, G of two zeros, no s_iid).
    con = duckdb.connect(str(store), read_only=True)
    try:
        views = golden_rows.view_rows(con, digits=9)   # as schema 13's beluga recorded them
    finally:
        con.close()
    assert set(recorded) <= set(VIEWS)
    for view, rows in recorded.items():
        now = as_recorded(json.loads(json.dumps(views[view], default=str)), rows["columns"])
        assert now["columns"] == rows["columns"], view
        assert now["rows"] == rows["rows"], f"view {view} differs"
    # The store has rows in every view whose formula became a macro.
    for view in ("pass_rates", "suite_scores", "g_scores", "g_summary", "model_training_cases", "grid_pass_rates",
                 "grid_test_type_scores", "grid_scores", "cross_pass_rates", "cross_scores", "cross_pass_rate_summary",
                 "cross_alignment_cases", "cross_alignment", "only_matrix"):
        assert recorded[view]["rows"], view
    assert run_cli(capsys, "store", "check", store)[0] == 0
    # Any DuckDB client that attaches the store under another name resolves the macros in the store's catalog.
    other = duckdb.connect()
    try:
        other.execute(f"ATTACH '{store}' AS old (READ_ONLY)")
        assert other.execute("SELECT count(*) FROM old.g_scores").fetchone() == (len(recorded["g_scores"]["rows"]),)
    finally:
        other.close()
