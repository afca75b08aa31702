"""Entity types per (relation, role) and the four entity-swap semantics: known answers on hand-made relation
instances (which donor each semantics may and does pick, spans when the tail precedes the head, made-up names
that occur nowhere in the data, untyped and closed-class slots skipped and reported), the FewRel-16 table's
coverage as ENTITY-TYPES.md states it, and the options through ``beluga suite generate``."""

from __future__ import annotations

import json
import random
import re
from pathlib import Path

import pytest
from helpers import run_cli

from beluga_core.contracts.generators import Source, SourceInstance
from beluga_core.data import BUILTIN_DATA
from beluga_core.data.iid.entity_types import fewrel16_entity_types, type_coverage
from beluga_core.data.iid.relation_data import fewrel16_instances, fewrel16_relation_names, write_opennre
from beluga_core.data.iid.relation_instances import Entity, RelationInstance, parse_marked
from beluga_core.generators.perturbations.entity_perturbations import SEMANTICS, EntitySwap
from beluga_core.generators.suite_build import generate


def rel(iid: str, text: str, relation: str, head_id: str, tail_id: str) -> SourceInstance:
    tokens, head, tail = parse_marked(text)
    r = RelationInstance(iid, tuple(tokens), Entity(" ".join(tokens[slice(*head)]), (head,), head_id),
                         Entity(" ".join(tokens[slice(*tail)]), (tail,), tail_id), relation)
    return SourceInstance(iid, r.marked_text(), relation, r)


# Relations named as FewRel-16's (the table's types): mother, spouse and voice type have PER heads; crosses has a
# STRUCTURE head and a WATER tail, as "located in or next to body of water" has; follows is untyped (MISC); a voice
# type is a closed class.
WATER_REL = "located in or next to body of water"
DONORS = (
    rel("d/0", "[E1] Ann Lee [/E1] is the daughter of [E2] Mary Lee [/E2] .", "mother", "Q10", "Q11"),
    rel("d/1", "[E1] Bob Ray [/E1] married [E2] Cora Ray [/E2] .", "spouse", "Q12", "Q13"),
    rel("d/2", "[E1] Kew Bridge [/E1] crosses the [E2] Thames [/E2] .", "crosses", "Q20", "Q21"),
    rel("d/3", "[E1] Oslo [/E1] lies on the [E2] Oslofjord [/E2] .", WATER_REL, "Q30", "Q31"),
    rel("d/4", "[E1] Album Two [/E1] follows [E2] Album One [/E2] .", "follows", "Q40", "Q41"),
    rel("d/5", "[E1] Dan Poe [/E1] sang [E2] tenor [/E2] .", "voice type", "Q50", "Q51"),
)
# The tail comes first: the spans of the output must point at the new head after the unchanged tail.
SPOUSE = rel("x/0", "[E2] Eve Fox [/E2] was the wife of [E1] Hal Fox [/E1] .", "spouse", "Q60", "Q61")
BRIDGE = rel("x/1", "[E1] Tay Bridge [/E1] spans the [E2] Tay [/E2] .", "crosses", "Q62", "Q63")
FOLLOWS = rel("x/2", "[E1] Song B [/E1] came after [E2] Song A [/E2] .", "follows", "Q64", "Q65")
VOICE = rel("x/3", "[E1] Ida Roe [/E1] was a [E2] soprano [/E2] .", "voice type", "Q66", "Q67")
LABELS = ("mother", "spouse", "crosses", WATER_REL, "follows", "voice type", "no_relation")


def source(*instances: SourceInstance) -> Source:
    return Source("test", "relation", instances, LABELS, DONORS)


def swaps(instance: SourceInstance, semantics: str, seed: int, **options: object) -> dict[str, tuple[str, dict]]:
    """perturbation -> (the swapped role's new mention, the note)."""
    gen = EntitySwap({"semantics": semantics, **options})
    gen.prepare(source(instance), 0)
    out = {}
    for p in gen.perturb(instance, random.Random(seed)):
        tokens, head, tail = parse_marked(str(p.input))
        role = "head" if " head" in p.perturbation else "tail"
        out[p.perturbation] = (" ".join(tokens[slice(*(head if role == "head" else tail))]), dict(p.note))
    return out


def test_the_fewrel16_table_types_every_slot_and_its_coverage_is_what_entity_types_md_says() -> None:
    types = fewrel16_entity_types()
    assert {s.relation for s in types.slots} == set(fewrel16_relation_names())
    assert len(types.slots) == 32 and all(t in types.descriptions for s in types.slots for t in [s.type])
    assert set(types.unseen) <= set(types.descriptions)
    assert types.slot_type("spouse", "head") == types.slot_type("P26", "tail") == "PER"
    assert types.slot_type("follows", "head") is None and types.slot_type("no such relation", "head") is None
    note = (BUILTIN_DATA / "fewrel16" / "ENTITY-TYPES.md").read_text(encoding="utf-8")
    for part in ("train", "val", "pool"):
        c = type_coverage(fewrel16_instances(part), types)
        assert (c.relations, c.relations_typed, c.slots, c.slots_typed) == (16, 12, 32, 26)
        assert f"| {part} | {c.mentions:,} | {c.mentions_typed:,} |" in note
    assert [(r, role) for r, role, _, _ in c.untyped] == [("follows", "head"), ("follows", "tail"),
                                                          ("main subject", "tail"), ("part of", "head"),
                                                          ("part of", "tail"), ("sport", "head")]


def test_slot_semantics_swaps_within_the_relation_and_role_with_the_tail_first() -> None:
    gen = EntitySwap()
    gen.prepare(source(SPOUSE), 0)
    out = {p.perturbation: p for p in gen.perturb(SPOUSE, random.Random(0))}
    # Each spouse slot has one donor: Bob Ray (head), Cora Ray (tail).
    assert out["swap head"].input == "[E2] Eve Fox [/E2] was the wife of [E1] Bob Ray [/E1] ."
    assert out["swap tail"].input == "[E2] Cora Ray [/E2] was the wife of [E1] Hal Fox [/E1] ."
    tokens, head, tail = parse_marked(str(out["swap head"].input))
    assert (tail, head) == ((0, 2), (6, 8)) and tokens[6:8] == ["Bob", "Ray"]
    assert dict(out["swap head"].note) == {"from": "Hal Fox", "to": "Bob Ray", "type": "spouse head",
                                           "semantics": "slot",
                                           "donor": {"id": "Q12", "relation": "spouse", "role": "head"}}
    assert out["swap head"].groups is None   # the entity family, as before semantics existed


@pytest.mark.parametrize(("semantics", "heads", "tails"), [
    ("slot", {"Bob Ray"}, {"Cora Ray"}),
    # PER mentions of mother and voice type, never spouse's own.
    ("same-type-other-relation", {"Ann Lee", "Mary Lee", "Dan Poe"}, {"Ann Lee", "Mary Lee", "Dan Poe"}),
    ("random-same-type", {"Ann Lee", "Mary Lee", "Dan Poe", "Bob Ray", "Cora Ray"},
     {"Ann Lee", "Mary Lee", "Dan Poe", "Bob Ray", "Cora Ray"}),
])
def test_each_semantics_draws_from_exactly_its_pool(semantics: str, heads: set[str], tails: set[str]) -> None:
    seen: dict[str, set[str]] = {"head": set(), "tail": set()}
    for seed in range(200):
        for perturbation, (mention, note) in swaps(SPOUSE, semantics, seed).items():
            role = "head" if " head" in perturbation else "tail"
            seen[role].add(mention)
            assert note["semantics"] == semantics and note["to"] == mention
    assert seen == {"head": heads, "tail": tails}


def test_a_fixed_seed_picks_a_fixed_donor_and_records_it() -> None:
    # The documented draw: a semantics' stream is Random(f"{k}\x1f{semantics}") with k the first 64 bits of the
    # instance's stream (here Random(0)); each role takes randrange(len(pool)) of its pool sorted by name.
    k = random.Random(0).getrandbits(64)
    other = random.Random(f"{k}\x1fsame-type-other-relation")
    assert (other.randrange(3), other.randrange(3)) == (2, 1)
    any_relation = random.Random(f"{k}\x1frandom-same-type")
    assert (any_relation.randrange(5), any_relation.randrange(5)) == (1, 2)
    # Pools: other relations' PER ["Ann Lee", "Dan Poe", "Mary Lee"]; any relation's adds Bob Ray and Cora Ray.
    assert swaps(SPOUSE, "same-type-other-relation", 0) == {
        "swap head (same-type-other-relation)": ("Mary Lee", {
            "from": "Hal Fox", "to": "Mary Lee", "type": "PER", "semantics": "same-type-other-relation",
            "donor": {"id": "Q11", "relation": "mother", "role": "tail"}}),
        "swap tail (same-type-other-relation)": ("Dan Poe", {
            "from": "Eve Fox", "to": "Dan Poe", "type": "PER", "semantics": "same-type-other-relation",
            "donor": {"id": "Q50", "relation": "voice type", "role": "head"}})}
    assert {k: v[0] for k, v in swaps(SPOUSE, "random-same-type", 0).items()} == {
        "swap head (random-same-type)": "Bob Ray", "swap tail (random-same-type)": "Cora Ray"}
    # A semantics' draws do not depend on which others are chosen beside it.
    both = EntitySwap({"semantics": ["slot", "random-same-type"]})
    both.prepare(source(SPOUSE), 0)
    alone = EntitySwap({"semantics": "random-same-type"})
    alone.prepare(source(SPOUSE), 0)
    assert ([p for p in both.perturb(SPOUSE, random.Random(7)) if "random" in p.perturbation]
            == list(alone.perturb(SPOUSE, random.Random(7))))


def test_cross_relation_water_and_a_type_no_other_relation_has() -> None:
    # crosses: the tail's only WATER donor of another relation is the Oslofjord; no other relation has a
    # STRUCTURE, so its head is not swapped (and reported), while random-same-type takes crosses' own Kew Bridge.
    gen = EntitySwap({"semantics": ["same-type-other-relation", "random-same-type"]})
    gen.prepare(source(BRIDGE), 0)
    out = {p.perturbation: p for p in gen.perturb(BRIDGE, random.Random(3))}
    assert out["swap tail (same-type-other-relation)"].input == "[E1] Tay Bridge [/E1] spans the [E2] Oslofjord [/E2] ."
    assert dict(out["swap tail (same-type-other-relation)"].note)["donor"] == {"id": "Q31", "relation": WATER_REL,
                                                                                "role": "tail"}
    assert "swap head (same-type-other-relation)" not in out
    assert out["swap head (random-same-type)"].input == "[E1] Kew Bridge [/E1] spans the [E2] Tay [/E2] ."
    assert dict(out["swap tail (random-same-type)"].note)["to"] in {"Thames", "Oslofjord"}
    assert gen.notes() == ["entity-swap same-type-other-relation, not swapped (no STRUCTURE donor in another "
                           "relation): crosses / head 1"]
    assert ("share of instances with a swap (same-type-other-relation)", "crosses / head", 0.0) in gen.report()
    assert out["swap tail (random-same-type)"].groups == {"family": "entity-random-same-type",
                                                          "perturbation": "swap tail (random-same-type)"}


def test_an_untyped_slot_is_skipped_and_reported_never_swapped_by_a_guess() -> None:
    gen = EntitySwap({"semantics": list(SEMANTICS)})
    gen.prepare(source(FOLLOWS, VOICE), 0)
    follows = [p.perturbation for p in gen.perturb(FOLLOWS, random.Random(0))]
    assert follows == ["swap head", "swap tail"]   # only the slot swap: follows is MISC
    voice = {p.perturbation: p for p in gen.perturb(VOICE, random.Random(0))}
    # soprano: VOICE, a closed class with no other relation: no cross-relation donor and no made-up name; the
    # random-same-type pool is the one other voice type, tenor.
    assert dict(voice["swap tail (random-same-type)"].note)["to"] == "tenor"
    assert "swap tail (same-type-other-relation)" not in voice and "swap tail (unseen)" not in voice
    assert dict(voice["swap head (same-type-other-relation)"].note)["type"] == "PER"
    assert gen.notes() == [
        "entity-swap same-type-other-relation, not swapped (no VOICE donor in another relation): voice type / tail 1",
        "entity-swap same-type-other-relation, not swapped (untyped slot (MISC)): follows / head 1; follows / tail 1",
        "entity-swap random-same-type, not swapped (untyped slot (MISC)): follows / head 1; follows / tail 1",
        "entity-swap unseen, not swapped (VOICE is a closed class: no made-up name): voice type / tail 1",
        "entity-swap unseen, not swapped (untyped slot (MISC)): follows / head 1; follows / tail 1"]


def test_unseen_names_are_made_up_words_of_the_type_that_occur_nowhere_in_the_data() -> None:
    words = {t.lower() for i in (SPOUSE, BRIDGE, *DONORS) for t in i.tokens}
    shapes = {"head": r"^[A-Z][a-z]+ Bridge$|^[A-Z][a-z]+ Viaduct$", "tail": r"^[A-Z][a-z]+ River$|^Lake [A-Z][a-z]+$"}
    names = set()
    for seed in range(100):
        for instance in (SPOUSE, BRIDGE):
            for perturbation, (mention, note) in swaps(instance, "unseen", seed).items():
                role = "head" if " head" in perturbation else "tail"
                made = [w for w in mention.split() if w not in ("Bridge", "Viaduct", "River", "Lake")]
                assert made and all(w.lower() not in words for w in made), mention
                assert note["donor"] is None and note["semantics"] == "unseen"
                if instance is BRIDGE:
                    assert re.match(shapes[role], mention), mention
                else:
                    assert re.match(r"^[A-Z][a-z]+ [A-Z][a-z]+$", mention) and note["type"] == "PER"
                names.add(mention)
    assert len(names) > 300   # 400 draws, made of 2-3 of 30 syllables
    # Deterministic per seed.
    assert swaps(BRIDGE, "unseen", 5) == swaps(BRIDGE, "unseen", 5)


def test_a_generated_suite_has_one_family_per_semantics_or_one_family_when_asked() -> None:
    gens = [("entity-swap", EntitySwap({"semantics": list(SEMANTICS)}))]
    made = generate(source(SPOUSE, BRIDGE), gens, seed=0, name="t")
    groups = {(c.groups["family"], c.groups["perturbation"]) for c in made.cases if c.test_type == "MFT"}
    assert groups == {("entity", "swap head"), ("entity", "swap tail"),
                      *((f"entity-{s}", f"swap {r} ({s})") for s in SEMANTICS[1:] for r in ("head", "tail"))}
    one = generate(source(SPOUSE), [("entity-swap", EntitySwap({"semantics": list(SEMANTICS), "family": "entity"}))],
                   seed=0, name="t")
    assert {c.groups["family"] for c in one.cases} == {"entity"}
    assert len({c.groups["perturbation"] for c in one.cases}) == 8
    assert all(c.meta["note"]["semantics"] in SEMANTICS for c in made.cases)


def test_semantics_through_the_cli_and_its_mistakes(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    data = tmp_path / "tiny.jsonl"
    data.write_bytes(write_opennre([i.relation for i in (*DONORS, SPOUSE, BRIDGE) if i.relation is not None]))
    out = tmp_path / "swaps.jsonl"
    code, printed, err = run_cli(capsys, "suite", "generate", "entity-swap", "--source", data, "--out", out,
                                 "--option", 'semantics=["unseen","same-type-other-relation"]')
    assert code == 0, err
    # The source's follows instance (a donor of itself) is untyped: reported, not swapped.
    assert "entity-swap unseen, not swapped (untyped slot (MISC)): follows / head 1" in " ".join(printed.split())
    header, *cases = (json.loads(line) for line in out.read_text(encoding="utf-8").splitlines())
    assert header["source"]["generators"][0]["options"]["semantics"] == ["unseen", "same-type-other-relation"]
    assert {c["groups"]["family"] for c in cases} == {"entity-unseen", "entity-same-type-other-relation"}
    code, _, err = run_cli(capsys, "suite", "generate", "entity-swap", "--source", data, "--out", out,
                           "--option", "semantics=typed")
    assert code == 2 and "field '--option entity-swap.semantics'" in err
    assert "Input should be 'slot', 'same-type-other-relation', 'random-same-type' or 'unseen' (got 'typed')" in err
    code, _, err = run_cli(capsys, "suite", "generate", "entity-swap", "--source", "builtin:sst2#val", "--limit", "5",
                           "--out", out, "--option", "semantics=unseen")
    assert code == 2 and "need relation instances" in " ".join(err.split())
