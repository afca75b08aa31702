"""A suite from any labelled grouped table (``beluga suite from-table``): one MFT case per usable row.

The label space comes from the data (or ``labels``, which fixes its order); the grouping levels are the
group columns, coarsest first; every case expects its row's label (``eq`` on the label) and trains with the
``mft`` loss. Rows that cannot make a case are dropped and counted by reason, never silently. Crossing columns
(``crossing``) cut across the others: a row with no value there keeps its case, in no group of that level.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

from beluga_core.core.constants import TEST_TYPE_LEVEL
from beluga_core.core.errors import BelugaError
from beluga_core.core.registry import unknown_name_message
from beluga_core.data import BUILTIN_DATA
from beluga_core.data.iid.tables import read_table
from beluga_core.data.suite.suite_schema import RESERVED_LEVEL_NAMES, Case, Expectation, SuiteHeader


@dataclass
class TableSuite:
    header: SuiteHeader
    cases: list[Case]
    dropped: Counter[str] = field(default_factory=Counter)
    rows: int = 0
    without: Counter[str] = field(default_factory=Counter)  # cases with no group at a crossing level, per level


def _sort_key(label: str) -> tuple[int, float | str]:
    try:
        return 0, float(label)
    except ValueError:
        return 1, label


BUILTIN_TABLES = BUILTIN_DATA / "tables"


def resolve_table(path: Path | str) -> Path:
    """A table path, or ``builtin:NAME`` for an example table shipped with beluga."""
    text = str(path)
    if not text.startswith("builtin:"):
        return Path(path)
    name = text.removeprefix("builtin:")
    shipped = sorted(p.name for p in BUILTIN_TABLES.iterdir() if p.suffix in (".csv", ".tsv", ".jsonl"))
    if name not in shipped:
        raise BelugaError(unknown_name_message("shipped table", name, shipped))
    return BUILTIN_TABLES / name


def suite_from_table(path: Path, *, text: str, label: str, groups: Sequence[str], text_pair: str | None = None,
                     scoring_level: str | None = None, name: str | None = None, labels: Sequence[str] | None = None,
                     id_column: str | None = None, task: str = "classification",
                     crossing: Sequence[str] = ()) -> TableSuite:
    # A crossing column is a level whether or not --groups lists it; it goes after the nested ones.
    groups = [*groups, *(c for c in crossing if c not in groups)]
    if not groups:
        raise BelugaError("give at least one group column (--groups)", field="groups")
    if len(set(groups)) != len(groups):
        raise BelugaError(f"group columns repeat: {list(groups)}", field="groups")
    reserved = sorted(set(groups) & (RESERVED_LEVEL_NAMES | {TEST_TYPE_LEVEL}))
    if reserved:
        raise BelugaError(f"group column(s) {reserved} would name levels that are reserved (standard, seen, "
                          "test_type); rename them in the table", field="groups")
    if len(set(crossing)) != len(crossing):
        raise BelugaError(f"crossing columns repeat: {list(crossing)}", field="crossing")
    nested = [g for g in groups if g not in crossing]
    level = scoring_level or (nested[-1] if nested else groups[-1])
    if level not in groups:
        raise BelugaError(f"scoring level '{level}' is not one of the group columns {list(groups)}",
                          field="scoring-level")
    if level in crossing:
        raise BelugaError(f"the scoring level '{level}' cannot be a crossing column: every case needs a scoring "
                          "group (pass rates and s_T are per scoring group); name another with --scoring-level, or "
                          "leave it out of --crossing", field="crossing" if scoring_level else "scoring-level")
    columns = [text, *([text_pair] if text_pair else []), label, *groups, *([id_column] if id_column else [])]
    if len(set(columns)) != len(columns):
        raise BelugaError(f"a column is used twice: {columns}")
    path = resolve_table(path)
    rows = read_table(path, columns)
    n_text = 2 if text_pair else 1
    dropped: Counter[str] = Counter()
    kept: list[tuple[int, tuple[str, ...], str, dict[str, str], str | None]] = []
    without: Counter[str] = Counter()  # rows kept with no value at a crossing column, per column
    for i, values in enumerate(rows.values):
        texts = [str(v).strip() if v is not None else "" for v in values[:n_text]]
        raw_label = values[n_text]
        group_values = values[n_text + 1:n_text + 1 + len(groups)]
        if any(not t for t in texts):
            dropped["empty text"] += 1
            continue
        if raw_label is None or str(raw_label).strip() == "":
            dropped["no label"] += 1
            continue
        group_map = {g: str(v).strip() for g, v in zip(groups, group_values, strict=True)
                     if v is not None and str(v).strip() != ""}
        if any(g not in group_map for g in nested):
            dropped["empty group"] += 1
            continue
        without.update(g for g in crossing if g not in group_map)
        case_id = str(values[-1]).strip() if id_column else None
        kept.append((i, tuple(texts), str(raw_label).strip(), group_map, case_id))
    if not kept:
        raise BelugaError(f"no usable row (dropped: {dict(dropped) or 'none; the table is empty'})", source=path)
    found = {lab for _, _, lab, _, _ in kept}
    if labels:
        space = [str(x) for x in labels]
        unknown = sorted(found - set(space))
        if unknown:
            raise BelugaError(f"labels {unknown[:10]} of column '{label}' are not in --labels {space}", source=path)
    else:
        space = sorted(found, key=_sort_key)
    if len(space) < 2:
        raise BelugaError(f"column '{label}' has a single label {space}; a classifier needs at least two",
                          source=path)
    index = {lab: k for k, lab in enumerate(space)}
    stem = name or path.name.split(".")[0]
    cases: list[Case] = []
    seen_ids: dict[str, int] = {}
    for i, row_texts, lab, group_map, case_id in kept:
        cid = case_id or f"{stem}/{rows.numbers[i]}"
        if cid in seen_ids:
            raise rows.error(i, f"duplicate id {cid!r} (first at {seen_ids[cid]})", id_column)
        seen_ids[cid] = rows.numbers[i]
        inputs = [row_texts[0] if n_text == 1 else (row_texts[0], row_texts[1])]
        cases.append(Case(id=cid, groups=group_map, test_type="MFT", loss="mft", inputs=inputs, label=index[lab],
                          expectation=Expectation(kind="eq", target="label"),
                          meta={"source_row": rows.numbers[i]}))
    header = SuiteHeader(name=stem, description=f"Built by beluga suite from-table from {path.name}.",
                         levels=list(groups), scoring_level=level, task=task,
                         crossing_levels=[g for g in groups if g in crossing],
                         input_kind="text_pair" if text_pair else "text", label_space=space, test_types=["MFT"],
                         losses=["mft"], source={"table": path.name, "text": text, "text_pair": text_pair,
                                                 "label": label, "groups": list(groups), "rows": len(rows.values),
                                                 "dropped": dict(dropped),
                                                 **({"crossing": list(crossing), "without_group": dict(without)}
                                                    if crossing else {})})
    return TableSuite(header, cases, dropped, len(rows.values), without)
