"""Model-dependent generators: PWWS, HotFlip, IG counterfactual masking and the entity-only de-biased set — known
answers by hand, and the generators against a real (tiny) FewRel-16 model."""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from toy_targets import BagOfWords, sigmoid

from beluga_core.contracts.generators import Source, SourceInstance, TargetModel, TokenScores
from beluga_core.generators.attacks.adversarial import (
    PWWS,
    STOP_WORDS,
    expected_gradient_scores,
    first_order_scores,
    pwws,
)
from beluga_core.generators.attacks.counterfactual import IGContrast, select_tokens
from beluga_core.generators.suite_build import generate

SYNONYMS = {"good": ["fine"], "great": ["poor"], "movie": ["film"]}


def test_pwws_saliencies_order_and_first_successful_prefix_by_hand() -> None:
    model = BagOfWords()
    assert isinstance(model, TargetModel)
    attack = pwws(["good", "movie", "great"], 1, lambda t: model.probabilities(t), lambda w: SYNONYMS.get(w, []),
                  unk="[UNK]")
    p0 = sigmoid(3)                                      # 0.952574: "pos" predicted
    # S_i = P(pos|x) − P(pos|x with w_i := UNK): good → σ(1), movie → σ(3), great → σ(2).
    assert attack.saliency == pytest.approx((p0 - sigmoid(1), 0.0, p0 - sigmoid(2)), abs=1e-9)
    assert attack.saliency == pytest.approx((0.221516, 0.0, 0.071777), abs=1e-6)
    # Best substitutes: good→fine (σ(1.5)), movie→film (σ(3): gain 0), great→poor (σ(1)).
    # softmax(S) = (0.375622, 0.300990, 0.323388); H = softmax(S)·ΔP:
    #   good 0.375622 · (0.952574 − 0.817574) = 0.050709, movie 0, great 0.323388 · 0.221516 = 0.071636.
    assert attack.scores == pytest.approx((0.050709, 0.0, 0.071636), abs=1e-6)
    # Order great, good, movie (great first although good is the more salient word). Prefix 1 "good movie poor"
    # (σ(1) = 0.73: still pos); prefix 2 "fine movie poor" (σ(−0.5) = 0.38: neg) is the adversarial example.
    assert attack.words == ("fine", "movie", "poor")
    assert attack.changed == ((2, "great", "poor"), (0, "good", "fine"))
    # 1 original + 3 UNK variants + 3 synonym variants + 2 prefixes.
    assert attack.queries == 9 == model.queries


def test_pwws_fails_without_a_flip_and_within_its_budget() -> None:
    model = BagOfWords()
    never = pwws(["good", "good", "great"], 1, lambda t: model.probabilities(t), lambda w: [], unk="[UNK]")
    assert never.words is None and never.queries == 4
    short = pwws(["good", "movie", "great"], 1, lambda t: model.probabilities(t),
                 lambda w: SYNONYMS.get(w, []), unk="[UNK]", budget=8)
    assert short.words is None and short.queries <= 8


def test_pwws_generator_emits_successes_with_a_synonym_table(tmp_path: Path) -> None:
    table = tmp_path / "synonyms.json"
    table.write_text(json.dumps(SYNONYMS), encoding="utf-8")
    instances = tuple(SourceInstance(f"s{i}", text, label) for i, (text, label) in enumerate(
        [("good movie great", "pos"), ("bad movie", "neg"), ("good good good", "pos"), ("fine", "neg")]))
    source = Source("toy", "text", instances, ("neg", "pos"))
    made = generate(source, [("pwws", PWWS({"synonyms": str(table)}))], seed=0, name="toy", model=BagOfWords())
    assert [(c.inputs, c.label, c.test_type) for c in made.cases] == [(["fine movie poor"], "pos", "MFT")]
    assert made.header.source["model"] == {"name": "bag of words"}
    report = {what: value for _, what, _, value in made.reports}
    # "fine" (σ(0.5), pos) is misclassified: skipped; three attacked, one success in 9 queries.
    assert report["attacked (correctly classified)"] == 3 and report["skipped (misclassified)"] == 1
    assert report["share succeeded (attack success rate)"] == pytest.approx(1 / 3)
    assert report["queries per success"] == 9


def test_first_order_scores_equal_brute_force_on_a_loss_linear_in_the_embeddings() -> None:
    rng = np.random.default_rng(0)
    vocab, d = 50, 8
    E = rng.normal(size=(vocab, d))
    w = rng.normal(size=d)
    x = np.array([3, 17, 8, 41])

    def loss(ids: np.ndarray) -> float:
        return float(sum(w @ E[i] for i in ids))    # L = Σ_t wᵀ e_t: ∇_{e_t} L = w at every position

    def swapped(i: int, v: int) -> float:
        return loss(np.concatenate([x[:i], [v], x[i + 1:]]))

    scores = first_order_scores(np.tile(w, (len(x), 1)), E[x], E)
    brute = np.array([[swapped(i, v) - loss(x) for v in range(vocab)] for i in range(len(x))])
    np.testing.assert_allclose(scores, brute, atol=1e-6)
    # Linearised around 5 sampled words instead: the losses there and the same gradient w, still exact.
    samples = np.array([2, 9, 30, 44, 49])
    losses = np.array([[swapped(i, v) for v in samples] for i in range(len(x))])
    gradients = np.tile(w, (len(x), len(samples), 1))
    expected = expected_gradient_scores(losses, gradients, E[samples], loss(x), E)
    np.testing.assert_allclose(expected, brute, atol=1e-6)


def test_ig_masking_selects_exactly_the_expected_tokens() -> None:
    tokens = ("[CLS]", "[unused0]", "paris", "[unused1]", "is", "the", "capital", "##s", ",", "of", "france", ")",
              "[SEP]")
    word_of = (-1, -1, 1, -1, 3, 4, 5, 5, 6, 7, 8, 9, -1)
    scores = np.array([1.0, 0.9, 0.5, 0.8, 0.7, 0.95, 0.6, 0.99, 0.97, 0.96, 0.19, 0.98, 0.0])
    # Specials and markers (−1), "##s" (a continuation), "," and ")" (punctuation), "the", "is", "of" (stop
    # words) and "france" (0.19 < 0.2) are never chosen: capital (0.6) then paris (0.5).
    assert select_tokens(tokens, word_of, scores, k=1, threshold=0.2) == [6]
    assert select_tokens(tokens, word_of, scores, k=2, threshold=0.2) == [6, 2]
    assert select_tokens(tokens, word_of, scores, k=3, threshold=0.55) == [6]
    assert {"is", "the", "of"} <= STOP_WORDS


class FixedAttributions(BagOfWords):
    """Predicts every gold label; attributes with fixed scores (the highest on the longest word)."""

    def __init__(self, labels: tuple[str, ...]) -> None:
        super().__init__()
        self.labels = labels

    def probabilities(self, inputs: Sequence[Any]) -> np.ndarray:
        self.queries += len(inputs)
        out = np.full((len(inputs), len(self.labels)), 0.1 / (len(self.labels) - 1))
        out[:, 0] = 0.9
        return out

    def attribute(self, x: str, label: str, method: str, options: Mapping[str, Any]) -> TokenScores:
        words = x.split()
        real = [i for i, w in enumerate(words) if not w.startswith("[")]
        scores = np.array([len(words[i]) / 10 for i in real])
        return TokenScores(tuple(words[i].lower() for i in real), tuple(real), scores)


def test_ig_contrast_cases_for_relations_and_for_sentiment() -> None:
    labels = ("founded_by", "no_relation")
    rel = SourceInstance("r1", "[E1] Acme [/E1] was started by [E2] Jo [/E2] in Springfield", "founded_by")
    made = generate(Source("toy", "relation", (rel,), labels), [("ig-contrast", IGContrast())], seed=0, name="t",
                    model=FixedAttributions(labels))
    got = sorted((c.groups["perturbation"], c.test_type, c.label, tuple(c.inputs)) for c in made.cases)
    one = "[E1] Acme [/E1] was started by [E2] Jo [/E2] in"             # "springfield" (1.1) masked
    two = "[E1] Acme [/E1] was by [E2] Jo [/E2] in"                     # then "started" (0.7)
    assert got == [("contrast-k1", "DIR", "founded_by", (rel.input, one)),
                   ("contrast-k1", "MFT", "no_relation", (one,)),
                   ("contrast-k2", "DIR", "founded_by", (rel.input, two)),
                   ("contrast-k2", "MFT", "no_relation", (two,))]
    dir_case = next(c for c in made.cases if c.test_type == "DIR")
    assert dir_case.expectation.model_dump(exclude_none=True)["increasing"] is False
    senti = SourceInstance("s1", "a truly wonderful film", "positive")
    made = generate(Source("toy", "text", (senti,), ("positive", "negative")), [("ig-contrast", IGContrast({"k": 1}))],
                    seed=0, name="t", model=FixedAttributions(("positive", "negative")))
    assert [(c.test_type, c.inputs) for c in made.cases] == [("DIR", ["a truly wonderful film", "a truly film"])]


# ------------------------------------------------------------------------------------------- a real model
