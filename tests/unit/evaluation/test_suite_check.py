"""``beluga suite check``: PRED files in, per-case outcomes and pass rates out, user errors exit 2."""

from __future__ import annotations

import gzip
import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import duckdb
import numpy as np
import pytest
from checklist_samples import QQP_CORRECTIONS, header, sample
from helpers import run_cli

from beluga_core.contracts.expectations import FAIL, PASS, SKIP
from beluga_core.data.suite.suite_files import write_suite
from beluga_core.evaluation.evaluate import evaluate_cases
from beluga_core.evaluation.sentiment_mapping import binary_to_three

NAMES = {PASS: "pass", FAIL: "fail", SKIP: "skip"}
Cli = Callable[..., tuple[int, str, str]]


@pytest.fixture
def cli(monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> Cli:
    """Run ``beluga`` in-process; returns (exit code, stdout, stderr)."""
    monkeypatch.setenv("COLUMNS", "200")
    return lambda *argv: run_cli(capsys, *argv)


def write_sample_suite(tmp_path: Path, suite: str, keep: Callable[[str], bool] = lambda t: True,
                       released_only: bool = False) -> tuple[Path, Path, list[Any], np.ndarray]:
    """Suite file of ``suite``'s sampled cases (tests filtered by ``keep``) and a PRED file of the sample."""
    cases, preds, expected, tests = sample(suite)
    idx = [i for i, t in enumerate(tests) if keep(t)]
    chosen = [cases[i] for i in idx]
    if released_only:
        chosen = [c.model_copy(update={"correction": None}) for c in chosen]
    suite_path = write_suite(tmp_path / f"{suite}-sample.jsonl.gz", header(suite, f"{suite}-sample"), chosen)
    pred_path = tmp_path / f"{suite}.pred.jsonl"
    with open(pred_path, "w", encoding="utf-8") as fh:
        for i in idx:
            fh.write(json.dumps({"id": cases[i].id, "preds": preds[i]}) + "\n")
    return suite_path, pred_path, chosen, expected[idx]


def read_out(path: Path) -> list[dict[str, Any]]:
    opener = gzip.open if path.suffix == ".gz" else open
    with opener(path, "rt", encoding="utf-8") as fh:
        return [json.loads(line) for line in fh]


# --------------------------------------------------------------------------------------------- happy paths


@pytest.mark.parametrize("suite", ["sentiment", "squad"])
def test_cli_reproduces_checklist_on_the_sample(tmp_path: Path, cli: Cli, suite: str) -> None:
    suite_path, pred_path, cases, expected = write_sample_suite(tmp_path, suite)
    out = tmp_path / "out" / "outcomes.jsonl"
    code, stdout, stderr = cli("suite", "check", suite_path, "--predictions", pred_path, "--out", out,
                               "--as-released")
    assert code == 0, stderr
    rows = read_out(out)
    assert len(rows) == len(cases) == {"sentiment": 4324, "squad": 667}[suite]
    assert [r["id"] for r in rows] == [c.id for c in cases]
    assert [r["outcome"] for r in rows] == [NAMES[int(e)] for e in expected]
    assert rows[0]["groups"] == cases[0].groups and rows[0]["test_type"] == cases[0].test_type
    assert not list(out.parent.glob("*.tmp"))
    assert "as released" in stdout and "s_T" in stdout
    n_tests = len({c.groups["functionality"] for c in cases})
    assert f"over {n_tests} functionality groups" in stdout


def test_cli_applies_corrections_unless_as_released(tmp_path: Path, cli: Cli) -> None:
    suite_path, pred_path, cases, expected = write_sample_suite(tmp_path, "qqp")
    code, _, err = cli("suite", "check", suite_path, "--predictions", pred_path, "--out", tmp_path / "rel.jsonl",
                       "--as-released")
    assert code == 0, err
    code, stdout, err = cli("suite", "check", suite_path, "--predictions", pred_path, "--out",
                            tmp_path / "fix.jsonl.gz")
    assert code == 0, err
    rel, fix = read_out(tmp_path / "rel.jsonl"), read_out(tmp_path / "fix.jsonl.gz")
    assert [r["outcome"] for r in rel] == [NAMES[int(e)] for e in expected]
    changed = {a["groups"]["functionality"] for a, b in zip(rel, fix, strict=True) if a["outcome"] != b["outcome"]}
    assert changed == set(QQP_CORRECTIONS)
    synonyms = [r for r in fix if r["groups"]["functionality"].startswith("(question, f(question))")]
    assert synonyms and {r["test_type"] for r in synonyms} == {"MFT"}  # the corrected test type
    n_fixed = sum(c.groups["functionality"] in QQP_CORRECTIONS for c in cases)
    assert f"{n_fixed} corrected case(s)" in stdout


def test_binary_vectors_are_mapped_for_sentiment(tmp_path: Path, cli: Cli) -> None:
    suite_path, _, cases, _ = write_sample_suite(tmp_path, "sentiment", lambda t: "negation" in t)
    rng = np.random.default_rng(7)
    p_pos = [rng.uniform(size=len(c.inputs)) for c in cases]
    pred_path = tmp_path / "binary.jsonl"
    pred_path.write_text("".join(json.dumps({"id": c.id, "preds": [[1 - x, x] for x in p.tolist()]}) + "\n"
                                 for c, p in zip(cases, p_pos, strict=True)))
    code, _, err = cli("suite", "check", suite_path, "--predictions", pred_path, "--out", tmp_path / "o.jsonl")
    assert code == 0, err
    want = evaluate_cases(cases, [binary_to_three(p) for p in p_pos])
    assert [r["outcome"] for r in read_out(tmp_path / "o.jsonl")] == [NAMES[int(w)] for w in want]


def test_groups_without_evaluable_cases_are_reported_and_left_out(tmp_path: Path, cli: Cli) -> None:
    suite_path, pred_path, cases, _ = write_sample_suite(
        tmp_path, "sentiment", lambda t: t in ("reducers", "single positive words"))
    # every original predicted negative with confidence 0.95: decreasing monotonic checks cannot fail → skip
    lines = []
    for c in cases:
        preds = [[0.95, 0.03, 0.02]] * len(c.inputs) if c.groups["functionality"] == "reducers" else \
            [[0.0, 0.0, 1.0]]
        lines.append(json.dumps({"id": c.id, "preds": preds}))
    pred_path.write_text("\n".join(lines) + "\n")
    code, stdout, err = cli("suite", "check", suite_path, "--predictions", pred_path, "--out", tmp_path / "o.jsonl")
    assert code == 0, err
    assert "no evaluable case" in stdout
    assert "left out of s_T (no evaluable case): reducers" in stdout
    assert "s_T (unweighted mean over 1 functionality groups): 1.0000" in stdout


def test_store_records_the_evaluation(tmp_path: Path, cli: Cli) -> None:
    suite_path, pred_path, _, expected = write_sample_suite(tmp_path, "squad", lambda t: "coref" in t.lower())
    db = tmp_path / "results.duckdb"
    code, stdout, err = cli("suite", "check", suite_path, "--predictions", pred_path, "--out", tmp_path / "o.jsonl",
                            "--store", db, "--as-released")
    assert code == 0, err
    assert "stored as model" in stdout
    con = duckdb.connect(str(db), read_only=True)
    try:
        got = dict(con.execute("SELECT outcome, count(*) FROM outcomes GROUP BY outcome").fetchall())
    finally:
        con.close()
    assert got == {NAMES[k]: int(v) for k, v in zip(*np.unique(expected, return_counts=True), strict=True)}


# --------------------------------------------------------------------------------------------- user errors


def _tiny(tmp_path: Path) -> tuple[Path, Path, list[str]]:
    """A 3-test sentiment sample suite and a valid PRED file for it, as lines."""
    suite_path, pred_path, _, _ = write_sample_suite(
        tmp_path, "sentiment", lambda t: t in ("single positive words", "intensifiers", "protected: race"))
    return suite_path, pred_path, pred_path.read_text().splitlines()


def _set(lines: list[str], i: int, rec: dict[str, Any] | str) -> list[str]:
    lines = list(lines)
    lines[i] = rec if isinstance(rec, str) else json.dumps(rec)
    return lines


def _preds(lines: list[str], i: int, value: Any) -> list[str]:
    """Line ``i`` with every input's prediction replaced by ``value`` (the count stays right)."""
    rec = json.loads(lines[i])
    return _set(lines, i, {**rec, "preds": [value] * len(rec["preds"])})


def _multi_input_line(lines: list[str]) -> int:
    return next(i for i, line in enumerate(lines) if len(json.loads(line)["preds"]) > 1)


BAD_PREDICTIONS: dict[str, tuple[Callable[[list[str]], list[str]], str, bool]] = {
    # name: (make the bad file from valid lines, expected message part, whether it names a line)
    "bad JSON": (lambda ls: _set(ls, 2, ls[2][:-3]), "not valid JSON", True),
    "not an object": (lambda ls: _set(ls, 2, "[1, 2]"), "expected a JSON object", True),
    "unknown id": (lambda ls: _set(ls, 1, {**json.loads(ls[1]), "id": "sentiment/nope/1"}),
                   "unknown case id 'sentiment/nope/1'", True),
    "wrong vector length": (lambda ls: _set(ls, 0, {**json.loads(ls[0]), "preds": [[0.25] * 4]}),
                            "length 4; expected 3 (the suite's label space: negative, neutral, positive) or 2", True),
    "wrong number of preds": (lambda ls: _set(ls, _multi_input_line(ls), {
        **json.loads(ls[_multi_input_line(ls)]), "preds": json.loads(ls[_multi_input_line(ls)])["preds"][:1]}),
        "input(s) but 1 prediction(s) were given", True),
    "duplicate id": (lambda ls: [*ls, ls[3]], "duplicate id", True),
    "non-numeric": (lambda ls: _preds(ls, 4, ["0.2", "0.3", "0.5"]), "non-numeric value", True),
    "null in a vector": (lambda ls: _preds(ls, 4, [None, 0.5, 0.5]), "non-numeric value", True),
    "not summing to 1": (lambda ls: _preds(ls, 5, [0.5, 0.5, 0.5]), "is not a probability vector", True),
    "negative probability": (lambda ls: _preds(ls, 5, [-0.5, 0.5, 1.0]), "is not a probability vector", True),
    "answer string in a classification suite": (lambda ls: _preds(ls, 6, "positive"), "class-probability vector",
                                                True),
    "NaN": (lambda ls: _set(ls, 7, ls[7].replace(json.dumps(json.loads(ls[7])["preds"]), "[[NaN, 0.5, 0.5]]")),
            "NaN is not valid JSON", True),
    "missing cases": (lambda ls: ls[:-2], "2 of ", False),
    "missing preds field": (lambda ls: _set(ls, 1, {"id": json.loads(ls[1])["id"], "pred": []}), '"preds"', True),
}


@pytest.mark.parametrize("name", list(BAD_PREDICTIONS))
def test_malformed_predictions_exit_2_with_file_and_line(tmp_path: Path, cli: Cli, name: str) -> None:
    suite_path, pred_path, lines = _tiny(tmp_path)
    make, message, has_line = BAD_PREDICTIONS[name]
    bad = make(lines)
    pred_path.write_text("\n".join(bad) + "\n")
    out = tmp_path / "o.jsonl"
    code, _, err = cli("suite", "check", suite_path, "--predictions", pred_path, "--out", out)
    err = " ".join(err.split())  # undo the console's line wrapping
    assert code == 2, err
    assert str(pred_path) in err and message in err
    if has_line:
        changed = next((i for i, (a, b) in enumerate(zip(lines, bad, strict=False)) if a != b), len(lines))
        assert f"line {changed + 1}" in err
    assert not out.exists()
    assert "Traceback" not in err


def test_missing_cases_are_counted_and_named(tmp_path: Path, cli: Cli) -> None:
    suite_path, pred_path, lines = _tiny(tmp_path)
    pred_path.write_text("\n".join(lines[:-3]) + "\n")
    code, _, err = cli("suite", "check", suite_path, "--predictions", pred_path, "--out", tmp_path / "o.jsonl")
    err = " ".join(err.split())
    assert code == 2
    assert f"3 of {len(lines)} cases have no predictions" in err
    assert json.loads(lines[-1])["id"] in err


def test_missing_files_exit_2(tmp_path: Path, cli: Cli) -> None:
    suite_path, pred_path, _ = _tiny(tmp_path)
    code, _, err = cli("suite", "check", suite_path, "--predictions", tmp_path / "nope.jsonl", "--out", "o.jsonl")
    assert code == 2 and "not found" in err
    code, _, err = cli("suite", "check", tmp_path / "nope.jsonl", "--predictions", pred_path, "--out", "o.jsonl")
    assert code == 2 and "not found" in err
