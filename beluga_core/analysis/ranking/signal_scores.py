"""The built-in ranking signals (``beluga.signals``), after Singhal et al., "Assessing Out-of-Domain Language
Model Performance from Few Examples" (EACL 2023): a signal's mean over a probe of about ten labelled cases of a
group predicts how the models rank on that group.

- ``acc``, ``conf``, ``conf-gt`` (direction +1): the outcome, the confidence, the gold label's probability.
- ``random``: no value; ``beluga rank`` orders the models at random per probe (the chance baseline).
- The attribution factors (direction −1: attention paid to a heuristic cue predicts a worse model), all read on
  input 0's attribution of the predicted label, normalised per input first (option ``normalize``): ``max-diff``,
  ``sum-diff``, ``index-diff``, ``first-tok``, ``swap-avg``, ``swap-max-diff`` (text pairs), ``window`` (an MSGS
  feature word), ``const`` (HANS constituent triggers) and ``perturbation-focus`` (INV/DIR cases).

A word is what the run stored (``Word``: its pieces' scores summed); segment −1 is a special token ([CLS],
[SEP], <s>, </s>), segment 0 the text or a pair's first text a, segment 1 a pair's second text b. "acc+FACTOR"
(accuracy first, the factor breaking ties) is no plugin: ``beluga rank`` combines two signals itself.
"""

from __future__ import annotations

import difflib
import re
from collections.abc import Sequence
from dataclasses import replace
from typing import Any, ClassVar, Literal

import numpy as np
from pydantic import Field, field_validator, model_validator

from beluga_core.contracts.options import Options
from beluga_core.contracts.signals import InputAttribution, InputKind, ProbeCase, Signal, Word

_SPECIAL = -1
HANS_CONSTITUENT_TRIGGERS = ["unless", "if", "whether", "although", "though", "because", "since", "while",
                             "in case", "probably", "supposedly", "hopefully", "maybe", "perhaps"]


# --- shared helpers -------------------------------------------------------------------------------------------

def _normalized(attribution: InputAttribution, how: str) -> list[Word]:
    """The words of one input with their scores normalised over that input: ``l1`` divides by the sum of |score|
    over all its words (special tokens included), ``max`` by the largest |score|, ``none`` keeps them; a vector
    of zeros stays zeros."""
    words = list(attribution.words)
    scores = [abs(w.score) for w in words]
    scale = sum(scores) if how == "l1" else max(scores, default=0.0) if how == "max" else 1.0
    if not scale or how == "none":
        return words
    return [replace(w, score=w.score / scale) for w in words]


def _content(words: Sequence[Word]) -> list[Word]:
    """The non-special words, in order (across segments)."""
    return [w for w in words if w.segment != _SPECIAL]


def _lower(words: Sequence[Word]) -> list[str]:
    return [w.text.lower() for w in words]


def _sides(words: Sequence[Word]) -> tuple[list[Word], list[Word]] | None:
    """A pair's words of text a (segment 0) and of text b (segment 1); None when the input is not a pair."""
    a = [w for w in words if w.segment == 0]
    b = [w for w in words if w.segment == 1]
    return (a, b) if a and b else None


def _unaligned(x: Sequence[str], y: Sequence[str]) -> tuple[list[int], list[int]]:
    """The positions of ``x`` and of ``y`` outside the longest-matching-block alignment of the two sequences
    (``difflib.SequenceMatcher``, no junk heuristic), in order."""
    in_x: set[int] = set()
    in_y: set[int] = set()
    for block in difflib.SequenceMatcher(None, x, y, autojunk=False).get_matching_blocks():
        in_x.update(range(block.a, block.a + block.size))
        in_y.update(range(block.b, block.b + block.size))
    return [i for i in range(len(x)) if i not in in_x], [j for j in range(len(y)) if j not in in_y]


def _swapped(a: Sequence[Word], b: Sequence[Word]) -> tuple[list[Word], list[Word]]:
    """The swapped words of a pair: words of a that also occur (lower-cased) in b but lie outside the alignment
    of the two word sequences, and symmetrically for b."""
    la, lb = _lower(a), _lower(b)
    out_a, out_b = _unaligned(la, lb)
    in_a, in_b = set(la), set(lb)
    return [a[i] for i in out_a if la[i] in in_b], [b[j] for j in out_b if lb[j] in in_a]


# --- outcome and probability signals --------------------------------------------------------------------------

class Acc(Signal):
    """Accuracy on the probe: 1 for a passed case, 0 for a failed one; a skipped case has no outcome (None). The
    paper's strongest baseline."""

    direction: ClassVar[int] = 1
    description: ClassVar[str] = "accuracy: 1 for a passed case, 0 for a failed one"

    def value(self, case: ProbeCase) -> float | None:
        return {"pass": 1.0, "fail": 0.0}.get(case.outcome)


class Conf(Signal):
    """Confidence: the mean over the case's inputs (those whose probabilities were kept) of the largest class
    probability, whatever the gold label; None without probabilities."""

    direction: ClassVar[int] = 1
    description: ClassVar[str] = "confidence: mean over the inputs of the largest class probability"

    def value(self, case: ProbeCase) -> float | None:
        tops = [float(np.max(p)) for p in case.probs if p is not None and p.size]
        return float(np.mean(tops)) if tops else None


class ConfGT(Signal):
    """Confidence in the gold label: the mean over the inputs that have both a gold label and probabilities of
    the gold class's probability; None when no input has both."""

    direction: ClassVar[int] = 1
    applies_to: ClassVar[tuple[InputKind, ...]] = ("labelled",)
    description: ClassVar[str] = "mean probability of the gold label over the labelled inputs"

    def value(self, case: ProbeCase) -> float | None:
        gold = [float(p[label]) for label, p in zip(case.labels, case.probs, strict=True)
                if label is not None and p is not None and 0 <= label < p.size]
        return float(np.mean(gold)) if gold else None


class RandomOrder(Signal):
    """The chance baseline: no value per case; ``beluga rank`` orders the models at random per probe."""

    direction: ClassVar[int] = 1
    random_order: ClassVar[bool] = True
    description: ClassVar[str] = "chance baseline: the models in a random order per probe"

    def value(self, case: ProbeCase) -> float | None:
        return None


# --- attribution factors --------------------------------------------------------------------------------------

class FactorOptions(Options):
    normalize: Literal["l1", "none", "max"] = Field("l1", description=(
        "How each input's word scores are scaled before the factor: by their absolute sum (l1), by the largest "
        "absolute score (max), or not at all (none)."))


class _Factor(Signal):
    """An attribution factor: a number read on input 0's attribution, normalised per input (option
    ``normalize``: ``l1`` (default), ``max`` or ``none``); no attribution of input 0 → None. Higher means more
    attention on the heuristic cue, hence a worse model (direction −1)."""

    direction: ClassVar[int] = -1
    needs_attribution: ClassVar[bool] = True
    Options = FactorOptions
    options: FactorOptions

    def __init__(self, options: dict[str, Any] | None = None) -> None:
        super().__init__(options)
        self.normalize: str = self.options.normalize

    def value(self, case: ProbeCase) -> float | None:
        attribution = case.attributions.get(0)
        return None if attribution is None else self.factor(_normalized(attribution, self.normalize))

    def factor(self, words: list[Word]) -> float | None:
        """The factor on input 0's normalised words."""
        raise NotImplementedError


class _PairFactor(_Factor):
    """A factor of a text pair's two sides (a: segment 0, b: segment 1); None on a single text."""

    applies_to: ClassVar[tuple[InputKind, ...]] = ("pair",)

    def factor(self, words: list[Word]) -> float | None:
        sides = _sides(words)
        return None if sides is None else self.pair_factor(words, *sides)

    def pair_factor(self, words: list[Word], a: list[Word], b: list[Word]) -> float | None:
        """The factor on the pair's normalised words (all of them, and each side's)."""
        raise NotImplementedError


class MaxDiff(_PairFactor):
    """The largest word score in text a minus the largest in text b: a model that leans on one side of a pair
    (a hypothesis-only or premise-only cue) scores high. None on a single text."""

    description: ClassVar[str] = "max word attribution in text a minus max in text b"

    def pair_factor(self, words: list[Word], a: list[Word], b: list[Word]) -> float | None:
        return max(w.score for w in a) - max(w.score for w in b)


class SumDiff(_PairFactor):
    """The total word score of text a minus that of text b (special tokens in neither). None on a single
    text."""

    description: ClassVar[str] = "summed word attribution of text a minus that of text b"

    def pair_factor(self, words: list[Word], a: list[Word], b: list[Word]) -> float | None:
        return sum(w.score for w in a) - sum(w.score for w in b)


class IndexDiffOptions(FactorOptions):
    variant: Literal["signed", "abs"] = Field("signed", description=(
        "signed: the sum of the shared words' differences; abs: the sum of their absolute differences."))


class IndexDiff(_PairFactor):
    """Attention to the words a pair shares (the lexical-overlap heuristic): over the lower-cased words that
    occur in both a and b, the summed score of their occurrences in a minus that in b; option ``variant``
    ``signed`` (default) or ``abs`` (the sum of each word's absolute difference). The paper leaves repeated
    words open: every occurrence counts. A pair sharing no word gets 0 (the empty sum); a single text None."""

    description: ClassVar[str] = "attribution on words shared by a and b: their score in a minus in b"
    Options = IndexDiffOptions
    options: IndexDiffOptions

    def __init__(self, options: dict[str, Any] | None = None) -> None:
        super().__init__(options)
        self.variant: str = self.options.variant

    def pair_factor(self, words: list[Word], a: list[Word], b: list[Word]) -> float | None:
        in_b = set(_lower(b))
        # In a's word order (not a set's), so the sum is the same float on every run.
        diffs: dict[str, float] = {w: 0.0 for w in dict.fromkeys(_lower(a)) if w in in_b}
        for sign, side in ((1.0, a), (-1.0, b)):
            for w in side:
                key = w.text.lower()
                if key in diffs:
                    diffs[key] += sign * w.score
        return sum(abs(d) for d in diffs.values()) if self.variant == "abs" else sum(diffs.values())


class FirstTok(_PairFactor):
    """The score of the separator after text a: the first special token after the first word of segment 0
    ([SEP] for BERT and MiniLM, the first of RoBERTa's </s></s>). The paper's token is BERT's [SEP]; we take the
    special token that closes text a, whatever the tokenizer. None on a single text or without one."""

    description: ClassVar[str] = "attribution of the separator token after text a"

    def pair_factor(self, words: list[Word], a: list[Word], b: list[Word]) -> float | None:
        start = next(i for i, w in enumerate(words) if w.segment == 0)
        return next((w.score for w in words[start + 1:] if w.segment == _SPECIAL), None)


class SwapAvg(_PairFactor):
    """Attention to swapped words (the PAWS word-swap heuristic): a word of a is swapped when it also occurs in b
    (lower-cased) but outside the longest-matching-block alignment of the two word sequences
    (``difflib.SequenceMatcher``, no junk heuristic), and symmetrically for b; the mean score over the swapped
    words of both texts. The paper does not fix the alignment; this one is deterministic. None without any."""

    description: ClassVar[str] = "mean attribution of the words swapped between a and b"

    def pair_factor(self, words: list[Word], a: list[Word], b: list[Word]) -> float | None:
        swapped = [w.score for side in _swapped(a, b) for w in side]
        return float(np.mean(swapped)) if swapped else None


class SwapMaxDiff(_PairFactor):
    """The swapped word (as in ``swap-avg``) of largest |score| in a, signed, minus the same in b (the first one
    on a tie); a text without a swapped word contributes 0. None when neither has one."""

    description: ClassVar[str] = "strongest swapped-word attribution in a minus that in b"

    def pair_factor(self, words: list[Word], a: list[Word], b: list[Word]) -> float | None:
        in_a, in_b = _swapped(a, b)
        if not in_a and not in_b:
            return None
        top_a = max((w.score for w in in_a), key=abs, default=0.0)
        top_b = max((w.score for w in in_b), key=abs, default=0.0)
        return top_a - top_b


class WindowOptions(FactorOptions):
    """The feature word is required: ``words``, ``regex`` or both."""

    words: list[str] = Field(default_factory=list, description=(
        "Feature words (lower-cased on reading); this, regex or both is required."))
    regex: str = Field("", description=(
        "A feature word fully matches this regular expression ((?i): any case); this, words or both is required."))
    half_width: int = Field(2, ge=0, description="Words either side of the feature word in the window.")

    @field_validator("regex")
    @classmethod
    def _compiles(cls, value: str) -> str:
        try:
            re.compile(value)
        except re.error as exc:
            raise ValueError(f"not a regular expression: {exc}") from None
        return value

    @model_validator(mode="after")
    def _has_feature(self) -> WindowOptions:
        if not self.words and not self.regex:
            raise ValueError("give the feature word: option 'words' (a list) or 'regex' (or both)")
        return self


class Window(_Factor):
    """MSGS window factor: minus the summed score of the ``half_width`` (default 2) words either side of the
    feature word and itself, among input 0's non-special words, the window clipped to the sequence. The feature
    word is the first non-special word whose lower-cased text is in ``words`` or whose text (as it stands;
    write ``(?i)`` for case-insensitive) fully matches ``regex``. The paper defines the factor as minus the
    window sum and every factor has direction −1: more attention near the linguistic feature ⇒ a lower value ⇒
    a better model, as intended. None without a feature word."""

    applies_to: ClassVar[tuple[InputKind, ...]] = ("text", "pair")
    description: ClassVar[str] = "minus the attribution in a window around an MSGS feature word"
    Options = WindowOptions
    options: WindowOptions

    def __init__(self, options: dict[str, Any] | None = None) -> None:
        super().__init__(options)
        self.words = {w.lower() for w in self.options.words}
        self.half_width = self.options.half_width
        self.regex = re.compile(self.options.regex) if self.options.regex else None

    def _is_feature(self, text: str) -> bool:
        return text.lower() in self.words or (self.regex is not None and self.regex.fullmatch(text) is not None)

    def factor(self, words: list[Word]) -> float | None:
        content = _content(words)
        m = next((i for i, w in enumerate(content) if self._is_feature(w.text)), None)
        if m is None:
            return None
        window = content[max(0, m - self.half_width):m + self.half_width + 1]
        return -sum(w.score for w in window)


class ConstOptions(FactorOptions):
    words: list[str] = Field(default_factory=lambda: list(HANS_CONSTITUENT_TRIGGERS), description=(
        "The trigger words and phrases (a phrase matches consecutive words; lower-cased on reading)."))


class Const(_Factor):
    """HANS constituent heuristic: the summed score of the trigger words in text a (segment 0) — by default the
    HANS constituent triggers (subordinating conjunctions and adverbs such as "unless", "if", "in case",
    "probably"). A multi-word entry matches consecutive words; a word covered by several entries counts once.
    None when no trigger occurs."""

    applies_to: ClassVar[tuple[InputKind, ...]] = ("pair", "text")
    description: ClassVar[str] = "attribution of the HANS constituent trigger words in text a"
    Options = ConstOptions
    options: ConstOptions

    def __init__(self, options: dict[str, Any] | None = None) -> None:
        super().__init__(options)
        self.triggers = [tuple(entry.lower().split()) for entry in self.options.words if entry.split()]

    def factor(self, words: list[Word]) -> float | None:
        a = [w for w in words if w.segment == 0]
        texts = _lower(a)
        covered: set[int] = set()
        for i in range(len(texts)):
            for trigger in self.triggers:
                if tuple(texts[i:i + len(trigger)]) == trigger:
                    covered.update(range(i, i + len(trigger)))
        return sum(a[i].score for i in sorted(covered)) if covered else None


class PerturbationFocusOptions(FactorOptions):
    max_perturbations: int = Field(4, ge=1, description=(
        "Perturbed inputs read at most (runs attribute at most this many)."))


class PerturbationFocus(_Factor):
    """Attention to what a perturbation changed, on an INV or DIR case: for each perturbed input k (1 to
    ``max_perturbations``, default 4: runs attribute at most that many perturbed inputs) with an attribution,
    the words outside the alignment of the original's and the perturbation's lower-cased non-special words
    (``difflib.SequenceMatcher``, no junk heuristic) are the changed ones; its mass is the mean of the summed
    |score| of the changed words in the original and in the perturbation (each input normalised on its own, so
    with ``l1`` a fraction of its total). The value is the mean mass over the perturbations. Not in the paper:
    beluga's extension to its perturbation tests. None without input 0's attribution or any perturbed one's."""

    applies_to: ClassVar[tuple[InputKind, ...]] = ("perturbation",)
    description: ClassVar[str] = "attribution mass on the words a perturbation changed (INV/DIR cases)"
    Options = PerturbationFocusOptions
    options: PerturbationFocusOptions

    def __init__(self, options: dict[str, Any] | None = None) -> None:
        super().__init__(options)
        self.max_perturbations = self.options.max_perturbations

    def value(self, case: ProbeCase) -> float | None:
        original = case.attributions.get(0)
        if case.test_type.lower() not in ("inv", "dir") or len(case.inputs) < 2 or original is None:
            return None
        before = _content(_normalized(original, self.normalize))
        masses = []
        for k in range(1, min(len(case.inputs), self.max_perturbations + 1)):
            perturbed = case.attributions.get(k)
            if perturbed is None:
                continue
            after = _content(_normalized(perturbed, self.normalize))
            out_before, out_after = _unaligned(_lower(before), _lower(after))
            masses.append((sum(abs(before[i].score) for i in out_before)
                           + sum(abs(after[j].score) for j in out_after)) / 2)
        return float(np.mean(masses)) if masses else None
