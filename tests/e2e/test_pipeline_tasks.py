"""The paraphrase and reading tasks end to end through the real CLI, model and store, on tiny slices of the
CheckList QQP and SQuAD suites and the shipped offline fixtures; and the benchmark configs' plans."""

from __future__ import annotations

import json
import logging
from pathlib import Path

import pytest
from helpers import DATA, REPO, query, run_benchmark, run_cli
from toy_model import TOY_DIR

# The tests' toy model (tests/toy_model.py): these runs check behaviour, not accuracy.
TOY = TOY_DIR.as_posix()
pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def reading_store(tmp_path_factory: pytest.TempPathFactory) -> Path:
    store = tmp_path_factory.mktemp("reading") / "r.duckdb"
    run_benchmark(DATA / "tiny-reading.toml", store)
    return store


def test_paraphrase_end_to_end(paraphrase_store: Path) -> None:
    g = query(paraphrase_store, "SELECT config, scenario, s_suite, s_iid, g, iid_metric FROM g_scores ORDER BY ALL")
    assert [(c, s) for c, s, *_ in g] == [("iid", "standard"), ("iid-plus-t", "seen")]
    for _, _, s_suite, s_iid, gscore, metric in g:
        assert metric == "f1"  # the config's iid_metric
        assert 0 <= s_suite <= 1 and 0 <= s_iid <= 1 and gscore is not None
    metrics = query(paraphrase_store, "SELECT DISTINCT metric, is_primary FROM iid_metrics ORDER BY 1")
    assert metrics == [("accuracy", False), ("f1", True)]
    groups = query(paraphrase_store, "SELECT count(DISTINCT scoring_group) FROM pass_rates WHERE scenario='seen'")
    assert groups[0][0] == 53
    # The mft-trained DIRs and the implication triplets judged; predictions are label ids.
    preds = query(paraphrase_store, "SELECT DISTINCT o.pred FROM outcomes o ORDER BY 1")
    assert set(p for (p,) in preds) <= {"0", "1"}


def test_reading_end_to_end(reading_store: Path) -> None:
    g = query(reading_store, "SELECT config, scenario, s_suite, s_iid, g, iid_metric FROM g_scores ORDER BY ALL")
    assert [(c, s) for c, s, *_ in g] == [("iid", "standard"), ("iid-then-t", "seen")]
    for *_, s_iid, gscore, metric in g:
        assert metric == "exact_match" and gscore is not None and 0 <= s_iid <= 1
    assert query(reading_store, "SELECT DISTINCT metric, is_primary FROM iid_metrics ORDER BY 1") == \
        [("exact_match", True), ("f1", False)]
    # EM and F1 as stored agree with the per-question rows (gold = JSON list of answers, pred = a string).
    rows = query(reading_store, "SELECT m.model_id, p.gold, p.pred, p.correct FROM iid_predictions p "
                                "JOIN models m USING (model_id) WHERE m.config = 'iid'")
    from beluga_core.evaluation.squad_metrics import squad_metrics

    em = squad_metrics([p for _, _, p, _ in rows], [json.loads(gold) for _, gold, _, _ in rows])
    stored = dict(query(reading_store, f"SELECT metric, value FROM iid_metrics WHERE model_id = '{rows[0][0]}'"))
    assert stored["exact_match"] == pytest.approx(em["exact_match"])
    assert stored["f1"] == pytest.approx(em["f1"])
    assert sum(c for *_, c in rows) / len(rows) == pytest.approx(em["exact_match"])
    # Suite predictions are answer strings; every functionality is scored, INV cases included.
    assert query(reading_store, "SELECT count(DISTINCT scoring_group) FROM pass_rates WHERE scenario='seen'") \
        == [(24,)]
    assert query(reading_store, "SELECT count(*) FROM outcomes o JOIN cases c USING (suite, case_id) "
                                "WHERE c.test_type = 'INV' AND o.outcome <> 'skip'")[0][0] > 0
    # The released suite's answers all occur in their contexts: nothing dropped, nothing noted.
    assert query(reading_store, "SELECT count(*) FROM models WHERE hparams::VARCHAR LIKE '%train_notes%'") == [(0,)]
    # [store] keep_probabilities: a span model keeps one answer per input of every evaluated case, and no
    # probabilities; each kept answer is the prediction its outcome was judged on (the first input's).
    kept = query(reading_store, "SELECT count(*), count(answer), count(probs), count(DISTINCT model_id) "
                                "FROM case_predictions")
    inputs = query(reading_store, "SELECT sum(json_array_length(s.spec->'inputs'))::BIGINT FROM outcomes o "
                                  "JOIN case_specs s ON s.suite = o.suite AND s.case_id = o.case_id")[0][0]
    assert inputs > 0 and kept == [(inputs, inputs, 0, 2)]
    mismatched = query(reading_store, "SELECT count(*) FROM case_predictions p JOIN outcomes o ON o.model_id = "
                                      "p.model_id AND o.suite = p.suite AND o.case_id = p.case_id "
                                      "WHERE p.input_idx = 0 AND o.pred IS DISTINCT FROM p.answer")
    assert mismatched == [(0,)]


SMALL_SUITE_HEADER = {"kind": "suite", "name": "mini-reading", "levels": ["functionality"],
                      "scoring_level": "functionality", "task": "reading", "input_kind": "context_question",
                      "label_space": None, "format_version": 1}


def _mini_suite(path: Path) -> Path:
    eq = {"kind": "eq", "level": "single", "target": "label"}
    inv = {"kind": "inv", "agg": "all_except_first", "level": "pairwise", "tolerance": 0.1}
    cases = []
    for i in range(4):
        ctx = f"Anna{i} met Bob{i} at noon."
        cases.append({"id": f"ok/{i}", "groups": {"functionality": "present"}, "test_type": "MFT", "loss": "mft",
                      "inputs": [[ctx, "Who met Bob?"]], "label": [f"Anna{i}"], "expectation": eq})
        cases.append({"id": f"absent/{i}", "groups": {"functionality": "absent"}, "test_type": "MFT",
                      "loss": "mft", "inputs": [[ctx, "Who met Bob?"], [ctx, "Who?"]],
                      "label": [f"Carl{i}", f"Anna{i}"], "expectation": eq})
        cases.append({"id": f"inv/{i}", "groups": {"functionality": "typo"}, "test_type": "INV", "loss": "span-inv",
                      "inputs": [[ctx, "Who met Bob?"], [ctx, "Who mte Bob?"]], "expectation": inv})
    path.write_text("\n".join(json.dumps(r) for r in [SMALL_SUITE_HEADER, *cases]) + "\n", encoding="utf-8")
    return path


def test_mft_cases_without_their_answer_are_dropped_and_counted(tmp_path: Path,
                                                                caplog: pytest.LogCaptureFixture) -> None:
    suite = _mini_suite(tmp_path / "mini.jsonl")
    config = tmp_path / "mini.toml"
    config.write_text(f"""name = "mini"
store = "mini.duckdb"
configurations = ["iid-plus-t"]
scenarios = ["seen"]
[model]
name = "{TOY}"
[[tasks]]
name = "reading"
suite = "{suite}"
iid = "builtin:squad-fixture"
options = {{max_length = 64, doc_stride = 16, max_query_length = 16}}
[sizes]
iid_mix = 8
iid_test = 8
[training]
batch_size = 8
epochs = 1
""", encoding="utf-8")
    with caplog.at_level(logging.WARNING, logger="beluga_core.tasks.reading.task"):
        run_benchmark(config, tmp_path / "mini.duckdb")
    # T_train holds 2 of the 4 'absent' cases; each has one input whose answer is not in its context.
    assert "2 MFT input(s) dropped from training" in caplog.text and "2 case(s) affected" in caplog.text
    (hparams,) = query(tmp_path / "mini.duckdb", "SELECT hparams FROM models")[0]
    notes = json.loads(hparams)["train_notes"]
    assert notes == {"mft_inputs_dropped_answer_not_in_context": 2, "mft_cases_with_a_dropped_input": 2,
                     "mft_cases_dropped_entirely": 0}


@pytest.mark.parametrize("config", ["quick.toml", "quick-para.toml", "quick-read.toml"])
def test_benchmark_configs_plan(config: str, capsys: pytest.CaptureFixture[str],
                                monkeypatch: pytest.MonkeyPatch) -> None:
    # (full.toml's whole plan is checked by tests/unit/planning/test_grid.py.) A shipped config must exist: no skip.
    monkeypatch.setenv("COLUMNS", "200")
    code, out, err = run_cli(capsys, "run", REPO / "benchmarks" / config, "--dry-run")
    assert code == 0, err
    task = {"quick.toml": "sentiment", "quick-para.toml": "paraphrase", "quick-read.toml": "reading"}[config]
    assert f"task {task}:" in out and "trainings in all" in out


def test_task_settings_are_checked_by_dry_run(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    for extra, message in [('iid_metric = "accuracy"', "computes no i.i.d. metric 'accuracy'"),
                           ("options = {max_len = 3}", "unknown option")]:
        config = tmp_path / "bad.toml"
        config.write_text(f'name = "bad"\n[[tasks]]\nname = "reading"\nsuite = "builtin:squad"\n'
                          f'iid = "builtin:squad-fixture"\n{extra}\n', encoding="utf-8")
        code, _, err = run_cli(capsys, "run", config, "--dry-run")
        assert code == 2 and message in err, err
