"""Word lexicon classes: a word's sentiment polarity × part of speech ("positive adjs", "neutral nouns", …).

S²LCT / ALiCT search rules keep or drop corpus sentences by the lower-cased tokens they contain from such classes,
and its syntax expansion accepts a masked-LM fill only if the word is "pure neutral" and can carry the masked
Penn tag. Everything here is read from files: nothing depends on what the machine has installed.

Two lexicons (``load_lexicon(spec)``):

* ``vader`` (default): the table shipped in ``builtin/word_classes`` (see its PROVENANCE.md), built by
  ``tools/data/build_word_classes.py``. Polarity from VADER 3.3.2's lexicon (mean valence > 0 positive, < 0
  negative; a word VADER lacks is neutral), parts of speech from WordNet 3.0 (every part of speech the word
  has as a lemma). One polarity per word, shared by all its parts of speech.
* ``sentiwordnet:PATH``: a user's ``SentiWordNet_3.0.0.txt``, labelled per (word, part of speech) by the rule of
  Colhon et al. (2017) as ALiCT applies it (``colhon_label``). Labels other than positive, negative and pure
  neutral ("balanced neutral", "half-pos-neg neutral" and the rule's leftover, here ``OTHER_NEUTRAL``) belong to
  no class and make a word not neutral. The rule's score keeps ALiCT's even-power sign loss (see
  ``colhon_label``).

As in ALiCT, WordNet/SentiWordNet adverbs (``r``) join the adjective classes. ``penn_tags`` is the offline
stand-in for spaCy's tag of a word read alone: the tags WordNet's lemmas and morphy's detachment rules allow,
or a short closed-class list for function words.
"""

from __future__ import annotations

import lzma
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path

from beluga_core.core.errors import BelugaError
from beluga_core.data import BUILTIN_DATA

POLARITIES = ("positive", "negative", "neutral")
POS_CLASSES = ("adj", "noun", "verb")
COLHON_LABELS = ("positive", "negative", "pure neutral", "balanced neutral", "half-pos-neg neutral", "neutral")
# colhon_label's leftover "neutral" (score 0, yet neither pure, balanced nor half-pos-neg) is not neutral for the
# classes; a lexicon reports it under this name so that it cannot be mistaken for the "neutral" polarity.
OTHER_NEUTRAL = "other neutral"

TABLE = BUILTIN_DATA / "word_classes" / "word_classes.tsv.xz"
TABLE_HEADER = "word\tpos\tpolarity"
# WordNet's letters as the table and SentiWordNet write them (SentiWordNet's "a" includes satellites).
LETTERS = "anrv"
LETTER_CLASS = {"a": "adj", "r": "adj", "n": "noun", "v": "verb"}
SPECS = "'vader' or 'sentiwordnet:PATH' (PATH: a SentiWordNet_3.0.0.txt file)"
SWN_FIELDS = "POS, ID, PosScore, NegScore, SynsetTerms, Gloss"

_NEUTRAL = frozenset({"neutral"})
_POLARITY_NAMES = {"positive": "positive", "pos": "positive", "negative": "negative", "neg": "negative",
                   "neutral": "neutral", "neu": "neutral"}
_POS_NAMES = {"adj": "adj", "adjs": "adj", "adjective": "adj", "adjectives": "adj", "noun": "noun",
              "nouns": "noun", "verb": "verb", "verbs": "verb"}
_CLASS = re.compile(r"\s*([a-z]+)[\s_-]+([a-z]+)\s*")
_TERM = re.compile(r"(\S+)#([1-9][0-9]*)")
_NUMBER = re.compile(r"[0-9]+(?:[.,:/][0-9]+)*")

# WordNet's morphy detachment rules (morph.c; nltk adds ves→f, which WordNet does not have): (suffix, ending).
NOUN_RULES = (("s", ""), ("ses", "s"), ("xes", "x"), ("zes", "z"), ("ches", "ch"), ("shes", "sh"),
              ("men", "man"), ("ies", "y"))
# Verb and adjective rules with the tags a form they apply to carries ("-ed" is the past and the participle).
VERB_RULES = (("s", "", ("VBZ",)), ("ies", "y", ("VBZ",)), ("es", "e", ("VBZ",)), ("es", "", ("VBZ",)),
              ("ed", "e", ("VBD", "VBN")), ("ed", "", ("VBD", "VBN")), ("ing", "e", ("VBG",)), ("ing", "", ("VBG",)))
ADJ_RULES = (("er", "", ("JJR",)), ("est", "", ("JJS",)), ("er", "e", ("JJR",)), ("est", "e", ("JJS",)))

# Function words a fill or a template may produce, with every Penn tag the word can carry. WordNet knows some of
# them only by rare senses ("in" indium, "is"/"as" as plurals of "i"/"a", "can" the container), which a tagger
# reading the word alone would never choose: for these words the list replaces WordNet.
_CLOSED_BY_TAG = {
    "DT": "a all an another any both each either every neither no some that the these this those",
    "PDT": "all both",
    "CC": "and both but either neither nor or plus so yet",
    "IN": "about above across after against along although among around as at because before behind below beneath "
          "beside between beyond by despite down during except for from if in inside into of off on onto out outside "
          "over since than that though through throughout toward towards under unless until up upon via whereas "
          "whether while with within without",
    "RP": "about across along around down in off on out over through up",
    "RB": "about above across after along around before behind below beneath beside beyond down in inside not n't "
          "off on out outside over since so there through throughout under up within without yet",
    "TO": "to",
    "EX": "there",
    "PRP": "he her herself him himself his i it itself me myself one ourselves she them themselves they us we "
           "you yourself yourselves",
    "PRP$": "her his its my our their your",
    "WDT": "that what whatever which whichever",
    "WP": "what who whoever whom",
    "WP$": "whose",
    "WRB": "how when where why",
    "MD": "can could may might must ought shall should will would 'll 'd",
    "POS": "'s '",
    "UH": "no oh yes",
    "CD": "zero one two three four five six seven eight nine ten eleven twelve twenty thirty forty fifty sixty "
          "seventy eighty ninety hundred thousand million billion",
    "NN": "one",
    "VB": "be do have 've",
    "VBP": "am are do have 're 've 'm",
    "VBZ": "does has is 's",
    "VBD": "did had was were 'd",
    "VBN": "been done had",
    "VBG": "being doing having",
}


def _closed_class() -> dict[str, frozenset[str]]:
    tags: dict[str, set[str]] = {}
    for tag, words in _CLOSED_BY_TAG.items():
        for word in words.split():
            tags.setdefault(word, set()).add(tag)
    return {word: frozenset(t) for word, t in tags.items()}


CLOSED_CLASS: Mapping[str, frozenset[str]] = _closed_class()


@dataclass(frozen=True)
class Lexicon:
    """Word classes of one lexicon. Lookups lower-case the word; the tables behind it are internal."""

    name: str
    _classes: Mapping[tuple[str, str], frozenset[str]] = field(repr=False, compare=False)
    _labels: Mapping[str, frozenset[str]] = field(repr=False, compare=False)
    _letters: Mapping[str, str] = field(repr=False, compare=False)

    def words(self, polarity: str, pos: str) -> frozenset[str]:
        """The class ``(polarity, pos)``, e.g. ``("neutral", "noun")``; ``parse_class`` reads "neutral nouns"."""
        if polarity not in POLARITIES or pos not in POS_CLASSES:
            raise BelugaError(f"no word class ({polarity!r}, {pos!r}): expected a polarity among "
                              f"{', '.join(POLARITIES)} and a part of speech among {', '.join(POS_CLASSES)}")
        return self._classes.get((polarity, pos), frozenset())

    def polarities(self, word: str) -> frozenset[str]:
        """The word's labels over all its parts of speech: ``POLARITIES`` members, and for SentiWordNet also
        "balanced neutral", "half-pos-neg neutral" or ``OTHER_NEUTRAL``. ``{"neutral"}`` for an unknown word."""
        return self._labels.get(word.lower(), _NEUTRAL)

    def is_neutral(self, word: str) -> bool:
        """Pure neutral: every label the word has is "neutral" (an unknown word is)."""
        return self.polarities(word) == _NEUTRAL

    def pos(self, word: str) -> frozenset[str]:
        """The word's parts of speech among ``POS_CLASSES`` (adverbs count as adjectives)."""
        return frozenset(LETTER_CLASS[letter] for letter in self._letters.get(word.lower(), ""))

    def penn_tags(self, word: str) -> frozenset[str]:
        """The Penn Treebank tags the word can carry, from the lexicon alone (no tagger, no context).

        A closed-class word gets its listed tags only; digits get CD. Otherwise: a noun lemma NN, a word that
        morphy's noun rules reduce to a noun lemma NNS (also when it is itself a lemma, as morphy returns both:
        "ways"), an adjective JJ (JJR / JJS by the er / est rules), an adverb RB, a verb lemma VB and VBP, and
        the verb rules give VBZ, VBD with VBN, or VBG. Irregular forms (WordNet's exception lists: "children",
        "went") are not known. Empty when nothing applies."""
        w = word.lower()
        if w in CLOSED_CLASS:
            return CLOSED_CLASS[w]
        if _NUMBER.fullmatch(w):
            return frozenset({"CD"})
        letters = self._letters.get(w, "")
        tags = {tag for letter, tag in (("n", "NN"), ("a", "JJ"), ("r", "RB")) if letter in letters}
        if "v" in letters:
            tags.update(("VB", "VBP"))
        if any(self._reduces(w, suffix, ending, "n") for suffix, ending in NOUN_RULES):
            tags.add("NNS")
        for letter, rules in (("v", VERB_RULES), ("a", ADJ_RULES)):
            for suffix, ending, rule_tags in rules:
                if self._reduces(w, suffix, ending, letter):
                    tags.update(rule_tags)
        return frozenset(tags)

    def _reduces(self, word: str, suffix: str, ending: str, letter: str) -> bool:
        if not word.endswith(suffix) or len(word) == len(suffix):
            return False
        return letter in self._letters.get(word[: -len(suffix)] + ending, "")


def parse_class(text: str) -> tuple[str, str]:
    """A class name as search rules write it → (polarity, pos): "positive adjs", "neutral nouns", "neg verb",
    "pos adj" and "positive_adj" (ALiCT's key) are accepted, in any case."""
    match = _CLASS.fullmatch(text.lower())
    if match and match[1] in _POLARITY_NAMES and match[2] in _POS_NAMES:
        return _POLARITY_NAMES[match[1]], _POS_NAMES[match[2]]
    raise BelugaError(f"not a word class: {text!r}; expected '<polarity> <part of speech>' with polarity one of "
                      f"{', '.join(_POLARITY_NAMES)} and part of speech one of {', '.join(_POS_NAMES)} "
                      f"(e.g. 'positive adjs', 'neutral nouns', 'neg verb')")


def colhon_label(senses: Sequence[tuple[float, float]]) -> str:
    """The label of one (word, part of speech) from its SentiWordNet synsets, ordered by sense number: (pos score,
    neg score) per sense. Colhon et al. (2017) as ALiCT's ``Sentiwordnet.py`` computes it, with i = 1..k:

    agg_pos = Σ (1/i)·p_i^i / Σ (1/i), agg_neg likewise, obj = 1 − agg_pos − agg_neg,
    score = Σ (1/i)·(p_i − n_i)^i, not normalised.

    score > 0: "positive"; < 0: "negative"; = 0: "pure neutral" (agg_pos = agg_neg = 0, obj = 1), else
    "balanced neutral" (0.006 ≤ agg_pos ≤ 0.41, agg_neg ≥ 0.006, 0.16 ≤ obj ≤ 0.41), else "half-pos-neg neutral"
    (0.5, 0.5, 0), else "neutral". Fidelity, not a fix: an even power of a negative difference counts as positive
    (a word whose second sense is negative leans positive), and comparisons are exact, as in ALiCT.
    """
    if not senses:
        raise ValueError("colhon_label needs at least one sense")
    k = len(senses)
    # Same expressions and summation order as ALiCT, so that the exact comparisons below give its labels.
    denom = sum([1.0 / i for i in range(1, k + 1)])
    agg_pos = sum([(1.0 / i) * (senses[i - 1][0] ** i) for i in range(1, k + 1)]) / denom
    agg_neg = sum([(1.0 / i) * (senses[i - 1][1] ** i) for i in range(1, k + 1)]) / denom
    obj = 1 - agg_pos - agg_neg
    # Even i: (p − n)^i ≥ 0 whatever the sign of p − n (the sign loss kept for fidelity; see the docstring).
    score = sum([(1.0 / i) * ((senses[i - 1][0] - senses[i - 1][1]) ** i) for i in range(1, k + 1)])
    if score > 0:
        return "positive"
    if score < 0:
        return "negative"
    if agg_pos == 0 and agg_neg == 0 and obj == 1:
        return "pure neutral"
    if 0.006 <= agg_pos <= 0.41 and agg_neg >= 0.006 and 0.16 <= obj <= 0.41:
        return "balanced neutral"
    if agg_pos == 0.5 and agg_neg == 0.5 and obj == 0:
        return "half-pos-neg neutral"
    return "neutral"


def load_lexicon(spec: str = "vader") -> Lexicon:
    """The lexicon ``spec`` names: "vader" (shipped) or "sentiwordnet:PATH". Cached; a file is read again when it
    changes."""
    spec = spec.strip()
    if spec == "vader":
        return _load_vader(TABLE)
    kind, sep, path = spec.partition(":")
    if kind != "sentiwordnet" or not sep or not path.strip():
        raise BelugaError(f"unknown lexicon {spec!r}: expected {SPECS}")
    file = Path(path.strip()).expanduser()
    if not file.is_file():
        raise BelugaError(f"SentiWordNet file not found (expected SentiWordNet_3.0.0.txt, tab-separated "
                          f"{SWN_FIELDS})", source=file)
    stat = file.stat()
    return _load_sentiwordnet(spec, str(file.resolve()), stat.st_mtime_ns, stat.st_size)


def _read_text(path: Path, compressed: bool = False) -> str:
    try:
        data = path.read_bytes()
        return (lzma.decompress(data) if compressed else data).decode("utf-8")
    except (OSError, lzma.LZMAError, UnicodeDecodeError) as exc:
        what = "an xz-compressed UTF-8 TSV" if compressed else "a UTF-8 text file"
        raise BelugaError(f"cannot read it as {what}: {exc}", source=path) from None


@lru_cache(maxsize=1)
def _load_vader(path: Path) -> Lexicon:
    lines = _read_text(path, compressed=True).split("\n")
    if lines[0] != TABLE_HEADER or lines[-1] != "":
        raise BelugaError(f"expected the header {TABLE_HEADER!r} and a final newline", source=path, line=1)
    shared = {p: frozenset({p}) for p in POLARITIES}
    labels: dict[str, frozenset[str]] = {}
    letters: dict[str, str] = {}
    classes: dict[tuple[str, str], set[str]] = {}
    for lineno, line in enumerate(lines[1:-1], start=2):
        parts = line.split("\t")
        if (len(parts) != 3 or not parts[0] or parts[2] not in shared or parts[0] in labels
                or "".join(sorted(set(parts[1]))) != parts[1] or not set(parts[1]) <= set(LETTERS)):
            raise BelugaError(f"expected word<TAB>pos<TAB>polarity with a new word, pos the sorted letters among "
                              f"'{LETTERS}' (may be empty) and polarity one of {', '.join(POLARITIES)}; "
                              f"got {line!r}", source=path, line=lineno)
        word, pos, polarity = parts
        labels[word] = shared[polarity]
        if pos:
            letters[word] = pos
            for letter in pos:
                classes.setdefault((polarity, LETTER_CLASS[letter]), set()).add(word)
    return Lexicon("vader", {key: frozenset(ws) for key, ws in classes.items()}, labels, letters)


@lru_cache(maxsize=8)
def _load_sentiwordnet(spec: str, path: str, mtime_ns: int, size: int) -> Lexicon:
    file = Path(path)
    senses: dict[tuple[str, str], list[tuple[int, str, float, float]]] = {}
    # Split at LF only (str.splitlines also splits at U+0085 and the like, which would shift the line numbers).
    for lineno, line in enumerate(_read_text(file).replace("\r\n", "\n").split("\n"), start=1):
        if line.startswith("#") or not line.strip():
            continue
        fields = line.split("\t")
        problem = _swn_problem(fields)
        if problem:
            raise BelugaError(f"{problem}; expected tab-separated {SWN_FIELDS} (e.g. 'a<TAB>00001740<TAB>0.125"
                              f"<TAB>0<TAB>able#1<TAB>gloss'); got {line[:120]!r}", source=file, line=lineno)
        letter, ident, pos_score, neg_score = fields[0], fields[1], float(fields[2]), float(fields[3])
        for term in fields[4].split():
            match = _TERM.fullmatch(term)
            assert match is not None   # _swn_problem checked every term
            # Multi-word terms cannot match one token; ALiCT keys a term as written, so do we until lower-casing.
            if "_" not in match[1]:
                senses.setdefault((match[1], letter), []).append((int(match[2]), ident, pos_score, neg_score))
    labels: dict[str, set[str]] = {}
    letters: dict[str, set[str]] = {}
    classes: dict[tuple[str, str], set[str]] = {}
    for (term, letter), rows in senses.items():
        rows.sort()
        label = colhon_label([(p, n) for _, _, p, n in rows])
        label = {"pure neutral": "neutral", "neutral": OTHER_NEUTRAL}.get(label, label)
        word = term.lower()
        labels.setdefault(word, set()).add(label)
        letters.setdefault(word, set()).add(letter)
        if label in POLARITIES:
            classes.setdefault((label, LETTER_CLASS[letter]), set()).add(word)
    return Lexicon(spec, {key: frozenset(ws) for key, ws in classes.items()},
                   {word: frozenset(ls) for word, ls in labels.items()},
                   {word: "".join(sorted(ls)) for word, ls in letters.items()})


def _swn_problem(fields: list[str]) -> str | None:
    """What is wrong with one SentiWordNet line, or None."""
    if len(fields) < 5:
        return f"{len(fields)} fields"
    if fields[0] not in LETTERS:
        return f"POS {fields[0]!r} is not one of a, n, r, v"
    if not fields[1].isdigit():
        return f"ID {fields[1]!r} is not a synset offset"
    try:
        scores = float(fields[2]), float(fields[3])
    except ValueError:
        return f"PosScore {fields[2]!r} / NegScore {fields[3]!r} are not numbers"
    if not all(0 <= s <= 1 for s in scores) or sum(scores) > 1 + 1e-9:
        return f"PosScore {fields[2]} and NegScore {fields[3]} must lie in [0, 1] and sum to at most 1"
    terms = fields[4].split()
    if not terms or not all(_TERM.fullmatch(t) for t in terms):
        return f"SynsetTerms {fields[4]!r} are not all word#sense"
    return None
