"""What a refactoring must not change, held against records made before it (tools/fixtures/build_golden.py):
every shipped config's job ids, and every view of each tiny config's store, recomputed by the current code over
the raw rows the earlier code wrote.

The raw tables, not retrained numbers, are what is compared: a run on another CPU trains other numbers, while the
views of the same rows must come out the same. A refactoring that changes a plan or a view on purpose records the
goldens again (``python -m tools.fixtures.build_golden ids|stores|views``) and says why in its commit. Floats compare
exactly: the views read the same bits on every read (migration 17).

These goldens never run the worker. The worker golden does (tests/e2e/test_worker_golden.py: it trains, so it is
an end-to-end test): tests/data/tiny-steps.toml run by today's worker, its raw rows — outcomes, predictions,
i.i.d. metrics and every typed step's rows — compared with tests/data/golden/tiny-steps/worker_rows.json.gz,
exactly on the recorded machine fingerprint and the floats within a stated tolerance elsewhere; it is recorded
again on purpose only (``python -m tools.fixtures.build_golden worker``, the reason in the commit)."""

from __future__ import annotations

import gzip
import json
from pathlib import Path
from typing import Any

import pytest
from helpers import REPO, as_recorded, shipped_configs, tiny_configs

from tools.fixtures import build_golden  # the recorder and this test share one definition of "a view's rows"

GOLDEN = REPO / "tests" / "data" / "golden"

RECORDED_IDS: dict[str, Any] = json.loads(gzip.decompress((GOLDEN / "job_ids.json.gz").read_bytes()))
STORES = sorted(p for p in GOLDEN.iterdir() if p.is_dir())


def test_the_goldens_cover_every_shipped_and_tiny_config() -> None:
    configs = {str(p.relative_to(REPO)) for p in [*shipped_configs(), *tiny_configs()]}
    assert set(RECORDED_IDS) == configs   # a new config is recorded with the code it came with
    assert {p.name for p in STORES} == {Path(c).stem for c in configs if c.startswith("tests/")}


@pytest.mark.parametrize("config", sorted(RECORDED_IDS))
def test_job_ids_are_those_recorded(config: str) -> None:
    recorded = RECORDED_IDS[config]
    now = build_golden.job_ids(REPO / config)
    if "error" in recorded:   # a config whose data a run makes first (its suite file); the error must stay the same
        assert "error" in now and now["error"] == recorded["error"]
        return
    assert now == recorded, f"{config}: {len(set(now.get('jobs', [])) ^ set(recorded['jobs']))} ids differ"


# The ids before the IID model's identity hashed only what its training reads (issue 54; the changes and their reasons:
# benchmarks/store/job_id_changes.py, benchmarks/store/records/job_id_changes.txt).
SCHEME1_IDS: dict[str, Any] = json.loads(gzip.decompress((GOLDEN / "job_ids.scheme1.json.gz").read_bytes()))


@pytest.mark.parametrize("config", sorted(c for c, v in SCHEME1_IDS.items() if c.startswith("tests/") and "jobs" in v))
def test_a_store_of_the_earlier_iid_identity_keeps_every_id(config: str) -> None:
    """Planned for a store that holds an earlier version's models, a config keeps every id it had: the IID model
    takes its earlier id, and the folds that start from it keep theirs (so the store resumes)."""
    recorded = SCHEME1_IDS[config]
    assert build_golden.job_ids(REPO / config, store_ids=recorded["jobs"]) == recorded


@pytest.mark.parametrize("golden", STORES, ids=[p.name for p in STORES])
def test_every_view_is_what_it_was_over_the_same_rows(golden: Path, tmp_path: Path) -> None:
    views = build_golden.golden_views(golden, tmp_path / "s.duckdb")
    recorded = json.loads(gzip.decompress((golden / "views.json.gz").read_bytes()))
    assert set(views) == set(recorded)
    for view, rows in recorded.items():
        now = json.loads(json.dumps(views[view], default=str))   # the recorder's own JSON round trip
        assert now["columns"] == rows["columns"], view
        assert now["rows"] == rows["rows"], f"{golden.name}: view {view} differs"


# Stores an earlier beluga wrote, with every view as it read them (tests/data/stores/README.md), from schema 16 on:
# each migrates when read and its views are unchanged (floats to 9 digits up to schema 16, which was recorded
# before the views read the same bits on every read; exactly from then on).
EARLIER = sorted(p for p in (REPO / "tests" / "data" / "stores").glob("schema*.duckdb.gz")
                 if int(p.name.removeprefix("schema").split(".")[0]) >= 16)


@pytest.mark.parametrize("fixture", EARLIER, ids=[p.name.split(".")[0] for p in EARLIER])
def test_a_store_of_an_earlier_schema_migrates_and_reads_the_same(fixture: Path, tmp_path: Path) -> None:
    import duckdb

    from beluga_core.store.migrations import SCHEMA_VERSION
    from beluga_core.store.reader import open_store, read_meta

    version = int(fixture.name.removeprefix("schema").split(".")[0])
    store = tmp_path / "old.duckdb"
    store.write_bytes(gzip.decompress(fixture.read_bytes()))
    assert read_meta(store)["schema_version"] == str(version) and version < SCHEMA_VERSION
    with open_store(store):   # a reader migrates it
        pass
    assert read_meta(store)["schema_version"] == str(SCHEMA_VERSION)
    con = duckdb.connect(str(store), read_only=True)
    try:
        views = build_golden.view_rows(con, digits=9 if version <= 16 else None)
    finally:
        con.close()
    recorded = json.loads(gzip.decompress(fixture.with_name(f"schema{version}.views.json.gz").read_bytes()))
    assert set(recorded) <= set(views)
    for view, rows in recorded.items():
        now = as_recorded(json.loads(json.dumps(views[view], default=str)), rows["columns"])
        assert now["columns"] == rows["columns"], view
        assert now["rows"] == rows["rows"], f"schema {version}: view {view} differs"
