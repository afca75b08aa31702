"""The replicate key, written once (migration 18): known answers for its NULL handling and coarser cells, and no
join anywhere else spells the key columns out."""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Iterator
from pathlib import Path

import duckdb
import pytest
from helpers import REPO

from beluga_core.store.migrations import migrate, refresh_views

KEY = ("task", "suite", "model_name", "config", "method", "seed", "split_seed", "variant")


@pytest.fixture(scope="module")
def con() -> Iterator[duckdb.DuckDBPyConnection]:
    c = duckdb.connect()
    migrate(c, 0)
    refresh_views(c)   # the views, as a store has them
    c.execute("""CREATE TABLE k (task VARCHAR, suite VARCHAR, model_name VARCHAR, config VARCHAR, method VARCHAR,
                                 seed BIGINT, split_seed BIGINT, variant VARCHAR)""")
    c.executemany("INSERT INTO k VALUES (?, ?, ?, ?, ?, ?, ?, ?)", [
        ["sentiment", "sst", "minilm", "tbc", "vanilla", 1, None, ""],
        ["sentiment", "sst", "minilm", "iid", "vanilla", 1, None, ""],
        ["sentiment", "sst", "minilm", "tbc", "vanilla", 2, None, ""],
        ["sentiment", None, "minilm", "tbc", "vanilla", 1, None, ""],
        ["sentiment", "null", "minilm", "tbc", "vanilla", 1, None, ""],
        ["sentiment", "sst", "minilm", "tbc", "vanilla", None, 1, ""],
    ])
    yield c
    c.close()


def expected(row: dict[str, object]) -> str:
    """replicate_key by hand: md5 of the JSON array of the key columns as text, JSON null where NULL."""
    values = [None if row[c] is None else str(row[c]) for c in KEY]
    return hashlib.md5(json.dumps(values, separators=(",", ":")).encode()).hexdigest()


def rows(con: duckdb.DuckDBPyConnection, sql: str) -> list[tuple[object, ...]]:
    return con.execute(sql).fetchall()


# Each comparison: the key columns it compares.
SAME = {"same_replicate": KEY,
        "same_draw": ("task", "suite", "model_name", "seed", "split_seed", "variant"),
        "same_cell": ("task", "suite", "model_name", "config", "method", "split_seed", "variant"),
        "same_cell_draw": ("task", "suite", "model_name", "split_seed", "variant"),
        "same_over_tasks": ("config", "method", "seed", "split_seed", "variant"),
        "same_recipe": ("task", "suite", "config", "method", "variant"),
        "same_suite": ("task", "suite")}


def test_the_id_is_md5_of_the_columns_as_json_with_null_kept(con: duckdb.DuckDBPyConnection) -> None:
    got = rows(con, f"SELECT {', '.join(KEY)}, replicate_key(k) FROM k ORDER BY ALL")
    assert len(got) == 6
    for r in got:
        assert r[8] == expected(dict(zip(KEY, r[:8], strict=True)))
    assert rows(con, "SELECT count(DISTINCT replicate_key(k)) FROM k") == [(6,)]


@pytest.mark.parametrize("macro", sorted(SAME))
def test_each_comparison_pairs_the_rows_equal_or_both_null_on_its_columns(
        con: duckdb.DuckDBPyConnection, macro: str) -> None:
    """Every pair of the six rows, by the macro and by hand (Python's ==, where None == None)."""
    columns = SAME[macro]
    table = rows(con, f"SELECT {', '.join(KEY)} FROM k ORDER BY ALL")
    by_hand = sorted((i, j) for i, a in enumerate(table) for j, b in enumerate(table)
                     if all(a[KEY.index(c)] == b[KEY.index(c)] for c in columns))
    con.execute(f"CREATE OR REPLACE TEMP TABLE n AS SELECT row_number() OVER (ORDER BY {', '.join(KEY)}) - 1 AS i, * "
                "FROM k")
    # On relations that carry only the compared columns (the macro must not read the others).
    narrow = f"(SELECT i, {', '.join(columns)} FROM n)"
    assert rows(con, f"SELECT a.i, b.i FROM {narrow} a JOIN {narrow} b ON {macro}(a, b) ORDER BY ALL") == by_hand


def test_null_matches_null_and_nothing_else(con: duckdb.DuckDBPyConnection) -> None:
    # Six distinct cells: a NULL suite is not the suite named 'null'; NULL seed with split seed 1 is not seed 1.
    assert rows(con, "SELECT count(*) FROM k a JOIN k b ON same_replicate(a, b)") == [(6,)]
    # One draw: the tbc and iid rows of seed 1 (2·2 pairs), and 4 singletons.
    assert rows(con, "SELECT count(*) FROM k a JOIN k b ON same_draw(a, b)") == [(8,)]
    # A row given as a STRUCT of values (as the writer's slot check and a task head's lookup give it).
    assert rows(con, "SELECT count(*) FROM k WHERE same_suite(k, {'task': 'sentiment', 'suite': NULL::VARCHAR})") \
        == [(1,)]


_KEY_PREDICATE = re.compile(r"\b(task|suite|model_name|config|method|seed|split_seed|variant)\s+IS\s+NOT\s+DISTINCT",
                            re.IGNORECASE)


def test_no_join_spells_the_key_columns_out() -> None:
    """The key columns are compared NULL-safely in migration 18 and nowhere else: no other SQL file or Python
    module of beluga compares one by hand."""
    here = REPO / "beluga_core/store/sql/migrations/0018_replicate_key.sql"
    found = [f"{p.relative_to(REPO)}:{text.count(chr(10), 0, m.start()) + 1}"
             for p in sorted((REPO / "beluga_core").rglob("*")) if p.suffix in (".sql", ".py") and p != here
             for text in [p.read_text(encoding="utf-8")] for m in _KEY_PREDICATE.finditer(text)]
    assert found == []
    assert len(_KEY_PREDICATE.findall(here.read_text(encoding="utf-8"))) > 0


def test_a_model_card_shows_its_own_cell_only(tmp_path: Path) -> None:
    """`beluga model export`'s card: the G scores of the exported model's replicate cell, not those of another cell
    of the same task, configuration, method and seed (here the same models under another variant, all failing)."""
    from beluga_core.stored_models.export import card_scores
    from tools.fixtures import golden_rows

    store = tmp_path / "s.duckdb"
    golden_rows.golden_views(REPO / "tests" / "data" / "golden" / "tiny-sentiment", store)
    con = duckdb.connect(str(store))
    try:
        ids = [r[0] for r in con.execute("SELECT model_id FROM models WHERE status = 'done'").fetchall()]
        for mid in ids:
            con.execute("INSERT INTO models SELECT * REPLACE (model_id || '-b' AS model_id, 'b' AS variant) "
                        "FROM models WHERE model_id = ?", [mid])
            con.execute("INSERT INTO outcomes SELECT * REPLACE (model_id || '-b' AS model_id, 'fail' AS outcome) "
                        "FROM outcomes WHERE model_id = ?", [mid])
        (model_id, task, config, method, seed), = con.execute(
            "SELECT model_id, task, config, method, seed FROM models WHERE config = 'iid' AND variant = ''").fetchall()
        mine = con.execute("SELECT scenario, s_suite, s_iid, g FROM g_scores WHERE variant = '' AND task = ? "
                           "AND config = ? AND method = ? AND seed IS NOT DISTINCT FROM ? ORDER BY scenario",
                           [task, config, method, seed]).fetchall()
        assert mine and con.execute("SELECT count(*) FROM g_scores WHERE variant = 'b' AND config = ?",
                                    [config]).fetchall() == [(len(mine),)]
        assert card_scores(con, model_id) == mine
    finally:
        con.close()


def test_the_views_join_on_the_columns_the_macros_name(con: duckdb.DuckDBPyConnection) -> None:
    """beluga's own views and queries expand each same_*(x, y) into the macro's comparisons of x's and y's columns
    (DuckDB plans joins on columns better than through a macro's row arguments), from the one definition."""
    from beluga_core.core.errors import BelugaError
    from beluga_core.store.connection import expand_key_comparisons, key_comparisons

    assert set(key_comparisons()) == set(SAME)
    assert expand_key_comparisons("JOIN b ON same_suite(b, a) AND x") == \
        "JOIN b ON (b.task = a.task AND b.suite IS NOT DISTINCT FROM a.suite) AND x"
    assert expand_key_comparisons("same_draw(m, p)").count("IS NOT DISTINCT FROM") == 4
    with pytest.raises(BelugaError, match="same_cells"):
        expand_key_comparisons("same_cells(a, b)")
    # Expanded, each comparison pairs the rows the macro pairs.
    for macro in SAME:
        assert rows(con, expand_key_comparisons(f"SELECT count(*) FROM k x JOIN k y ON {macro}(x, y)")) == \
            rows(con, f"SELECT count(*) FROM k x JOIN k y ON {macro}(x, y)"), macro
    # No view of a store calls one: every call was expanded.
    views = rows(con, "SELECT view_name, sql FROM duckdb_views() WHERE NOT internal")
    assert len(views) > 60 and [v for v, sql in views if "same_" in str(sql)] == []
