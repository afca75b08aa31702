"""CheckList's context perturbation functions, re-implemented on plain word tokens.

Long: the seven functions share the lexicon indexes and the name / place recognisers, which only make sense
together; split apart, each part would import the others' private helpers.

A suite generator calls these on (a) the words between the two entities of a relation-extraction sentence or
(b) a whole sentence (SST-2 and the like). Each function takes a token sequence (whitespace tokens, FewRel/PTB
style: punctuation is its own token; contractions either PTB-split, ``["is", "n't"]``, or CheckList text style,
``"isn't"``) and a ``random.Random``, and returns ONE :class:`Change` or ``None`` when it does not apply.

The functions and what they do (CheckList's ``checklist.perturb.Perturb`` of checklist 0.0.11, with n = 1):

- :func:`punctuation`: strip the trailing punctuation tokens if there are any, else append ``"."``.
- :func:`strip_punctuation`: strip the trailing punctuation tokens.
- :func:`change_location`: replace a city (CheckList's ``city`` list) by one of the first ``n_cities`` cities, or
  a country (``country``) by one of the first ``n_countries`` countries, never by itself.
- :func:`change_names`: replace a person's first name by a first name of the same gender from the first
  ``n_first`` of CheckList's ``women`` / ``men`` lists, and the last name, if any, by one of the first
  ``n_first`` of ``last``.
- :func:`change_number`: x → x + δ, δ ≠ 0 uniform in [−min(⌊0.2x⌋+1, x−1), ⌊0.2x⌋+1]; "2" and "4" are
  never changed (often "to" / "for").
- :func:`contractions`: expand one contraction ("isn't" → "is not") or contract one expanded form ("is not" →
  "isn't") with CheckList's two fixed maps.
- :func:`add_typos`: swap one character of the joined text with its right neighbour.

Deviations from CheckList, all deliberate:

- Tokens instead of spaCy docs. CheckList finds persons and places with spaCy's NER (PERSON / GPE entities)
  and punctuation with spaCy's POS tag; here a person name or a location is recognised by lexicon membership
  alone (case-sensitive, as capitalised in the lexicons), and punctuation by the characters of a token
  (:func:`is_punctuation`). To keep that precise without a tagger, title-case words that are in the first-name
  lists but are usually something else (months, weekdays, titles such as "King", modals such as "Will", the
  countries / nationalities / religions of ``basic.json``, e.g. "Jordan", "Christian") never start a name, and a
  city or country token inside a recognised full name ("Whitney Houston", "George Washington") is no location.
  Lower-cased text (SST-2 as distributed) therefore yields no names or locations.
- Randomness comes only from the per-case ``random.Random`` the caller passes (CheckList uses numpy's global
  RNG); each function returns one perturbation, not a sample of n, so equal rng states give equal outputs.
- ``change_names`` fixes CheckList's quirk: for a two-token name CheckList zips the *unsampled* first-name list
  with the sampled last names, so the new first name is always the list's most frequent one ("Michael" /
  "Jennifer"); here the first and last names are sampled independently. The new names also never equal the
  old ones (CheckList may draw the same name).
- ``change_number`` skips years by default (``skip_years=True``: 4-digit numbers 1000–2100), because moving a
  year is not label-preserving for date-sensitive relations; CheckList changes them.
- ``contractions`` returns one site's change, not "all expanded" and "all contracted" strings, and contracts
  "is not" even at the end of the sequence (CheckList's regex needs a following space).
"""

from __future__ import annotations

import json
import random
import re
import unicodedata
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from functools import cache
from typing import Any

from beluga_core.data import BUILTIN_DATA

Tokens = tuple[str, ...]

LEXICON_DIR = BUILTIN_DATA / "lexicons"


@dataclass(frozen=True)
class Change:
    """One perturbation: the new token sequence (its length may differ from the input's) and a JSON-serialisable
    note of what changed (e.g. ``{"from": "Paris", "to": "Lyon"}``)."""

    tokens: Tokens
    # hash=False: the note is a dict; a Change hashes by its tokens (equal Changes still hash equal)
    note: dict[str, Any] = field(hash=False)


# --- lexicons -----------------------------------------------------------------------------------------------

# Title-case words that are in CheckList's first-name lists but in running text are far more often a month,
# weekday, title, modal or adjective; without a tagger they would make "King George" or "Will he ..." a name.
_NOT_FIRST_NAMES = frozenset(
    {
        # closed-class words and common adjectives
        "An", "Any", "My", "May", "Will", "Said", "Ever", "Seven", "Long", "Little", "Young", "True", "West",
        "Golden", "Baby", "Major", "General",
        # calendar
        "January", "February", "April", "June", "July", "August", "September", "October", "November",
        "December", "Monday", "Tuesday", "Wednesday", "Thursday", "Friday", "Saturday", "Sunday",
        # titles (they precede a name: "King George", "Judge Smith")
        "King", "Queen", "Prince", "Princess", "Duke", "Lady", "Sir", "Saint", "Judge", "Bishop", "Royal",
        "Justice", "Earl", "Baron", "Count",
    }
)  # fmt: skip

_LocationEntry = tuple[Tokens, str, str]  # (tokens to match, lexicon entry, "city" | "country")


@dataclass(frozen=True)
class Lexicons:
    """CheckList's vendored lexicons (``names.json``, ``lexicons/basic.json``) and the indexes built on them."""

    women: Tokens
    men: Tokens
    last: Tokens
    cities: Tokens
    countries: Tokens
    gender_of: Mapping[str, str]  # recognised first name -> "women" | "men" (exclusions applied)
    last_names: frozenset[str]
    # first token -> every entry starting with it, longest first (cities before countries at equal length)
    locations: Mapping[str, tuple[_LocationEntry, ...]]

    def first_names(self, gender: str) -> Tokens:
        return self.women if gender == "women" else self.men


def _location_variants(entry: str) -> set[Tokens]:
    # PTB text splits "(" ")" "," off ("Virgin Islands ( U.S. )"); the lexicon writes them attached.
    return {tuple(entry.split()), tuple(re.sub(r"([(),])", r" \1 ", entry).split())}


@cache
def lexicons() -> Lexicons:
    """Load the vendored lexicons once per process (``beluga_core/data/builtin/lexicons``)."""
    names = json.loads((LEXICON_DIR / "names.json").read_text(encoding="utf-8"))
    basic = json.loads((LEXICON_DIR / "basic.json").read_text(encoding="utf-8"))
    women, men, last = tuple(names["women"]), tuple(names["men"]), tuple(names["last"])
    cities, countries = tuple(basic["city"]), tuple(basic["country"])

    not_names = set(_NOT_FIRST_NAMES)
    for key in ("country", "nationality", "religion", "religion_adj"):
        not_names.update(basic[key])
    gender_of: dict[str, str] = {}
    # The two lists are disjoint in 0.0.11; CheckList lets "men" win on an overlap, and so does this order.
    for gender, pool in (("women", women), ("men", men)):
        for name in pool:
            if name not in not_names:
                gender_of[name] = gender

    index: dict[str, dict[Tokens, _LocationEntry]] = {}
    for kind, entries in (("city", cities), ("country", countries)):
        for entry in entries:
            for toks in _location_variants(entry):
                # setdefault: the first entry wins, i.e. a city over a country and a more frequent city over a
                # duplicate ("Columbus" is listed twice).
                index.setdefault(toks[0], {}).setdefault(toks, (toks, entry, kind))
    locations = {
        first: tuple(sorted(by_tokens.values(), key=lambda e: -len(e[0]))) for first, by_tokens in index.items()
    }
    return Lexicons(
        women=women,
        men=men,
        last=last,
        cities=cities,
        countries=countries,
        gender_of=gender_of,
        last_names=frozenset(last),
        locations=locations,
    )


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


# --- locations ---------------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class _Span:
    start: int
    stop: int


def _location_occurrences(toks: Tokens, lex: Lexicons) -> list[tuple[_Span, str, str]]:
    """Non-overlapping (span, entry, kind) matches, left to right, longest match first ("North Las Vegas" is
    not "Las Vegas"), skipping matches inside a recognised full name."""
    in_names: set[int] = set()
    for occ in _name_occurrences(toks, lex):
        if occ.stop - occ.start > 1:
            in_names.update(range(occ.start, occ.stop))
    found: list[tuple[_Span, str, str]] = []
    i = 0
    while i < len(toks):
        for cand, entry, kind in lex.locations.get(toks[i], ()):
            stop = i + len(cand)
            if toks[i:stop] == cand:
                if not in_names.intersection(range(i, stop)):
                    found.append((_Span(i, stop), entry, kind))
                i = stop
                break
        else:
            i += 1
    return found


def change_location(
    tokens: Sequence[str], rng: random.Random, *, n_cities: int = 100, n_countries: int = 50
) -> Change | None:
    """Replace one city or country (chosen with ``rng`` among the occurrences) by another city from the first
    ``n_cities`` of CheckList's ``city`` list (a country: from the first ``n_countries`` of ``country``), never
    by itself. Every occurrence of the same location is replaced; a multi-word replacement ("New York") becomes
    several tokens. Matching is exact and case-sensitive on token sequences ("New", "York"). Note that
    CheckList's city list is US cities only.
    """
    if n_cities < 1 or n_countries < 1:
        raise ValueError("n_cities and n_countries must be at least 1")
    toks = tuple(tokens)
    lex = lexicons()
    found = _location_occurrences(toks, lex)
    if not found:
        return None
    _, entry, kind = rng.choice(found)
    pool = lex.cities[:n_cities] if kind == "city" else lex.countries[:n_countries]
    choices = [p for p in pool if p != entry]
    if not choices:
        return None
    new = rng.choice(choices)
    spans = [span for span, e, _ in found if e == entry]
    out = _replace_spans(toks, spans, tuple(new.split()))
    return Change(out, {"from": entry, "to": new, "kind": kind, "occurrences": len(spans)})


def _replace_spans(toks: Tokens, spans: Sequence[_Span], new: Tokens) -> Tokens:
    out: list[str] = []
    pos = 0
    for span in spans:  # sorted, non-overlapping
        out.extend(toks[pos : span.start])
        out.extend(new)
        pos = span.stop
    out.extend(toks[pos:])
    return tuple(out)


# --- names -------------------------------------------------------------------------------------------------------

_ROMAN = re.compile(r"^[IVXLC]+$")


def _is_initial(token: str) -> bool:
    # CheckList accepts any ≤ 2-character second word of a PERSON entity; without NER it must at least look
    # like an initial ("J", "J.", "Wu"), else "John is" would be a full name. Regnal numerals ("George V",
    # "Mary I") and the pronoun "I" are not initials.
    return 1 <= len(token) <= 2 and token[0].isalpha() and token[0].isupper() and not _ROMAN.match(token)


@dataclass(frozen=True)
class _Name:
    start: int
    stop: int
    first: str
    gender: str
    middle: str | None  # a kept middle initial ("John F. Kennedy")
    last: str | None

    def tokens(self) -> Tokens:
        return tuple(t for t in (self.first, self.middle, self.last) if t is not None)


def _name_occurrences(toks: Tokens, lex: Lexicons) -> list[_Name]:
    """Non-overlapping names, left to right: a first name, then optionally a last name (a ``last`` entry or an
    initial), or a middle initial and a ``last`` entry."""
    found: list[_Name] = []
    i = 0
    n = len(toks)
    while i < n:
        gender = lex.gender_of.get(toks[i])
        if gender is None:
            i += 1
            continue
        nxt = toks[i + 1] if i + 1 < n else None
        after = toks[i + 2] if i + 2 < n else None
        if nxt is not None and after is not None and _is_initial(nxt) and after in lex.last_names and len(after) > 2:
            occ = _Name(i, i + 3, toks[i], gender, nxt, after)
        elif nxt is not None and (nxt in lex.last_names or _is_initial(nxt)):
            occ = _Name(i, i + 2, toks[i], gender, None, nxt)
        else:
            occ = _Name(i, i + 1, toks[i], gender, None, None)
        found.append(occ)
        i = occ.stop
    return found


def _ngram_spans(toks: Tokens, gram: Tokens) -> list[_Span]:
    spans: list[_Span] = []
    i = 0
    while i <= len(toks) - len(gram):
        if toks[i : i + len(gram)] == gram:
            spans.append(_Span(i, i + len(gram)))
            i += len(gram)
        else:
            i += 1
    return spans


def change_names(tokens: Sequence[str], rng: random.Random, *, n_first: int = 90) -> Change | None:
    """Replace one person name (chosen with ``rng`` among the recognised occurrences) by another.

    A name is a token in CheckList's ``women`` or ``men`` first-name lists (exact case, as in the lexicon; minus
    the month / title / modal / country-like words listed in this module), optionally followed by a last name: a
    token in ``last`` or an initial (≤ 2 characters, capitalised, not a Roman numeral). "First Initial Last"
    ("John F. Kennedy") is one name whose initial is kept. The first name is replaced by a first name of the same
    gender from the first ``n_first`` names of that list, the last name (if any) by one of the first ``n_first``
    last names, each drawn independently and never equal to the old one.

    CheckList's released quirk is fixed here: for a two-token name it zips the unsampled first-name list with
    the sampled last names, so its new first name is always the list's first ("Michael", "Jennifer").

    Every occurrence of the chosen name's token string is replaced, including inside longer names (as CheckList's
    ``\\bJohn\\b`` regex does): choosing "John" also turns "John Smith" into "Michael Smith".
    """
    if n_first < 1:
        raise ValueError("n_first must be at least 1")
    toks = tuple(tokens)
    lex = lexicons()
    found = _name_occurrences(toks, lex)
    if not found:
        return None
    occ = rng.choice(found)
    first_pool = [f for f in lex.first_names(occ.gender)[:n_first] if f != occ.first]
    if not first_pool:
        return None
    new_first = rng.choice(first_pool)
    new_last: str | None = None
    if occ.last is not None:
        last_pool = [x for x in lex.last[:n_first] if x != occ.last]
        if not last_pool:
            return None
        new_last = rng.choice(last_pool)
    old = occ.tokens()
    new = tuple(t for t in (new_first, occ.middle, new_last) if t is not None)
    spans = _ngram_spans(toks, old)
    out = _replace_spans(toks, spans, new)
    return Change(out, {"from": " ".join(old), "to": " ".join(new), "gender": occ.gender, "occurrences": len(spans)})


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


CONTEXT_FUNCTIONS: dict[str, Callable[..., Change | None]] = {
    "punctuation": punctuation,
    "strip_punctuation": strip_punctuation,
    "change_location": change_location,
    "change_names": change_names,
    "change_number": change_number,
    "contractions": contractions,
    "add_typos": add_typos,
}
