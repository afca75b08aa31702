"""Running generators over a source: the cases, the suite header, the counts of the dry run and the audit sample.

Every generator sees every instance (in the source's order) with its own ``random.Random`` seeded by (seed,
generator, instance id), so the output depends on nothing else: the same source, options and seed give the
same bytes. A generated input becomes an MFT case (the gold label on the perturbed input: DiagnoseRE's metric)
and, when the perturbation keeps the label and changes the input, an INV case ``[original, perturbed]``
(consistency, CheckList's tolerance 0.1); a counterfactual input also gets a DIR case ``[original, perturbed]``
(the confidence in the gold label must not rise). Case ids are ``family/perturbation/TYPE/<sha1 of the case>``; a case
identical to one already made (two instances perturbed into the same text) is dropped and counted.

A model-dependent generator's cases carry ``generated_against`` in their meta (the attacked model's store id, or
``path:DIR``); a generator of training data (``Generator.training_data``) pins its cases to T_train
(``split_part``, see ``data.splits``).
"""

from __future__ import annotations

import csv
import hashlib
import io
import json
import random
from collections import Counter, defaultdict
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from beluga_core.contracts.generators import Generator, Perturbed, Source, SourceInstance, TargetModel
from beluga_core.core.errors import BelugaError
from beluga_core.data.splits import PART_KEY
from beluga_core.data.suite.suite_schema import Case, Expectation, SuiteHeader

SPLIT_KEY = "split_key"
GENERATED_AGAINST = "generated_against"
INV_TOLERANCE = 0.1


@dataclass
class Generated:
    """A generated suite and what the dry run reports about it."""

    header: SuiteHeader
    cases: list[Case]
    instances: int
    # Per (family, perturbation): MFT and INV cases kept; duplicates dropped.
    counts: Counter[tuple[str, str, str]] = field(default_factory=Counter)
    duplicates: Counter[tuple[str, str]] = field(default_factory=Counter)
    # Per family, the source instances that yielded at least one case; per label, the MFT cases.
    yielded: dict[str, set[str]] = field(default_factory=dict)
    per_label: Counter[tuple[str, str]] = field(default_factory=Counter)
    reports: list[tuple[str, str, str, float]] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)


def _case_id(family: str, perturbation: str, test_type: str, inputs: Sequence[Any], label: Any) -> str:
    body = json.dumps([inputs, label], ensure_ascii=False, sort_keys=True)
    return f"{family}/{perturbation}/{test_type}/{hashlib.sha1(body.encode('utf-8')).hexdigest()[:12]}"


def generate(source: Source, generators: Sequence[tuple[str, Generator]], *, seed: int, name: str,
             limit: int | None = None, sample: int | None = None, description: str = "",
             model: TargetModel | None = None,
             model_record: dict[str, Any] | None = None,
             progress: Callable[[int], None] | None = None) -> Generated:
    """Run ``generators`` (registry name, instance) over ``source``; ``limit`` keeps its first N instances,
    ``sample`` a seeded sample of N (in source order: a source ordered by label, as FewRel's, stays balanced).
    ``model`` is what the generators that need one work against; ``model_record`` describes it for the header
    (default: its name)."""
    for gen_name, gen in generators:
        if source.kind not in gen.kinds:
            raise BelugaError(f"generator '{gen_name}' works on {', '.join(gen.kinds)} sources; {source.name} is a "
                              f"{source.kind} source", field="generator")
        if gen.requires_model:
            if model is None:
                raise BelugaError(f"generator '{gen_name}' works against a trained model: give --model "
                                  "store:STORE#SELECTOR (a model whose weights the store kept) or path:DIR (a saved "
                                  "checkpoint)", field="model")
            gen.model = model
    instances = source.instances[:limit] if limit else source.instances
    if sample and sample < len(instances):
        keep = sorted(random.Random(f"{seed}\x1fsample").sample(range(len(instances)), sample))
        instances = tuple(instances[i] for i in keep)
    used = Source(source.name, source.kind, tuple(instances), source.label_space, source.donors,
                  source.donors_name, source.task)
    for gen_name, gen in generators:
        try:
            gen.prepare(used, seed)
        except ValueError as exc:
            raise BelugaError(f"generator '{gen_name}': {exc}", field="option") from None
    cases: dict[str, Case] = {}
    against = (model_record or {"name": model.name}) if model is not None and any(
        g.requires_model for _, g in generators) else None
    against_id = model_key(against) if against is not None else None
    out = Generated(_header(used, generators, seed, name, description, against), [], len(instances),
                    yielded={gen.family: set() for _, gen in generators if gen.levels == Generator.levels})
    if limit or sample:
        out.header.source.update({k: v for k, v in (("limit", limit), ("sample", sample)) if v})
    for n, instance in enumerate(instances, 1):
        for gen_name, gen in generators:
            rng = random.Random(f"{seed}\x1f{gen_name}\x1f{instance.id}")
            for p in gen.perturb(instance, rng):
                if p.label is not None and p.label not in source.label_space:
                    raise BelugaError(f"generator '{gen_name}' labelled a case '{p.label}', which is not in the "
                                      f"label space {list(source.label_space)}")
                family = _family(gen, p)
                for case in _cases(gen_name, gen, instance, p, against_id if gen.requires_model else None):
                    if case.id in cases:
                        out.duplicates[(family, p.perturbation)] += 1
                        continue
                    cases[case.id] = case
                    out.counts[(family, p.perturbation, case.test_type)] += 1
                    out.yielded.setdefault(family, set()).add(instance.id)
                    if case.test_type == "MFT":
                        out.per_label[(family, _label_text(case))] += 1
        if progress is not None:
            progress(n)
    out.cases = list(cases.values())
    fields: dict[str, Any] = {}
    for _, gen in generators:
        fields.update(gen.header_fields())
    out.header = SuiteHeader.model_validate({**out.header.model_dump(), **fields,
                                             "test_types": sorted({c.test_type for c in out.cases}),
                                             "losses": sorted({c.loss for c in out.cases})})
    out.reports = [(gen_name, *row) for gen_name, gen in generators for row in gen.report()]
    out.notes = [note for _, gen in generators for note in gen.notes()]
    return out


def model_key(record: dict[str, Any]) -> str:
    """What a case's ``generated_against`` names: a stored model's id, else ``path:DIR`` (a saved checkpoint),
    else the model's name."""
    if record.get("model_id"):
        return str(record["model_id"])
    return f"path:{record['path']}" if record.get("path") else str(record.get("name", "a model"))


def _cases(gen_name: str, gen: Generator, instance: SourceInstance, p: Perturbed,
           against: str | None = None) -> list[Case]:
    label = p.label if p.label is not None or p.expectation is not None else instance.label
    family = _family(gen, p)
    groups = dict(p.groups) if p.groups is not None else {"family": gen.family, "perturbation": p.perturbation}
    if list(groups) != list(gen.levels):
        raise BelugaError(f"a case of generator '{gen_name}' is grouped by {list(groups)}; its levels are "
                          f"{list(gen.levels)}")
    meta = {"generator": gen_name, "perturbation": p.perturbation, SPLIT_KEY: instance.id,
            "original": instance.input if isinstance(instance.input, str) else list(instance.input),
            **({"note": dict(p.note)} if p.note else {}),
            # Model-independent generators leave it out (null), so that their suites stay byte-identical.
            **({GENERATED_AGAINST: against} if gen.requires_model else {}),
            **({PART_KEY: "train"} if gen.training_data else {})}
    expectation = (Expectation.model_validate(dict(p.expectation)) if p.expectation is not None
                   else Expectation(kind="eq", target="label"))
    out = [Case(id=_case_id(family, p.perturbation, "MFT", [p.input], label if p.expectation is None
                            else [label, expectation.model_dump(exclude_none=True)]),
                groups=groups, test_type="MFT", loss="mft", inputs=[p.input], label=label, expectation=expectation,
                meta=meta)] if p.mft else []
    if gen.invariant and p.label is None and p.input != instance.input:
        inputs = [instance.input, p.input]
        out.append(Case(id=_case_id(gen.family, p.perturbation, "INV", inputs, label), groups=groups,
                        test_type="INV", loss="inv", inputs=inputs, label=label,
                        expectation=Expectation.model_validate({"kind": "inv", "agg": "all_except_first",
                                                                "level": "pairwise", "tolerance": INV_TOLERANCE}),
                        meta=meta))
    if p.dir_twin and p.input != instance.input:
        inputs = [instance.input, p.input]
        out.append(Case(id=_case_id(gen.family, p.perturbation, "DIR", inputs, instance.label), groups=groups,
                        test_type="DIR", loss="dir", inputs=inputs, label=instance.label,
                        expectation=Expectation.model_validate({
                            "kind": "monotonic", "level": "pairwise", "agg": "all_except_first",
                            "label": instance.label, "increasing": False, "tolerance": 0.0}),
                        meta=meta))
    return out


def _family(gen: Generator, p: Perturbed) -> str:
    """The family a case counts under: the group at the generator's first level."""
    return p.groups[gen.levels[0]] if p.groups is not None else gen.family


def _label_text(case: Case) -> str:
    if case.label is None and case.expectation.kind == "not_eq":
        return f"not {case.expectation.model_dump().get('value')}"
    return str(case.label)


def _header(source: Source, generators: Sequence[tuple[str, Generator]], seed: int, name: str,
            description: str, against: dict[str, Any] | None) -> SuiteHeader:
    input_kind = "text" if source.kind == "relation" else source.kind
    levels = {(g.levels, g.scoring_level) for _, g in generators}
    if len(levels) > 1:
        raise BelugaError("these generators group their cases by different levels "
                          f"({'; '.join(f'{n}: {list(g.levels)}' for n, g in generators)}): generate one suite "
                          "per kind of levels", field="generator")
    (suite_levels, scoring), = levels
    return SuiteHeader(
        name=name, description=description or f"generated from {source.name} by "
                                               f"{', '.join(g for g, _ in generators)} (seed {seed})",
        levels=list(suite_levels), scoring_level=scoring, task=source.task, input_kind=input_kind,
        label_space=list(source.label_space), split_by=SPLIT_KEY,
        source={"generators": [{"name": g, "version": gen.version, "options": gen.option_values}
                               for g, gen in generators],
                "seed": seed, "from": source.name, "donors": source.donors_name, "model": against,
                "instances": len(source.instances)})


def audit_csv(generated: Generated, n: int, seed: int) -> bytes:
    """A seeded sample of ``n`` MFT cases as CSV (original, perturbed, label, family, perturbation, note), for a
    person to check that the perturbation kept the label."""
    mft = [c for c in generated.cases if c.test_type == "MFT" and c.meta.get("perturbation") != "original"]
    picked = sorted(random.Random(f"{seed}\x1faudit").sample(range(len(mft)), min(n, len(mft))))
    buffer = io.StringIO()
    writer = csv.writer(buffer, lineterminator="\n")
    writer.writerow(["case_id", "family", "perturbation", "label", "original", "perturbed", "note", "label_kept"])
    for i in picked:
        c = mft[i]
        writer.writerow([c.id, c.groups["family"], c.groups["perturbation"], c.label,
                         _text(c.meta.get("original")), _text(c.inputs[0]),
                         json.dumps(c.meta.get("note", {}), ensure_ascii=False, sort_keys=True), ""])
    return buffer.getvalue().encode("utf-8")


def _text(x: Any) -> str:
    return x if isinstance(x, str) else " ||| ".join(map(str, x or []))


def family_shares(generated: Generated) -> dict[str, float]:
    """Per family, the share of the source's instances that yielded at least one case."""
    return {family: len(ids) / generated.instances if generated.instances else 0.0
            for family, ids in generated.yielded.items()}


def by_family(generated: Generated) -> dict[str, dict[str, dict[str, int]]]:
    """family → perturbation → {MFT, INV, duplicates}."""
    out: dict[str, dict[str, dict[str, int]]] = defaultdict(lambda: defaultdict(dict))
    for (family, perturbation, test_type), n in generated.counts.items():
        out[family][perturbation][test_type] = n
    for (family, perturbation), n in generated.duplicates.items():
        out[family][perturbation]["duplicates"] = n
    return {f: dict(p) for f, p in out.items()}
