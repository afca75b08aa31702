"""Adversarial examples found by attacking a trained model: PWWS and word-level HotFlip (DiagnoseRE's Q2).

Both attack only the instances the model classifies correctly (as the released code did), keep the label (an
adversarial example is a case whose gold label is the original's: an MFT case on the adversarial input), never
touch entity markers, and emit only successes; ``report`` gives the attack success rate and the model queries per
success.

**PWWS** (Ren et al., 2019; the corrected form of the paper's Eq. 2, as OpenAttack computes it): for the words
w_1..w_n of x and the prediction ŷ, saliency S_i = P(ŷ|x) − P(ŷ|x with w_i := UNK); best substitute
w_i* = argmin over the WordNet synonyms w' of w_i of P(ŷ|x with w_i := w'), gain ΔP_i = P(ŷ|x) − P(ŷ|x_i*);
H_i = softmax(S)_i · ΔP_i. Words with a substitute are replaced cumulatively in descending H order, and the
first prefix whose prediction differs from ŷ is the adversarial example. A query budget (500 inputs per
instance, the released code's ``invoke_limit``) ends an attack that has not succeeded.

**HotFlip**, word level (TextAttack's ``HotFlipEbrahimi2017``, the faithful one; OpenAttack's attacker is greedy
and gradient-free): the first-order estimate of the loss change when word i becomes vocabulary entry v is
s(i, v) = (e_v − e_{x_i})ᵀ ∇_{e_i} L, L the cross-entropy on the gold label; a beam search (width 10) over at
most two swapped words, each step taking the beam's best (i, v) pairs by s and keeping the candidates with the
lowest gold probability. Candidates are whole-word vocabulary entries (alphabetic, no ``##`` continuation, no
special or ``[unused]`` token); a word is swappable when it is one vocabulary piece, alphabetic and not a stop
word. TextAttack's embedding-similarity constraint (cos ≥ 0.8 in counter-fitted embeddings, not available
offline) is replaced by "v has the WordNet part of speech of x_i" when WordNet is installed (a deviation).

Option ``gradient = "expected"`` linearises around K sampled words instead of the current one (``samples``, 16,
drawn once per run from the candidates with the run's seed): with L_ik and g_ik the loss and its gradient when
word i is set to sample k, s(i, v) = (mean_k L_ik − L) + (e_v − ē)ᵀ mean_k g_ik. For a Gaussian cloud of
candidates the mean gradient is the slope of the best linear fit of the loss over it (Stein's lemma), and the
mean loss measures the offset that the local gradient gets wrong; on MiniLM it ranks the real loss changes far
better than the local estimate and makes the attack stronger (tests/unit/generators/test_adversarial.py,
benchmarks/findings/bench_hotflip.py), at K forward and backward passes per swappable word and beam text. ``"local"``
stays the default: it is the paper's, and an attack with it costs about a tenth of the time.

Stop words are scikit-learn's English list (318 words), not DiagnoseRE's 125-word ``stopwords.txt``: a superset
of its function words that also holds some content words (e.g. "found", "fire", "system", "bill"), which
therefore are never swapped.
"""

from __future__ import annotations

import json
import random
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, ClassVar, Literal

import numpy as np
from pydantic import Field
from sklearn.feature_extraction.text import ENGLISH_STOP_WORDS

from beluga_core.contracts.generators import (
    Generator,
    Perturbed,
    Source,
    SourceInstance,
    TargetModel,
    WordGradients,
)
from beluga_core.contracts.options import Options
from beluga_core.data.iid.relation_instances import MARKERS, mention_words

STOP_WORDS = frozenset(ENGLISH_STOP_WORDS)


@dataclass(frozen=True)
class Attack:
    """One attacked instance: the adversarial words (None: the attack failed), the queries it spent and what
    it changed (word index → (old, new))."""

    words: tuple[str, ...] | None
    queries: int
    changed: tuple[tuple[int, str, str], ...] = ()
    saliency: tuple[float, ...] = ()
    scores: tuple[float, ...] = ()


def _softmax(x: np.ndarray) -> np.ndarray:
    z = np.exp(x - x.max()) if len(x) else x
    return z / z.sum() if len(x) else x


def _cased(word: str, like: str) -> str:
    return word.capitalize() if like[:1].isupper() and like[1:].islower() else word


def pwws(words: Sequence[str], label: int, probabilities: Callable[[list[str]], np.ndarray],
         synonyms: Callable[[str], Sequence[str]], *, unk: str, skip: Callable[[int, str], bool] = lambda i, w: False,
         budget: int = 500) -> Attack:
    """PWWS against ``label`` (the model's prediction on ``words``, which the caller checked is the gold one).
    ``probabilities`` maps texts to class probabilities; every text it is given counts one query."""
    words = list(words)
    spent = 0

    def ask(texts: list[str]) -> np.ndarray | None:
        nonlocal spent
        if spent + len(texts) > budget:
            return None
        spent += len(texts)
        return probabilities(texts)

    base = ask([" ".join(words)])
    if base is None:
        return Attack(None, spent)
    p0 = float(base[0, label])
    positions = [i for i, w in enumerate(words) if not skip(i, w)]
    unk_probs = ask([" ".join([*words[:i], unk, *words[i + 1:]]) for i in positions])
    if unk_probs is None:
        return Attack(None, spent)
    saliency = np.zeros(len(words))
    saliency[positions] = p0 - unk_probs[:, label]
    best: dict[int, tuple[str, float]] = {}
    for i in positions:
        subs = [_cased(s, words[i]) for s in synonyms(words[i].lower()) if s != words[i].lower()]
        if not subs:
            continue
        probs = ask([" ".join([*words[:i], s, *words[i + 1:]]) for s in subs])
        if probs is None:
            return Attack(None, spent)
        k = int(np.argmin(probs[:, label]))
        best[i] = (subs[k], p0 - float(probs[k, label]))
    weights = _softmax(saliency[positions])
    h = np.zeros(len(words))
    h[positions] = weights * np.array([best[i][1] if i in best else 0.0 for i in positions])
    order = sorted(best, key=lambda i: (-h[i], i))
    current = list(words)
    changed: list[tuple[int, str, str]] = []
    for i in order:
        changed.append((i, current[i], best[i][0]))
        current[i] = best[i][0]
        probs = ask([" ".join(current)])
        if probs is None:
            break
        if int(np.argmax(probs[0])) != label:
            return Attack(tuple(current), spent, tuple(changed), tuple(saliency), tuple(h))
    return Attack(None, spent, (), tuple(saliency), tuple(h))


def first_order_scores(gradients: np.ndarray, current: np.ndarray, candidates: np.ndarray) -> np.ndarray:
    """s[i, v] = (e_v − e_{x_i})ᵀ g_i for gradients g [n, d], the current words' embeddings e_{x_i} [n, d] and
    the candidates' embeddings e_v [V, d]: [n, V]."""
    g = gradients.astype(np.float64)
    return g @ candidates.astype(np.float64).T - np.sum(g * current.astype(np.float64), axis=1, keepdims=True)


def expected_gradient_scores(losses: np.ndarray, gradients: np.ndarray, samples: np.ndarray, loss: float,
                             candidates: np.ndarray) -> np.ndarray:
    """s[i, v] = (L̄_i − L) + (e_v − ē)ᵀ ḡ_i: the loss change linearised around the sampled words instead of
    the current one. ``losses`` [n, K] and ``gradients`` [n, K, d] are the loss and its gradient with word i
    set to sample k (embeddings ``samples`` [K, d]); L̄_i, ḡ_i, ē their means; ``loss`` the text's own."""
    offset = losses.mean(axis=1) - loss
    centre = np.tile(samples.astype(np.float64).mean(axis=0), (len(losses), 1))
    return offset[:, None] + first_order_scores(gradients.mean(axis=1), centre, candidates)


def predicted_classes(model: TargetModel, instances: Sequence[SourceInstance]) -> dict[str, int]:
    """The model's predicted class of every instance, by instance id (one batched pass)."""
    if not instances:
        return {}
    probs = model.probabilities([x.input for x in instances])
    return {x.id: int(np.argmax(p)) for x, p in zip(instances, probs, strict=True)}


def _is_marker(word: str) -> bool:
    return word in MARKERS


class _Attacker(Generator):
    family: ClassVar[str] = "adversarial"
    kinds = ("text", "relation")
    invariant: ClassVar[bool] = False
    requires_model: ClassVar[bool] = True

    def __init__(self, options: dict[str, Any] | None = None) -> None:
        super().__init__(options)
        self.attacked = 0
        self.misclassified = 0
        self.succeeded = 0
        self.success_queries = 0
        self.predicted: dict[str, int] = {}

    def prepare(self, source: Source, seed: int) -> None:
        model = self.target
        missing = [x.label for x in source.instances if x.label not in model.labels]
        if missing:
            raise ValueError(f"the model's classes ({', '.join(model.labels)}) lack the source's label "
                             f"'{missing[0]}'")
        self.predicted = predicted_classes(model, source.instances)
        self.attacked = self.misclassified = self.succeeded = self.success_queries = 0

    def _correct(self, instance: SourceInstance) -> int | None:
        """The gold class when the model predicts it (an attack's precondition), else None (counted)."""
        gold = self.target.labels.index(instance.label)
        if self.predicted.get(instance.id) != gold:
            self.misclassified += 1
            return None
        self.attacked += 1
        return gold

    def _done(self, attack: Attack, perturbation: str) -> Iterator[Perturbed]:
        if attack.words is None:
            return
        self.succeeded += 1
        self.success_queries += attack.queries
        yield Perturbed(perturbation, " ".join(attack.words),
                        note={"queries": attack.queries, "n_changed": len(attack.changed),
                              "changed": [[i, old, new] for i, old, new in attack.changed]})

    def report(self) -> list[tuple[str, str, float]]:
        out = [("attacked (correctly classified)", "instances", float(self.attacked)),
               ("skipped (misclassified)", "instances", float(self.misclassified)),
               ("succeeded", "instances", float(self.succeeded))]
        if self.attacked:
            out.append(("share succeeded (attack success rate)", "attacked", self.succeeded / self.attacked))
        if self.succeeded:
            out.append(("queries per success", "mean", round(self.success_queries / self.succeeded, 1)))
        return out


class PWWSOptions(Options):
    budget: int = Field(500, ge=2, description="Model queries per instance at most.")
    synonyms: str | None = Field(None, description=(
        "A JSON file {word: [synonyms]} used instead of WordNet."))


class PWWS(_Attacker):
    """PWWS with WordNet synonyms (module docstring). Option ``synonyms``: a JSON file {word: [synonyms]} used
    instead of WordNet."""

    perturbations: ClassVar[tuple[str, ...]] = ("pwws",)
    Options = PWWSOptions
    options: PWWSOptions

    def __init__(self, options: dict[str, Any] | None = None) -> None:
        super().__init__(options)
        self.table: dict[str, tuple[str, ...]] | None = None

    def prepare(self, source: Source, seed: int) -> None:
        path = self.options.synonyms
        if path:
            data = json.loads(Path(str(path)).read_text(encoding="utf-8"))
            if not isinstance(data, dict) or not all(isinstance(v, list) for v in data.values()):
                raise ValueError(f"synonyms file {path}: expected a JSON object {{word: [synonyms]}}")
            self.table = {str(k).lower(): tuple(str(s) for s in v) for k, v in data.items()}
        else:
            from beluga_core.core.errors import BelugaError
            from beluga_core.generators.attacks.wordnet import load_wordnet

            try:
                self.wordnet = load_wordnet()
            except BelugaError as exc:
                raise ValueError(f"PWWS takes its synonyms from WordNet, which is missing here: {exc}") from None
        super().prepare(source, seed)

    def synonyms(self, word: str) -> Sequence[str]:
        if self.table is not None:
            return self.table.get(word, ())
        return self.wordnet.synonyms(word)

    def perturb(self, instance: SourceInstance, rng: random.Random) -> Iterator[Perturbed]:
        gold = self._correct(instance)
        if gold is None:
            return
        assert isinstance(instance.input, str)
        model = self.target
        words = instance.input.split()
        keep = mention_words(words)
        attack = pwws(words, gold, lambda texts: model.probabilities(texts), self.synonyms,
                      unk=model.unk_token, skip=lambda i, w: i in keep, budget=self.options.budget)
        yield from self._done(attack, "pwws")


class HotFlipOptions(Options):
    beam: int = Field(10, ge=1, le=100, description="Candidates kept after each swap.")
    max_words: int = Field(2, ge=1, le=10, description="Words swapped at most.")
    same_pos: bool = Field(True, description="A replacement keeps the word's part of speech (WordNet).")
    gradient: Literal["local", "expected"] = Field("local", description=(
        "The first-order score: the gradient at the word itself, or its mean over sampled words."))
    samples: int = Field(16, ge=2, le=1024, description="Words the expected gradient is averaged over.")


class HotFlip(_Attacker):
    """Word-level HotFlip with first-order scores, a beam and at most ``max_words`` swaps (module docstring)."""

    perturbations: ClassVar[tuple[str, ...]] = ("hotflip",)
    Options = HotFlipOptions
    options: HotFlipOptions

    def __init__(self, options: dict[str, Any] | None = None) -> None:
        super().__init__(options)
        self.wordnet: Any = None
        self.samples = np.zeros((0, 0))

    def prepare(self, source: Source, seed: int) -> None:
        super().prepare(source, seed)
        model = self.target
        vocab = list(model.vocabulary())
        self.vocab = vocab
        self.candidate_ids = np.array([i for i, t in enumerate(vocab)
                                       if t.isalpha() and t.islower() and t not in STOP_WORDS], dtype=np.int64)
        self.matrix = model.embeddings()
        self.candidates = self.matrix[self.candidate_ids]
        # The words the expected gradient is taken at: one seeded draw for the whole run.
        k = min(self.options.samples, len(self.candidate_ids))
        self.samples = self.matrix[np.random.default_rng(seed).choice(self.candidate_ids, size=k, replace=False)]
        if self.options.same_pos:
            from beluga_core.core.errors import BelugaError
            from beluga_core.generators.attacks.wordnet import load_wordnet

            try:
                self.wordnet = load_wordnet()
            except BelugaError:
                self.wordnet = None   # no part-of-speech constraint: reported
        self.pos_checked = self.wordnet is not None

    def swappable(self, word: str, ids: tuple[int, ...]) -> bool:
        return len(ids) == 1 and word.isalpha() and word.lower() not in STOP_WORDS and not _is_marker(word)

    def _pos_ok(self, old: str, new: str) -> bool:
        if self.wordnet is None:
            return True
        pos = self.wordnet.pos(old.lower())
        return pos is None or self.wordnet.pos(new) == pos

    def scores(self, wg: WordGradients, positions: list[int], label: str) -> np.ndarray:
        """The first-order loss change of every (position, candidate) pair [len(positions), candidates]."""
        if self.options.gradient == "local":
            current = self.matrix[[wg.ids[i][0] for i in positions]]
            return first_order_scores(wg.gradients[positions], current, self.candidates)
        losses, gradients = self.target.substituted_gradients(" ".join(wg.words), label, positions, self.samples)
        return expected_gradient_scores(losses, gradients, self.samples, wg.loss, self.candidates)

    def flips(self, wg: WordGradients, done: frozenset[int], label: str) -> list[tuple[float, int, str]]:
        """The beam's best (score, word index, new word) for one text, highest first."""
        keep = mention_words(list(wg.words))
        positions = [i for i, (w, ids) in enumerate(zip(wg.words, wg.ids, strict=True))
                     if i not in done and i not in keep and self.swappable(w, ids)]
        if not positions:
            return []
        scores = self.scores(wg, positions, label)
        for row, i in enumerate(positions):
            scores[row, self.candidate_ids == wg.ids[i][0]] = -np.inf
        beam = self.options.beam
        flat = np.argsort(-scores, axis=None, kind="stable")
        out: list[tuple[float, int, str]] = []
        for k in flat[:beam * 50]:
            row, col = divmod(int(k), scores.shape[1])
            i, new = positions[row], self.vocab[int(self.candidate_ids[col])]
            if self._pos_ok(wg.words[i], new):
                out.append((float(scores[row, col]), i, _cased(new, wg.words[i])))
                if len(out) == beam:
                    break
        return out

    def perturb(self, instance: SourceInstance, rng: random.Random) -> Iterator[Perturbed]:
        gold = self._correct(instance)
        if gold is None:
            return
        assert isinstance(instance.input, str)
        model = self.target
        start = model.queries
        beam: list[tuple[tuple[str, ...], tuple[tuple[int, str, str], ...]]] = [(tuple(instance.input.split()), ())]
        for _ in range(self.options.max_words):
            candidates: dict[tuple[str, ...], tuple[tuple[int, str, str], ...]] = {}
            grads = model.word_gradients([" ".join(words) for words, _ in beam], instance.label)
            for (words, changed), wg in zip(beam, grads, strict=True):
                done = frozenset(i for i, _, _ in changed)
                for _, i, new in self.flips(wg, done, instance.label):
                    swapped = (*words[:i], new, *words[i + 1:])
                    candidates.setdefault(swapped, (*changed, (i, words[i], new)))
            if not candidates:
                break
            texts = list(candidates)
            probs = model.probabilities([" ".join(t) for t in texts])
            gold_p = probs[:, gold]
            wins = [k for k in range(len(texts)) if int(np.argmax(probs[k])) != gold]
            if wins:
                k = min(wins, key=lambda j: (gold_p[j], j))
                yield from self._done(Attack(texts[k], model.queries - start, candidates[texts[k]]), "hotflip")
                return
            keep = np.argsort(gold_p, kind="stable")[:self.options.beam]
            beam = [(texts[k], candidates[texts[k]]) for k in keep]

    def report(self) -> list[tuple[str, str, float]]:
        return [*super().report(), ("part-of-speech constraint (WordNet)", "applied", float(self.pos_checked))]
