"""The ranking-signal plugin kind: a number per (model, probe case) whose mean over a few labelled cases of a
group no model saw predicts how the models rank on that group.

A plugin (``beluga.signals``) is one class: ``value(case)`` reads what one model did on one probe case — its
outcome, its class probabilities per input, the attribution of its predicted label per input — and returns a
float, or ``None`` where the signal does not apply to that case (a pair factor on a single text, CONF-GT on a
case without a label). ``beluga rank`` averages the values over each probe, orders the models by
``direction × mean`` and scores that order against the models' true pass rates.

``direction`` is fixed by the plugin, never chosen on the data: +1 when a higher mean predicts a better model
(ACC, CONF), −1 when it predicts a worse one (the attribution "factors": attention paid to a heuristic cue).
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from dataclasses import dataclass, field
from typing import Any, ClassVar, Literal

import numpy as np

from beluga_core.contracts.options import DeclaresOptions, NoOptions, PluginOptions, checked_options
from beluga_core.data.suite.suite_schema import Input

InputKind = Literal["text", "pair", "perturbation", "labelled", "any"]
Outcome = Literal["pass", "fail", "skip"]


@dataclass(frozen=True)
class Word:
    """One word of an attributed input: its segment (0 or 1; −1 for a special token such as [SEP]), its text as
    it stands in the input (a special token's own string), and its score (the sum over its word pieces)."""

    segment: int
    text: str
    score: float


@dataclass(frozen=True)
class InputAttribution:
    """The attribution of one input for the label the model predicted, word by word in input order (special
    tokens included), as the run stored it (the estimator's own normalisation)."""

    method: str
    words: tuple[Word, ...]


@dataclass(frozen=True)
class ProbeCase:
    """What one model did on one probe case.

    ``labels`` are per input the gold class as an index into ``probs`` (None: no gold label, or one outside the
    model's classes); ``probs`` per input the class probabilities (None where not kept); ``attributions`` per input
    index the attribution of the predicted label by the method being ranked (empty without one).
    """

    case_id: str
    test_type: str
    inputs: tuple[Input, ...]
    outcome: Outcome
    labels: tuple[int | None, ...]
    probs: tuple[np.ndarray | None, ...]
    attributions: dict[int, InputAttribution] = field(default_factory=dict)


class Signal(DeclaresOptions, ABC):
    """Base of every ranking signal.

    Class variables: ``direction`` (+1 / −1, see the module), ``needs_attribution`` (the value reads
    ``attributions``: ``beluga rank`` runs the signal once per stored attribution method, named
    ``METHOD:SIGNAL``), ``applies_to`` (the input kinds it is defined for: ``text``, ``pair`` (a text pair),
    ``perturbation`` (an INV/DIR case: an original and its perturbations), ``labelled`` (a gold label), ``any``),
    ``random_order`` (not a value per case: ``beluga rank`` orders the models at random per probe, never tying),
    ``Options`` (its options, one strict pydantic model: ``self.options`` is the validated instance,
    ``self.option_values`` the values as a dict, stored with a ranking). ``value`` returning None for a case leaves
    it out of that probe's mean. A signal written before Options (a ``defaults`` dict) gets the dict as
    ``self.options``, its names checked.
    """

    Options: ClassVar[type[PluginOptions] | None] = NoOptions
    direction: ClassVar[int] = 1
    needs_attribution: ClassVar[bool] = False
    applies_to: ClassVar[tuple[InputKind, ...]] = ("any",)
    random_order: ClassVar[bool] = False
    description: ClassVar[str] = ""

    def __init__(self, options: dict[str, Any] | None = None) -> None:
        given = dict(options or {})
        # Validated by the one options check; its errors name the option as ``options.KEY``.
        self.options: Any = checked_options(type(self), given, "options")
        self.option_values: dict[str, Any] = {**self.defaults, **given}

    @abstractmethod
    def value(self, case: ProbeCase) -> float | None:
        """The signal on one case (None: it does not apply to this case)."""
