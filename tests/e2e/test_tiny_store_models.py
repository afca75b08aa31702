"""A ``beluga run --tiny`` store's models rebuild from the config the run ran (``runs.effective_config``), not from
the config file's text: ``beluga export`` writes them, a ``--model store:`` target loads them, and another run
starts from one (``[training.configurations.NAME] start = "store:PATH#SELECTOR"``). A config that cannot be read,
or weights that do not fit the model it builds, are an error in words.

The run is tests/data/tiny-classification.toml with its IID model only: the file names the 2-layer toy model,
``--tiny`` trains it with one layer, so the file's config builds a model the kept weights do not fit.
"""

from __future__ import annotations

import contextlib
import io
import json
import shutil
from pathlib import Path

import duckdb
import pytest
import torch
from helpers import DATA, config_with, query, run_cli

from beluga_core.cli.app import main
from beluga_core.config.load import load_config
from beluga_core.config.schema import BenchmarkConfig
from beluga_core.config.tiny import tiny_config
from beluga_core.execution.worker import cache_dir_for, weights_path
from beluga_core.training import determinism

ONLY_IID = {'configurations = ["iid", "iid-then-t"]': 'configurations = ["iid"]',
            'scenarios = ["standard", "seen", "test_type"]': 'scenarios = ["standard"]'}


def _run_tiny(config: Path, store: Path) -> tuple[int, str]:
    """``beluga run CONFIG --tiny --store STORE`` in this process: (exit code, what it printed)."""
    out, code = io.StringIO(), 0
    threads, deterministic = torch.get_num_threads(), torch.are_deterministic_algorithms_enabled()
    try:
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(out):
            main(["run", str(config), "--tiny", "--store", str(store)])
    except SystemExit as exc:
        code = int(exc.code or 0)
    finally:
        # A run's [executor] threads and deterministic mode must not leak into the tests after it.
        torch.set_num_threads(threads)
        determinism.configure(deterministic, torch.device("cpu"))
    return code, out.getvalue()


@pytest.fixture(scope="module")
def tiny_store(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """tiny-classification.toml's IID model, run ``--tiny`` (its weights are kept). Tests must not write to it."""
    folder = tmp_path_factory.mktemp("tiny-store").resolve()
    config = config_with(DATA / "tiny-classification.toml", folder, replace=ONLY_IID, name="first.toml")
    code, printed = _run_tiny(config, folder / "first.duckdb")
    assert code == 0, printed[-3000:]
    return folder / "first.duckdb"


def _iid_id(store: Path) -> str:
    return str(query(store, "SELECT model_id FROM models WHERE config = 'iid' AND status = 'done'")[0][0])


def test_a_tiny_run_records_the_config_it_ran_and_what_changed_it(tiny_store: Path) -> None:
    config = tiny_store.parent / "first.toml"
    (text, effective, changes), = query(tiny_store, "SELECT config_text, effective_config::VARCHAR, "
                                                    "config_changes::VARCHAR FROM runs")
    assert text == config.read_text(encoding="utf-8")   # the file, as read
    ran = BenchmarkConfig.model_validate(json.loads(effective))
    tiny, notes = tiny_config(load_config(config))
    assert ran == tiny.with_store_path(str(tiny_store))
    assert ran.model.config_overrides == {"num_hidden_layers": 1}
    assert json.loads(changes) == [*(f"--tiny: {n}" for n in notes), f"--store {tiny_store}"]


def test_a_tiny_stores_model_exports_and_loads_as_a_target(tiny_store: Path, tmp_path: Path,
                                                          capsys: pytest.CaptureFixture[str]) -> None:
    from transformers import AutoModelForSequenceClassification

    from beluga_core.stored_models.target import load_target

    out = tmp_path / "exported"
    code, _, err = run_cli(capsys, "export", tiny_store, "iid/vanilla", "--out", out)
    assert code == 0, err
    exported = json.loads((out / "config.json").read_text(encoding="utf-8"))
    assert exported["num_hidden_layers"] == 1
    card = (out / "README.md").read_text(encoding="utf-8")   # the card says what ran, not what the file says
    assert "Trained by a `--tiny` run: its numbers mean nothing" in card and "- --tiny: " in card
    # The checkpoint holds the kept weights as they are.
    kept = torch.load(weights_path(cache_dir_for(tiny_store), _iid_id(tiny_store)), map_location="cpu",
                      weights_only=True)
    state = AutoModelForSequenceClassification.from_pretrained(out).state_dict()
    assert all(torch.equal(state[k], v) for k, v in kept.items() if k in state)
    assert len(kept.keys() & state.keys()) >= len(kept) - 1   # a tied decoder weight may be saved once
    # A model-dependent generator's target (beluga suite generate --model store:…) rebuilds it the same way.
    labels = tuple(exported["id2label"][str(i)] for i in range(len(exported["id2label"])))
    model, record = load_target(f"store:{tiny_store}#iid/vanilla", label_space=labels, input_kind="text",
                                task_name="classification")
    assert record["model_id"] == _iid_id(tiny_store) and tuple(model.labels) == labels


def test_a_run_starts_from_a_tiny_stores_model(tiny_store: Path, tmp_path: Path) -> None:
    config = config_with(DATA / "tiny-classification.toml", tmp_path, replace={
        **ONLY_IID, 'configurations = ["iid", "iid-then-t"]': 'configurations = ["iid-plus-t"]',
        'scenarios = ["standard", "seen", "test_type"]': 'scenarios = ["seen"]'},
        append=f'\n[training.configurations.iid-plus-t]\nstart = "store:{tiny_store}#iid/vanilla"\n',
        name="second.toml")
    store = tmp_path / "second.duckdb"
    code, printed = _run_tiny(config, store)
    assert code == 0, printed[-3000:]
    (status, settings), = query(store, "SELECT status, settings::VARCHAR FROM models WHERE config = 'iid-plus-t'")
    assert status == "done" and json.loads(settings)["start_from"]["model_id"] == _iid_id(tiny_store)


def test_a_run_config_that_cannot_be_read_or_does_not_fit_is_an_error_in_words(
        tiny_store: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    store = tmp_path / tiny_store.name
    shutil.copy2(tiny_store, store)
    shutil.copytree(cache_dir_for(tiny_store), cache_dir_for(store))
    (run_id,), = query(store, "SELECT run_id FROM runs")
    mid = _iid_id(store)[:12]

    def export_error(effective: str | None, text: str | None) -> str:
        con = duckdb.connect(str(store))
        try:
            con.execute("UPDATE runs SET effective_config = ?, config_text = ?", [effective, text])
        finally:
            con.close()
        code, _, err = run_cli(capsys, "export", store, "iid/vanilla", "--out", tmp_path / "out")
        assert code == 2 and "Traceback" not in err, err
        return " ".join(err.split())

    file_text = (tiny_store.parent / "first.toml").read_text(encoding="utf-8")
    # A store written before schema 19 recorded the file only: its 2-layer model does not fit the 1-layer weights.
    err = export_error(None, file_text)
    assert f"model {mid} (iid/vanilla@standard): its kept weights" in err, err
    assert f"do not fit the model built from run {run_id}'s config file text (runs.config_text" in err, err
    assert "16 tensor(s) missing from the weights (e.g. bert.encoder.layer.1." in err, err
    err = export_error(None, "name = [")
    assert f"model {mid}: run {run_id}'s config file text" in err and "is not valid TOML" in err, err
    err = export_error('{"tasks": 3}', file_text)
    assert f"model {mid}: run {run_id}'s effective config (runs.effective_config) is not a config this" in err, err
    assert "tasks: Input should be a valid list" in err, err
    err = export_error(None, None)
    assert f"model {mid}: the store does not hold the config of run {run_id}" in err, err
