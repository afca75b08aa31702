"""Generators that change the entities of relation instances: entity swaps, only-entity and masked-entity inputs,
and the training-side masked-entity variants (DiagnoseRE's Q1 and Q5).

- ``entity-swap`` (family ``entity``): replaces every mention of the head (``swap head``) or the tail (``swap
  tail``) by another entity of the same type. The type is, in order: the one the data gives (TACRED's
  ``subj_type``), else the (relation, role) slot — a head of ``constellation`` is replaced by the head of another
  ``constellation`` instance of the donors (D_train), never by its own string or id —, else a lexicon class (a
  first name: PERSON; a city or country: GPE; digits: NUMBER). Spans are recomputed from the new tokens, whatever
  the order of head and tail (the released code duplicated text when the tail came first; beluga does not). On
  a text source (no entities) it swaps the person names, places and numbers the lexicons recognise. That is
  ``semantics = "slot"`` (the default); ``same-type-other-relation``, ``random-same-type`` and ``unseen`` draw a
  mention of the same type (the data's, else ``beluga_core.data.iid.entity_types``'s hand-written one) from
  another relation's slots, from any slot, or make a name of the type up; each is its own family
  (``entity-SEMANTICS``) and skips, and reports, the slots it cannot type.
- ``only-entity`` (family ``semantic-bias``): the two marked mentions alone, in surface order, with markers.
- ``masked-entity`` (family ``semantic-bias``): both marked mentions removed; their markers stay, adjacent.
- ``masked-entity-k`` and ``masked-entity-freq`` (family ``entity-masking``): training suites, every original
  plus masked copies of ⌊N·K⌋ seeded instances (ME(K%)), or per (head, tail) pair of n instances with pair
  frequency f: min(n − 1, max(⌊n·rate⌋, 1)) of them, rate = (f − f_min) / (f_max − f_min) (ME(Frequency)).

Long: the four swap semantics share one donor index and one seeded draw per semantics; split apart, each module
would repeat the mention and span bookkeeping.
"""

from __future__ import annotations

import math
import random
from collections import Counter, defaultdict
from collections.abc import Iterator
from typing import Any, ClassVar, Literal, get_args

from pydantic import Field, field_validator

from beluga_core.contracts.generators import Generator, Perturbed, Source, SourceInstance
from beluga_core.contracts.options import Options
from beluga_core.data.iid.entity_types import EntityTypes, fewrel16_entity_types
from beluga_core.data.iid.relation_instances import Entity, RelationInstance, Span
from beluga_core.generators.perturbations.perturb import Change, change_location, change_names, change_number, lexicons

ROLES = ("head", "tail")


def surface(r: RelationInstance, span: Span) -> tuple[str, ...]:
    return r.tokens[span[0]:span[1]]


def replace_spans(r: RelationInstance, new: dict[str, tuple[tuple[str, ...], str | None, str | None]]
                  ) -> RelationInstance:
    """``r`` with every mention of the roles in ``new`` replaced by (tokens, id, type); mentions of the other
    role keep their text; all spans recomputed, whichever entity comes first."""
    entities = {"head": r.head, "tail": r.tail}
    mentions = [(s, e, role, k) for role, entity in entities.items() for k, (s, e) in enumerate(entity.spans)]
    # The marked mentions never overlap (RelationInstance checks it); an unmarked one that overlaps a mention
    # already kept is dropped (FewRel lists a few nested mentions).
    kept = [m for m in mentions if m[3] == 0]
    for m in sorted(x for x in mentions if x[3] != 0):
        if all(m[1] <= x[0] or x[1] <= m[0] for x in kept):
            kept.append(m)
    kept.sort(key=lambda x: (x[0], x[1]))
    tokens: list[str] = []
    spans: dict[str, list[tuple[int, Span]]] = {"head": [], "tail": []}
    pos = 0
    for s, e, role, k in kept:
        tokens.extend(r.tokens[pos:s])
        start = len(tokens)
        tokens.extend(new[role][0] if role in new else r.tokens[s:e])
        spans[role].append((k, (start, len(tokens))))
        pos = e
    tokens.extend(r.tokens[pos:])
    out = {}
    for role, entity in entities.items():
        ordered = tuple(span for _, span in sorted(spans[role]))
        if role in new:
            words, eid, etype = new[role]
            out[role] = Entity(" ".join(words), ordered, eid, etype)
        else:
            out[role] = Entity(entity.name, ordered, entity.id, entity.type)
    return r.with_tokens(tokens, out["head"], out["tail"])


def lexicon_class(words: tuple[str, ...]) -> str | None:
    """PERSON (a first name of CheckList's lists, optionally with a surname), GPE (a city or country) or NUMBER
    (digits) by lexicon membership; None otherwise."""
    lex = lexicons()
    text = " ".join(words)
    if words and all(w.isdigit() for w in words):
        return "NUMBER"
    if text in lex.cities or text in lex.countries:
        return "GPE"
    if words and words[0] in lex.gender_of and all(w in lex.last_names for w in words[1:]):
        return "PERSON"
    return None


SEMANTICS = ("slot", "same-type-other-relation", "random-same-type", "unseen")
"""What an entity swap draws the replacement from (``entity-swap``'s ``semantics``): the same (relation, role)
slot; an entity of the same type from another relation's slots; one of the same type from any slot; a made-up
name of the type that occurs nowhere in the source or its donors."""

# Syllables of the made-up names of ``unseen``: a name is 2-3 of them, so a word of the data is rarely hit, and
# one that is (checked against every token of the source and donors) is drawn again.
SYLLABLES = ("ba", "dor", "fen", "gal", "hu", "ka", "lem", "lo", "mar", "nix", "o", "pel", "qua", "ril", "sa",
             "tov", "u", "ven", "wil", "xa", "yor", "zen", "bri", "cas", "dru", "tre", "vok", "ju", "shen", "ith")
UNSEEN_TRIES = 200

Donor = tuple[tuple[str, ...], str | None]
Origin = tuple[str, str]   # the donor's (relation, role)
Choice = tuple[tuple[str, ...], str | None, str | None, str, Origin | None]


Role = Literal["head", "tail"]
Semantics = Literal["slot", "same-type-other-relation", "random-same-type", "unseen"]
assert get_args(Role) == ROLES and get_args(Semantics) == SEMANTICS, "the roles and semantics and their names disagree"


class EntitySwapOptions(Options):
    roles: list[Role] = Field(default_factory=lambda: list(get_args(Role)), min_length=1,
                              description="The entity slots swapped (relation sources).")
    skip_years: bool = Field(True, description="A number that reads as a year is not swapped.")
    semantics: Semantics | list[Semantics] = Field("slot", description=(
        "Where the new entity comes from: slot (another instance's entity in the same slot of the same relation), "
        "same-type-other-relation, random-same-type, unseen (a made-up name), or a list of distinct ones."))
    family: str | None = Field(None, min_length=1, pattern=r"\S", description=(
        "The family the cases are grouped under (not set: entity for slot, entity-SEMANTICS for the others)."))

    @field_validator("semantics")
    @classmethod
    def _distinct(cls, value: str | list[str]) -> str | list[str]:
        if isinstance(value, list) and (not value or len(set(value)) < len(value)):
            raise ValueError("expected one semantics or a non-empty list of distinct ones")
        return value


class EntitySwap(Generator):
    Options = EntitySwapOptions
    options: EntitySwapOptions
    family: ClassVar[str] = "entity"
    perturbations: ClassVar[tuple[str, ...]] = (
        "swap head", "swap tail", "swap person", "swap location", "swap number",
        *(f"swap {role} ({s})" for s in SEMANTICS[1:] for role in ROLES))
    kinds = ("relation", "text")
    version: ClassVar[str] = "2"

    def __init__(self, options: dict[str, Any] | None = None) -> None:
        super().__init__(options)
        semantics = self.options.semantics
        self.semantics: tuple[str, ...] = (semantics,) if isinstance(semantics, str) else tuple(semantics)
        self.types: EntityTypes = fewrel16_entity_types()
        self._by_type: dict[str, list[Donor]] = {}
        self._by_slot: dict[tuple[str, str], list[Donor]] = {}
        # Per type every (donor, its first (relation, role)); the cross-relation pools are cut from it per relation.
        self._typed: dict[str, dict[Donor, list[Origin]]] = {}
        self._other: dict[tuple[str, str], list[tuple[Donor, Origin]]] = {}
        self._words: set[str] = set()
        self._tried: Counter[tuple[str, str, str]] = Counter()
        self._swapped: Counter[tuple[str, str, str]] = Counter()
        self._skipped: Counter[tuple[str, str, str, str]] = Counter()

    def prepare(self, source: Source, seed: int) -> None:
        if source.kind != "relation" and set(self.semantics) - {"slot"}:
            raise ValueError(f"semantics {', '.join(s for s in self.semantics if s != 'slot')} need relation "
                             f"instances (entity types); {source.name} is a {source.kind} source")
        by_type: dict[str, set[Donor]] = defaultdict(set)
        by_slot: dict[tuple[str, str], set[Donor]] = defaultdict(set)
        typed: dict[str, dict[Donor, set[Origin]]] = defaultdict(lambda: defaultdict(set))
        for donor in source.donors:
            r = donor.relation
            if r is None:
                continue
            for role, entity in (("head", r.head), ("tail", r.tail)):
                words = surface(r, entity.span)
                if not words:
                    continue
                if entity.type:
                    by_type[entity.type].add((words, entity.id))
                by_slot[(r.relation, role)].add((words, entity.id))
                kind = self.types.type_of(r, role)
                if kind is not None:
                    typed[kind][(words, entity.id)].add((r.relation, role))
        # Sorted, so that a seeded choice does not depend on the donors' order or on set iteration.
        self._by_type = {k: sorted(v, key=_donor_key) for k, v in by_type.items()}
        self._by_slot = {k: sorted(v, key=_donor_key) for k, v in by_slot.items()}
        self._typed = {k: {d: sorted(v[d]) for d in sorted(v, key=_donor_key)} for k, v in typed.items()}
        self._other = {}
        # ``unseen`` names avoid every word of the data, so they are none of its mentions (nor part of one).
        self._words = {t.lower() for i in (*source.instances, *source.donors) for t in i.tokens}

    def perturb(self, instance: SourceInstance, rng: random.Random) -> Iterator[Perturbed]:
        r = instance.relation
        if r is None:
            yield from self._perturb_text(instance, rng)
            return
        # Each semantics but ``slot`` draws from its own stream, seeded by the instance's without consuming it:
        # ``slot`` makes what it made before semantics existed, and no semantics' draws depend on the others chosen.
        copy = random.Random()
        copy.setstate(rng.getstate())
        key = copy.getrandbits(64)
        for semantics in self.semantics:
            stream = rng if semantics == "slot" else random.Random(f"{key}\x1f{semantics}")
            for role in ROLES:
                if role not in self.options.roles:
                    continue
                entity = r.head if role == "head" else r.tail
                self._tried[(semantics, r.relation, role)] += 1
                old = surface(r, entity.span)
                choice = (self._replacement(r.relation, role, entity, old, stream) if semantics == "slot"
                          else self._typed_replacement(semantics, r, role, old, stream))
                if choice is None:
                    continue
                words, eid, etype, how, origin = choice
                out = replace_spans(r, {role: (words, eid, etype)})
                self._swapped[(semantics, r.relation, role)] += 1
                perturbation = f"swap {role}" if semantics == "slot" else f"swap {role} ({semantics})"
                family = self.options.family or ("entity" if semantics == "slot" else f"entity-{semantics}")
                donor = None if origin is None else {"id": eid, "relation": origin[0], "role": origin[1]}
                yield Perturbed(perturbation, out.marked_text(),
                                note={"from": " ".join(old), "to": " ".join(words), "type": how,
                                      "semantics": semantics, "donor": donor},
                                groups=None if family == self.family else {"family": family,
                                                                            "perturbation": perturbation})

    def _replacement(self, relation: str, role: str, entity: Entity, old: tuple[str, ...], rng: random.Random
                     ) -> Choice | None:
        """``slot``: the data's type, else the (relation, role) slot, else a lexicon class."""
        if entity.type and entity.type in self._by_type:
            pool = _usable(self._by_type[entity.type], old, entity.id)
            if pool:
                words, eid = pool[rng.randrange(len(pool))]
                origin = self._typed.get(entity.type, {}).get((words, eid), [None])[0]
                return words, eid, entity.type, f"type {entity.type}", origin
        pool = _usable(self._by_slot.get((relation, role), []), old, entity.id)
        if pool:
            words, eid = pool[rng.randrange(len(pool))]
            return words, eid, entity.type, f"{relation} {role}", (relation, role)
        cls = lexicon_class(old)
        change: Change | None = None
        if cls == "PERSON":
            change = change_names(old, rng)
        elif cls == "GPE":
            change = change_location(old, rng)
        elif cls == "NUMBER":
            change = change_number(old, rng, skip_years=self.options.skip_years)
        if change is None:
            return None
        return change.tokens, None, entity.type, f"lexicon {cls}", None

    def _typed_replacement(self, semantics: str, r: RelationInstance, role: str, old: tuple[str, ...],
                           rng: random.Random) -> Choice | None:
        """The type semantics: the slot's type (the data's, else the table's); an untyped slot is skipped and
        counted, never swapped by a guess."""
        entity = r.head if role == "head" else r.tail
        kind = self.types.type_of(r, role)
        if kind is None:
            self._skipped[(semantics, r.relation, role, "untyped slot (MISC)")] += 1
            return None
        if semantics == "unseen":
            templates = self.types.unseen.get(kind)
            if not templates:
                self._skipped[(semantics, r.relation, role, f"{kind} is a closed class: no made-up name")] += 1
                return None
            return tuple(self._made_up(templates, rng).split(" ")), None, kind, kind, None
        if semantics == "random-same-type":
            donors = list(self._typed.get(kind, {}).items())
            pool = [(d, origins[0]) for d, origins in donors]
        else:
            pool = self._other_relations(kind, r.relation)
        own = " ".join(old).lower()
        pool = [(d, o) for d, o in pool
                if " ".join(d[0]).lower() != own and (d[1] is None or entity.id is None or d[1] != entity.id)]
        if not pool:
            where = "another relation" if semantics == "same-type-other-relation" else "the donors"
            self._skipped[(semantics, r.relation, role, f"no {kind} donor in {where}")] += 1
            return None
        (words, eid), origin = pool[rng.randrange(len(pool))]
        return words, eid, kind, kind, origin

    def _other_relations(self, kind: str, relation: str) -> list[tuple[Donor, Origin]]:
        if (kind, relation) not in self._other:
            pool = []
            for donor, origins in self._typed.get(kind, {}).items():
                elsewhere = [o for o in origins if o[0] != relation]
                if elsewhere:
                    pool.append((donor, elsewhere[0]))
            self._other[(kind, relation)] = pool
        return self._other[(kind, relation)]

    def _made_up(self, templates: tuple[str, ...], rng: random.Random) -> str:
        template = templates[rng.randrange(len(templates))]
        parts = template.split("{Name}")
        words = []
        for _ in parts[1:]:
            for _ in range(UNSEEN_TRIES):
                word = "".join(rng.choice(SYLLABLES) for _ in range(rng.randint(2, 3))).capitalize()
                if word.lower() not in self._words and word not in words:
                    break
            else:
                raise ValueError(f"no made-up name in {UNSEEN_TRIES} tries avoids the data's words")
            words.append(word)
        name = parts[0] + "".join(w + rest for w, rest in zip(words, parts[1:], strict=True))
        if not set(words) <= set(name.split(" ")):
            # A template that glues {Name} to other letters would make a token the check above never saw.
            raise ValueError(f"unseen-name template {template!r}: {{Name}} must be a whole word")
        return name

    def _perturb_text(self, instance: SourceInstance, rng: random.Random) -> Iterator[Perturbed]:
        if not isinstance(instance.input, str):
            return
        tokens = instance.tokens
        seed = rng.getrandbits(64)
        for name, fn in (("swap person", change_names), ("swap location", change_location),
                         ("swap number", change_number)):
            sub = random.Random(f"{seed}\x1f{name}")
            kwargs: dict[str, Any] = {"skip_years": self.options.skip_years} if fn is change_number else {}
            change = fn(tokens, sub, **kwargs)
            if change is not None:
                yield Perturbed(name, " ".join(change.tokens), note=dict(change.note))

    def report(self) -> list[tuple[str, str, float]]:
        return [("share of instances with a swap" + ("" if s == "slot" else f" ({s})"), f"{relation} / {role}",
                 self._swapped[(s, relation, role)] / n)
                for (s, relation, role), n in sorted(self._tried.items(), key=lambda kv: (
                    SEMANTICS.index(kv[0][0]), kv[0][1], kv[0][2])) if n]

    def notes(self) -> list[str]:
        grouped: dict[tuple[str, str], list[str]] = defaultdict(list)
        for (s, relation, role, reason), n in sorted(self._skipped.items()):
            grouped[(s, reason)].append(f"{relation} / {role} {n}")
        return [f"entity-swap {s}, not swapped ({reason}): {'; '.join(slots)}"
                for (s, reason), slots in sorted(grouped.items(), key=lambda kv: (SEMANTICS.index(kv[0][0]), kv[0][1]))]


def _usable(pool: list[Donor], old: tuple[str, ...], own_id: str | None) -> list[Donor]:
    """The donors that are neither the mention's own string (case aside) nor its own entity."""
    own = " ".join(old).lower()
    return [(w, i) for w, i in pool if " ".join(w).lower() != own and (i is None or own_id is None or i != own_id)]


def _donor_key(donor: tuple[tuple[str, ...], str | None]) -> tuple[str, str]:
    return " ".join(donor[0]), donor[1] or ""


def only_entity(r: RelationInstance) -> RelationInstance:
    """The two marked mentions alone, in surface order."""
    first, second = sorted([("head", r.head.span), ("tail", r.tail.span)], key=lambda x: x[1])
    tokens: list[str] = []
    spans: dict[str, Span] = {}
    for role, span in (first, second):
        start = len(tokens)
        tokens.extend(surface(r, span))
        spans[role] = (start, len(tokens))
    return r.with_tokens(tokens, Entity(r.head.name, (spans["head"],), r.head.id, r.head.type),
                         Entity(r.tail.name, (spans["tail"],), r.tail.id, r.tail.type))


def masked_entity(r: RelationInstance) -> RelationInstance:
    """Both marked mentions removed; each entity's span becomes empty where its mention was."""
    (hs, he), (ts, te) = r.head.span, r.tail.span
    removed = set(range(hs, he)) | set(range(ts, te))
    tokens = [t for i, t in enumerate(r.tokens) if i not in removed]

    def at(pos: int) -> int:
        return pos - sum(1 for i in removed if i < pos)

    return r.with_tokens(tokens, Entity(r.head.name, ((at(hs), at(hs)),), r.head.id, r.head.type),
                         Entity(r.tail.name, ((at(ts), at(ts)),), r.tail.id, r.tail.type))


class _RelationOnly(Generator):
    kinds = ("relation",)

    @staticmethod
    def relation(instance: SourceInstance) -> RelationInstance:
        assert instance.relation is not None  # the builder only hands relation instances to relation generators
        return instance.relation


class OnlyEntity(_RelationOnly):
    family: ClassVar[str] = "semantic-bias"
    perturbations: ClassVar[tuple[str, ...]] = ("only entity",)

    def perturb(self, instance: SourceInstance, rng: random.Random) -> Iterator[Perturbed]:
        yield Perturbed("only entity", only_entity(self.relation(instance)).marked_text())


class MaskedEntity(_RelationOnly):
    family: ClassVar[str] = "semantic-bias"
    perturbations: ClassVar[tuple[str, ...]] = ("masked entity",)

    def perturb(self, instance: SourceInstance, rng: random.Random) -> Iterator[Perturbed]:
        yield Perturbed("masked entity", masked_entity(self.relation(instance)).marked_text())


class MaskedTrainingOptions(Options):
    keep_origin: bool = Field(True, description="The training suite keeps every original beside the masked copies.")


class _MaskedTraining(_RelationOnly):
    """Training suites: every original (``keep_origin``) plus masked copies of the instances ``prepare`` chose."""

    Options = MaskedTrainingOptions
    options: MaskedTrainingOptions
    family: ClassVar[str] = "entity-masking"
    perturbations: ClassVar[tuple[str, ...]] = ("original", "masked entity")
    invariant: ClassVar[bool] = False

    def __init__(self, options: dict[str, Any] | None = None) -> None:
        super().__init__(options)
        self.chosen: set[str] = set()

    def perturb(self, instance: SourceInstance, rng: random.Random) -> Iterator[Perturbed]:
        if self.options.keep_origin:
            yield Perturbed("original", instance.input)
        if instance.id in self.chosen:
            yield Perturbed("masked entity", masked_entity(self.relation(instance)).marked_text())


class MaskedEntityKOptions(MaskedTrainingOptions):
    k: float = Field(0.5, ge=0, le=1, description="The share of the instances masked (ME(k)).")


class MaskedEntityK(_MaskedTraining):
    Options = MaskedEntityKOptions
    options: MaskedEntityKOptions

    def prepare(self, source: Source, seed: int) -> None:
        ids = sorted(i.id for i in source.instances)
        random.Random(f"{seed}\x1fmasked-entity-k").shuffle(ids)
        self.chosen = set(ids[:math.floor(len(ids) * self.options.k)])


def pair_key(r: RelationInstance) -> tuple[str, str]:
    return " ".join(surface(r, r.head.span)).lower(), " ".join(surface(r, r.tail.span)).lower()


def masked_per_pair(counts: dict[tuple[str, str], int]) -> dict[tuple[str, str], int]:
    """ME(Frequency): how many of each pair's n instances to mask: min(n − 1, max(⌊n · rate⌋, 1)), rate =
    (f − f_min) / (f_max − f_min) with f = n (0 when every pair is equally frequent)."""
    if not counts:
        return {}
    lo, hi = min(counts.values()), max(counts.values())
    out = {}
    for pair, n in counts.items():
        rate = (n - lo) / (hi - lo) if hi > lo else 0.0
        out[pair] = min(n - 1, max(math.floor(n * rate), 1))
    return out


class MaskedEntityFrequency(_MaskedTraining):

    def prepare(self, source: Source, seed: int) -> None:
        by_pair: dict[tuple[str, str], list[str]] = defaultdict(list)
        for instance in source.instances:
            by_pair[pair_key(self.relation(instance))].append(instance.id)
        quota = masked_per_pair({pair: len(ids) for pair, ids in by_pair.items()})
        chosen: set[str] = set()
        for pair in sorted(by_pair):
            ids = sorted(by_pair[pair])
            chosen.update(random.Random(f"{seed}\x1fmasked-entity-freq\x1f{pair}").sample(ids, quota[pair]))
        self.chosen = chosen
