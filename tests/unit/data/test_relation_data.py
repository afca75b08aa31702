"""Relation datasets: the FewRel, TACRED and OpenNRE readers, format detection, the OpenNRE writer, and the
shipped ``builtin:fewrel16`` (counts, disjoint parts, checksums, reproducible build). See
beluga_core/data/builtin/fewrel16/PROVENANCE.md."""

from __future__ import annotations

import gzip
import hashlib
import json
import lzma
import re
from collections import Counter
from collections.abc import Mapping
from functools import cache
from pathlib import Path

import pytest
from helpers import DATA, REPO, require_shared

from beluga_core.core.errors import BelugaError
from beluga_core.data.iid.relation_data import (
    OVERLAP,
    fewrel16_relation_names,
    load_fewrel16,
    read_fewrel,
    read_opennre,
    read_relations,
    read_tacred,
    retokenize,
    write_opennre,
)
from beluga_core.data.iid.relation_instances import NA_LABEL, Entity, RelationInstance, parse_marked
from tools.data import build_fewrel

REPO_ROOT = REPO
TACRED_SAMPLE = DATA / "tacred-sample.json"
FEWREL16 = REPO_ROOT / "beluga_core" / "data" / "builtin" / "fewrel16"
PARTS = ("train", "val", "pool")
SHIPPED = ("train.jsonl.xz", "val.jsonl.xz", "pool.jsonl.xz", "relation_names.json", "LICENSE", "PROVENANCE.md")

# Per relation, as PROVENANCE.md records: P921/363 repeats P921/112 and was dropped, so P921's pool is one short.
SIZES = {"train": 400, "val": 100, "pool": 200}
SHORT = {("pool", "P921"): 199}


def write_json(path: Path, data: object) -> Path:
    path.write_text(json.dumps(data, ensure_ascii=False), encoding="utf-8")
    return path


def write_lines(path: Path, records: list[object]) -> Path:
    path.write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in records), encoding="utf-8")
    return path


def round_trips_marked(instance: RelationInstance) -> bool:
    tokens, head, tail = parse_marked(instance.marked_text())
    return tuple(tokens) == instance.tokens and head == instance.head.span and tail == instance.tail.span


# ---------------------------------------------------------------------------------------------------- TACRED


def test_tacred_sample_tokens_spans_and_types() -> None:
    first, second, third = read_tacred(TACRED_SAMPLE)
    assert first == RelationInstance(
        "sample-1", ("Barack", "Obama", "was", "born", "in", "Honolulu", "."),
        Entity("Barack Obama", ((0, 2),), type="PERSON"), Entity("Honolulu", ((5, 6),), type="CITY"),
        "per:city_of_birth")
    # The object comes before the subject: the subject is still the head.
    assert second.tokens == ("In", "Paris", ",", "Anne", "Hidalgo", "became", "mayor", "in", "2014", ".")
    assert (second.head.span, second.tail.span) == ((3, 5), (1, 2))
    assert (second.head.name, second.tail.name) == ("Anne Hidalgo", "Paris")
    assert (second.head.type, second.tail.type) == ("PERSON", "CITY")
    assert second.marked_text() == "In [E2] Paris [/E2] , [E1] Anne Hidalgo [/E1] became mayor in 2014 ."
    assert third.relation == NA_LABEL == "no_relation"
    assert (third.head.span, third.tail.span, third.head.type, third.tail.type) == (
        (0, 2), (5, 7), "ORGANIZATION", "DATE")
    assert third.tail.name == "last year" and third.head.id is None
    assert read_relations(TACRED_SAMPLE) == [first, second, third]


# ---------------------------------------------------------------------------------------------------- FewRel

TINY_FEWREL = {
    "P26": [
        {"tokens": ["Alice", "Smith", "married", "Bob", "Jones", ";", "Alice", "Smith", "was", "his", "wife", "."],
         "h": ["alice smith", "Q1", [[0, 1], [6, 7]]], "t": ["bob jones", "Q2", [[3, 4]]]},
    ],
    "P40": [
        {"tokens": ["Carol", "is", "the", "daughter", "of", "Dave", "Brown", "."],
         "h": ["dave brown", "Q4", [[5, 6]]], "t": ["carol", "Q3", [[0]]]},
        # A no-break-space token, as FewRel has: it vanishes and the spans after it shift.
        {"tokens": ["Eve", "\u00a0", "is", "Frank", "'s", "son", "."],
         "h": ["frank", "Q6", [[3]]], "t": ["eve", "Q5", [[0]]]},
    ],
}


def test_fewrel_spans_ids_and_names(tmp_path: Path) -> None:
    path = write_json(tmp_path / "tiny.json", TINY_FEWREL)
    married, daughter, son = read_fewrel(path)
    assert married.id == "P26/0" and married.relation == "P26"
    assert married.head == Entity("alice smith", ((0, 2), (6, 8)), id="Q1", type=None)
    assert married.tail == Entity("bob jones", ((3, 5),), id="Q2")
    assert married.marked_text().startswith("[E1] Alice Smith [/E1] married [E2] Bob Jones [/E2] ; Alice Smith")
    # The tail comes before the head.
    assert daughter.id == "P40/0" and daughter.relation == "P40"
    assert (daughter.head, daughter.tail) == (Entity("dave brown", ((5, 7),), id="Q4"),
                                              Entity("carol", ((0, 1),), id="Q3"))
    assert daughter.marked_text() == "[E2] Carol [/E2] is the daughter of [E1] Dave Brown [/E1] ."
    assert son.id == "P40/1"
    assert son.tokens == ("Eve", "is", "Frank", "'s", "son", ".")
    assert (son.head.span, son.tail.span) == ((2, 3), (0, 1))
    assert all(round_trips_marked(i) for i in (married, daughter, son))
    assert read_relations(path) == [married, daughter, son]


def test_fewrel_compressed(tmp_path: Path) -> None:
    raw = json.dumps(TINY_FEWREL).encode("utf-8")
    plain = read_fewrel(write_json(tmp_path / "tiny.json", TINY_FEWREL))
    (tmp_path / "tiny.json.xz").write_bytes(lzma.compress(raw))
    (tmp_path / "tiny.json.gz").write_bytes(gzip.compress(raw))
    assert read_fewrel(tmp_path / "tiny.json.xz") == plain == read_relations(tmp_path / "tiny.json.gz")


def test_fewrel_non_contiguous_mention_names_file_and_instance(tmp_path: Path) -> None:
    data = json.loads(json.dumps(TINY_FEWREL))
    data["P40"][0]["h"][2] = [[5, 7]]
    path = write_json(tmp_path / "gappy.json", data)
    with pytest.raises(BelugaError, match=r"gappy\.json.*P40/0.*not contiguous") as err:
        read_fewrel(path)
    assert err.value.exit_code == 2


def test_fewrel_overlap_is_skipped_and_counted_never_silently(tmp_path: Path) -> None:
    data = json.loads(json.dumps(TINY_FEWREL))
    data["P40"][0]["t"][2] = [[5]]  # the tail inside the head "Dave Brown"
    path = write_json(tmp_path / "overlap.json", data)
    with pytest.raises(BelugaError, match=r"overlap\.json.*1 instance.*P40/0.*dropped=Counter"):
        read_fewrel(path)
    dropped: Counter[str] = Counter()
    assert [i.id for i in read_fewrel(path, dropped)] == ["P26/0", "P40/1"]
    assert dropped == Counter({OVERLAP: 1})


# ---------------------------------------------------------------------------------------------------- OpenNRE


def sample_instances(tmp_path: Path) -> list[RelationInstance]:
    """TACRED's (types, no Wikidata ids) and FewRel's (several mentions) instances, plus a masked head and
    non-ASCII text."""
    masked = RelationInstance("x/ü", ("Zürich", "lies", "on", "the", "Limmat", "."), Entity("", ((0, 0),)),
                              Entity("limmat", ((4, 5),), id="Q1", type="RIVER"), "P206")
    return [*read_tacred(TACRED_SAMPLE), *read_fewrel(write_json(tmp_path / "tiny.json", TINY_FEWREL)), masked]


def test_opennre_round_trip_is_exact_and_deterministic(tmp_path: Path) -> None:
    instances = sample_instances(tmp_path)
    data = write_opennre(instances)
    path = tmp_path / "out.jsonl"
    path.write_bytes(data)
    back = read_opennre(path)
    assert back == instances
    assert [(i.head, i.tail) for i in back] == [(i.head, i.tail) for i in instances]
    assert write_opennre(back) == data
    first = data.decode("utf-8").split("\n")[0]
    assert first == ('{"h":{"mentions":[[0,2]],"name":"Barack Obama","pos":[0,2],"type":"PERSON"},"id":"sample-1",'
                     '"relation":"per:city_of_birth","t":{"mentions":[[5,6]],"name":"Honolulu","pos":[5,6],'
                     '"type":"CITY"},"token":["Barack","Obama","was","born","in","Honolulu","."]}')
    assert "Zürich" in data.decode("utf-8")  # not \u-escaped
    assert read_relations(path) == instances


def test_opennre_plain_records_take_line_numbers_as_ids(tmp_path: Path) -> None:
    record = {"token": ["Dave", "is", "Carol", "'s", "father", "."], "h": {"name": "dave", "id": "Q4", "pos": [0, 1]},
              "t": {"name": "carol", "id": "Q3", "pos": [2, 3]}, "relation": "P40"}
    no_ids = {"token": ["A", "and", "B"], "h": {"name": "A", "pos": [0, 1]}, "t": {"name": "B", "pos": [2, 3]},
              "relation": NA_LABEL}
    path = tmp_path / "plain.jsonl"
    path.write_text(json.dumps(record) + "\n\n" + json.dumps(no_ids) + "\n", encoding="utf-8")
    first, second = read_opennre(path)
    assert (first.id, second.id) == ("1", "3")
    assert first.head == Entity("dave", ((0, 1),), id="Q4") and second.tail == Entity("B", ((2, 3),))
    # A single record is also valid JSON: still OpenNRE.
    single = write_lines(tmp_path / "single.jsonl", [record])
    assert read_relations(single) == [RelationInstance("1", first.tokens, first.head, first.tail, "P40")]


def test_write_opennre_refuses_tokens_the_marked_text_would_lose() -> None:
    blank = RelationInstance("b", ("A", "\u00a0", "B"), Entity("A", ((0, 1),)), Entity("B", ((2, 3),)), "r")
    with pytest.raises(BelugaError, match=r"instance b: token 1 .*retokenize"):
        write_opennre([blank])
    fixed = retokenize(blank)
    assert fixed.tokens == ("A", "B") and fixed.tail.span == (1, 2)
    assert write_opennre([fixed]).count(b"\n") == 1


# ---------------------------------------------------------------------------------------------------- errors

TACRED_RECORD = {"id": "r1", "relation": "org:founded_by", "token": ["Acme", "was", "founded", "by", "Ann", "."],
                 "subj_start": 0, "subj_end": 0, "obj_start": 4, "obj_end": 4}
OPENNRE_RECORD = {"token": ["Acme", "was", "founded", "by", "Ann", "."], "h": {"name": "Acme", "pos": [0, 1]},
                  "t": {"name": "Ann", "pos": [4, 5]}, "relation": "founded by"}


def _without(record: Mapping[str, object], key: str) -> dict[str, object]:
    return {k: v for k, v in record.items() if k != key}


MALFORMED: dict[str, tuple[str, str, str | None]] = {
    # name: (file name, content, what the message must say besides the file name; line for JSONL)
    "empty file": ("empty.json", "  \n", "empty file; expected FewRel JSON"),
    "not JSON": ("prose.json", "Acme was founded by Ann.\n", "not valid JSON"),
    "JSON of no format": ("other.json", json.dumps({"text": "Acme", "label": 1}), "none of the relation formats"),
    "FewRel missing key": ("fewrel.json", json.dumps({"P1": [_without(TINY_FEWREL["P40"][0], "t")]}),
                           "P1/0: missing key.* t"),
    "FewRel span outside": ("fewrel.json", json.dumps({"P1": [{**TINY_FEWREL["P40"][0],
                                                               "t": ["x", "Q9", [[30]]]}]}),
                            "P1/0: tail span \\[30, 31\\) is outside its 8 tokens"),
    "FewRel empty tokens": ("fewrel.json", json.dumps({"P1": [{"tokens": [], "h": ["a", "Q1", [[0]]],
                                                               "t": ["b", "Q2", [[1]]]}]}), "P1/0: no tokens"),
    "TACRED missing key": ("tacred.json", json.dumps([_without(TACRED_RECORD, "subj_end")]),
                           "record 0 \\(id 'r1'\\): missing key\\(s\\) subj_end"),
    "TACRED span outside": ("tacred.json", json.dumps([{**TACRED_RECORD, "obj_end": 6}]),
                            "obj_start..obj_end = 4..6 \\(inclusive\\) is not a span of its 6 tokens"),
    "OpenNRE missing key": ("nre.jsonl", "\n".join(json.dumps(r) for r in (
        OPENNRE_RECORD, _without(OPENNRE_RECORD, "relation"))), "line 2: missing key\\(s\\) relation"),
    "OpenNRE span outside": ("nre.jsonl", "\n".join(json.dumps(r) for r in (
        OPENNRE_RECORD, OPENNRE_RECORD, {**OPENNRE_RECORD, "t": {"name": "Ann", "pos": [4, 9]}})),
        "line 3: instance 3: tail span \\[4, 9\\) is outside its 6 tokens"),
    "OpenNRE empty tokens": ("nre.jsonl", json.dumps(OPENNRE_RECORD) + "\n" + json.dumps(
        {**OPENNRE_RECORD, "token": []}), "line 2: instance 2: no tokens"),
    "OpenNRE bad line": ("nre.jsonl", json.dumps(OPENNRE_RECORD) + "\n{oops\n", "line 2: not valid JSON"),
    "OpenNRE duplicate id": ("nre.jsonl", "\n".join(json.dumps({**OPENNRE_RECORD, "id": "a"}) for _ in range(2)),
                             "line 2: instance id 'a' occurs twice"),
    "OpenNRE mentions": ("nre.jsonl", json.dumps({**OPENNRE_RECORD, "h": {"name": "Acme", "pos": [0, 1],
                                                                          "mentions": [[4, 5]]}}),
                         "line 1: \"h.mentions\" must start with the marked mention"),
}


@pytest.mark.parametrize("case", list(MALFORMED))
def test_malformed_input_names_the_file(tmp_path: Path, case: str) -> None:
    name, text, expected = MALFORMED[case]
    path = tmp_path / name
    path.write_text(text, encoding="utf-8")
    with pytest.raises(BelugaError) as err:
        read_relations(path)
    message = str(err.value)
    assert message.startswith(str(path)), message
    assert expected is not None and re.search(expected, message), message
    assert err.value.exit_code == 2


def test_each_reader_rejects_the_other_formats(tmp_path: Path) -> None:
    fewrel = write_json(tmp_path / "f.json", TINY_FEWREL)
    with pytest.raises(BelugaError, match=r"f\.json: expected TACRED JSON"):
        read_tacred(fewrel)
    with pytest.raises(BelugaError, match=r"tacred-sample\.json: expected FewRel JSON"):
        read_fewrel(TACRED_SAMPLE)
    with pytest.raises(BelugaError, match=r"tacred-sample\.json, line 1: not valid JSON"):
        read_opennre(TACRED_SAMPLE)
    with pytest.raises(BelugaError, match=r"missing\.json: cannot read"):
        read_relations(tmp_path / "missing.json")


# ---------------------------------------------------------------------------------------------------- fewrel16


@cache
def shipped(part: str) -> tuple[RelationInstance, ...]:
    return tuple(load_fewrel16(part))


def provenance() -> str:
    return (FEWREL16 / "PROVENANCE.md").read_text(encoding="utf-8")


def test_fewrel16_relations_and_counts() -> None:
    names = fewrel16_relation_names()
    assert len(names) == 16 and names["P59"] == "constellation" and names["P26"] == "spouse"
    recorded = {m[1]: dict(zip(PARTS, map(int, m.groups()[2:]), strict=True))
                for m in re.finditer(r"^\| (P\d+) \| ([^|]+) \| (\d+) \| (\d+) \| (\d+) \|$", provenance(), re.M)}
    assert set(recorded) == set(names)
    for part in PARTS:
        counts = Counter(i.relation for i in shipped(part))
        assert set(counts) == set(names)
        for relation in names:
            expected = SHORT.get((part, relation), SIZES[part])
            assert counts[relation] == expected == recorded[relation][part], (part, relation)
    assert all(i.relation != NA_LABEL for part in PARTS for i in shipped(part))


def test_fewrel16_parts_are_disjoint_by_id_and_content() -> None:
    ids = [i.id for part in PARTS for i in shipped(part)]
    assert len(ids) == len(set(ids)) == 6_400 + 1_600 + 3_199
    contents = [(i.tokens, i.head.span, i.tail.span) for part in PARTS for i in shipped(part)]
    assert len(contents) == len(set(contents))
    for part in PARTS:  # sorted by relation id, then FewRel's index
        keys = [(i.id.split("/")[0], int(i.id.split("/")[1])) for i in shipped(part)]
        assert keys == sorted(keys) and all(i.id.startswith(i.relation + "/") for i in shipped(part))


def test_fewrel16_checksums_match_provenance() -> None:
    recorded = dict(re.findall(r"^\| (\S+) \|[^|]*\| [\d,]+ \| ([0-9a-f]{64}) \|$", provenance(), re.M))
    assert set(recorded) == set(SHIPPED) - {"PROVENANCE.md"}
    for name, digest in recorded.items():
        assert hashlib.sha256((FEWREL16 / name).read_bytes()).hexdigest() == digest, name


def test_fewrel16_marked_text_round_trips() -> None:
    for part in PARTS:
        for instance in shipped(part):
            assert round_trips_marked(instance), instance.id
            assert instance.head.id is not None and instance.tail.id is not None


def test_fewrel16_unknown_part_lists_the_parts() -> None:
    with pytest.raises(BelugaError, match="no fewrel16 part 'test'; the parts are train, val, pool"):
        load_fewrel16("test")


def test_fewrel16_rebuild_gives_the_shipped_bytes(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    source = require_shared("data", "fewrel")
    assert build_fewrel.main(["--shared", str(source.parents[1]), "--out", str(tmp_path)]) == 0
    assert "dropped (same tokens and marked spans as an earlier instance): 1: P921/363" in capsys.readouterr().out
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted(SHIPPED)
    for name in SHIPPED:
        assert (tmp_path / name).read_bytes() == (FEWREL16 / name).read_bytes(), name
