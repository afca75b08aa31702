"""i.i.d. data of the paraphrase and reading tasks: real formats (GLUE QQP TSV, SQuAD JSON, Hugging Face
datasets), the shipped offline fixtures, task settings, and how suite cases become training items."""

from __future__ import annotations

import json
import lzma
from pathlib import Path

import numpy as np
import pytest

from beluga_core.contracts.tasks import TaskSettings
from beluga_core.core.errors import BelugaError
from beluga_core.data.iid import hub as iid_hub
from beluga_core.data.iid.builtin import BUILTIN_IID
from beluga_core.data.iid.classification_data import IIDExample
from beluga_core.data.iid.squad import SquadExample, load_squad_iid
from beluga_core.data.splits import halves
from beluga_core.data.suite.suite_schema import Case
from beluga_core.tasks.paraphrase import ParaphraseTask
from beluga_core.tasks.reading.task import AFFECTED_CASES, DROPPED_CASES, DROPPED_INPUTS, ReadingTask

# A few rows as GLUE distributes QQP (QQP/dev.tsv): tab-separated, no quoting, label column is_duplicate.
GLUE_QQP_HEADER = "id\tqid1\tqid2\tquestion1\tquestion2\tis_duplicate"
GLUE_QQP_ROWS = [
    '201359\t303345\t303346\tWhy are African-Americans so beautiful?\tWhy are hispanics so beautiful?\t0',
    '263843\t69383\t380476\tI want to pursue PhD in Computer Science about social network,what is the open '
    'question in social networks?\tI handle social media for a non-profit. Should I start going to social media '
    'networking events? Are there any good ones in the bay area?\t0',
    '172974\t266948\t175089\tIs there a reason why we should travel alone?\tWhat are some reasons to travel '
    'alone?\t1',
    '15329\t29298\t29299\tWhat is the "best" way to learn to code?\tHow can I learn programming?\t1',
]


def write_glue_qqp(directory: Path) -> Path:
    directory.mkdir(parents=True, exist_ok=True)
    text = "\n".join([GLUE_QQP_HEADER, *GLUE_QQP_ROWS]) + "\n"
    for name in ("train.tsv", "dev.tsv"):
        (directory / name).write_text(text, encoding="utf-8")
    (directory / "test.tsv").write_text("id\tquestion1\tquestion2\n0\ta\tb\n", encoding="utf-8")  # ignored
    return directory


def test_glue_qqp_tsv_directory_loads_with_is_duplicate_labels(tmp_path: Path) -> None:
    data = ParaphraseTask().load_iid(str(write_glue_qqp(tmp_path / "QQP")), eval_seed=7)
    assert [ex.label for ex in data.train] == [0, 0, 1, 1]
    assert data.train[3].inputs == ('What is the "best" way to learn to code?', "How can I learn programming?")
    val_idx, test_idx = halves(4, 7)
    assert [ex.inputs for ex in data.val] == [data.train[i].inputs for i in val_idx]
    assert [ex.inputs for ex in data.test] == [data.train[i].inputs for i in test_idx]


def test_qqp_csv_with_label_column_and_bad_columns(tmp_path: Path) -> None:
    d = tmp_path / "csv"
    d.mkdir()
    for name in ("train.csv", "validation.csv"):
        (d / name).write_text('question1,question2,label\n"Is it, really?",Is it?,1\nA?,B?,0\n', encoding="utf-8")
    data = ParaphraseTask().load_iid(str(d), eval_seed=1)
    assert data.train == [IIDExample(("Is it, really?", "Is it?"), 1), IIDExample(("A?", "B?"), 0)]
    (d / "train.csv").write_text("q1,q2,label\na,b,1\n", encoding="utf-8")
    with pytest.raises(BelugaError, match=r"missing column.*'question1', 'question2'"):
        ParaphraseTask().load_iid(str(d), eval_seed=1)


def fake_hf_qqp() -> object:
    import datasets

    features = datasets.Features({"question1": datasets.Value("string"), "question2": datasets.Value("string"),
                                  "label": datasets.ClassLabel(names=["not_duplicate", "duplicate"]),
                                  "idx": datasets.Value("int32")})
    cols = {"question1": ["a?", "b?", "c?"], "question2": ["a!", "x?", "c"], "label": [1, 0, 1], "idx": [0, 1, 2]}
    return datasets.DatasetDict({s: datasets.Dataset.from_dict(cols, features=features)
                                 for s in ("train", "validation")})


def test_hf_glue_qqp(monkeypatch: pytest.MonkeyPatch) -> None:
    import datasets


    calls = []
    monkeypatch.setattr(iid_hub, "hub_reachable", lambda endpoint, timeout=0: True)
    monkeypatch.setattr(datasets, "load_dataset", lambda *a: calls.append(a) or fake_hf_qqp())
    data = ParaphraseTask().load_iid("glue/qqp", eval_seed=42)
    assert calls == [("glue", "qqp")]
    assert data.label_names == ["not_duplicate", "duplicate"]
    assert data.train[1] == IIDExample(("b?", "x?"), 0)


def test_qqp_fixture_is_labelled_and_balanced() -> None:
    data = ParaphraseTask().load_iid("builtin:qqp-fixture", eval_seed=42)
    assert (len(data.train), len(data.val), len(data.test)) == (4282, 500, 500)
    assert data.label_names == ["not_duplicate", "duplicate"]
    assert 0.35 < np.mean([ex.label == 0 for ex in data.train]) < 0.45
    provenance = (BUILTIN_IID["qqp-fixture"].path / "PROVENANCE.md").read_text()
    assert "not QQP" in provenance and "4,282" in provenance


def test_paraphrase_metrics_and_iid_metric_setting() -> None:
    task = ParaphraseTask()
    m = task.iid_metrics(np.array([1, 1, 0, 0]), np.array([1, 0, 0, 1]))
    assert m == {"accuracy": 0.5, "f1": 0.5}
    assert task.metric == "accuracy"
    task.configure(TaskSettings(iid_metric="f1"))
    assert task.metric == "f1" and ParaphraseTask().metric == "accuracy"
    with pytest.raises(BelugaError, match=r"no i.i.d. metric 'exact_match'.*accuracy, f1"):
        task.configure(TaskSettings(iid_metric="exact_match"))
    with pytest.raises(BelugaError, match="takes no options"):
        task.configure(TaskSettings(options={"max_length": 9}))


def test_implication_triplets_train_on_their_gold_labels() -> None:
    case = Case(id="t", groups={"class": "Logic", "functionality": "Testing implications"}, test_type="DIR",
                loss="mft", inputs=[("x", "a"), ("x", "b"), ("a", "b")], label=[1, 0, 0],
                expectation={"kind": "implication_triplet", "agg": "all_except_first", "level": "testcase",
                             "variant": "intended"})
    items = ParaphraseTask().mft_items(case)
    assert [x for x, _ in items] == case.inputs
    assert [(t.tolist(), is_set) for _, (t, is_set) in items] == [([0, 1], False), ([1, 0], False), ([1, 0], False)]


# --- SQuAD -----------------------------------------------------------------------------------------------

SQUAD_DOC = {"version": "1.1", "data": [{"title": "Super_Bowl_50", "paragraphs": [
    {"context": "Super Bowl 50 was an American football game. The Denver Broncos defeated the Carolina Panthers.",
     "qas": [{"id": "q1", "question": "Who won Super Bowl 50?",
              "answers": [{"text": "Denver Broncos", "answer_start": 49}, {"text": "the Denver Broncos",
                                                                          "answer_start": 45}]},
             {"id": "q2", "question": "Who lost?", "answers": [{"text": "Carolina Panthers", "answer_start": 77}]}]},
    {"context": "Paris is the capital of France.",
     "qas": [{"id": "q3", "question": "What is the capital of France?",
              "answers": [{"text": "Paris", "answer_start": 0}]}]}]}]}


def write_squad(directory: Path, doc: object = SQUAD_DOC, train: str = "train-v1.1.json",
                dev: str = "dev-v1.1.json") -> Path:
    directory.mkdir(parents=True, exist_ok=True)
    (directory / train).write_text(json.dumps(doc), encoding="utf-8")
    (directory / dev).write_text(json.dumps(doc), encoding="utf-8")
    return directory


def test_squad_json_directory(tmp_path: Path) -> None:
    data = load_squad_iid(str(write_squad(tmp_path / "squad")), eval_seed=5)
    assert len(data.train) == 3 and len(data.val) + len(data.test) == 3
    ex = data.train[0]
    assert ex.inputs == (SQUAD_DOC["data"][0]["paragraphs"][0]["context"], "Who won Super Bowl 50?")  # type: ignore[index]
    assert ex.answers == ("Denver Broncos", "the Denver Broncos") and ex.qid == "q1"
    assert ex.inputs[0][slice(*ex.span())] == "Denver Broncos"
    # compressed files, other spellings
    d = tmp_path / "gz"
    d.mkdir()
    (d / "train.json.xz").write_bytes(lzma.compress(json.dumps(SQUAD_DOC).encode()))
    (d / "validation.json").write_text(json.dumps(SQUAD_DOC), encoding="utf-8")
    assert len(load_squad_iid(str(d)).train) == 3


@pytest.mark.parametrize(("mutate", "message"), [
    (lambda d: d["data"][0]["paragraphs"][1]["qas"][0].update(answers=[]), "non-empty 'answers'"),
    (lambda d: d["data"][0]["paragraphs"][1]["qas"][0].update(is_impossible=True, answers=[]), "SQuAD 2.0"),
    (lambda d: d["data"][0]["paragraphs"][1]["qas"][0]["answers"][0].update(answer_start=40), "outside"),
    (lambda d: d["data"][0]["paragraphs"][0].pop("context"), "data\\[0\\].paragraphs\\[0\\]"),
    (lambda d: d.pop("data"), '"data" list'),
])
def test_squad_json_errors_name_the_place(tmp_path: Path, mutate, message: str) -> None:  # type: ignore[no-untyped-def]
    doc = json.loads(json.dumps(SQUAD_DOC))
    mutate(doc)
    with pytest.raises(BelugaError, match=message) as info:
        load_squad_iid(str(write_squad(tmp_path / "bad", doc)))
    assert "train-v1.1.json" in str(info.value)


def test_squad_source_errors(tmp_path: Path) -> None:
    with pytest.raises(BelugaError, match="no dev file"):
        load_squad_iid(str(write_squad(tmp_path / "nodev", dev="other.json")))
    single = tmp_path / "file.json"
    single.write_text("{}", encoding="utf-8")
    with pytest.raises(BelugaError, match="single file"):
        load_squad_iid(str(single))
    with pytest.raises(BelugaError, match="no built-in reading dataset 'squad'"):
        load_squad_iid("builtin:squad")


def test_hf_squad(monkeypatch: pytest.MonkeyPatch) -> None:
    import datasets

    rows = {"id": ["a", "b"], "title": ["t", "t"], "context": ["Alice met Bob.", "Bob left."],
            "question": ["Who met Bob?", "Who left?"],
            "answers": [{"text": ["Alice"], "answer_start": [0]}, {"text": ["Bob", "Bob"], "answer_start": [0, 0]}]}
    calls = []
    monkeypatch.setattr(iid_hub, "hub_reachable", lambda endpoint, timeout=0: True)
    monkeypatch.setattr(datasets, "load_dataset", lambda *a: calls.append(a) or datasets.DatasetDict(
        {s: datasets.Dataset.from_dict(rows) for s in ("train", "validation")}))
    data = load_squad_iid("squad")
    assert calls == [("squad",)]
    assert data.train[1] == SquadExample(("Bob left.", "Who left?"), ("Bob", "Bob"), (0, 0), "b")
    monkeypatch.setattr(iid_hub, "hub_reachable", lambda endpoint, timeout=0: False)
    monkeypatch.setattr(datasets.config, "HF_HUB_OFFLINE", False, raising=False)
    with pytest.raises(BelugaError, match=r"unreachable.*builtin:squad-fixture"):
        load_squad_iid("squad")


def test_squad_fixture_is_labelled_and_spans_windows() -> None:
    data = load_squad_iid("builtin:squad-fixture")
    assert (len(data.train), len(data.val) + len(data.test)) == (2394, 589)
    for ex in data.train + data.val + data.test:
        assert ex.inputs[0][slice(*ex.span())] == ex.answers[0]
    assert sum(len(ex.inputs[0]) > 400 for ex in data.train) > 100  # the distractor paragraphs
    provenance = (BUILTIN_IID["squad-fixture"].path / "PROVENANCE.md").read_text()
    assert "not SQuAD" in provenance and "2,394" in provenance


# --- reading task settings and training items ----------------------------------------------------------


def test_reading_options_are_checked() -> None:
    task = ReadingTask()
    task.configure(TaskSettings(options={"max_length": 256, "doc_stride": 64}))
    assert task.options.max_length == 256 and task.options.n_best == 20
    for options, message, field in [
            ({"max_len": 3}, "unknown option; did you mean 'max_length'", "options.max_len"),
            ({"n_best": 0}, "greater than or equal to 1", "options.n_best"),
            ({"n_best": 2.0}, "valid integer", "options.n_best"),
            ({"max_length": 96, "doc_stride": 64}, "doc_stride", "options.doc_stride")]:
        with pytest.raises(BelugaError, match=message) as err:
            ReadingTask().configure(TaskSettings(options=options))
        assert err.value.field == field
    with pytest.raises(BelugaError, match="exact_match, f1"):
        ReadingTask().configure(TaskSettings(iid_metric="accuracy"))


def test_mft_gold_span_is_first_occurrence_and_missing_answers_are_counted() -> None:
    eq = {"kind": "eq", "level": "single", "target": "label"}
    groups = {"class": "C", "functionality": "F"}
    ctx = "Anna met Bob. Then Bob met Anna."
    cases = [
        Case(id="ok", groups=groups, test_type="MFT", loss="mft", inputs=[(ctx, "Who met Bob?"), (ctx, "Who?")],
             label=["Anna", "Bob"], expectation=eq),
        Case(id="half", groups=groups, test_type="MFT", loss="mft", inputs=[(ctx, "Q1"), (ctx, "Q2")],
             label=["Carl", "Anna"], expectation=eq),
        Case(id="none", groups=groups, test_type="MFT", loss="mft", inputs=[(ctx, "Q3")], label="Dora",
             expectation=eq),
        Case(id="inv", groups=groups, test_type="INV", loss="span-inv", inputs=[(ctx, "Who?"), (ctx, "Whoo?")],
             expectation={"kind": "inv", "agg": "all_except_first", "level": "pairwise", "tolerance": 0.1}),
    ]
    iid = [SquadExample((ctx, "Who?"), ("Bob",), (19,))]
    ts = ReadingTask().build_trainset(cases, iid, "functionality", lambda c, level: c.groups[level])
    assert ts.notes == {DROPPED_INPUTS: 2, AFFECTED_CASES: 2, DROPPED_CASES: 1}  # 'none' had one input
    targets = [u.choices[0][1].tolist() for u in ts.streams["mft"]]
    assert targets == [[0, 4], [9, 12], [0, 4]]  # Anna, Bob (first occurrences), then Anna of case 'half'
    assert ts.streams["iid"][0].choices[0][1].tolist() == [19, 22]
    assert len(ts.streams["span-inv"]) == 1 and ts.losses["span-inv"] == "span-inv"


def test_fixtures_are_rebuilt_byte_for_byte(tmp_path: Path) -> None:
    """The shipped fixtures are exactly what tools/data/build_iid_fixtures.py makes from the shipped suites."""
    from tools.data import build_iid_fixtures as builder

    for name, build in (("qqp_fixture", builder.build_qqp), ("squad_fixture", builder.build_squad)):
        build(tmp_path / name)
        shipped = builder.DATA / name
        for built in sorted((tmp_path / name).iterdir()):
            assert built.read_bytes() == (shipped / built.name).read_bytes(), f"{name}/{built.name} differs"
