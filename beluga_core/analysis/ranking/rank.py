"""``beluga rank``: rank the models blind to a group from a few of its labelled cases, and measure how often each
signal gets the order right.

The input is, per group, the candidates (with their true scores) and what each did on every case of the group's
probe pool (a ``ProbeCase`` per model and case, one per attribution method). It comes from a store (the folds
that held a group out and the IID model; ``load_store_groups``) or from a zoo of checkpoints (``zoo.py``); the
ranking itself (``rank_groups``) does not know which.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

import numpy as np

from beluga_core.analysis.ranking.ranking_accuracy import (
    GroupRanking,
    LevelSummary,
    Ties,
    draw_probes,
    probe_interval,
    probe_means,
    random_keys,
    rank_group,
    summarize,
)
from beluga_core.analysis.regression.flips import rng_for
from beluga_core.contracts.registries import ATTRIBUTIONS, SIGNALS
from beluga_core.contracts.signals import ProbeCase, Signal
from beluga_core.core.errors import BelugaError

REFERENCE = "acc"
# A signal is ranked on a group only where it applies to at least this share of the pool's cases.
MIN_APPLICABLE = 0.5


@dataclass
class Candidate:
    model_id: str
    label: str
    truth: float                # the true score: pass rate on the group's T_test cases (or a zoo's truth set)
    n_truth: int
    finished_at: datetime | None = None


@dataclass
class GroupData:
    """One group: its candidates, its pool (case ids), and per attribution method ('' for none) and candidate
    the probe cases in pool order."""

    group: str
    candidates: list[Candidate]
    pool: list[str]
    cases: dict[str, list[list[ProbeCase]]]        # method → [candidate][pool case]

    def methods(self) -> list[str]:
        return sorted(m for m in self.cases if m)


@dataclass(frozen=True)
class SignalSpec:
    """A signal as ranked: its name (``conf``, ``tokig:max-diff``, ``acc+tokig:window``) and its parts, the
    first ordering the models and the others breaking its ties."""

    name: str
    parts: tuple[tuple[str, str, Signal], ...]      # (plugin name, attribution method or '', instance)

    @property
    def attribution(self) -> str:
        return next((m for _, m, _ in self.parts if m), "")

    @property
    def direction(self) -> int:
        return int(self.parts[-1][2].direction)


@dataclass
class GroupResult:
    group: str
    signal: str
    n_models: int
    n_pool: int
    ranking: GroupRanking | None
    ci: tuple[float, float] = (float("nan"), float("nan"))
    skipped: str | None = None


@dataclass
class Ranking:
    level: str
    n: int
    bootstrap: int
    seed: int
    ties: Ties
    groups: list[GroupData]
    results: dict[str, list[GroupResult]] = field(default_factory=dict)    # signal → per group
    summaries: dict[str, LevelSummary] = field(default_factory=dict)
    specs: dict[str, SignalSpec] = field(default_factory=dict)
    skipped: dict[str, str] = field(default_factory=dict)                 # signal → why (every group)
    notes: list[str] = field(default_factory=list)
    options: dict[str, dict[str, Any]] = field(default_factory=dict)      # the signals' options


# ------------------------------------------------------------------------------------------------ signals

def _signal(name: str, options: dict[str, dict[str, Any]]) -> Signal:
    try:
        return SIGNALS.get(name)(options.get(name, {}))
    except BelugaError as exc:   # its options' check (field options.KEY): the option as --option NAME.KEY gives it
        if not (exc.field or "").startswith("options"):
            raise
        raise BelugaError(f"signal '{name}': {exc.message}",
                          field=f"--option {name}{(exc.field or '').removeprefix('options')}") from None


def check_signal_options(options: dict[str, dict[str, Any]]) -> None:
    """Every signal's options given (``--option SIGNAL.KEY=VALUE``) checked by its Options before anything loads."""
    for name in options:
        _signal(name, options)


def signal_specs(requested: Sequence[str] | None, methods: Sequence[str],
                 options: dict[str, dict[str, Any]]) -> tuple[list[SignalSpec], dict[str, str]]:
    """The signals to rank with: those named (``NAME``, ``METHOD:NAME``, ``acc+NAME``, ``acc+METHOD:NAME``) or,
    by default, every installed signal — attribution signals once per stored attribution method, and each also as
    ACC-then-signal. Returns the specs and the signals skipped with the reason."""
    skipped: dict[str, str] = {}
    names = list(requested) if requested else _default_names(methods, options, skipped)
    specs: list[SignalSpec] = []
    for text in dict.fromkeys(names):
        parts: list[tuple[str, str, Signal]] = []
        for piece in text.split("+"):
            # METHOD:NAME names an attribution method first; any other colon is a plugin's module:Class.
            head, _, rest = piece.partition(":")
            method, name = (head, rest) if rest and (head in methods or head in ATTRIBUTIONS.names()) else ("", piece)
            plugin = _signal(name, options)
            if plugin.needs_attribution and not method:
                if len(methods) != 1:
                    raise BelugaError(f"signal '{text}': {name} reads attributions; name the method as METHOD:{name} "
                                      f"(stored: {', '.join(methods) or 'none'})", field="signals")
                method = methods[0]
            if method and not plugin.needs_attribution:
                raise BelugaError(f"signal '{text}': {name} reads no attributions, so '{method}:' does not apply",
                                  field="signals")
            parts.append((name, method, plugin))
        if any(p.random_order for _, _, p in parts) and len(parts) > 1:
            raise BelugaError(f"signal '{text}': random cannot be combined", field="signals")
        missing = [m for _, m, _ in parts if m and m not in methods]
        if missing:
            skipped[text] = (f"no stored attributions of {missing[0]} for the pools (stored: "
                             f"{', '.join(methods) or 'none'}; a run computes them with [attributions] methods)")
            continue
        specs.append(SignalSpec(text, tuple(parts)))
    return specs, skipped


def _default_names(methods: Sequence[str], options: dict[str, dict[str, Any]], skipped: dict[str, str]) -> list[str]:
    plain: list[str] = []
    factors: list[str] = []
    for name in SIGNALS.names():
        try:
            plugin = _signal(name, options)
        except BelugaError as exc:       # e.g. window without its feature words
            skipped[name] = exc.message
            continue
        if not plugin.needs_attribution:
            plain.append(name)
        elif not methods:
            skipped[name] = "reads attributions, and the pools have none ([attributions] methods in the run)"
        else:
            factors += [f"{m}:{name}" for m in methods]
    return [*plain, *factors, *(f"{REFERENCE}+{f}" for f in factors)]


# ------------------------------------------------------------------------------------------------ ranking

def _values(spec_part: tuple[str, str, Signal], data: GroupData) -> np.ndarray:
    """``[m, E]`` the signal on every candidate and pool case (NaN where it does not apply)."""
    _, method, plugin = spec_part
    rows = data.cases.get(method) or data.cases[""]
    out = np.full((len(rows), len(data.pool)), np.nan)
    for i, cases in enumerate(rows):
        for j, case in enumerate(cases):
            v = plugin.value(case)
            if v is not None and np.isfinite(v):
                out[i, j] = float(v)
    return out


def rank_groups(level: str, groups: list[GroupData], specs: Sequence[SignalSpec], *, n: int = 10,
                bootstrap: int = 500, seed: int = 0, ties: Ties = "half", rounds: int = 2000,
                progress: Callable[[str], None] | None = None) -> Ranking:
    """Every signal on every group, on the same probes; summaries per signal with ACC as the reference."""
    if n < 1 or bootstrap < 1:
        raise BelugaError("--n and --bootstrap must be at least 1")
    out = Ranking(level, n, bootstrap, seed, ties, groups, specs={s.name: s for s in specs},
                  options={name: dict(p.option_values) for s in specs for name, _, p in s.parts
                           if p.option_values})
    probes = {g.group: draw_probes(len(g.pool), n, bootstrap, seed, f"{level}\x1f{g.group}") for g in groups if g.pool}
    for spec in specs:
        if progress:
            progress(spec.name)
        results = []
        for g in groups:
            m = len(g.candidates)
            base = GroupResult(g.group, spec.name, m, len(g.pool), None)
            if m < 2 or not g.pool:
                base.skipped = f"{m} candidate(s) and {len(g.pool)} pool case(s): nothing to rank"
                results.append(base)
                continue
            keys = []
            reason = None
            for part in spec.parts:
                plugin = part[2]
                if plugin.random_order:
                    keys.append(random_keys(m, bootstrap, seed, f"{level}\x1f{g.group}"))
                    continue
                values = _values(part, g)
                per_model = (~np.isnan(values)).sum(axis=1)
                if per_model.max() > 0 and (per_model == 0).any():
                    lacking = g.candidates[int(np.argmin(per_model))].label
                    reason = (f"{part[0]} has no value for {lacking} on any pool case while other candidates have "
                              f"({'its attributions of ' + part[1] + ' are missing' if part[1] else 'data missing'})")
                    break
                applicable = int((~np.isnan(values)).any(axis=0).sum())
                if applicable < MIN_APPLICABLE * len(g.pool):
                    kinds = ", ".join(plugin.applies_to)
                    reason = (f"{part[0]} gives a value on {applicable} of the {len(g.pool)} pool cases (it is "
                              f"defined for {kinds} inputs{' with stored attributions' * plugin.needs_attribution}; "
                              f"at least half must have one)")
                    break
                keys.append(plugin.direction * probe_means(values, probes[g.group]))
            if reason is not None:
                base.skipped = reason
                results.append(base)
                continue
            ranking = rank_group([c.truth for c in g.candidates], keys, ties)
            base.ranking = ranking
            if ranking.n_pairs:
                base.ci = probe_interval(ranking.probe_accuracy(), rounds,
                                         rng_for(seed, "group-interval", level, g.group, spec.name))
            results.append(base)
        out.results[spec.name] = results
        ranked = [r.ranking for r in results if r.ranking is not None and r.ranking.n_pairs]
        if ranked and all(r.tie_rate == 1.0 for r in ranked):
            out.notes.append(f"{spec.name} tied every pair on every probe: its value is the same for every model"
                             + (" (the built-in attribution methods keep special tokens fixed, so they give the "
                                "separator a score of 0; first-tok needs an estimator that scores it)"
                                if spec.parts[-1][0] == "first-tok" else ""))
    reference = {r.group: r.ranking for r in out.results.get(REFERENCE, [])}
    for name, results in out.results.items():
        scored = [r.ranking for r in results if r.ranking is not None]
        if not scored:
            continue
        refs = [reference.get(r.group) for r in results if r.ranking is not None]
        ref_rankings = [x for x in refs if x is not None] if name != REFERENCE else []
        if name != REFERENCE and REFERENCE in out.results and len(ref_rankings) != len(scored):
            out.notes.append(f"{name}: no comparison with {REFERENCE} ({REFERENCE} was not ranked on every group "
                             f"{name} was)")
        out.summaries[name] = summarize(scored, ref_rankings if len(ref_rankings) == len(scored) else None,
                                        rounds=rounds, seed=seed, key=f"{level}\x1f{name}")
    return out
