"""Every user mistake gets a specific message (file, line / field, what was expected) and exit status 2."""

from __future__ import annotations

import gzip
import json
from pathlib import Path

import pytest

from beluga_core.cli.app import main

HEADER = {"kind": "suite", "name": "mini", "levels": ["domain", "skill"], "scoring_level": "skill",
          "task": "sentiment", "input_kind": "text", "label_space": ["negative", "positive"]}


def case(i: int, **over: object) -> dict:
    rec = {"id": f"c{i}", "groups": {"domain": "movies", "skill": "negation"}, "test_type": "MFT", "loss": "mft",
           "inputs": [f"not a good film {i}"], "label": 0, "expectation": {"kind": "eq", "target": "label"}}
    rec.update(over)
    return rec


def write_suite(path: Path, records: list[object], raw_lines: dict[int, str] | None = None) -> Path:
    lines = [json.dumps(r) for r in records]
    for lineno, text in (raw_lines or {}).items():
        lines.insert(lineno - 1, text)
    path.write_text("\n".join(lines) + "\n")
    return path


def run_cli(argv: list[str], capsys: pytest.CaptureFixture[str]) -> tuple[int, str]:
    with pytest.raises(SystemExit) as exc:
        main(argv)
    err = capsys.readouterr().err
    assert "Traceback" not in err
    return int(exc.value.code or 0), " ".join(err.split())


GOOD_CONFIG = """name = "x"
scenarios = ["standard", "seen", "phenomenon"]
[[tasks]]
name = "sentiment"
suite = "builtin:sst2-phenomena"
iid = "builtin:sst2"
[training]
epochs = 1
"""

SUITE_ERRORS = {
    "broken JSON line": ([HEADER, case(1)], {3: '{"id": "c2", "groups": '}, ["line 3", "not valid JSON"]),
    "unknown expectation kind": ([HEADER, case(1, expectation={"kind": "eqq"})], None,
                                 ["line 2", "unknown expectation kind 'eqq'", "did you mean 'eq'"]),
    "missing level": ([HEADER, case(1, groups={"skill": "negation"})], None,
                      ["line 2", "no group for level(s) ['domain']"]),
    "missing group at a crossing level's neighbour": (
        [{**HEADER, "crossing_levels": ["domain"]}, case(1, groups={"domain": "movies"})], None,
        ["line 2", "no group for level(s) ['skill']", "listed in its crossing_levels"]),
    "crossing level not a level": ([{**HEADER, "crossing_levels": ["target"]}, case(1)], None,
                                   ["line 1", "crossing_levels ['target'] are not among the levels"]),
    "scoring level crossing": ([{**HEADER, "crossing_levels": ["skill"]}, case(1)], None,
                               ["line 1", "scoring level 'skill' cannot be a crossing level"]),
    "case with no inputs": ([HEADER, case(1, inputs=[])], None, ["line 2", "inputs", "at least 1 item"]),
    "header missing": ([case(1)], None, ["line 1", "suite header"]),
    "duplicate case id": ([HEADER, case(1), case(1)], None, ["line 3", "duplicate case id 'c1'", "line 2"]),
    "label list length": ([HEADER, case(1, label=[0, 1])], None, ["line 2", "one label per input"]),
    "scoring level not a level": ([{**HEADER, "scoring_level": "topic"}, case(1)], None,
                                  ["line 1", "scoring_level 'topic' is not one of the levels"]),
    "bad expectation parameter": ([HEADER, case(1, expectation={"kind": "inv", "tolerance": "big"})], None,
                                  ["line 2", "tolerance"]),
    # Content that parses but contradicts the header or names nothing installed.
    "label beyond the label space": ([HEADER, case(1, label=5)], None,
                                     ["line 2", "field 'label'", "label 5 is not in the suite's label space",
                                      "0–1"]),
    "negative label": ([HEADER, case(1, label=-1)], None, ["line 2", "label -1 is not in the suite's label space"]),
    "label name not in the label space": ([HEADER, case(1, label="neutral")], None,
                                          ["line 2", "label 'neutral' is not in", "negative", "positive"]),
    "correction label beyond the label space": ([HEADER, case(1, correction={"reason": "r", "label": 7})], None,
                                                ["line 2", "correction.label", "label 7"]),
    "one text in a text_pair suite": ([{**HEADER, "input_kind": "text_pair"}, case(1)], None,
                                      ["line 2", "inputs[0]", "a single text", "'text_pair' takes a [first, "
                                       "second] pair"]),
    "a pair in a text suite": ([HEADER, case(1, inputs=[["a", "b"]])], None,
                               ["line 2", "inputs[0]", "is a pair", "'text' takes one text"]),
    "unknown loss": ([HEADER, case(1, loss="mtf")], None, ["line 2", "field 'loss'", "unknown loss 'mtf'",
                                                           "did you mean 'mft'"]),
    "unknown test type": ([HEADER, case(1, test_type="MTF")], None,
                          ["line 2", "field 'test_type'", "unknown test type 'MTF'", "did you mean 'MFT'"]),
    "invariance case with a single input": (
        [HEADER, case(1, test_type="INV", loss="inv", label=None, expectation={"kind": "inv"})], None,
        ["line 2", "compares every input with the first one", "at least 2 inputs; it has 1"]),
    "NaN expectation parameter": ([HEADER], {2: '{"id": "c1", "groups": {"domain": "m", "skill": "s"}, '
                                              '"test_type": "INV", "loss": "inv", "inputs": ["a", "b"], '
                                              '"expectation": {"kind": "inv", "tolerance": NaN}}'},
                                  ["line 2", "NaN is not valid JSON"]),
    "infinite expectation parameter": ([HEADER], {2: '{"id": "c1", "groups": {"domain": "m", "skill": "s"}, '
                                                   '"test_type": "INV", "loss": "inv", "inputs": ["a", "b"], '
                                                   '"expectation": {"kind": "inv", "tolerance": 1e999}}'},
                                       ["line 2", "1e999 is not a finite number"]),
    "empty group name": ([HEADER, case(1, groups={"domain": " ", "skill": "negation"})], None,
                         ["line 2", "groups.domain", "group name at level 'domain' is empty"]),
}


@pytest.mark.parametrize("name", sorted(SUITE_ERRORS))
def test_malformed_suite(name: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    records, raw, expected = SUITE_ERRORS[name]
    path = write_suite(tmp_path / "s.jsonl", records, raw)
    code, err = run_cli(["suite", "info", str(path)], capsys)
    assert code == 2
    assert str(path) in err
    for fragment in expected:
        assert fragment in err, (fragment, err)


def test_missing_suite_file(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, err = run_cli(["suite", "info", str(tmp_path / "nope.jsonl")], capsys)
    assert code == 2 and "file not found" in err


def test_corrupt_gzip_suite(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "s.jsonl.gz"
    data = gzip.compress(json.dumps(HEADER).encode() + b"\n" + json.dumps(case(1)).encode() + b"\n")
    path.write_bytes(data[: len(data) // 2])
    code, err = run_cli(["suite", "info", str(path)], capsys)
    assert code == 2 and "cannot read" in err


PRED_ERRORS = {
    "wrong vector length": ('{"id": "c1", "preds": [[0.2, 0.3, 0.5, 0.0]]}', ["line 1", "length"]),
    "unknown id": ('{"id": "c1", "preds": [[0.2, 0.8]]}\n{"id": "zzz", "preds": [[0.2, 0.8]]}',
                   ["line 2", "zzz"]),
    "duplicate id": ('{"id": "c1", "preds": [[0.2, 0.8]]}\n{"id": "c1", "preds": [[0.2, 0.8]]}',
                     ["line 2", "duplicate id 'c1'", "first on line 1"]),
    "missing id": ('{"preds": [[0.2, 0.8]]}', ["line 1", "missing or non-string \"id\""]),
    "not an object": ('[[0.2, 0.8]]', ["line 1", "expected a JSON object", "got list"]),
    "preds not a list": ('{"id": "c1", "preds": 0.8}', ["line 1", "\"preds\" must be a list"]),
    "more predictions than inputs": ('{"id": "c1", "preds": [[0.2, 0.8], [0.5, 0.5]]}',
                                     ["line 1", "1 input(s) but 2 prediction(s)"]),
    "non-numeric entry": ('{"id": "c1", "preds": [[0.2, "high"]]}', ["line 1", "non-numeric value"]),
    "not a probability vector": ('{"id": "c1", "preds": [[0.7, 0.8]]}', ["line 1", "not a probability vector"]),
    "infinite probability": ('{"id": "c1", "preds": [[1e999, 0.0]]}', ["line 1", "not a finite number"]),
    "NaN probability": ('{"id": "c1", "preds": [[NaN, 0.0]]}', ["line 1", "NaN is not valid JSON"]),
    "a case without predictions": ('{"id": "c1", "preds": [[0.2, 0.8]]}', ["1 of 2 cases have no predictions"]),
}


@pytest.mark.parametrize("name", sorted(PRED_ERRORS))
def test_malformed_predictions(name: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    cases = [case(1), case(2)] if name == "a case without predictions" else [case(1)]
    suite = write_suite(tmp_path / "s.jsonl", [HEADER, *cases])
    text, expected = PRED_ERRORS[name]
    pred = tmp_path / "pred.jsonl"
    pred.write_text(text + "\n")
    out = tmp_path / "out.jsonl"
    code, err = run_cli(["suite", "check", str(suite), "--predictions", str(pred), "--out", str(out)], capsys)
    assert code == 2 and str(pred) in err
    for fragment in expected:
        assert fragment in err, (fragment, err)
    assert not out.exists()  # nothing half-written


CONFIG_ERRORS = {
    "bad TOML": (GOOD_CONFIG.replace('name = "x"', 'name = "x'), ["line 1", "not valid TOML"]),
    "unknown method": (GOOD_CONFIG.replace('name = "x"', 'name = "x"\nmethods = ["vanila"]'),
                       ["line 2", "unknown method 'vanila'", "did you mean 'vanilla'"]),
    "unknown configuration": (GOOD_CONFIG.replace('name = "x"', 'name = "x"\nconfigurations = ["iid-then"]'),
                              ["line 2", "unknown training configuration 'iid-then'", "did you mean"]),
    "unknown task": (GOOD_CONFIG.replace('name = "sentiment"', 'name = "sentimnt"'),
                     ["line 4", "unknown task 'sentimnt'", "did you mean 'sentiment'"]),
    "unknown key": (GOOD_CONFIG + "learning_rat = 1e-5\n", ["line 9", "training.learning_rat", "Extra inputs"]),
    "wrong type": (GOOD_CONFIG.replace("epochs = 1", 'epochs = "three"'), ["line 8", "training.epochs", "number"]),
    "scenario not a level": (GOOD_CONFIG.replace('"phenomenon"]', '"functionality"]'),
                             ["line 2", "scenario 'functionality' is not a level", "phenomenon, length, test_type"]),
    "per-group size of an unknown group": (GOOD_CONFIG + "[sizes.suite_test_per_group_of]\nnegatoin = 50\n",
                                           ["line 10", "sizes.suite_test_per_group_of.negatoin",
                                            "'negatoin' is not a phenomenon", "did you mean 'negation'"]),
    "per-configuration size of a configuration not run": (
        GOOD_CONFIG + "[sizes.iid_mix_of]\niid-plus-tt = 50\n",
        ["line 10", "sizes.iid_mix_of.iid-plus-tt", "did you mean 'iid-plus-t'"]),
    # The run has no configuration that mixes i.i.d. data: the error lists the run's configurations.
    "per-configuration size of a configuration the run no longer has": (
        GOOD_CONFIG.replace('name = "x"', 'name = "x"\nconfigurations = ["iid", "iid-then-t"]')
        + "[sizes.iid_mix_of]\niid-plus-t = 448\n",
        ["line 11", "sizes.iid_mix_of.iid-plus-t", "'iid-plus-t' is not a configuration of this run",
         "this run. The run's configurations: iid, iid-then-t;", "the ones this table may name: none (each must mix",
         "Add 'iid-plus-t' to `configurations`"]),
    "i.i.d. mix for a configuration that mixes none": (
        GOOD_CONFIG + "[sizes.iid_mix_of]\niid-then-t = 50\n",
        ["line 10", "'iid-then-t' does not mix i.i.d. data", "iid-plus-t, iid-then-iid-plus-t"]),
    "training overrides for an unknown configuration": (
        GOOD_CONFIG + "[training.configurations.iid-then]\nlearning_rate = 1e-4\n",
        ["line 9", "training.configurations.iid-then", "did you mean 'iid-then-t'"]),
    "unknown executor": (GOOD_CONFIG + '[executor]\nname = "slurm"\n', ["unknown executor 'slurm'", "local"]),
    "hyper-parameters of a misspelt method": (GOOD_CONFIG + "[method.group_dro]\neta = 0.1\n",
                                              ["line 9", "unknown method 'group_dro'", "did you mean 'group-dro'"]),
    "unknown method hyper-parameter": (
        GOOD_CONFIG.replace('name = "x"', 'name = "x"\nmethods = ["irm"]') + "[method.irm]\npenalty = 3\n",
        ["line 11", "field 'method.irm.penalty'", "unknown option; did you mean 'penalty_weight'?",
         "it takes penalty_weight, anneal_fraction, env_level, learning_rate"]),
    # A method's options are its Options model's (issue 58), strict: a whole number is not 8.0 nor true.
    "lora rank not a whole number": (
        GOOD_CONFIG + "[method.lora]\nr = 8.0\n", ["line 10", "field 'method.lora.r'", "valid integer", "(got 8.0)"]),
    "lora rank a boolean": (
        GOOD_CONFIG + "[method.lora]\nr = true\n", ["line 10", "field 'method.lora.r'", "valid integer", "(got true)"]),
    "lora rank 0": (
        GOOD_CONFIG + "[method.lora]\nr = 0\n",
        ["line 10", "field 'method.lora.r'", "greater than or equal to 1", "(got 0)"]),
    "a training key of the wrong type in a method's table": (
        GOOD_CONFIG + "[method.irm]\nepochs = \"two\"\n", ["line 10", "field 'method.irm.epochs'", "valid number"]),
    "a grid value a method's option refuses": (
        GOOD_CONFIG + "[grid.methods.lora]\nr = [4, 0]\n",
        ["line 10", "field 'grid.methods.lora.r'", "greater than or equal to 1", "(got 0)"]),
    "a task option the task does not take": (
        GOOD_CONFIG.replace('iid = "builtin:sst2"', 'iid = "builtin:sst2"\noptions = { text_field = "text" }'),
        ["line 7", "field 'tasks.0.options.text_field'", "unknown option; it takes no options"]),
    "a misspelt task option": (
        GOOD_CONFIG.replace('name = "sentiment"', 'name = "classification"').replace(
            'iid = "builtin:sst2"', 'iid = "builtin:sst2"\noptions = { text_fild = "sentence" }'),
        ["line 7", "field 'tasks.0.options.text_fild'", "did you mean 'text_field'?"]),
    # Issue 58: one test per plugin kind (method and task above; generator and signal below, with the CLI and zoo).
    "a misspelt attribution option": (
        GOOD_CONFIG + '[attributions]\nmethods = ["ig"]\n[attributions.options.ig]\nstep = 8\n',
        ["line 12", "field 'attributions.options.ig.step'", "unknown option; did you mean 'steps'?"]),
    "an executor option of the wrong type": (
        GOOD_CONFIG + '[executor]\nname = "multi"\n[executor.options]\nmax_retries = "two"\n',
        ["line 12", "field 'executor.options.max_retries'", "Input should be a valid integer (got 'two')"]),
    "a misspelt executor option": (
        GOOD_CONFIG + '[executor]\nname = "ray"\n[executor.options]\ngpu_per_fold = 1\n',
        ["line 12", "field 'executor.options.gpu_per_fold'", "did you mean 'gpus_per_fold'?"]),
    "a grid axis no option of the method has": (
        GOOD_CONFIG + "[grid.methods.irm]\npenalty = [1.0]\n",
        ["line 10", "field 'grid.methods.irm.penalty'", "did you mean 'penalty_weight'?"]),
    "training key of a method that reuses others' values": (
        GOOD_CONFIG.replace('name = "x"', 'name = "x"\nmethods = ["lp-ft"]') + "[method.lp-ft]\nlearning_rate = 1e-3\n",
        ["line 11", "method.lp-ft.learning_rate", "trains its stages with the values of lp and vanilla",
         "[method.lp] / [method.vanilla]"]),
    "grid axes of a method without a search of its own": (
        GOOD_CONFIG.replace('name = "x"', 'name = "x"\nmethods = ["lp-ft"]')
        + "[grid]\nenabled = true\n[grid.methods.lp-ft]\nlearning_rate = [1e-3]\n",
        ["line 12", "grid.methods.lp-ft", "no grid search of its own", "[grid.methods.lp] / [grid.methods.vanilla]"]),
    "grid axes of a misspelt task": (GOOD_CONFIG + "[grid.tasks.reeding]\nbatch_size = [2]\n",
                                     ["line 9", "unknown task 'reeding'", "did you mean 'reading'"]),
    "model folder that does not exist": (GOOD_CONFIG + '[model]\nname = "./no-such-dir"\n',
                                         ["line 10", "model.name", "no such file or folder", "no-such-dir",
                                          "relative to the config file's folder"]),
    "model file that does not exist": (GOOD_CONFIG + '[model]\nname = "weights.safetensors"\n',
                                       ["line 10", "model.name", "no such file or folder"]),
    "model name that is no hub id": (GOOD_CONFIG + '[model]\nname = "bert base"\n',
                                     ["line 10", "model.name", "neither an existing path nor a Hugging Face model "
                                      "id"]),
    "i.i.d. folder that does not exist": (GOOD_CONFIG.replace('iid = "builtin:sst2"', 'iid = "./no-such-data/"'),
                                          ["line 6", "tasks.0.iid", "no such file or folder", "no-such-data"]),
    "i.i.d. name that is no hub id": (GOOD_CONFIG.replace('iid = "builtin:sst2"', 'iid = "glue sst2"'),
                                      ["line 6", "tasks.0.iid", "nor a Hugging Face dataset id ([org/]name[/config])"]),
    "suite file that does not exist": (GOOD_CONFIG.replace('suite = "builtin:sst2-phenomena"',
                                                           'suite = "my-suite.jsonl.gz"'),
                                       ["line 5", "tasks.0.suite", "no such file or folder", "my-suite.jsonl.gz"]),
    "store that is a folder": (GOOD_CONFIG.replace('name = "x"', 'name = "x"\nstore = "."'),
                               ["line 2", "field 'store'", "is a folder; the store is a file"]),
    "model config override the model does not have": (
        GOOD_CONFIG + "[model]\nconfig_overrides = { num_hiden_layers = 2 }\n",
        ["line 10", "model.config_overrides.num_hiden_layers", "not a setting of the bert config",
         "did you mean 'num_hidden_layers'"]),
    "model config override that reshapes the pretrained weights": (
        GOOD_CONFIG + "[model]\nconfig_overrides = { num_hidden_layers = 2, intermediate_size = 3072 }\n",
        ["line 10", "model.config_overrides.intermediate_size", "intermediate_size = 3072 (model 'embedded:minilm' "
         "has 1536) changes the shape of the pretrained weights"]),
    "model config override that adds layers": (
        GOOD_CONFIG + "[model]\nconfig_overrides = { num_hidden_layers = 12 }\n",
        ["line 10", "model.config_overrides.num_hidden_layers", "num_hidden_layers = 12 (model 'embedded:minilm' has "
         "6) adds layers the pretrained model has no weights for"]),
}


@pytest.mark.parametrize("name", sorted(CONFIG_ERRORS))
def test_malformed_config(name: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    text, expected = CONFIG_ERRORS[name]
    path = tmp_path / "bench.toml"
    path.write_text(text)
    code, err = run_cli(["run", str(path), "--dry-run"], capsys)
    assert code == 2 and str(path) in err
    for fragment in expected:
        assert fragment in err, (fragment, err)


def test_a_bad_generator_option_names_the_option_as_given(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    # From an options file (--options FILE): the file, the line and the field.
    options = tmp_path / "options.toml"
    options.write_text("[context]\nskip_years = false\nfunctions = [\"add_typos\", \"nope\"]\n")
    code, err = run_cli(["suite", "generate", "context", "--source", "builtin:sst2", "--dry-run", "--limit", "5",
                         "--options", str(options)], capsys)
    assert code == 2 and f"{options}, line 3, field 'context.functions': item 1: Input should be 'punctuation'" in err
    options.write_text("[contxt]\nskip_years = false\n")
    code, err = run_cli(["suite", "generate", "context", "--source", "builtin:sst2", "--dry-run", "--limit", "5",
                         "--options", str(options)], capsys)
    assert code == 2 and f"{options}, line 1, field 'contxt'" in err and "did you mean 'context'?" in err
    # From the command line (--option NAME.KEY=VALUE): the option as given.
    code, err = run_cli(["suite", "generate", "context", "--source", "builtin:sst2", "--dry-run",
                         "--option", "context.skip_year=false"], capsys)
    assert code == 2 and "field '--option context.skip_year'" in err and "did you mean 'skip_years'?" in err
    code, err = run_cli(["suite", "generate", "masked-entity-k", "--source", "builtin:fewrel16#val", "--dry-run",
                         "--option", "k=1.5"], capsys)
    assert code == 2 and "field '--option masked-entity-k.k'" in err and "less than or equal to 1 (got 1.5)" in err


def test_a_bad_signal_option_in_a_zoo_file_names_its_line_and_field(tmp_path: Path,
                                                                    capsys: pytest.CaptureFixture[str]) -> None:
    zoo = tmp_path / "zoo.toml"
    zoo.write_text('probe = "builtin:sst2-phenomena"\n\n[signal_options.window]\nwords = ["not"]\nhalf_width = -1\n'
                   '\n[[models]]\nname = "a"\npath = "a"\ntruth = 0.5\n\n[[models]]\nname = "b"\npath = "b"\n'
                   'truth = 0.6\n')
    code, err = run_cli(["rank", "--zoo", str(zoo)], capsys)
    assert code == 2 and f"{zoo}, line 5, field 'signal_options.window.half_width'" in err
    assert "greater than or equal to 0 (got -1)" in err
    # On the command line, the option as given, before any model loads.
    zoo.write_text(zoo.read_text().replace("half_width = -1", "half_width = 1"))
    code, err = run_cli(["rank", "--zoo", str(zoo), "--option", "window.normalise=\"l1\""], capsys)
    assert code == 2 and "field '--option window.normalise'" in err and "did you mean 'normalize'?" in err, err


def test_missing_config_and_store(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, err = run_cli(["run", str(tmp_path / "none.toml"), "--dry-run"], capsys)
    assert code == 2 and "config file not found" in err
    code, err = run_cli(["report", str(tmp_path / "none.duckdb")], capsys)
    assert code == 2 and "no such result store" in err


def test_import_checklist_not_a_tarball(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    bogus = tmp_path / "suite.tar.gz"
    bogus.write_bytes(b"this is not a tarball")
    code, err = run_cli(["suite", "import-checklist", str(bogus), "--out", str(tmp_path / "o.jsonl.gz")], capsys)
    assert code == 2 and str(bogus) in err
    assert not (tmp_path / "o.jsonl.gz").exists()


@pytest.mark.parametrize(("text", "field", "name"), [
    (GOOD_CONFIG.replace('iid = "builtin:sst2"', 'iid = "glue/sst2"'), "tasks.0.iid", "glue/sst2"),
    (GOOD_CONFIG + '[model]\nname = "bert-base-uncased"\n', "model.name", "bert-base-uncased"),
], ids=["dataset", "model"])
def test_run_stops_before_training_on_a_hub_name_it_cannot_get(
        text: str, field: str, name: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
        capsys: pytest.CaptureFixture[str]) -> None:
    # Offline, with an empty Hugging Face cache: the run fails naming the field, before anything trains.
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    monkeypatch.setenv("HF_HOME", str(tmp_path / "hf"))
    path = tmp_path / "bench.toml"
    path.write_text(text.replace('name = "x"\n', 'name = "x"\nstore = "s.duckdb"\n', 1))
    code, err = run_cli(["run", str(path)], capsys)
    assert code == 2, err
    for fragment in (str(path), f"field '{field}'", f"'{name}' is not in the local Hugging Face cache",
                     "offline mode is on"):
        assert fragment in err, (fragment, err)
    assert not (tmp_path / "s.duckdb").exists()  # nothing written


def test_dry_run_says_per_hub_name_cached_or_will_download(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                          capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.setenv("HF_HOME", str(tmp_path / "hf"))
    monkeypatch.setenv("COLUMNS", "200")
    monkeypatch.delenv("HF_HUB_OFFLINE", raising=False)  # online: a missing name would be downloaded by a run
    (tmp_path / "hf" / "hub" / "models--bert-base-uncased").mkdir(parents=True)  # as huggingface_hub lays it out
    path = tmp_path / "bench.toml"
    path.write_text(GOOD_CONFIG.replace('iid = "builtin:sst2"', 'iid = "glue/sst2"')
                    + '[model]\nname = "bert-base-uncased"\n')
    main(["run", str(path), "--dry-run"])
    plan = capsys.readouterr().out
    assert "model bert-base-uncased: cached" in plan, plan
    assert "i.i.d. data glue/sst2: will download before the first training" in plan, plan
    assert not (tmp_path / "hf" / "datasets").exists()  # a dry run downloads nothing


# --------------------------------------------------------------------------------- CheckList tarballs


def _tarball(path: Path, members: dict[str, bytes]) -> Path:
    import io
    import tarfile

    with tarfile.open(path, "w:gz") as tar:
        for name, data in members.items():
            info = tarfile.TarInfo(name)
            info.size = len(data)
            tar.addfile(info, io.BytesIO(data))
    return path


TARBALL_ERRORS = {
    "no pickle inside": ({"suite/README.md": b"hello"}, ["holds no CheckList suite pickle", "suite/README.md"]),
    "two pickles inside": ({"a.pkl": b"x", "b.pkl": b"y"}, ["several pickles", "a.pkl, b.pkl"]),
    "a pickle of something else": ({"s.pkl": __import__("pickle").dumps({"tests": []})},
                                   ["holds", "not a CheckList TestSuite"]),
    "a truncated pickle": ({"s.pkl": b"\x80\x04\x95"}, ["neither a tarball nor a readable pickle"]),
    # Hand-written opcodes: a TestSuite object whose state lacks `tests`, or whose `tests` is empty.
    "a TestSuite without tests": ({"s.pkl": b"\x80\x02cchecklist.test_suite\nTestSuite\n)\x81}b."},
                                  ["has no 'tests' mapping"]),
    "a TestSuite with no tests": ({"s.pkl": b"\x80\x02cchecklist.test_suite\nTestSuite\n)\x81}"
                                            b"X\x05\x00\x00\x00tests}sb."}, ["the CheckList suite has no tests"]),
}


@pytest.mark.parametrize("name", sorted(TARBALL_ERRORS))
def test_malformed_tarball(name: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    members, expected = TARBALL_ERRORS[name]
    tarball = _tarball(tmp_path / "suite.tar.gz", members)
    out = tmp_path / "o.jsonl.gz"
    code, err = run_cli(["suite", "import-checklist", str(tarball), "--out", str(out)], capsys)
    assert code == 2 and str(tarball) in err, err
    for fragment in expected:
        assert fragment in err, (fragment, err)
    assert not out.exists()


# --------------------------------------------------------------------------------- result stores

def _store_file(tmp_path: Path, kind: str) -> Path:
    """A file (or folder) passed where a result store is expected."""
    import duckdb

    path = tmp_path / "results.duckdb"
    if kind == "a folder":
        path.mkdir()
    elif kind == "a text file":
        path.write_text("model_id,outcome\nm1,pass\n")
    elif kind == "a gzip file":
        path.write_bytes(gzip.compress(b"not a database"))
    elif kind == "an empty DuckDB file":
        duckdb.connect(str(path)).close()
    elif kind == "another program's DuckDB file":
        con = duckdb.connect(str(path))
        con.execute("CREATE TABLE sales (id INTEGER)")
        con.close()
    elif kind == "a newer beluga's store":
        con = duckdb.connect(str(path))
        con.execute("CREATE TABLE beluga_meta (key VARCHAR PRIMARY KEY, value VARCHAR)")
        con.execute("INSERT INTO beluga_meta VALUES ('schema_version', '999'), ('last_beluga_version', '9.0')")
        con.close()
    elif kind == "a store without a schema version":
        con = duckdb.connect(str(path))
        con.execute("CREATE TABLE beluga_meta (key VARCHAR PRIMARY KEY, value VARCHAR)")
        con.close()
    return path


STORE_ERRORS = {
    "missing": ["no such result store"],
    "a folder": ["is a folder, not a file"],
    "a text file": ["not a DuckDB database"],
    "a gzip file": ["not a DuckDB database"],
    "an empty DuckDB file": ["an empty DuckDB file, not a beluga result store"],
    "another program's DuckDB file": ["not a beluga result store", "sales"],
    "a newer beluga's store": ["schema version 999", "up to", "Upgrade beluga"],
    "a store without a schema version": ["no schema_version"],
}


@pytest.mark.parametrize("command", ["report", "store check", "select"])
@pytest.mark.parametrize("kind", sorted(STORE_ERRORS))
def test_malformed_store(kind: str, command: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = _store_file(tmp_path, kind)
    code, err = run_cli([*command.split(), str(path)], capsys)
    assert code == 2 and str(path) in err, err
    for fragment in STORE_ERRORS[kind]:
        assert fragment in err, (fragment, err)
