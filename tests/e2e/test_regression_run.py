"""Regression between model versions end to end: a tiny real run with updates, distillation, an ensemble and kept
probabilities and weights, and the commands over its store (the known answers on hand-made stores are the unit
half: tests/unit/training/test_regression.py)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from helpers import DATA, doc_blocks, query, run_benchmark, run_cli
from regression_toy import add_model, regression_writer

# ------------------------------------------------------------------------------------------ a tiny real run


@pytest.fixture(scope="module")
def regression_store(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, str]:
    store = tmp_path_factory.mktemp("regression") / "tiny-regression.duckdb"
    return store, run_benchmark(DATA / "tiny-regression.toml", store)


def test_updates_distillation_and_the_ensemble_in_a_real_run(regression_store: tuple[Path, str],
                                                             capsys: pytest.CaptureFixture[str]) -> None:
    store, printed = regression_store
    assert "ensemble ens3 (vote of iid-update/vanilla): 1 model row(s)" in printed
    configs = query(store, "SELECT config, method, scenario, count(*) FROM models GROUP BY ALL ORDER BY ALL")
    assert configs == [("iid", "vanilla", "standard", 3), ("iid-update", "distill", "standard", 3),
                       ("iid-update", "ens3", "standard", 1), ("iid-update", "vanilla", "standard", 3)]
    # Δacc = PFR − NFR = acc_new − acc_old on every row of both views.
    for nfr, pfr, delta, acc_old, acc_new in query(store, "SELECT nfr, pfr, delta_acc, acc_old, acc_new "
                                                          "FROM regression_iid"):
        assert delta == pytest.approx(pfr - nfr) and delta == pytest.approx(acc_new - acc_old)
    for nfr, pfr, delta in query(store, "SELECT nfr, pfr, delta_pass_rate FROM regression_cases WHERE n > 0"):
        assert delta == pytest.approx(pfr - nfr)
    # Distillation reads the seed-0 IID model, which the run trained first.
    assert query(store, "SELECT count(*) FROM models WHERE method = 'distill' AND hparams->'method'->>'teacher' "
                        "= 'iid#0'")[0][0] == 3
    # Kept probabilities agree with the stored predictions; kept weights are the IID models' and the updates'.
    mismatch = query(store, """SELECT count(*) FROM iid_probs p JOIN iid_predictions q USING (model_id, split,
                               example_idx) WHERE list_position(p.probs, list_max(p.probs)) - 1 <> q.pred::INT""")
    assert mismatch[0][0] == 0
    assert query(store, "SELECT count(DISTINCT model_id) FROM case_predictions")[0][0] == 10
    assert len(list(store.with_name(store.name + ".cache").glob("*.pt"))) == 9
    assert run_cli(capsys, "store", "check", store)[0] == 0


def test_regress_prints_flips_and_stores_its_tests(regression_store: tuple[Path, str],
                                                  capsys: pytest.CaptureFixture[str]) -> None:
    store, _ = regression_store
    code, out, err = run_cli(capsys, "regress", store, "--old", "iid/vanilla#0", "--new", "iid-update/vanilla#1",
                             "--new", "iid-update/distill#1", "--rounds", "500", "--by", "class")
    text = " ".join(out.split())
    assert code == 0, err
    assert "against iid/vanilla@standard#0" in text and "NFR iid-update/vanilla@standard#1 − " in text
    tests = query(store, "SELECT source, n, rounds, stale FROM regression_test_status ORDER BY source")
    assert [r[0] for r in tests] == ["iid", "suite"] and all(r[2] == 500 and r[3] is False for r in tests)
    code, out, _ = run_cli(capsys, "regress", store, "--centric", "iid-update/vanilla")
    assert code == 0 and "← chosen" in out


def test_export_writes_a_loadable_checkpoint_with_a_model_card(regression_store: tuple[Path, str], tmp_path: Path,
                                                               capsys: pytest.CaptureFixture[str]) -> None:
    store, _ = regression_store
    code, _, err = run_cli(capsys, "export", store, "iid-update/distill#1", "--out", tmp_path / "ckpt")
    assert code == 0, err
    from transformers import AutoModelForSequenceClassification

    model = AutoModelForSequenceClassification.from_pretrained(tmp_path / "ckpt")
    assert model.config.id2label == {0: "negative", 1: "positive"}
    card = (tmp_path / "ckpt" / "README.md").read_text()
    assert "iid-update / distill" in card and "| accuracy |" in card
    code, _, err = run_cli(capsys, "export", store, "ens3", "--out", tmp_path / "x")
    assert (code == 2 and "no kept weights" in " ".join(err.split())) or "names no done model" in err
    code, out, _ = run_cli(capsys, "store", "info", store)
    assert code == 0 and "case_predictions" in out and "kept weights: 9 model(s)" in " ".join(out.split())


def test_models_from_another_store_and_from_a_predictions_file(regression_store: tuple[Path, str], tmp_path: Path,
                                                               capsys: pytest.CaptureFixture[str]) -> None:
    import shutil

    store, _ = regression_store
    mine = tmp_path / "copy.duckdb"
    shutil.copy(store, mine)
    code, _, err = run_cli(capsys, "regress", mine, "--old", f"{store}::iid/vanilla#2", "--new",
                             "iid-update/vanilla#2")
    assert code == 0, err
    (external,) = query(mine, "SELECT model_id, hparams->'provenance'->>'model_id' FROM models WHERE config = "
                              "'external'")
    (own,) = query(mine, "SELECT model_id FROM models WHERE config = 'iid' AND seed = 2")
    assert external[1] == own[0]
    # The imported copy flips exactly as the store's own IID model does.
    assert query(mine, f"SELECT n_neg FROM regression_between('{external[0]}', '{own[0]}')") == \
        [(0,), (0,)]
    # A predictions file in `beluga suite check`'s format, judged on the store's T_test cases.
    cases = query(mine, """SELECT s.case_id, c.spec FROM case_splits s JOIN splits p USING (split_id)
                           JOIN case_specs c ON c.suite = p.suite AND c.case_id = s.case_id
                           WHERE s.part = 'test' AND s.kept""")
    preds = tmp_path / "preds.jsonl"
    preds.write_text("\n".join(json.dumps({"id": cid, "preds": [[0.1, 0.2, 0.7]] * len(json.loads(spec)["inputs"])})
                               for cid, spec in cases) + "\n")
    code, _, err = run_cli(capsys, "regress", mine, "--old", preds, "--new", "iid/vanilla#0")
    assert code == 0, err
    assert query(mine, "SELECT count(*) FROM outcomes o JOIN models m USING (model_id) WHERE m.model_name = "
                       "'preds.jsonl'")[0][0] == len(cases)


def test_a_store_of_other_data_cannot_be_compared(regression_store: tuple[Path, str], tmp_path: Path,
                                                  capsys: pytest.CaptureFixture[str]) -> None:
    store, _ = regression_store
    other = tmp_path / "other.duckdb"
    writer = regression_writer(other)
    add_model(writer, "x", "iid", correct=[True, False])
    code, _, err = run_cli(capsys, "regress", store, "--old", f"{other}::iid/vanilla")
    assert code == 2 and "other i.i.d. examples" in " ".join(err.split()), err


# ------------------------------------------------------------------------------------------ the guide

def _readme_blocks(language: str) -> list[str]:
    """The tested blocks of the regression guide (they were the README's)."""
    return doc_blocks(language, "regression", page="guides/regression.md")


def test_the_readme_regression_blocks_run(regression_store: tuple[Path, str], tmp_path: Path,
                                          capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch) -> None:
    import shlex
    import shutil

    from beluga_core.config.load import parse_config

    store, _ = regression_store
    (tmp_path / "runs").mkdir()
    copy = tmp_path / "runs" / "regression.duckdb"
    shutil.copy(store, copy)
    shutil.copytree(store.with_name(store.name + ".cache"), copy.with_name(copy.name + ".cache"))
    monkeypatch.chdir(tmp_path)
    (config,) = _readme_blocks("toml")
    cfg = parse_config('name = "readme"\n' + config + '[[tasks]]\nname = "sentiment"\nsuite = "builtin:sentiment"\n'
                       'iid = "builtin:sst2"\n', tmp_path / "regression.toml")
    assert cfg.store_spec.keep_probabilities and cfg.ensembles[0].members == ["iid-update/vanilla"]
    (sql,) = _readme_blocks("sql")
    statements = [s for s in sql.split(";") if s.strip()]
    assert len(statements) == 2 and all(query(copy, s) for s in statements)
    (commands,) = _readme_blocks("sh")
    for line in filter(str.strip, commands.splitlines()):
        argv = shlex.split(line)
        assert argv[0] == "beluga"
        code, _, err = run_cli(capsys, *argv[1:])
        assert code == 0, f"{line}\n{err}"
    assert (tmp_path / "exported-iid" / "model.safetensors").exists()
    assert query(copy, "SELECT count(*) FROM models WHERE method = 'ens-mean'")[0][0] == 1
