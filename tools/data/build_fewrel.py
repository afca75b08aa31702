"""Build the shipped relation data ``builtin:fewrel16`` from FewRel 1.0's validation set.

Reads ``data/fewrel/val_wiki.json.xz`` of the shared folder (``--shared``; default ``$BELUGA_SHARED``, else
``../shared`` beside the repository root) with ``read_fewrel`` and partitions each relation's 700 instances,
seeded, into train 400 / val 100 / pool 200 (see ``partition``). Writes ``train.jsonl.xz``, ``val.jsonl.xz``
and ``pool.jsonl.xz`` (OpenNRE JSON Lines from ``write_opennre``), ``relation_names.json`` and ``LICENSE``
(copied unchanged) and ``PROVENANCE.md`` into ``beluga_core/data/builtin/fewrel16`` (``--out``).

Every output is a function of the source bytes and the seed only: instances sorted by relation id, then FewRel
index; Python's ``lzma`` with fixed settings (preset 9 | extreme, CRC64; the xz format stores no timestamp);
PROVENANCE.md generated here, never edited by hand. ``tests/unit/data/test_relation_data.py`` rebuilds into a temporary
folder and compares the bytes.

    python -m tools.data.build_fewrel            # (beluga installed) rewrites beluga_core/data/builtin/fewrel16/
    python -m tools.data.build_fewrel --check    # writes nothing; exit 1 when the shipped files differ
"""

from __future__ import annotations

import argparse
import hashlib
import json
import lzma
import os
import random
import sys
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path

from beluga_core.core.errors import BelugaError
from beluga_core.data.iid.relation_data import OVERLAP, read_fewrel, write_opennre
from beluga_core.data.iid.relation_instances import RelationInstance
from tools.data import write_or_check

REPO_ROOT = Path(__file__).resolve().parents[2]
OUT_DIR = REPO_ROOT / "beluga_core" / "data" / "builtin" / "fewrel16"
SOURCE = "val_wiki.json.xz"
SOURCE_COMMIT = "278a2315d2138810a379cd8d5718914dc56e2582"
SEED = 0
SIZES = {"train": 400, "val": 100}  # per relation; the pool takes the rest (200 when nothing is dropped)
PARTS = ("train", "val", "pool")
COPIED = ("relation_names.json", "LICENSE")
DUPLICATE = "same tokens and marked spans as an earlier instance"


@dataclass
class Build:
    """What a build made: every output file's bytes, the parts, and what was dropped (reason -> instance ids)."""

    files: dict[str, bytes]
    parts: dict[str, list[RelationInstance]]
    dropped: dict[str, list[str]] = field(default_factory=dict)
    repeats: dict[str, str] = field(default_factory=dict)  # a dropped duplicate's id -> the id it repeats

    def counts(self) -> dict[str, Counter[str]]:
        return {part: Counter(i.relation for i in instances) for part, instances in self.parts.items()}


def default_shared() -> Path:
    env = os.environ.get("BELUGA_SHARED")
    return Path(env) if env else Path(__file__).resolve().parents[3] / "shared"


def order(instance_id: str) -> tuple[str, int]:
    """Relation id, then FewRel's index as a number (``P155/2`` before ``P155/10``)."""
    relation, index = instance_id.rsplit("/", 1)
    return relation, int(index)


def partition(instances: list[RelationInstance], seed: int = SEED) -> dict[str, list[RelationInstance]]:
    """Per relation: its (kept) FewRel indices, sorted, shuffled by ``random.Random("fewrel16␟SEED␟RELATION")``;
    the first 400 are train, the next 100 val, the rest the pool. Each relation has its own generator, so a
    relation's partition does not depend on the others or on the order of the file."""
    by_relation: dict[str, dict[int, RelationInstance]] = {}
    for instance in instances:
        relation, index = order(instance.id)
        by_relation.setdefault(relation, {})[index] = instance
    parts: dict[str, list[RelationInstance]] = {p: [] for p in PARTS}
    for relation, members in by_relation.items():
        indices = sorted(members)
        if len(indices) <= sum(SIZES.values()):
            raise ValueError(f"relation {relation}: {len(indices)} instances leave none for the pool")
        random.Random(f"fewrel16\x1f{seed}\x1f{relation}").shuffle(indices)
        cut = [0, SIZES["train"], SIZES["train"] + SIZES["val"], len(indices)]
        for part, start, end in zip(PARTS, cut, cut[1:], strict=False):
            parts[part] += [members[i] for i in indices[start:end]]
    return {part: sorted(members, key=lambda i: order(i.id)) for part, members in parts.items()}


def content(instance: RelationInstance) -> tuple[tuple[str, ...], tuple[int, int], tuple[int, int]]:
    return instance.tokens, instance.head.span, instance.tail.span


def drop_duplicates(instances: list[RelationInstance]) -> tuple[list[RelationInstance], dict[str, str]]:
    """The instances without those whose tokens and marked spans repeat an earlier one's (file order), and the
    dropped ids with the id each repeats: a copy in two parts would be the same item on both sides of a split."""
    first: dict[tuple[tuple[str, ...], tuple[int, int], tuple[int, int]], str] = {}
    kept, dropped = [], {}
    for instance in instances:
        key = content(instance)
        if key in first:
            dropped[instance.id] = first[key]
        else:
            first[key] = instance.id
            kept.append(instance)
    return kept, dropped


def compress(data: bytes) -> bytes:
    return lzma.compress(data, format=lzma.FORMAT_XZ, check=lzma.CHECK_CRC64, preset=9 | lzma.PRESET_EXTREME)


def blank_tokens(source_json: bytes) -> tuple[Counter[str], int]:
    """Whitespace-only tokens of the source by repr, and how many instances have one (``read_fewrel`` removes
    them: the marked text could not carry them)."""
    data = json.loads(source_json)
    tokens: Counter[str] = Counter()
    instances = 0
    for items in data.values():
        for record in items:
            blanks = [t for t in record["tokens"] if not t.strip()]
            tokens.update(repr(t) for t in blanks)
            instances += bool(blanks)
    return tokens, instances


def build(shared: Path, seed: int = SEED) -> Build:
    """The shipped files, from ``SHARED/data/fewrel``; nothing is written."""
    folder = shared / "data" / "fewrel"
    missing = [name for name in (SOURCE, *COPIED) if not (folder / name).is_file()]
    if missing:
        raise FileNotFoundError(f"FewRel source file(s) {', '.join(missing)} not found in {folder}")
    overlap: Counter[str] = Counter()
    instances = read_fewrel(folder / SOURCE, overlap)
    source_ids = {i.id for i in instances}
    kept, duplicates = drop_duplicates(instances)
    parts = partition(kept, seed)
    files = {f"{part}.jsonl.xz": compress(write_opennre(members)) for part, members in parts.items()}
    for name in COPIED:
        files[name] = (folder / name).read_bytes()
    source_xz = (folder / SOURCE).read_bytes()
    source_json = lzma.decompress(source_xz)
    all_ids = {f"{r}/{i}" for r, items in json.loads(source_json).items() for i in range(len(items))}
    result = Build(files, parts, {OVERLAP: sorted(all_ids - source_ids, key=order), DUPLICATE: list(duplicates)},
                   duplicates)
    assert overlap[OVERLAP] == len(result.dropped[OVERLAP])
    names = {rid: entry[0] for rid, entry in json.loads(files["relation_names.json"]).items()}
    files["PROVENANCE.md"] = provenance(result, names, source_xz, source_json, seed).encode("utf-8")
    return result


def sha256(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def provenance(result: Build, names: dict[str, str], source_xz: bytes, source_json: bytes, seed: int) -> str:
    counts = result.counts()
    totals = {part: sum(c.values()) for part, c in counts.items()}
    relations = sorted(names, key=lambda r: int(r[1:]))
    blanks, blank_instances = blank_tokens(source_json)
    sentence_parts: dict[tuple[str, ...], set[str]] = {}
    for part, members in result.parts.items():
        for instance in members:
            sentence_parts.setdefault(instance.tokens, set()).add(part)
    shared_sentences = sum(len(p) > 1 for p in sentence_parts.values())
    dropped_lines = [f"- {reason}: {', '.join(ids) if ids else 'none'}" for reason, ids in result.dropped.items()]
    files_rows = [f"| {part}.jsonl.xz | {totals[part]:,} | {len(result.files[f'{part}.jsonl.xz']):,} | "
                  f"{sha256(result.files[f'{part}.jsonl.xz'])} |" for part in PARTS]
    files_rows += [f"| {name} | | {len(result.files[name]):,} | {sha256(result.files[name])} |" for name in COPIED]
    relation_rows = [f"| {r} | {names[r]} | {counts['train'][r]} | {counts['val'][r]} | {counts['pool'][r]} |"
                     for r in relations]
    pairs = "; ".join(f"{first} and {dup}" for dup, first in result.repeats.items())
    duplicate_note = (f"A duplicate repeats an earlier instance's tokens and marked mentions ({pairs});\nonly the "
                      "first is kept, so that one item cannot sit in two parts.\n" if pairs else "")
    blank_rows = [f"| `{t}` | {n} |" for t, n in blanks.most_common()]
    sep = "\\x1f"
    source = json.loads(source_json)
    sizes = sorted({len(items) for items in source.values()})
    source_shape = f"{len(source)} relations × {'/'.join(map(str, sizes))} instances"
    return f"""# FewRel 1.0 validation set, 16 relations (`builtin:fewrel16`), shipped with beluga

Relation classification data for the relation task: 16 Wikidata relations, every instance a tokenized
Wikipedia sentence with a head (subject) and a tail (object) entity. Read with
`beluga_core.data.iid.relation_instances.load_fewrel16(part)`; relation names with `fewrel16_relation_names()`.
Generated by `tools/data/build_fewrel.py` (seed {seed}); do not edit by hand, rebuild.

## Parts

| part | role | instances |
|---|---|---|
| train | D_train | {totals['train']:,} |
| val | official-validation stand-in: halved (seeded) into D_val and D_test | {totals['val']:,} |
| pool | source of the generated diagnostic suites; never in any i.i.d. split | {totals['pool']:,} |

beluga halves `val` into D_val and D_test as it halves every task's official validation set (FewRel's own
test set is not public). The pool is in no i.i.d. split, so generated suites perturb instances no model
trained on or was selected on (a sentence may still recur with another entity pair, see below).

Partition rule, per relation: its FewRel indices (after the drops below), sorted, then shuffled by
`random.Random(f"fewrel16{sep}{{seed}}{sep}{{relation}}")` with seed {seed}; the first {SIZES['train']} are train,
the next {SIZES['val']} val, the rest the pool. FewRel has no `no_relation` class, so neither has this data.

Instances per relation:

| relation | name | train | val | pool |
|---|---|---|---|---|
{chr(10).join(relation_rows)}

Dropped before the partition (they are in no part):

{chr(10).join(dropped_lines)}

{duplicate_note}Different entity pairs of one sentence are different instances and are kept:
{shared_sentences} sentences occur in more than one part.

## Files

| file | instances | bytes | sha256 |
|---|---|---|---|
{chr(10).join(files_rows)}

Format of the `.jsonl.xz` files (xz, preset 9 | extreme, CRC64): UTF-8 OpenNRE JSON Lines, one instance a
line, sorted by relation id then FewRel index, keys sorted, no spaces:
`{{"h":{{"id":WIKIDATA_ID,"mentions":[[s,e],...],"name":NAME,"pos":[s,e]}},"id":"RELATION/INDEX","relation":RELATION,"t":{{...}},"token":[...]}}`.
Offsets are token offsets, end exclusive; `pos` is the marked mention and `mentions` lists every mention,
the marked one first. `id` is FewRel's relation id and the instance's index in that relation's list of the
source; `relation` is the Wikidata property id (P59, …): names are in `relation_names.json`
(id → [name, description], from FewRel's `pid2name.json`). Entity names are FewRel's (lower-cased).

Tokens are FewRel's with one change: the marked text (`RelationInstance.marked_text`) joins tokens with
spaces and splitting it on whitespace must give them back, so the reader (`retokenize`) removes the
source's {sum(blanks.values())} whitespace-only tokens from {blank_instances} instances, shifting the spans after them
(no mention consists only of such tokens):

| token | count |
|---|---|
{chr(10).join(blank_rows)}

## Source

- `data/val_wiki.json` of the public repository thunlp/FewRel at commit {SOURCE_COMMIT},
  {len(source_json):,} bytes, sha256 {sha256(source_json)};
  read from the shared folder's `data/fewrel/{SOURCE}` ({len(source_xz):,} bytes, sha256
  {sha256(source_xz)}). {source_shape}.
- Licence: MIT (`LICENSE`, FewRel's, copied unchanged). The sentences come from Wikipedia (text under
  CC BY-SA); the labels are Wikidata properties, distantly supervised and then filtered by crowd workers.
- Cite: Xu Han, Hao Zhu, Pengfei Yu, Ziyun Wang, Yuan Yao, Zhiyuan Liu, Maosong Sun. "FewRel: A Large-Scale
  Supervised Few-Shot Relation Classification Dataset with State-of-the-Art Evaluation." EMNLP 2018.
"""


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n")[0])
    parser.add_argument("--shared", type=Path, default=None, help="the shared folder (holding data/fewrel)")
    parser.add_argument("--out", type=Path, default=OUT_DIR, help="where to write (default: the shipped folder)")
    parser.add_argument("--seed", type=int, default=SEED)
    parser.add_argument("--check", action="store_true", help="write nothing; exit 1 if the files differ")
    args = parser.parse_args(argv)
    try:
        result = build(args.shared or default_shared(), args.seed)
    except (FileNotFoundError, BelugaError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    counts = result.counts()
    for part in PARTS:
        per = sorted(set(counts[part].values()))
        print(f"{part}: {sum(counts[part].values()):,} instances, {len(counts[part])} relations, "
              f"{'/'.join(map(str, per))} per relation")
    for reason, ids in result.dropped.items():
        print(f"dropped ({reason}): {len(ids)}{': ' + ', '.join(ids) if ids else ''}")
    return write_or_check({args.out / name: data for name, data in result.files.items()}, args.check)

if __name__ == "__main__":
    sys.exit(main())
