"""Build the shipped OFFLINE FIXTURES ``builtin:qqp-fixture`` and ``builtin:squad-fixture``.

No QQP or SQuAD i.i.d. data can be fetched on these machines, so the paraphrase and reading tasks ship small
stand-ins built from the CheckList suites that ship with beluga. They exist to run the whole path offline
(loading, windowing, training, decoding, metrics, store, views). They are NOT QQP and NOT SQuAD, and numbers
measured on them say nothing about either; see each folder's PROVENANCE.md.

- qqp-fixture (GLUE QQP TSV layout, ``is_duplicate`` column): the question pairs of the QQP suite's
  "Testing implications" test, whose per-pair labels are QQP validation labels; every not-duplicate pair
  and a sample of duplicate pairs (40 % not duplicate, near QQP's 37 %), one orientation per unordered pair.
- squad-fixture (SQuAD v1.1 JSON layout): (context, question, answer) triples of the SQuAD suite's MFT
  tests (answer = first occurrence of the answer string), cases split whole between train and dev; a third
  of the contexts get a real SQuAD paragraph (an original of the suite's INV tests) prepended or appended as
  a distractor, so that contexts span several windows at short window lengths.

    python -m tools.data.build_iid_fixtures   # rewrites beluga_core/data/{qqp,squad}_fixture/
"""

from __future__ import annotations

import argparse
import json
import lzma
import random
from collections import defaultdict
from pathlib import Path
from typing import cast

from beluga_core.data.suite.suite_files import load_suite

DATA = Path(__file__).resolve().parents[2] / "beluga_core" / "data" / "builtin"
SEED = 20240601
QQP_NEGATIVE_SHARE = 0.40
QQP_DEV = 1000
SQUAD_TRAIN = 2400
SQUAD_DEV = 600
DISTRACTOR_SHARE = 1 / 3
DISTRACTOR_POOL = 120


def _xz(path: Path, text: str) -> None:
    # Fixed preset and no timestamps in the container: the same input gives the same bytes.
    path.write_bytes(lzma.compress(text.encode("utf-8"), preset=9 | lzma.PRESET_EXTREME))


def build_qqp(out: Path) -> dict[str, int]:
    suite = load_suite("builtin:qqp")
    labels: dict[frozenset[str], int | None] = {}
    oriented: dict[frozenset[str], tuple[str, str]] = {}
    for case in suite.cases:
        if case.groups["functionality"] != "Testing implications":
            continue
        pairs = cast(list[tuple[str, str]], case.inputs)
        for (q1, q2), lab in zip(pairs, cast(list[int | None], case.label), strict=True):
            key = frozenset((q1, q2))
            if len(key) < 2 or any(ch in q for q in (q1, q2) for ch in "\t\r\n"):
                continue
            oriented.setdefault(key, (q1, q2))
            labels[key] = lab if labels.get(key, lab) == lab else None  # conflicting labels: drop the pair
    keys = sorted((k for k, v in labels.items() if v is not None), key=lambda k: oriented[k])
    rng = random.Random(SEED)
    negatives = [k for k in keys if labels[k] == 0]
    positives = [k for k in keys if labels[k] == 1]
    n_pos = round(len(negatives) * (1 - QQP_NEGATIVE_SHARE) / QQP_NEGATIVE_SHARE)
    chosen = negatives + rng.sample(positives, min(n_pos, len(positives)))
    rng.shuffle(chosen)
    qid: dict[str, int] = {}
    splits = {"dev": chosen[:QQP_DEV], "train": chosen[QQP_DEV:]}
    out.mkdir(parents=True, exist_ok=True)
    counts = {}
    for name, part in splits.items():
        lines = ["id\tqid1\tqid2\tquestion1\tquestion2\tis_duplicate"]
        for i, key in enumerate(part):
            q1, q2 = oriented[key]
            ids = [qid.setdefault(q, len(qid) + 1) for q in (q1, q2)]
            lines.append(f"{i}\t{ids[0]}\t{ids[1]}\t{q1}\t{q2}\t{labels[key]}")
        _xz(out / f"{name}.tsv.xz", "\n".join(lines) + "\n")
        counts[name] = len(part)
        counts[f"{name}_not_duplicate"] = sum(labels[k] == 0 for k in part)
    (out / "label_names.txt").write_text("not_duplicate\nduplicate\n", encoding="utf-8")
    return counts


def build_squad(out: Path) -> dict[str, int]:
    suite = load_suite("builtin:squad")
    rng = random.Random(SEED)
    by_func: dict[str, list[list[tuple[str, str, str]]]] = defaultdict(list)
    paragraphs: list[str] = []
    for case in suite.cases:
        if case.test_type == "INV":
            paragraphs.append(case.inputs[0][0])
            continue
        labels = case.label if isinstance(case.label, list) else [case.label] * len(case.inputs)
        seen = set()
        triples = []
        for (context, question), answer in zip(cast(list[tuple[str, str]], case.inputs), labels, strict=True):
            if isinstance(answer, str) and answer in context and (context, question) not in seen:
                seen.add((context, question))
                triples.append((context, question, answer))
        if triples:
            by_func[case.groups["functionality"]].append(triples)
    pool = rng.sample(sorted(set(paragraphs)), DISTRACTOR_POOL)
    # Whole cases go to one split, so no context is shared between train and dev.
    splits: dict[str, list[tuple[str, str, str, str]]] = {"train": [], "dev": []}
    funcs = sorted(by_func)
    for name, total in (("dev", SQUAD_DEV), ("train", SQUAD_TRAIN)):
        quota = total // len(funcs)
        for func in funcs:
            taken = 0
            cases = by_func[func]
            rng.shuffle(cases)
            while cases and taken < quota:
                triples = cases.pop()
                rng.shuffle(triples)
                for t in triples[: quota - taken]:
                    splits[name].append((func, *t))
                    taken += 1
    counts = {}
    out.mkdir(parents=True, exist_ok=True)
    for name, items in splits.items():
        articles: dict[str, dict[str, list[dict]]] = defaultdict(lambda: defaultdict(list))
        contexts: dict[str, str] = {}
        n_distract = 0
        for k, (func, context, question, answer) in enumerate(items):
            start = context.index(answer)
            if context not in contexts:
                full = context
                if rng.random() < DISTRACTOR_SHARE:
                    n_distract += 1
                    extra = rng.choice(pool)
                    full = f"{extra} {context}" if rng.random() < 0.5 else f"{context} {extra}"
                contexts[context] = full
            full = contexts[context]
            offset = full.index(context)
            articles[func][full].append({"id": f"fixture-{name}-{k}", "question": question,
                                         "answers": [{"text": answer, "answer_start": offset + start}]})
        doc = {"version": "beluga-squad-fixture-1", "data": [
            {"title": func, "paragraphs": [{"context": c, "qas": qas} for c, qas in paragraphs_.items()]}
            for func, paragraphs_ in articles.items()]}
        _xz(out / f"{name}.json.xz", json.dumps(doc, ensure_ascii=False, indent=None) + "\n")
        counts[name] = len(items)
        counts[f"{name}_contexts_with_distractor"] = n_distract
    return counts


def main() -> None:
    argparse.ArgumentParser(description=(__doc__ or "").split("\n\n")[0]).parse_args()   # no flags: --help only
    print("qqp-fixture:", build_qqp(DATA / "qqp_fixture"))
    print("squad-fixture:", build_squad(DATA / "squad_fixture"))


if __name__ == "__main__":
    main()
