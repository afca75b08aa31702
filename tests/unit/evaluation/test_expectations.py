"""Expectation kinds against CheckList's own results, and hand-worked unit cases.

The reference outcomes (``tests/data/outcomes-sample``) were produced by running CheckList's original,
pickled expectation functions on synthetic predictions for every 20th case of the three release suites;
the sampled cases themselves are vendored beside them, so the agreement tests run without the shared data.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from checklist_samples import (
    LABEL_SPACES,
    QQP_CORRECTIONS,
    SUITES,
    header,
    released,
    sample,
)

from beluga_core.contracts.expectations import FAIL, PASS, SKIP, FlatPredictions, aggregate
from beluga_core.core.errors import BelugaError
from beluga_core.data.suite.suite_files import Suite
from beluga_core.data.suite.suite_schema import Case, Expectation
from beluga_core.evaluation.evaluate import evaluate_cases, parse_expectation, validate_suite_expectations
from beluga_core.evaluation.sentiment_mapping import binary_target, binary_targets, binary_to_three
from beluga_core.evaluation.suites import load_checked_suite

# --------------------------------------------------------------------------------------------- helpers


def one(kind: dict[str, Any], preds: list[Any], label: Any = None, meta: dict | None = None,
        label_space: list[str] | None = None) -> int:
    """Outcome of a single hand-made case."""
    case = Case(id="t/x/0", groups={"functionality": "x"}, test_type="MFT", loss="mft",
                inputs=[f"input {i}" for i in range(len(preds))], label=label, expectation=kind, meta=meta or {})
    return int(evaluate_cases([case], [preds], label_space=label_space)[0])


# --------------------------------------------------------------------------------------------- CheckList


SAMPLE_SIZES = {"sentiment": 4324, "qqp": 3167, "squad": 667}


@pytest.mark.parametrize("suite", SUITES)
def test_agrees_with_checklist_on_every_sampled_case(suite: str) -> None:
    cases, preds, expected, tests = sample(suite)
    got = evaluate_cases(released(cases), preds, label_space=LABEL_SPACES[suite])
    disagree = [(t, c.id, int(g), int(e)) for t, c, g, e in zip(tests, cases, got, expected, strict=True) if g != e]
    assert not disagree, f"{len(disagree)} of {len(cases)} disagree, e.g. {disagree[:5]}"
    assert len(cases) == SAMPLE_SIZES[suite]
    assert (got == expected).sum() == SAMPLE_SIZES[suite]


def test_samples_exercise_pass_fail_and_skip() -> None:
    counts = {s: np.bincount(sample(s)[2] + 1, minlength=3).tolist() for s in SUITES}  # skip, fail, pass
    assert counts["sentiment"] == [159, 2411, 1754]
    assert counts["qqp"] == [315, 1516, 1336]
    assert counts["squad"][0] == 0 and min(counts["squad"][1:]) > 0


def test_flat_and_nested_predictions_agree() -> None:
    cases, preds, expected, _ = sample("qqp")
    flat = FlatPredictions.from_arrays(probs=np.array([v for p in preds for v in p]),
                                       lengths=[len(p) for p in preds])
    assert (evaluate_cases(released(cases), flat) == expected).all()
    as_arrays = [np.asarray(p) for p in preds]  # what a trainer slices out of one probability array
    assert (evaluate_cases(released(cases), as_arrays) == expected).all()


def test_label_space_names_and_subsets_evaluate_alike() -> None:
    cases, preds, expected, _ = sample("sentiment")
    named = [c.model_copy(update={"label": LABEL_SPACES["sentiment"][c.label]}) if isinstance(c.label, int) else c
             for c in cases]
    assert (evaluate_cases(named, preds, label_space=LABEL_SPACES["sentiment"]) == expected).all()
    idx = np.arange(len(cases))[::7]
    sub = evaluate_cases([cases[i] for i in idx], [preds[i] for i in idx])
    assert (sub == expected[idx]).all()


# --------------------------------------------------------------------------------------------- corrections


def test_corrections_change_exactly_the_qqp_cases_they_should() -> None:
    cases, preds, expected, tests = sample("qqp")
    corrected = evaluate_cases([c.with_corrections() for c in cases], preds)
    changed = {t for t, a, b in zip(tests, corrected, expected, strict=True) if a != b}
    assert changed <= set(QQP_CORRECTIONS)
    pred = [[int(np.argmax(v)) for v in p] for p in preds]
    for i, test in enumerate(tests):
        if test == "Order does matter for asymmetric relations":  # relabelled to 0: passes iff pred 0
            assert corrected[i] == (PASS if pred[i][0] == 0 else FAIL)
            assert expected[i] == (PASS if pred[i][0] == 1 else FAIL)
        elif test.startswith("(question, f(question))"):  # released INV of one pair: vacuous pass
            assert expected[i] == PASS
            assert corrected[i] == (PASS if pred[i][0] == 1 else FAIL)
        elif test == "Testing implications":
            p0, p1, p2 = pred[i]
            want = (PASS if p2 == 1 else FAIL) if p0 + p1 == 2 else (PASS if p2 == 0 else FAIL) if p0 + p1 == 1 \
                else SKIP
            assert corrected[i] == want
    # every corrected test really changes something on this sample
    assert changed == set(QQP_CORRECTIONS)


@pytest.mark.parametrize("suite", SUITES)
def test_shipped_suites_agree_with_checklist_when_present(suite: str) -> None:
    """The importer's shipped suites, as released, give CheckList's outcomes on the sampled cases."""
    shipped = load_checked_suite(f"builtin:{suite}")
    cases, preds, expected, _ = sample(suite)
    by_id = {c.id: c for c in shipped.cases}
    missing = [c.id for c in cases if c.id not in by_id]
    assert not missing, f"{len(missing)} sampled cases not in builtin:{suite}, e.g. {missing[:3]}"
    ship = [by_id[c.id] for c in cases]
    assert (evaluate_cases(ship, preds, label_space=shipped.header.label_space) == expected).sum() == len(cases)
    if suite == "qqp":  # its corrections change exactly the tests this file's QQP_CORRECTIONS change
        mine = evaluate_cases([c.with_corrections() for c in cases], preds)
        theirs = evaluate_cases([c.with_corrections() for c in ship], preds)
        assert (mine == theirs).all()


# --------------------------------------------------------------------------------------------- aggregation


def agg(results: list[list[int]], how: str) -> list[int]:
    offsets = np.cumsum([0] + [len(r) for r in results])
    return aggregate(np.array([x for r in results for x in r], dtype=np.int8), offsets, how).tolist()


def test_aggregation_reproduces_checklist_quirks() -> None:
    assert agg([[1, 1], [1, 0], [-1, -1], [0]], "all") == [PASS, FAIL, SKIP, FAIL]
    # all_except_first: the first result is ignored; an empty remainder passes (np.all([]) is True)
    assert agg([[0, 1], [1, 0], [0], [1]], "all_except_first") == [PASS, FAIL, PASS, PASS]
    # None results are dropped BEFORE the first is discarded: here the first non-None (a fail) goes
    assert agg([[-1, 0, 1], [-1, 1, 0], [-1, -1, -1], [-1, 0]], "all_except_first") == [PASS, FAIL, SKIP, PASS]


# --------------------------------------------------------------------------------------------- kinds


EQ = {"kind": "eq", "level": "single", "target": "label", "agg": "all"}
INV = {"kind": "inv", "level": "pairwise", "tolerance": 0.1, "agg": "all_except_first"}


def test_eq_label_value_and_if_label() -> None:
    assert one(EQ, [[0.2, 0.7, 0.1]], label=1) == PASS
    assert one(EQ, [[0.2, 0.7, 0.1], [0.6, 0.3, 0.1]], label=1) == FAIL
    assert one(EQ, [[0.2, 0.7, 0.1]], label="neutral", label_space=LABEL_SPACES["sentiment"]) == PASS
    assert one({"kind": "eq", "value": 0}, [[0.6, 0.4]]) == PASS
    qa_no = {**EQ, "if_label": {"1": {"kind": "not_eq", "value": 0}}}
    assert one(qa_no, [[0.1, 0.2, 0.7]], label=1) == PASS  # neutral label: positive is accepted
    assert one(qa_no, [[0.7, 0.2, 0.1]], label=1) == FAIL
    assert one(qa_no, [[0.1, 0.2, 0.7]], label=0) == FAIL  # other labels: plain eq
    assert one({"kind": "not_eq", "value": 0}, [[0.3, 0.3, 0.4]]) == PASS
    assert one({"kind": "not_eq", "value": 0}, [[0.5, 0.3, 0.2]]) == FAIL


def test_eq_normalize_strips_character_sets_like_checklist_clean() -> None:
    clean = {**EQ, "normalize": {"lstrip_chars": "[a,the,an,in,at] ", "rstrip_chars": "."}}
    assert one(clean, ["the athlete."], label=["lete"]) == PASS  # 'the athlete' -> 'lete'
    assert one(clean, ["Anna"], label=["Anna."]) == PASS
    assert one(clean, ["a nurse"], label=["urse"]) == PASS
    assert one(EQ, ["the athlete"], label=["athlete"]) == FAIL
    assert one(clean, ["Tom", "Anna"], label=["Tom", "Ann"]) == FAIL


def test_inv_tolerance_and_answer_strings() -> None:
    # predicted label changes, but the original class's confidence moves by 0.05 <= 0.1: pass
    assert one(INV, [[0.52, 0.48], [0.47, 0.53]]) == PASS
    assert one(INV, [[0.7, 0.3], [0.45, 0.55]]) == FAIL
    assert one(INV, [[0.9, 0.1], [0.6, 0.4]]) == PASS  # same label, whatever the confidence
    assert one(INV, [[0.9, 0.1]]) == PASS  # one input: nothing to compare, vacuous pass
    assert one(INV, ["Paris", "Paris"]) == PASS
    assert one(INV, ["Paris", "paris"]) == FAIL  # strings: conf 1 + 1 > tolerance, exact match only


def test_inv_exact_substitutes_names_from_meta() -> None:
    exp = {"kind": "inv_exact", "level": "pairwise", "substitute_from_meta": True, "agg": "all_except_first"}
    meta = {"per_input": [{}, ["Luther", "James"], ["Luther", "Ann"]]}
    assert one(exp, ["Martin Luther", "Martin James", "Martin Ann"], meta=meta) == PASS
    assert one(exp, ["Martin Luther", "Martin Luther", "Martin Ann"], meta=meta) == FAIL
    assert one(exp, ["Lutheran", "Lutheran", "Lutheran"], meta=meta) == PASS  # \b: no partial-word match
    assert one(exp, ["the 1521 diet", "the 1521 diet", "in 1521"], meta=meta) == FAIL


def test_monotonic_skips_and_tolerance() -> None:
    up = {"kind": "monotonic", "level": "pairwise", "increasing": True, "tolerance": 0.1,
          "agg": "all_except_first"}
    down = {**up, "increasing": False}
    assert one(up, [[0.3, 0.7], [0.35, 0.65]]) == PASS  # class 1 confidence drops 0.05 <= 0.1
    assert one(up, [[0.3, 0.7], [0.45, 0.55]]) == FAIL
    assert one(down, [[0.3, 0.7], [0.25, 0.75]]) == PASS  # goes up by 0.05: within tolerance
    assert one(down, [[0.3, 0.7], [0.2, 0.8]]) == FAIL  # 0.8 - 0.7 is 0.10000000000000009 in floats
    assert one(down, [[0.3, 0.7], [0.15, 0.85]]) == FAIL
    assert one(down, [[0.05, 0.95], [0.0, 1.0]]) == SKIP  # original >= 1 - tolerance: cannot fail
    assert one({**up, "label": 0}, [[0.05, 0.95], [0.0, 1.0]]) == SKIP  # label 0 conf <= tolerance
    keep = {**up, "keep_if": {"orig_pred_not_in": [1], "agg": "all_except_first"}}
    assert one(keep, [[0.2, 0.7, 0.1], [0.9, 0.05, 0.05]], label_space=None) == SKIP  # original neutral
    assert one(keep, [[0.2, 0.7, 0.1]]) == PASS  # one input: the slice keeps it (empty aggregate)


def test_keep_if_orig_pred_in() -> None:
    exp = {"kind": "eq", "level": "single", "value": 0, "agg": "all_except_first",
           "keep_if": {"orig_pred_in": [1], "agg": "all"}}
    assert one(exp, [[0.3, 0.7], [0.6, 0.4]]) == PASS
    assert one(exp, [[0.3, 0.7], [0.4, 0.6]]) == FAIL
    assert one(exp, [[0.7, 0.3], [0.4, 0.6]]) == SKIP  # original not predicted duplicate


def test_score_monotonic() -> None:
    up = {"kind": "score_monotonic", "level": "pairwise", "score": {"plus": [2], "minus": [0]},
          "increasing": True, "tolerance": 0.1, "agg": "all_except_first"}
    down = {**up, "increasing": False}
    # score = p[2] - p[0]: 0.4 - 0.3 = 0.1 → 0.35 - 0.4 = -0.05: down by 0.15 > 0.1
    assert one(up, [[0.3, 0.3, 0.4], [0.4, 0.25, 0.35]]) == FAIL
    assert one(up, [[0.3, 0.3, 0.4], [0.3, 0.35, 0.35]]) == PASS  # down by 0.05
    assert one(down, [[0.3, 0.3, 0.4], [0.2, 0.3, 0.5]]) == FAIL  # up by 0.2
    assert one(down, [[0.3, 0.3, 0.4], [0.35, 0.3, 0.35]]) == PASS


@pytest.mark.parametrize(("preds", "released_outcome", "intended_outcome"), [
    ((1, 1, 1), PASS, PASS), ((1, 1, 0), FAIL, FAIL),
    ((0, 1, 0), FAIL, PASS), ((0, 1, 1), FAIL, FAIL),  # released bug: (0, 1) always fails
    ((1, 0, 0), SKIP, PASS), ((1, 0, 1), SKIP, FAIL),  # released bug: (1, 0) is skipped
    ((0, 0, 0), SKIP, SKIP), ((0, 0, 1), SKIP, SKIP),
])
def test_implication_triplet_truth_table(preds: tuple[int, int, int], released_outcome: int,
                                         intended_outcome: int) -> None:
    vectors = [[0.2, 0.8] if p else [0.8, 0.2] for p in preds]
    base = {"kind": "implication_triplet", "level": "testcase", "agg": "all_except_first"}
    assert one({**base, "variant": "released"}, vectors) == released_outcome
    assert one({**base, "variant": "intended"}, vectors) == intended_outcome


# --------------------------------------------------------------------------------------------- validation


@pytest.mark.parametrize(("exp", "message"), [
    ({"kind": "eq", "level": "single", "target": "label", "tolerence": 0.1}, "unknown parameter(s) 'tolerence'"),
    ({"kind": "inv", "tolerance": "a lot"}, "tolerance"),
    ({"kind": "eq", "level": "pairwise", "target": "label"}, "level"),
    ({"kind": "eq"}, "exactly one of 'target: label' and a fixed 'value'"),
    ({"kind": "monotonic", "keep_if": {"orig_pred_in": [1], "orig_pred_not_in": [0]}}, "exactly one of"),
    ({"kind": "implication_triplet", "variant": "fixed"}, "variant"),
])
def test_bad_parameters_are_named(exp: dict[str, Any], message: str) -> None:
    with pytest.raises(ValueError, match=None) as info:
        parse_expectation(Expectation.model_validate(exp))
    assert message in str(info.value)
    assert exp["kind"] in str(info.value)


def _suite_file(tmp_path: Path, cases: list[dict[str, Any]]) -> Path:
    path = tmp_path / "s.jsonl"
    head = header("sentiment", "tiny").model_dump(mode="json", exclude_none=True)
    path.write_text("\n".join(json.dumps(r) for r in [head, *cases]) + "\n")
    return path


def _case(i: int, **kw: Any) -> dict[str, Any]:
    base = {"id": f"tiny/x/{i}", "groups": {"class": "c", "functionality": "x"}, "test_type": "MFT",
            "loss": "mft", "inputs": ["good"], "label": 2, "expectation": EQ}
    return {**base, **kw}


def test_unknown_kind_names_file_line_case_and_suggests(tmp_path: Path) -> None:
    path = _suite_file(tmp_path, [_case(0), _case(1, expectation={"kind": "eqq", "target": "label"})])
    with pytest.raises(BelugaError) as info:
        load_checked_suite(path)
    msg = str(info.value)
    for part in (str(path), "line 3", "tiny/x/1", "unknown expectation kind 'eqq'", "did you mean 'eq'",
                 "implication_triplet, inv"):
        assert part in msg


def test_invalid_parameters_and_unsuitable_cases_fail_at_load(tmp_path: Path) -> None:
    path = _suite_file(tmp_path, [_case(0, expectation={"kind": "inv", "tolerance": "x"})])
    with pytest.raises(BelugaError, match=r"line 2.*tiny/x/0.*tolerance"):
        load_checked_suite(path)
    path = _suite_file(tmp_path, [_case(0, label=None)])
    with pytest.raises(BelugaError, match="has no label"):
        load_checked_suite(path)
    trip = {"kind": "implication_triplet", "level": "testcase", "variant": "released"}
    path = _suite_file(tmp_path, [_case(0, expectation=trip)])
    with pytest.raises(BelugaError, match="exactly 3 inputs"):
        load_checked_suite(path)
    bad_fix = {"reason": "r", "expectation": {"kind": "not_a_kind"}}
    path = _suite_file(tmp_path, [_case(0, correction=bad_fix)])
    with pytest.raises(BelugaError, match=r"correction\.expectation\.kind.*not_a_kind"):
        load_checked_suite(path)


def test_validate_suite_accepts_the_samples() -> None:
    for suite in SUITES:
        cases = sample(suite)[0]
        validate_suite_expectations(Suite(header(suite), cases))


# --------------------------------------------------------------------------------------------- sentiment


@pytest.mark.parametrize(("p", "expected"), [
    (0.2, [0.8, 0.0, 0.2]),  # p < 1/3: [1 - p, 0, p]
    (1 / 3, [0.5, 0.5, 0.0]),  # neu = 1 - 3 * (1/2 - 1/3) = 1/2, neg = 1/2
    (0.45, [0.15, 0.85, 0.0]),  # neu = 1 - 3 * 0.05
    (0.5, [0.0, 1.0, 0.0]),
    (0.6, [0.0, 0.7, 0.3]),  # neu = 1 - 3 * 0.1
    (2 / 3, [0.0, 0.5, 0.5]),  # upper edge of the neutral band is still inside it
    (0.9, [0.1, 0.0, 0.9]),  # p > 2/3: [1 - p, 0, p]
])
def test_binary_to_three_hand_computed(p: float, expected: list[float]) -> None:
    got = binary_to_three(np.array([p]))
    assert got.shape == (1, 3)
    np.testing.assert_allclose(got[0], expected, atol=1e-12)
    assert got.sum() == pytest.approx(1.0)


def test_binary_to_three_is_vectorised_and_keeps_shape() -> None:
    ps = np.linspace(0, 1, 1001)
    out = binary_to_three(ps)
    np.testing.assert_allclose(out.sum(axis=1), 1.0)
    assert (out >= 0).all()
    assert binary_to_three(np.full((4, 5), 0.5)).shape == (4, 5, 3)


def test_binary_training_targets() -> None:
    np.testing.assert_allclose(binary_target("neutral"), [0.5, 0.5])
    np.testing.assert_allclose(binary_target("not_negative"), [1 / 3, 2 / 3])
    np.testing.assert_allclose(binary_targets(np.array([0, 1, 2])), [[1, 0], [0.5, 0.5], [0, 1]])
    with pytest.raises(ValueError, match="unknown sentiment target"):
        binary_target("mixed")
