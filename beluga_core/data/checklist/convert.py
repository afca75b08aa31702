"""Convert CheckList tests into beluga ``Case`` records, and build the ``SuiteHeader`` of the suite.

Conventions of the converted cases (the evaluator and the trainers rely on them):

* ``id`` is ``"{suite}/{test name}/{index}"``; test names may contain ``/``, the index is the last segment.
* ``groups`` = ``{"class": capability, "functionality": test name}``; scoring level ``functionality``.
* ``inputs`` is always a list: an MFT case holding one text / pair becomes a one-element list; for
  INV / DIR the original comes first, as in CheckList. Pairs are (q1, q2) or (context, question).
* ``label`` is CheckList's label for the case: a scalar that applies to every input (sentiment, QQP),
  or a list with one label per input (QQP ``Testing implications``; SQuAD answer strings, where a case
  of one (context, question) pair with a string label gets a one-element list). ``None`` when the test
  has no labels (INV / DIR).
* ``expectation`` is the declarative form of the test's CheckList expectation (vendored in
  ``known_tests.json``; documentation-only keys removed). Top-level parameters whose value is ``null``
  are dropped when the suite is written, so an evaluator must read an absent parameter as ``null``.
* ``meta``: ``source_index`` (position of the case in ``test.data``); ``n500_rank`` (position of the case
  in the test's saved ``run_idxs`` subsample, only for cases in it); ``per_input``: CheckList's meta for
  the case as a list aligned with ``inputs`` (a single-input case's meta becomes a one-element list), e.g.
  SQuAD ``Change name everywhere``: ``[{}, ["Luther", "James"], ...]`` — the (old, new) name that the
  ``inv_exact`` expectation substitutes into the original's answer; ``checklist``: CheckList's meta as
  is, only when it cannot be aligned with the inputs.
* ``correction``: a documented fix of a released defect (see ``known_tests.json``); the case itself
  keeps the released form.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from typing import Any

import numpy as np
from pydantic import ValidationError

from beluga_core.core.errors import BelugaError, format_validation_error
from beluga_core.data.checklist.reading import LoadedSuite, RawTest
from beluga_core.data.checklist.specs import SuiteProfile, TestSpec
from beluga_core.data.suite.suite_schema import Case, Correction, Expectation, SuiteHeader

__all__ = ["LEVELS", "SCORING_LEVEL", "build_header", "convert_test", "correction_of", "to_plain"]

LEVELS = ["class", "functionality"]
SCORING_LEVEL = "functionality"


# ---------------------------------------------------------------------------------------------------------
# Cases.
# ---------------------------------------------------------------------------------------------------------


def to_plain(value: Any) -> Any:
    """JSON-ready copy: numpy scalars and arrays to Python, tuples to lists, dict keys to str."""
    if isinstance(value, str):
        return str(value)  # np.str_ → str
    if isinstance(value, bool | int | float) or value is None:
        return value
    if isinstance(value, np.generic):
        return value.item()
    if isinstance(value, np.ndarray):
        return [to_plain(v) for v in value.tolist()]
    if isinstance(value, list | tuple):
        return [to_plain(v) for v in value]
    if isinstance(value, Mapping):
        return {str(k): to_plain(v) for k, v in value.items()}
    raise TypeError(f"unexpected {type(value).__name__} in the suite data")


def _input(value: Any, where: str) -> str | tuple[str, str]:
    if isinstance(value, str):
        return str(value)
    if isinstance(value, list | tuple) and len(value) == 2 and all(isinstance(v, str) for v in value):
        return (str(value[0]), str(value[1]))
    raise BelugaError(f"{where}: an input must be a text or a pair of texts, got {_short(value)}")


def _short(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 80 else text[:77] + "..."


def _is_single_input(item: Any) -> bool:
    """A CheckList case is one text, one pair, or a list of those (original first)."""
    if isinstance(item, str):
        return True
    return isinstance(item, tuple) and len(item) == 2 and all(isinstance(v, str) for v in item)


def _case_label(labels: Any, index: int, n_inputs: int, single: bool, where: str) -> Any:
    if labels is None:
        return None
    label = labels[index] if isinstance(labels, list | np.ndarray) else labels
    label = to_plain(label)
    if isinstance(label, list):
        if len(label) != n_inputs:
            raise BelugaError(f"{where}: {len(label)} labels for {n_inputs} inputs")
        return label
    if single and isinstance(label, str):
        # A free-text answer for the one question of the case: labels of such suites are per input.
        return [label]
    if not isinstance(label, bool | int | float | str):
        raise BelugaError(f"{where}: unsupported label {_short(label)}")
    return label


def _case_meta(test: RawTest, index: int, n_inputs: int, single: bool,
               ranks: dict[int, int]) -> dict[str, Any]:
    meta: dict[str, Any] = {"source_index": index}
    if index in ranks:
        meta["n500_rank"] = ranks[index]
    if isinstance(test.meta, list) and index < len(test.meta):
        raw = to_plain(test.meta[index])
        if single:
            meta["per_input"] = [raw]
        elif isinstance(raw, list) and len(raw) == n_inputs:
            meta["per_input"] = raw
        elif raw is not None:
            meta["checklist"] = raw
    return meta


def _ranks(run_idxs: Any) -> dict[int, int]:
    if run_idxs is None:
        return {}
    return {int(i): rank for rank, i in enumerate(to_plain(run_idxs))}


def _check_lengths(test: RawTest) -> None:
    for what, value in (("labels", test.labels), ("meta", test.meta)):
        if isinstance(value, list | np.ndarray) and len(value) != len(test.data):
            raise BelugaError(f"test '{test.name}': {len(value)} {what} for {len(test.data)} cases")


def convert_test(test: RawTest, spec: TestSpec, suite_name: str, loss: str,
                 make_correction: Callable[[TestSpec], Correction | None]) -> list[Case]:
    _check_lengths(test)
    expectation = Expectation.model_validate(spec.expectation)
    correction = make_correction(spec)
    ranks = _ranks(test.run_idxs)
    groups = {"class": test.capability, "functionality": test.name}
    cases = []
    for index, item in enumerate(test.data):
        where = f"test '{test.name}', case {index}"
        single = _is_single_input(item)
        items = [item] if single else item
        if not isinstance(items, list | tuple) or not items:
            raise BelugaError(f"{where}: expected an input or a non-empty list of inputs, got {_short(item)}")
        inputs = [_input(x, where) for x in items]
        cases.append(Case(
            id=f"{suite_name}/{test.name}/{index}",
            groups=groups,
            test_type=test.test_type,
            loss=loss,
            loss_params=spec.loss_params,
            inputs=inputs,
            label=_case_label(test.labels, index, len(inputs), single, where),
            expectation=expectation,
            correction=correction,
            meta=_case_meta(test, index, len(inputs), single, ranks),
        ))
    return cases


def correction_of(spec: TestSpec) -> Correction | None:
    """The spec's documented correction of a released defect, validated (``None`` if it has none)."""
    if not spec.correction:
        return None
    try:
        return Correction.model_validate(spec.correction)
    except ValidationError as exc:  # only reachable with a broken vendored table
        raise BelugaError(f"invalid correction for test '{spec.name}': "
                          f"{format_validation_error(exc)}") from None


# ---------------------------------------------------------------------------------------------------------
# The suite header.
# ---------------------------------------------------------------------------------------------------------


def _infer_input_kind(tests: list[RawTest]) -> str:
    """For a suite not in the table: texts → text; pairs → context_question if answers are strings."""
    kinds = set()
    for test in tests:
        for index, item in enumerate(test.data[:50]):
            first = item if _is_single_input(item) else (item[0] if item else None)
            if isinstance(first, str):
                kinds.add("text")
            elif first is not None:
                label = test.labels[index] if isinstance(test.labels, list) else test.labels
                kinds.add("context_question" if _has_str(to_plain(label)) else "text_pair")
    if len(kinds) != 1:
        raise BelugaError(f"cannot tell the suite's input kind (found {sorted(kinds) or 'no inputs'})")
    return kinds.pop()


def _has_str(value: Any) -> bool:
    return isinstance(value, str) or (isinstance(value, list) and any(isinstance(v, str) for v in value))


def _first_seen(values: Iterable[str]) -> list[str]:
    return list(dict.fromkeys(values))


def build_header(suite_name: str, loaded: LoadedSuite, tests: list[RawTest], cases: list[Case],
            profile: SuiteProfile | None) -> SuiteHeader:
    is_release = profile is not None and profile.release_sha256 == loaded.sha256
    source: dict[str, Any] = {"file": loaded.file_name, "sha256": loaded.sha256,
                              "origin": "checklist release" if is_release else "checklist"}
    if loaded.member:
        source["member"] = loaded.member
    if profile is not None and not is_release:
        source["expectations_from"] = f"checklist release '{profile.key}'"
    input_kind = profile.input_kind if profile and profile.input_kind else _infer_input_kind(tests)
    return SuiteHeader(
        name=suite_name,
        description=profile.description if profile else f"CheckList suite imported from {loaded.file_name}",
        levels=LEVELS,
        scoring_level=SCORING_LEVEL,
        task=profile.task if profile else None,
        input_kind=input_kind,
        label_space=profile.label_space if profile else None,
        test_types=_first_seen(c.test_type for c in cases),
        losses=_first_seen(c.loss for c in cases),
        source=source,
    )
