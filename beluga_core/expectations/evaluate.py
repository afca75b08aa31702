"""Evaluating cases with their declared expectations, validating a suite's expectations, pass rates.

``evaluate_cases`` groups cases by expectation (kind + parameters) and lets each kind judge its group in
one vectorised call. It evaluates the expectations the cases carry; whether documented corrections apply
is the caller's choice (``Case.effective()`` / ``Suite.effective()``).
"""

from __future__ import annotations

import json
from collections.abc import Hashable, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np

from beluga_core import registry
from beluga_core.errors import BelugaError
from beluga_core.expectations.base import PASS, SKIP, CaseBatch, ExpectationKind, FlatPredictions
from beluga_core.suite.schema import Case, Expectation

if TYPE_CHECKING:
    from beluga_core.suite.io import Suite

KIND = "expectation kind"

# Parsed expectations by their key, so that each distinct expectation is validated once.
_parsed: dict[Hashable, ExpectationKind] = {}


def expectation_key(exp: Expectation) -> Hashable:
    """Equal for equal expectations; cheap, since it is computed for every case of a suite.

    Parameters are not sorted: the same expectation written with another key order only makes one more
    group, which evaluates alike.
    """
    extra = tuple((exp.__pydantic_extra__ or {}).items())
    try:
        hash(extra)
    except TypeError:  # nested parameters (keep_if, score, ...): fall back to canonical JSON
        return (exp.kind, exp.agg, json.dumps(extra, sort_keys=True, default=str))
    return (exp.kind, exp.agg, extra)


def kind_class(name: str) -> type[ExpectationKind]:
    """The plugin class of expectation kind ``name``; unknown → ``BelugaError`` with a did-you-mean."""
    cls = registry.get(KIND, name)
    if not (isinstance(cls, type) and issubclass(cls, ExpectationKind)):
        raise BelugaError(f"expectation kind plugin '{name}' ({cls!r}) is not an ExpectationKind subclass")
    return cls


def parse_expectation(exp: Expectation, key: Hashable | None = None) -> ExpectationKind:
    """A validated kind instance for ``exp``. Raises ``BelugaError`` (unknown kind) or ``ValueError``."""
    key = expectation_key(exp) if key is None else key
    kind = _parsed.get(key)
    if kind is None:
        kind = kind_class(exp.kind).parse(exp)
        _parsed[key] = kind
    return kind


# ------------------------------------------------------------------------------------------ validation


def validate_suite_expectations(suite: Suite, lines: Mapping[str, int] | None = None) -> None:
    """Check that every case's expectation (and its correction's) names an installed kind with valid
    parameters, and suits the case. Errors name the file, line, case id and what is wrong."""
    lines = lines or {}
    path = suite.path
    keys = (_KeyRuns(), _KeyRuns())  # one per version, so that runs of equal expectations stay unbroken
    for case in suite.cases:
        # The released case and, when it has one, the corrected case: both must be evaluable.
        for version, (target, where) in enumerate(_versions_of(case)):
            exp = target.expectation
            key = keys[version](exp)
            line = lines.get(case.id)
            try:
                kind = parse_expectation(exp, key)
            except BelugaError as exc:  # unknown kind: the registry's message has the did-you-mean
                raise BelugaError(f"case '{case.id}': {exc}", source=path, line=line,
                                  field=f"{where}.kind") from None
            except ValueError as exc:
                raise BelugaError(f"case '{case.id}': {exc}", source=path, line=line, field=where) from None
            problem = kind.check_case(target)
            if problem:
                raise BelugaError(f"case '{case.id}': {problem}", source=path, line=line, field=where)


def _versions_of(case: Case) -> list[tuple[Case, str]]:
    if case.correction is None:
        return [(case, "expectation")]
    where = "correction.expectation" if case.correction.expectation is not None else "correction"
    return [(case, "expectation"), (case.effective(), where)]


# ------------------------------------------------------------------------------------------ evaluation


def evaluate_cases(cases: Sequence[Case], preds: FlatPredictions | Sequence[Sequence[Any]], *,
                   label_space: Sequence[str] | None = None) -> np.ndarray:
    """Outcome of every case under its own expectation: int8, 1 pass / 0 fail / -1 skip.

    ``preds`` is aligned with ``cases``: a ``FlatPredictions`` (fastest: one ``[n_inputs, n_labels]``
    probability array, or answer strings, plus case offsets), or one list per case with one prediction per
    input (a probability vector or an answer string). ``label_space`` lets labels and parameters name
    classes instead of giving class ids.
    """
    flat = preds if isinstance(preds, FlatPredictions) else FlatPredictions.from_nested(preds)
    n = len(cases)
    if flat.n_cases != n:
        raise ValueError(f"predictions cover {flat.n_cases} cases but {n} cases were given")
    lengths = np.fromiter((len(c.inputs) for c in cases), dtype=np.int64, count=n)
    bad = np.flatnonzero(lengths != np.diff(flat.offsets))
    if bad.size:
        i = int(bad[0])
        raise ValueError(f"case '{cases[i].id}' has {lengths[i]} inputs but {flat.offsets[i + 1] - flat.offsets[i]} "
                         f"predictions ({bad.size} case(s) mismatched)")
    out = np.full(n, SKIP, dtype=np.int8)
    for key, idx in _groups(cases).items():
        kind = parse_expectation(cases[idx[0]].expectation, key)
        sub = flat if len(idx) == n else flat.take(idx)
        batch = CaseBatch(sub, labels=[cases[i].label for i in idx], metas=[cases[i].meta for i in idx],
                          case_ids=[cases[i].id for i in idx], label_space=label_space)
        out[idx] = kind.evaluate(batch)
    return out


def _groups(cases: Sequence[Case]) -> dict[Hashable, np.ndarray]:
    """Case indices by expectation key."""
    keys = _KeyRuns()
    members: dict[Hashable, list[int]] = {}
    for i, case in enumerate(cases):
        members.setdefault(keys(case.expectation), []).append(i)
    return {k: np.asarray(v, dtype=np.int64) for k, v in members.items()}


class _KeyRuns:
    """``expectation_key`` for a stream of expectations, computed once per run of equal ones.

    Suites list a test's cases together, so consecutive expectations are usually equal; comparing with the
    previous one (a C-level dict comparison) is several times cheaper than building a key.
    """

    def __init__(self) -> None:
        self._prev: Expectation | None = None
        self._key: Hashable = None

    def __call__(self, exp: Expectation) -> Hashable:
        prev = self._prev
        if prev is None or not (exp is prev or (exp.kind == prev.kind and exp.agg == prev.agg
                                                and exp.__pydantic_extra__ == prev.__pydantic_extra__)):
            self._key = expectation_key(exp)
            self._prev = exp
        return self._key


# ------------------------------------------------------------------------------------------ pass rates


@dataclass(frozen=True)
class GroupRate:
    group: str
    cases: int
    passes: int
    fails: int
    skips: int

    @property
    def rate(self) -> float | None:
        """passes / (passes + fails); None when no case of the group could be evaluated."""
        judged = self.passes + self.fails
        return self.passes / judged if judged else None


def group_pass_rates(groups: Sequence[str], outcomes: np.ndarray) -> list[GroupRate]:
    """Pass rate of every group (in order of first appearance); skipped cases are left out."""
    names, first, inverse = np.unique(np.asarray(groups, dtype=object), return_index=True, return_inverse=True)
    k = len(names)
    passes = np.bincount(inverse, weights=outcomes == PASS, minlength=k).astype(int)
    fails = np.bincount(inverse, weights=outcomes == 0, minlength=k).astype(int)
    total = np.bincount(inverse, minlength=k)
    order = np.argsort(first, kind="stable")
    return [GroupRate(str(names[g]), int(total[g]), int(passes[g]), int(fails[g]),
                      int(total[g] - passes[g] - fails[g])) for g in order]


def mean_pass_rate(rates: Sequence[GroupRate]) -> float | None:
    """s_T: the unweighted mean over groups with at least one evaluable case (None if there are none)."""
    vals = [r.rate for r in rates if r.rate is not None]
    return float(np.mean(vals)) if vals else None
