"""The DuckDB result store: schema, writer transactions, views recomputed independently, readers."""

from __future__ import annotations

import json
import statistics
from collections import defaultdict
from pathlib import Path
from typing import Any

import duckdb
import numpy as np
import pytest
from helpers import REPO
from toy_store import (
    CASES,
    FUNCS,
    SUITE,
    SUITE_ROW,
    TEST_CASES,
    Dataset,
    all_outcomes,
    build_dataset,
    outcomes_of,
    record,
    result,
    rows_of,
    view,
    write_dataset,
)

from beluga_core.core.errors import BelugaError
from beluga_core.execution.results import IIDResult, JobResult, Outcomes
from beluga_core.store import connection as connection_mod
from beluga_core.store.migrations import MIGRATIONS, SCHEMA_VERSION
from beluga_core.store.reader import VIEWS, done_ids, fetch_dicts, open_store, read_meta
from beluga_core.store.rows import CaseRow, SuiteRow
from beluga_core.store.writer import StoreWriter

CASE_BY_ID = {c.case_id: c for c in CASES}


# ------------------------------------------------------------------- independent recomputation

KEY = ("task", "suite", "model_name", "config", "method", "scenario", "seed", "split_seed")


def expected_pass_rates(d: Dataset) -> dict[tuple, dict[str, Any]]:
    counts: dict[tuple, dict[str, int]] = defaultdict(lambda: {"pass": 0, "fail": 0, "skip": 0})
    for m in d.models:
        if m["status"] != "done":
            continue
        for case_id, outcome, _ in d.outcomes[m["model_id"]]:
            key = (*(m[k] for k in KEY), CASE_BY_ID[case_id].group("functionality"))
            counts[key][outcome] += 1
    out = {}
    for key, c in counts.items():
        evaluable = c["pass"] + c["fail"]
        out[key] = {"n_pass": c["pass"], "n_fail": c["fail"], "n_skip": c["skip"],
                    "pass_rate": c["pass"] / evaluable if evaluable else None,
                    "excluded": (key[0], key[-1]) in d.exclusions}
    return out


def expected_suite_scores(d: Dataset) -> dict[tuple, dict[str, Any]]:
    by_key: dict[tuple, list[dict[str, Any]]] = defaultdict(list)
    for key, r in expected_pass_rates(d).items():
        by_key[key[:-1]].append(r)
    out = {}
    for key, groups in by_key.items():
        used = [g["pass_rate"] for g in groups if not g["excluded"] and g["pass_rate"] is not None]
        out[key] = {"s_suite": statistics.fmean(used) if used else None, "n_groups": len(used),
                    "n_groups_no_evaluable": sum(1 for g in groups
                                                 if not g["excluded"] and g["pass_rate"] is None),
                    "n_groups_excluded": sum(1 for g in groups if g["excluded"]),
                    "n_cases": sum(g["n_pass"] + g["n_fail"] + g["n_skip"] for g in groups)}
    return out


def primary_test_metric(d: Dataset, mid: str) -> tuple[str, float] | None:
    prim = [(name, v) for split, name, v, p in d.metrics[mid] if split == "test" and p]
    return prim[0] if prim else None


def expected_iid_scores(d: Dataset) -> dict[tuple, dict[str, Any]]:
    # Key without the scenario: the seen model's s_iid, or for a configuration without one (iid), the
    # standard model's.
    out: dict[tuple, dict[str, Any]] = {}
    for wanted in ("standard", "seen"):  # seen second, so it wins
        for m in d.models:
            if m["status"] != "done" or m["scenario"] != wanted:
                continue
            prim = primary_test_metric(d, m["model_id"])
            if prim is None:
                continue
            key = tuple(m[k] for k in KEY if k != "scenario")
            out[key] = {"model_id": m["model_id"], "metric": prim[0], "s_iid": prim[1]}
    return out


def harmonic(s: float | None, i: float | None) -> float | None:
    if s is None or i is None:
        return None
    return 0.0 if s + i == 0 else 2 * s * i / (s + i)


def expected_g_scores(d: Dataset) -> dict[tuple, dict[str, Any]]:
    iid = expected_iid_scores(d)
    out = {}
    for key, s in expected_suite_scores(d).items():
        i = iid.get(key[:5] + key[6:])
        s_iid = i["s_iid"] if i else None
        out[key] = {"s_suite": s["s_suite"], "s_iid": s_iid, "g": harmonic(s["s_suite"], s_iid)}
    return out


def assert_rows_match(actual: dict[tuple, dict[str, Any]], expected: dict[tuple, dict[str, Any]]) -> None:
    assert set(actual) == set(expected)
    for key, exp in expected.items():
        got = {k: actual[key][k] for k in exp}
        assert got == pytest.approx(exp, abs=1e-12), key


@pytest.fixture(scope="module")
def dataset() -> Dataset:
    return build_dataset()


@pytest.fixture(scope="module")
def store(tmp_path_factory: pytest.TempPathFactory, dataset: Dataset) -> Path:
    path = tmp_path_factory.mktemp("store") / "results.duckdb"
    write_dataset(path, dataset)
    return path


# --------------------------------------------------------------------------------- the views


def test_pass_rates_match_python(store: Path, dataset: Dataset) -> None:
    actual = view(store, "pass_rates", (*KEY, "scoring_group"))
    expected = expected_pass_rates(dataset)
    assert_rows_match(actual, expected)
    # The data set covers what it claims to: skips, a group that only skips, an excluded group.
    assert any(r["n_skip"] and r["pass_rate"] is not None for r in expected.values())
    assert any(k[-1] == "f4" and r["pass_rate"] is None for k, r in expected.items())
    assert any(r["excluded"] for r in expected.values())
    assert not any(r["excluded"] for k, r in expected.items() if k[0] == "zero")
    # A functionality fold model evaluates exactly one scoring group, so every fold row has one model.
    assert all(r["n_models"] == 1 for k, r in actual.items() if k[5] == "functionality")


def test_suite_scores_match_python(store: Path, dataset: Dataset) -> None:
    actual = view(store, "suite_scores", KEY)
    expected = expected_suite_scores(dataset)
    assert_rows_match(actual, expected)
    scenarios = {k[5] for k in expected}
    assert scenarios == {"standard", "seen", "functionality", "class", "test_type"}
    assert {k[6] for k in expected} == {1, 2}
    seen = expected[("sentiment", SUITE, "bert", "iid-then-t", "vanilla", "seen", 1, 123)]
    assert (seen["n_groups"], seen["n_groups_no_evaluable"], seen["n_groups_excluded"]) == (3, 1, 1)
    assert seen["n_cases"] == len(TEST_CASES)


def test_iid_scores_match_python(store: Path, dataset: Dataset) -> None:
    actual = view(store, "iid_scores", tuple(k for k in KEY if k != "scenario"))
    assert_rows_match(actual, expected_iid_scores(dataset))
    # A suite configuration takes its seen model's score, not that of any fold model.
    row = actual[("sentiment", SUITE, "bert", "iid-then-t", "vanilla", 1, 123)]
    assert row["source_scenario"] == "seen"
    assert row["model_id"] == "sentiment/iid-then-t/vanilla/seen/None/s1/done"
    assert actual[("sentiment", SUITE, "bert", "iid", "vanilla", 1, 123)]["source_scenario"] == "standard"


def test_model_iid_scores_cover_every_done_model(store: Path, dataset: Dataset) -> None:
    actual = view(store, "model_iid_scores", ("model_id",))
    expected = {(m["model_id"],): {"s_iid": primary_test_metric(dataset, m["model_id"])[1]}
                for m in dataset.models
                if m["status"] == "done" and primary_test_metric(dataset, m["model_id"]) is not None}
    assert_rows_match(actual, expected)


def test_g_scores_match_python(store: Path, dataset: Dataset) -> None:
    actual = view(store, "g_scores", KEY)
    expected = expected_g_scores(dataset)
    assert_rows_match(actual, expected)
    assert actual[("zero", SUITE, "bert", "iid", "vanilla", "standard", 1, 123)]["g"] == 0.0
    assert actual[("zero", SUITE, "bert", "iid-then-t", "vanilla", "seen", 1, 123)]["g"] is None
    iid_configs = {k[5] for k in actual if k[3] == "iid"}
    assert iid_configs == {"standard"}


def test_g_summary_and_status_views(store: Path, dataset: Dataset) -> None:
    summary = view(store, "g_summary", ("task", "suite", "model_name", "config", "method", "scenario"))
    g = expected_g_scores(dataset)
    key = ("sentiment", SUITE, "bert", "iid-then-t", "vanilla", "functionality")
    per_seed = [g[(*key, seed, 123)]["g"] for seed in (1, 2)]
    assert summary[key]["n_replicates"] == 2
    assert summary[key]["g_mean"] == pytest.approx(statistics.fmean(per_seed))
    assert summary[key]["g_std"] == pytest.approx(statistics.stdev(per_seed))

    status = view(store, "models_status", KEY)
    failed = status[("sentiment", SUITE, "bert", "iid-then-t", "dropout", "functionality", 1, 123)]
    assert (failed["n_models"], failed["n_done"], failed["n_failed"]) == (1, 0, 1)
    folds = status[("sentiment", SUITE, "bert", "iid-then-t", "vanilla", "functionality", 2, 123)]
    assert (folds["n_done"], folds["n_failed"]) == (len(FUNCS), 0)
    assert view(store, "duplicate_outcomes", ("case_id",)) == {}


def test_label_distribution(store: Path, dataset: Dataset) -> None:
    mid = "sentiment/iid/vanilla/standard/None/s1/done"
    rows = fetch_dicts(store, "label_distribution", where={"model_id": mid})
    iid = {r["label"]: (r["n_pred"], r["n_gold"]) for r in rows if r["source"] == "iid_test"}
    preds = dataset.predictions[mid]
    for label, (n_pred, n_gold) in iid.items():
        assert n_pred == sum(p[3] == label for p in preds)
        assert n_gold == sum(p[2] == label for p in preds)
    suite_rows = [r for r in rows if r["source"] == "suite"]
    assert sum(r["n_pred"] for r in suite_rows) == sum(o[2] is not None for o in dataset.outcomes[mid])


def test_plain_duckdb_reads_every_view(store: Path) -> None:
    con = duckdb.connect(str(store), read_only=True)
    try:
        names = {r[0] for r in con.execute("SELECT view_name FROM duckdb_views() WHERE NOT internal").fetchall()}
        assert set(VIEWS) <= names
        for name in VIEWS:
            con.execute(f"SELECT * FROM {name}").fetchall()
        # The example of docs/reference/store.md: G per scenario for one task.
        rows = con.execute("""SELECT config, method, scenario, avg(g) AS g FROM g_scores
                              WHERE task = 'sentiment' GROUP BY ALL ORDER BY ALL""").fetchall()
        assert rows
    finally:
        con.close()


def test_reader_helpers(store: Path) -> None:
    meta = read_meta(store)
    assert meta["schema_version"] == str(SCHEMA_VERSION)
    assert meta["duckdb_version"] == duckdb.__version__
    assert {"beluga_version", "created_at"} <= set(meta)
    rows = fetch_dicts(store, "g_scores", where={"task": "zero", "seed": 1})
    assert {r["config"] for r in rows} == {"iid", "iid-then-t"}
    with open_store(store) as con:
        assert con.execute("SELECT count(*) FROM runs WHERE status = 'done'").fetchall() == [(1,)]
        with pytest.raises(duckdb.Error):
            con.execute("DELETE FROM g_exclusions")  # read-only
    with pytest.raises(BelugaError, match="unknown store view"):
        fetch_dicts(store, "g_scores; DROP TABLE models")


# ----------------------------------------------------------------------------- the writer


@pytest.fixture
def writer(tmp_path: Path) -> StoreWriter:
    w = StoreWriter(tmp_path / "w.duckdb")
    w.ensure_suite(SUITE_ROW, CASES)
    return w


def test_failed_commit_leaves_no_rows(writer: StoreWriter, monkeypatch: pytest.MonkeyPatch) -> None:
    # An outcome for an unknown case is found after every row was inserted: all of them roll back.
    with pytest.raises(ValueError, match="not in suite"):
        writer.commit(result("m1", [*all_outcomes(), ("nope", "pass")]))
    assert rows_of(writer.path, "m1") == dict.fromkeys(("models", "iid_predictions", "iid_metrics", "outcomes"), 0)

    def boom(*args: Any, **kwargs: Any) -> None:
        raise RuntimeError("disk full")

    monkeypatch.setattr(StoreWriter, "_insert_outcomes", boom)
    with pytest.raises(RuntimeError, match="disk full"):
        writer.commit(result("m1"))
    assert sum(rows_of(writer.path, "m1").values()) == 0
    assert done_ids(writer.path) == set()


def test_failed_model_is_replaced_and_kept_on_error(writer: StoreWriter,
                                                    monkeypatch: pytest.MonkeyPatch) -> None:
    writer.commit(JobResult(record("m1", status="failed", error="OOM"), outcomes_of([])))
    assert done_ids(writer.path) == set()
    assert rows_of(writer.path, "m1")["models"] == 1

    monkeypatch.setattr(StoreWriter, "_insert_outcomes", lambda *a, **k: 1 / 0)
    with pytest.raises(ZeroDivisionError):
        writer.commit(result("m1"))
    monkeypatch.undo()
    con = duckdb.connect(str(writer.path), read_only=True)
    assert con.execute("SELECT status, error FROM models WHERE model_id = 'm1'").fetchall() == [("failed", "OOM")]
    con.close()

    writer.commit(result("m1"))
    assert done_ids(writer.path) == {"m1"}
    assert rows_of(writer.path, "m1") == {"models": 1, "iid_predictions": 5, "iid_metrics": 1,
                                          "outcomes": len(TEST_CASES)}


def test_commit_many_writes_all_or_none_and_deletes_what_it_replaces(writer: StoreWriter) -> None:
    with pytest.raises(ValueError, match="not in suite"):
        writer.commit_many([result("m1"), result("m2", [*all_outcomes(), ("nope", "pass")], seed=2)])
    assert sum(rows_of(writer.path, "m1").values()) == 0          # m1 was fine, and went with m2
    writer.commit_many([result("m1"), result("m2", seed=2)])
    assert done_ids(writer.path) == {"m1", "m2"}
    # m2 again with fewer outcomes (its old rows go, none linger), and m1 replaced by m3.
    writer.commit_many([result("m2", all_outcomes()[:3], seed=2), result("m3", seed=3)], replacing=["m1"])
    assert done_ids(writer.path) == {"m2", "m3"}
    assert sum(rows_of(writer.path, "m1").values()) == 0
    assert rows_of(writer.path, "m2")["outcomes"] == 3


def test_reader_between_commits(writer: StoreWriter) -> None:
    writer.commit(result("m1", all_outcomes("pass")))
    con = duckdb.connect(str(writer.path), read_only=True)  # the writer holds nothing open
    assert con.execute("SELECT s_suite FROM suite_scores").fetchall() == [(1.0,)]
    con.close()
    writer.commit(result("m2", all_outcomes("fail"), seed=2))
    rows = fetch_dicts(writer.path, "suite_scores", order_by=["seed"])
    assert [(r["seed"], r["s_suite"]) for r in rows] == [(1, 1.0), (2, 0.0)]


def test_commit_of_21k_outcomes(tmp_path: Path) -> None:
    # Bulk rows go in as columns (the commit time of such a model is in tools/fixtures/synthetic_store.py).
    n = 21_000
    w = StoreWriter(tmp_path / "big.duckdb")
    ids = [f"case-{i:05d}" for i in range(n)]
    w.ensure_suite(SuiteRow("big", ("functionality",), "functionality", "text", ("0", "1")),
                   [CaseRow(cid, "MFT", {"functionality": f"f{i % 60}"}) for i, cid in enumerate(ids)])
    outcomes = Outcomes.of(ids, ["pass", "fail", "skip"] * (n // 3), ["1", "0", None] * (n // 3))
    iid = [IIDResult("test", ["1"] * 5000, ["0"] * 5000, np.zeros(5000, dtype=bool), {"accuracy": 0.0},
                     "accuracy")]
    for k in range(3):
        w.commit(JobResult(record(f"m{k}", suite="big", seed=k), outcomes, iid))
    rows = fetch_dicts(w.path, "suite_scores", where={"seed": 0})
    assert rows[0]["n_cases"] == n and rows[0]["s_suite"] == pytest.approx(0.5)
    labels = fetch_dicts(w.path, "label_distribution", where={"model_id": "m0", "source": "suite"})
    assert {r["label"]: r["n_pred"] for r in labels} == {"0": n // 3, "1": n // 3}


def test_record_validation(writer: StoreWriter) -> None:
    with pytest.raises(ValueError, match="needs its group"):
        record("m1", scenario="functionality")
    with pytest.raises(ValueError, match="holds nothing out"):
        record("m1", heldout_group="f1")
    with pytest.raises(ValueError, match="outside that group"):
        writer.commit(result("m1", scenario="functionality", heldout_group="f1"))
    with pytest.raises(ValueError, match="outside that group"):
        writer.commit(result("m1", scenario="test_type", heldout_group="MFT"))
    with pytest.raises(ValueError, match="not a fraction"):
        IIDResult("test", [], [], np.zeros(0, dtype=bool), {"exact_match": 81.2}, "exact_match")
    with pytest.raises(ValueError, match="repeat a case id"):
        Outcomes.of(["f1-0", "f1-0"], ["pass", "fail"])
    with pytest.raises(ValueError, match="outcome must be one of"):
        Outcomes.of(["f1-0"], ["passed"])
    assert done_ids(writer.path) == set()
    # The held-out checks accept a fold evaluated on its own group only.
    f1 = [(c.case_id, "pass") for c in TEST_CASES if c.group("functionality") == "f1"]
    writer.commit(result("m1", f1, scenario="functionality", heldout_group="f1"))
    mft = [(c.case_id, "pass") for c in TEST_CASES if c.test_type == "MFT"]
    writer.commit(result("m2", mft, scenario="test_type", heldout_group="MFT"))
    assert done_ids(writer.path) == {"m1", "m2"}


def test_ensure_suite_is_idempotent_and_detects_a_changed_suite(writer: StoreWriter) -> None:
    assert writer.ensure_suite(SUITE_ROW, CASES) == 0
    extra = CaseRow("f1-new", "MFT", {"class": "A", "functionality": "f1"})
    assert writer.ensure_suite(SUITE_ROW, [*CASES, extra]) == 1
    moved = CaseRow("f1-0", "MFT", {"class": "A", "functionality": "f2"}, "2")
    with pytest.raises(BelugaError, match="differs from the one this store already holds"):
        writer.ensure_suite(SUITE_ROW, [moved])
    regold = CaseRow("f1-0", "MFT", {"class": "A", "functionality": "f1"}, "0")
    with pytest.raises(BelugaError, match="gold label"):
        writer.ensure_suite(SUITE_ROW, [regold])
    relabelled = SuiteRow(SUITE, ("class", "functionality"), "functionality", "text", ("a", "b", "c"))
    with pytest.raises(BelugaError, match="label space"):
        writer.ensure_suite(relabelled, CASES)
    # Same groups in another key order is the same case.
    same = CaseRow("f1-0", "MFT", {"functionality": "f1", "class": "A"}, "2")
    assert writer.ensure_suite(SUITE_ROW, [same]) == 0


def test_runs_and_exclusions(writer: StoreWriter) -> None:
    workers = {"workers": "auto", "slots": ["cuda:0", "cuda:0"], "threads": [8, 8], "why": "auto: …"}
    run_id = writer.begin_run(Path("b.toml"), "x = 1", device="cuda:0", executor=workers)
    with pytest.raises(ValueError, match="no run"):
        writer.finish_run("missing")
    writer.finish_run(run_id, "interrupted")
    runs = fetch_dicts(writer.path, "runs")
    assert [(r["run_id"], r["status"], r["device"]) for r in runs] == [(run_id, "interrupted", "cuda:0")]
    assert json.loads(runs[0]["executor"]) == workers
    assert runs[0]["duckdb_version"] == duckdb.__version__ and runs[0]["finished_at"] >= runs[0]["started_at"]
    writer.set_g_exclusions("sentiment", ["f4", "f5"])
    writer.set_g_exclusions("sentiment", ["f5"])
    writer.set_g_exclusions("qqp", [])
    assert [(r["task"], r["scoring_group"]) for r in fetch_dicts(writer.path, "g_exclusions")] == \
        [("sentiment", "f5")]


def test_external_evaluation(tmp_path: Path) -> None:
    w = StoreWriter(tmp_path / "ext.duckdb")
    kw: dict[str, Any] = {"task": "sentiment", "suite": SUITE_ROW, "cases": CASES}
    mid = w.record_external_evaluation(model_name="org/sst2-model", outcomes=outcomes_of(all_outcomes("fail")), **kw)
    again = w.record_external_evaluation(model_name="org/sst2-model", outcomes=outcomes_of(all_outcomes("pass")),
                                         **kw)
    other = w.record_external_evaluation(model_name="org/other", outcomes=outcomes_of(all_outcomes("fail")), **kw)
    assert mid == again != other
    rows = fetch_dicts(w.path, "g_scores", order_by=["model_name"])
    assert [(r["model_name"], r["config"], r["method"], r["scenario"], r["s_suite"]) for r in rows] == [
        ("org/other", "external", "none", "standard", 0.0), ("org/sst2-model", "external", "none", "standard", 1.0)]
    assert rows[1]["s_iid"] is None


def test_pass_rates_of_a_hand_made_group_in_memory() -> None:
    # b: pass, skip, fail → 1/2; a: fail → 0; c: skip only → no rate, left out of s_T: s_T = 1/4.
    w = StoreWriter.in_memory()
    cases = [CaseRow(cid, "MFT", {"functionality": g}) for cid, g in
             (("1", "b"), ("2", "a"), ("3", "b"), ("4", "c"), ("5", "b"))]
    w.record_external_evaluation(model_name="m", task="t", suite=SuiteRow("s", ("functionality",), "functionality",
                                                                          "text", ("x", "y")),
                                 cases=cases, outcomes=Outcomes.of(["1", "2", "3", "4", "5"],
                                                                   ["pass", "fail", "skip", "skip", "fail"]))
    with w.connection() as con:
        rates = con.execute("SELECT scoring_group, n_pass, n_fail, n_skip, pass_rate FROM pass_rates "
                            "ORDER BY 1").fetchall()
        (s_t,) = con.execute("SELECT s_suite FROM suite_scores").fetchone()
    assert rates == [("a", 0, 1, 0, 0.0), ("b", 1, 1, 1, 0.5), ("c", 0, 0, 1, None)]
    assert s_t == 0.25


# --------------------------------------------------------------------- creating and opening


@pytest.mark.usefixtures("real_store_creation")
def test_new_store_is_complete_or_absent(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    path = tmp_path / "sub" / "new.duckdb"
    real = connection_mod.view_sql
    monkeypatch.setattr("beluga_core.store.migrations.view_sql",
                        lambda name: "CREATE VIEW broken AS SELECT * FROM nowhere;" if name == "views/10_scores.sql"
                        else real(name))
    with pytest.raises(duckdb.Error):
        StoreWriter(path)
    assert not path.exists()
    assert list(path.parent.iterdir()) == []  # no temporary file left behind
    monkeypatch.undo()
    StoreWriter(path)
    assert read_meta(path)["schema_version"] == str(SCHEMA_VERSION)


def test_newer_schema_version_is_refused(writer: StoreWriter) -> None:
    con = duckdb.connect(str(writer.path))
    con.execute("UPDATE beluga_meta SET value = ? WHERE key = 'schema_version'", [str(SCHEMA_VERSION + 1)])
    con.close()
    both = rf"schema version {SCHEMA_VERSION + 1}.*up to {SCHEMA_VERSION}"
    with pytest.raises(BelugaError, match=both):
        StoreWriter(writer.path)
    with pytest.raises(BelugaError, match=both):
        read_meta(writer.path)


def test_files_that_are_not_stores(tmp_path: Path) -> None:
    other = tmp_path / "other.duckdb"
    con = duckdb.connect(str(other))
    con.execute("CREATE TABLE t (x INTEGER)")
    con.close()
    with pytest.raises(BelugaError, match="not a beluga result store"):
        StoreWriter(other)
    garbage = tmp_path / "garbage.duckdb"
    garbage.write_text("not a database\n" * 100)
    with pytest.raises(BelugaError, match="not a DuckDB database"):
        StoreWriter(garbage)
    with pytest.raises(BelugaError, match="no such result store"):
        read_meta(tmp_path / "missing.duckdb")
    # An empty DuckDB file (e.g. left by a CLI) becomes a store.
    empty = tmp_path / "empty.duckdb"
    duckdb.connect(str(empty)).close()
    StoreWriter(empty)
    assert read_meta(empty)["schema_version"] == str(SCHEMA_VERSION)


@pytest.mark.usefixtures("real_store_creation")
def test_new_store_is_readable_by_duckdb_1x(tmp_path: Path) -> None:
    import struct

    path = tmp_path / "compat.duckdb"
    StoreWriter(path).commit(JobResult(record("m1", suite=None), outcomes_of([])))
    with path.open("rb") as fh:
        magic, version = struct.Struct("<8x4sQ").unpack(fh.read(20))
    assert (magic, version) == (b"DUCK", 64)  # the storage version of DuckDB 1.0 (2.0's own is unreadable by 1.x)


def test_suite_rows_record_gold_labels(writer: StoreWriter) -> None:
    from beluga_core.data.suite.suite_files import Suite
    from beluga_core.data.suite.suite_schema import Case, SuiteHeader
    from beluga_core.evaluation.gold import case_gold
    from beluga_core.store.suite_rows import suite_rows

    header = SuiteHeader(name="mini", levels=["class", "functionality"], scoring_level="functionality",
                         input_kind="text", label_space=["neg", "pos"], test_types=["MFT"])
    cases = [Case(id=f"c{i}", groups={"class": "A", "functionality": f"f{i % 2}"}, test_type="MFT", loss="mft",
                  inputs=["a text"], label=i % 2, expectation={"kind": "eq", "target": "label"}) for i in range(3)]
    cases.append(Case(id="c3", groups={"class": "A", "functionality": "f1"}, test_type="MFT", loss="mft",
                      inputs=["a text"], expectation={"kind": "not_eq", "value": "neg"}))
    row, rows = suite_rows(Suite(header, cases), case_gold)
    assert row == SuiteRow("mini", ("class", "functionality"), "functionality", "text", ("neg", "pos"))
    assert rows[1] == CaseRow("c1", "MFT", {"class": "A", "functionality": "f1"}, "1")
    assert rows[3].gold == "not 0"
    assert writer.ensure_suite(row, rows) == 4
    names = fetch_dicts(writer.path, "label_names", where={"suite": "mini"})
    assert [(r["label"], r["name"]) for r in names] == [("0", "neg"), ("1", "pos")]


def test_an_older_store_is_migrated_one_numbered_step_at_a_time(tmp_path: Path) -> None:
    # A store as beluga 0.1 wrote it: schema 2 (migrations 1 and 2), with a model in it.
    path = tmp_path / "old.duckdb"
    con = duckdb.connect(str(path))
    for m in MIGRATIONS[:2]:
        con.execute(m.sql)
    con.execute("INSERT INTO beluga_meta VALUES ('schema_version', '2'), ('beluga_version', '0.1.0')")
    con.execute("INSERT INTO cases VALUES ('toy', 'f1-0', 'MFT', 'f1', '{\"functionality\": \"f1\"}')")
    con.execute("INSERT INTO models (model_id, task, config, method, scenario, status) "
                "VALUES ('old', 'sentiment', 'iid', 'vanilla', 'standard', 'done')")
    con.close()
    w = StoreWriter(path)
    assert read_meta(path)["schema_version"] == str(SCHEMA_VERSION) == str(len(MIGRATIONS))
    assert done_ids(w.path) == {"old"}
    # The old case gains a gold label when a run of the same suite records its cases again.
    w.ensure_suite(SuiteRow("toy", ("functionality",), "functionality", "text", ("a", "b")),
                   [CaseRow("f1-0", "MFT", {"functionality": "f1"}, "1")])
    assert fetch_dicts(path, "cases")[0]["gold"] == "1"
    assert [m.version for m in MIGRATIONS] == list(range(1, len(MIGRATIONS) + 1))


def test_a_failed_migration_leaves_the_store_at_the_last_complete_version(tmp_path: Path,
                                                                          monkeypatch: pytest.MonkeyPatch) -> None:
    path = tmp_path / "old.duckdb"
    con = duckdb.connect(str(path))
    for m in MIGRATIONS[:2]:
        con.execute(m.sql)
    con.execute("INSERT INTO beluga_meta VALUES ('schema_version', '2')")
    con.close()
    broken = MIGRATIONS[3]
    monkeypatch.setattr(type(broken), "sql", property(
        lambda m: "CREATE TABLE oops (x INT); SELECT * FROM nowhere" if m.version == broken.version
        else connection_mod.sql_file(f"migrations/{m.version:04d}_{m.name}.sql")))
    with pytest.raises(duckdb.Error):
        StoreWriter(path)
    assert read_meta(path)["schema_version"] == str(broken.version - 1)
    con = duckdb.connect(str(path), read_only=True)
    assert "oops" not in {r[0] for r in con.execute("SELECT table_name FROM information_schema.tables").fetchall()}
    con.close()


def test_documented_queries_run(store: Path) -> None:
    # docs/reference/store.md's examples must keep working against the real views.
    import re

    doc = (REPO / "docs" / "reference" / "store.md").read_text(encoding="utf-8")
    blocks = re.findall(r"```sql\n(.*?)```", doc, re.S)
    assert len(blocks) >= 5
    con = duckdb.connect(str(store), read_only=True)
    try:
        for block in blocks:
            block = block.replace("seed = 42", "seed = 1")
            block = block.replace("<method model id>", "sentiment/iid-then-t/vanilla/seen/None/s1/done")
            block = block.replace("<iid model id>", "sentiment/iid/vanilla/standard/None/s1/done")
            for statement in filter(str.strip, block.split(";")):
                assert con.execute(statement).fetchall() is not None
    finally:
        con.close()


SCENARIO_KEY = {"task", "suite", "model_name", "config", "method", "scenario", "seed", "split_seed", "variant"}
SELECTION_KEY = {"task", "suite", "model_name", "config", "method", "seed", "split_seed", "variant", "scope_level",
                 "scope_group"}


def test_every_table_view_and_column_is_documented(writer: StoreWriter) -> None:
    import re

    doc = (REPO / "docs" / "reference" / "store.md").read_text(encoding="utf-8")
    # A section is its heading line and text; "`other` plus …" documents other's columns too.
    sections = {m.group(1): m.group(0) for m in
                re.finditer(r"^### `([a-z_0-9]+)`.*?(?=^##)", doc + "\n##", re.M | re.S)}
    with writer.store.connection(read_only=True) as con:
        relations = [r[0] for r in con.execute("SELECT table_name FROM information_schema.tables "
                                               "WHERE table_schema = 'main' ORDER BY 1").fetchall()]
        undocumented = []
        for name in relations:
            if name not in sections:
                undocumented.append(name)
                continue
            text = sections[name]
            named = {w for span in re.findall(r"`([^`]*)`", text) for w in re.findall(r"[a-z_0-9]+", span)}
            if "scenario key" in text:
                named |= SCENARIO_KEY
            if "selection key" in text.lower():
                named |= SELECTION_KEY
            for other in re.findall(r"`([a-z_0-9]+)` plus", text):
                named |= {r[0] for r in con.execute("SELECT column_name FROM information_schema.columns "
                                                    "WHERE table_name = ?", [other]).fetchall()}
            columns = [r[0] for r in con.execute("SELECT column_name FROM information_schema.columns "
                                                 "WHERE table_name = ?", [name]).fetchall()]
            undocumented += [f"{name}.{c}" for c in columns if c not in named]
    assert len(relations) > 40 and undocumented == []
    # Nor does the reference document what a store does not have: every table and view it gives a section is one.
    assert sorted(set(sections) - set(relations)) == []


def test_the_store_reference_lists_every_invariant_store_check_runs() -> None:
    """docs/reference/store.md's table is the checks `beluga store check` runs, no more, no fewer (it said 17 while
    the command checked 21)."""
    import re

    from beluga_core.store.store_checks import INVARIANTS

    text = (REPO / "docs" / "reference" / "store.md").read_text(encoding="utf-8")
    section = text[text.index("## Invariants (`beluga store check`)"):text.index("## Report views")]
    listed = [line.split("|")[1].strip() for line in section.splitlines()
              if line.startswith("| ") and not line.startswith("| invariant") and not line.startswith("| ---")]
    checked = [inv.name for inv in INVARIANTS] + ["training cases as recorded", "schema version known"]
    assert listed == checked
    assert re.search(rf"it checks the {len(checked)} below", " ".join(section.split()))


def test_a_writer_re_creates_the_views_only_when_their_definitions_changed(tmp_path: Path,
                                                                           monkeypatch: pytest.MonkeyPatch) -> None:
    from beluga_core.store import migrations

    path = tmp_path / "v.duckdb"
    StoreWriter(path)
    digest = migrations.views_digest()
    assert read_meta(path)["views_digest"] == digest
    created: list[str] = []
    real = migrations.view_sql
    monkeypatch.setattr(migrations, "view_sql", lambda name: created.append(name) or real(name))
    StoreWriter(path)                                   # views current: none re-created
    assert created == []
    con = duckdb.connect(str(path))
    con.execute("DROP VIEW g_scores")
    con.execute("UPDATE beluga_meta SET value = 'another beluga' WHERE key = 'views_digest'")
    con.close()
    StoreWriter(path)                                   # another definition: every view re-created, in order
    assert created == sorted(created) and len(created) == len(migrations.view_files())
    assert read_meta(path)["views_digest"] == digest and "g_scores" in VIEWS
    with open_store(path) as con:
        assert con.execute("SELECT count(*) FROM g_scores").fetchone() == (0,)
