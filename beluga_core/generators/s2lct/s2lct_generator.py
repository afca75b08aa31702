"""The ``s2lct`` generator: test cases for linguistic capabilities found in a labelled corpus (S²LCT).

Phase 1 (offline): a capability spec (``beluga_core.generators.s2lct.capabilities``) selects each capability's seed
sentences from the source with search rules over word lexicon classes (``beluga_core.generators.s2lct.lexicon``), draws
``seeds`` of them (seeded; 0: all), and turns each into cases by its transformation, labelled as the spec says.
Phase 2 (``expand = true``; needs a constituency parser, a reference grammar and a masked language model the
user supplies, ``beluga_core.generators.s2lct.expansion``): every phase-1 case is expanded by inserting words where
the grammar allows, and the expansions that pass the checks become cases of their own (``origin = expanded``).

Levels ``capability ⊃ lc ⊃ origin``; the ``lc`` level is scored. Every case is an MFT (``eq`` its label, or
``not_eq`` the one label a label set leaves out); cases from one corpus sentence share its id as ``split_key``.
The suite header maps each lc onto its CheckList functionality (``maps_to``), so that a run on CheckList's
sentiment suite evaluates every held-out functionality on the real sentences of the same capability.
"""

from __future__ import annotations

import random
from collections import Counter
from collections.abc import Callable, Iterator
from typing import Any, ClassVar, Literal

from pydantic import Field

from beluga_core.contracts.generators import Generator, Perturbed, Source, SourceInstance, SourceKind
from beluga_core.contracts.options import Options
from beluga_core.generators.s2lct.capabilities import (
    Capability,
    CapabilitySpec,
    Made,
    Template,
    load_spec,
    matcher,
    tokens,
    transform,
)

LEVELS = ("capability", "lc", "origin")
SEED, EXPANDED = "seed", "expanded"


class S2LCTOptions(Options):
    spec: str = Field("builtin:s2lct-sentiment", min_length=1, description=(
        "The capability spec: builtin:NAME or a TOML file (beluga_core.generators.s2lct.capabilities)."))
    seeds: int = Field(10, ge=0, description="Seed sentences drawn per capability (0: every qualifying sentence).")
    lexicon: str = Field("vader", min_length=1, description="The word lexicon the search rules read.")
    only: list[str] = Field(default_factory=list, description="Only these capabilities (ids or names; empty: all).")
    expand: bool = Field(False, description=(
        "Phase 2: expand every case by grammar-guided insertion (needs parser, grammar and mlm)."))
    parser: str | None = Field(None, description="The constituency parser: benepar:MODEL or trees:FILE.")
    grammar: str | None = Field(None, description="The reference grammar: nltk-treebank or a file of bracketed trees.")
    mlm: str | None = Field(None, description="The masked language model that fills insertions (a local folder).")
    masked: int = Field(10, ge=1, description="Masked sentences per seed at most.")
    top: int = Field(5, ge=1, description="Grammar productions tried per node.")
    suggestions: int = Field(60, ge=1, description="Fills the masked language model suggests per masked sentence.")
    keep: int = Field(20, ge=1, description="Expansions kept per seed at most.")
    selection: Literal["confidence", "random"] = Field("confidence", description=(
        "Which valid expansions are kept: the language model's most confident or a seeded random draw."))


class S2LCT(Generator):
    """Capability test cases from a labelled corpus by search rules and templates (S²LCT, Lee et al.)."""

    family = "s2lct"
    kinds: ClassVar[tuple[SourceKind, ...]] = ("text",)
    levels = LEVELS
    scoring_level = "lc"
    invariant = False
    version = "1"
    Options = S2LCTOptions
    options: S2LCTOptions

    def __init__(self, options: dict[str, Any] | None = None) -> None:
        super().__init__(options)
        o = self.options
        if o.expand and not all((o.parser, o.grammar, o.mlm)):
            missing = [k for k in ("parser", "grammar", "mlm") if not getattr(o, k)]
            raise ValueError(f"expand needs {', '.join(missing)}: a parser (benepar:MODEL or trees:FILE), a reference "
                             "grammar (nltk-treebank or a file of bracketed trees) and a masked language model (a hub "
                             "name or a local folder); none is shipped, so expansion runs only where you supply them")
        self.spec: CapabilitySpec
        self.spec, self.spec_name = load_spec(o.spec)
        wanted = set(o.only)
        known = {c.id for c in self.spec.lc} | {c.name for c in self.spec.lc}
        if wanted - known:
            raise ValueError(f"only: {sorted(wanted - known)} are not capabilities of {self.spec_name}; it has "
                             f"{', '.join(c.id for c in self.spec.lc)}")
        self.capabilities = [c for c in self.spec.lc if not wanted or c.id in wanted or c.name in wanted]
        self._chosen: dict[str, list[Capability]] = {}
        self._pools: dict[tuple[str, str, str], list[tuple[str, str]]] = {}
        self._found: Counter[str] = Counter()
        self._expanded: Counter[str] = Counter()
        self._untreed: Counter[str] = Counter()
        self._seed = 0
        self._expander: Callable[[Made, Capability, random.Random], list[tuple[str, dict[str, Any]]]] | None = None

    def prepare(self, source: Source, seed: int) -> None:
        from beluga_core.generators.s2lct.lexicon import load_lexicon

        if list(source.label_space) != self.spec.label_space:
            raise ValueError(f"the spec {self.spec_name} labels sentences {self.spec.label_space}; {source.name} has "
                             f"{list(source.label_space)} (for SST with a neutral class: builtin:sst3)")
        self._seed = seed
        lexicon = load_lexicon(self.options.lexicon)
        texts: dict[str, SourceInstance] = {}
        for inst in source.instances:        # a text source (``kinds``): every input is one string
            texts.setdefault(str(inst.input), inst)   # a corpus sentence that occurs twice is one seed
        unique = list(texts.values())
        for c in self.capabilities:
            match = matcher(c.search, lexicon)
            found = [inst for inst in unique if match(str(inst.input), inst.label)]
            self._found[c.id] = len(found)
            n = self.options.seeds
            if n and n < len(found):
                keep = sorted(random.Random(f"{seed}\x1fs2lct\x1f{c.id}").sample(range(len(found)), n))
                found = [found[i] for i in keep]
            for inst in found:
                self._chosen.setdefault(inst.id, []).append(c)
            if isinstance(c.transform, Template):
                for label, block in c.transform.by_label.items():
                    for name, pool in block.pools.items():
                        in_pool = matcher(pool.search, lexicon)
                        self._pools[(c.id, label, name)] = [(inst.id, str(inst.input)) for inst in unique
                                                            if in_pool(str(inst.input), inst.label)]
        if self.options.expand:
            self._expander = self._make_expander(lexicon)

    def perturb(self, instance: SourceInstance, rng: random.Random) -> Iterator[Perturbed]:
        sentence = str(instance.input)
        for c in self._chosen.get(instance.id, []):
            local = random.Random(f"{self._seed}\x1fs2lct\x1f{c.id}\x1f{instance.id}")
            pools = {name: [(i, s) for i, s in members if i != instance.id and s != sentence]
                     for (cid, label, name), members in self._pools.items() if cid == c.id and label == instance.label}
            for made in transform(c, sentence, instance.label, local, pools):
                yield self._perturbed(c, made, SEED, {"lc": c.id, "seed_id": instance.id, "template": made.template})
                if self._expander is not None:
                    for text, note in self._expander(made, c, local):
                        self._expanded[c.id] += 1
                        yield self._perturbed(c, Made(text, made.label, made.template), EXPANDED,
                                              {"lc": c.id, "seed_id": instance.id, "template": made.template,
                                               "seed": made.text, **note})

    def _perturbed(self, c: Capability, made: Made, origin: str, note: dict[str, Any]) -> Perturbed:
        groups = {"capability": c.capability, "lc": c.name, "origin": origin}
        label, expectation = self._expect(made.label)
        return Perturbed(c.name, made.text, label, note, groups=groups, expectation=expectation)

    def _expect(self, label: str | tuple[str, ...]) -> tuple[str | None, dict[str, Any] | None]:
        """A label, or for a label set the one label it leaves out as a ``not_eq`` expectation."""
        if isinstance(label, str):
            return label, None
        if len(label) == 1:
            return label[0], None
        left_out = [i for i, name in enumerate(self.spec.label_space) if name not in label]
        return None, {"kind": "not_eq", "level": "single", "value": left_out[0]}

    def _make_expander(self, lexicon: Any) -> Callable[[Made, Capability, random.Random],
                                                       list[tuple[str, dict[str, Any]]]]:
        from beluga_core.generators.s2lct.expansion import MaskedLMFiller, TreeNotFound, expand_seed, load_parser
        from beluga_core.generators.s2lct.grammar import load_grammar

        o = self.options
        assert o.parser and o.grammar and o.mlm   # __init__ refuses expand without them
        parser, grammar, filler = load_parser(o.parser), load_grammar(o.grammar), MaskedLMFiller(o.mlm)

        def expand(made: Made, c: Capability, rng: random.Random) -> list[tuple[str, dict[str, Any]]]:
            recheck_rules = matcher(c.search, lexicon, check_label=False)
            recheck: Callable[[str], bool] = ((lambda s: recheck_rules(s, None)) if c.expansion.recheck == "search"
                                              else (lambda s: True))
            neutral: Callable[[str], bool] = (lexicon.is_neutral if c.expansion.word_sentiment == "neutral"
                                              else (lambda w: True))
            out = []
            try:
                expanded = expand_seed(tokens(made.text), parser, grammar, filler, rng=rng, tags_of=lexicon.penn_tags,
                                       is_neutral=neutral, recheck=recheck, top=o.top, k=o.masked,
                                       suggestions=o.suggestions, keep=o.keep, selection=o.selection)
            except TreeNotFound:
                # A trees:FILE parser holds parses of some sentences only: the others keep their seed alone.
                self._untreed[c.id] += 1
                return []
            for e in expanded:
                out.append((e.text, {"cfg_from": e.masked.cfg_from, "cfg_to": e.masked.cfg_to,
                                     "fills": list(e.fills), "score": round(float(e.score), 6)}))
            return out

        return expand

    def header_fields(self) -> dict[str, Any]:
        mapped = {c.name: c.checklist_functionality for c in self.capabilities if c.checklist_functionality}
        return {"label_space": list(self.spec.label_space),
                **({"maps_to": {"functionality": mapped}, "maps_from": "lc"} if mapped else {})}

    def notes(self) -> list[str]:
        if self.options.expand:
            return []
        return ["s2lct: phase 1 only (search rules and templates, offline), so every case has origin = seed. "
                "Expansion (origin = expanded; the store's expansion_flips view counts pass-to-fail from it) "
                "inserts words where a reference grammar allows and needs three things beluga does not ship: "
                "--option expand=true --option "
                "parser=benepar:MODEL|trees:FILE --option grammar=nltk-treebank|FILE --option mlm=NAME|DIR."]

    def report(self) -> list[tuple[str, str, float]]:
        rows: list[tuple[str, str, float]] = []
        chosen: Counter[str] = Counter(c.id for cs in self._chosen.values() for c in cs)
        for c in self.capabilities:
            rows.append(("sentences found", c.id, float(self._found[c.id])))
            rows.append(("seeds drawn", c.id, float(chosen[c.id])))
            if self.options.expand:
                rows.append(("expansions", c.id, float(self._expanded[c.id])))
                rows.append(("seeds without a parse", c.id, float(self._untreed[c.id])))
        return rows
