"""``beluga rank --zoo ZOO.toml``: rank any checkpoints on a labelled probe set, with no run behind them.

A zoo file names the checkpoints (Hugging Face model folders), the task they were trained for, the probe set (a
suite: its cases are the pool) and, optionally, the truth (another suite, whose pass rates are the true scores,
or a number per model). Every model predicts and attributes the probe set now; the ranking is the same as a
store's (``rank.rank_groups``), on one group.
"""

from __future__ import annotations

import json
import tomllib
from collections.abc import Iterator
from pathlib import Path
from typing import Any, cast

from pydantic import BaseModel, ConfigDict, Field, ValidationError, model_validator

from beluga_core.analysis.ranking.rank import Candidate, GroupData
from beluga_core.analysis.ranking.rank_inputs import case_labels
from beluga_core.contracts.signals import InputAttribution, Outcome, ProbeCase, Word
from beluga_core.core.constants import OUTCOME_NAMES
from beluga_core.core.errors import BelugaError
from beluga_core.core.hashing import digest


class ZooModel(BaseModel):
    model_config = ConfigDict(extra="forbid")

    name: str = Field(min_length=1, description="The model's name in the output.")
    path: str = Field(min_length=1, description="A Hugging Face model folder (relative to the zoo file).")
    truth: float | None = Field(None, ge=0, le=1, description="Its known true score (instead of a truth suite).")


class Zoo(BaseModel):
    """A zoo file (TOML)."""

    model_config = ConfigDict(extra="forbid")

    task: str = Field("classification", description="The task plugin the checkpoints were trained for.")
    probe: str = Field(min_length=1, description="Suite (file or builtin:NAME) whose cases are the probe pool.")
    truth: str | None = Field(None, description="Suite whose pass rates are the true scores (else each model's "
                                                "`truth`).")
    group: str | None = Field(None, description="LEVEL=GROUP: only the probe (and truth) cases of this group.")
    max_length: int = Field(128, ge=8, description="Truncation length in tokens.")
    pool_cap: int = Field(600, ge=0, description="At most this many probe cases (a seeded sample; 0: all).")
    attributions: list[str] = Field(default_factory=list, description="Attribution methods for the factors.")
    attribution_options: dict[str, dict[str, Any]] = Field(default_factory=dict, description=(
        "Per attribution method, its options (budgets: steps, samples)."))
    signal_options: dict[str, dict[str, Any]] = Field(default_factory=dict, description=(
        "Per signal, its options (e.g. [signal_options.window] words = [...])."))
    perturbations: int = Field(4, ge=0, description="Perturbed inputs attributed per INV/DIR case.")
    store: str | None = Field(None, description="Store to write the ranking to (relative to the zoo file).")
    models: list[ZooModel] = Field(min_length=2, description="The checkpoints ([[models]]).")

    @model_validator(mode="after")
    def _checks(self) -> Zoo:
        names = [m.name for m in self.models]
        dup = sorted({n for n in names if names.count(n) > 1})
        if dup:
            raise ValueError(f"models: names must be distinct, got {dup} more than once")
        if self.truth is None and any(m.truth is None for m in self.models):
            missing = [m.name for m in self.models if m.truth is None]
            raise ValueError(f"no truth for {missing}: give truth = SUITE or a truth per model")
        return self


def load_zoo(path: Path) -> Zoo:
    from beluga_core.config.load import locate_key
    from beluga_core.core.errors import format_validation_error

    try:
        text = path.read_text(encoding="utf-8")
        data = tomllib.loads(text)
    except FileNotFoundError:
        raise BelugaError("zoo file not found", source=path) from None
    except (tomllib.TOMLDecodeError, UnicodeDecodeError) as exc:
        raise BelugaError(f"cannot parse the zoo file: {exc}", source=path) from None
    try:
        zoo = Zoo.model_validate(data)
    except ValidationError as exc:
        raise BelugaError(format_validation_error(exc), source=path,
                          line=locate_key(text, tuple(exc.errors()[0].get("loc", ())))) from None
    _check_plugin_options(zoo, text, path)
    return zoo


def _check_plugin_options(zoo: Zoo, text: str, path: Path) -> None:
    """Each ``[signal_options.NAME]`` and ``[attribution_options.NAME]`` table checked by its plugin's Options
    now, at its line, not when the ranking reaches it."""
    from beluga_core.config.load import locate_key
    from beluga_core.contracts.registries import ATTRIBUTIONS, SIGNALS

    tables: list[tuple[str, str, dict[str, Any]]] = [
        *(("signal_options", name, values) for name, values in zoo.signal_options.items()),
        *(("attribution_options", name, values) for name, values in zoo.attribution_options.items())]
    for table, name, values in tables:
        try:
            if table == "signal_options":
                SIGNALS.get(name)(values)
            else:
                ATTRIBUTIONS.get(name)(values)
        except BelugaError as exc:
            # The plugin names the option options.KEY (a signal) or attributions.options.NAME.KEY (an estimator).
            parts = (exc.field or "").split(".")
            key = parts[1:] if parts[0] == "options" else parts[3:] if parts[:2] == ["attributions", "options"] else []
            loc = (table, name, *key)
            raise BelugaError(exc.message, source=path, line=locate_key(text, loc) or locate_key(text, loc[:2]),
                              field=".".join(loc)) from None


def _in_group(case: Any, group: str | None) -> bool:
    if group is None:
        return True
    level, _, name = group.partition("=")
    return (case.test_type if level == "test_type" else case.groups.get(level)) == name


def zoo_group(zoo: Zoo, where: Path, progress: Any = None) -> tuple[GroupData, str]:
    """Predict (and attribute) the probe set with every model; returns the one group and the probe suite name."""
    import random

    import numpy as np

    from beluga_core.attributions.compute import attribute, encoder_text, make_methods, probe_items
    from beluga_core.attributions.compute import tokenizer_id as tokenizer_key
    from beluga_core.config.schema import TaskSpec
    from beluga_core.contracts.attributions import word_scores
    from beluga_core.evaluation.evaluate import evaluate_cases
    from beluga_core.evaluation.suites import load_checked_suite
    from beluga_core.planning.plan import make_task
    from beluga_core.training.models import load_tokenizer, pick_device

    base = where.parent
    probe_suite = load_checked_suite(_relative(zoo.probe, base))
    pool = [c for c in probe_suite.cases if _in_group(c, zoo.group)]
    if not pool:
        raise BelugaError(f"no probe case{' in group ' + zoo.group if zoo.group else ''} in {zoo.probe}",
                          source=where, field="probe")
    if zoo.pool_cap and len(pool) > zoo.pool_cap:
        keep = sorted(random.Random(f"zoo\x1f{zoo.probe}").sample(range(len(pool)), zoo.pool_cap))
        pool = [pool[i] for i in keep]
    truth_cases = []
    truth_suite = None
    if zoo.truth is not None:
        truth_suite = load_checked_suite(_relative(zoo.truth, base))
        truth_cases = [c for c in truth_suite.cases if _in_group(c, zoo.group)]
        overlap = {json.dumps(c.inputs) for c in truth_cases} & {json.dumps(c.inputs) for c in pool}
        if overlap:
            raise BelugaError(f"{len(overlap)} probe case(s) have the same inputs as truth cases: the probe set must "
                              "be disjoint from the truth set", source=where, field="truth")
    device = pick_device("auto")
    space = probe_suite.header.label_space
    candidates: list[Candidate] = []
    per_method: dict[str, list[list[ProbeCase]]] = {"": [], **{m: [] for m in zoo.attributions}}
    estimators = make_methods(zoo.attributions, zoo.attribution_options)
    for spec in zoo.models:
        path = Path(_relative(spec.path, base))
        if not (path / "config.json").is_file():
            raise BelugaError(f"model '{spec.name}': not a model folder (a Hugging Face checkpoint with config.json)",
                              source=path)
        if progress:
            progress(spec.name)
        task = make_task(TaskSpec(name=zoo.task, suite=str(probe_suite.path), iid="none"), probe_suite)
        tokenizer = load_tokenizer(str(path))
        model = task.build_model(str(path), seed=0).to(device).eval()
        encoder = task.make_encoder(tokenizer, zoo.max_length)
        preds = task.predict_cases(model, encoder, pool, device)
        outcomes = evaluate_cases(pool, preds, label_space=space)
        truth = spec.truth
        n_truth = 0
        if truth_suite is not None:
            ttask = make_task(TaskSpec(name=zoo.task, suite=str(truth_suite.path), iid="none"), truth_suite)
            tout = evaluate_cases(truth_cases, ttask.predict_cases(model, encoder, truth_cases, device),
                                  label_space=truth_suite.header.label_space)
            scored = tout[tout >= 0]
            n_truth = len(scored)
            if not n_truth:
                raise BelugaError(f"model '{spec.name}': every truth case was skipped by its expectation, so it has no "
                                  "true score", source=where, field="truth")
            truth = float((scored == 1).mean())
        assert truth is not None
        candidates.append(Candidate(digest([spec.name, str(path)])[:16], spec.name, float(truth), n_truth))
        probs = preds.probs
        offsets = preds.offsets
        items = probe_items(pool, probe_suite.header.name, task, zoo.perturbations)
        words: dict[tuple[str, str, int], InputAttribution] = {}
        if estimators:
            import torch

            with torch.enable_grad():
                rows, _ = attribute(model, tokenizer, tokenizer_key(str(path), tokenizer, zoo.max_length, encoder),
                                    device, items, estimators, max_length=zoo.max_length,
                                    span=task.head_labels is None, model_text=encoder_text(encoder))
            for r in rows:
                specials = iter([t for t, seg in zip(r.x.tokens, r.x.segment_ids, strict=True) if seg < 0])
                words[(r.method, r.item.case_id, r.item.input_idx)] = InputAttribution(
                    r.method, tuple(_word(r.item.text, specials, w) for w in word_scores(r.x, r.scores)))
        for method in per_method:
            cases = []
            for k, c in enumerate(pool):
                p = tuple(np.asarray(probs[j], dtype=np.float64) if probs is not None else None
                          for j in range(int(offsets[k]), int(offsets[k + 1])))
                attr = {i: words[(method, c.id, i)] for i in range(len(c.inputs)) if (method, c.id, i) in words} \
                    if method else {}
                outcome = cast(Outcome, OUTCOME_NAMES[int(outcomes[k])])
                cases.append(ProbeCase(c.id, c.test_type, tuple(c.inputs), outcome, case_labels(c, space), p, attr))
            per_method[method].append(cases)
        del model
    return GroupData(zoo.group or probe_suite.header.name, candidates, [c.id for c in pool], per_method), \
        probe_suite.header.name


def _word(text: Any, specials: Iterator[str], w: tuple[int, int, int, float]) -> Word:
    """A word as the store's attribution_words view gives it: a special token's own string, else its text."""
    seg, start, end, score = w
    if seg < 0:
        return Word(seg, next(specials, "[SEP]"), score)
    parts = [text] if isinstance(text, str) else list(text)
    return Word(seg, parts[seg][start:end], score)


def _relative(value: str, base: Path) -> str:
    if value.startswith("builtin:"):
        return value
    p = Path(value).expanduser()
    return str(p if p.is_absolute() else base / p)
