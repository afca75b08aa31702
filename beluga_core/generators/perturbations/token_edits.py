"""The CheckList perturbations that read the tokens alone (punctuation, numbers, contractions, typos), and the
``Change`` every perturbation returns. ``generators.perturbations.perturb`` describes all seven and the deviations
from CheckList."""

from __future__ import annotations

import random
import unicodedata
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

Tokens = tuple[str, ...]


@dataclass(frozen=True)
class Change:
    """One perturbation: the new token sequence (its length may differ from the input's) and a JSON-serialisable
    note of what changed (e.g. ``{"from": "Paris", "to": "Lyon"}``)."""

    tokens: Tokens
    # hash=False: the note is a dict; a Change hashes by its tokens (equal Changes still hash equal)
    note: dict[str, Any] = field(hash=False)


# --- punctuation ----------------------------------------------------------------------------------------------

# PTB escapes brackets and writes quotes as `` and ''; backquote is a Unicode symbol (Sk), not punctuation.
_PTB_PUNCTUATION = frozenset({"``", "''", "`", "-LRB-", "-RRB-", "-LSB-", "-RSB-", "-LCB-", "-RCB-"})
# Unicode files these under "other punctuation" (Po), but they carry meaning ("50 %", "R & B") and spaCy does
# not tag them PUNCT, so stripping them would not be CheckList's strip_punctuation.
_SYMBOL_LIKE = frozenset("%‰‱#&*@/\\†‡§¶")


def is_punctuation(token: str) -> bool:
    """A punctuation token: every character is Unicode punctuation (category P*: . , ! ? ; : ' " ( ) - … «)
    other than % ‰ ‱ # & * @ / \\ † ‡ § ¶, or a PTB bracket / quote code (``, '', -LRB-, -RRB-, …).
    Symbols ($ + = < >) are not punctuation either."""
    if token in _PTB_PUNCTUATION:
        return True
    return bool(token) and all(unicodedata.category(ch).startswith("P") and ch not in _SYMBOL_LIKE for ch in token)


def _trailing_punctuation_start(tokens: Tokens) -> int:
    end = len(tokens)
    while end and is_punctuation(tokens[end - 1]):
        end -= 1
    return end


def punctuation(tokens: Sequence[str], rng: random.Random) -> Change | None:
    """Strip all trailing punctuation tokens if the sequence ends with any, else append ``"."``.

    Deterministic (``rng`` is unused; it is taken for a uniform signature). ``None`` for an empty sequence.
    A sequence of punctuation only becomes empty.
    """
    toks = tuple(tokens)
    if not toks:
        return None
    end = _trailing_punctuation_start(toks)
    if end < len(toks):
        return Change(toks[:end], {"removed": list(toks[end:])})
    return Change((*toks, "."), {"added": "."})


def strip_punctuation(tokens: Sequence[str], rng: random.Random) -> Change | None:
    """Remove the trailing punctuation tokens; ``None`` when there are none. ``rng`` is unused."""
    toks = tuple(tokens)
    end = _trailing_punctuation_start(toks)
    if end == len(toks):
        return None
    return Change(toks[:end], {"removed": list(toks[end:])})


# --- numbers -----------------------------------------------------------------------------------------------------


def _number_value(token: str, skip_years: bool) -> int | None:
    # CheckList's test is str.isdigit(): "3,000", "1.5", "-3" and "5th" are not numbers. int() rejects the
    # digit-like characters isdigit() accepts ("²"), which CheckList skips by catching the exception.
    if not token.isdigit() or token in ("2", "4"):
        return None
    try:
        value = int(token)
    except ValueError:
        return None
    if skip_years and len(token) == 4 and 1000 <= value <= 2100:
        return None
    return value


def change_number(tokens: Sequence[str], rng: random.Random, *, skip_years: bool = True) -> Change | None:
    """Move one integer token x (chosen with ``rng``) to x + δ, δ uniform over [−min(⌊0.2x⌋+1, x−1), ⌊0.2x⌋+1]
    without 0 (150 → 119…181; with ``skip_years=False`` 1979 → 1583…2375).

    Integer tokens are those with ``str.isdigit()``; "3,000", "1.5", "-3", "5th" are not numbers here. "2" and
    "4" are never changed (CheckList: often "to" / "for"). With ``skip_years`` (default), 4-digit numbers
    1000–2100 are left alone. Every token equal to the chosen one is replaced (CheckList substitutes the string
    everywhere). A zero-padded token stays padded to its width ("07" → "08").
    """
    toks = tuple(tokens)
    sites = [i for i, t in enumerate(toks) if _number_value(t, skip_years) is not None]
    if not sites:
        return None
    old = toks[rng.choice(sites)]
    x = int(old)
    change = int(x * 0.2) + 1
    lo, hi = -min(change, x - 1), change
    # Uniform over [lo, hi] without 0: draw from a range one shorter and shift the non-negative half up.
    # (For x = 0, lo = 1: the range holds no 0 and nothing is shifted.)
    has_zero = lo <= 0 <= hi
    delta = lo + rng.randrange(hi - lo + 1 - int(has_zero))
    if has_zero and delta >= 0:
        delta += 1
    new = str(x + delta)
    if old.startswith("0") and len(old) > 1:
        new = new.zfill(len(old))
    out = tuple(new if t == old else t for t in toks)
    return Change(out, {"from": old, "to": new, "occurrences": sum(t == old for t in toks)})


# --- contractions ------------------------------------------------------------------------------------------------

# CheckList's Perturb.expand_contractions map, verbatim.
EXPAND_MAP: Mapping[str, str] = {
    "ain't": "is not", "aren't": "are not", "can't": "cannot",
    "can't've": "cannot have", "could've": "could have", "couldn't":
    "could not", "didn't": "did not", "doesn't": "does not", "don't":
    "do not", "hadn't": "had not", "hasn't": "has not", "haven't":
    "have not", "he'd": "he would", "he'd've": "he would have",
    "he'll": "he will", "he's": "he is", "how'd": "how did", "how'd'y":
    "how do you", "how'll": "how will", "how's": "how is",
    "I'd": "I would", "I'll": "I will", "I'm": "I am",
    "I've": "I have", "i'd": "i would", "i'll": "i will",
    "i'm": "i am", "i've": "i have", "isn't": "is not",
    "it'd": "it would", "it'll": "it will", "it's": "it is", "ma'am":
    "madam", "might've": "might have", "mightn't": "might not",
    "must've": "must have", "mustn't": "must not", "needn't":
    "need not", "oughtn't": "ought not", "shan't": "shall not",
    "she'd": "she would", "she'll": "she will", "she's": "she is",
    "should've": "should have", "shouldn't": "should not", "that'd":
    "that would", "that's": "that is", "there'd": "there would",
    "there's": "there is", "they'd": "they would",
    "they'll": "they will", "they're": "they are",
    "they've": "they have", "wasn't": "was not", "we'd": "we would",
    "we'll": "we will", "we're": "we are", "we've": "we have",
    "weren't": "were not", "what're": "what are", "what's": "what is",
    "when's": "when is", "where'd": "where did", "where's": "where is",
    "where've": "where have", "who'll": "who will", "who's": "who is",
    "who've": "who have", "why's": "why is", "won't": "will not",
    "would've": "would have", "wouldn't": "would not",
    "you'd": "you would", "you'd've": "you would have",
    "you'll": "you will", "you're": "you are", "you've": "you have",
}  # fmt: skip

# CheckList's Perturb.contract map, verbatim.
CONTRACT_MAP: Mapping[str, str] = {
    "is not": "isn't", "are not": "aren't", "cannot": "can't",
    "could not": "couldn't", "did not": "didn't", "does not":
    "doesn't", "do not": "don't", "had not": "hadn't", "has not":
    "hasn't", "have not": "haven't", "he is": "he's", "how did":
    "how'd", "how is": "how's", "I would": "I'd", "I will": "I'll",
    "I am": "I'm", "i would": "i'd", "i will": "i'll", "i am": "i'm",
    "it would": "it'd", "it will": "it'll", "it is": "it's",
    "might not": "mightn't", "must not": "mustn't", "need not": "needn't",
    "ought not": "oughtn't", "shall not": "shan't", "she would": "she'd",
    "she will": "she'll", "she is": "she's", "should not": "shouldn't",
    "that would": "that'd", "that is": "that's", "there would":
    "there'd", "there is": "there's", "they would": "they'd",
    "they will": "they'll", "they are": "they're", "was not": "wasn't",
    "we would": "we'd", "we will": "we'll", "we are": "we're", "were not":
    "weren't", "what are": "what're", "what is": "what's", "when is":
    "when's", "where did": "where'd", "where is": "where's",
    "who will": "who'll", "who is": "who's", "who have": "who've", "why is":
    "why's", "will not": "won't", "would not": "wouldn't", "you would":
    "you'd", "you will": "you'll", "you are": "you're",
}  # fmt: skip


def _lookup(table: Mapping[str, str], match: str) -> str | None:
    # CheckList matches case-insensitively, looks the match up as written, then lower-cased, and keeps the
    # match's first character ("Isn't" -> "Is not", "IT IS" -> "It's").
    found = table.get(match, table.get(match.lower()))
    return None if found is None else match[0] + found[1:]


def _is_clitic(token: str) -> bool:
    # PTB splits "isn't" into "is" "n't" and "I'm" into "I" "'m".
    return token.lower() == "n't" or (len(token) > 1 and token[0] == "'" and token[1:].isalpha())


@dataclass(frozen=True)
class _Site:
    start: int
    stop: int
    new: Tokens
    direction: str


def _contraction_sites(toks: Tokens) -> list[_Site]:
    sites: list[_Site] = []
    n = len(toks)
    for i in range(n):
        # expand: a text-style token, or a PTB word with up to two clitics ("ca" "n't" "'ve"), longest first
        for k in (2, 1, 0):
            if i + k >= n or not all(_is_clitic(t) for t in toks[i + 1 : i + k + 1]):
                continue
            if k == 0 and _is_clitic(toks[i]):
                continue
            expanded = _lookup(EXPAND_MAP, "".join(toks[i : i + k + 1]))
            if expanded is not None:
                sites.append(_Site(i, i + k + 1, tuple(expanded.split()), "expand"))
                break
        # contract: "cannot" (one token) or a two-token key, to CheckList's single text-style token
        contracted = _lookup(CONTRACT_MAP, toks[i])
        if contracted is not None:
            sites.append(_Site(i, i + 1, (contracted,), "contract"))
        elif i + 1 < n and not (i + 2 < n and _is_clitic(toks[i + 2])):
            # "it is n't" must not become "it's n't"
            contracted = _lookup(CONTRACT_MAP, f"{toks[i]} {toks[i + 1]}")
            if contracted is not None:
                sites.append(_Site(i, i + 2, (contracted,), "contract"))
    return sites


def contractions(tokens: Sequence[str], rng: random.Random) -> Change | None:
    """Expand or contract one contraction site (chosen with ``rng``) using CheckList's two maps.

    Expand: a text-style token ("isn't" → "is", "not"; "can't" → "cannot") or a PTB-split one ("is" "n't" →
    "is" "not"; "ca" "n't" → "cannot"; "I" "'m" → "I" "am"). Contract: two tokens forming a key ("is" "not" →
    "isn't") or "cannot" → "can't"; the result is CheckList's single text-style token, never PTB-split.
    Matching is case-insensitive and keeps the first character's case ("Is not" → "Isn't"). As in CheckList,
    "'s" and "'d" are read as "is" and "would" ("it's been" → "it is been").
    """
    toks = tuple(tokens)
    sites = _contraction_sites(toks)
    if not sites:
        return None
    site = rng.choice(sites)
    out = (*toks[: site.start], *site.new, *toks[site.stop :])
    if out == toks:
        return None
    note = {"from": " ".join(toks[site.start : site.stop]), "to": " ".join(site.new), "direction": site.direction}
    return Change(out, {**note, "index": site.start})


# --- typos -------------------------------------------------------------------------------------------------------


def add_typos(tokens: Sequence[str], rng: random.Random, *, typos: int = 1) -> Change | None:
    """Swap ``typos`` times a character of ``" ".join(tokens)`` with its right neighbour (positions drawn
    independently over the whole text, spaces included, as CheckList's ``add_typos``), then split on whitespace
    again, so a swap with a space moves a word boundary. ``None`` when the text has fewer than 2 characters or
    the result equals the input (e.g. swapping "ll")."""
    if typos < 1:
        raise ValueError("typos must be at least 1")
    toks = tuple(tokens)
    chars = list(" ".join(toks))
    if len(chars) < 2:
        return None
    positions = [rng.randrange(len(chars) - 1) for _ in range(typos)]
    for p in positions:
        chars[p], chars[p + 1] = chars[p + 1], chars[p]
    out = tuple("".join(chars).split())
    if out == toks:
        return None
    return Change(out, {"positions": positions})
