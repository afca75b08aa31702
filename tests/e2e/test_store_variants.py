"""One store, many runs: settings never mix in a view, failed jobs are recorded and retried, the dry run counts
what is done, and a store written by the previous beluga opens, migrates and reads the same.

The runs here go through the real CLI (in process) on the tests' toy model (1 layer) and a few dozen examples: they
check behaviour, not accuracy.
"""

from __future__ import annotations

import gzip
import json
import re
import shutil
from pathlib import Path

import pytest
from helpers import DATA, REPO, doc_blocks, docs_text, query, run_cli
from toy_model import TOY_DIR

from beluga_core.store.migrations import SCHEMA_VERSION
from beluga_core.store.reader import VIEWS, read_meta

# The tests' toy model (tests/toy_model.py): these runs check behaviour, not accuracy.
TOY = TOY_DIR.as_posix()
BASE = f"""
name = "variants"
configurations = ["iid", "iid-then-t"]
methods = ["l2"]
scenarios = ["standard", "seen"]

[model]
name = "{TOY}"
config_overrides = {{ num_hidden_layers = 1 }}
max_length = 48

[[tasks]]
name = "sentiment"
suite = "builtin:sst2-phenomena"
iid = "builtin:sst2"

[sizes]
iid_train = 48
iid_test = 24
suite_train_per_group = 2
suite_test_per_group = 3

[training]
learning_rate = 5e-5
batch_size = 16
epochs = 1

[executor]
threads = 1
precision = "fp32"
"""


def _config(tmp: Path, name: str, text: str) -> Path:
    path = tmp / name
    path.write_text(text, encoding="utf-8")
    return path


@pytest.fixture(scope="module")
def base_store(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The base config run once (2 trainings) with l2's weight decay at 0.05; tests copy it."""
    tmp = tmp_path_factory.mktemp("variants")
    store = tmp / "base.duckdb"
    from helpers import run_benchmark

    run_benchmark(_config(tmp, "base.toml", BASE + "[method.l2]\nweight_decay = 0.05\n"), store)
    return store


def _copy(store: Path, tmp: Path) -> Path:
    copy = tmp / "store.duckdb"
    shutil.copyfile(store, copy)
    cache = store.with_name(store.name + ".cache")
    if cache.exists():
        shutil.copytree(cache, copy.with_name(copy.name + ".cache"))
    return copy


def test_a_changed_hyper_parameter_is_refused_naming_it_or_becomes_a_variant(
        base_store: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    store = _copy(base_store, tmp_path)
    changed = _config(tmp_path, "changed.toml", BASE + "[method.l2]\nweight_decay = 0.1\n")
    before = query(store, "SELECT model_id FROM models ORDER BY ALL")
    for dry in ((), ("--dry-run",)):
        code, _, err = run_cli(capsys, "run", changed, "--store", store, *dry)
        assert code == 2, err
        text = " ".join(err.split())
        assert "sentiment iid-then-t/l2 (1 model(s)): hparams.method.weight_decay: 0.05 → 0.1" in text
        assert "--store OTHER.duckdb" in text and "--variant NAME" in text
        # the IID model's settings did not change: it is not named
        assert "iid/vanilla" not in text
    assert query(store, "SELECT model_id FROM models ORDER BY ALL") == before
    assert run_cli(capsys, "store", "check", store)[0] == 0
    # The precision policy shapes the numbers without being part of job ids: the same ids, refused all the same.
    auto = _config(tmp_path, "auto.toml", BASE.replace('precision = "fp32"', 'precision = "auto"')
                   + "[method.l2]\nweight_decay = 0.05\n")
    code, _, err = run_cli(capsys, "run", auto, "--store", store, "--dry-run")
    assert code == 2 and 'iid/vanilla (1 model(s)): precision: "fp32" → "auto"' in " ".join(err.split())

    code, out, err = run_cli(capsys, "run", changed, "--store", store, "--variant", "wd0.1")
    assert code == 0, err
    rows = query(store, "SELECT variant, config, method, scenario, n_cases FROM g_scores ORDER BY ALL")
    # Two variants, each with its own IID baseline and seen model; no view row mixes them.
    assert [r[:4] for r in rows] == [("", "iid", "vanilla", "standard"), ("", "iid-then-t", "l2", "seen"),
                                     ("wd0.1", "iid", "vanilla", "standard"), ("wd0.1", "iid-then-t", "l2", "seen")]
    assert len({r[4] for r in rows}) == 1  # every key scores each T_test case once
    assert query(store, "SELECT count(*) FROM duplicate_outcomes")[0][0] == 0
    assert run_cli(capsys, "store", "check", store)[0] == 0
    code, out, _ = run_cli(capsys, "report", store, "--variant", "wd0.1")
    assert code == 0 and "Variant 'wd0.1'; the store also holds (unnamed)" in " ".join(out.split())
    code, _, err = run_cli(capsys, "report", store, "--variant", "wd0.2")
    assert code == 2 and "did you mean 'wd0.1'" in err
    # A selector names the variant with ~NAME.
    code, out, err = run_cli(capsys, "sql", store, "SELECT count(*) AS n FROM models WHERE variant = 'wd0.1'")
    assert code == 0 and "2" in out


def test_a_failing_method_leaves_a_failed_row_and_a_rerun_retries_it(
        base_store: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch) -> None:
    store = _copy(base_store, tmp_path)
    config = _config(tmp_path, "failing.toml",
                     BASE.replace('methods = ["l2"]', 'methods = ["failing_method:Failing"]'))
    code, out, err = run_cli(capsys, "run", config, "--store", store)
    assert code == 1, err
    text = " ".join(err.split())
    assert re.search(r"failed after 1 attempt\(s\) on local (cpu|cuda\S*)", text), text   # cuda on a GPU machine
    assert "(iid-then-t/failing_method:Failing/seen, seed 42)" in text
    assert "RuntimeError: the failing method raised on purpose" in text
    (row,) = query(store, "SELECT status, error, error_type, attempts, worker, traceback FROM models "
                          "WHERE method = 'failing_method:Failing'")
    assert row[:4] == ("failed", "RuntimeError: the failing method raised on purpose", "RuntimeError", 1)
    assert re.match(r"local (cpu|cuda\S*) pid ", row[4]) and "raise RuntimeError" in row[5]
    # The views leave it out and say so; the report and store info show it.
    assert query(store, "SELECT n_done, n_failed FROM models_status WHERE method = 'failing_method:Failing'") == \
        [(0, 1)]
    assert query(store, "SELECT count(*) FROM g_scores WHERE method = 'failing_method:Failing'")[0][0] == 0
    code, out, _ = run_cli(capsys, "report", store)
    assert code == 0 and "1 job(s) failed and are left out of every figure" in " ".join(out.split())
    code, out, _ = run_cli(capsys, "store", "info", store)
    assert code == 0 and "failed model" in out and "RuntimeError" in out
    assert run_cli(capsys, "store", "check", store)[0] == 0
    # The dry run counts what is done and what failed, per job kind.
    code, out, _ = run_cli(capsys, "run", config, "--store", store, "--dry-run")
    out = " ".join(out.split())
    assert code == 0
    assert "IID models: 1 planned, 1 done, 0 failed (retried), 0 to run" in out
    assert "scenario models: 1 planned, 0 done, 1 failed (retried), 1 to run" in out
    # A re-run retries it; its row replaces the failed one.
    monkeypatch.setenv("BELUGA_TEST_FAILING", "0")
    code, out, err = run_cli(capsys, "run", config, "--store", store)
    assert code == 0, err
    assert query(store, "SELECT status, error FROM models WHERE method = 'failing_method:Failing'") == \
        [("done", None)]
    code, out, _ = run_cli(capsys, "run", config, "--store", store, "--dry-run")
    assert "scenario models: 1 planned, 1 done, 0 failed (retried), 0 to run" in " ".join(out.split())


def test_a_store_of_the_previous_beluga_migrates_and_reads_the_same(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    stores = DATA / "stores"
    store = tmp_path / "schema11.duckdb"
    with gzip.open(stores / "schema11.duckdb.gz", "rb") as src, store.open("wb") as dst:
        shutil.copyfileobj(src, dst)
    assert read_meta(store)["schema_version"] == "11"
    golden = json.loads(gzip.decompress((stores / "schema11.views.json.gz").read_bytes()))
    # Any reader brings it up to date; the old views' rows are unchanged, the new key column is ''.
    code, out, err = run_cli(capsys, "sql", store, "SELECT count(*) AS n FROM g_scores WHERE variant = ''",
                             "--format", "csv")
    assert (code, out) == (0, "n\n3\n"), err
    assert read_meta(store)["schema_version"] == str(SCHEMA_VERSION)
    for view, old in golden.items():
        assert view in VIEWS
        rows = query(store, f"SELECT {', '.join(old['columns'])} FROM {view}")
        assert sorted((_norm(r) for r in rows), key=lambda r: json.dumps(r, default=str)) == old["rows"], view
    assert run_cli(capsys, "store", "check", store)[0] == 0
    # Its models are the jobs of the config that made it: a re-run has nothing to train.
    config = shutil.copy(stores / "schema11.toml", tmp_path / "schema11.toml")
    code, out, err = run_cli(capsys, "run", config, "--dry-run")
    assert code == 0, err
    out = " ".join(out.split())
    assert "IID models: 1 planned, 1 done" in out and "scenario models: 4 planned, 4 done, 0 failed (retried), 0 to " \
        "run" in out
    # With a suite-only size changed, its IID model's earlier id (which hashed [sizes]) cannot be matched: refused,
    # saying why.
    text = config.read_text(encoding="utf-8")
    changed = tmp_path / "changed.toml"
    changed.write_text(re.sub(r"suite_train_per_group = \d+", "suite_train_per_group = 7", text), encoding="utf-8")
    assert changed.read_text(encoding="utf-8") != text
    code, out, err = run_cli(capsys, "run", changed, "--dry-run")
    assert code == 2 and "iid/vanilla (1 model(s)): its IID model was stored by a beluga before the IID model's " \
        "second identity scheme" in " ".join(err.split()), err


def _norm(row: tuple[object, ...]) -> list[object]:
    def one(x: object) -> object:
        if isinstance(x, float):
            return round(x, 9)
        if isinstance(x, list | tuple):
            return [one(y) for y in x]
        return x if isinstance(x, int | str | bool | type(None)) else str(x)
    return [one(x) for x in row]


def test_a_suite_header_naming_an_uninstalled_task_is_refused(tmp_path: Path,
                                                              capsys: pytest.CaptureFixture[str]) -> None:
    lines = gzip.decompress((REPO / "beluga_core/data/builtin/suites/sst2-phenomena.jsonl.gz").read_bytes()
                            ).decode().splitlines()
    header = json.loads(lines[0])
    header["task"] = "sentimnt"
    suite = tmp_path / "s.jsonl"
    suite.write_text("\n".join([json.dumps(header), *lines[1:]]) + "\n", encoding="utf-8")
    code, _, err = run_cli(capsys, "suite", "info", suite)
    assert code == 2
    assert "line 1" in err and "field 'task'" in err and "unknown task 'sentimnt'; did you mean 'sentiment'?" in err


def test_a_run_says_when_its_task_differs_from_the_suites(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    config = _config(tmp_path, "c.toml", BASE.replace('name = "sentiment"', 'name = "classification"')
                     .replace('iid = "builtin:sst2"', 'iid = "builtin:sst2"\noptions = { text_field = "sentence" }'))
    code, out, err = run_cli(capsys, "run", config, "--dry-run")
    assert code == 0, err
    assert ("suite 'sst2-phenomena' declares task 'sentiment', but the config trains it with task "
            "'classification'") in " ".join(out.split())


def test_a_method_hyper_parameter_typo_gets_a_did_you_mean(tmp_path: Path,
                                                           capsys: pytest.CaptureFixture[str]) -> None:
    config = _config(tmp_path, "c.toml", BASE + "[method.l2]\nweight_decy = 0.1\n")
    code, _, err = run_cli(capsys, "run", config, "--dry-run")
    err = " ".join(err.split())
    assert code == 2 and "field 'method.l2.weight_decy': unknown option; did you mean 'weight_decay'?" in err


def test_the_readme_store_commands_run_and_the_store_checks(sentiment_store: tuple[Path, str], tmp_path: Path,
                                                            capsys: pytest.CaptureFixture[str],
                                                            monkeypatch: pytest.MonkeyPatch) -> None:
    import shlex

    (commands,) = doc_blocks("sh", "store", page="guides/store.md")
    (tmp_path / "runs").mkdir()
    shutil.copyfile(sentiment_store[0], tmp_path / "runs" / "quick.duckdb")
    monkeypatch.chdir(tmp_path)
    outputs = []
    for line in filter(str.strip, commands.splitlines()):
        code, out, err = run_cli(capsys, *shlex.split(line)[1:])
        assert code == 0, f"{line}\n{err}"
        outputs.append(out)
    assert "iid-then-t" in outputs[0] and "store check: all" in outputs[-1]


def test_the_docs_document_every_trainer_member_and_count_the_methods() -> None:
    import re

    from beluga_core.api.methods import Trainer
    from beluga_core.contracts.registries import METHODS

    docs = docs_text()
    reference = (REPO / "docs" / "reference" / "plugin-api.md").read_text(encoding="utf-8")
    section = reference[reference.index("### `Trainer`"):]
    section = section[:section.index("\n### ", 10)]
    # Each member has a heading of its own, and a description (its docstring or comment) under it.
    documented = set(re.findall(r"^#### `(\w+)", section, re.M))
    assert not re.search(r"^#### .*\n\n\*[a-z ,]+\*\n", section, re.M), "a Trainer member without a description"
    members = {n for n in dir(Trainer) if not n.startswith("_")} | set(Trainer.__annotations__)
    assert members == documented
    builtin = [n for n, ep in METHODS._entry_points().items() if ep.value.startswith("beluga_core.")]
    words = {8: "eight", 9: "nine", 10: "ten", 11: "eleven", 12: "twelve", 13: "thirteen", 14: "fourteen"}
    assert f"any of the {words[len(builtin)]} built-ins" in docs
    smoke = re.search(r'^methods = \[(.*)\]', (REPO / "benchmarks" / "methods-smoke.toml").read_text(), re.M)
    assert smoke is not None and f"BeLUGA's {words[smoke.group(1).count(',') + 1]} methods" in docs


def _plan_ids(config: Path, store: Path) -> tuple[set[tuple[str, str]], set[str]]:
    """((the IID models' job id, training key), the other jobs' ids) of ``config`` planned for ``store``."""
    from beluga_core.config.load import load_config
    from beluga_core.orchestration.teachers import plan_with_stores

    plan = plan_with_stores(load_config(config).with_store_path(str(store.resolve())), config.resolve())
    return ({(j.id, j.training_key) for j in plan.jobs if j.is_iid_model},
            {j.id for j in plan.jobs if not j.is_iid_model})


def test_the_iid_model_is_the_same_whatever_the_suite_and_the_folds_are_not(base_store: Path, tmp_path: Path) -> None:
    """The IID model never trains on the suite: a suite with a case less, or another suite-only size, leaves its
    id, its training seed and so its weights as they were, while every fold gets a new id; a renamed suite gives it
    another id (the suite it is scored on: one store can score it on two) and the same training seed. Its T_test is
    checked apart from its id: scored on other cases, it is not done."""
    from beluga_core.core.hashing import sorted_ids_digest
    from beluga_core.data.suite.suite_files import load_suite, write_suite
    from beluga_core.store.reader import done_ids

    suite = load_suite("builtin:sst2-phenomena")
    write_suite(tmp_path / "fewer.jsonl", suite.header, suite.cases[1:])
    write_suite(tmp_path / "renamed.jsonl", suite.header.model_copy(update={"name": "renamed"}), suite.cases)
    fewer, renamed = (BASE.replace('suite = "builtin:sst2-phenomena"', f'suite = "{(tmp_path / f).as_posix()}"')
                      for f in ("fewer.jsonl", "renamed.jsonl"))
    more_train = BASE.replace("suite_train_per_group = 2", "suite_train_per_group = 3")
    new_store = tmp_path / "none.duckdb"
    base_iid, base_folds = _plan_ids(_config(tmp_path, "base.toml", BASE), new_store)
    for text in (fewer, more_train):
        iid, folds = _plan_ids(_config(tmp_path, "changed.toml", text), new_store)
        assert iid == base_iid and len(iid) == 1
        assert folds and not folds & base_folds
    ((base_id, base_key),) = base_iid
    ((other_id, other_key),) = _plan_ids(_config(tmp_path, "renamed.toml", renamed), new_store)[0]
    assert other_id != base_id and other_key == base_key != base_id

    # The weights: a run with the other suite-only size trains the IID model to the same bits as the base run.
    store = tmp_path / "more-train.duckdb"
    from helpers import run_benchmark
    run_benchmark(_config(tmp_path, "more-train.toml", more_train + "[method.l2]\nweight_decay = 0.05\n"), store)
    iid_id = base_id
    import torch
    a = torch.load(base_store.with_name(base_store.name + ".cache") / f"{iid_id}.pt", weights_only=True)
    b = torch.load(store.with_name(store.name + ".cache") / f"{iid_id}.pt", weights_only=True)
    a, b = (x.get("model", x) if isinstance(x, dict) else x for x in (a, b))
    assert a.keys() == b.keys() and all(torch.equal(a[k], b[k]) for k in a)

    # Scored on other T_test cases (another suite_test_per_group), the same IID model is not done.
    ids = [r[0] for r in query(base_store, f"SELECT case_id FROM outcomes WHERE model_id = '{iid_id}'")]
    assert done_ids(base_store, scored_on={iid_id: ("sst2-phenomena", sorted_ids_digest(ids))}) >= {iid_id}
    assert iid_id not in done_ids(base_store, scored_on={iid_id: ("sst2-phenomena", sorted_ids_digest(ids[1:]))})
    assert iid_id not in done_ids(base_store, scored_on={iid_id: ("renamed", sorted_ids_digest(ids))})
