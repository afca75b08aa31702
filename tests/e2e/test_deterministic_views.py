"""The store reads the same bytes every time (issue 54): every view of a store whose outcomes span three or more
DuckDB row groups, read 5 times in fresh connections at 4 threads, is bit-identical to its read at 1 thread.

DuckDB splits an aggregate's work by row groups and adds the threads' partial sums in the order they finish, so `avg`
over DOUBLE gave several distinct last bits once a table spanned several row groups. The store here is the benchmarks'
synthetic store (three training seeds, 22k outcomes) copied into a database of 2,048-row row groups, DuckDB's
smallest: its outcomes span 11 or more, the split a 1.3M-row store gets at the default 122,880. Before migration 17 its
views read differently in 20 reads: up to 8 distinct `table3`s, `g_summary`s …; at the default row-group size the same
happened from ~200k outcomes (280k: 3 to 6 distinct in ten reads). With migration 17's macros put back as plain `avg`,
`sum` and `stddev_samp`, 12 views differed from the 1-thread read in 9 or 10 of 10 reads at 4 threads (DuckDB 2.0.1),
so 5 reads catch it. Each read digests every view in SQL (the row count, and the XOR and the sum of the rows' hashes:
DuckDB hashes a DOUBLE by its bits, so a last-bit difference changes them). It runs in the floors job too (DuckDB 1.2.0,
where binding `table3` alone takes ~8 s a read: 5 reads, not the 40 of before, keep it well inside the test timeout).
"""

from __future__ import annotations

from pathlib import Path

import duckdb
import pytest

from beluga_core.store.reader import VIEWS
from tools.fixtures.synthetic_store import build_synthetic_store

ROW_GROUP = 2_048   # DuckDB's smallest row group (its default: 122,880 rows)
READS = 5   # at 4 threads, each against the one read at 1 thread
Digest = tuple[int, int, int]


@pytest.fixture(scope="module")
def big_store(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The synthetic store (40 T_test cases per functionality, one configuration in every scenario, three training
    seeds), copied whole (tables, views, macros) into a database of 2,048-row row groups."""
    folder = tmp_path_factory.mktemp("big")
    built, path = folder / "built.duckdb", folder / "big.duckdb"
    build_synthetic_store(built, per_group=40, configs=("iid-plus-t",), seeds=(42, 43, 44))
    con = duckdb.connect()
    try:
        con.execute(f"ATTACH '{built}' AS built (READ_ONLY)")
        con.execute(f"ATTACH '{path}' AS big (ROW_GROUP_SIZE {ROW_GROUP}, STORAGE_VERSION 'v1.0.0')")
        con.execute("COPY FROM DATABASE built TO big")
    finally:
        con.close()
    return path


def digests(store: Path, threads: int) -> dict[str, Digest]:
    con = duckdb.connect(str(store), read_only=True, config={"threads": threads})
    try:
        out = {}
        for view in VIEWS:
            row = con.execute(f"SELECT count(*), coalesce(bit_xor(hash(v)), 0), coalesce(sum(hash(v)::HUGEINT), 0) "
                              f"FROM {view} v").fetchone()
            assert row is not None
            out[view] = (int(row[0]), int(row[1]), int(row[2]))
        return out
    finally:
        con.close()


def differing_views(store: Path, reads: int = READS) -> dict[str, int]:
    """The views whose digest, in ``reads`` reads at 4 threads (each a fresh connection), differs from the one read at
    1 thread: each with how many reads differed. One thread adds in one order; four add in the order they finish."""
    reference = digests(store, 1)
    differed = dict.fromkeys(VIEWS, 0)
    for _ in range(reads):
        for view, digest in digests(store, 4).items():
            differed[view] += digest != reference[view]
    return {view: n for view, n in differed.items() if n}


def test_every_view_reads_the_same_bits_every_time(big_store: Path) -> None:
    con = duckdb.connect(str(big_store), read_only=True)
    try:
        (n_outcomes,) = con.execute("SELECT count(*) FROM outcomes").fetchone() or (0,)
        row_groups = con.execute("SELECT count(DISTINCT row_group_id) FROM pragma_storage_info('outcomes')").fetchone()
    finally:
        con.close()
    assert n_outcomes > 10 * ROW_GROUP and row_groups is not None and row_groups[0] >= 11, (n_outcomes, row_groups)
    varying = differing_views(big_store)
    assert varying == {}, f"views that read differently at 4 threads than at 1 (reads that differed): {varying}"
    # Not vacuous: the views that aggregate floats have rows here.
    reference = digests(big_store, 1)
    for view in ("suite_scores", "g_scores", "g_summary", "table3", "scenario_summary", "pass_rate_summary"):
        assert reference[view][0] > 0, view
