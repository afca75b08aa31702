"""The CheckList outcome sample (tests/data/outcomes-sample): sampled release-suite cases with CheckList's own
outcomes on synthetic predictions, as beluga cases. Shared by the expectation and suite-check tests."""

from __future__ import annotations

import gzip
import json
from functools import cache
from pathlib import Path
from typing import Any

import numpy as np

from beluga_core.contracts.expectations import FAIL, PASS, SKIP
from beluga_core.data.suite.suite_schema import Case, Correction, Expectation, SuiteHeader

SAMPLES = Path(__file__).resolve().parent / "data" / "outcomes-sample"
SUITES = ("sentiment", "qqp", "squad")
DOC_KEYS = {"note", "alias", "requires", "fingerprint", "faithful_rule", "intended_rule_per_description"}
LABEL_SPACES = {"sentiment": ["negative", "neutral", "positive"], "qqp": ["not_duplicate", "duplicate"],
                "squad": None}
TASKS = {"sentiment": "sentiment", "qqp": "paraphrase", "squad": "reading"}
INPUT_KINDS = {"sentiment": "text", "qqp": "text_pair", "squad": "context_question"}
OUTCOME = {True: PASS, False: FAIL, None: SKIP}

# The documented corrections of the QQP suite (data/README.md, SUITES_SUMMARY.md "Known issues").
QQP_CORRECTIONS = {
    "Order does matter for asymmetric relations": Correction(reason="intended label is not-duplicate", label=0),
    "(question, f(question)) where f(question) replaces synonyms?": Correction(
        reason="INV over single pairs passes vacuously; the description says 'Expect 1'", test_type="MFT",
        loss="mft", label=1, expectation=Expectation(kind="eq", level="single", target="label")),
    "Testing implications": Correction(
        reason="released expect_triplet bug", expectation=Expectation(
            kind="implication_triplet", level="testcase", agg="all_except_first", variant="intended")),
}



def reference_case(rec: dict[str, Any], corrections: bool = True) -> Case:
    """A reference JSONL record as a ``Case``, following the importer's conventions."""
    exp = {k: v for k, v in rec["expectation"].items() if k not in DOC_KEYS}
    if exp["kind"] == "custom":
        exp = {"kind": "implication_triplet", "level": "testcase", "agg": "all_except_first", "variant": "released"}
    inputs = rec["inputs"]
    single = len(inputs) == 1
    label = rec["label"]
    if rec["suite"] == "squad" and isinstance(label, str) and len(inputs) == 1:
        label = [label]
    meta: dict[str, Any] = {"source_index": rec["case_id"]}
    if "meta" in rec:
        raw = rec["meta"]
        if single:
            meta["per_input"] = [raw]
        elif isinstance(raw, list) and len(raw) == len(inputs):
            meta["per_input"] = raw
        else:
            meta["checklist"] = raw
    test_type = rec["test_type"]
    return Case(
        id=f"{rec['suite']}/{rec['functionality']}/{rec['case_id']}",
        groups={"class": rec["capability"], "functionality": rec["functionality"]},
        test_type=test_type, loss={"MFT": "mft", "INV": "inv", "DIR": "dir"}[test_type],
        inputs=inputs, label=label, expectation=exp, meta=meta,
        correction=QQP_CORRECTIONS.get(rec["functionality"]) if corrections and rec["suite"] == "qqp" else None)


def header(suite: str, name: str | None = None) -> SuiteHeader:
    return SuiteHeader(name=name or suite, levels=["class", "functionality"], scoring_level="functionality",
                       task=TASKS[suite], input_kind=INPUT_KINDS[suite], label_space=LABEL_SPACES[suite])


@cache
def sample(suite: str) -> tuple[list[Case], list[list[Any]], np.ndarray, list[str]]:
    """The sampled cases of ``suite``, one prediction list per case, CheckList's outcomes, test names."""
    with gzip.open(SAMPLES / f"{suite}.cases.jsonl.gz", "rt", encoding="utf-8") as fh:
        records = {(r["functionality"], r["case_id"]): r for r in map(json.loads, fh)}
    with gzip.open(SAMPLES / f"{suite}.json.gz", "rt", encoding="utf-8") as fh:
        outcomes = json.load(fh)
    cases, preds, expected, tests = [], [], [], []
    for test, v in outcomes.items():
        for index, pred, conf, passed in zip(v["case_index"], v["preds"], v["confs"], v["passed"], strict=True):
            cases.append(reference_case(records[(test, index)]))
            # Sentiment / QQP: probability vectors; SQuAD: answer strings (CheckList's confidence is 1).
            preds.append(pred if suite == "squad" else conf)
            expected.append(OUTCOME[passed])
            tests.append(test)
    return cases, preds, np.array(expected, dtype=np.int8), tests


def released(cases: list[Case]) -> list[Case]:
    return [c.model_copy(update={"correction": None}) for c in cases]
