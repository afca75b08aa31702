"""Convert a CheckList ``TestSuite`` pickle into a beluga suite (``SuiteHeader`` + ``Case`` records).

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

import hashlib
import json
import pickle
import re
import tarfile
from collections import Counter
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from functools import cache
from pathlib import Path
from typing import Any

import numpy as np
from pydantic import ValidationError

from beluga_core.core.errors import BelugaError, format_validation_error
from beluga_core.data import BUILTIN_DATA
from beluga_core.data.checklist.unpickler import (
    DisallowedGlobalError,
    InertFunction,
    StandInObject,
    code_fingerprint,
    load_pickle,
    standin_class,
)
from beluga_core.data.suite.schema import Case, Correction, Expectation, SuiteHeader

LEVELS = ["class", "functionality"]
SCORING_LEVEL = "functionality"
TEST_TYPES = ("MFT", "INV", "DIR")
DEFAULT_LOSSES = {"MFT": "mft", "INV": "inv", "DIR": "dir"}
# Keys of the reference expectation dicts that only document; they carry no semantics.
DOC_KEYS = frozenset({"note", "alias", "requires", "fingerprint", "faithful_rule",
                      "intended_rule_per_description"})
# Package data (pyproject ships beluga_core/data/**).
KNOWN_TESTS_PATH = BUILTIN_DATA / "checklist" / "known_tests.json"
_PICKLE_SUFFIXES = (".pkl", ".pickle")


# ---------------------------------------------------------------------------------------------------------
# The vendored table of the release suites' expectations.
# ---------------------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class TestSpec:
    """How one CheckList test converts: its expectation, loss and (optional) correction."""

    __test__ = False  # not a pytest class, despite the name
    name: str
    expectation: dict[str, Any]
    loss: str | None = None
    loss_params: dict[str, Any] = field(default_factory=dict)
    correction: dict[str, Any] | None = None
    fingerprint: str | None = None
    test_type: str | None = None
    origin: str = "known"  # "known" (vendored table) or "user" (--expectations)


@dataclass(frozen=True)
class SuiteProfile:
    """Suite-level facts of a known release suite (or inferred ones for another suite)."""

    key: str | None
    task: str | None
    input_kind: str | None
    label_space: list[str] | None
    losses: dict[str, str]
    description: str = ""
    release_sha256: str | None = None


@cache
def known_tests() -> dict[str, Any]:
    """The vendored table (``beluga_core/data/builtin/checklist/known_tests.json``)."""
    return json.loads(KNOWN_TESTS_PATH.read_text("utf-8"))


def strip_doc_keys(expectation: Mapping[str, Any]) -> dict[str, Any]:
    """The expectation without documentation-only keys (at any depth)."""
    return {k: strip_doc_keys(v) if isinstance(v, Mapping) else v
            for k, v in expectation.items() if k not in DOC_KEYS}


def _profile(key: str) -> SuiteProfile:
    s = known_tests()["suites"][key]
    return SuiteProfile(key=key, task=s["task"], input_kind=s["input_kind"], label_space=s["label_space"],
                        losses={**DEFAULT_LOSSES, **s.get("losses", {})},
                        description=s.get("description", ""),
                        release_sha256=s.get("release", {}).get("sha256"))


def _known_spec(key: str, name: str) -> TestSpec:
    t = known_tests()["suites"][key]["tests"][name]
    return TestSpec(name=name, expectation=t["expectation"], loss_params=t.get("loss_params", {}),
                    correction=t.get("correction"), fingerprint=t["fingerprint"], test_type=t["test_type"])


# ---------------------------------------------------------------------------------------------------------
# Reading the pickle.
# ---------------------------------------------------------------------------------------------------------


@dataclass
class LoadedSuite:
    suite: StandInObject
    file_name: str
    sha256: str
    member: str | None = None


def _sha256(path: Path) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as fh:
        for chunk in iter(lambda: fh.read(1 << 20), b""):
            h.update(chunk)
    return h.hexdigest()


def _pickle_member(tar: tarfile.TarFile, path: Path) -> tarfile.TarInfo:
    files = [m for m in tar.getmembers() if m.isfile()]
    pickles = [m for m in files if m.name.endswith(_PICKLE_SUFFIXES)]
    if len(pickles) == 1:
        return pickles[0]
    if len(pickles) > 1:
        raise BelugaError(f"the tarball holds several pickles ({', '.join(m.name for m in pickles)}); "
                          "extract the one to import and pass it directly", source=path)
    listed = ", ".join(m.name for m in files[:10]) or "no files"
    raise BelugaError(f"the tarball holds no CheckList suite pickle (*.pkl); it holds: {listed}", source=path)


def _unpickle(fh: Any, path: Path) -> Any:
    try:
        return load_pickle(fh)
    except DisallowedGlobalError as exc:
        raise BelugaError(f"refusing to load: {exc}", source=path) from None
    except (pickle.UnpicklingError, EOFError, ValueError, TypeError, AttributeError, IndexError,
            KeyError, ImportError, OverflowError, MemoryError) as exc:
        raise BelugaError("neither a tarball nor a readable pickle of a CheckList suite "
                          f"({type(exc).__name__}: {exc}); expected e.g. sentiment_suite.tar.gz",
                          source=path) from None


def read_checklist_file(path: str | Path) -> LoadedSuite:
    """Load a CheckList suite from a release tarball (``*.tar.gz`` holding one pickle) or a ``.pkl``."""
    path = Path(path)
    if not path.exists():
        raise BelugaError("file not found", source=path)
    if not path.is_file():
        raise BelugaError("not a file; expected a CheckList suite tarball or pickle", source=path)
    digest = _sha256(path)
    member_name = None
    if tarfile.is_tarfile(path):
        # Members are read in memory, never extracted, so member paths cannot escape anywhere.
        try:
            with tarfile.open(path, "r:*") as tar:
                member = _pickle_member(tar, path)
                member_name = member.name
                fh = tar.extractfile(member)
                assert fh is not None  # a regular file member always has a file object
                with fh:
                    obj = _unpickle(fh, path)
        except (tarfile.TarError, OSError, EOFError) as exc:
            raise BelugaError(f"cannot read the tarball ({exc})", source=path) from None
    else:
        with open(path, "rb") as fh:
            obj = _unpickle(fh, path)
    if not isinstance(obj, standin_class("checklist.test_suite.TestSuite")):
        raise BelugaError(f"the pickle holds {_describe(obj)}, not a CheckList TestSuite", source=path)
    return LoadedSuite(suite=obj, file_name=path.name, sha256=digest, member=member_name)


def _describe(obj: Any) -> str:
    if isinstance(obj, StandInObject):
        return f"a {obj.checklist_class}"
    return f"a {type(obj).__module__}.{type(obj).__qualname__}"


# ---------------------------------------------------------------------------------------------------------
# One CheckList test, read from the stand-in.
# ---------------------------------------------------------------------------------------------------------


@dataclass
class RawTest:
    name: str
    test_type: str
    capability: str
    description: str
    data: list[Any]
    labels: Any
    meta: Any
    run_idxs: Any
    expect: Any
    agg_fn: Any

    @property
    def fingerprint(self) -> str:
        return fingerprint_test(self.expect, self.agg_fn)


def fingerprint_test(expect: Any, agg_fn: Any) -> str:
    """Fingerprint of a test's expectation: its inert code plus its ``agg_fn`` (a name or a function)."""
    agg = code_fingerprint(agg_fn) if isinstance(agg_fn, InertFunction) else repr(agg_fn)
    payload = f"{code_fingerprint(expect)}|{agg}"
    return hashlib.sha256(payload.encode("utf-8")).hexdigest()[:12]


def raw_tests(suite: StandInObject) -> list[RawTest]:
    tests = getattr(suite, "tests", None)
    if not isinstance(tests, Mapping):
        raise BelugaError("the TestSuite has no 'tests' mapping; is it a CheckList suite?")
    out = []
    for key, test in tests.items():
        test_type = _test_type(test, key)
        state = test.__dict__.get("state", {})
        data = state.get("data")
        if not isinstance(data, list):
            raise BelugaError(f"test '{key}' has no list of cases (data is {type(data).__name__})")
        out.append(RawTest(name=str(state.get("name") or key), test_type=test_type,
                           capability=str(state.get("capability") or "unknown"),
                           description=str(state.get("description") or ""), data=data,
                           labels=state.get("labels"), meta=state.get("meta"), run_idxs=state.get("run_idxs"),
                           expect=state.get("expect"), agg_fn=state.get("agg_fn")))
    names = Counter(t.name for t in out)
    dup = sorted(n for n, c in names.items() if c > 1)
    if dup:
        raise BelugaError(f"several tests share the name(s) {dup}; test names must be unique")
    return out


def _test_type(test: Any, key: str) -> str:
    for test_type in TEST_TYPES:
        if isinstance(test, standin_class(f"checklist.test_types.{test_type}")):
            return test_type
    raise BelugaError(f"test '{key}' is {_describe(test)}, not a CheckList MFT, INV or DIR")


# ---------------------------------------------------------------------------------------------------------
# Matching tests to expectations.
# ---------------------------------------------------------------------------------------------------------


def load_expectations_file(path: str | Path) -> dict[str, TestSpec]:
    """``--expectations FILE``: JSON mapping test name → expectation dict.

    A value may also be ``{"expectation": {...}, "loss": "...", "loss_params": {...}}`` to set the loss.
    """
    path = Path(path)
    try:
        raw = json.loads(path.read_text("utf-8"))
    except FileNotFoundError:
        raise BelugaError("expectations file not found", source=path) from None
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise BelugaError(f"cannot read the expectations file ({exc})", source=path) from None
    if not isinstance(raw, dict):
        raise BelugaError("the expectations file must hold a JSON object: test name → expectation",
                          source=path)
    specs = {}
    for name, value in raw.items():
        entry = value if isinstance(value, dict) and "expectation" in value else {"expectation": value}
        expectation = entry.get("expectation")
        if not isinstance(expectation, dict):
            raise BelugaError(f"the expectation of test '{name}' must be a JSON object with a 'kind'",
                              source=path, field=name)
        try:
            Expectation.model_validate(expectation)
        except ValidationError as exc:
            raise BelugaError(f"invalid expectation for test '{name}': {format_validation_error(exc)}",
                              source=path, field=name) from None
        specs[name] = TestSpec(name=name, expectation=expectation, loss=entry.get("loss"),
                               loss_params=entry.get("loss_params") or {}, origin="user")
    return specs


def _known_matches(test: RawTest) -> tuple[list[str], str | None]:
    """Known suites whose table has this test (same name, type and fingerprint), or why none does."""
    matches, mismatch = [], None
    for key, suite in known_tests()["suites"].items():
        entry = suite["tests"].get(test.name)
        if entry is None:
            continue
        if entry["test_type"] != test.test_type:
            mismatch = (f"is a {test.test_type}, but the '{key}' release test of that name is a "
                        f"{entry['test_type']}")
        elif entry["fingerprint"] != test.fingerprint:
            mismatch = (f"its expectation function differs from the '{key}' release test of that name "
                        f"(fingerprint {test.fingerprint}, expected {entry['fingerprint']})")
        else:
            matches.append(key)
    return matches, mismatch


def resolve_specs(tests: list[RawTest], user: Mapping[str, TestSpec] | None = None,
                  ) -> tuple[dict[str, TestSpec], SuiteProfile | None]:
    """The spec of every test (user-supplied ones win), and the known suite they come from, if any."""
    user = dict(user or {})
    stray = sorted(set(user) - {t.name for t in tests})
    if stray:
        raise BelugaError(f"--expectations names test(s) that are not in the suite: {stray}")
    votes: Counter[str] = Counter()
    from_table: list[RawTest] = []
    unknown: list[str] = []
    for test in tests:
        if test.name in user:
            continue
        matches, mismatch = _known_matches(test)
        if matches:
            votes.update(matches)
            from_table.append(test)
        else:
            unknown.append(f"'{test.name}' ({test.test_type}): "
                           + (mismatch or "not a test of a known CheckList release suite"))
    if unknown:
        listed = "\n  - ".join(unknown)
        raise BelugaError(
            f"no known expectation for {len(unknown)} test(s); the pickled expectation functions cannot be "
            "run, so supply them with --expectations FILE (JSON: test name → expectation dict, e.g. "
            '{"my test": {"kind": "eq", "level": "single", "target": "label", "agg": "all"}}):'
            f"\n  - {listed}")
    key = _best_suite(votes, from_table)
    specs = {t.name: user[t.name] if t.name in user else _known_spec(key, t.name)  # type: ignore[arg-type]
             for t in tests}
    return specs, (_profile(key) if key else None)


def _best_suite(votes: Counter[str], from_table: list[RawTest]) -> str | None:
    if not from_table:
        return None
    # A test name shared by two release suites is ambiguous alone; the suite matching most tests decides.
    for key, _ in votes.most_common():
        if all(key in _known_matches(t)[0] for t in from_table):
            return key
    raise BelugaError("the suite mixes tests of different CheckList release suites; import them separately "
                      "or supply their expectations with --expectations")


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


def _correction(spec: TestSpec) -> Correction | None:
    if not spec.correction:
        return None
    try:
        return Correction.model_validate(spec.correction)
    except ValidationError as exc:  # only reachable with a broken vendored table
        raise BelugaError(f"invalid correction for test '{spec.name}': "
                          f"{format_validation_error(exc)}") from None


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


def default_suite_name(file_name: str) -> str:
    """``sentiment_suite.tar.gz`` → ``sentiment``."""
    stem = re.sub(r"(\.tar\.gz|\.tgz|\.tar|\.pkl|\.pickle)$", "", file_name)
    stem = re.sub(r"_suite$", "", stem)
    return stem or "checklist"


@dataclass
class ImportResult:
    header: SuiteHeader
    cases: list[Case]
    tests: list[RawTest]


def convert_suite(loaded: LoadedSuite, name: str | None = None,
                  expectations: Mapping[str, TestSpec] | None = None) -> ImportResult:
    """Convert a loaded CheckList suite; tests are kept in suite order, cases in ``test.data`` order."""
    suite_name = name or default_suite_name(loaded.file_name)
    tests = raw_tests(loaded.suite)
    if not tests:
        raise BelugaError("the CheckList suite has no tests", source=loaded.file_name)
    try:
        specs, profile = resolve_specs(tests, expectations)
    except BelugaError as exc:
        raise BelugaError(str(exc), source=loaded.file_name) from None
    losses = profile.losses if profile else dict(DEFAULT_LOSSES)
    cases: list[Case] = []
    for test in tests:
        spec = specs[test.name]
        loss = spec.loss or losses.get(test.test_type, test.test_type.lower())
        cases.extend(convert_test(test, spec, suite_name, loss, _correction))
    header = _header(suite_name, loaded, tests, cases, profile)
    return ImportResult(header=header, cases=cases, tests=tests)


def _first_seen(values: Iterable[str]) -> list[str]:
    return list(dict.fromkeys(values))


def _header(suite_name: str, loaded: LoadedSuite, tests: list[RawTest], cases: list[Case],
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


def import_checklist(path: str | Path, name: str | None = None,
                     expectations: str | Path | Mapping[str, TestSpec] | None = None) -> ImportResult:
    """Read a CheckList tarball / pickle and convert it (nothing is written)."""
    specs = load_expectations_file(expectations) if isinstance(expectations, str | Path) else expectations
    return convert_suite(read_checklist_file(path), name=name, expectations=specs)
