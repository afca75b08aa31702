"""The i.i.d. data layer: the shipped SST-2 copy, local directories, Hugging Face names and user errors."""

from __future__ import annotations

import gzip
import hashlib
import json
import lzma
import os
from collections import Counter
from pathlib import Path

import pytest
from helpers import REPO

from beluga_core.core.errors import BelugaError
from beluga_core.data.iid import builtin as iid_builtin
from beluga_core.data.iid import hub as iid_hub
from beluga_core.data.iid.classification_data import IIDExample, load_classification_iid
from beluga_core.data.iid.examples import IIDData
from beluga_core.data.splits import halves

SST2 = iid_builtin.BUILTIN_IID["sst2"].path
SHARED = Path(os.environ.get("BELUGA_SHARED") or REPO.parent / "shared")
SHARED_SST2 = SHARED / "data" / "sst2"
# sha256 of the original TSVs, as recorded in beluga_core/data/builtin/sst2/PROVENANCE.md.
ORIGINAL_SHA256 = {
    "train": "8621df47b79e9b3fa010405ef4dd506cbf483319cf851f20f2b6773f61d387b5",
    "dev": "54a9c12c77e402fc14d6a66a506f24d999f596b0176eb777c972cccc2f9cc4b0",
}
FIRST_DEV = "it 's a charming and often affecting journey . "


def sst2(seed: int = 42) -> IIDData:
    return load_classification_iid("builtin:sst2", text_fields=("sentence",), eval_seed=seed)


def shipped_rows(name: str) -> list[tuple[str, int]]:
    lines = lzma.decompress((SST2 / f"{name}.tsv.xz").read_bytes()).decode().split("\n")
    return [(s, int(lab)) for s, lab in (line.split("\t") for line in lines[1:] if line)]


def write_tsv(path: Path, header: list[str], rows: list[list[object]]) -> None:
    path.write_text("\n".join("\t".join(map(str, r)) for r in [header, *rows]) + "\n", encoding="utf-8")


def error_of(source: str | Path, **kwargs: object) -> str:
    kwargs.setdefault("text_fields", ("sentence",))
    with pytest.raises(BelugaError) as info:
        load_classification_iid(str(source), **kwargs)  # type: ignore[arg-type]
    assert info.value.exit_code == 2
    return str(info.value)


# --- builtin:sst2 -----------------------------------------------------------------------------------


def test_builtin_sst2_sizes_and_labels() -> None:
    data = sst2()
    assert (len(data.train), len(data.val), len(data.test)) == (67_349, 436, 436)
    assert data.source == "builtin:sst2"
    assert data.label_names == ["negative", "positive"]
    assert Counter(ex.label for ex in data.train) == {0: 29_780, 1: 37_569}
    assert Counter(ex.label for ex in data.val + data.test) == {0: 428, 1: 444}
    assert all(isinstance(ex.inputs, str) for ex in data.train[:100])


def test_builtin_sst2_halves_are_the_seeded_halves_of_dev_in_dev_order() -> None:
    dev = [IIDExample(s, lab) for s, lab in shipped_rows("dev")]
    assert dev[0] == IIDExample(FIRST_DEV, 1)
    val_idx, test_idx = halves(len(dev), 42)
    data = sst2()
    assert data.val == [dev[i] for i in val_idx]
    assert data.test == [dev[i] for i in test_idx]
    # Each half keeps dev order, so the first dev row leads whichever half holds it.
    assert FIRST_DEV in (data.val[0].inputs, data.test[0].inputs)


def test_halving_is_seeded_and_stable() -> None:
    a, b, c = sst2(42), sst2(42), sst2(7)
    assert (a.val, a.test) == (b.val, b.test)
    assert a.val != c.val
    assert a.train == c.train  # the seed only halves dev
    assert sorted(x.inputs for x in a.val + a.test) == sorted(x.inputs for x in c.val + c.test)


@pytest.mark.parametrize("name", ["train", "dev"])
def test_shipped_copy_is_byte_identical_to_the_recorded_original(name: str) -> None:
    raw = lzma.decompress((SST2 / f"{name}.tsv.xz").read_bytes())
    assert hashlib.sha256(raw).hexdigest() == ORIGINAL_SHA256[name]
    assert ORIGINAL_SHA256[name] in (SST2 / "PROVENANCE.md").read_text(encoding="utf-8")


@pytest.mark.skipif(not SHARED_SST2.is_dir(),
                    reason=f"shared data not found at {SHARED_SST2} (set BELUGA_SHARED to its folder)")
@pytest.mark.parametrize("name", ["train", "dev"])
def test_shipped_copy_equals_shared_data_row_for_row(name: str) -> None:
    original = (SHARED_SST2 / f"{name}.tsv").read_bytes()
    assert lzma.decompress((SST2 / f"{name}.tsv.xz").read_bytes()) == original
    rows = [line.split("\t") for line in original.decode().split("\n")[1:] if line]
    expected = [IIDExample(s, int(lab)) for s, lab in rows]
    data = sst2()
    if name == "train":
        assert data.train == expected
        return
    dev: list[IIDExample | None] = [None] * len(expected)
    for idx, part in zip(halves(len(expected), 42), (data.val, data.test), strict=True):
        for i, ex in zip(idx, part, strict=True):
            dev[i] = ex
    assert dev == expected


def test_builtin_catalogue_names_the_shipped_datasets(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    write_tsv(tmp_path / "train.tsv", ["sentence", "label"], [["a", 0], ["b", 1]])
    write_tsv(tmp_path / "dev.tsv", ["sentence", "label"], [["c", 0], ["d", 1]])
    mine = iid_builtin.BuiltinDataset(str(tmp_path), "classification")  # an absolute folder wins over the root
    monkeypatch.setitem(iid_builtin.BUILTIN_IID, "mine", mine)
    data = load_classification_iid("builtin:mine", text_fields=("sentence",))
    assert len(data.train) == 2 and len(data.val) + len(data.test) == 2
    msg = error_of("builtin:nope")
    assert "shipped: builtin:mine, builtin:qqp-fixture, builtin:sst2, builtin:sst3, builtin:sst5" in msg
    assert "squad" not in msg  # reading data is not a classification dataset


# --- local directories ------------------------------------------------------------------------------

ROWS = [["good movie", 1], ["bad, \"awful\" film", 0], ["fine", 1], ["meh", 0]]
DEV = [["nice", 1], ["dull", 0], ["great", 1], ["poor", 0], ["ok", 1]]


def check_small(data: IIDData) -> None:
    assert [ex.inputs for ex in data.train] == [r[0] for r in ROWS]
    assert [ex.label for ex in data.train] == [r[1] for r in ROWS]
    val_idx, test_idx = halves(len(DEV), 42)
    assert [ex.inputs for ex in data.val] == [DEV[i][0] for i in val_idx]
    assert [ex.inputs for ex in data.test] == [DEV[i][0] for i in test_idx]
    assert data.label_names == ["0", "1"]


def test_local_tsv_directory(tmp_path: Path) -> None:
    write_tsv(tmp_path / "train.tsv", ["sentence", "label"], ROWS)
    write_tsv(tmp_path / "dev.tsv", ["sentence", "label"], DEV)
    check_small(load_classification_iid(str(tmp_path), text_fields=("sentence",)))


def test_local_csv_directory_with_validation_file_and_extra_columns(tmp_path: Path) -> None:
    import csv

    for name, rows in (("train.csv", ROWS), ("validation.csv", DEV)):
        with open(tmp_path / name, "w", newline="", encoding="utf-8") as f:
            w = csv.writer(f)
            w.writerow(["idx", "label", "sentence"])
            w.writerows([[i, lab, s] for i, (s, lab) in enumerate(rows)])
    check_small(load_classification_iid(str(tmp_path), text_fields=("sentence",)))


def test_local_parquet_directory(tmp_path: Path) -> None:
    import pyarrow as pa
    import pyarrow.parquet as pq

    for name, rows in (("train", ROWS), ("dev", DEV)):
        table = pa.table({"sentence": [r[0] for r in rows], "label": [r[1] for r in rows]})
        pq.write_table(table, tmp_path / f"{name}.parquet")
    check_small(load_classification_iid(str(tmp_path), text_fields=("sentence",)))


def test_local_compressed_jsonl_directory_with_label_names(tmp_path: Path) -> None:
    for name, rows in (("train.jsonl.gz", ROWS), ("dev.jsonl", DEV)):
        text = "".join(json.dumps({"sentence": s, "label": lab}) + "\n" for s, lab in rows)
        (tmp_path / name).write_bytes(gzip.compress(text.encode(), mtime=0) if name.endswith(".gz")
                                      else text.encode())
    (tmp_path / "label_names.txt").write_text("neg\npos\n", encoding="utf-8")
    data = load_classification_iid(str(tmp_path), text_fields=("sentence",))
    assert data.label_names == ["neg", "pos"]
    assert [ex.inputs for ex in data.train] == [r[0] for r in ROWS]


def test_pairs_load_as_tuples(tmp_path: Path) -> None:
    header = ["id", "question1", "question2", "is_duplicate"]
    write_tsv(tmp_path / "train.tsv", header, [[1, "how old?", "what age?", 1], [2, "why?", "when?", 0]])
    write_tsv(tmp_path / "dev.tsv", header, [[3, "a?", "b?", 0], [4, "c?", "c ?", 1]])
    data = load_classification_iid(str(tmp_path), text_fields=("question1", "question2"),
                                   label_field="is_duplicate")
    assert data.train == [IIDExample(("how old?", "what age?"), 1), IIDExample(("why?", "when?"), 0)]
    assert sorted(ex.inputs for ex in data.val + data.test) == [("a?", "b?"), ("c?", "c ?")]


# --- user errors ------------------------------------------------------------------------------------


def test_missing_column_names_file_and_lists_columns(tmp_path: Path) -> None:
    write_tsv(tmp_path / "train.tsv", ["text", "label"], ROWS)
    write_tsv(tmp_path / "dev.tsv", ["text", "label"], DEV)
    msg = error_of(tmp_path)
    assert str(tmp_path / "train.tsv") in msg
    assert "missing column(s) 'sentence'" in msg and "columns found: 'text', 'label'" in msg


def test_non_integer_label_names_file_and_line(tmp_path: Path) -> None:
    write_tsv(tmp_path / "train.tsv", ["sentence", "label"], ROWS)
    write_tsv(tmp_path / "dev.tsv", ["sentence", "label"], [["x", 1], ["y", "positive"], ["z", 0]])
    msg = error_of(tmp_path)
    assert f"{tmp_path / 'dev.tsv'}, line 3" in msg
    assert "field 'label'" in msg and "'positive'" in msg


def test_bad_labels_in_parquet_and_negative_labels(tmp_path: Path) -> None:
    import pyarrow as pa
    import pyarrow.parquet as pq

    pq.write_table(pa.table({"sentence": ["a", "b"], "label": [1.0, 0.5]}), tmp_path / "train.parquet")
    write_tsv(tmp_path / "dev.tsv", ["sentence", "label"], [["x", 1], ["y", -1]])
    assert "row index 1" in error_of(tmp_path) and "0.5" in error_of(tmp_path)
    pq.write_table(pa.table({"sentence": ["a", "b"], "label": [1, 0]}), tmp_path / "train.parquet")
    msg = error_of(tmp_path)
    assert "dev.tsv, line 3" in msg and "hidden label" in msg


def test_label_outside_label_names(tmp_path: Path) -> None:
    write_tsv(tmp_path / "train.tsv", ["sentence", "label"], [["a", 0], ["b", 2]])
    write_tsv(tmp_path / "dev.tsv", ["sentence", "label"], DEV)
    (tmp_path / "label_names.txt").write_text("neg\npos\n", encoding="utf-8")
    assert "line 3" in error_of(tmp_path) and "label 2 has no name" in error_of(tmp_path)


def test_single_file_explains_the_layout(tmp_path: Path) -> None:
    write_tsv(tmp_path / "train.tsv", ["sentence", "label"], ROWS)
    msg = error_of(tmp_path / "train.tsv")
    assert "single file" in msg and "train.EXT and dev.EXT" in msg


def test_missing_directory(tmp_path: Path) -> None:
    msg = error_of(tmp_path / "nope")
    assert str(tmp_path / "nope") in msg and "no such directory" in msg


def test_missing_dev_file_lists_what_is_there(tmp_path: Path) -> None:
    write_tsv(tmp_path / "train.tsv", ["sentence", "label"], ROWS)
    write_tsv(tmp_path / "test.tsv", ["sentence", "label"], DEV)
    msg = error_of(tmp_path)
    assert "no dev file" in msg and "test.tsv, train.tsv" in msg


def test_two_train_files_are_ambiguous(tmp_path: Path) -> None:
    write_tsv(tmp_path / "train.tsv", ["sentence", "label"], ROWS)
    write_tsv(tmp_path / "train.csv", ["sentence", "label"], ROWS)
    write_tsv(tmp_path / "dev.tsv", ["sentence", "label"], DEV)
    assert "more than one train file (train.csv, train.tsv)" in error_of(tmp_path)


def test_empty_splits(tmp_path: Path) -> None:
    write_tsv(tmp_path / "train.tsv", ["sentence", "label"], [])
    write_tsv(tmp_path / "dev.tsv", ["sentence", "label"], DEV)
    assert "train split has no rows" in error_of(tmp_path)
    write_tsv(tmp_path / "train.tsv", ["sentence", "label"], ROWS)
    write_tsv(tmp_path / "dev.tsv", ["sentence", "label"], [["x", 1]])
    assert "at least 2 rows" in error_of(tmp_path)


def test_wrong_number_of_text_fields(tmp_path: Path) -> None:
    assert "one or two text fields" in error_of("builtin:sst2", text_fields=("a", "b", "c"))


# --- Hugging Face -----------------------------------------------------------------------------------


def test_hf_name_with_unreachable_hub_fails_fast(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(iid_hub, "hub_reachable", lambda endpoint, timeout=0: False)
    msg = error_of("nyu-mll/glue/sst2")
    assert "'nyu-mll/glue'" in msg and "unreachable" in msg and "builtin:sst2" in msg


def fake_glue() -> object:
    import datasets

    features = datasets.Features({"sentence": datasets.Value("string"), "idx": datasets.Value("int32"),
                                  "label": datasets.ClassLabel(names=["negative", "positive"])})
    split = {
        "train": {"sentence": ["a", "b", "c"], "label": [0, 1, 1]},
        "validation": {"sentence": ["v0", "v1", "v2", "v3"], "label": [1, 0, 1, 0]},
        "test": {"sentence": ["t0", "t1"], "label": [-1, -1]},
    }
    return datasets.DatasetDict({
        name: datasets.Dataset.from_dict({**cols, "idx": list(range(len(cols["label"])))}, features=features)
        for name, cols in split.items()})


def test_hf_names_map_to_load_dataset_and_halve_validation(monkeypatch: pytest.MonkeyPatch) -> None:
    import datasets

    calls: list[tuple[str, ...]] = []

    def fake_load(*args: str) -> object:
        calls.append(args)
        return fake_glue()

    monkeypatch.setattr(iid_hub, "hub_reachable", lambda endpoint, timeout=0: True)
    monkeypatch.setattr(datasets, "load_dataset", fake_load)
    data = load_classification_iid("glue/sst2", text_fields=("sentence",), eval_seed=3)
    load_classification_iid("nyu-mll/glue/sst2", text_fields=("sentence",))
    assert calls == [("glue", "sst2"), ("nyu-mll/glue", "sst2")]
    assert data.train == [IIDExample("a", 0), IIDExample("b", 1), IIDExample("c", 1)]
    val_idx, test_idx = halves(4, 3)
    assert [ex.inputs for ex in data.val] == [f"v{i}" for i in val_idx]
    assert [ex.inputs for ex in data.test] == [f"v{i}" for i in test_idx]
    assert data.label_names == ["negative", "positive"]
    msg = error_of("glue/sst2", text_fields=("question1", "question2"))
    assert "split 'train'" in msg and "columns found: 'sentence', 'label', 'idx'" in msg


def test_a_source_read_again_comes_from_what_the_process_kept_until_a_file_changes(tmp_path: Path,
                                                                                   monkeypatch: pytest.MonkeyPatch
                                                                                   ) -> None:
    """A worker is made per phase and every run made its own, each reading D_train again (``kept``): the same
    source, reader and seed give the data read before, without reading; an edited file, another seed or another
    column are read anew."""
    from beluga_core.data.iid import classification_data, kept

    kept.forget_kept()
    write_tsv(tmp_path / "train.tsv", ["sentence", "label"], ROWS)
    write_tsv(tmp_path / "dev.tsv", ["sentence", "label"], DEV)
    reads: list[str] = []
    real = classification_data._read_classification_iid
    monkeypatch.setattr(classification_data, "_read_classification_iid",
                        lambda source, *a: reads.append(source) or real(source, *a))

    def load(seed: int = 42) -> IIDData:
        return load_classification_iid(str(tmp_path), text_fields=("sentence",), eval_seed=seed)

    first = load()
    assert load() is first and len(reads) == 1
    assert load(seed=7) is not first and len(reads) == 2
    write_tsv(tmp_path / "train.tsv", ["sentence", "label"], [*ROWS, ["one more", 1]])
    changed = load()
    assert len(reads) == 3 and len(changed.train) == len(first.train) + 1
    # A source with no local files (a hub name) is read every time.
    assert kept.source_files("glue/sst2") is None
    assert kept.source_files("builtin:sst2") is not None
