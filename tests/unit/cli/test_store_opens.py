"""Issue 56: every command that reads or writes a store opens it (and migrates it) once, and hands the open store
(``store.opened.StoreHandle``) down: no function below the command opens the file again. Counted at
``duckdb.connect``, where every open of a store file passes (``store.connection.connect``'s, and a writer's)."""

from __future__ import annotations

import json
import random
import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import duckdb
import pytest
from helpers import DATA, run_cli
from regression_toy import CASES, add_model, regression_writer
from store_builder import StoreBuilder, make_cases, random_outcomes, report_store

from beluga_core.store.rows import SplitRows

_OPENS: list[str] = []


@pytest.fixture(scope="module")
def template(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("opens") / "results.duckdb"
    report_store(path, analyse=False)
    return path


@pytest.fixture
def store(template: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, figures_not_drawn: None) -> Iterator[Path]:
    path = tmp_path / "results.duckdb"
    shutil.copyfile(template, path)
    other = tmp_path / "other.duckdb"
    shutil.copyfile(template, other)
    _count_opens(monkeypatch)
    yield path


def _count_opens(monkeypatch: pytest.MonkeyPatch) -> None:
    real = duckdb.connect

    def counted(database: Any = ":memory:", *args: Any, **kwargs: Any) -> duckdb.DuckDBPyConnection:
        if Path(str(database)).name.endswith(".duckdb"):
            _OPENS.append(Path(str(database)).name)
        return real(database, *args, **kwargs)

    monkeypatch.setattr(duckdb, "connect", counted)
    _OPENS.clear()


COMMANDS = {
    "analyze": ["analyze", "{store}", "--rounds", "20"],
    "analyze --compare": ["analyze", "{store}", "--rounds", "20", "--compare", "iid-plus-t", "iid-then-t"],
    "report": ["report", "{store}"],
    "report --format md": ["report", "{store}", "--format", "md", "--out", "{tmp}/md"],
    "report --format html": ["report", "{store}", "--format", "html", "--out", "{tmp}/html"],
    "report --format site": ["report", "{store}", "--format", "site", "--out", "{tmp}/site"],
    "store info": ["store", "info", "{store}"],
    "store check": ["store", "check", "{store}"],
    "sql": ["sql", "{store}", "SELECT count(*) FROM models"],
    "select": ["select", "{store}"],
    "run --dry-run": ["run", "{data}/tiny-regression.toml", "--dry-run", "--store", "{store}"],
}


@pytest.mark.parametrize("command", sorted(COMMANDS))
def test_a_command_opens_its_store_once(command: str, store: Path, capsys: pytest.CaptureFixture[str]) -> None:
    argv = [a.format(store=store, tmp=store.parent, data=DATA) for a in COMMANDS[command]]
    code, out, err = run_cli(capsys, *argv)
    assert code == 0, (out, err)
    assert len(_OPENS) == 1 and _OPENS[0] == store.name, f"{command}: opened {len(_OPENS)} time(s): {_OPENS}"


def test_report_site_with_compare_opens_each_store_once(store: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, out, err = run_cli(capsys, "report", store, "--format", "site", "--out", store.parent / "site",
                             "--compare", store.parent / "other.duckdb")
    assert code == 0, (out, err)
    assert sorted(_OPENS) == ["other.duckdb", store.name]


# ----------------------------------------------------------------------------- commands that fail below their open
# `export` and `suite generate --model store:` need a model whose weights were kept (a trained store, tests/e2e):
# on this store they stop where the model's weights are looked for, inside the function the open store was handed
# to, which read the model's row through it.

FAILING = {
    "export": (["export", "{store}", "iid/vanilla", "--out", "{tmp}/ckpt"], "has no kept weights"),
    "suite generate --model store:": (["suite", "generate", "hotflip", "--source", "builtin:fewrel16#val",
                                       "--dry-run", "--model", "store:{store}#iid/vanilla"], "has no kept weights"),
}


@pytest.mark.parametrize("command", sorted(FAILING))
def test_a_command_that_stops_below_opened_its_store_once(command: str, store: Path,
                                                          capsys: pytest.CaptureFixture[str]) -> None:
    argv, said = FAILING[command]
    code, out, err = run_cli(capsys, *(a.format(store=store, tmp=store.parent) for a in argv))
    assert code == 2 and said in " ".join(err.split()), (out, err)
    assert [store.name] == _OPENS, f"{command}: opened {_OPENS}"


# ------------------------------------------------------------------------------------------- beluga regress

@pytest.fixture(scope="module")
def regression_template(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """An old model (iid, seed 0) and three updates of it (iid-update, seeds 1-3), on D_test and the suite's eight
    cases, all of them T_test."""
    path = tmp_path_factory.mktemp("regress") / "regress.duckdb"
    writer = regression_writer(path)
    writer.record_split(SplitRows("all-test", "toy", 1, (0.0, 0.0, 1.0), {}, [(c.id, "test", True) for c in CASES]))
    rng = random.Random(0)

    def outcomes() -> dict[str, str]:
        return {c.id: rng.choice(["pass", "fail"]) for c in CASES}

    add_model(writer, "old", "iid", correct=[rng.random() < 0.7 for _ in range(20)], outcomes=outcomes())
    for seed in (1, 2, 3):
        add_model(writer, f"new{seed}", "iid-update", seed=seed, parent="old",
                  correct=[rng.random() < 0.7 for _ in range(20)], outcomes=outcomes(),
                  case_probs={c.id: [0.4, 0.6] for c in CASES})
    return path


@pytest.fixture
def regression(regression_template: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    path = tmp_path / "regress.duckdb"
    shutil.copyfile(regression_template, path)
    shutil.copyfile(regression_template, tmp_path / "other.duckdb")
    (tmp_path / "preds.jsonl").write_text("".join(json.dumps({"id": c.id, "preds": [[0.2, 0.8]]}) + "\n"
                                                  for c in CASES), encoding="utf-8")
    _count_opens(monkeypatch)
    return path


REGRESS = {
    "regress": [],
    "regress --new --new (its tests stored)": ["--new", "iid-update/vanilla#1", "--new", "iid-update/vanilla#2",
                                               "--rounds", "50"],
    "regress --centric": ["--centric", "iid-update/vanilla"],
    "regress --old PREDICTIONS (imported)": ["--old", "{tmp}/preds.jsonl", "--new", "iid-update/vanilla#1"],
    "regress --by": ["--by", "skill"],
}


@pytest.mark.parametrize("command", sorted(REGRESS))
def test_regress_opens_its_store_once(command: str, regression: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, out, err = run_cli(capsys, "regress", regression,
                             *(a.format(tmp=regression.parent) for a in REGRESS[command]))
    assert code == 0, (out, err)
    assert [regression.name] == _OPENS, f"{command}: opened {_OPENS}"


def test_regress_importing_from_another_store_opens_each_once(regression: Path,
                                                              capsys: pytest.CaptureFixture[str]) -> None:
    code, out, err = run_cli(capsys, "regress", regression, "--old", f"{regression.parent / 'other.duckdb'}::old",
                             "--new", "iid-update/vanilla#1")
    assert code == 0 and "imported the old model" in out, (out, err)
    assert sorted(_OPENS) == ["other.duckdb", regression.name]


def test_explain_and_ensemble_open_their_store_once(regression: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, out, err = run_cli(capsys, "explain", regression, "--case", "c0", "--model", "iid/vanilla")
    assert code == 0 and "no stored attributions" in " ".join(out.split()), (out, err)
    assert [regression.name] == _OPENS
    _OPENS.clear()
    code, out, err = run_cli(capsys, "ensemble", regression, "--members", "iid-update/vanilla", "--name", "ens")
    assert code == 0, (out, err)
    assert [regression.name] == _OPENS


# ------------------------------------------------------------------------------------------------ beluga power

def test_power_opens_its_store_once(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                    capsys: pytest.CaptureFixture[str]) -> None:
    cases = make_cases(per_group=8)
    builder = StoreBuilder(tmp_path / "seeds.duckdb", cases)
    rng = random.Random(0)
    for seed in (1, 2):
        builder.add("iid", "vanilla", "standard", random_outcomes(cases, rng), [True] * 30 + [False] * 10, seed=seed)
        builder.add("iid-then-t", "vanilla", "seen", random_outcomes(cases, rng), [True] * 28 + [False] * 12,
                    seed=seed)
    _count_opens(monkeypatch)
    code, out, err = run_cli(capsys, "power", tmp_path / "seeds.duckdb", "--effect", "0.05")
    assert code == 0 and "power" in out, (out, err)
    assert _OPENS == ["seeds.duckdb"]


# ------------------------------------------------------------------------------------------ beluga rank --zoo

def _checkpoint(folder: Path, seed: int) -> None:
    """A 1-layer BERT classifier with MiniLM's tokenizer and random weights (tests/unit/analysis/test_ranking.py's)."""
    import torch
    from transformers import AutoTokenizer, BertConfig, BertForSequenceClassification

    from beluga_core.data.pretrained import resolve_model_path

    tokenizer = AutoTokenizer.from_pretrained(resolve_model_path("embedded:minilm"))
    torch.manual_seed(seed)
    config = BertConfig(vocab_size=len(tokenizer), hidden_size=32, num_hidden_layers=1, num_attention_heads=2,
                        intermediate_size=64, num_labels=2)
    BertForSequenceClassification(config).save_pretrained(str(folder))
    tokenizer.save_pretrained(str(folder))


@pytest.mark.parametrize("existing", [False, True], ids=["new store", "existing store"])
def test_rank_zoo_opens_its_store_once_creating_it_when_new(existing: bool, tmp_path: Path,
                                                             monkeypatch: pytest.MonkeyPatch,
                                                             capsys: pytest.CaptureFixture[str]) -> None:
    for i in range(3):
        _checkpoint(tmp_path / f"m{i}", i)
    if existing:
        report_store(tmp_path / "zoo.duckdb", analyse=False)
    zoo = tmp_path / "zoo.toml"
    zoo.write_text('task = "sentiment"\nprobe = "builtin:sst2-phenomena"\ngroup = "length=short"\npool_cap = 20\n'
                   'store = "zoo.duckdb"\n'
                   + "".join(f'[[models]]\nname = "m{i}"\npath = "m{i}"\ntruth = {0.3 * (i + 1):.1f}\n'
                             for i in range(3)), encoding="utf-8")
    _count_opens(monkeypatch)
    code, out, err = run_cli(capsys, "rank", "--zoo", zoo, "--n", "5", "--bootstrap", "20", "--signals", "acc,conf")
    assert code == 0 and "stored as ranking" in out, (out, err)
    assert _OPENS == ["zoo.duckdb"]
