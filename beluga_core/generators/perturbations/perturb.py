"""CheckList's context perturbation functions, re-implemented on plain word tokens: the catalogue of the seven.

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

Where they live: the perturbations of names and places, with the lexicons and recognisers they share, in
``perturbations.names_and_places``; those that read the tokens alone, and ``Change``, in
``perturbations.token_edits``. This module names them (``CONTEXT_FUNCTIONS``) and exports them under one path.
"""

from __future__ import annotations

from collections.abc import Callable

from beluga_core.generators.perturbations.names_and_places import Lexicons, change_location, change_names, lexicons
from beluga_core.generators.perturbations.token_edits import (
    Change,
    add_typos,
    change_number,
    contractions,
    is_punctuation,
    punctuation,
    strip_punctuation,
)

__all__ = ["CONTEXT_FUNCTIONS", "Change", "Lexicons", "add_typos", "change_location", "change_names", "change_number",
           "contractions", "is_punctuation", "lexicons", "punctuation", "strip_punctuation"]


CONTEXT_FUNCTIONS: dict[str, Callable[..., Change | None]] = {
    "punctuation": punctuation,
    "strip_punctuation": strip_punctuation,
    "change_location": change_location,
    "change_names": change_names,
    "change_number": change_number,
    "contractions": contractions,
    "add_typos": add_typos,
}
