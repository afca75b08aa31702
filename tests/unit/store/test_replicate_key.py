"""The replicate key, written once (migration 18): known answers for its NULL handling and coarser cells, and no
join anywhere else spells the key columns out."""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Iterator

import duckdb
import pytest
from helpers import REPO

from beluga_core.store.migrations import migrate

KEY = ("task", "suite", "model_name", "config", "method", "seed", "split_seed", "variant")


@pytest.fixture(scope="module")
def con() -> Iterator[duckdb.DuckDBPyConnection]:
    c = duckdb.connect()
    migrate(c, 0)
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


def expected(row: dict[str, object], without: tuple[str, ...] = ()) -> str:
    """The id by hand: md5 of the JSON array of the key columns as text, JSON null where NULL or left out."""
    values = [None if c in without or row[c] is None else str(row[c]) for c in KEY]
    return hashlib.md5(json.dumps(values, separators=(",", ":")).encode()).hexdigest()


def rows(con: duckdb.DuckDBPyConnection, sql: str) -> list[tuple[object, ...]]:
    return con.execute(sql).fetchall()


# Each coarser key: the columns it leaves out.
COARSER = {"draw_key": ("config", "method"), "cell_key": ("seed",), "cell_draw_key": ("seed", "config", "method"),
           "over_tasks_key": ("task", "suite", "model_name"), "recipe_key": ("model_name", "seed", "split_seed"),
           "suite_key": ("model_name", "config", "method", "seed", "split_seed", "variant")}


def test_every_key_is_md5_of_the_columns_as_json_with_null_kept(con: duckdb.DuckDBPyConnection) -> None:
    got = rows(con, f"SELECT {', '.join(KEY)}, replicate_key(k), {', '.join(f'{m}(k)' for m in COARSER)} "
                    "FROM k ORDER BY ALL")
    assert len(got) == 6
    for r in got:
        row = dict(zip(KEY, r[:8], strict=True))
        assert r[8] == expected(row)
        for value, left_out in zip(r[9:], COARSER.values(), strict=True):
            assert value == expected(row, left_out)


def test_null_matches_null_and_nothing_else(con: duckdb.DuckDBPyConnection) -> None:
    # Six distinct cells: a NULL suite is not the suite named 'null'; NULL seed with split seed 1 is not seed 1.
    assert rows(con, "SELECT count(DISTINCT replicate_key(k)) FROM k") == [(6,)]
    # Each row joins itself only, NULL columns included.
    assert rows(con, "SELECT count(*) FROM k a JOIN k b ON replicate_key(a) = replicate_key(b)") == [(6,)]
    # One draw: the tbc and iid rows of seed 1 (2·2 pairs), and 4 singletons.
    assert rows(con, "SELECT count(*) FROM k a JOIN k b ON draw_key(a) = draw_key(b)") == [(8,)]


def test_the_coarser_keys_read_relations_without_the_columns_they_pool(con: duckdb.DuckDBPyConnection) -> None:
    for macro, left_out in COARSER.items():
        kept = [c for c in KEY if c not in left_out]
        pooled = rows(con, f"SELECT count(DISTINCT {macro}(r)) FROM (SELECT DISTINCT {', '.join(kept)} FROM k) r")
        assert pooled == rows(con, f"SELECT count(DISTINCT ({', '.join(kept)})) FROM k"), macro


def test_a_numeric_column_as_text_or_as_a_number_is_one_key(con: duckdb.DuckDBPyConnection) -> None:
    # Temporary tables of beluga's Python side hold split_seed as text; the key must not tell them apart.
    assert rows(con, """SELECT count(*) FROM k JOIN (SELECT * REPLACE (split_seed::VARCHAR AS split_seed) FROM k) t
                        ON replicate_key(k) = replicate_key(t)""") == [(6,)]


_KEY_PREDICATE = re.compile(r"\b(task|suite|model_name|config|method|seed|split_seed|variant)\s+IS\s+NOT\s+DISTINCT",
                            re.IGNORECASE)


def test_no_join_spells_the_key_columns_out() -> None:
    """The key columns are compared in replicate_key (migration 18, by value) and nowhere else: no SQL file or Python
    module of beluga compares one NULL-safely by hand."""
    found = [f"{p.relative_to(REPO)}:{text.count(chr(10), 0, m.start()) + 1}"
             for p in sorted((REPO / "beluga_core").rglob("*")) if p.suffix in (".sql", ".py")
             for text in [p.read_text(encoding="utf-8")] for m in _KEY_PREDICATE.finditer(text)]
    assert found == []
