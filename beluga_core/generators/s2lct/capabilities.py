"""Capability spec files for the ``s2lct`` generator: search rules, transformations, labels (S²LCT, phase 1).

A spec (TOML or JSON; ``schemas/capability-spec.schema.json``) lists linguistic capabilities (``[[lc]]``). Each
says which corpus sentences qualify (``search``: rules ORed, each rule's conditions ANDed), how a qualifying
sentence becomes test cases (``transform``) and what the model must answer (``label``):

- ``length = "<10"``: whitespace tokens of the (already tokenised) sentence, a final "." not counted;
- ``include = ["neutral adjs", "neutral nouns"]``: at least one lower-cased token from each lexicon class;
- ``exclude = [...]``: no token from any of these classes;
- ``regex = "^(This|That|These|Those) (is|are)"`` must match (``re.search``); with ``not_negated = true`` the match
  must not be followed by " not " or " n't " (the negation guard: an already negated copula does not qualify);
- ``label = "negative" | "neutral" | "positive"``: the corpus label.

Lexicon classes are words, not tags in context (as S²LCT's code: a word list per polarity × part of speech);
``beluga_core.generators.s2lct.lexicon`` has them. Transformations: none (the sentence is the case), ``template`` (the
Cartesian product of phrase lists joined by spaces, one block per corpus label of the seed; ``{seed}`` is the
sentence, ``{NAME}`` a pool of sentences drawn per seed) and ``negate-copula`` (" not" after the matched copula).
"""

from __future__ import annotations

import itertools
import json
import random
import re
import tomllib
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator, model_validator

from beluga_core.config.load import locate_key
from beluga_core.core.errors import BelugaError, format_validation_error
from beluga_core.data import BUILTIN_DATA
from beluga_core.data.iid.builtin import BUILTIN_PREFIX
from beluga_core.generators.s2lct.lexicon import Lexicon, parse_class

BUILTIN_SPECS = BUILTIN_DATA / "capabilities"
_LENGTH = re.compile(r"\s*(<=|>=|<|>|==)\s*([0-9]+)\s*")
_SLOT = re.compile(r"\{([A-Za-z_][A-Za-z0-9_-]*)\}")
SEED_SLOT = "seed"
NEGATION_AFTER = (" not ", " n't ")


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class SearchRule(_Strict):
    """One search rule: every condition given must hold."""

    length: str | None = Field(None, description=(
        "Token count condition, e.g. '<10' (whitespace tokens; a final '.' is not counted). Operators: < <= > >= ==."))
    include: list[str] = Field(default_factory=list, description=(
        "Lexicon classes ('positive adjs', 'neutral nouns', 'negative verbs', …): the sentence has a lower-cased "
        "token of each."))
    exclude: list[str] = Field(default_factory=list, description="Lexicon classes none of whose words may occur.")
    regex: str | None = Field(None, description="A Python regular expression the sentence must match (re.search).")
    not_negated: bool = Field(False, description=(
        "With regex: the match must not be followed by ' not ' or \" n't \" (the sentence is not already negated)."))
    label: str | None = Field(None, description="The corpus label the sentence must have.")

    @field_validator("length")
    @classmethod
    def _length(cls, v: str | None) -> str | None:
        if v is not None and not _LENGTH.fullmatch(v):
            raise ValueError(f"length {v!r}: expected an operator and a number, e.g. '<10' or '>=3'")
        return v

    @field_validator("include", "exclude")
    @classmethod
    def _classes(cls, v: list[str]) -> list[str]:
        for name in v:
            try:
                parse_class(name)
            except BelugaError as exc:
                raise ValueError(exc.message) from None
        return v

    @field_validator("regex")
    @classmethod
    def _regex(cls, v: str | None) -> str | None:
        if v is not None:
            try:
                re.compile(v)
            except re.error as exc:
                raise ValueError(f"regex {v!r} does not compile: {exc}") from None
        return v

    @model_validator(mode="after")
    def _guard(self) -> SearchRule:
        if self.not_negated and self.regex is None:
            raise ValueError("not_negated needs a regex (the guard looks after its match)")
        return self


LabelSpec = str | list[str]


class Pool(_Strict):
    """Sentences drawn per seed into a template slot ``{NAME}`` (never the seed itself)."""

    search: list[SearchRule] = Field(min_length=1, description="Which corpus sentences the pool holds (ORed).")
    n: int = Field(3, ge=1, description="How many are drawn per seed (fewer where the pool is smaller).")


class TemplateBlock(_Strict):
    """The template for seeds of one corpus label."""

    parts: list[list[str]] = Field(min_length=1, description=(
        "Phrase lists; every combination (one phrase of each list, in order) joined by spaces is a case. "
        "'{seed}' is the seed sentence; '{NAME}' a sentence of the pool NAME (one case per drawn sentence)."))
    label: LabelSpec | None = Field(None, description=(
        "The cases' label for this block (a label, or a list of accepted labels); default: the capability's."))
    pools: dict[str, Pool] = Field(default_factory=dict)

    @model_validator(mode="after")
    def _slots(self) -> TemplateBlock:
        names = {m for part in self.parts for phrase in part for m in _SLOT.findall(phrase)}
        unknown = sorted(names - {SEED_SLOT} - set(self.pools))
        if unknown:
            raise ValueError(f"slot(s) {', '.join('{' + u + '}' for u in unknown)} name no pool; pools: "
                             f"{', '.join(sorted(self.pools)) or 'none'}")
        if SEED_SLOT not in names:
            raise ValueError("no part holds '{seed}': the template would not contain the seed sentence")
        return self


class Template(_Strict):
    kind: Literal["template"]
    by_label: dict[str, TemplateBlock] = Field(min_length=1, description=(
        "Per corpus label of the seed, its template; a seed whose label has none yields nothing."))


class NegateCopula(_Strict):
    kind: Literal["negate-copula"]
    pattern: str = Field("^(This|That|These|Those) (is|are)", description=(
        "The copula phrase after whose first match the negation goes."))
    forms: list[str] = Field(default_factory=lambda: ["not"], min_length=1, description=(
        "Negations inserted, one case each (S²LCT's code: 'not'; its paper also \"n't\")."))


Transform = Annotated[Template | NegateCopula, Field(discriminator="kind")]


class Expansion(_Strict):
    """What grammar-guided expansion (phase 2) requires of a fill."""

    word_sentiment: Literal["neutral", "any"] = Field("neutral", description="Fill words must be neutral words.")
    recheck: Literal["search", "none"] = Field("none", description=(
        "'search': an expanded sentence must still satisfy the capability's search rules (the corpus label "
        "aside: it inherits the seed's)."))


class Capability(_Strict):
    """One linguistic capability (LC)."""

    id: str = Field(min_length=1, description="Short id (e.g. LC4); unique in the spec.")
    name: str = Field(min_length=1, description="The capability's group name in the suite's 'lc' level.")
    capability: str = Field(min_length=1, description="The coarser group (the suite's 'capability' level).")
    checklist_functionality: str | None = Field(None, description=(
        "The matching functionality of CheckList's sentiment suite: the suite header maps lc → functionality, so "
        "a run evaluates this capability beside the template cases of that functionality."))
    search: list[SearchRule] = Field(min_length=1, description="Rules (ORed) selecting the seed sentences.")
    transform: Transform | None = Field(None, description="None: the seed sentence itself is the case.")
    label: LabelSpec = Field(description=(
        "The expected label: a label name, 'same' (the seed's corpus label) or a list of accepted labels."))
    expansion: Expansion = Field(default_factory=Expansion)


class CapabilitySpec(_Strict):
    """A capability spec file for ``beluga suite generate s2lct``."""

    name: str = Field(min_length=1)
    description: str = ""
    label_space: list[str] = Field(min_length=2, description="Label names in id order (the corpus's).")
    lc: list[Capability] = Field(min_length=1)

    @model_validator(mode="after")
    def _consistent(self) -> CapabilitySpec:
        for field_name in ("id", "name"):
            seen: set[str] = set()
            for c in self.lc:
                value = getattr(c, field_name)
                if value in seen:
                    raise ValueError(f"two capabilities have the {field_name} {value!r}")
                seen.add(value)
        space = set(self.label_space)
        for c in self.lc:
            labels: list[Any] = [c.label]
            rules = list(c.search)
            if isinstance(c.transform, Template):
                labels += [b.label for b in c.transform.by_label.values() if b.label is not None]
                rules += [r for b in c.transform.by_label.values() for p in b.pools.values() for r in p.search]
                bad_blocks = sorted(set(c.transform.by_label) - space)
                if bad_blocks:
                    raise ValueError(f"{c.id}: template blocks {bad_blocks} are not labels of {self.label_space}")
            for label in labels:
                if isinstance(label, list) and len(set(label)) not in (1, len(space) - 1):
                    raise ValueError(f"{c.id}: a label set must accept one label or all but one (it is judged as "
                                     f"'not the left-out label'), got {label}")
                names = label if isinstance(label, list) else [label]
                bad = [n for n in names if n not in space and not (n == "same" and not isinstance(label, list))]
                if bad:
                    raise ValueError(f"{c.id}: label {bad} is not in the label space {self.label_space} (or 'same')")
            for r in rules:
                if r.label is not None and r.label not in space:
                    raise ValueError(f"{c.id}: search label {r.label!r} is not in the label space {self.label_space}")
        return self


def load_spec(spec: str | Path) -> tuple[CapabilitySpec, str]:
    """The spec ``builtin:NAME`` or a TOML / JSON file names, and a description of where it came from."""
    text = str(spec)
    if text.startswith(BUILTIN_PREFIX):
        name = text.removeprefix(BUILTIN_PREFIX)
        path = BUILTIN_SPECS / f"{name}.toml"
        if not path.is_file():
            shipped = ", ".join(f"builtin:{p.stem}" for p in sorted(BUILTIN_SPECS.glob("*.toml")))
            raise BelugaError(f"no built-in capability spec '{name}'; shipped: {shipped}", field="spec")
    else:
        path = Path(text).expanduser()
        if not path.is_file():
            raise BelugaError("no such capability spec file (expected builtin:NAME or a .toml / .json file)",
                              source=path, field="spec")
    try:
        raw_text = path.read_text(encoding="utf-8")
        data = json.loads(raw_text) if path.suffix == ".json" else tomllib.loads(raw_text)
    except (tomllib.TOMLDecodeError, json.JSONDecodeError, UnicodeDecodeError) as exc:
        raise BelugaError(f"cannot parse the capability spec: {exc}", source=path) from None
    try:
        return CapabilitySpec.model_validate(data), text
    except ValidationError as exc:
        line = None if path.suffix == ".json" else locate_key(raw_text, tuple(exc.errors()[0].get("loc", ())))
        raise BelugaError(format_validation_error(exc), source=path, line=line) from None


# ----------------------------------------------------------------------------------------------- search


def tokens(sentence: str) -> list[str]:
    """The corpus's own tokens: SST is tokenised already, so spaces separate them (a no-break space inside a token,
    as in SST's ``8 1\\/2``, stays inside it)."""
    return [t for t in sentence.split(" ") if t]


def length(sentence: str) -> int:
    """Tokens, a final "." not counted (S²LCT's rule)."""
    toks = tokens(sentence)
    return len(toks) - 1 if toks and toks[-1] == "." else len(toks)


_OPS: dict[str, Callable[[int, int], bool]] = {"<": lambda a, b: a < b, "<=": lambda a, b: a <= b,
                                               ">": lambda a, b: a > b, ">=": lambda a, b: a >= b,
                                               "==": lambda a, b: a == b}


@dataclass(frozen=True)
class RuleCheck:
    """A search rule bound to a lexicon."""

    rule: SearchRule
    lexicon: Lexicon

    def matches(self, sentence: str, label: str | None, *, check_label: bool = True) -> bool:
        r = self.rule
        if check_label and r.label is not None and label != r.label:
            return False
        if r.length is not None:
            m = _LENGTH.fullmatch(r.length)
            assert m is not None
            if not _OPS[m.group(1)](length(sentence), int(m.group(2))):
                return False
        if r.regex is not None:
            found = re.search(r.regex, sentence)
            if found is None:
                return False
            # A space appended: "This is not" at the very end is negated too.
            if r.not_negated and f"{sentence[found.end():]} ".startswith(NEGATION_AFTER):
                return False
        words = {t.lower() for t in tokens(sentence)}
        for name in r.include:
            if not words & self.lexicon.words(*parse_class(name)):
                return False
        return not any(words & self.lexicon.words(*parse_class(name)) for name in r.exclude)


def matcher(rules: Sequence[SearchRule], lexicon: Lexicon, *, check_label: bool = True
            ) -> Callable[[str, str | None], bool]:
    """Whether a (sentence, corpus label) satisfies any of ``rules``."""
    bound = [RuleCheck(r, lexicon) for r in rules]
    return lambda sentence, label: any(b.matches(sentence, label, check_label=check_label) for b in bound)


# ----------------------------------------------------------------------------------------------- transform


@dataclass(frozen=True)
class Made:
    """One case text a transformation made from a seed: its label (a name or accepted names) and which template
    choice made it (the index of each part's phrase, pool sentences by their id)."""

    text: str
    label: str | tuple[str, ...]
    template: str


def resolve_label(label: LabelSpec, corpus_label: str) -> str | tuple[str, ...]:
    if isinstance(label, list):
        return tuple(label)
    return corpus_label if label == "same" else label


def transform(c: Capability, sentence: str, corpus_label: str, rng: random.Random,
              pools: Mapping[str, Sequence[tuple[str, str]]]) -> Iterator[Made]:
    """The cases one seed yields. ``pools[NAME]`` holds the (id, sentence) pairs of pool NAME for the seed's label
    block (the seed itself excluded by the caller); ``rng`` draws from them."""
    if c.transform is None:
        yield Made(sentence, resolve_label(c.label, corpus_label), "seed")
        return
    if isinstance(c.transform, NegateCopula):
        found = re.search(c.transform.pattern, sentence)
        if found is None:
            return
        for form in c.transform.forms:
            text = f"{sentence[:found.end()]} {form}{sentence[found.end():]}"
            yield Made(text, resolve_label(c.label, corpus_label), f"negate-copula:{form}")
        return
    block = c.transform.by_label.get(corpus_label)
    if block is None:
        return
    drawn: dict[str, list[tuple[str, str]]] = {}
    for name, pool in sorted(block.pools.items()):
        members = list(pools.get(name, ()))
        drawn[name] = rng.sample(members, min(pool.n, len(members)))
    options: list[list[tuple[str, str]]] = []
    for part in block.parts:
        choices: list[tuple[str, str]] = []
        for i, phrase in enumerate(part):
            slots = [s for s in _SLOT.findall(phrase) if s != SEED_SLOT]
            if not slots:
                choices.append((phrase.replace("{seed}", sentence), str(i)))
                continue
            for combo in itertools.product(*(drawn[s] for s in slots)):
                text = phrase.replace("{seed}", sentence)
                for s, (_, pooled) in zip(slots, combo, strict=True):
                    text = text.replace("{" + s + "}", pooled)
                choices.append((text, f"{i}[{','.join(pid for pid, _ in combo)}]"))
        options.append(choices)
    label = resolve_label(block.label if block.label is not None else c.label, corpus_label)
    for combo_parts in itertools.product(*options):
        yield Made(" ".join(text for text, _ in combo_parts), label,
                   f"{corpus_label}:" + ".".join(tag for _, tag in combo_parts))
