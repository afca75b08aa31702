"""Built-in ranking signals: known answers, worked out by hand in the comments, on hand-built probe cases (words
and scores written directly, special tokens included; no model): per-input l1/max normalisation, every
attribution factor, the swap alignment, window clipping, multi-word triggers, perturbation focus on a name swap,
acc/conf/conf-gt with skips and unlabelled inputs, and loading every name from the registry."""

from __future__ import annotations

from typing import Any, Literal

import numpy as np
import pytest

from beluga_core.analysis.ranking.signal_scores import (
    Acc,
    Conf,
    ConfGT,
    Const,
    FirstTok,
    IndexDiff,
    MaxDiff,
    PerturbationFocus,
    RandomOrder,
    SumDiff,
    SwapAvg,
    SwapMaxDiff,
    Window,
    _swapped,
)
from beluga_core.contracts.registries import SIGNALS
from beluga_core.contracts.signals import InputAttribution, ProbeCase, Word
from beluga_core.core.errors import BelugaError
from beluga_core.data.suite.suite_schema import Input

NONE = {"normalize": "none"}


def words(*spec: tuple[int, str, float]) -> InputAttribution:
    return InputAttribution("ig", tuple(Word(seg, text, score) for seg, text, score in spec))


def bert_pair(a: list[tuple[str, float]], b: list[tuple[str, float]], cls: float = 0.0, sep1: float = 0.0,
              sep2: float = 0.0) -> InputAttribution:
    """[CLS] a [SEP] b [SEP], one word per (text, score)."""
    return words((-1, "[CLS]", cls), *[(0, t, s) for t, s in a], (-1, "[SEP]", sep1),
                 *[(1, t, s) for t, s in b], (-1, "[SEP]", sep2))


def bert_text(a: list[tuple[str, float]], cls: float = 0.0, sep: float = 0.0) -> InputAttribution:
    return words((-1, "[CLS]", cls), *[(0, t, s) for t, s in a], (-1, "[SEP]", sep))


def case(*attributions: InputAttribution | None, inputs: tuple[Input, ...] | None = None, test_type: str = "MFT",
         outcome: Literal["pass", "fail", "skip"] = "pass", labels: tuple[int | None, ...] | None = None,
         probs: tuple[np.ndarray | None, ...] | None = None) -> ProbeCase:
    n = len(inputs) if inputs is not None else max(len(attributions), 1)
    return ProbeCase(case_id="c", test_type=test_type, inputs=inputs or tuple(f"x{i}" for i in range(n)),
                     outcome=outcome, labels=labels or (None,) * n, probs=probs or (None,) * n,
                     attributions={i: a for i, a in enumerate(attributions) if a is not None})


# --- normalisation and the simple pair factors ----------------------------------------------------------------

# [CLS] the cat [SEP] a cat [SEP] with raw scores 1, 2, −3, 4, 1, 5, −4.
# Σ|score| over all words, special tokens included = 1+2+3+4+1+5+4 = 20, so l1 gives
# [CLS] .05, the .10, cat −.15, [SEP] .20, a .05, cat .25, [SEP] −.20.
PAIR = bert_pair([("the", 2.0), ("cat", -3.0)], [("a", 1.0), ("cat", 5.0)], cls=1.0, sep1=4.0, sep2=-4.0)


def test_max_diff_sum_diff_and_first_tok_under_each_normalisation() -> None:
    c = case(PAIR)
    # l1: max over a = max(.10, −.15) = .10; max over b = max(.05, .25) = .25 → .10 − .25 = −.15
    assert MaxDiff().value(c) == pytest.approx(-0.15)
    # l1: Σa = .10 − .15 = −.05; Σb = .05 + .25 = .30 → −.05 − .30 = −.35 (special tokens in neither)
    assert SumDiff().value(c) == pytest.approx(-0.35)
    # the first special token after "the" (the first segment-0 word) is the first [SEP]: 4/20 = .20
    assert FirstTok().value(c) == pytest.approx(0.20)
    # none: max 2 − max 5 = −3; (2 − 3) − (1 + 5) = −7; [SEP] = 4
    assert MaxDiff(NONE).value(c) == pytest.approx(-3.0)
    assert SumDiff(NONE).value(c) == pytest.approx(-7.0)
    assert FirstTok(NONE).value(c) == pytest.approx(4.0)
    # max: the largest |score| is 5 → max-diff (2 − 5)/5 = −.6; sum-diff −7/5 = −1.4
    assert MaxDiff({"normalize": "max"}).value(c) == pytest.approx(-0.6)
    assert SumDiff({"normalize": "max"}).value(c) == pytest.approx(-1.4)


def test_a_zero_attribution_stays_zero_and_missing_or_single_text_inputs_give_none() -> None:
    zero = bert_pair([("the", 0.0)], [("cat", 0.0)])
    # Σ|score| = 0: no division, every score stays 0 → 0 − 0 = 0
    assert SumDiff().value(case(zero)) == 0.0
    assert MaxDiff().value(case(zero)) == 0.0
    single = case(bert_text([("the", 1.0), ("cat", 2.0)], sep=3.0))
    for factor in (MaxDiff(), SumDiff(), FirstTok(), IndexDiff(), SwapAvg(), SwapMaxDiff()):
        assert factor.value(single) is None, type(factor).__name__    # a pair factor on a single text
        assert factor.value(case(None)) is None, type(factor).__name__  # no attribution of input 0


def test_first_tok_takes_the_separator_after_text_a_for_roberta() -> None:
    # <s> x </s> </s> y </s>, no normalisation: the first special token after x is the first </s> = 2
    roberta = words((-1, "<s>", 9.0), (0, "x", 1.0), (-1, "</s>", 2.0), (-1, "</s>", 3.0), (1, "y", 4.0),
                    (-1, "</s>", 5.0))
    assert FirstTok(NONE).value(case(roberta)) == pytest.approx(2.0)
    # no special token after text a → None
    bare = words((0, "x", 1.0), (1, "y", 4.0))
    assert FirstTok(NONE).value(case(bare)) is None


def test_index_diff_signed_and_abs() -> None:
    # a = "The cat saw the dog", b = "the dog ran"; scores a: The 1, cat 2, saw 3, the 4, dog −1;
    # b: the 2, dog 3, ran 5; special tokens 0. Shared lower-cased words: {the, dog}.
    # the: a 1 + 4 = 5, b 2 → +3;  dog: a −1, b 3 → −4.
    att = bert_pair([("The", 1.0), ("cat", 2.0), ("saw", 3.0), ("the", 4.0), ("dog", -1.0)],
                    [("the", 2.0), ("dog", 3.0), ("ran", 5.0)])
    c = case(att)
    assert IndexDiff(NONE).value(c) == pytest.approx(-1.0)                       # 3 + (−4)
    assert IndexDiff({**NONE, "variant": "abs"}).value(c) == pytest.approx(7.0)  # |3| + |−4|
    # l1: Σ|score| = 1+2+3+4+1+2+3+5 = 21 → signed −1/21, abs 7/21 = 1/3
    assert IndexDiff().value(c) == pytest.approx(-1 / 21)
    assert IndexDiff({"variant": "abs"}).value(c) == pytest.approx(1 / 3)
    # no shared word: the empty sum
    assert IndexDiff(NONE).value(case(bert_pair([("cat", 1.0)], [("dog", 2.0)]))) == 0.0
    with pytest.raises(BelugaError, match="variant"):
        IndexDiff({"variant": "squared"})


# --- swaps ------------------------------------------------------------------------------------------------------

def test_swap_detection_and_swap_factors() -> None:
    # a = how do i learn python, b = how do python learn i. SequenceMatcher's longest match over the whole is
    # "how do" (a0, b0, size 2); left of it nothing; right of it a[2:5] = i learn python, b[2:5] = python learn i
    # have only length-1 matches, and the first in a is "i" (a2 ↔ b4); right of that b is exhausted, left of it
    # a is empty. Blocks (0,0,2), (2,4,1): "i" is aligned, learn/python are swapped on both sides.
    a = [("how", 1.0), ("do", 2.0), ("i", 3.0), ("learn", 4.0), ("python", -6.0)]
    b = [("how", 1.0), ("do", 1.0), ("python", 5.0), ("learn", 2.0), ("i", 9.0)]
    att = bert_pair(a, b)
    side_a = [w for w in att.words if w.segment == 0]
    side_b = [w for w in att.words if w.segment == 1]
    in_a, in_b = _swapped(side_a, side_b)
    assert [w.text for w in in_a] == ["learn", "python"]
    assert [w.text for w in in_b] == ["python", "learn"]
    c = case(att)
    # mean(4, −6, 5, 2) = 5/4
    assert SwapAvg(NONE).value(c) == pytest.approx(1.25)
    # a: the largest |score| of (4, −6) is −6; b: of (5, 2) is 5 → −6 − 5 = −11
    assert SwapMaxDiff(NONE).value(c) == pytest.approx(-11.0)
    # l1: Σ|score| = 1+2+3+4+6+1+1+5+2+9 = 34 → 1.25/34 and −11/34
    assert SwapAvg().value(c) == pytest.approx(1.25 / 34)
    assert SwapMaxDiff().value(c) == pytest.approx(-11 / 34)


def test_swaps_on_one_side_only_and_on_neither() -> None:
    # a = x y x, b = x y: blocks (0,0,2); a's second x (score −3) is unaligned and occurs in b → swapped;
    # b has no unaligned word. swap-avg = −3; swap-max-diff = −3 − 0 (b contributes 0) = −3
    c = case(bert_pair([("x", 1.0), ("y", 2.0), ("x", -3.0)], [("x", 4.0), ("y", 5.0)]))
    assert SwapAvg(NONE).value(c) == pytest.approx(-3.0)
    assert SwapMaxDiff(NONE).value(c) == pytest.approx(-3.0)
    # a = the cat, b = the cat sat: "sat" is unaligned but not in a → no swapped word → None
    none = case(bert_pair([("the", 1.0), ("cat", 2.0)], [("the", 1.0), ("cat", 2.0), ("sat", 3.0)]))
    assert SwapAvg(NONE).value(none) is None
    assert SwapMaxDiff(NONE).value(none) is None


# --- window ------------------------------------------------------------------------------------------------------

# [CLS] the old dog barked at cats [SEP]: non-special words 0..5 with scores 1, 2, 4, 8, 16, 32; the special
# tokens (100 each) are never in a window.
TEXT = bert_text([("the", 1.0), ("old", 2.0), ("dog", 4.0), ("barked", 8.0), ("at", 16.0), ("cats", 32.0)],
                 cls=100.0, sep=100.0)


def test_window_in_the_middle_and_clipped_at_both_ends() -> None:
    c = case(TEXT)
    # dog: m = 2, window 0..4 → −(1+2+4+8+16) = −31
    assert Window({**NONE, "words": ["dog"]}).value(c) == pytest.approx(-31.0)
    # the: m = 0, window −2..2 clipped to 0..2 → −(1+2+4) = −7
    assert Window({**NONE, "words": ["the"]}).value(c) == pytest.approx(-7.0)
    # cats: m = 5, window 3..7 clipped to 3..5 → −(8+16+32) = −56
    assert Window({**NONE, "words": ["cats"]}).value(c) == pytest.approx(-56.0)
    # regex: "barked" fully matches bark.* (m = 3, window 1..5) → −(2+4+8+16+32) = −62
    assert Window({**NONE, "regex": "bark.*"}).value(c) == pytest.approx(-62.0)
    # the word list is case-insensitive ("DOG" finds dog); a regex must match the whole word, case as written
    assert Window({**NONE, "words": ["DOG"]}).value(c) == pytest.approx(-31.0)
    assert Window({**NONE, "regex": "Dog"}).value(c) is None
    assert Window({**NONE, "regex": "bark"}).value(c) is None
    # half_width 0: the word alone → −4; l1 (Σ|score| = 63 + 200 = 263): −31/263
    assert Window({**NONE, "words": ["dog"], "half_width": 0}).value(c) == pytest.approx(-4.0)
    assert Window({"words": ["dog"]}).value(c) == pytest.approx(-31 / 263)
    # the first feature word in order wins: "old" (m = 1) before "cats" → window 0..3 → −(1+2+4+8) = −15
    assert Window({**NONE, "words": ["cats", "old"]}).value(c) == pytest.approx(-15.0)
    assert Window({**NONE, "words": ["horse"]}).value(c) is None


def test_window_counts_words_across_the_segments_of_a_pair() -> None:
    # [CLS] the dog [SEP] cats sleep [SEP]: non-special words the, dog, cats, sleep (1, 2, 4, 8); cats is m = 2;
    # half_width 1 → dog + cats + sleep → −(2+4+8) = −14
    c = case(bert_pair([("the", 1.0), ("dog", 2.0)], [("cats", 4.0), ("sleep", 8.0)], sep1=50.0))
    assert Window({**NONE, "words": ["cats"], "half_width": 1}).value(c) == pytest.approx(-14.0)


def test_window_needs_a_feature_word() -> None:
    with pytest.raises(BelugaError, match=r"'words'.*'regex'"):
        Window()
    with pytest.raises(BelugaError, match="regex"):
        Window({"regex": "("})
    with pytest.raises(BelugaError, match="half_width"):
        Window({"words": ["dog"], "half_width": -1})


# --- const --------------------------------------------------------------------------------------------------------

def test_const_sums_the_triggers_of_text_a() -> None:
    # a = in case it rains , the man left (1, 2, 4, 8, 16, 32, 64, 128); b = the man left.
    # "in case" matches a0 a1 → 1 + 2 = 3; no other trigger in a.
    a = [("in", 1.0), ("case", 2.0), ("it", 4.0), ("rains", 8.0), (",", 16.0), ("the", 32.0), ("man", 64.0),
         ("left", 128.0)]
    c = case(bert_pair(a, [("the", 3.0), ("man", 5.0), ("left", 7.0)], cls=1000.0))
    assert Const(NONE).value(c) == pytest.approx(3.0)
    # a custom two-word entry, case-insensitive: "The Man" matches a5 a6 → 32 + 64 = 96 (b's words never count)
    assert Const({**NONE, "words": ["The Man"]}).value(c) == pytest.approx(96.0)
    # l1: Σ|score| = 255 + 15 + 1000 = 1270 → 3/1270
    assert Const().value(c) == pytest.approx(3 / 1270)


def test_const_is_case_insensitive_ignores_text_b_and_needs_a_whole_entry() -> None:
    # a = If the doctor left (1, 2, 4, 8), b = if the doctor left (100, …): only a's "If" counts → 1
    c = case(bert_pair([("If", 1.0), ("the", 2.0), ("doctor", 4.0), ("left", 8.0)],
                       [("if", 100.0), ("the", 0.0), ("doctor", 0.0), ("left", 0.0)]))
    assert Const(NONE).value(c) == pytest.approx(1.0)
    # a single text is segment 0: "maybe" (2) and "since" (8) → 10
    text = case(bert_text([("maybe", 2.0), ("he", 4.0), ("since", 8.0)]))
    assert Const(NONE).value(text) == pytest.approx(10.0)
    # "in the case": neither "in" nor "case" is an entry by itself → None
    assert Const(NONE).value(case(bert_text([("in", 1.0), ("the", 1.0), ("case", 1.0)]))) is None


# --- perturbation focus ---------------------------------------------------------------------------------------

def test_perturbation_focus_on_a_name_swap() -> None:
    # INV, "John loves Mary" → "David loves Mary", "Peter loves Mary".
    # input 0: [CLS] 1, John 4, loves 2, Mary 2, [SEP] 1 → Σ|.| = 10 → John .4
    # input 1: [CLS] 0, David −3, loves 1, Mary 0, [SEP] 1 → Σ|.| = 5 → |David| .6
    # input 2: [CLS] 0, Peter 1, loves 1, Mary 2, [SEP] 0 → Σ|.| = 4 → Peter .25
    # Alignment john loves mary / david loves mary: block "loves mary" (1,1,2); john and david are changed.
    # mass_1 = (.4 + .6)/2 = .5; mass_2 = (.4 + .25)/2 = .325; mean = (.5 + .325)/2 = .4125
    att0 = bert_text([("John", 4.0), ("loves", 2.0), ("Mary", 2.0)], cls=1.0, sep=1.0)
    att1 = bert_text([("David", -3.0), ("loves", 1.0), ("Mary", 0.0)], sep=1.0)
    att2 = bert_text([("Peter", 1.0), ("loves", 1.0), ("Mary", 2.0)])
    inputs: tuple[Input, ...] = ("John loves Mary", "David loves Mary", "Peter loves Mary")
    c = case(att0, att1, att2, inputs=inputs, test_type="INV")
    assert PerturbationFocus().value(c) == pytest.approx(0.4125)
    # only input 1 counted → .5
    assert PerturbationFocus({"max_perturbations": 1}).value(c) == pytest.approx(0.5)
    # input 2 without an attribution is left out → .5
    assert PerturbationFocus().value(case(att0, att1, None, inputs=inputs, test_type="inv")) == pytest.approx(0.5)
    # no attribution of the original, no perturbed one, or not an INV/DIR case → None
    assert PerturbationFocus().value(case(None, att1, att2, inputs=inputs, test_type="INV")) is None
    assert PerturbationFocus().value(case(att0, None, None, inputs=inputs, test_type="INV")) is None
    assert PerturbationFocus().value(case(att0, att1, att2, inputs=inputs, test_type="MFT")) is None
    assert PerturbationFocus().value(case(att0, inputs=inputs[:1], test_type="INV")) is None


def test_perturbation_focus_with_a_longer_name_and_no_normalisation() -> None:
    # DIR, "John Smith loves Mary" (1, −2, 5, 5) → "Ann loves Mary" (3, 1, 1): block "loves mary" (2,1,2), left of
    # it john smith / ann have no match → changed: John, Smith (|1| + |−2| = 3) and Ann (3) → (3 + 3)/2 = 3
    att0 = bert_text([("John", 1.0), ("Smith", -2.0), ("loves", 5.0), ("Mary", 5.0)], cls=7.0)
    att1 = bert_text([("Ann", 3.0), ("loves", 1.0), ("Mary", 1.0)], cls=7.0)
    c = case(att0, att1, inputs=("John Smith loves Mary", "Ann loves Mary"), test_type="DIR")
    assert PerturbationFocus(NONE).value(c) == pytest.approx(3.0)


# --- outcome and probability signals ------------------------------------------------------------------------------

def test_acc_conf_and_conf_gt() -> None:
    assert Acc().value(case(outcome="pass")) == 1.0
    assert Acc().value(case(outcome="fail")) == 0.0
    assert Acc().value(case(outcome="skip")) is None
    probs = (np.array([0.7, 0.2, 0.1]), np.array([0.2, 0.5, 0.3]))
    # conf: mean(max .7, max .5) = .6; conf-gt with gold (0, 2): mean(.7, .3) = .5
    assert Conf().value(case(None, None, probs=probs)) == pytest.approx(0.6)
    assert ConfGT().value(case(None, None, probs=probs, labels=(0, 2))) == pytest.approx(0.5)
    # only input 1 labelled → .3; no label at all → None
    assert ConfGT().value(case(None, None, probs=probs, labels=(None, 2))) == pytest.approx(0.3)
    assert ConfGT().value(case(None, None, probs=probs, labels=(None, None))) is None
    # probabilities kept for input 0 only: conf .7; the label of input 1 has no probabilities → conf-gt None
    partial = (probs[0], None)
    assert Conf().value(case(None, None, probs=partial)) == pytest.approx(0.7)
    assert ConfGT().value(case(None, None, probs=partial, labels=(None, 1))) is None
    assert Conf().value(case(None, None)) is None
    assert RandomOrder.random_order and RandomOrder().value(case()) is None


# --- the plugin kind ------------------------------------------------------------------------------------------------

NAMES = {"acc": Acc, "conf": Conf, "conf-gt": ConfGT, "random": RandomOrder, "max-diff": MaxDiff,
         "sum-diff": SumDiff, "index-diff": IndexDiff, "first-tok": FirstTok, "swap-avg": SwapAvg,
         "swap-max-diff": SwapMaxDiff, "window": Window, "const": Const, "perturbation-focus": PerturbationFocus}
FACTORS = {"max-diff", "sum-diff", "index-diff", "first-tok", "swap-avg", "swap-max-diff", "window", "const",
           "perturbation-focus"}


def test_the_registry_loads_every_signal_with_its_declared_direction() -> None:
    assert set(NAMES) <= set(SIGNALS.names())
    for name, cls in NAMES.items():
        loaded = SIGNALS.get(name)
        assert loaded is cls
        options: dict[str, Any] = {"words": ["dog"]} if name == "window" else {}
        signal = loaded(options)
        assert signal.description and "\n" not in signal.description
        assert signal.direction == (-1 if name in FACTORS else 1), name
        assert signal.needs_attribution == (name in FACTORS), name
        assert signal.random_order == (name == "random"), name
    assert ConfGT.applies_to == ("labelled",) and PerturbationFocus.applies_to == ("perturbation",)


def test_unknown_and_invalid_options_are_user_errors() -> None:
    with pytest.raises(BelugaError, match=r"field 'options.nope': unknown option; it takes normalize"):
        SIGNALS.get("max-diff")({"nope": 1})
    with pytest.raises(BelugaError, match="unknown option"):
        SIGNALS.get("acc")({"normalize": "l1"})
    with pytest.raises(BelugaError, match="normalize"):
        SIGNALS.get("sum-diff")({"normalize": "softmax"})
    with pytest.raises(BelugaError, match="unknown ranking signal 'max-dif'; did you mean 'max-diff'"):
        SIGNALS.get("max-dif")
