"""The shipped SST sentences (``builtin:sst3`` / ``builtin:sst5``): counts, the mojibake repair, checksums, the
build's reproducibility and the loaders. See beluga_core/data/builtin/sst/PROVENANCE.md."""

from __future__ import annotations

import hashlib
import lzma
import re
from collections import Counter
from functools import cache
from pathlib import Path

import pytest
from helpers import REPO, require_shared

from beluga_core.data.iid.classification_data import load_classification_iid
from tools.data import build_sst

REPO_ROOT = REPO
SST = REPO_ROOT / "beluga_core" / "data" / "builtin" / "sst"
SPLITS = ("train", "dev", "test")
HEADER = "sentence_index\tsentence\tscore\tlabel5\tlabel3"

# Counts as recorded in PROVENANCE.md.
SIZES = {"train": 8_544, "dev": 1_101, "test": 2_210}
LABEL5 = {"train": [1_092, 2_218, 1_624, 2_322, 1_288], "dev": [139, 289, 229, 279, 165],
          "test": [279, 633, 389, 510, 399]}
LABEL3 = {"train": [3_310, 1_624, 3_610], "dev": [428, 229, 444], "test": [912, 389, 909]}
CHANGED = {"train": 90, "dev": 7, "test": 10}

# The mojibake the build repaired: UTF-8 lead byte read as Latin-1 (Ã, Â, …) before a continuation
# character U+0080..U+00BF, cp1252's "â€", and the replacement character.
MOJIBAKE = re.compile("[\u00c2-\u00f4][\u0080-\u00bf]|\u00e2\u20ac|\ufffd")


@cache
def rows(split: str) -> tuple[tuple[str, ...], ...]:
    text = lzma.decompress((SST / f"{split}.tsv.xz").read_bytes()).decode("utf-8")
    lines = text.split("\n")
    assert lines[0] == HEADER and lines[-1] == "" and "\r" not in text
    return tuple(tuple(line.split("\t")) for line in lines[1:-1])


@pytest.mark.parametrize("split", SPLITS)
def test_counts_per_split_and_label(split: str) -> None:
    data = rows(split)
    assert len(data) == SIZES[split]
    assert all(len(r) == 5 for r in data)
    label5 = Counter(int(r[3]) for r in data)
    label3 = Counter(int(r[4]) for r in data)
    assert [label5[i] for i in range(5)] == LABEL5[split] and sum(label5.values()) == SIZES[split]
    assert [label3[i] for i in range(3)] == LABEL3[split] and sum(label3.values()) == SIZES[split]
    for _, _, score, l5, l3 in data:  # the documented cut-offs
        x = float(score)
        assert int(l5) == sum(x > c for c in (0.2, 0.4, 0.6, 0.8))
        assert int(l3) == sum(x > c for c in (0.4, 0.6))


def test_sentence_indices_are_unique_across_splits() -> None:
    ids = [r[0] for split in SPLITS for r in rows(split)]
    assert len(ids) == len(set(ids)) == sum(SIZES.values())


@pytest.mark.parametrize("split", SPLITS)
def test_no_mojibake_remains(split: str) -> None:
    for index, sentence, *_ in rows(split):
        assert not MOJIBAKE.search(sentence), (index, sentence)
        assert "Ã" not in sentence and "Â" not in sentence, (index, sentence)
        if not sentence.isascii():  # the repair again would change nothing: it was applied exactly once
            try:
                again = sentence.encode("latin-1").decode("utf-8")
            except UnicodeError:
                continue
            assert again == sentence, (index, sentence)


def test_repaired_words_and_kept_tokenisation() -> None:
    by_index = {r[0]: r[1] for split in SPLITS for r in rows(split)}
    assert "André" in by_index["383"].split(" ")
    assert "crème brûlée" in by_index["8697"]
    assert "8\u00a01\\/2" in by_index["5955"].split(" ")  # the original no-break space, one token
    first = by_index["1"]
    assert first.startswith("The Rock is destined to be the 21st Century 's new `` Conan '' and")
    train = " ".join(r[1] for r in rows("train"))
    assert "\\/" in train and "\\*" in train and "`` " in train and " n't " in train


def provenance_sha256() -> dict[str, str]:
    text = (SST / "PROVENANCE.md").read_text(encoding="utf-8")
    found = dict(re.findall(r"^\| (\w+)\.tsv\.xz \| [\d,]+ \| [\d,]+ \| ([0-9a-f]{64}) \|$", text, re.M))
    assert set(found) == set(SPLITS), "PROVENANCE.md's Files table should list each .tsv.xz with its sha256"
    return found


@pytest.mark.parametrize("split", SPLITS)
def test_sha256_and_size_match_provenance(split: str) -> None:
    data = (SST / f"{split}.tsv.xz").read_bytes()
    assert hashlib.sha256(data).hexdigest() == provenance_sha256()[split]
    text = (SST / "PROVENANCE.md").read_text(encoding="utf-8")
    assert f"| {split}.tsv.xz | {SIZES[split]:,} | {len(data):,} |" in text


def test_build_reproduces_the_shipped_bytes() -> None:
    source = require_shared("data", "sst")
    build = build_sst
    for split in SPLITS:
        result = build.convert(source, split)
        shipped = (SST / f"{split}.tsv.xz").read_bytes()
        assert result.text == lzma.decompress(shipped).decode("utf-8"), f"{split}: content differs"
        assert len(result.changes) == CHANGED[split]
        assert result.data == shipped, (f"{split}: same content, other xz bytes: a different liblzma than "
                                        "the one in PROVENANCE.md?")


def test_repair_is_the_exact_inverse() -> None:
    build = build_sst
    assert build.fix_mojibake("Andr\u00c3\u00a9 and 8\u00c2\u00a01\\/2") == "André and 8\u00a01\\/2"
    assert build.fix_mojibake("caf\u00e9") == "caf\u00e9"  # real Latin-1 text stays as it is
    assert build.fix_mojibake("`` plain '' -LRB- ascii \\/ -RRB-") == "`` plain '' -LRB- ascii \\/ -RRB-"


@pytest.mark.parametrize(("name", "labels"), [
    ("sst3", ["negative", "neutral", "positive"]),
    ("sst5", ["very negative", "negative", "neutral", "positive", "very positive"]),
])
def test_builtin_loaders(name: str, labels: list[str]) -> None:
    data = load_classification_iid(f"builtin:{name}", text_fields=("sentence",))
    assert data.label_names == labels
    assert len(data.train) == SIZES["train"]
    assert len(data.val) + len(data.test) == SIZES["dev"]
    counts = Counter(e.label for e in data.train)
    expected = LABEL3["train"] if name == "sst3" else LABEL5["train"]
    assert [counts[i] for i in range(len(labels))] == expected
    dev = Counter(e.label for e in (*data.val, *data.test))
    assert [dev[i] for i in range(len(labels))] == (LABEL3["dev"] if name == "sst3" else LABEL5["dev"])


def test_build_script_error_without_shared(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("BELUGA_SHARED", str(tmp_path))
    build = build_sst
    with pytest.raises(FileNotFoundError, match="SST source files not found"):
        build.shared_sst_dir()
