"""Relation datasets: FewRel JSON, TACRED JSON and OpenNRE JSON Lines read into ``RelationInstance``s, OpenNRE
written back, the shipped ``builtin:fewrel16`` and the i.i.d. data of the relation task.

Every reader returns instances whose tokens survive the marked text (``retokenize``): each token is one
whitespace-free word that is not a marker. Instances whose marked head and tail overlap cannot be marked and are
skipped: a reader counts them in ``dropped`` (reason -> count) when given a Counter, and raises otherwise, so
that no instance is ever lost unnoticed.

Long: the three readers share one set of record checks and error messages (file, line, field, what was expected),
and the FewRel-16 and i.i.d. loaders on top of them are a few lines each.
"""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Iterable
from dataclasses import replace
from pathlib import Path
from typing import Any

from beluga_core.core.errors import BelugaError
from beluga_core.data import BUILTIN_DATA
from beluga_core.data.iid.examples import IIDData, IIDExample
from beluga_core.data.iid.relation_instances import MARKERS, Entity, RelationInstance, Span
from beluga_core.data.iid.tables import COMPRESSIONS, decoded
from beluga_core.data.splits import halves

OVERLAP = "marked head and tail overlap"
"""The ``dropped`` key of instances skipped because their marked mentions overlap."""

FEWREL16 = BUILTIN_DATA / "fewrel16"
FEWREL16_PARTS = ("train", "val", "pool")

_EXPECTED = ("expected FewRel JSON (an object {relation id: [{\"tokens\", \"h\", \"t\"}, ...]}), TACRED JSON (a "
             "list of {\"id\", \"relation\", \"token\", \"subj_start\", \"subj_end\", \"obj_start\", "
             "\"obj_end\"} records) or OpenNRE JSON Lines (one {\"token\", \"h\", \"t\", \"relation\"} "
             "object a line)")


def _whole_word(token: str) -> bool:
    return token.split() == [token]


def retokenize(instance: RelationInstance) -> RelationInstance:
    """The instance with every token split on whitespace (``str.split``), the spans following: a blank token
    (FewRel has ``"\\xa0"``, ``"\\n"`` and ``" "`` tokens) vanishes, a token holding a space becomes several.
    The marked text joins tokens with single spaces and ``parse_marked`` splits it on whitespace, so any other
    token would shift every span after it. Unchanged (the same object) when every token is already one word."""
    if all(_whole_word(t) for t in instance.tokens):
        return instance
    starts: list[int] = []
    words: list[str] = []
    for token in instance.tokens:
        starts.append(len(words))
        words += token.split()
    starts.append(len(words))

    def moved(role: str, entity: Entity) -> Entity:
        spans = tuple((starts[s], starts[e]) for s, e in entity.spans)
        for (s, e), (new_s, new_e) in zip(entity.spans, spans, strict=True):
            # A mention of blank tokens only would silently turn into a masked (empty) one.
            if s < e and new_s == new_e:
                raise BelugaError(f"instance {instance.id}: the {role} mention [{s}, {e}) is only whitespace")
        return replace(entity, spans=spans)

    if not words:
        raise BelugaError(f"instance {instance.id}: every token is whitespace")
    return instance.with_tokens(words, moved("head", instance.head), moved("tail", instance.tail))


def _overlap(head: Span, tail: Span) -> bool:
    # The same test as RelationInstance's, made before construction so the instance can be skipped.
    return head[0] < tail[1] and tail[0] < head[1]


class _Collector:
    """Builds a file's instances: wraps construction errors with the file (and line), checks that ids are unique
    and tokens are markable, and collects the skipped instances."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.instances: list[RelationInstance] = []
        self.skipped: list[str] = []
        self.ids: set[str] = set()

    def add(self, instance_id: str, tokens: list[str], head: Entity, tail: Entity, relation: str,
            line: int | None = None) -> None:
        if instance_id in self.ids:
            raise BelugaError(f"instance id {instance_id!r} occurs twice", source=self.path, line=line)
        self.ids.add(instance_id)
        if not tokens:
            raise BelugaError(f"instance {instance_id}: no tokens", source=self.path, line=line)
        inside = all(0 <= s <= e <= len(tokens) for entity in (head, tail) for s, e in entity.spans)
        if inside and _overlap(head.span, tail.span):
            self.skipped.append(instance_id)
            return
        try:
            instance = RelationInstance(instance_id, tuple(tokens), head, tail, relation)
        except BelugaError as exc:
            raise BelugaError(exc.message, source=self.path, line=line) from None
        try:
            instance = retokenize(instance)
        except BelugaError as exc:
            raise BelugaError(exc.message, source=self.path, line=line) from None
        marker = next((t for t in instance.tokens if t in MARKERS), None)
        if marker is not None:
            raise BelugaError(f"instance {instance_id}: the token {marker} is one of the entity markers",
                              source=self.path, line=line)
        self.instances.append(instance)

    def result(self, dropped: Counter[str] | None) -> list[RelationInstance]:
        if self.skipped:
            if dropped is None:
                shown = ", ".join(self.skipped[:5]) + (", ..." if len(self.skipped) > 5 else "")
                raise BelugaError(f"{len(self.skipped)} instance(s) whose marked head and tail overlap cannot be "
                                  f"marked ({shown}); pass dropped=Counter() to skip and count them",
                                  source=self.path)
            dropped[OVERLAP] += len(self.skipped)
        return self.instances


def _text(path: Path) -> str:
    return decoded(path, path.suffix if path.suffix in COMPRESSIONS else "")


def _json(path: Path, text: str, what: str) -> Any:
    try:
        return json.loads(text)
    except json.JSONDecodeError as exc:
        raise BelugaError(f"not valid JSON ({exc.msg} at column {exc.colno}); expected {what}", source=path,
                          line=exc.lineno) from None


def _int(value: Any) -> bool:
    return type(value) is int  # bool is an int subclass, and true is no offset


def _str(value: Any) -> bool:
    return isinstance(value, str)


def _fewrel_entity(path: Path, iid: str, role: str, value: Any) -> Entity:
    key = "h" if role == "head" else "t"
    if (not isinstance(value, list) or len(value) != 3 or not _str(value[0])
            or not (value[1] is None or _str(value[1])) or not isinstance(value[2], list) or not value[2]):
        raise BelugaError(f"instance {iid}: \"{key}\" must be [name, wikidata id, [[token positions], ...]] with "
                          f"at least one position list, got {json.dumps(value, ensure_ascii=False)[:200]}",
                          source=path)
    spans: list[Span] = []
    for number, positions in enumerate(value[2], start=1):
        if not isinstance(positions, list) or not positions or not all(_int(p) for p in positions):
            raise BelugaError(f"instance {iid}: {role} mention {number} must be a non-empty list of token "
                              f"positions, got {positions!r}", source=path)
        start, end = min(positions), max(positions) + 1
        if sorted(positions) != list(range(start, end)):
            raise BelugaError(f"instance {iid}: {role} mention {number} has the positions {positions}, which are "
                              f"not contiguous (a mention is one run of tokens)", source=path)
        spans.append((start, end))
    return Entity(value[0], tuple(spans), id=value[1], type=None)


def _from_fewrel(path: Path, data: Any, dropped: Counter[str] | None) -> list[RelationInstance]:
    if not isinstance(data, dict) or not data:
        raise BelugaError(f"expected FewRel JSON, an object {{relation id: [instance, ...]}}, got "
                          f"{_kind(data)}", source=path)
    out = _Collector(path)
    for relation, items in data.items():
        if not isinstance(items, list):
            raise BelugaError(f"relation {relation!r}: expected a list of instances, got {_kind(items)}",
                              source=path)
        for index, record in enumerate(items):
            iid = f"{relation}/{index}"
            if not isinstance(record, dict):
                raise BelugaError(f"instance {iid}: expected an object, got {_kind(record)}", source=path)
            missing = [k for k in ("tokens", "h", "t") if k not in record]
            if missing:
                raise BelugaError(f"instance {iid}: missing key(s) {', '.join(missing)}; a FewRel instance is "
                                  f"{{\"tokens\", \"h\", \"t\"}}", source=path)
            tokens = record["tokens"]
            if not isinstance(tokens, list) or not all(_str(t) for t in tokens):
                raise BelugaError(f"instance {iid}: \"tokens\" must be a list of strings", source=path)
            out.add(iid, tokens, _fewrel_entity(path, iid, "head", record["h"]),
                    _fewrel_entity(path, iid, "tail", record["t"]), relation)
    return out.result(dropped)


def _tacred_entity(path: Path, where: str, record: dict[str, Any], prefix: str) -> Entity:
    tokens = record["token"]
    # TACRED's ends are inclusive.
    start, end = record[f"{prefix}_start"], record[f"{prefix}_end"] + 1
    if not 0 <= start < end <= len(tokens):
        raise BelugaError(f"{where}: {prefix}_start..{prefix}_end = {start}..{end - 1} (inclusive) is not a span of "
                          f"its {len(tokens)} tokens", source=path)
    return Entity(" ".join(" ".join(tokens[start:end]).split()), ((start, end),), type=record.get(f"{prefix}_type"))


def _from_tacred(path: Path, data: Any, dropped: Counter[str] | None) -> list[RelationInstance]:
    if not isinstance(data, list) or not data:
        raise BelugaError(f"expected TACRED JSON, a non-empty list of records, got {_kind(data)}", source=path)
    out = _Collector(path)
    keys = ("id", "relation", "token", "subj_start", "subj_end", "obj_start", "obj_end")
    for number, record in enumerate(data):
        where = f"record {number}"
        if not isinstance(record, dict):
            raise BelugaError(f"{where}: expected an object, got {_kind(record)}", source=path)
        if "id" in record:
            where += f" (id {record['id']!r})"
        missing = [k for k in keys if k not in record]
        if missing:
            raise BelugaError(f"{where}: missing key(s) {', '.join(missing)}; a TACRED record has "
                              f"{', '.join(keys)} (ends inclusive), and optionally subj_type and obj_type",
                              source=path)
        tokens = record["token"]
        if not isinstance(tokens, list) or not all(_str(t) for t in tokens):
            raise BelugaError(f"{where}: \"token\" must be a list of strings", source=path)
        bad = [k for k in keys[3:] if not _int(record[k])]
        bad += [k for k in ("id", "relation") if not _str(record[k])]
        bad += [k for k in ("subj_type", "obj_type") if record.get(k) is not None and not _str(record[k])]
        if bad:
            raise BelugaError(f"{where}: wrong type for {', '.join(bad)} (offsets are integers, the others "
                              f"strings)", source=path)
        out.add(record["id"], tokens, _tacred_entity(path, where, record, "subj"),
                _tacred_entity(path, where, record, "obj"), record["relation"])
    return out.result(dropped)


def _opennre_entity(path: Path, line: int, key: str, value: Any) -> Entity:
    def span(pair: Any) -> Span | None:
        return (pair[0], pair[1]) if isinstance(pair, list) and len(pair) == 2 and all(map(_int, pair)) else None

    if not isinstance(value, dict):
        raise BelugaError(f"\"{key}\" must be an object {{\"name\", \"pos\": [start, end], ...}}, got "
                          f"{_kind(value)}", source=path, line=line)
    missing = [k for k in ("name", "pos") if k not in value]
    if missing:
        raise BelugaError(f"\"{key}\" lacks {', '.join(missing)}; expected {{\"name\", \"pos\": [start, end]}} "
                          f"(end exclusive), optionally \"id\", \"type\" and \"mentions\"", source=path, line=line)
    pos = span(value["pos"])
    if pos is None:
        raise BelugaError(f"\"{key}.pos\" must be [start, end], got {value['pos']!r}", source=path, line=line)
    spans: list[Span] = [pos]
    if "mentions" in value:
        mentions = value["mentions"]
        parsed = [span(m) for m in mentions] if isinstance(mentions, list) else [None]
        if not parsed or None in parsed:
            raise BelugaError(f"\"{key}.mentions\" must be a non-empty list of [start, end], got {mentions!r}",
                              source=path, line=line)
        if parsed[0] != pos:
            raise BelugaError(f"\"{key}.mentions\" must start with the marked mention \"pos\" {list(pos)}, got "
                              f"{mentions[0]!r}", source=path, line=line)
        spans = [s for s in parsed if s is not None]
    bad = [k for k in ("name", "id", "type") if k in value and not (_str(value[k]) or (k != "name"
                                                                                       and value[k] is None))]
    if bad:
        raise BelugaError(f"\"{key}\": {', '.join(bad)} must be a string", source=path, line=line)
    return Entity(value["name"], tuple(spans), id=value.get("id"), type=value.get("type"))


def _from_opennre(path: Path, text: str, dropped: Counter[str] | None) -> list[RelationInstance]:
    out = _Collector(path)
    # split("\n"), not splitlines(): JSON escapes newlines in strings, but U+2028 or U+0085 may stand unescaped.
    for line, raw in enumerate(text.split("\n"), start=1):
        if not raw.strip():
            continue
        try:
            record = json.loads(raw)
        except json.JSONDecodeError as exc:
            raise BelugaError(f"not valid JSON ({exc.msg} at column {exc.colno}); OpenNRE JSON Lines hold one "
                              f"object a line", source=path, line=line) from None
        if not isinstance(record, dict):
            raise BelugaError(f"expected an object {{\"token\", \"h\", \"t\", \"relation\"}}, got "
                              f"{_kind(record)}", source=path, line=line)
        missing = [k for k in ("token", "h", "t", "relation") if k not in record]
        if missing:
            raise BelugaError(f"missing key(s) {', '.join(missing)}; an OpenNRE record is {{\"token\": [...], "
                              f"\"h\": {{\"name\", \"pos\"}}, \"t\": {{...}}, \"relation\"}}", source=path, line=line)
        tokens = record["token"]
        if not isinstance(tokens, list) or not all(_str(t) for t in tokens):
            raise BelugaError("\"token\" must be a list of strings", source=path, line=line)
        if not _str(record["relation"]):
            raise BelugaError(f"\"relation\" must be a string, got {record['relation']!r}", source=path, line=line)
        instance_id = record.get("id", str(line))
        if not (_str(instance_id) or _int(instance_id)):
            raise BelugaError(f"\"id\" must be a string, got {instance_id!r}", source=path, line=line)
        out.add(str(instance_id), tokens, _opennre_entity(path, line, "h", record["h"]),
                _opennre_entity(path, line, "t", record["t"]), record["relation"], line=line)
    if not out.instances and not out.skipped:
        raise BelugaError("no records; expected OpenNRE JSON Lines", source=path)
    return out.result(dropped)


def _kind(value: Any) -> str:
    if isinstance(value, dict):
        return "an empty object" if not value else "an object"
    if isinstance(value, list):
        return "an empty list" if not value else "a list"
    return f"a JSON {type(value).__name__} ({json.dumps(value, ensure_ascii=False)[:40]})"


def read_fewrel(path: str | Path, dropped: Counter[str] | None = None) -> list[RelationInstance]:
    """FewRel JSON (plain, .gz, .xz or .bz2): an object ``{relation id: [instance, ...]}`` whose instances are
    ``{"tokens": [...], "h": [name, wikidata id, [[token positions], ...]], "t": [...]}``, each position list
    one contiguous mention, the first the marked one. Instance ids are ``RELATION/INDEX`` (index within the
    relation), the relation is FewRel's id (``P59``), entities carry the Wikidata id and every mention, no type.
    Instances whose marked head and tail overlap are skipped and counted in ``dropped`` (an error without it)."""
    path = Path(path)
    return _from_fewrel(path, _json(path, _text(path), "FewRel JSON"), dropped)


def read_tacred(path: str | Path, dropped: Counter[str] | None = None) -> list[RelationInstance]:
    """TACRED JSON (plain, .gz, .xz or .bz2; also Re-TACRED / TACREV): a list of ``{"id", "relation",
    "token", "subj_start", "subj_end", "obj_start", "obj_end"}`` records with inclusive ends (made exclusive
    here), optionally ``subj_type`` / ``obj_type`` (the entities' types). The subject is the head; names are the
    spans' tokens; TACRED's ``no_relation`` is ``NA_LABEL``. Overlapping subject and object: see ``dropped``."""
    path = Path(path)
    return _from_tacred(path, _json(path, _text(path), "TACRED JSON"), dropped)


def read_opennre(path: str | Path, dropped: Counter[str] | None = None) -> list[RelationInstance]:
    """OpenNRE JSON Lines (plain, .gz, .xz or .bz2), one ``{"token": [...], "h": {"name", "id", "pos": [start,
    end]}, "t": {...}, "relation": r}`` a line (ends exclusive; ``h.id`` optional), with the optional keys
    ``write_opennre`` adds: ``"id"`` (else the 1-based line number), ``h.mentions`` (every mention, the marked
    ``pos`` first) and ``h.type``. Blank lines are skipped. Overlapping head and tail: see ``dropped``."""
    path = Path(path)
    return _from_opennre(path, _text(path), dropped)


def read_relations(path: str | Path, dropped: Counter[str] | None = None) -> list[RelationInstance]:
    """A relation dataset in any of the formats above, recognised by its shape: a JSON object of lists is
    FewRel, a JSON list of records with ``subj_start`` is TACRED, JSON Lines of records with ``token``, ``h``
    and ``t`` are OpenNRE."""
    path = Path(path)
    text = _text(path)
    if not text.strip():
        raise BelugaError(f"empty file; {_EXPECTED}", source=path)
    try:
        data = json.loads(text)
    except json.JSONDecodeError as exc:
        first_line, first = next((n, raw) for n, raw in enumerate(text.split("\n"), 1) if raw.strip())
        try:
            record = json.loads(first)
        except json.JSONDecodeError:
            raise BelugaError(f"not valid JSON or JSON Lines ({exc.msg} at column {exc.colno}); {_EXPECTED}",
                              source=path, line=exc.lineno) from None
        if isinstance(record, dict) and {"token", "h", "t"} <= record.keys():
            return _from_opennre(path, text, dropped)
        raise BelugaError(f"JSON Lines, but the first record is not OpenNRE's (it lacks token, h or t); "
                          f"{_EXPECTED}", source=path, line=first_line) from None
    if isinstance(data, dict) and {"token", "h", "t"} <= data.keys():
        return _from_opennre(path, text, dropped)  # JSON Lines of a single record
    if isinstance(data, dict) and data and all(isinstance(v, list) for v in data.values()):
        return _from_fewrel(path, data, dropped)
    if isinstance(data, list) and data and isinstance(data[0], dict) and "subj_start" in data[0]:
        return _from_tacred(path, data, dropped)
    raise BelugaError(f"a JSON file of none of the relation formats (it is {_kind(data)}); {_EXPECTED}",
                      source=path)


def _entity_json(entity: Entity) -> dict[str, Any]:
    out: dict[str, Any] = {"name": entity.name, "pos": list(entity.span), "mentions": [list(s) for s in entity.spans]}
    if entity.id is not None:
        out["id"] = entity.id
    if entity.type is not None:
        out["type"] = entity.type
    return out


def write_opennre(instances: Iterable[RelationInstance]) -> bytes:
    """OpenNRE JSON Lines (UTF-8, one record a line, keys sorted, no spaces) with beluga's extra keys ``id``,
    ``h.mentions`` / ``t.mentions`` and, when set, ``type``: the same instances always give the same bytes, and
    ``read_opennre`` gives them back equal. ``meta`` is not written. A token that would not survive the marked
    text (empty, holding whitespace, a marker) is an error: ``retokenize`` the instance first."""
    lines = []
    for instance in instances:
        bad = next(((i, t) for i, t in enumerate(instance.tokens) if not _whole_word(t) or t in MARKERS), None)
        if bad is not None:
            raise BelugaError(f"instance {instance.id}: token {bad[0]} {bad[1]!r} is empty, holds whitespace or is "
                              f"a marker; it would not read back the same (retokenize the instance first)")
        record = {"id": instance.id, "token": list(instance.tokens), "h": _entity_json(instance.head),
                  "t": _entity_json(instance.tail), "relation": instance.relation}
        lines.append(json.dumps(record, sort_keys=True, ensure_ascii=False, separators=(",", ":")) + "\n")
    return "".join(lines).encode("utf-8")


def fewrel16_relation_names() -> dict[str, str]:
    """The shipped ``builtin:fewrel16`` relations: Wikidata property id -> name (``P59`` -> ``constellation``)."""
    data = json.loads((FEWREL16 / "relation_names.json").read_text(encoding="utf-8"))
    return {relation: entry[0] for relation, entry in data.items()}


def load_fewrel16(part: str) -> list[RelationInstance]:
    """One part of the shipped ``builtin:fewrel16`` (see its PROVENANCE.md): ``train`` (D_train), ``val`` (the
    stand-in for an official validation set, halved into D_val / D_test) or ``pool`` (the source of generated
    suites, never in an i.i.d. split). Sorted by relation, then FewRel index."""
    if part not in FEWREL16_PARTS:
        raise BelugaError(f"no fewrel16 part {part!r}; the parts are {', '.join(FEWREL16_PARTS)}")
    return read_opennre(FEWREL16 / f"{part}.jsonl.xz")


def fewrel16_instances(part: str) -> list[RelationInstance]:
    """``load_fewrel16(part)`` with the relations named (``constellation``) as every beluga suite and model of
    FewRel-16 labels them; the Wikidata property id stays in ``meta["relation_id"]``."""
    names = fewrel16_relation_names()
    return [RelationInstance(r.id, r.tokens, r.head, r.tail, names[r.relation], {**r.meta, "relation_id": r.relation})
            for r in load_fewrel16(part)]


RELATION_TRAIN_STEMS = ("train",)
RELATION_DEV_STEMS = ("dev", "val", "validation")


def _relation_file(folder: Path, stems: tuple[str, ...]) -> Path | None:
    for stem in stems:
        for path in sorted(folder.glob(f"{stem}.*")):
            if path.is_file():
                return path
    return None


def load_relation_iid(source: str, *, eval_seed: int = 42) -> IIDData:
    """D_train and the seeded halves D_val / D_test of the validation data of a relation dataset:
    ``builtin:fewrel16`` (its train and val parts; the pool is in no split) or a folder holding ``train.*`` and
    ``dev.*`` / ``val.*`` / ``validation.*`` in FewRel JSON, TACRED JSON or OpenNRE JSON Lines. Inputs are
    marked texts; labels are ids into the sorted relation names."""
    if source == f"builtin:{FEWREL16.name}":
        train, dev = fewrel16_instances("train"), fewrel16_instances("val")
    else:
        folder = Path(source)
        if not folder.is_dir():
            raise BelugaError("expected builtin:fewrel16 or a folder with train.* and dev.* (or val.*) relation "
                              "files (FewRel JSON, TACRED JSON, OpenNRE JSON Lines)", source=folder, field="iid")
        found = [_relation_file(folder, s) for s in (RELATION_TRAIN_STEMS, RELATION_DEV_STEMS)]
        if found[0] is None or found[1] is None:
            raise BelugaError("the folder needs a train.* and a dev.* (or val.*, validation.*) relation file",
                              source=folder, field="iid")
        train, dev = read_relations(found[0]), read_relations(found[1])
    names = sorted({r.relation for r in train} | {r.relation for r in dev})
    index = {n: i for i, n in enumerate(names)}

    def examples(instances: list[RelationInstance]) -> list[IIDExample]:
        return [IIDExample(r.marked_text(), index[r.relation]) for r in instances]

    val_idx, test_idx = halves(len(dev), eval_seed)
    return IIDData(examples(train), examples([dev[i] for i in val_idx]), examples([dev[i] for i in test_idx]),
                   source, names)
