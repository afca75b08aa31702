"""The expectation spec of each CheckList test: the vendored table of the release suites, ``--expectations``.

A pickled expectation function cannot be run (``unpickler.py``), so each test's declarative expectation
comes from the vendored table (``beluga_core/data/builtin/checklist/known_tests.json``), matched by test
name, type and expectation fingerprint (``fingerprint.py``), or from a user's ``--expectations`` file,
which wins. The known suite that most tests match decides the suite-level facts (``SuiteProfile``).
"""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Mapping
from dataclasses import dataclass, field
from functools import cache
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from beluga_core.core.errors import BelugaError, format_validation_error
from beluga_core.data import BUILTIN_DATA
from beluga_core.data.checklist.reading import RawTest
from beluga_core.data.suite.suite_schema import Expectation

__all__ = ["DEFAULT_LOSSES", "DOC_KEYS", "KNOWN_TESTS_PATH", "SuiteProfile", "TestSpec", "known_tests",
           "load_expectations_file", "resolve_specs", "strip_doc_keys"]

DEFAULT_LOSSES = {"MFT": "mft", "INV": "inv", "DIR": "dir"}
# Keys of the reference expectation dicts that only document; they carry no semantics.
DOC_KEYS = frozenset({"note", "alias", "requires", "fingerprint", "faithful_rule",
                      "intended_rule_per_description"})
# Package data (pyproject ships beluga_core/data/**).
KNOWN_TESTS_PATH = BUILTIN_DATA / "checklist" / "known_tests.json"


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
