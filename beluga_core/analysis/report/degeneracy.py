"""The degeneracy check (METHOD.md §6): predicted labels on D_test and on MFT cases against gold.

Flag rule. A prediction set *collapses* when it has at least MIN_PREDICTIONS predictions, its most frequent
label takes at least COLLAPSE_SHARE of them, and that share exceeds the label's gold share by at least
COLLAPSE_EXCESS (a model predicting the majority label of a 95 %-majority gold set is not degenerate). When
gold is unknown only the share counts. A configuration-method-scenario is flagged when the set collapses in
any of its replicates. The paper's degenerate IID→T model predicts 95.2 % negative on SST-2 (gold 47.3 %)
and 99.7 % non-negative on MFTs (gold 56.6 %): both collapse under this rule.

Gold labels of MFT cases are not in a schema-1 store (``cases`` has no label, ``outcomes.pred`` only the
prediction). They are read from the store's ``outcomes.gold`` column when present, else from the suite file
that the store's run configuration names, when it can be found; else the check shows predictions only.
"""

from __future__ import annotations

import gzip
import io
import json
from collections import defaultdict
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import tomllib

from beluga_core.analysis.report.data import ReportData
from beluga_core.core import registry
from beluga_core.core.errors import BelugaError

COLLAPSE_SHARE = 0.9
COLLAPSE_EXCESS = 0.2
MIN_PREDICTIONS = 20


@dataclass
class Distribution:
    """Predicted (and gold) label counts of one prediction set."""

    pred: dict[str, int]
    gold: dict[str, int] | None = None
    names: dict[str, str] = field(default_factory=dict)  # label id → name, for display

    @property
    def n(self) -> int:
        return sum(self.pred.values())

    def label_name(self, label: str) -> str:
        return self.names.get(label, label)

    @property
    def top(self) -> tuple[str, float] | None:
        if not self.n:
            return None
        label = max(sorted(self.pred), key=lambda k: self.pred[k])
        return label, self.pred[label] / self.n

    def gold_share(self, label: str) -> float | None:
        """Gold share of ``label``, counting an "not X" gold (X ≠ label) as possibly ``label``: an upper bound,
        so an uncertain gold never makes a flag."""
        if not self.gold:
            return None
        total = sum(self.gold.values())
        hits = sum(n for g, n in self.gold.items() if g == label or (g.startswith("not ") and g[4:] != label))
        return hits / total if total else None

    @property
    def collapsed(self) -> bool | None:
        """None when there are too few predictions to tell."""
        top = self.top
        if top is None or self.n < MIN_PREDICTIONS:
            return None
        label, share = top
        gold = self.gold_share(label)
        return share >= COLLAPSE_SHARE and (gold is None or share - gold >= COLLAPSE_EXCESS)


@dataclass
class DegeneracyRow:
    """One configuration-method-scenario of a task: label counts summed over its replicates."""

    task: str
    suite: str | None
    config: str
    method: str
    scenario: str
    iid: Distribution | None = None
    mft: Distribution | None = None
    flags: list[str] = field(default_factory=list)   # "D_test", "MFT": where some replicate collapsed


def _add(target: dict[str, int], label: Any, n: Any) -> None:
    if n:
        key = "∅" if label is None else str(label)
        target[key] = target.get(key, 0) + int(n)


def degeneracy_rows(data: ReportData) -> list[DegeneracyRow]:
    # Replicate level first (for the flags), then summed per (task, suite, config, method, scenario).
    per_rep: dict[tuple, dict[str, Distribution]] = defaultdict(dict)
    for r in data.labels:
        key = (r["task"], r["suite"], r["config"], r["method"], r["scenario"], r["model_name"], r["seed"],
               r["split_seed"])
        source = "D_test" if r["source"] == "iid_test" else "MFT"
        dist = per_rep[key].setdefault(source, Distribution({}, {} if source == "D_test" else None))
        _add(dist.pred, r["label"], r["n_pred"])
        if dist.gold is not None:
            _add(dist.gold, r["label"], r["n_gold"])
    rows: dict[tuple, DegeneracyRow] = {}
    for key, sources in per_rep.items():
        row = rows.setdefault(key[:5], DegeneracyRow(*key[:5]))
        for source, dist in sources.items():
            if source == "MFT":
                dist.gold = data.mft_gold.get((key[0], key[1])) or None
            if dist.collapsed and source not in row.flags:
                row.flags.append(source)
            attr = "iid" if source == "D_test" else "mft"
            names = _head_names(key[0]) if source == "D_test" else data.mft_label_names.get((key[0], key[1]), {})
            total = getattr(row, attr) or Distribution({}, {} if dist.gold is not None else None, names)
            for label, n in dist.pred.items():
                _add(total.pred, label, n)
            if source == "MFT":
                total.gold = dist.gold
            elif dist.gold is not None and total.gold is not None:
                for label, n in dist.gold.items():
                    _add(total.gold, label, n)
            setattr(row, attr, total)
    from beluga_core.analysis.report.data import pair_order, scenario_order

    order = {p: i for i, p in enumerate(pair_order({(r.config, r.method) for r in rows.values()}))}
    scen = {s: i for i, s in enumerate(scenario_order({r.scenario for r in rows.values()}))}
    return sorted(rows.values(), key=lambda r: (r.task, str(r.suite), order[(r.config, r.method)], scen[r.scenario]))


def _head_names(task: str) -> dict[str, str]:
    """The task's head labels by id (what D_test predictions store), when its plugin is installed."""
    try:
        labels = getattr(registry.get("task", task), "head_labels", None) or []
    except BelugaError:
        return {}
    return {str(i): str(name) for i, name in enumerate(labels)}


def format_distribution(dist: Distribution | None) -> str:
    """'negative: 95.2 % (gold 47.3 %), positive: 4.8 % (gold 52.7 %)' (label ids where names are unknown)."""
    if dist is None or not dist.n:
        return "—"
    labels = sorted(set(dist.pred) | {g for g in (dist.gold or {}) if not g.startswith("not ")})
    parts = []
    for label in labels:
        text = f"{dist.label_name(label)}: {100 * dist.pred.get(label, 0) / dist.n:.1f} %"
        gold = dist.gold_share(label) if dist.gold else None
        if gold is not None and dist.gold:
            exact = dist.gold.get(label, 0) / sum(dist.gold.values())
            text += f" (gold {100 * exact:.1f} %{'+' if gold > exact else ''})"
        parts.append(text)
    return ", ".join(parts)


# ------------------------------------------------------------------------ gold of MFT cases, from the suite


def suite_mft_gold(data: ReportData) -> None:
    """Fill ``data.mft_gold`` from the suite files the store's runs name (best effort; see the module doc)."""
    if data.mft_gold or not data.mft_case_ids:
        return
    specs = _suite_specs(data.runs)
    found: dict[tuple[str, str], dict[str, int]] = {}
    sources = []
    for (task, suite), ids in data.mft_case_ids.items():
        for path, apply_corrections in specs.get(task, []):
            read = _gold_from_file(path, suite, ids, apply_corrections)
            if read is not None:
                found[(task, suite)], space = read
                data.mft_label_names[(task, suite)] = {str(i): name for i, name in enumerate(space)}
                sources.append(str(path))
                break
    if found:
        data.mft_gold = found
        data.mft_gold_source = "the suite file " + ", ".join(sorted(set(sources)))


def _suite_specs(runs: Iterable[dict[str, Any]]) -> dict[str, list[tuple[Path, bool]]]:
    from beluga_core.data.suite.io import resolve_suite_path

    out: dict[str, list[tuple[Path, bool]]] = defaultdict(list)
    for run in reversed(list(runs)):   # the latest run first
        try:
            cfg = tomllib.loads(run.get("config_text") or "")
        except tomllib.TOMLDecodeError:
            continue
        base = Path(run["config_path"]).parent if run.get("config_path") else Path.cwd()
        for t in cfg.get("tasks", []):
            if not isinstance(t, dict) or "suite" not in t or "name" not in t:
                continue
            try:
                path = resolve_suite_path(t["suite"])
            except Exception:  # an unknown builtin: nothing to read
                continue
            for candidate in (path, base / path):
                if candidate.is_file():
                    out[t["name"]].append((candidate, bool(t.get("apply_corrections", True))))
                    break
    return out


def _gold_from_file(path: Path, suite: str, ids: set[str],
                    apply_corrections: bool) -> tuple[dict[str, int], list[str]] | None:
    """Gold label counts of ``ids`` in a suite file, and its label space; None when it is not that suite or
    lacks the cases."""
    try:
        with open(path, "rb") as fh:
            gz = fh.read(2) == b"\x1f\x8b"
        raw = gzip.open(path, "rb") if gz else open(path, "rb")  # noqa: SIM115 - closed by the wrapper
        with io.TextIOWrapper(raw, encoding="utf-8") as fh:
            header = json.loads(fh.readline())
            if header.get("name") != suite:
                return None
            space = [str(x) for x in header.get("label_space") or []]
            counts: dict[str, int] = {}
            seen = 0
            for line in fh:
                rec = json.loads(line) if line.strip() else None
                if not rec or rec.get("id") not in ids:
                    continue
                seen += 1
                _add(counts, _case_gold(rec, apply_corrections, space), 1)
    except (OSError, ValueError, EOFError):
        return None
    return (counts, space) if seen == len(ids) else None


def _case_gold(rec: dict[str, Any], apply_corrections: bool, space: list[str]) -> str:
    """An MFT case's gold as the store writes predictions (a label id as text), or "not X" for a not_eq."""
    corr = (rec.get("correction") or {}) if apply_corrections else {}
    label = corr.get("label", rec.get("label"))
    expectation = corr.get("expectation") or rec.get("expectation") or {}
    if isinstance(label, list):
        label = label[0]
    target = label if expectation.get("target") == "label" else expectation.get("value", label)
    text = "∅" if target is None else str(target)
    text = str(space.index(text)) if text in space else text   # a label name → its id
    return f"not {text}" if expectation.get("kind") == "not_eq" else text
