"""Attributing a model's inputs: the same code inside a run (a fold's cases, before its weights are discarded)
and in ``beluga explain`` (a stored or saved model, afterwards).

Every input is tokenized as the model reads it; its target is the model's own prediction (default) or its gold
label; each estimator's scores are normalised as its options say. LIME and Kernel SHAP draw from a generator
seeded by (seed, case, input, method), so the same input gets the same scores in a run and afterwards, whatever
else was attributed.
"""

from __future__ import annotations

import hashlib
import json
import random
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import torch

from beluga_core.attributions.attribution_context import ModelContext, tokenize
from beluga_core.contracts.attributions import Attribution, Target, TokenizedInput, normalize
from beluga_core.contracts.registries import ATTRIBUTIONS
from beluga_core.contracts.tasks import Task
from beluga_core.core.errors import BelugaError
from beluga_core.core.hashing import digest
from beluga_core.data.suite.suite_schema import Case, Input


@dataclass(frozen=True)
class Item:
    """One input to attribute: where it comes from, and its gold head class (None: unknown)."""

    suite: str
    case_id: str
    input_idx: int
    text: Input
    gold: int | None = None


@dataclass
class AttributedInput:
    """One attribution row: an item's tokenization, the estimator and options, the target and scores."""

    item: Item
    method: str
    options: dict[str, Any]
    target: str
    predicted: str
    tokenizer: str
    x: TokenizedInput
    scores: np.ndarray

    @property
    def input_digest(self) -> str:
        return input_digest(self.item.text)


def input_digest(text: Input) -> str:
    return hashlib.sha256(json.dumps(text if isinstance(text, str) else list(text)).encode("utf-8")).hexdigest()[:32]


def tokenizer_id(model_name: str, tokenizer: Any, max_length: int, encoder: Any = None) -> str:
    """Identity of a tokenization: same tokenizer, truncation and text rewriting (the task encoder's
    ``model_text``, e.g. the relation task's entity markers) → same tokens for the same text."""
    rewriting = getattr(encoder, "disk_format", None) if encoder_text(encoder) is not None else None
    return digest([model_name, type(tokenizer).__name__, len(tokenizer), max_length,
                   *([rewriting or type(encoder).__name__] if encoder_text(encoder) is not None else [])])[:32]


def encoder_text(encoder: Any) -> Callable[[str], str] | None:
    """The task encoder's rewriting of a text before tokenization (``model_text``), if it has one: attributions
    tokenize through it, so that a model is explained on the tokens it reads."""
    rewrite = getattr(encoder, "model_text", None)
    return rewrite if callable(rewrite) else None


def make_methods(names: Sequence[str], options: dict[str, dict[str, Any]]) -> dict[str, Attribution]:
    """The estimators, each with its defaults updated by the options given for it (a run's come from
    ``config.load.attribution_options``, with the cheaper run budgets)."""
    return {name: ATTRIBUTIONS.get(name)(options.get(name, {})) for name in names}


def item_rng(seed: int, item: Item, method: str) -> np.random.Generator:
    key = hashlib.sha256(f"{seed}\x1f{item.suite}\x1f{item.case_id}\x1f{item.input_idx}\x1f{method}".encode()).digest()
    return np.random.default_rng([int.from_bytes(key[i:i + 4], "little") for i in range(0, 16, 4)])


def attribute(model: torch.nn.Module, tokenizer: Any, tokenizer_key: str, device: torch.device, items: Sequence[Item],
              methods: dict[str, Attribution], *, max_length: int, span: bool = False,
              model_text: Callable[[str], str] | None = None) -> tuple[list[AttributedInput], int]:
    """Attribute every item with every method; returns the rows and how many (item, method) were skipped (a
    gold target where the item's gold is not a class of the head). ``model_text``: the task encoder's rewriting
    of a text (``encoder_text``), which ``tokenizer_key`` must reflect (``tokenizer_id(..., encoder)``)."""
    rows: list[AttributedInput] = []
    skipped = 0
    for name, method in methods.items():
        if span and not method.spans:
            raise BelugaError(f"attribution '{name}' explains classifiers only; for a span model (reading) use ig "
                              "or occlusion", field="attributions.methods")
    contexts: dict[str, ModelContext] = {}
    for item in items:
        x = tokenize(tokenizer, item.text, max_length, span=span, model_text=model_text)
        for name, method in methods.items():
            objective = method.option_values.get("objective", "prob")
            ctx = contexts.setdefault(objective, ModelContext(model, tokenizer, device, span=span,
                                                              objective=objective))
            predicted = ctx.predict(x)
            target: Target
            if method.option_values["target"] == "gold":
                if span or item.gold is None:
                    skipped += 1
                    continue
                target = item.gold
            else:
                target = predicted
            scores = method.attribute(ctx, x, target, item_rng(int(method.option_values["seed"]), item, name))
            rows.append(AttributedInput(item, name, dict(method.option_values), _text(target), _text(predicted),
                                        tokenizer_key, x, normalize(scores, str(method.option_values["normalize"]))))
    return rows, skipped


def _text(target: Target) -> str:
    return f"{target[0]}:{target[1]}" if isinstance(target, tuple) else str(target)


def gold_class(task: Task[Any], case: Case, input_idx: int) -> int | None:
    """The head class of a case input's gold label, when it has one the head can output."""
    label = case.label[input_idx] if isinstance(case.label, list) else case.label
    if label is None:
        return None
    class_id = getattr(task, "class_id", None)
    head_class = getattr(task, "head_class", None)
    if class_id is None or head_class is None:
        return None
    try:
        return int(head_class(class_id(label, case), case))
    except (BelugaError, ValueError, IndexError, TypeError):
        return None


def is_perturbation(case: Case) -> bool:
    """An INV/DIR case: an original and its perturbations."""
    return case.test_type.upper() in ("INV", "DIR") and len(case.inputs) > 1


def probe_items(cases: Sequence[Case], suite: str, task: Task[Any], perturbations: int) -> list[Item]:
    """The inputs of few-shot probe cases to attribute: an INV/DIR case's original and at most ``perturbations``
    perturbed inputs (perturbation focus reads them), any other case's first input."""
    return [Item(suite, c.id, i, x, gold_class(task, c, i)) for c in cases
            for i, x in enumerate(c.inputs[:1 + perturbations] if is_perturbation(c) else c.inputs[:1])]


def select_items(cases: Sequence[Case], outcomes: dict[str, str], suite: str, task: Task[Any], *, which: Any,
                 inputs: str, cap: int, seed_key: str) -> list[Item]:
    """The items a fold attributes: its eval cases (``heldout_test``), those it fails (``failing``), or those in
    named groups (a list: a case belongs when any of its groups, or its test type, is named); their first input
    or all of them; at most ``cap`` (a seeded sample, in case order)."""
    if which == "none":
        return []
    if which == "heldout_test":
        chosen = list(cases)
    elif which == "failing":
        chosen = [c for c in cases if outcomes.get(c.id) == "fail"]
    else:
        names = set(which)
        chosen = [c for c in cases if names & ({*c.groups.values(), c.test_type})]
    items = [Item(suite, c.id, i, x, gold_class(task, c, i)) for c in chosen
             for i, x in enumerate(c.inputs[:1] if inputs == "first" else c.inputs)]
    if cap and len(items) > cap:
        keep = sorted(random.Random(seed_key).sample(range(len(items)), cap))
        items = [items[i] for i in keep]
    return items
