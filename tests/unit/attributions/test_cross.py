"""Cross-suite evaluation and the only:LEVEL scenarios: which eval cases each fold sees, the views against
independent recomputations on hand-made stores, config errors, and a tiny real run."""

from __future__ import annotations

import json
from collections import defaultdict
from pathlib import Path
from typing import Any

import pytest
from helpers import DATA, config_with, doc_blocks, query, run_cli

from beluga_core.config.schema import EvalSuiteSpec
from beluga_core.core.errors import BelugaError
from beluga_core.data.suite.suite_files import Suite
from beluga_core.data.suite.suite_schema import Case, SuiteHeader
from beluga_core.execution.results import CrossResult, IIDResult, JobResult, ModelRecord, Outcomes
from beluga_core.planning.cross_evals import plan_eval_suite
from beluga_core.planning.jobs import Fold
from beluga_core.store.reader import done_ids
from beluga_core.store.rows import CaseRow, SuiteRow
from beluga_core.store.writer import StoreWriter

# ------------------------------------------------------------------------------------------ hand-made suites

TRAIN_GROUPS = {"f1": ("A", "MFT"), "f2": ("A", "INV"), "f3": ("B", "MFT"), "f4": ("B", "DIR")}
EVAL_GROUPS = {"e1": "MFT", "e2": "INV", "e3": "MFT", "e4": "MFT"}


def _case(cid: str, groups: dict[str, str], test_type: str) -> Case:
    pairwise = test_type in ("INV", "DIR")
    return Case(id=cid, groups=groups, test_type=test_type, loss=test_type.lower() if pairwise else "mft",
                inputs=["a film", "a movie"] if pairwise else ["a film"], label=None if pairwise else 1,
                expectation={"kind": "inv"} if pairwise else {"kind": "eq", "target": "label"})


def train_suite() -> Suite:
    header = SuiteHeader(name="train", levels=["class", "functionality"], scoring_level="functionality",
                         input_kind="text", label_space=["negative", "positive"])
    return Suite(header, [_case(f"{f}-{i}", {"class": c, "functionality": f}, t)
                          for f, (c, t) in TRAIN_GROUPS.items() for i in range(2)])


def eval_suite(**header: Any) -> Suite:
    h = SuiteHeader(name="evals", levels=["phenomenon"], scoring_level="phenomenon", input_kind="text",
                    label_space=["negative", "positive"], **header)
    return Suite(h, [_case(f"{g}-{i}", {"phenomenon": g}, t) for g, t in EVAL_GROUPS.items() for i in range(3)])


MAP = {"functionality": {"e1": "f1", "e2": "f2", "e3": "f3"}}   # e4 maps to nothing


def plan(spec: EvalSuiteSpec, evals: Suite | None = None, levels: tuple[str, ...] = ("functionality", "class",
                                                                                      "test_type")) -> Any:
    return plan_eval_suite(spec, "tasks.0.eval_suites.0", train_suite(), evals or eval_suite(), levels=list(levels),
                           seed=123, config_path=Path("bench.toml"))


def fold(level: str | None, group: str | None) -> Fold:
    return Fold(level or "seen", group, (), ())


def test_folds_see_the_eval_cases_mapped_to_their_held_out_group() -> None:
    p = plan(EvalSuiteSpec(suite="x", maps_to=MAP))
    every = tuple(c.id for c in eval_suite().cases)
    assert p.eval_ids(fold(None, None)) == every                      # seen (and standard, only:LEVEL): all
    assert p.eval_ids(fold("functionality", "f1")) == ("e1-0", "e1-1", "e1-2")
    assert p.eval_ids(fold("functionality", "f4")) == ()              # nothing maps to f4
    # class is derived: each functionality lies in one class (f1, f2 in A; f3 in B).
    assert p.eval_ids(fold("class", "A")) == ("e1-0", "e1-1", "e1-2", "e2-0", "e2-1", "e2-2")
    assert p.eval_ids(fold("class", "B")) == ("e3-0", "e3-1", "e3-2")
    assert "derived from functionality" in p.how["class"]
    # test_type: every eval case keeps its own test type (e2 is INV, the rest MFT; the suite has no DIR).
    assert p.eval_ids(fold("test_type", "INV")) == ("e2-0", "e2-1", "e2-2")
    assert len(p.eval_ids(fold("test_type", "MFT"))) == 9 and p.eval_ids(fold("test_type", "DIR")) == ()
    # The unmapped group e4 is judged by the models that hold nothing out only.
    assert not any(c.startswith("e4") for lvl, m in p.maps.items() if lvl != "test_type" for c in m)
    # Digests differ between what two folds see and are stable.
    assert p.digest(fold("class", "A")) != p.digest(fold("class", "B"))
    assert p.digest(fold("class", "A")) == plan(EvalSuiteSpec(suite="x", maps_to=MAP)).digest(fold("class", "A"))


def test_the_header_mapping_applies_and_the_config_replaces_it() -> None:
    evals = eval_suite(maps_to={"functionality": {"e4": "f4"}})
    from_header = plan(EvalSuiteSpec(suite="x"), evals)
    assert from_header.eval_ids(fold("functionality", "f4")) == ("e4-0", "e4-1", "e4-2")
    assert "suite header" in from_header.how["functionality"]
    from_config = plan(EvalSuiteSpec(suite="x", maps_to=MAP), evals)
    assert from_config.eval_ids(fold("functionality", "f4")) == ()


def test_a_level_that_cannot_be_derived_has_no_mapping() -> None:
    train = train_suite()
    # Move one f1 case to class B: functionality no longer nests in class.
    cases = [c.model_copy(update={"groups": {"class": "B", "functionality": "f1"}}) if c.id == "f1-0" else c
             for c in train.cases]
    p = plan_eval_suite(EvalSuiteSpec(suite="x", maps_to=MAP), "w", Suite(train.header, cases), eval_suite(),
                        levels=["class"], seed=1, config_path=Path("b.toml"))
    assert "class" not in p.maps and p.eval_ids(fold("class", "A")) == ()


def test_cases_per_group_keeps_a_seeded_sample_of_each_eval_group() -> None:
    a = plan(EvalSuiteSpec(suite="x", maps_to=MAP, cases_per_group=2))
    b = plan(EvalSuiteSpec(suite="x", maps_to=MAP, cases_per_group=2))
    assert a.case_ids == b.case_ids and len(a.case_ids) == 8
    assert all(sum(c.startswith(g) for c in a.case_ids) == 2 for g in EVAL_GROUPS)


@pytest.mark.parametrize(("maps_to", "maps_from", "fragments"), [
    ({"functionallity": {"e1": "f1"}}, None, ["maps_to.functionallity", "did you mean 'functionality'"]),
    ({"functionality": {"e9": "f1"}}, None, ["unknown phenomenon of eval suite 'evals' 'e9'"]),
    ({"functionality": {"e1": "f11"}}, None, ["unknown functionality of training suite 'train' 'f11'",
                                               "did you mean 'f1'"]),
    (None, "topic", ["maps_from 'topic' is not a level of eval suite 'evals'"]),
])
def test_mapping_mistakes_name_the_field(maps_to: dict[str, dict[str, str]] | None, maps_from: str | None,
                                         fragments: list[str]) -> None:
    with pytest.raises(BelugaError) as err:
        plan(EvalSuiteSpec(suite="x", maps_to=maps_to, maps_from=maps_from))
    text = str(err.value)
    assert "bench.toml" in text and "tasks.0.eval_suites.0" in text, text
    for fragment in fragments:
        assert fragment in text, (fragment, text)


# ------------------------------------------------------------------------------------------ hand-made stores

def _store(path: Path) -> StoreWriter:
    writer = StoreWriter(path)
    train = train_suite()
    writer.ensure_suite(SuiteRow("train", ("class", "functionality"), "functionality", "text", ("n", "p")),
                        [CaseRow(c.id, c.test_type, dict(c.groups)) for c in train.cases])
    writer.ensure_suite(SuiteRow("evals", ("phenomenon",), "phenomenon", "text", ("n", "p")),
                        [CaseRow(c.id, c.test_type, dict(c.groups)) for c in eval_suite().cases])
    writer.set_cross_maps("sentiment", "train", "evals", plan(EvalSuiteSpec(suite="x", maps_to=MAP)).maps)
    return writer


def _model(writer: StoreWriter, mid: str, config: str, scenario: str, train_outcomes: dict[str, str],
           cross: dict[str, str], *, group: str | None = None, accuracy: float | None = None,
           trained: tuple[str, str] | None = None) -> None:
    heldout = scenario if group is not None else None
    record = ModelRecord(model_id=mid, task="sentiment", suite="train", model_name="m", config=config,
                         method="vanilla", scenario=scenario, heldout_level=heldout, heldout_group=group, seed=1,
                         split_seed=1, trained_level=trained[0] if trained else None,
                         trained_group=trained[1] if trained else None)
    iid = []
    if accuracy is not None:
        correct = [i < accuracy * 10 for i in range(10)]
        iid = [IIDResult("test", ["1"] * 10, ["1" if c else "0" for c in correct], correct,  # type: ignore[arg-type]
                         {"accuracy": accuracy}, "accuracy")]
    outcomes = Outcomes.of(list(train_outcomes), list(train_outcomes.values()))
    writer.commit(JobResult(record, outcomes, iid,
                            cross=[CrossResult("evals", "d", Outcomes.of(list(cross), list(cross.values())))]))


# Per eval case an outcome; e2 has a skip, e4 only fails.
IID_CROSS = {"e1-0": "pass", "e1-1": "pass", "e1-2": "fail", "e2-0": "skip", "e2-1": "pass", "e2-2": "fail",
             "e3-0": "fail", "e3-1": "fail", "e3-2": "pass", "e4-0": "fail", "e4-1": "fail", "e4-2": "fail"}
SEEN_CROSS = {c: "pass" for c in IID_CROSS} | {"e4-0": "fail"}
FOLD_CROSS = {"A": {"e1-0": "fail", "e1-1": "pass", "e1-2": "fail", "e2-0": "pass", "e2-1": "pass", "e2-2": "pass"},
              "B": {"e3-0": "pass", "e3-1": "pass", "e3-2": "fail"}}


def _recompute(cross: dict[str, str], cases: set[str] | None = None) -> float:
    """s: unweighted mean over eval groups of pass / (pass + fail), skips left out."""
    by_group: dict[str, list[int]] = defaultdict(lambda: [0, 0])
    for cid, outcome in cross.items():
        if outcome != "skip" and (cases is None or cid in cases):
            by_group[cid.split("-")[0]][outcome == "pass"] += 1
    rates = [p / (p + f) for f, p in by_group.values()]
    return sum(rates) / len(rates)


def test_cross_scores_equal_an_independent_recomputation(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    writer = _store(tmp_path / "s.duckdb")
    _model(writer, "iid", "iid", "standard", {"f1-0": "pass"}, IID_CROSS, accuracy=0.8)
    _model(writer, "seen", "iid-then-t", "seen", {"f1-0": "pass"}, SEEN_CROSS, accuracy=0.6)
    for group, cross in FOLD_CROSS.items():
        _model(writer, f"fold-{group}", "iid-then-t", "class", {f"{'f1' if group == 'A' else 'f3'}-0": "pass"}, cross,
               group=group)
    store = tmp_path / "s.duckdb"
    rows = {(r[0], r[1], r[2]): r[3:] for r in query(store, """SELECT config, scenario, mapped_level, s_cross, s_iid,
                                                                g, n_cases FROM cross_scores""")}
    class_cases = {c for cross in FOLD_CROSS.values() for c in cross}
    g = lambda s, i: 2 * s * i / (s + i)  # noqa: E731
    expected = {("iid", "standard", None): (_recompute(IID_CROSS), 0.8, 12),
                ("iid", "standard", "class"): (_recompute(IID_CROSS, class_cases), 0.8, 9),
                ("iid", "standard", "functionality"): (_recompute(IID_CROSS, class_cases), 0.8, 9),
                ("iid-then-t", "seen", None): (_recompute(SEEN_CROSS), 0.6, 12),
                ("iid-then-t", "class", "class"): (_recompute({k: v for c in FOLD_CROSS.values()
                                                               for k, v in c.items()}), 0.6, 9)}
    assert set(expected) <= set(rows)
    for key, (s, s_iid, n) in expected.items():
        got = rows[key]
        assert got[0] == pytest.approx(s) and got[1] == pytest.approx(s_iid), key
        assert got[2] == pytest.approx(g(s, s_iid)) and got[3] == n, key
    # A held-out scenario has rows at its own basis only.
    assert not any(k[1] == "class" and k[2] != "class" for k in rows)
    # Per eval group and mapped group: e2 under the class basis maps to A, one skip left out.
    rate = query(store, """SELECT mapped_group, n_pass, n_fail, n_skip, pass_rate FROM cross_pass_rates
                           WHERE config = 'iid' AND mapped_level = 'class' AND eval_group = 'e2'""")
    assert rate == [("A", 1, 1, 1, 0.5)]
    # beluga store check passes, and flags a fold judged on an eval case outside its group.
    assert run_cli(capsys, "store", "check", store)[0] == 0
    _model(writer, "fold-bad", "iid-then-t", "functionality", {"f3-0": "pass"}, {"e1-0": "pass"}, group="f3")
    code, out, _ = run_cli(capsys, "store", "check", store)
    assert code == 1 and "held-out folds judged on their mapped eval cases" in out, out


def test_only_matrix_diagonal_is_each_models_pass_rate_on_its_own_group(tmp_path: Path) -> None:
    writer = _store(tmp_path / "s.duckdb")
    train = [c.id for c in train_suite().cases]
    # Model trained on class A: passes everything in f1, half of f2, nothing in B; trained on B: the mirror.
    outcomes = {"A": {c: "pass" if c.startswith("f1") or c == "f2-0" else "fail" for c in train},
                "B": {c: "pass" if c.startswith("f3") or c in ("f4-0", "f1-1") else "fail" for c in train}}
    for group, o in outcomes.items():
        _model(writer, f"only-{group}", "iid-then-t", f"only:class={group}", o, {}, trained=("class", group))
    matrix = {(t, e): (rate, diag) for t, e, rate, diag in query(
        tmp_path / "s.duckdb", "SELECT trained_group, eval_group, pass_rate, diagonal FROM only_matrix")}

    def seen_style(o: dict[str, str], cls: str) -> float:
        funcs = [f for f, (c, _) in TRAIN_GROUPS.items() if c == cls]
        rates = [sum(o[f"{f}-{i}"] == "pass" for i in range(2)) / 2 for f in funcs]
        return sum(rates) / len(rates)

    for t in ("A", "B"):
        for e in ("A", "B"):
            rate, diag = matrix[(t, e)]
            assert rate == pytest.approx(seen_style(outcomes[t], e)) and diag == (t == e)
    assert matrix[("A", "A")][0] == pytest.approx(0.75) and matrix[("A", "B")][0] == 0.0
    assert matrix[("B", "A")][0] == pytest.approx(0.25)
    # Each only model is a scenario of its own in g_scores; the report's Table 3 leaves them out of its columns.
    scenarios = {r[0] for r in query(tmp_path / "s.duckdb", "SELECT scenario FROM g_scores")}
    assert scenarios == {"only:class=A", "only:class=B"}
    assert query(tmp_path / "s.duckdb", "SELECT count(*) FROM report_columns")[0][0] == 0


def test_a_model_lacking_an_evaluation_is_not_done(tmp_path: Path) -> None:
    writer = _store(tmp_path / "s.duckdb")
    _model(writer, "iid", "iid", "standard", {"f1-0": "pass"}, IID_CROSS, accuracy=0.8)
    assert done_ids(writer.path) == {"iid"}
    assert done_ids(writer.path, {"iid": {"evals": "d"}}) == {"iid"}           # evaluated on those cases
    assert done_ids(writer.path, {"iid": {"evals": "other"}}) == set()         # the sample or mapping changed
    assert done_ids(writer.path, {"iid": {"evals": "d", "more": "x"}}) == set()  # an eval suite added since


# ------------------------------------------------------------------------------------------ config errors

def _tiny(tmp_path: Path, append: str = "", replace: dict[str, str] | None = None) -> Path:
    return config_with(DATA / "tiny-sentiment.toml", tmp_path, replace=replace, append=append)


@pytest.mark.parametrize(("append", "replace", "fragments"), [
    ('[[tasks.eval_suites]]\nsuite = "pairs.jsonl"\n', None,
     ["tasks.0.eval_suites.0", "input_kind 'text_pair'", "the training suite 'sentiment' 'text'"]),
    ('[[tasks.eval_suites]]\nsuite = "builtin:sentiment"\n', None,
     ["tasks.0.eval_suites.0", "has the name of the suite at tasks.0.suite"]),
    ('[[tasks.eval_suites]]\nsuite = "builtin:sst2-phenomena"\n[tasks.eval_suites.maps_to.functionalty]\n'
     'negation = "intensifiers"\n', None, ["maps_to.functionalty", "did you mean 'functionality'"]),
    ('[[tasks.eval_suites]]\nsuite = "no-such-suite.jsonl"\n', None, ["tasks.0.eval_suites.0.suite",
                                                                       "no such file or folder"]),
    ("", {'scenarios = ["standard", "seen", "test_type"]': 'scenarios = ["standard", "seen", "only:clas"]'},
     ["scenario 'only:clas'", "'clas' is not a level of suite 'sentiment'"]),
    ("", {'scenarios = ["standard", "seen", "test_type"]': 'scenarios = ["standard", "only:class"]'},
     ["need the 'seen' scenario"]),
])
def test_cross_config_mistakes_exit_2_naming_the_field(tmp_path: Path, capsys: pytest.CaptureFixture[str],
                                                      append: str, replace: dict[str, str] | None,
                                                      fragments: list[str]) -> None:
    pair = {"id": "p1", "groups": {"g": "a"}, "test_type": "MFT", "loss": "mft", "inputs": [["a", "b"]], "label": 0,
            "expectation": {"kind": "eq", "target": "label"}}
    (tmp_path / "pairs.jsonl").write_text(json.dumps({"kind": "suite", "name": "pairs", "levels": ["g"],
                                                      "scoring_level": "g", "input_kind": "text_pair",
                                                      "label_space": ["negative", "positive"]}) + "\n"
                                          + json.dumps(pair) + "\n")
    path = _tiny(tmp_path, append, replace)
    code, _, err = run_cli(capsys, "run", path, "--dry-run")
    err = " ".join(err.split())
    assert code == 2 and "Traceback" not in err, err
    for fragment in fragments:
        assert fragment in err, (fragment, err)


# ------------------------------------------------------------------------------------------ a real run


# ------------------------------------------------------------------------------------------ the guide

def _readme_blocks(language: str) -> list[str]:
    """The tested blocks of the cross-suite guide (they were the README's)."""
    return doc_blocks(language, page="guides/cross-suite.md")


def test_the_readme_cross_suite_config_plans(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    (block,) = _readme_blocks("toml")
    config = tmp_path / "readme-cross.toml"
    config.write_text('name = "readme-cross"\nscenarios = ["standard", "seen", "functionality", "only:class"]\n'
                      + block + "[sizes]\nsuite_train_per_group = 2\nsuite_test_per_group = 2\n", encoding="utf-8")
    code, out, err = run_cli(capsys, "run", config, "--dry-run")
    out = " ".join(out.split())
    assert code == 0, err
    assert "eval suite sst2-phenomena (300 of 300 cases evaluated)" in out, out
    assert "functionality: 240 cases mapped, declared (config; phenomenon → functionality)" in out, out


def test_cross_alignment_counts_each_side_by_hand(tmp_path: Path) -> None:
    """cross_alignment: an eval group's pass rate beside the T_test pass rate of the training group it maps to."""
    writer = _store(tmp_path / "s.duckdb")
    _model(writer, "iid", "iid", "standard", {"f1-0": "pass", "f1-1": "fail", "f3-0": "fail", "f3-1": "skip"},
           IID_CROSS, accuracy=0.8)
    _model(writer, "fold-f1", "iid-then-t", "functionality", {"f1-0": "pass", "f1-1": "pass"},
           {"e1-0": "pass", "e1-1": "fail", "e1-2": "fail"}, group="f1")
    rows = {(r[0], r[1], r[2]): r[3:] for r in query(tmp_path / "s.duckdb", """
        SELECT config, mapped_level, eval_group, mapped_group, template_n_pass, template_n_fail, template_pass_rate,
               eval_n_pass, eval_n_fail, eval_pass_rate, eval_units
        FROM cross_alignment""")}
    # IID: e1 (pass, pass, fail) beside f1 (pass, fail); e3 (fail, fail, pass) beside f3 (fail; a skip left out).
    assert rows[("iid", "functionality", "e1")] == ("f1", 1, 1, 0.5, 2, 1, pytest.approx(2 / 3), 3)
    assert rows[("iid", "functionality", "e3")] == ("f3", 0, 1, 0.0, 1, 2, pytest.approx(1 / 3), 3)
    # e2 maps to f2, on which the IID model has no outcome: no template side.
    assert rows[("iid", "functionality", "e2")][:4] == ("f2", 0, 0, None)
    # At the class level e1 maps to A, whose T_test cases the IID model has are f1's.
    assert rows[("iid", "class", "e1")][:4] == ("A", 1, 1, 0.5)
    # The fold that held f1 out: its mapped eval cases beside its own f1 outcomes.
    assert rows[("iid-then-t", "functionality", "e1")] == ("f1", 2, 0, 1.0, 1, 2, pytest.approx(1 / 3), 3)
    assert not any(k[0] == "iid-then-t" and k[2] != "e1" for k in rows)


def test_alignment_intervals_resample_units() -> None:
    import numpy as np

    from beluga_core.analysis.report.alignment import build_alignment, unit_interval

    rng = np.random.default_rng(0)
    # Units with one rate (1 of 2, 2 of 4): every resample gives 0.5.
    assert unit_interval(np.array([1.0, 2.0]), np.array([2.0, 4.0]), rng) == (0.5, 0.5)
    lo, hi = unit_interval(np.array([1.0] * 10 + [0.0] * 10), np.ones(20), rng)
    # 20 fair coins: the 95 % interval is about 0.5 ± 0.22, in steps of 0.05. Measured over generator seeds 0–19:
    # lo 0.25–0.30, hi 0.70–0.75; the bounds leave one step beyond that spread.
    assert 0.2 <= lo < 0.5 < hi <= 0.8
    base = {"task": "t", "suite": "s", "config": "iid", "method": "vanilla", "scenario": "standard",
            "eval_suite": "e", "mapped_level": "functionality", "eval_group": "g", "mapped_group": "f"}
    rows = [base | {"side": "eval", "unit": "u1", "n_pass": 3, "n_eval": 3},
            base | {"side": "eval", "unit": "u2", "n_pass": 0, "n_eval": 1},
            base | {"side": "template", "unit": "c1", "n_pass": 1, "n_eval": 1}]
    (table,) = build_alignment(rows)
    cell = table.cell(("g", "f"), ("iid", "vanilla", "standard"), "eval")
    assert (cell.rate, cell.n, cell.units) == (0.75, 4, 2)
    assert cell.lo is not None and cell.hi is not None and cell.lo <= 0.75 <= cell.hi
    template = table.cell(("g", "f"), ("iid", "vanilla", "standard"), "template")
    assert (template.rate, template.lo, template.hi) == (1.0, 1.0, 1.0)


def test_only_matrix_leaves_out_cases_in_no_group_of_a_crossing_level() -> None:
    from types import SimpleNamespace

    from beluga_core.analysis.report.cross_tables import build_only_matrices

    key = {"task": "t", "suite": "s", "config": "iid-plus-t", "method": "vanilla", "level": "arm"}
    rows = [{**key, "trained_group": "adv", "eval_group": "adv", "pass_rate": 0.75},
            {**key, "trained_group": "adv", "eval_group": None, "pass_rate": 0.5},   # cases outside the level
            {**key, "trained_group": "cda", "eval_group": "adv", "pass_rate": 0.25}]
    (matrix,) = build_only_matrices(SimpleNamespace(only_matrix_summary=rows))
    assert (matrix.trained, matrix.groups) == (["adv", "cda"], ["adv"])
    assert matrix.values.tolist() == [[0.75], [0.25]]
