"""Generators that change the words around the entities: CheckList's seven perturbations (DiagnoseRE's context
family) and the removal of relation cue words (its selection-bias family).

- ``context`` (family ``context``): each of ``punctuation``, ``strip_punctuation``, ``change_location``,
  ``change_names``, ``change_number``, ``contractions``, ``add_typos`` (``generators.perturb``) that applies yields
  one perturbed input (n = 1). On a relation instance it changes the words between the two marked mentions (what
  DiagnoseRE perturbed), so the entities and their spans stay as they were; on a text, the whole text.
- ``cue-removal`` (family ``selection-bias``): per relation r, the ``num_rules`` words with the highest tf·idf,
  tf(w, r) = occurrences of w in r's instances / number of r's instances, idf(w) = ln(|R| / (1 + |{r : w occurs
  in r}|)), computed on the donors (D_train) over lower-cased words outside the marked mentions that contain a
  letter; or the rules of a JSON file (``rules``: {relation: [words]}, e.g. curated by hand as DiagnoseRE advises).
  Each instance of r loses every word in rules[r] outside its mentions (DiagnoseRE also cut inside them, which
  changes the entity; beluga leaves mentions alone). An instance without a cue word yields nothing.
"""

from __future__ import annotations

import json
import random
from collections.abc import Iterator
from pathlib import Path
from typing import Any, ClassVar, Literal, get_args

from pydantic import Field

from beluga_core.contracts.generators import Generator, Perturbed, Source, SourceInstance
from beluga_core.contracts.options import Options
from beluga_core.data.iid.cues import context_words, tfidf_rules
from beluga_core.data.iid.relation_instances import Entity, RelationInstance
from beluga_core.generators.perturbations.perturb import CONTEXT_FUNCTIONS

ContextFunction = Literal["punctuation", "strip_punctuation", "change_location", "change_names", "change_number",
                          "contractions", "add_typos"]
assert get_args(ContextFunction) == tuple(CONTEXT_FUNCTIONS), "the context functions and their names disagree"


class ContextOptions(Options):
    functions: list[ContextFunction] = Field(default_factory=lambda: list(get_args(ContextFunction)), min_length=1,
                                             description="The context perturbations applied, each a group of its own.")
    skip_years: bool = Field(True, description="change_number leaves numbers that read as years alone.")


class Context(Generator):
    Options = ContextOptions
    options: ContextOptions
    family: ClassVar[str] = "context"
    perturbations: ClassVar[tuple[str, ...]] = tuple(CONTEXT_FUNCTIONS)
    kinds = ("relation", "text")

    def perturb(self, instance: SourceInstance, rng: random.Random) -> Iterator[Perturbed]:
        if not isinstance(instance.input, str):
            return
        # One generator per function, so that choosing fewer functions leaves the others' output unchanged.
        seed = rng.getrandbits(64)
        r = instance.relation
        tokens = instance.tokens
        start, end = r.context_span() if r is not None else (0, len(tokens))
        segment = tokens[start:end]
        for name in CONTEXT_FUNCTIONS:
            if name not in self.options.functions:
                continue
            kwargs: dict[str, Any] = {"skip_years": self.options.skip_years} if name == "change_number" else {}
            change = CONTEXT_FUNCTIONS[name](segment, random.Random(f"{seed}\x1f{name}"), **kwargs)
            if change is None or tuple(change.tokens) == tuple(segment):
                continue
            if r is None:
                yield Perturbed(name, " ".join(change.tokens), note=dict(change.note))
            else:
                yield Perturbed(name, _with_context(r, start, end, change.tokens).marked_text(), note=dict(change.note))


def _with_context(r: RelationInstance, start: int, end: int, segment: tuple[str, ...]) -> RelationInstance:
    """``r`` with tokens [start, end) — the words between the marked mentions — replaced by ``segment``."""
    delta = len(segment) - (end - start)
    tokens = (*r.tokens[:start], *segment, *r.tokens[end:])

    def moved(entity: Entity) -> Entity:
        s, e = entity.span
        span = (s + delta, e + delta) if s >= end else (s, e)
        return Entity(entity.name, (span,), entity.id, entity.type)   # other mentions may have changed: dropped

    return r.with_tokens(tokens, moved(r.head), moved(r.tail))


class CueRemovalOptions(Options):
    num_rules: int = Field(5, ge=1, description="Cue words learnt per relation (TF-IDF over the donors, D_train).")
    rules: str | None = Field(None, description=(
        "A JSON file {relation: [words]} of the cue words to remove, instead of learning them."))


class CueRemoval(Generator):
    Options = CueRemovalOptions
    options: CueRemovalOptions
    family: ClassVar[str] = "selection-bias"
    perturbations: ClassVar[tuple[str, ...]] = ("cue removal",)
    kinds = ("relation",)

    def __init__(self, options: dict[str, Any] | None = None) -> None:
        super().__init__(options)
        self.rules: dict[str, set[str]] = {}
        self.scores: dict[str, list[tuple[str, float]]] = {}

    def prepare(self, source: Source, seed: int) -> None:
        path = self.options.rules
        if path:
            data = json.loads(Path(str(path)).read_text(encoding="utf-8"))
            if not isinstance(data, dict) or not all(isinstance(v, list) for v in data.values()):
                raise ValueError(f"rules file {path}: expected a JSON object {{relation: [words]}}")
            self.rules = {str(k): {str(w).lower() for w in v} for k, v in data.items()}
            return
        donors = [d.relation for d in source.donors if d.relation is not None]
        if not donors:
            raise ValueError("cue-removal learns its rules from the source's donors (D_train); this source has none "
                             "— give a rules file (--option cue-removal.rules=FILE)")
        self.scores = tfidf_rules(donors, self.options.num_rules)
        self.rules = {r: {w for w, _ in words} for r, words in self.scores.items()}

    def perturb(self, instance: SourceInstance, rng: random.Random) -> Iterator[Perturbed]:
        r = instance.relation
        assert r is not None  # the builder only hands relation instances to relation generators
        cues = self.rules.get(r.relation, set())
        drop = {i for i, w in context_words(r) if w in cues}
        if not drop:
            return
        tokens = [t for i, t in enumerate(r.tokens) if i not in drop]

        def at(pos: int) -> int:
            return pos - sum(1 for i in drop if i < pos)

        def moved(entity: Entity) -> Entity:
            s, e = entity.span
            return Entity(entity.name, ((at(s), at(e)),), entity.id, entity.type)

        out = r.with_tokens(tokens, moved(r.head), moved(r.tail))
        yield Perturbed("cue removal", out.marked_text(),
                        note={"removed": sorted({r.tokens[i].lower() for i in drop})})

    def report(self) -> list[tuple[str, str, float]]:
        return [("cue word (tf·idf)", f"{relation}: {w}", round(score, 4))
                for relation, words in sorted(self.scores.items()) for w, score in words]
