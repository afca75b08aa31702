"""The i.i.d. dataset of the reading task: SQuAD v1.1-style (context, question, answers) examples.

Accepted sources (as for classification, docs/method.md, "Splits": D_val and D_test are the seeded halves of the
official dev set, whose answers the public release includes):

- ``builtin:squad-fixture``: the shipped offline fixture (NOT SQuAD: see ``data/builtin/squad_fixture/PROVENANCE.md``).
- an existing local directory holding a train file and a dev file in SQuAD JSON format: ``train.json`` or
  ``train-v1.1.json``, and ``dev.json``, ``dev-v1.1.json`` or ``validation.json`` (each optionally ``.gz``,
  ``.xz`` or ``.bz2``) — the files as SQuAD distributes them.
- a Hugging Face datasets name, spelled as for classification (``squad``, ``NAME/CONFIG``,
  ``OWNER/NAME/CONFIG``): its ``train`` and ``validation`` splits with ``context``, ``question`` and
  ``answers = {text: [...], answer_start: [...]}`` columns.

Inputs are ``(context, question)`` pairs, the order of the CheckList SQuAD suite's inputs.
"""

from __future__ import annotations

import json
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from beluga_core.core.errors import BelugaError
from beluga_core.data.iid.builtin import BUILTIN_PREFIX, builtin_dataset
from beluga_core.data.iid.examples import IIDData
from beluga_core.data.iid.hub import HF_NAME, load_hub_dataset, looks_like_path
from beluga_core.data.iid.tables import COMPRESSIONS, decoded
from beluga_core.data.splits import halves

TRAIN_STEMS = ("train", "train-v1.1")
DEV_STEMS = ("dev", "dev-v1.1", "validation")
LAYOUT_HINT = ("a reading dataset directory holds a train file (train.json or train-v1.1.json) and a dev file "
               "(dev.json, dev-v1.1.json or validation.json) in SQuAD JSON format, each optionally .gz, .xz "
               "or .bz2; its dev file is halved (seeded) into D_val and D_test")


@dataclass(frozen=True)
class SquadExample:
    """One question: ``inputs`` = (context, question); every gold answer with its character offset."""

    inputs: tuple[str, str]
    answers: tuple[str, ...]
    answer_starts: tuple[int, ...]
    qid: str = ""

    @property
    def label(self) -> str:
        """The first gold answer (what the example trains on, as SQuAD training sets have one answer)."""
        return self.answers[0]

    def span(self) -> tuple[int, int]:
        """Character span [start, end) of the first gold answer in the context."""
        return self.answer_starts[0], self.answer_starts[0] + len(self.answers[0])


def load_squad_iid(source: str, *, eval_seed: int = 42) -> IIDData:
    """D_train and the seeded halves D_val / D_test of the dev set (see the module docstring)."""
    if source.startswith(BUILTIN_PREFIX):
        train, dev = _load_directory(builtin_dataset(source, "reading").path)
    else:
        path = Path(source).expanduser()
        if path.is_dir():
            train, dev = _load_directory(path)
        elif path.exists():
            raise BelugaError(f"is a single file, not a directory; {LAYOUT_HINT}", source=path)
        elif looks_like_path(source, (".json", *(f".json{c}" for c in COMPRESSIONS))):
            raise BelugaError(f"no such directory; {LAYOUT_HINT}", source=path)
        elif HF_NAME.fullmatch(source):
            train, dev = _load_hf(source)
        else:
            raise BelugaError(f"'{source}' is neither builtin:NAME, an existing directory, nor a Hugging Face "
                              "dataset name like squad")
    if len(dev) < 2:
        raise BelugaError("the dev split needs at least 2 questions to be halved into D_val and D_test",
                          source=source)
    val_idx, test_idx = halves(len(dev), eval_seed)
    return IIDData(train=train, val=[dev[i] for i in val_idx], test=[dev[i] for i in test_idx],
                   source=source, label_names=[])


# --- SQuAD JSON files ------------------------------------------------------------------------------------


def _find(directory: Path, stems: Sequence[str], what: str) -> tuple[Path, str]:
    found = []
    for p in sorted(directory.iterdir()):
        for comp in COMPRESSIONS:
            for stem in stems:
                if p.is_file() and p.name == f"{stem}.json{comp}":
                    found.append((p, comp))
    if not found:
        names = ", ".join(sorted(p.name for p in directory.iterdir())[:20]) or "nothing"
        raise BelugaError(f"no {what} file among: {names}; {LAYOUT_HINT}", source=directory)
    if len(found) > 1:
        raise BelugaError(f"more than one {what} file ({', '.join(f[0].name for f in found)}); keep one",
                          source=directory)
    return found[0]


def _load_directory(directory: Path) -> tuple[list[SquadExample], list[SquadExample]]:
    if not directory.is_dir():
        raise BelugaError(f"no such directory; {LAYOUT_HINT}", source=directory)
    out = []
    for stems, what in ((TRAIN_STEMS, "train"), (DEV_STEMS, "dev")):
        path, comp = _find(directory, stems, what)
        out.append(read_squad_json(path, decoded(path, comp)))
    return out[0], out[1]


def read_squad_json(path: Path | str, text: str) -> list[SquadExample]:
    """The questions of a SQuAD JSON document (``{"data": [{"paragraphs": [{"context", "qas"}]}]}``)."""
    try:
        doc = json.loads(text)
    except json.JSONDecodeError as exc:
        raise BelugaError(f"not valid JSON ({exc.msg}, line {exc.lineno})", source=path) from exc
    if not isinstance(doc, dict) or not isinstance(doc.get("data"), list):
        raise BelugaError('not SQuAD JSON: expected an object with a "data" list of articles', source=path)
    examples = [_example(qa, context, where, path) for context, qa, where in _questions(doc["data"], path)]
    if not examples:
        raise BelugaError("no questions", source=path)
    return examples


def _questions(articles: list[Any], path: Path | str) -> Iterator[tuple[str, dict[str, Any], str]]:
    for a, article in enumerate(articles):
        paragraphs = article.get("paragraphs") if isinstance(article, dict) else None
        if not isinstance(paragraphs, list):
            raise BelugaError("expected an object with a 'paragraphs' list", source=path, field=f"data[{a}]")
        for p, paragraph in enumerate(paragraphs):
            where = f"data[{a}].paragraphs[{p}]"
            context = paragraph.get("context") if isinstance(paragraph, dict) else None
            qas = paragraph.get("qas") if isinstance(paragraph, dict) else None
            if not isinstance(context, str) or not isinstance(qas, list):
                raise BelugaError("expected 'context' (a string) and 'qas' (a list)", source=path, field=where)
            for q, qa in enumerate(qas):
                yield context, qa, f"{where}.qas[{q}]"


def _example(qa: Any, context: str, where: str, path: Path | str) -> SquadExample:
    if not isinstance(qa, dict) or not isinstance(qa.get("question"), str):
        raise BelugaError("expected an object with a 'question' string", source=path, field=where)
    if qa.get("is_impossible"):
        raise BelugaError("unanswerable question (SQuAD 2.0); the reading task takes SQuAD v1.1, where every "
                          "question has an answer", source=path, field=where)
    answers = qa.get("answers")
    if not isinstance(answers, list) or not answers:
        raise BelugaError("expected a non-empty 'answers' list", source=path, field=where)
    texts, starts = [], []
    for k, ans in enumerate(answers):
        text, start = (ans.get("text"), ans.get("answer_start")) if isinstance(ans, dict) else (None, None)
        if not isinstance(text, str) or isinstance(start, bool) or not isinstance(start, int):
            raise BelugaError("expected {'text': str, 'answer_start': int}", source=path,
                              field=f"{where}.answers[{k}]")
        _check_span(context, text, start, path, f"{where}.answers[{k}]")
        texts.append(text)
        starts.append(start)
    return SquadExample((context, qa["question"]), tuple(texts), tuple(starts), str(qa.get("id", "")))


def _check_span(context: str, text: str, start: int, path: Path | str, field: str) -> None:
    # The offset is what training uses; an answer beyond the context would silently train on nothing.
    if start < 0 or start + len(text) > len(context):
        raise BelugaError(f"answer_start {start} with a {len(text)}-character answer lies outside the "
                          f"{len(context)}-character context", source=path, field=field)


# --- Hugging Face ---------------------------------------------------------------------------------------


def _load_hf(source: str) -> tuple[list[SquadExample], list[SquadExample]]:
    loaded = load_hub_dataset(source, f"Use a local directory instead ({LAYOUT_HINT}), or builtin:squad-fixture")
    train, dev = (_from_hf_split(loaded, split, source) for split in ("train", "validation"))
    return train, dev


def _from_hf_split(loaded: Any, split: str, source: str) -> list[SquadExample]:
    if split not in loaded:
        raise BelugaError(f"dataset '{source}' has no '{split}' split; splits: {', '.join(loaded)}")
    ds = loaded[split]
    where = f"{source} split '{split}'"
    missing = [c for c in ("context", "question", "answers") if c not in ds.column_names]
    if missing:
        raise BelugaError(f"missing column(s) {missing}; columns found: {ds.column_names}", source=where)
    data = ds.select_columns(["context", "question", "answers"] + (["id"] if "id" in ds.column_names else []))
    out = []
    for i, row in enumerate(data):
        answers = row["answers"] or {}
        texts, starts = list(answers.get("text") or []), list(answers.get("answer_start") or [])
        if not texts or len(texts) != len(starts):
            raise BelugaError(f"row index {i}: expected answers with as many texts as answer_starts, at least "
                              "one (SQuAD v1.1)", source=where, field="answers")
        for k, (text, start) in enumerate(zip(texts, starts, strict=True)):
            _check_span(row["context"], text, int(start), where, f"row index {i} answers[{k}]")
        out.append(SquadExample((row["context"], row["question"]), tuple(texts), tuple(int(s) for s in starts),
                                str(row.get("id", i))))
    return out
