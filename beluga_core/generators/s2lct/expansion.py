"""S²LCT / ALiCT Phase 2: grammar-guided expansion of seed sentences (the S²LCT paper's
phase 2, "fill and validate"; its Algorithm 1, with the restrictions of the ALiCT code).

Pipeline for one seed (``expand_seed``):

1. **Parse** the seed's tokens into a constituency tree (a ``Parser``).
2. **Masked expansions** (``masked_expansions``, Algorithm 1): every non-lexical production lhs → s_rhs of the
   tree is compared with the reference grammar's productions lhs → r_rhs; where s_rhs is an order-preserving
   subsequence of a longer r_rhs whose extra symbols are all word-level Penn POS tags, those symbols are inserted
   as masks. The top 5 per seed production by P(r_rhs | lhs) × Π P(ancestor productions) are kept, then k = 10
   masked sentences are sampled uniformly from all of them.
3. **Fill** the masks jointly with a masked language model (a ``Filler``: CheckList's ``Editor.suggest`` beam
   search; 60 = 3 × 20 suggestions per masked sentence).
4. **Validate and select** (``validate_fills``): a fill is kept iff every word can carry its mask's tag, every
   word is sentiment-neutral and the expanded sentence still satisfies the capability's search rule; the
   accepted fills' scores are soft-maxed and up to 20 are kept, by confidence (the paper) or at random (the
   ALiCT code).

What runs offline and what the user supplies: the algorithm (grammar induction from trees, Algorithm 1,
validation, selection) is plain Python and runs anywhere; it is tested offline with given trees, a toy grammar
and a stub filler. The three models are **not** shipped and none is downloaded at run time:

* the parser: ``load_parser("benepar:MODEL")`` needs ``pip install benepar`` and the model (installed on a
  machine with internet by ``benepar.download``), or ``load_parser("trees:PATH")`` reads parse trees the user
  made elsewhere;
* the reference grammar: ``load_grammar("nltk-treebank")`` needs NLTK's Penn Treebank sample in the user's
  ``nltk_data``; ``load_grammar(PATH)`` induces it from a file (or a folder of ``*.mrg`` files) of bracketed
  trees, ``load_grammar(PATH.json)`` reads a grammar saved with ``ReferenceGrammar.to_dict``;
* the masked LM: ``MaskedLMFiller(NAME_OR_PATH)``, a Hugging Face hub name (needs internet or the hub cache) or a
  local folder (read with ``local_files_only``).

nltk (extra ``wordnet``) is imported only where trees are read; the JSON grammar and Algorithm 1 do not need it.
"""

from __future__ import annotations

import importlib
import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Protocol, runtime_checkable

from beluga_core.core.errors import BelugaError
from beluga_core.generators.s2lct.grammar import (
    DEFAULT_K,
    DEFAULT_TOP,
    Masked,
    ReferenceGrammar,
    masked_expansions,
    read_bracketed_trees,
    tree_leaves,
)

DEFAULT_SUGGESTIONS = 60   # ALiCT asks the MLM for 3 × num_target (20) suggestions
DEFAULT_KEEP = 20          # ALiCT's num_suggestions_on_exp_grammer_elem
SELECTIONS = ("confidence", "random")

if TYPE_CHECKING:
    import random

    import nltk

# ----------------------------------------------------------------------------------------------------------
# Parsers


@runtime_checkable
class Parser(Protocol):
    """Turns a tokenised sentence into a constituency tree (Penn labels)."""

    def parse(self, tokens: Sequence[str]) -> nltk.Tree: ...


class TreeNotFound(KeyError):
    """``TreesParser.parse`` was given a sentence its file has no tree for (the caller skips and counts it)."""


class TreesParser:
    """Parse trees made elsewhere: a file of bracketed trees (one per line, or PTB files' multi-line form),
    looked up by their words joined with single spaces (traces left out). ``has(tokens)`` says whether a tree
    exists; ``parse`` raises ``TreeNotFound`` (a KeyError) for a sentence without one. Two different trees
    for the same words are a file error."""

    def __init__(self, path: str | Path) -> None:
        self.path = Path(path).expanduser()
        self._trees: dict[str, tuple[int, nltk.Tree]] = {}
        for line, tree in read_bracketed_trees(self.path):
            key = " ".join(tree_leaves(tree))
            if not key:
                raise BelugaError("a tree without words", source=self.path, line=line)
            if key in self._trees and self._trees[key][1] != tree:
                raise BelugaError(f"a second, different tree for {key!r} (the first is on line "
                                  f"{self._trees[key][0]})", source=self.path, line=line)
            self._trees.setdefault(key, (line, tree))

    def __len__(self) -> int:
        return len(self._trees)

    def has(self, tokens: Sequence[str]) -> bool:
        return " ".join(tokens) in self._trees

    def parse(self, tokens: Sequence[str]) -> nltk.Tree:
        key = " ".join(tokens)
        try:
            return self._trees[key][1].copy(deep=True)
        except KeyError:
            raise TreeNotFound(f"no tree for {key!r} in {self.path}") from None


BENEPAR_INSTALL = ("parser 'benepar:{model}' needs the benepar package: pip install benepar, and its model: on a "
                   "machine with internet run python -c \"import benepar; benepar.download('{model}')\" and copy "
                   "the nltk_data folder here (or set NLTK_DATA to it)")


class BeneparParser:
    """The Berkeley Neural Parser (the parser of the paper), used through its NLTK interface on given tokens."""

    def __init__(self, model: str) -> None:
        self.model = model
        try:
            # through importlib: benepar is optional and has no type information
            benepar = importlib.import_module("benepar")
        except ImportError:
            raise BelugaError(BENEPAR_INSTALL.format(model=model)) from None
        self._benepar = benepar
        try:
            self._parser = benepar.Parser(model)
        except Exception as exc:
            # LookupError when the model is not in nltk_data; load errors of a broken model otherwise
            raise BelugaError(BENEPAR_INSTALL.format(model=model) + f" (benepar said: {exc})") from None

    def parse(self, tokens: Sequence[str]) -> nltk.Tree:
        return self._parser.parse(self._benepar.InputSentence(words=list(tokens)))


def load_parser(spec: str) -> Parser:
    """``"benepar:MODEL"`` (e.g. ``benepar:benepar_en3``) or ``"trees:PATH"`` (a file of bracketed trees)."""
    kind, sep, arg = spec.partition(":")
    if sep and arg and kind == "benepar":
        return BeneparParser(arg)
    if sep and arg and kind == "trees":
        return TreesParser(arg)
    raise BelugaError(f"unknown parser {spec!r}: expected 'benepar:MODEL' (e.g. benepar:benepar_en3) or "
                      "'trees:PATH' (a file of bracketed parse trees)")


# ----------------------------------------------------------------------------------------------------------
# Fillers

Suggestion = tuple[tuple[str, ...], float]


@runtime_checkable
class Filler(Protocol):
    """Proposes joint fills for all the masks of a masked sentence, each with a score, best first."""

    def suggest(self, masked: Masked, n: int) -> list[Suggestion]: ...


class MaskedLMFiller:
    """Fills masks with a masked language model, as CheckList's ``Editor.suggest`` (ALiCT's filler) does.

    The masks are filled left to right by beam search: at each mask, every beam entry is extended by its
    ``beam`` most probable words, and the ``beam`` best partial fills by summed log-probability are kept
    (masks to the right stay masked). A mask takes exactly one vocabulary entry that starts a word
    (continuation pieces such as BERT's "##s" are never proposed) and whose word is a non-empty ASCII
    alphanumeric string; distinct fills only. The score is the summed log-probability divided by the number
    of masks (CheckList divides its summed scores the same way; CheckList sums raw logits, beluga
    log-probabilities, so scores are comparable across positions). ``beam`` defaults to ``n``.

    ``model`` is a Hugging Face hub name (needs internet or the hub cache) or a local folder, read with
    ``local_files_only``.
    """

    def __init__(self, model: str, *, device: str | None = None, beam: int | None = None) -> None:
        import torch
        from transformers import AutoModelForMaskedLM, AutoTokenizer

        self.name = model
        path = Path(model).expanduser()
        local = path.exists()
        if not local and model.startswith((".", "/", "~")):
            raise BelugaError("no such masked-LM folder", source=model)
        where = "the folder" if local else "the Hugging Face hub (internet or the hub cache)"
        try:
            self.tokenizer = AutoTokenizer.from_pretrained(str(path) if local else model, local_files_only=local)
            self.model = AutoModelForMaskedLM.from_pretrained(str(path) if local else model,
                                                              local_files_only=local)
        except Exception as exc:
            # hub errors are OSErrors, a folder without a model's files gives ValueError or others
            raise BelugaError(f"cannot load a masked language model from {where}: {exc}", source=model) from None
        if self.tokenizer.mask_token_id is None:
            raise BelugaError("the tokenizer has no mask token: not a masked language model", source=model)
        self.device = torch.device(device or ("cuda" if torch.cuda.is_available() else "cpu"))
        self.model.to(self.device)
        self.model.eval()
        self.beam = beam
        ids, words = self._word_vocabulary()
        if not ids:
            raise BelugaError("the vocabulary has no whole-word alphanumeric entries", source=model)
        self._cand_ids = torch.tensor(ids, dtype=torch.long, device=self.device)
        self._cand_words = words

    def _word_vocabulary(self) -> tuple[list[int], list[str]]:
        """The vocabulary entries a mask may take, by id, and their words."""
        tok = self.tokenizer
        # CheckList's test for the word-start marker: "Ġ" (byte BPE), "▁" (SentencePiece) or none (WordPiece,
        # whose continuation pieces carry "##" instead)
        first = tok.tokenize(" a")
        prefix = first[0][:-1] if first and first[0].endswith("a") else ""
        special = set(tok.all_special_ids)
        size = int(self.model.config.vocab_size)
        pairs: list[tuple[int, str]] = []
        for piece, idx in tok.get_vocab().items():
            if idx in special or idx >= size:
                continue
            if prefix:
                if not piece.startswith(prefix):
                    continue
                word = piece[len(prefix):]
            else:
                if piece.startswith("##"):
                    continue
                word = piece
            if word and word.isascii() and word.isalnum():
                pairs.append((idx, word))
        pairs.sort()
        return [i for i, _ in pairs], [w for _, w in pairs]

    def suggest(self, masked: Masked, n: int = DEFAULT_SUGGESTIONS) -> list[Suggestion]:
        import torch

        if not masked.masks:
            raise ValueError(f"nothing to fill in {masked.text!r}")
        if n < 1:
            return []
        tok = self.tokenizer
        mask_at = {pos for pos, _ in masked.masks}
        text = " ".join(tok.mask_token if i in mask_at else t for i, t in enumerate(masked.tokens))
        enc = tok(text, return_tensors="pt")
        input_ids = enc["input_ids"][0]
        positions = (input_ids == tok.mask_token_id).nonzero().flatten().tolist()
        if len(positions) != len(masked.masks):
            raise ValueError(f"{len(positions)} mask tokens after tokenisation for {len(masked.masks)} masks "
                             f"in {masked.text!r}")
        width = max(self.beam or n, 1)
        beam: list[tuple[tuple[int, ...], float]] = [((), 0.0)]
        for step, pos in enumerate(positions):
            batch = {key: value.to(self.device).repeat(len(beam), 1) for key, value in enc.items()}
            for row, (chosen, _) in enumerate(beam):
                for prev_pos, c in zip(positions[:step], chosen, strict=True):
                    batch["input_ids"][row, prev_pos] = self._cand_ids[c]
            with torch.inference_mode():
                logits = self.model(**batch).logits[:, pos, :].float()
            logp = torch.log_softmax(logits, dim=-1).index_select(1, self._cand_ids)
            values, idx = logp.topk(min(width, logp.shape[1]), dim=1)
            grown = [((*chosen, int(j)), score + float(v))
                     for (chosen, score), vs, js in zip(beam, values.tolist(), idx.tolist(), strict=True)
                     for v, j in zip(vs, js, strict=True)]
            grown.sort(key=lambda e: (-e[1], e[0]))
            beam = grown[:width]
        out: list[Suggestion] = []
        seen: set[tuple[str, ...]] = set()
        for chosen, score in beam:
            words = tuple(self._cand_words[c] for c in chosen)
            if words in seen:
                continue
            seen.add(words)
            out.append((words, score / len(positions)))
            if len(out) == n:
                break
        return out


# ----------------------------------------------------------------------------------------------------------
# Validation, selection and the whole expansion


@dataclass(frozen=True)
class Expanded:
    """An accepted expansion: the sentence (tokens joined by single spaces), the words filled in, the
    soft-maxed score among the masked sentence's accepted fills, the filler's own score and the source."""

    text: str
    fills: tuple[str, ...]
    score: float
    mlm_score: float
    masked: Masked

    @property
    def tokens(self) -> tuple[str, ...]:
        return self.masked.fill(self.fills)


def _softmax(xs: Sequence[float]) -> list[float]:
    top = max(xs)
    exps = [math.exp(x - top) for x in xs]
    total = math.fsum(exps)
    return [e / total for e in exps]


def validate_fills(masked: Masked, suggestions: Sequence[Suggestion], *, tags_of: Callable[[str], frozenset[str]],
                   is_neutral: Callable[[str], bool], recheck: Callable[[str], bool], keep: int = DEFAULT_KEEP,
                   selection: str = "confidence", rng: random.Random | None = None) -> list[Expanded]:
    """The fills of ``masked`` that pass the three checks, scored and selected.

    A fill is accepted iff (1) every word's tag set ``tags_of(word)`` (the tags it can carry in isolation)
    holds its mask's tag, (2) every word ``is_neutral`` and (3) ``recheck(sentence)`` holds (the capability's
    search rule on the expanded sentence); the checks run in that order and stop at the first failure, so
    ``recheck`` runs only on fills that passed the word checks. A fill repeated in ``suggestions`` counts
    once (its first score). The accepted fills' scores are soft-maxed among themselves; then up to ``keep``
    are selected: ``confidence`` (the paper) takes the highest soft-maxed scores, ties in suggestion order;
    ``random`` (the ALiCT code's default) samples ``keep`` uniformly with ``rng`` and returns them in
    suggestion order.
    """
    if selection not in SELECTIONS:
        raise BelugaError(f"unknown selection {selection!r}: expected one of {', '.join(SELECTIONS)}")
    if selection == "random" and rng is None:
        raise ValueError("selection 'random' needs an rng")
    accepted: list[tuple[tuple[str, ...], float, str]] = []
    seen: set[tuple[str, ...]] = set()
    for words, score in suggestions:
        words = tuple(words)
        if len(words) != len(masked.masks):
            raise ValueError(f"a fill of {len(words)} words for {len(masked.masks)} masks: {words!r}")
        if words in seen:
            continue
        seen.add(words)
        if not all(tag in tags_of(w) for w, tag in zip(words, masked.tags, strict=True)):
            continue
        if not all(is_neutral(w) for w in words):
            continue
        sentence = " ".join(masked.fill(words))
        if not recheck(sentence):
            continue
        accepted.append((words, float(score), sentence))
    if not accepted:
        return []
    probs = _softmax([s for _, s, _ in accepted])
    order = list(range(len(accepted)))
    if selection == "confidence":
        order.sort(key=lambda i: -probs[i])
        order = order[:keep]
    elif len(order) > keep:
        assert rng is not None
        order = sorted(rng.sample(order, keep))
    return [Expanded(text=accepted[i][2], fills=accepted[i][0], score=probs[i], mlm_score=accepted[i][1],
                     masked=masked) for i in order]


def expand_seed(tokens: Sequence[str], parser: Parser, grammar: ReferenceGrammar, filler: Filler, *,
                rng: random.Random, tags_of: Callable[[str], frozenset[str]], is_neutral: Callable[[str], bool],
                recheck: Callable[[str], bool], top: int = DEFAULT_TOP, k: int | None = DEFAULT_K,
                suggestions: int = DEFAULT_SUGGESTIONS, keep: int = DEFAULT_KEEP,
                selection: str = "confidence") -> list[Expanded]:
    """Phase 2 for one seed: parse, ``masked_expansions``, ``filler.suggest`` (``suggestions`` per masked
    sentence), ``validate_fills``. Expansions are in masked-sentence order, then selection order; a sentence
    reached from two masked sentences is kept once (the first). A ``TreeNotFound`` from the parser
    propagates: the caller skips and counts the seed."""
    tree = parser.parse(tokens)
    out: list[Expanded] = []
    seen: set[str] = set()
    for masked in masked_expansions(tree, grammar, rng, top=top, k=k):
        fills = filler.suggest(masked, suggestions)
        for e in validate_fills(masked, fills, tags_of=tags_of, is_neutral=is_neutral, recheck=recheck,
                                keep=keep, selection=selection, rng=rng):
            if e.text not in seen:
                seen.add(e.text)
                out.append(e)
    return out



__all__ = [
    "DEFAULT_KEEP",
    "DEFAULT_SUGGESTIONS",
    "SELECTIONS",
    "BeneparParser",
    "Expanded",
    "Filler",
    "MaskedLMFiller",
    "Parser",
    "Suggestion",
    "TreeNotFound",
    "TreesParser",
    "expand_seed",
    "load_parser",
    "validate_fills",
]
