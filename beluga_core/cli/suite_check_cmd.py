"""``beluga suite check``: judge a model's predictions on a suite, case by case, and report pass rates."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer
from rich.console import Console
from rich.table import Table

from beluga_core.core.constants import OUTCOME_NAMES
from beluga_core.orchestration.suite_check import CheckResult, check_suite


def print_report(result: CheckResult, console: Console) -> None:
    suite = result.suite
    title = (f"{suite.header.name}: pass rate per {result.level} "
             f"({'as released' if result.as_released else f'{result.n_corrected} corrected case(s)'})")
    table = Table(title=title, title_justify="left", show_edge=False)
    table.add_column(result.level)
    for name in ("cases", "pass", "fail", "skip"):
        table.add_column(name, justify="right")
    table.add_column("pass rate", justify="right")
    for r in result.rates:
        rate = f"{r.rate:.1%}" if r.rate is not None else "[dim]no evaluable case[/]"
        table.add_row(r.group, str(r.cases), str(r.passes), str(r.fails), str(r.skips), rate)
    console.print(table)
    counts = {name: int((result.outcomes == code).sum()) for code, name in OUTCOME_NAMES.items()}
    console.print(f"cases: {len(result.outcomes)} ({counts['pass']} pass, {counts['fail']} fail, "
                  f"{counts['skip']} skip)")
    judged = [r for r in result.rates if r.rate is not None]
    empty = [r.group for r in result.rates if r.rate is None]
    if result.s_t is None:
        console.print("s_T: undefined (no group has an evaluable case)")
    else:
        console.print(f"s_T (unweighted mean over {len(judged)} {result.level} groups): {result.s_t:.4f}")
    if empty:
        console.print(f"left out of s_T (no evaluable case): {', '.join(empty)}")
    console.print(f"outcomes written to {result.out}")
    if result.model_id:
        console.print(f"stored as model {result.model_id}")


def check_cmd(
    file: Annotated[str, typer.Argument(help="Suite file (.jsonl / .jsonl.gz) or builtin:NAME.")],
    predictions: Annotated[Path, typer.Option(
        "--predictions", help='PRED file: JSON Lines, per case {"id": case id, "preds": one prediction per input}.')],
    out: Annotated[Path, typer.Option("--out", help="Where to write per-case outcomes (JSON Lines).")],
    store: Annotated[Path | None, typer.Option("--store", help="Also record the evaluation in this store.")] = None,
    as_released: Annotated[bool, typer.Option(
        "--as-released", help="Ignore the suite's documented corrections (reproduce CheckList).")] = False,
    model_name: Annotated[str | None, typer.Option(
        "--model-name", help="Name of the model in the store (default: the PRED file's name).")] = None,
) -> None:
    """Check predictions against a suite: per-case outcomes, pass rate per scoring group, and s_T."""
    result = check_suite(file, predictions, out, store=store, as_released=as_released, model_name=model_name)
    print_report(result, Console())
