"""The generic `classification` task: targets read off expectations (label sets, directional classes), the
suite's label space against the i.i.d. data's, `beluga suite from-table`, and a true three-class run of the
CheckList sentiment suite end to end."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from helpers import DATA, query, recompute_g, run_benchmark, run_cli
from toy_model import TOY_DIR

from beluga_core.contracts.tasks import TaskSettings
from beluga_core.data.suite.suite_schema import Case, SuiteHeader
from beluga_core.tasks.classification import ClassificationTask

# The tests' toy model (tests/toy_model.py): these runs check behaviour, not accuracy.
TOY = TOY_DIR.as_posix()
THREE = ["negative", "neutral", "positive"]


def header(labels: list[str] | None = None, kind: str = "text") -> SuiteHeader:
    return SuiteHeader(name="s", levels=["functionality"], scoring_level="functionality", input_kind=kind,
                       label_space=labels or THREE)


def task(cls: type[ClassificationTask] = ClassificationTask, labels: list[str] | None = None,
         settings: TaskSettings | None = None) -> ClassificationTask:
    t = cls()
    t.configure(settings or TaskSettings())
    t.use_suite(header(labels))
    return t


def case(expectation: dict[str, Any], label: Any = None, inputs: list[Any] | None = None, **kw: Any) -> Case:
    return Case(id="c", groups={"functionality": "f"}, test_type=kw.pop("test_type", "MFT"), loss=kw.pop("loss", "mft"),
                inputs=inputs or ["x"], label=label, expectation=expectation, **kw)


def targets(t: ClassificationTask, c: Case) -> list[tuple[list[float], bool]]:
    return [(target.tolist(), is_set) for _, (target, is_set) in t.mft_items(c)]


# --------------------------------------------------------------------------------------------- targets


# --------------------------------------------------------------------------------------------- label spaces


# --------------------------------------------------------------------------------------------- from-table


def _crossing_table(path: Path) -> tuple[Path, int, int]:
    """A table shaped like a functional test suite whose target column crosses its functionalities and is empty
    for one of them (as HateCheck's target_ident is): (path, rows, rows without a target)."""
    import csv

    targets = {"praise": ["dogs", "cats"], "blame": ["dogs", "cats", "birds"], "plain": [""]}
    rows = []
    for functionality, names in targets.items():
        for i in range(24):
            target = names[i % len(names)]
            thing = target or ["the weather", "this film", "my day"][i % 3]
            label = "positive" if i % 2 else "negative"
            verb = ["really like", "adore"][i % 2 * (i // 2 % 2)] if label == "positive" else "cannot stand"
            rows.append({"case_id": f"{functionality}-{i}", "functionality": functionality, "target_ident": target,
                         "test_case": f"I {verb} {thing}, number {i}", "label_gold": label})
    with path.open("w", newline="", encoding="utf-8") as f:
        writer = csv.DictWriter(f, fieldnames=list(rows[0]))
        writer.writeheader()
        writer.writerows(rows)
    return path, len(rows), sum(1 for r in rows if not r["target_ident"])


def test_from_table_keeps_the_cases_without_a_value_at_a_crossing_level(
        tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch) -> None:
    """--crossing target_ident keeps every row (the default still drops the rows without a target), and a run
    holding target_ident out trains every fold on them, scores them in every other scenario and in none of the
    target_ident folds; the store check holds and the report renders, the scenario complete."""
    from beluga_core.data.suite.suite_files import load_suite

    monkeypatch.setenv("COLUMNS", "200")
    table, n_rows, n_empty = _crossing_table(tmp_path / "functional.csv")
    args = ["suite", "from-table", table, "--text", "test_case", "--label", "label_gold", "--id", "case_id",
            "--groups", "functionality,target_ident"]
    code, printed, err = run_cli(capsys, *args, "--out", tmp_path / "nested.jsonl")
    assert code == 0, err
    assert f"dropped {n_empty} row(s): {n_empty} empty group" in printed
    out = tmp_path / "crossing.jsonl"
    code, printed, err = run_cli(capsys, *args, "--crossing", "target_ident", "--out", out)
    assert code == 0, err
    assert f"{n_rows} case(s) from {n_rows} row(s)" in printed and "dropped" not in printed
    assert "level functionality: 3 group(s) (scoring level)" in printed
    assert f"level target_ident: 3 group(s) (crossing; {n_empty} case(s) with no value kept, in none)" in printed
    suite = load_suite(out)
    assert suite.header.crossing_levels == ["target_ident"] and suite.header.scoring_level == "functionality"
    assert sum(1 for c in suite.cases if "target_ident" not in c.groups) == n_empty
    code, printed, err = run_cli(capsys, "suite", "info", out)
    assert code == 0, err
    flat = " ".join(printed.split())  # a table's title wraps at the table's width
    assert "crossing: target_ident" in flat and f"({n_empty} case(s) in none: a crossing level)" in flat
    # The scoring level needs a value in every row: it cannot be a crossing column.
    code, _, err = run_cli(capsys, *args, "--crossing", "target_ident", "--scoring-level", "target_ident",
                           "--out", tmp_path / "bad.jsonl")
    assert code == 2 and "cannot be a crossing column" in err and not (tmp_path / "bad.jsonl").exists()

    config = tmp_path / "crossing.toml"
    config.write_text(f"""name = "crossing"
configurations = ["iid", "iid-then-t"]
scenarios = ["standard", "seen", "target_ident", "functionality"]
[store]
path = "crossing.duckdb"
[model]
name = "{TOY}"
config_overrides = {{ num_hidden_layers = 1 }}
max_length = 32
[[tasks]]
name = "classification"
suite = "{out}"
iid = "builtin:sst2"
[sizes]
iid_train = 32
iid_test = 16
[training]
batch_size = 16
epochs = 1
""", encoding="utf-8")
    store = tmp_path / "crossing.duckdb"
    run_benchmark(config, store)
    test_cases = dict(query(store, "SELECT s.case_id, c.groups->>'target_ident' FROM case_splits s "
                                   "JOIN cases c USING (case_id) WHERE s.part = 'test'"))
    untargeted = {cid for cid, grp in test_cases.items() if grp is None}
    assert untargeted and len(untargeted) < len(test_cases)
    scored = {}
    for scenario, case_ids in query(store, "SELECT m.scenario, list(o.case_id) FROM outcomes o JOIN models m "
                                           "USING (model_id) WHERE m.config = 'iid-then-t' GROUP BY 1"):
        scored[scenario] = set(case_ids)
    assert scored["seen"] == scored["functionality"] == set(test_cases)
    assert scored["target_ident"] == set(test_cases) - untargeted
    # Every target_ident fold trained on the T_train cases without a target; the store's own checks agree.
    folds = query(store, "SELECT m.heldout_group, count(*) FILTER (WHERE c.groups->>'target_ident' IS NULL) "
                         "FROM model_training_cases t JOIN models m USING (model_id) JOIN cases c "
                         "ON c.suite = t.suite AND c.case_id = t.case_id WHERE m.scenario = 'target_ident' GROUP BY 1")
    assert sorted(g for g, _ in folds) == ["birds", "cats", "dogs"] and all(n > 0 for _, n in folds)
    code, printed, err = run_cli(capsys, "store", "check", store)
    assert code == 0, printed + err
    code, printed, err = run_cli(capsys, "report", store)
    assert code == 0, err
    assert "target_ident" in printed and "†" not in printed  # the scenario is complete, not partial


# --------------------------------------------------------------------------------------------- end to end


@pytest.mark.slow
def test_three_class_sentiment_end_to_end(tmp_path: Path) -> None:
    store = tmp_path / "c.duckdb"
    run_benchmark(DATA / "tiny-classification.toml", store)
    g = {(c, s): (si, ii, gg) for c, s, si, ii, gg in query(store, "SELECT config, scenario, s_suite, s_iid, g "
                                                                   "FROM g_scores")}
    assert set(g) == {("iid", "standard"), ("iid-then-t", "seen"), ("iid-then-t", "test_type")}
    again = recompute_g(store)
    for (config, scenario), values in g.items():
        assert again[("classification", config, scenario)] == pytest.approx(values, abs=1e-9)
    # A three-class head: predictions and gold labels range over the suite's three classes, named.
    assert query(store, "SELECT labels FROM task_heads") == [('["negative","neutral","positive"]',)]
    metrics = query(store, "SELECT metric, is_primary FROM iid_metrics WHERE split = 'test' ORDER BY 1")
    assert {m for m, _ in metrics} == {"accuracy", "macro_f1"}
    names = {n for (n,) in query(store, "SELECT DISTINCT name FROM label_distribution WHERE name IS NOT NULL")}
    assert names <= set(THREE) and names
    per_class = query(store, "SELECT label, support FROM iid_class_scores WHERE split = 'test' AND config = 'iid'")
    assert {lab for lab, _ in per_class} <= {"0", "1", "2"} and sum(s for _, s in per_class) == 64
