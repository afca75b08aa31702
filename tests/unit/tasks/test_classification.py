"""The generic `classification` task: targets read off expectations (label sets, directional classes), the
suite's label space against the i.i.d. data's, `beluga suite from-table`, and a true three-class run of the
CheckList sentiment suite end to end."""

from __future__ import annotations

import gzip
import json
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from helpers import REPO, run_cli

from beluga_core.contracts.tasks import TaskSettings
from beluga_core.core.errors import BelugaError
from beluga_core.data.suite.suite_schema import Case, SuiteHeader
from beluga_core.tasks.classification import ClassificationTask
from beluga_core.tasks.sentiment import SentimentTask

THREE = ["negative", "neutral", "positive"]
TABLE = REPO / "beluga_core" / "data" / "builtin" / "tables" / "sst-phenomena.csv"


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


def test_mft_targets_are_read_off_the_expectation() -> None:
    t = task()
    assert targets(t, case({"kind": "eq", "target": "label"}, label=2)) == [([0, 0, 1], False)]
    assert targets(t, case({"kind": "eq", "value": "neutral"})) == [([0, 1, 0], False)]
    # "not negative": the set of accepted classes, trained with −log(p(neutral) + p(positive)).
    assert targets(t, case({"kind": "not_eq", "value": 0})) == [([0, 1, 1], True)]
    # CheckList's "Q & A: no": a neutral-labelled input also accepts positive (its if_label rule).
    qa = {"kind": "eq", "target": "label", "if_label": {"1": {"kind": "not_eq", "value": 0}}}
    assert targets(t, case(qa, label=1)) == [([0, 1, 1], True)]
    assert targets(t, case(qa, label=2)) == [([0, 0, 1], False)]
    with pytest.raises(BelugaError, match="not one of the suite's classes"):
        t.mft_items(case({"kind": "eq", "target": "label"}, label=3))
    # A kind trains with a single-input loss only when it says how (its train_as); inv does not.
    with pytest.raises(BelugaError, match="'inv' \\(the kind sets no train_as\\); give the case a pair loss"):
        t.mft_items(case({"kind": "inv", "agg": "all_except_first", "level": "pairwise"}, inputs=["a", "b"]))


def test_the_binary_sentiment_head_keeps_the_soft_targets_of_the_three_way_mapping() -> None:
    t = task(SentimentTask)
    assert targets(t, case({"kind": "eq", "target": "label"}, label=1)) == [([0.5, 0.5], False)]
    assert targets(t, case({"kind": "not_eq", "value": 0}))[0][0] == pytest.approx([1 / 3, 2 / 3])
    qa = {"kind": "eq", "target": "label", "if_label": {"1": {"kind": "not_eq", "value": 0}}}
    assert targets(t, case(qa, label=1)) == [([0.5, 0.5], False)]  # the neutral target, as before


def test_directional_classes_come_from_the_expectation_not_from_label_names() -> None:
    pair = {"inputs": ["a", "b"], "test_type": "DIR", "loss": "dir"}
    t = task()
    mono = {"kind": "monotonic", "agg": "all_except_first", "level": "pairwise", "increasing": True}
    assert t.pair_params(case(mono, **pair)) == {"comparison": "not_less_confident"}
    assert t.pair_params(case({**mono, "increasing": False}, **pair)) == {"comparison": "not_more_confident"}
    assert t.pair_params(case({**mono, "label": "positive"}, **pair)) == {"comparison": "not_less", "classes": [2]}
    score = {"kind": "score_monotonic", "agg": "all_except_first", "level": "pairwise",
             "score": {"plus": [2], "minus": [0]}}
    # A positive phrase added (the score may not fall): the negative class may not gain.
    assert t.pair_params(case({**score, "increasing": True}, **pair)) == {"comparison": "not_more", "classes": [0]}
    assert t.pair_params(case({**score, "increasing": False}, **pair)) == {"comparison": "not_more", "classes": [2]}
    # On the binary head the suite's positive class is the head's last.
    assert task(SentimentTask).pair_params(case({**score, "increasing": False}, **pair)) == \
        {"comparison": "not_more", "classes": [1]}
    # Explicit parameters in the suite's class ids are taken as given (mapped to the head).
    explicit = case(mono, loss_params={"comparison": "not_more", "classes": ["negative", "neutral"]}, **pair)
    assert t.pair_params(explicit) == {"comparison": "not_more", "classes": [0, 1]}


def test_the_shipped_suites_legacy_comparisons_equal_the_derived_ones() -> None:
    """builtin:sentiment names its DIR comparisons by label (not_more_negative, …); what the task derives
    from each case's expectation says the same on the binary head."""
    legacy = {"not_less_confident": {"comparison": "not_less_confident"},
              "not_more_confident": {"comparison": "not_more_confident"},
              "not_more_negative": {"comparison": "not_more", "classes": [0]},
              "not_more_positive": {"comparison": "not_more", "classes": [1]}}
    t = task(SentimentTask)
    path = REPO / "beluga_core" / "data" / "builtin" / "suites" / "sentiment.jsonl.gz"
    seen = set()
    with gzip.open(path, "rt", encoding="utf-8") as fh:
        next(fh)
        for line in fh:
            rec = json.loads(line)
            if rec["loss"] != "dir":
                continue
            name = rec["loss_params"]["comparison"]
            if name in seen:
                continue
            seen.add(name)
            assert t.pair_params(Case.model_validate(rec)) == legacy[name], rec["id"]
    assert seen == set(legacy)


# --------------------------------------------------------------------------------------------- label spaces


def write_iid(folder: Path, labels: list[str], names: list[str] | None = None) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    rows = "\n".join(f"text {i}\t{lab}" for i, lab in enumerate(labels))
    for split in ("train", "dev"):
        (folder / f"{split}.tsv").write_text(f"sentence\tlabel\n{rows}\n")
    if names:
        (folder / "label_names.txt").write_text("\n".join(names) + "\n")
    return folder


def test_the_suite_label_space_must_equal_the_iid_labels_up_to_a_label_map(tmp_path: Path) -> None:
    source = str(write_iid(tmp_path / "d", ["neg", "pos", "neu", "pos"]))
    with pytest.raises(BelugaError) as info:
        task().load_iid(source, 42)
    assert "['negative', 'neutral', 'positive']" in str(info.value) and "['neg', 'neu', 'pos']" in str(info.value)
    assert "label_map" in str(info.value)
    mapped = task(settings=TaskSettings(label_map={"neg": "negative", "neu": "neutral", "pos": "positive"}))
    data = mapped.load_iid(source, 42)
    assert data.label_names == THREE
    assert [ex.label for ex in data.train] == [0, 2, 1, 2]  # renumbered to the suite's order
    with pytest.raises(BelugaError, match="after label_map"):
        task(settings=TaskSettings(label_map={"neg": "negative"})).load_iid(source, 42)


def test_columns_are_options_and_unknown_options_are_errors(tmp_path: Path) -> None:
    folder = tmp_path / "d"
    folder.mkdir()
    for split in ("train", "dev"):
        (folder / f"{split}.csv").write_text("review,stars\ngreat,positive\nawful,negative\nok,neutral\n")
    t = task(settings=TaskSettings(options={"text_field": "review", "label_field": "stars"}))
    assert [ex.label for ex in t.load_iid(str(folder), 1).train] == [2, 0, 1]
    with pytest.raises(BelugaError, match="unknown option; it takes text_field, text_pair_field, label_field") as err:
        task(settings=TaskSettings(options={"text": "review"}))
    assert err.value.field == "options.text"


def test_metrics_accuracy_and_macro_f1_hand_computed() -> None:
    t = task()
    pred, gold = np.array([0, 1, 2, 2, 2, 0]), np.array([0, 1, 1, 2, 0, 0])
    # class 0: tp 2, pred 2, gold 3 → F1 = 4/5; class 1: tp 1, pred 1, gold 2 → 2/3; class 2: tp 1, pred 3,
    # gold 1 → 1/2; macro = (0.8 + 2/3 + 0.5) / 3.
    m = t.iid_metrics(pred, gold)
    assert m["accuracy"] == pytest.approx(4 / 6) and m["macro_f1"] == pytest.approx((0.8 + 2 / 3 + 0.5) / 3)


# --------------------------------------------------------------------------------------------- from-table


def test_from_table_builds_a_suite_that_a_run_accepts(tmp_path: Path, capsys: pytest.CaptureFixture[str],
                                                      monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("COLUMNS", "200")
    out = tmp_path / "sst-phenomena.jsonl.gz"
    code, printed, err = run_cli(capsys, "suite", "from-table", TABLE, "--text", "sentence", "--label", "label",
                                 "--groups", "length,phenomenon", "--id", "id", "--out", out)
    assert code == 0, err
    assert "240 case(s) from 242 row(s)" in printed and "dropped 2 row(s): 1 empty text, 1 no label" in printed
    assert "label space: negative (80), neutral (80), positive (80)" in printed
    config = tmp_path / "c.toml"
    config.write_text(f'name = "t"\nconfigurations = ["iid", "iid-then-t"]\n'
                      f'scenarios = ["standard", "seen", "phenomenon", "length"]\n'
                      f'[[tasks]]\nname = "classification"\nsuite = "{out}"\niid = "builtin:sst3"\n')
    code, plan, err = run_cli(capsys, "run", config, "--dry-run")
    assert code == 0, err
    assert "phenomenon" in plan and "length" in plan and "trainings in all" in plan
    # A wrong column, and a table with one label, are clear errors.
    code, _, err = run_cli(capsys, "suite", "from-table", TABLE, "--text", "text", "--label", "label",
                           "--groups", "length", "--out", tmp_path / "x.jsonl")
    assert code == 2 and "missing column(s) 'text'" in err and not (tmp_path / "x.jsonl").exists()


# --------------------------------------------------------------------------------------------- end to end


def test_a_misspelt_iid_metric_is_located_in_the_config(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    config = tmp_path / "metric.toml"
    config.write_text('name = "m"\nconfigurations = ["iid"]\nscenarios = ["standard"]\n\n[[tasks]]\n'
                      'name = "classification"\nsuite = "builtin:sentiment"\niid = "builtin:sst2"\n'
                      'iid_metric = "macro-f1"\n', encoding="utf-8")
    code, _, err = run_cli(capsys, "run", config, "--dry-run")
    assert code == 2, err
    assert f"{config}, line 9, field 'tasks.0.iid_metric': task 'classification' computes no i.i.d. metric " \
           "'macro-f1'; did you mean 'macro_f1'?" in " ".join(err.split()), err


def test_a_dry_run_reads_local_iid_data(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """A missing text column or labels outside the suite's label space stop the dry run (exit 2, located), where
    they used to pass it and fail the run's first training."""
    config = tmp_path / "local.toml"
    config.write_text('name = "l"\nconfigurations = ["iid"]\nscenarios = ["standard"]\n\n[[tasks]]\n'
                      'name = "classification"\nsuite = "builtin:sentiment"\niid = "data"\n'
                      'options = {text_field = "text"}\n', encoding="utf-8")
    data = tmp_path / "data"
    data.mkdir()
    for split in ("train", "dev"):
        (data / f"{split}.csv").write_text("sentence,label\ngood film,pos\nbad film,neg\n", encoding="utf-8")
    code, _, err = run_cli(capsys, "run", config, "--dry-run")
    assert code == 2, err
    assert f"{config}, line 8, field 'tasks.0.iid': {data / 'train.csv'}: missing column(s) 'text'" \
        in " ".join(err.split()), err
    config.write_text(config.read_text().replace('options = {text_field = "text"}\n', ""), encoding="utf-8")
    code, _, err = run_cli(capsys, "run", config, "--dry-run")
    assert code == 2 and f"{config}, field 'tasks.0.label_map': the suite's label space ['negative', 'neutral', " \
        "'positive'] and the i.i.d. labels" in " ".join(err.split()), err
    config.write_text(config.read_text() + 'label_map = {neg = "negative", pos = "positive", neu = "neutral"}\n',
                      encoding="utf-8")
    for split in ("train", "dev"):
        (data / f"{split}.csv").write_text("sentence,label\ngood,pos\nbad,neg\nso so,neu\n", encoding="utf-8")
    code, plan, err = run_cli(capsys, "run", config, "--dry-run")
    assert code == 0 and "trainings in all" in plan, err
