"""Entity types of relation instances where the data gives none: one hand-written type per (relation, role).

FewRel carries Wikidata ids and no types, so the entity swaps that need a type (``entity-swap`` with
``semantics`` other than ``slot``) read it from a table: ``builtin/fewrel16/entity_types.json`` for the shipped
FewRel-16 (how it was written: ``builtin/fewrel16/ENTITY-TYPES.md``). A type the data gives (TACRED's
``subj_type``) wins over the table; a slot typed ``MISC`` (no majority type) counts as untyped.
"""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass
from functools import cache

from beluga_core.data.iid.relation_data import FEWREL16
from beluga_core.data.iid.relation_instances import RelationInstance

UNTYPED = "MISC"
"""The type of a slot whose mentions have no majority type: such a slot is never swapped by type."""

ROLES = ("head", "tail")


@dataclass(frozen=True)
class SlotType:
    relation: str
    name: str
    role: str
    type: str
    why: str


@dataclass(frozen=True)
class EntityTypes:
    """The hand-written table: per (relation, role) its type, per type a description and the templates of
    made-up names (``{Name}``: a word composed of syllables; a type without templates is a closed class that no
    made-up name belongs to)."""

    slots: tuple[SlotType, ...]
    descriptions: dict[str, str]
    unseen: dict[str, tuple[str, ...]]
    method: str

    def slot_type(self, relation: str, role: str) -> str | None:
        """The type of ``relation``'s ``role`` (the relation named by Wikidata id or by name); None where the
        table has no such relation or types the slot ``MISC``."""
        for s in self.slots:
            if role == s.role and relation in (s.relation, s.name):
                return None if s.type == UNTYPED else s.type
        return None

    def type_of(self, r: RelationInstance, role: str) -> str | None:
        """The type of ``r``'s ``role``: the data's own, else its slot's (by the Wikidata id a FewRel-16
        instance keeps in ``meta["relation_id"]``, else by the relation's name)."""
        entity = r.head if role == "head" else r.tail
        if entity.type:
            return entity.type
        return self.slot_type(str(r.meta.get("relation_id", r.relation)), role)

    def why(self, relation: str) -> str:
        return next((s.why for s in self.slots if relation in (s.relation, s.name)), "not in the table")


@cache
def fewrel16_entity_types() -> EntityTypes:
    """The table of the shipped FewRel-16 (its 16 relations, both roles)."""
    data = json.loads((FEWREL16 / "entity_types.json").read_text(encoding="utf-8"))
    slots = tuple(SlotType(relation, entry["name"], role, entry[role], entry["why"])
                  for relation, entry in data["slots"].items() for role in ROLES)
    for s in slots:
        if s.type not in data["types"]:
            # A packaging mistake, not user input: the shipped table names only types it describes.
            raise ValueError(f"entity_types.json: {s.relation} {s.role} has undescribed type {s.type!r}")
    return EntityTypes(slots, dict(data["types"]),
                       {t: tuple(v) for t, v in data["unseen"].items()}, data["method"])


@dataclass(frozen=True)
class Coverage:
    """How much of a set of instances the table types: slots (relation, role) and mentions (instance, role)."""

    relations: int
    relations_typed: int          # both roles typed
    slots: int
    slots_typed: int
    mentions: int
    mentions_typed: int
    by_type: dict[str, int]       # typed mentions per type
    untyped: tuple[tuple[str, str, int, str], ...]   # (relation, role, mentions, why)


def type_coverage(instances: Iterable[RelationInstance], types: EntityTypes) -> Coverage:
    mentions: Counter[tuple[str, str]] = Counter()
    by_type: Counter[str] = Counter()
    for r in instances:
        for role in ROLES:
            mentions[(r.relation, role)] += 1
            t = types.type_of(r, role)
            if t is not None:
                by_type[t] += 1
    relations = sorted({rel for rel, _ in mentions})
    typed = {(rel, role) for rel, role in mentions if types.slot_type(rel, role) is not None}
    return Coverage(
        relations=len(relations),
        relations_typed=sum(all((rel, role) in typed for role in ROLES) for rel in relations),
        slots=len(mentions), slots_typed=len(typed),
        mentions=sum(mentions.values()), mentions_typed=sum(by_type.values()),
        by_type=dict(sorted(by_type.items(), key=lambda kv: (-kv[1], kv[0]))),
        untyped=tuple((rel, role, n, types.why(rel)) for (rel, role), n in sorted(mentions.items())
                      if (rel, role) not in typed))
