"""What ``beluga suite generate --source SPEC`` reads: the instances to perturb and the donors of replacements.

SPEC is one of

- ``builtin:fewrel16[#PART]``: the shipped FewRel-16 data; PART ``pool`` (default: the suite-source pool no
  i.i.d. split contains), ``train`` or ``val``. Donors: its ``train`` part (D_train).
- a relation data file (FewRel JSON, TACRED JSON, OpenNRE JSON Lines); donors: the file itself (a generator never
  draws an instance's own entity).
- ``builtin:sst2``, ``builtin:sst3``, ``builtin:sst5``, ``builtin:qqp-fixture`` ``[#train|val|test]`` (default
  ``test``): a shipped i.i.d. dataset's split as beluga splits it (D_test = half of the dev set);
  ``builtin:sst3#heldout`` / ``builtin:sst5#heldout``: SST's official test split (2,210 sentences), which no run
  reads.
- a suite file or ``builtin:`` suite: its MFT cases with one gold label, first input (relation suites: the
  marked text is parsed back into tokens and spans).

Relation sources name their labels by relation; the label space is the sorted relations plus ``no_relation``
last (every relation model shares that head).
"""

from __future__ import annotations

from collections import Counter
from pathlib import Path

from beluga_core.contracts.generators import Source, SourceInstance, SourceKind
from beluga_core.core.errors import BelugaError
from beluga_core.data.iid.builtin import BUILTIN_IID, BUILTIN_PREFIX
from beluga_core.data.iid.classification_data import load_classification_iid
from beluga_core.data.iid.relation_data import OVERLAP, fewrel16_instances, read_relations
from beluga_core.data.iid.relation_instances import NA_LABEL, RelationInstance, from_marked
from beluga_core.data.iid.tables import read_table
from beluga_core.data.suite.suite_files import BUILTIN_DIR, load_suite

FEWREL16 = "fewrel16"
FEWREL_PARTS = ("pool", "train", "val")
# Shipped classification data: (task, text columns) — the columns the task plugin reads them with.
CLASSIFICATION_SOURCES = {"sst2": ("sentiment", ("sentence",)), "sst3": ("classification", ("sentence",)),
                          "sst5": ("classification", ("sentence",)),
                          "qqp-fixture": ("paraphrase", ("question1", "question2"))}
IID_PARTS = ("train", "val", "test")
# SST's official test split: shipped beside D_train / D_val / D_test (all three from SST's train and dev splits)
# and read by no run, so sentences generated from it are new to every model trained on builtin:sst2/3/5.
HELDOUT = "heldout"
SST_LABELS = {"sst3": "label3", "sst5": "label5"}
RELATION_SUFFIXES = (".json", ".jsonl", ".txt", ".json.gz", ".jsonl.gz", ".json.xz", ".jsonl.xz")


def relation_label_space(relations: list[str] | set[str], na_label: str = NA_LABEL) -> tuple[str, ...]:
    """Sorted relations, then the NA label as the last class (present in the data or not)."""
    return (*sorted(set(relations) - {na_label}), na_label)


def _relation_instance(r: RelationInstance) -> SourceInstance:
    return SourceInstance(r.id, r.marked_text(), r.relation, r)


def _split(spec: str) -> tuple[str, str | None]:
    name, sep, part = spec.partition("#")
    return name, (part if sep else None)


def read_source(spec: str) -> Source:
    """The source ``spec`` names (see the module docstring); a clear error otherwise."""
    name, part = _split(spec)
    builtin = name.removeprefix(BUILTIN_PREFIX) if name.startswith(BUILTIN_PREFIX) else None
    if builtin == FEWREL16:
        part = part or "pool"
        if part not in FEWREL_PARTS:
            raise BelugaError(f"builtin:fewrel16 has parts {', '.join(FEWREL_PARTS)}; got '#{part}'", field="source")
        instances = fewrel16_instances(part)
        donors = fewrel16_instances("train")
        return Source(f"builtin:fewrel16#{part}", "relation", tuple(map(_relation_instance, instances)),
                      relation_label_space({r.relation for r in instances + donors}),
                      tuple(map(_relation_instance, donors)), "builtin:fewrel16#train", "relation")
    if builtin in CLASSIFICATION_SOURCES:
        return _classification_source(builtin, part or "test")
    if builtin is not None and builtin in BUILTIN_IID:
        raise BelugaError(f"builtin:{builtin} cannot be a generator source; the i.i.d. sources are "
                          f"{', '.join(f'builtin:{n}' for n in CLASSIFICATION_SOURCES)} and builtin:{FEWREL16}",
                          field="source")
    if part is not None:
        raise BelugaError(f"'#{part}' selects a part of a built-in dataset only; {name} is a file or a suite",
                          field="source")
    if builtin is not None or (BUILTIN_DIR / f"{name}.jsonl.gz").exists() or _is_suite(Path(name)):
        return _suite_source(name)
    path = Path(name)
    if not path.exists():
        raise BelugaError("no such file; expected builtin:fewrel16[#part], builtin:sst2[#part], a relation data "
                          "file (FewRel / TACRED JSON, OpenNRE JSON Lines) or a suite file", source=path)
    dropped: Counter[str] = Counter()
    relations = read_relations(path, dropped)
    if dropped:
        raise BelugaError(f"{dropped[OVERLAP]} instance(s) have overlapping marked head and tail mentions; a "
                          "generator cannot rewrite them — remove them from the file", source=path)
    if not relations:
        raise BelugaError("the file holds no relation instances", source=path)
    made = tuple(map(_relation_instance, relations))
    return Source(str(path), "relation", made, relation_label_space({r.relation for r in relations}), made,
                  str(path), "relation")


def _is_suite(path: Path) -> bool:
    """A file whose first record is a suite header."""
    if not path.is_file() or not path.name.endswith((".jsonl", ".jsonl.gz")):
        return False
    from beluga_core.core.io import jsonl_records

    first = next(jsonl_records(path, "file"), None)
    return first is not None and isinstance(first[1], dict) and first[1].get("kind") == "suite"


def _classification_source(name: str, part: str) -> Source:
    task, fields = CLASSIFICATION_SOURCES[name]
    if part == HELDOUT and name in SST_LABELS:
        return _sst_heldout(name, task)
    if part not in IID_PARTS:
        extra = f", {HELDOUT} (SST's official test split, which no run reads)" if name in SST_LABELS else ""
        raise BelugaError(f"builtin:{name} has parts {', '.join(IID_PARTS)} (D_train, D_val, D_test){extra}; got "
                          f"'#{part}'", field="source")
    data = load_classification_iid(f"{BUILTIN_PREFIX}{name}", text_fields=fields)
    examples = {"train": data.train, "val": data.val, "test": data.test}[part]
    names = list(data.label_names)
    instances = tuple(SourceInstance(f"{part}/{i}", ex.inputs, names[int(ex.label)]) for i, ex in enumerate(examples))
    kind: SourceKind = "text" if len(fields) == 1 else "text_pair"
    return Source(f"builtin:{name}#{part}", kind, instances, tuple(names), task=task)


def _sst_heldout(name: str, task: str) -> Source:
    shipped = BUILTIN_IID[name]
    assert shipped.label_names is not None
    names = shipped.label_names
    rows = read_table(shipped.path / "test.tsv.xz", ("sentence_index", "sentence", SST_LABELS[name], "score"))
    instances = tuple(SourceInstance(f"{HELDOUT}/{index}", sentence, names[int(label)], meta={"score": float(score)})
                      for index, sentence, label, score in rows.values)
    return Source(f"builtin:{name}#{HELDOUT}", "text", instances, names, task=task)


def _suite_source(spec: str) -> Source:
    suite = load_suite(spec)
    header = suite.header
    space = list(header.label_space or [])
    if not space:
        raise BelugaError(f"suite '{header.name}' has no label_space: a generator needs gold labels",
                          source=suite.path)
    if header.input_kind == "context_question":
        raise BelugaError("reading-comprehension suites cannot be a generator source (their labels are answers)",
                          source=suite.path)
    relation = header.task == "relation"
    instances = []
    for case in suite.cases:
        if case.test_type != "MFT" or isinstance(case.label, list) or case.label is None:
            continue
        label = case.label if isinstance(case.label, str) else space[int(case.label)]
        x = case.inputs[0]
        if relation:
            if not isinstance(x, str):
                raise BelugaError(f"case '{case.id}': a relation input is one marked text", source=suite.path)
            instances.append(_relation_instance(from_marked(case.id, x, label)))
        else:
            instances.append(SourceInstance(case.id, x, label))
    if not instances:
        raise BelugaError(f"suite '{header.name}' has no MFT case with one gold label to generate from",
                          source=suite.path)
    kind: SourceKind = "relation" if relation else ("text" if header.input_kind == "text" else "text_pair")
    return Source(f"suite:{header.name}", kind, tuple(instances), tuple(space),
                  tuple(instances) if relation else (), f"suite:{header.name}" if relation else None, header.task)
