"""``beluga suite import-checklist``: convert a CheckList suite (tarball or pickle) into a beluga suite."""

from __future__ import annotations

from collections import defaultdict
from pathlib import Path

import typer
from rich.console import Console
from rich.table import Table

from beluga_core.data.checklist import (
    ImportResult,
    convert_suite,
    load_expectations_file,
    read_checklist_file,
)
from beluga_core.data.suite.suite_files import write_suite


def import_checklist_cmd(
    source: Path = typer.Argument(..., show_default=False,
                                  help="CheckList suite: a release tarball (e.g. sentiment_suite.tar.gz) "
                                       "or the .pkl inside it."),
    out: Path = typer.Option(..., "--out", "-o", help="Suite file to write (.jsonl.gz or .jsonl).",
                             show_default=False),
    name: str | None = typer.Option(None, "--name", help="Suite name (default: from the file name, "
                                                         "e.g. 'sentiment')."),
    expectations: Path | None = typer.Option(
        None, "--expectations",
        help="JSON mapping test name → expectation dict, for tests that are not in beluga's table of the "
             "CheckList release suites (it also overrides that table)."),
) -> None:
    """Import a CheckList TestSuite without running any of its pickled code."""
    console = Console()
    specs = load_expectations_file(expectations) if expectations is not None else None
    with console.status(f"reading {source.name} (restricted unpickler: no pickled code runs)"):
        loaded = read_checklist_file(source)
    with console.status("converting tests"):
        result = convert_suite(loaded, name=name, expectations=specs)
    with console.status(f"writing {out}"):
        write_suite(out, result.header, result.cases)
    console.print(summary_table(result))
    corrected = sum(1 for c in result.cases if c.correction is not None)
    console.print(f"wrote [bold]{out}[/]: suite '{result.header.name}', {len(result.tests)} tests, "
                  f"{len(result.cases):,} cases, {sum(len(c.inputs) for c in result.cases):,} inputs"
                  + (f"; {corrected:,} cases carry a documented correction" if corrected else ""),
                  highlight=False)


def summary_table(result: ImportResult) -> Table:
    """Tests, cases and inputs per test type, with the loss each type trains with."""
    rows: dict[str, list[int]] = defaultdict(lambda: [0, 0, 0])
    losses: dict[str, set[str]] = defaultdict(set)
    for test in result.tests:
        rows[test.test_type][0] += 1
    for case in result.cases:
        rows[case.test_type][1] += 1
        rows[case.test_type][2] += len(case.inputs)
        losses[case.test_type].add(case.loss)
    header = result.header
    table = Table(title=f"{header.name} ({header.task or 'no task'}, {header.input_kind})",
                  title_justify="left", show_edge=False)
    for column in ("test type", "tests", "cases", "inputs", "loss"):
        table.add_column(column, justify="left" if column in ("test type", "loss") else "right")
    for test_type, (n_tests, n_cases, n_inputs) in rows.items():
        table.add_row(test_type, f"{n_tests:,}", f"{n_cases:,}", f"{n_inputs:,}",
                      ", ".join(sorted(losses[test_type])))
    totals = [sum(r[i] for r in rows.values()) for i in range(3)]
    table.add_row("all", *(f"{n:,}" for n in totals), "", style="bold")
    return table
