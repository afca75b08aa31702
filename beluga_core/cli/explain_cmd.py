"""``beluga explain SOURCE --case ID | --group G [--model SEL …]``: which words a model relied on."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import typer
from rich.console import Console
from rich.markup import escape


def dotted_options(values: list[str]) -> dict[str, dict[str, Any]]:
    """``NAME.KEY=VALUE`` → {name: {key: value}} (values read as JSON where they parse, else text): a plugin's
    options on the command line (``beluga explain``'s estimators, ``beluga rank``'s signals)."""
    from beluga_core.core.errors import BelugaError

    out: dict[str, dict[str, Any]] = {}
    for text in values:
        key, sep, raw = text.partition("=")
        method, dot, name = key.partition(".")
        if not sep or not dot or not method or not name:
            raise BelugaError(f"--option {text!r}: expected NAME.KEY=VALUE, e.g. ig.steps=50 or window.regex=ran|saw")
        try:
            value: Any = json.loads(raw)
        except json.JSONDecodeError:
            value = raw
        out.setdefault(method, {})[name] = value
    return out


def explain(
    source: Path = typer.Argument(..., help="A result store (DuckDB file) or a saved model folder (a Hugging Face "
                                            "checkpoint, e.g. from `beluga export`)."),
    model: list[str] = typer.Option([], "--model", help=(
        "Store only: the model(s) to explain, side by side (CONFIG/METHOD[@SCENARIO][#SEED] or an id; "
        "repeatable). Default: the IID baseline, iid/vanilla@standard.")),
    case: list[str] = typer.Option([], "--case", help="Case id (repeatable)."),
    group: str | None = typer.Option(None, "--group", help="Every case of this group (any level, or a test type) "
                                                           "the model was scored on."),
    method: list[str] = typer.Option([], "--method", help="Attribution method(s) (default: ig; a stored fold's: "
                                                          "every method the run stored)."),
    option: list[str] = typer.Option([], "--option", help="METHOD.KEY=VALUE, e.g. ig.steps=50, lime.samples=1000, "
                                                          "ig.baseline=zero, shap.normalize=l1."),
    max_inputs: int = typer.Option(20, "--max-inputs", min=1, help="At most this many inputs (per method)."),
    all_inputs: bool = typer.Option(False, "--all-inputs", help="Every input of a case, not only the first."),
    stored: bool = typer.Option(False, "--stored", help="Show what the run stored even where weights were kept."),
    out: Path | None = typer.Option(None, "--out", help="Folder for explain.html (words shaded, models side by "
                                                        "side)."),
    task: str = typer.Option("classification", "--task", help="Model folder only: its task plugin."),
    suite: str | None = typer.Option(None, "--suite", help="Model folder only: the suite file (or builtin:NAME) "
                                                           "the cases come from."),
    max_length: int = typer.Option(128, "--max-length", help="Model folder only: truncation length in tokens."),
) -> None:
    """Attribute a model's prediction on chosen cases to their words, print them shaded in the terminal and, with
    --out, write an HTML page (two models side by side when two --model are given).

    A model whose weights were kept (a store's IID models; seen and update models with `[store] keep_weights`; a
    saved folder) is attributed now, with the estimators' full budgets (ig: 300 steps; lime: 5,000 samples; shap:
    2d + 2,048) unless --option says otherwise. A held-out fold's weights are not kept: its attributions are
    those its run stored (`[attributions]`), and a fold without any says so."""
    from beluga_core.core.errors import BelugaError
    from beluga_core.stored_models.explain import explain_path, explain_store, print_terminal, render_html

    if not case and group is None:
        raise BelugaError("name the cases to explain: --case ID (repeatable) or --group GROUP")
    options = dotted_options(option)
    if source.is_dir():
        if suite is None:
            raise BelugaError("a model folder needs --suite (the suite file or builtin:NAME its cases come from)",
                              source=source)
        explained = explain_path(source, task, suite, case_ids=case, group=group, methods=method, options=options,
                                 max_inputs=max_inputs, max_length=max_length, all_inputs=all_inputs)
    else:
        from beluga_core.store.opened import open_handle

        with open_handle(source) as opened:
            explained = explain_store(opened, model or ["iid/vanilla@standard"], case_ids=case, group=group,
                                      methods=method, options=options, max_inputs=max_inputs, stored_only=stored,
                                      all_inputs=all_inputs)
    console = Console()
    print_terminal(explained, console)
    if out is not None:
        out.mkdir(parents=True, exist_ok=True)
        page = out / "explain.html"
        page.write_text(render_html(explained, f"beluga explain: {source.name}"), encoding="utf-8")
        console.print(f"wrote {escape(str(page))}", highlight=False)
