"""The i.i.d. datasets shipped with beluga (``builtin:NAME``), each a folder of ``data/builtin/`` with its
PROVENANCE.md. One folder may serve several names: SST's sentences are ``sst3`` (negative / neutral /
positive) and ``sst5`` (SST's five classes), from different label columns of the same files."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from beluga_core.core.errors import BelugaError
from beluga_core.data import BUILTIN_DATA

BUILTIN_PREFIX = "builtin:"


@dataclass(frozen=True)
class BuiltinDataset:
    folder: str
    kind: str  # "classification" or "reading"
    text_fields: tuple[str, ...] | None = None  # None: the task's own
    label_field: str | None = None  # None: the task's own
    label_names: tuple[str, ...] | None = None  # None: the folder's label_names.txt
    note: str = ""

    @property
    def path(self) -> Path:
        return BUILTIN_DATA / self.folder  # an absolute folder (a test's) replaces the root


BUILTIN_IID: dict[str, BuiltinDataset] = {
    "sst2": BuiltinDataset("sst2", "classification", note="GLUE SST-2 (binary)"),
    "sst3": BuiltinDataset("sst", "classification", ("sentence",), "label3",
                           ("negative", "neutral", "positive"), "SST sentences, 3 classes"),
    "sst5": BuiltinDataset("sst", "classification", ("sentence",), "label5",
                           ("very negative", "negative", "neutral", "positive", "very positive"),
                           "SST sentences, 5 classes"),
    "qqp-fixture": BuiltinDataset("qqp_fixture", "classification", note="offline fixture, NOT QQP"),
    "squad-fixture": BuiltinDataset("squad_fixture", "reading", note="offline fixture, NOT SQuAD"),
}


def builtin_dataset(source: str, kind: str) -> BuiltinDataset:
    """The shipped dataset ``builtin:NAME`` of ``kind``; an unknown name lists the shipped ones."""
    name = source.removeprefix(BUILTIN_PREFIX)
    found = BUILTIN_IID.get(name)
    if found is None or found.kind != kind:
        shipped = ", ".join(f"builtin:{n}" for n, d in sorted(BUILTIN_IID.items()) if d.kind == kind)
        raise BelugaError(f"no built-in {kind} dataset '{name}'; shipped: {shipped}")
    return found
