"""The CheckList importer, against the real release suites and the checked reference flattening."""

from __future__ import annotations

import gzip
import io
import json
import pickle
import sys
import tarfile
import types
from collections import Counter
from pathlib import Path
from typing import Any

import pytest
from helpers import require_shared

import beluga_core.cli.app as cli_app
from beluga_core.core.errors import BelugaError
from beluga_core.data.checklist.importer import convert_suite, import_checklist
from beluga_core.data.checklist.reading import read_checklist_file
from beluga_core.data.checklist.specs import DOC_KEYS, TestSpec, known_tests, strip_doc_keys
from beluga_core.data.suite.suite_files import BUILTIN_DIR, load_suite, write_suite
from beluga_core.evaluation.suites import load_checked_suite

COUNTS = {  # cases, inputs, cases per test type (SUITES_SUMMARY.md / PROVENANCE.md)
    "sentiment": (86_420, 178_578, {"MFT": 68_912, "DIR": 9_368, "INV": 8_140}),
    "qqp": (63_216, 207_301, {"MFT": 46_443, "DIR": 13_096, "INV": 3_677}),
    "squad": (13_311, 71_293, {"MFT": 10_811, "INV": 2_500}),
}
HEADERS = {
    "sentiment": ("sentiment", "text", ["negative", "neutral", "positive"]),
    "qqp": ("paraphrase", "text_pair", ["not_duplicate", "duplicate"]),
    "squad": ("reading", "context_question", None),
}
IMPLICATION_RELEASED = {"kind": "implication_triplet", "level": "testcase", "agg": "all_except_first",
                        "variant": "released"}
EQ_LABEL = {"kind": "eq", "level": "single", "target": "label", "agg": "all"}


def _tarball(name: str) -> Path:
    return require_shared("data", "checklist", f"{name}_suite.tar.gz")


_IMPORTED: dict[str, Any] = {}


def _shipped(name: str):
    """The shipped suite with its expectations validated (loaded once per process)."""
    return load_checked_suite(f"builtin:{name}")


def _imported(name: str):
    if name not in _IMPORTED:
        _IMPORTED[name] = import_checklist(_tarball(name))
    return _IMPORTED[name]


def _reference(name: str) -> list[dict[str, Any]]:
    path = require_shared("data", "checklist", "reference", f"{name}.jsonl.gz")
    with gzip.open(path, "rt", encoding="utf-8") as fh:
        return [json.loads(line) for line in fh]


def _expected_expectation(ref: dict[str, Any]) -> dict[str, Any]:
    """The documented transformation: doc keys removed; the custom QQP rule as implication_triplet."""
    expectation = strip_doc_keys(ref)
    return dict(IMPLICATION_RELEASED) if expectation["kind"] == "custom" else expectation


# --------------------------------------------------------------------------------------------------------
# The shipped suites (no shared data needed).
# --------------------------------------------------------------------------------------------------------


@pytest.mark.parametrize("name", sorted(COUNTS))
def test_shipped_suite_loads_with_expected_counts(name: str) -> None:
    suite = _shipped(name)
    n_cases, n_inputs, per_type = COUNTS[name]
    assert len(suite.cases) == n_cases
    assert sum(len(c.inputs) for c in suite.cases) == n_inputs
    assert dict(Counter(c.test_type for c in suite.cases)) == per_type
    task, input_kind, label_space = HEADERS[name]
    header = suite.header
    assert (header.name, header.task, header.input_kind, header.label_space) == (name, task, input_kind,
                                                                                 label_space)
    assert header.levels == ["class", "functionality"] and header.scoring_level == "functionality"
    assert set(header.test_types) == set(per_type)
    assert header.source["origin"] == "checklist release"
    assert header.source["file"] == f"{name}_suite.tar.gz"
    assert header.source["sha256"] == known_tests()["suites"][name]["release"]["sha256"]


@pytest.mark.parametrize("name", sorted(COUNTS))
def test_shipped_suite_is_small(name: str) -> None:
    assert (BUILTIN_DIR / f"{name}.jsonl.gz").stat().st_size < 5_000_000


def test_losses_and_dir_comparisons() -> None:
    losses = {}
    for name in COUNTS:
        for case in _shipped(name).cases:
            losses.setdefault((name, case.test_type), set()).add(case.loss)
            if name == "sentiment" and case.test_type == "DIR":
                losses.setdefault(("comparison", case.groups["functionality"]), set()).add(
                    case.loss_params["comparison"])
            else:
                assert case.loss_params == {}
    assert losses == {
        ("sentiment", "MFT"): {"mft"}, ("sentiment", "INV"): {"inv"}, ("sentiment", "DIR"): {"dir"},
        ("qqp", "MFT"): {"mft"}, ("qqp", "INV"): {"inv"}, ("qqp", "DIR"): {"mft"},
        ("squad", "MFT"): {"mft"}, ("squad", "INV"): {"span-inv"},
        ("comparison", "intensifiers"): {"not_less_confident"},
        ("comparison", "reducers"): {"not_more_confident"},
        ("comparison", '"used to" should reduce'): {"not_more_confident"},
        ("comparison", "add positive phrases"): {"not_more_negative"},
        ("comparison", "add negative phrases"): {"not_more_positive"},
    }


def test_ids_are_unique_and_readable() -> None:
    suite = _shipped("squad")
    first = suite.cases[0]
    assert first.id == "squad/A is COMP than B. Who is more / less COMP?/0"
    assert first.groups == {"class": "Vocabulary", "functionality": "A is COMP than B. Who is more / less COMP?"}
    for case in suite.cases:
        functionality, index = case.id.removeprefix("squad/").rsplit("/", 1)
        assert functionality == case.groups["functionality"] and int(index) == case.meta["source_index"]


def test_qqp_corrections() -> None:
    suite = _shipped("qqp")
    by_test: dict[str, list] = {}
    for case in suite.cases:
        by_test.setdefault(case.groups["functionality"], []).append(case)
    corrected = {name for name, cases in by_test.items() if any(c.correction for c in cases)}
    assert corrected == {"Order does matter for asymmetric relations",
                         "(question, f(question)) where f(question) replaces synonyms?", "Testing implications"}

    asym = by_test["Order does matter for asymmetric relations"]
    assert all(c.label == 1 and c.correction.label == 0 for c in asym)  # released form kept in the case
    assert "footnote 7" in asym[0].correction.reason and "Known issues" in asym[0].correction.reason
    assert asym[0].with_corrections().label == 0

    synonyms = by_test["(question, f(question)) where f(question) replaces synonyms?"]
    fixed = synonyms[0].with_corrections()
    assert synonyms[0].test_type == "INV" and synonyms[0].loss == "inv"
    assert (fixed.test_type, fixed.loss, fixed.label) == ("MFT", "mft", 1)
    assert fixed.expectation.model_dump() == EQ_LABEL
    assert all(len(c.inputs) == 1 for c in synonyms)

    implications = by_test["Testing implications"]
    assert implications[0].expectation.model_dump() == IMPLICATION_RELEASED
    assert (implications[0].with_corrections().expectation.model_dump()
            == {**IMPLICATION_RELEASED, "variant": "intended"})
    assert implications[0].label == [0, 1, 0]


def test_squad_labels_and_meta_conventions() -> None:
    suite = _shipped("squad")
    by_test: dict[str, list] = {}
    for case in suite.cases:
        by_test.setdefault(case.groups["functionality"], []).append(case)
    mft = by_test["A is COMP than B. Who is more / less COMP?"][0]
    assert isinstance(mft.label, list) and len(mft.label) == len(mft.inputs)
    fairness = by_test["M/F failure rates should be similar for different professions"][0]
    assert len(fairness.inputs) == 1 and fairness.label == ["Courtney"]
    assert fairness.meta["per_input"] == [["woman", "secretary"]]
    names = by_test["Change name everywhere"][0]
    assert names.label is None
    assert len(names.meta["per_input"]) == len(names.inputs) and names.meta["per_input"][0] == {}
    assert names.meta["per_input"][1] == ["Luther", "James"]
    assert names.expectation.model_dump()["substitute_from_meta"] is True


# --------------------------------------------------------------------------------------------------------
# Against the release tarballs and the reference (shared data).
# --------------------------------------------------------------------------------------------------------


@pytest.mark.parametrize("name", sorted(COUNTS))
def test_import_counts(name: str) -> None:
    result = _imported(name)
    n_cases, n_inputs, per_type = COUNTS[name]
    assert len(result.cases) == n_cases
    assert sum(len(c.inputs) for c in result.cases) == n_inputs
    assert dict(Counter(c.test_type for c in result.cases)) == per_type


@pytest.mark.parametrize("name", sorted(COUNTS))
def test_cases_equal_reference_in_order(name: str) -> None:
    cases = _imported(name).cases
    refs = _reference(name)
    assert len(cases) == len(refs)
    for case, ref in zip(cases, refs, strict=True):
        got = case.model_dump(mode="json")
        assert got["groups"] == {"class": ref["capability"], "functionality": ref["functionality"]}
        assert got["test_type"] == ref["test_type"]
        assert got["inputs"] == ref["inputs"], case.id
        label = ref["label"]
        if name == "squad" and isinstance(label, str):
            label = [label]  # one (context, question) pair: one answer per input
        assert got["label"] == label, case.id
        assert got["expectation"] == _expected_expectation(ref["expectation"]), case.id
        assert got["meta"]["source_index"] == ref["case_id"]
        assert got["meta"].get("n500_rank") == ref.get("n500_sample_rank")
        if "meta" in ref:
            per_input = ref["meta"] if len(ref["inputs"]) > 1 else [ref["meta"]]
            assert got["meta"]["per_input"] == per_input, case.id
        else:
            assert "per_input" not in got["meta"] and "checklist" not in got["meta"]


@pytest.mark.parametrize("name", sorted(COUNTS))
def test_vendored_table_matches_reference_and_pickles(name: str) -> None:
    """known_tests.json is the reference *_tests.json minus doc keys, with fingerprints of the real pickles."""
    table = known_tests()["suites"][name]
    ref_tests = json.loads(require_shared("data", "checklist", "reference", f"{name}_tests.json").read_text())
    assert list(table["tests"]) == [t["functionality"] for t in ref_tests]
    by_name = {t.name: t for t in _imported(name).tests}
    for ref in ref_tests:
        entry = table["tests"][ref["functionality"]]
        assert entry["expectation"] == _expected_expectation(ref["expectation"])
        assert not DOC_KEYS & entry["expectation"].keys()
        assert entry["test_type"] == ref["test_type"] and entry["capability"] == ref["capability"]
        assert entry["fingerprint"] == by_name[ref["functionality"]].fingerprint


@pytest.mark.parametrize("name", sorted(COUNTS))
def test_shipped_file_is_byte_identical_to_a_fresh_import(name: str, tmp_path: Path) -> None:
    result = _imported(name)
    fresh = write_suite(tmp_path / f"{name}.jsonl.gz", result.header, result.cases)
    assert fresh.read_bytes() == (BUILTIN_DIR / f"{name}.jsonl.gz").read_bytes()


def test_pickle_given_directly_imports_like_the_tarball(tmp_path: Path) -> None:
    with tarfile.open(_tarball("squad")) as tar:
        member = tar.getmember("squad_suite.pkl")
        fh = tar.extractfile(member)
        assert fh is not None
        (tmp_path / "squad_suite.pkl").write_bytes(fh.read())
    direct = import_checklist(tmp_path / "squad_suite.pkl")
    assert direct.header.name == "squad"
    assert direct.header.source["origin"] == "checklist"  # not the release tarball's bytes
    assert [c.model_dump() for c in direct.cases[:50]] == [c.model_dump() for c in _imported("squad").cases[:50]]


# --------------------------------------------------------------------------------------------------------
# Suites that are not in the table (synthetic pickles; no shared data needed).
# --------------------------------------------------------------------------------------------------------


def _fake_checklist_modules(monkeypatch: pytest.MonkeyPatch) -> dict[str, type]:
    """Plain classes that pickle under checklist's names, so tests can write suite pickles."""
    classes = {}
    for module, names in (("checklist.test_suite", ["TestSuite"]), ("checklist.test_types", ["MFT", "INV", "DIR"])):
        mod = types.ModuleType(module)
        for cls_name in names:
            cls = type(cls_name, (), {"__module__": module, "__qualname__": cls_name})
            setattr(mod, cls_name, cls)
            classes[cls_name] = cls
        monkeypatch.setitem(sys.modules, module, mod)
    monkeypatch.setitem(sys.modules, "checklist", types.ModuleType("checklist"))
    return classes


def _suite_pickle(monkeypatch: pytest.MonkeyPatch, tests: dict[str, tuple[str, list, Any]]) -> bytes:
    classes = _fake_checklist_modules(monkeypatch)
    suite = classes["TestSuite"]()
    suite.tests = {}
    for name, (test_type, data, labels) in tests.items():
        test = classes[test_type]()
        test.__dict__.update(name=name, capability="Custom", description="", data=data, labels=labels,
                             meta=None, run_idxs=None, expect=None, agg_fn="all")
        suite.tests[name] = test
    return pickle.dumps(suite, protocol=3)


def _write(path: Path, payload: bytes) -> Path:
    path.write_bytes(payload)
    return path


def test_unknown_tests_fail_with_their_names(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    payload = _suite_pickle(monkeypatch, {"my test": ("MFT", ["good", "bad"], [2, 0]),
                                          "typos": ("INV", [["a b", "b a"]], None)})
    with pytest.raises(BelugaError) as info:
        import_checklist(_write(tmp_path / "mine.pkl", payload))
    message = str(info.value)
    assert "'my test' (MFT)" in message and "--expectations" in message
    # Same name as a release test, different expectation function: not silently mapped.
    assert "'typos' (INV)" in message and "fingerprint" in message


def test_expectations_file_supplies_unknown_tests(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    payload = _suite_pickle(monkeypatch, {"my test": ("MFT", [("q1", "q2"), ("q3", "q4")], [1, 0]),
                                          "swap": ("INV", [[("a", "b"), ("b", "a")]], None)})
    expectations = tmp_path / "exp.json"
    expectations.write_text(json.dumps({
        "my test": EQ_LABEL,
        "swap": {"expectation": {"kind": "inv", "level": "pairwise", "tolerance": 0.1, "agg": "all_except_first"},
                 "loss": "inv"}}))
    result = import_checklist(_write(tmp_path / "mine_suite.pkl", payload), expectations=expectations)
    assert result.header.name == "mine"
    assert (result.header.input_kind, result.header.task, result.header.label_space) == ("text_pair", None, None)
    assert result.header.source["origin"] == "checklist" and result.header.losses == ["mft", "inv"]
    assert [c.id for c in result.cases] == ["mine/my test/0", "mine/my test/1", "mine/swap/0"]
    assert result.cases[0].inputs == [("q1", "q2")] and result.cases[0].label == 1
    assert result.cases[2].inputs == [("a", "b"), ("b", "a")] and result.cases[2].label is None


def test_expectations_file_naming_a_missing_test_fails(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    payload = _suite_pickle(monkeypatch, {"my test": ("MFT", ["good"], 2)})
    expectations = tmp_path / "exp.json"
    expectations.write_text(json.dumps({"my test": EQ_LABEL, "my tset": EQ_LABEL}))
    with pytest.raises(BelugaError, match="my tset"):
        import_checklist(_write(tmp_path / "mine.pkl", payload), expectations=expectations)


def test_non_testsuite_pickle_is_rejected(tmp_path: Path) -> None:
    with pytest.raises(BelugaError, match="not a CheckList TestSuite"):
        read_checklist_file(_write(tmp_path / "dict.pkl", pickle.dumps({"tests": {}})))


def test_convert_rejects_malformed_inputs(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    payload = _suite_pickle(monkeypatch, {"my test": ("MFT", ["fine", 3], 2)})
    loaded = read_checklist_file(_write(tmp_path / "bad.pkl", payload))
    spec = TestSpec(name="my test", expectation=EQ_LABEL, origin="user")
    with pytest.raises(BelugaError, match=r"test 'my test', case 1: .*got 3"):
        convert_suite(loaded, expectations={"my test": spec})


# --------------------------------------------------------------------------------------------------------
# The CLI.
# --------------------------------------------------------------------------------------------------------


def _run_cli(monkeypatch: pytest.MonkeyPatch, *args: str) -> int:
    try:
        cli_app.main(["suite", "import-checklist", *args])
    except SystemExit as exc:
        return int(exc.code or 0)
    return 0


def _tar_with(path: Path, members: dict[str, bytes]) -> Path:
    with tarfile.open(path, "w:gz") as tar:
        for name, data in members.items():
            info = tarfile.TarInfo(name)
            info.size = len(data)
            tar.addfile(info, io.BytesIO(data))
    return path


@pytest.mark.parametrize(("make", "message"), [
    (lambda tmp: tmp / "missing.tar.gz", "file not found"),
    (lambda tmp: _tar_with(tmp / "empty.tar.gz", {"README.txt": b"hello"}), "no CheckList suite pickle"),
    (lambda tmp: _write(tmp / "list.pkl", pickle.dumps([1, 2, 3])), "not a CheckList TestSuite"),
    (lambda tmp: _write(tmp / "evil.pkl", b"cos\nsystem\n(S'echo pwned'\ntR."), "'os.system'"),
    (lambda tmp: _tar_with(tmp / "evil.tar.gz", {"evil_suite.pkl": b"cbuiltins\neval\n(S'1'\ntR."}),
     "'builtins.eval'"),
    (lambda tmp: _write(tmp / "notes.txt", b"just text"), "neither a tarball nor a readable pickle"),
])
def test_cli_exits_2_with_a_clear_message(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                          capsys: pytest.CaptureFixture[str], make, message: str) -> None:
    source = make(tmp_path)
    out = tmp_path / "out.jsonl.gz"
    assert _run_cli(monkeypatch, str(source), "--out", str(out)) == 2
    err = capsys.readouterr().err
    assert "error:" in err and message in err and str(source.name) in err
    assert not out.exists()


def test_cli_imports_a_suite(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                             capsys: pytest.CaptureFixture[str]) -> None:
    payload = _suite_pickle(monkeypatch, {"my test": ("MFT", ["good", "bad"], [2, 0])})
    expectations = tmp_path / "exp.json"
    expectations.write_text(json.dumps({"my test": EQ_LABEL}))
    out = tmp_path / "mine.jsonl.gz"
    code = _run_cli(monkeypatch, str(_write(tmp_path / "mine.pkl", payload)), "--out", str(out),
                    "--name", "custom", "--expectations", str(expectations))
    assert code == 0
    printed = capsys.readouterr().out
    assert "MFT" in printed and "2 cases" in printed
    suite = load_suite(out)
    assert suite.header.name == "custom" and [c.id for c in suite.cases] == ["custom/my test/0", "custom/my test/1"]


def test_cli_release_suite_matches_shipped(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                           capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "squad.jsonl.gz"
    assert _run_cli(monkeypatch, str(_tarball("squad")), "--out", str(out)) == 0
    printed = capsys.readouterr().out
    assert "13,311" in printed and "71,293" in printed and "span-inv" in printed
    assert out.read_bytes() == (BUILTIN_DIR / "squad.jsonl.gz").read_bytes()
