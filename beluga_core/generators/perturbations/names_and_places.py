"""The CheckList perturbations of names and places (``change_names``, ``change_location``): CheckList's vendored
lexicons, their indexes, and the recognisers that find a person's name or a city or country among plain tokens by
lexicon membership. ``generators.perturbations.perturb`` describes the perturbations and the deviations from
CheckList."""

from __future__ import annotations

import json
import random
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from functools import cache

from beluga_core.data import BUILTIN_DATA
from beluga_core.generators.perturbations.token_edits import Change, Tokens

LEXICON_DIR = BUILTIN_DATA / "lexicons"


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
