"""A case's gold label as the store records it (``cases.gold``): what its expectation says the first input
should be predicted — the label the degeneracy check compares predicted labels with."""

from __future__ import annotations

from collections.abc import Sequence

from beluga_core.data.suite.suite_schema import Case


def case_gold(case: Case, label_space: Sequence[str] | None) -> str | None:
    """A class id as text (an ``eq`` expectation on the label or a fixed value; label names become ids),
    ``"not X"`` for a ``not_eq``, an answer string, or None when the expectation names no label."""
    exp = case.expectation
    if exp.kind not in ("eq", "not_eq"):
        return None
    params = exp.params()
    label = case.label[0] if isinstance(case.label, list) else case.label
    if exp.kind == "eq" and label is not None:
        rule = (params.get("if_label") or {}).get(str(label))
        if rule:
            exp_kind, value = rule["kind"], rule.get("value", label) if rule.get("target") != "label" else label
            return _text(value, label_space, negate=exp_kind == "not_eq")
    target = label if params.get("target") == "label" else params.get("value", label)
    if target is None:
        return None
    return _text(target, label_space, negate=exp.kind == "not_eq")


def _text(value: object, label_space: Sequence[str] | None, *, negate: bool) -> str:
    text = str(value)
    if label_space and text in label_space:
        text = str(list(label_space).index(text))
    return f"not {text}" if negate else text
