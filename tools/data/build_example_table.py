"""Build the shipped example table ``beluga_core/data/builtin/tables/sst-phenomena.csv``: labelled, grouped
rows for ``beluga suite from-table`` (the example of docs/guides/your-data.md, and its test).

240 sentences from SST's training split (the shipped ``builtin:sst3`` copy), with their three-way label
(negative / neutral / positive, SST's cut-offs) and two groupings a user might hold out: ``phenomenon``
(negation, contrast, intensifier, plain: by the words the sentence uses) and ``length`` (short, medium, long).
A few rows are deliberately unusable (an empty text, a missing label), to show that from-table drops and
counts them. Seeded: the same data always gives the same file.

    python -m tools.data.build_example_table
"""

from __future__ import annotations

import argparse
import csv
import io
import lzma
import random
import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
SOURCE = ROOT / "beluga_core" / "data" / "builtin" / "sst" / "train.tsv.xz"
OUT = ROOT / "beluga_core" / "data" / "builtin" / "tables" / "sst-phenomena.csv"
PHENOMENA = {
    "negation": re.compile(r"\b(not|n't|never|no|nothing|nobody)\b"),
    "contrast": re.compile(r"\b(but|although|though|yet|however)\b"),
    "intensifier": re.compile(r"\b(very|really|extremely|so|too|incredibly|utterly)\b"),
}
NAMES = ("negative", "neutral", "positive")
PER_GROUP = 20  # per (phenomenon, label)


def phenomenon(sentence: str) -> str | None:
    hits = [name for name, rx in PHENOMENA.items() if rx.search(sentence.lower())]
    return hits[0] if len(hits) == 1 else ("plain" if not hits else None)


def length(sentence: str) -> str:
    n = len(sentence.split())
    return "short" if n <= 12 else "medium" if n <= 24 else "long"


def build() -> str:
    text = lzma.decompress(SOURCE.read_bytes()).decode("utf-8")
    rows = list(csv.DictReader(io.StringIO(text), delimiter="\t", quoting=csv.QUOTE_NONE))
    rng = random.Random(20261123)
    rng.shuffle(rows)
    chosen: list[dict[str, str]] = []
    counts: dict[tuple[str, str], int] = {}
    for row in rows:
        group = phenomenon(row["sentence"])
        key = (str(group), row["label3"])
        if group is None or counts.get(key, 0) >= PER_GROUP:
            continue
        counts[key] = counts.get(key, 0) + 1
        chosen.append({"id": f"sst-{row['sentence_index']}", "sentence": row["sentence"],
                       "label": NAMES[int(row["label3"])], "phenomenon": group, "length": length(row["sentence"])})
    chosen.sort(key=lambda r: int(r["id"].split("-")[1]))
    # Unusable rows, which from-table must drop and count.
    chosen.append({"id": "broken-1", "sentence": "", "label": "positive", "phenomenon": "plain", "length": "short"})
    chosen.append({"id": "broken-2", "sentence": "a film without a label", "label": "", "phenomenon": "plain",
                   "length": "short"})
    out = io.StringIO()
    writer = csv.DictWriter(out, fieldnames=["id", "sentence", "label", "phenomenon", "length"], lineterminator="\n")
    writer.writeheader()
    writer.writerows(chosen)
    return out.getvalue()


if __name__ == "__main__":
    argparse.ArgumentParser(description=(__doc__ or "").split("\n\n")[0]).parse_args()   # no flags: --help only
    OUT.parent.mkdir(parents=True, exist_ok=True)
    OUT.write_text(build(), encoding="utf-8")
    print(f"wrote {OUT}")
