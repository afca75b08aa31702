"""``beluga suite from-table FILE --text COL --label COL --groups COL[,COL…] --out SUITE``."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer
from rich.console import Console

from beluga_core.data.from_table import suite_from_table
from beluga_core.data.suite.suite_files import write_suite


def from_table_cmd(
    file: Annotated[Path, typer.Argument(
        help="A table: .csv, .tsv, .jsonl (optionally .gz / .xz / .bz2) or .parquet; or builtin:NAME, an "
             "example table shipped with beluga (builtin:sst-phenomena.csv).")],
    text: Annotated[str, typer.Option("--text", help="Column with the text.")],
    label: Annotated[str, typer.Option("--label", help="Column with the gold label (names or class ids).")],
    groups: Annotated[str, typer.Option("--groups", help="Group columns, coarsest first, comma-separated: the "
                                                         "suite's levels.")],
    out: Annotated[Path, typer.Option("--out", help="Suite file to write (.jsonl or .jsonl.gz).")],
    text_pair: Annotated[str | None, typer.Option(
        "--text-pair", help="Column with the second text (text pairs).")] = None,
    scoring_level: Annotated[str | None, typer.Option(
        "--scoring-level",
        help="The level whose groups' pass rates make s_T (default: the last group column that is not a "
             "--crossing one).")] = None,
    name: Annotated[str | None, typer.Option("--name", help="Suite name (default: the file's name).")] = None,
    labels: Annotated[str | None, typer.Option(
        "--labels", help="The label space in class-id order, comma-separated (default: the labels found, "
                         "sorted).")] = None,
    id_column: Annotated[str | None, typer.Option("--id", help="Column with case ids (default: NAME/row).")] = None,
    crossing: Annotated[str | None, typer.Option(
        "--crossing", help="Group columns that cut across the others instead of nesting in them (a target group "
                           "across functionalities), comma-separated; listed in --groups or only here. A row with "
                           "no value there keeps its case, in no group of that level: scored in every scenario "
                           "but that level's held-out one. Not the scoring level.")] = None,
) -> None:
    """Turn a labelled, grouped table into a suite of MFT cases for the `classification` task.

    Every usable row becomes one case expecting its label; rows without text, label or group are dropped and
    counted by reason — except at a --crossing column, where a row without a value keeps its case. Run it with
    `[[tasks]] name = "classification"`, `suite = "SUITE"`.
    """
    console = Console()
    built = suite_from_table(file, text=text, label=label, groups=[g.strip() for g in groups.split(",") if g.strip()],
                             text_pair=text_pair, scoring_level=scoring_level, name=name,
                             labels=[x.strip() for x in labels.split(",")] if labels else None, id_column=id_column,
                             crossing=[c.strip() for c in crossing.split(",") if c.strip()] if crossing else ())
    path = write_suite(out, built.header, built.cases)
    h = built.header
    counts = {lab: 0 for lab in h.label_space or []}
    for case in built.cases:
        assert isinstance(case.label, int)  # from-table cases carry a class id
        counts[(h.label_space or [])[case.label]] += 1
    console.print(f"{len(built.cases):,} case(s) from {built.rows:,} row(s) of {file} → {path}")
    console.print(f"label space: {', '.join(f'{k} ({v})' for k, v in counts.items())}")
    for level in h.levels:
        without = built.without[level]
        console.print(f"level {level}: {len({c.groups[level] for c in built.cases if level in c.groups})} group(s)"
                      + (" (scoring level)" if level == h.scoring_level else "")
                      + (f" (crossing; {without:,} case(s) with no value kept, in none)" if level in h.crossing_levels
                         else ""))
    if built.dropped:
        console.print(f"[yellow]dropped {sum(built.dropped.values())} row(s)[/]: "
                      + ", ".join(f"{n} {reason}" for reason, n in sorted(built.dropped.items())))
