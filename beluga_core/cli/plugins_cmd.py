"""``beluga plugins list`` and ``beluga plugins show NAME``."""

from __future__ import annotations

import inspect
import sys
import warnings
from typing import Any

import typer
from rich.console import Console
from rich.markup import escape
from rich.table import Table

from beluga_core.contracts import registries  # noqa: F401 - declares the plugin kinds' registries
from beluga_core.contracts.methods import Method
from beluga_core.contracts.options import Options, option_rows
from beluga_core.core.errors import BelugaError, BelugaWarning
from beluga_core.core.registry import ALL, Registry
from beluga_core.execution.executors import base  # noqa: F401 - declares the executors' registry


def _load(registry: Registry[Any], name: str) -> tuple[Any, str]:
    """(the plugin class or None, "ok" / "ok: WARNING" / "broken: ERROR"): loaded and checked as a run would."""
    with warnings.catch_warnings(record=True) as said:
        warnings.simplefilter("always", BelugaWarning)
        try:
            cls = registry.get(name)
        except BelugaError as exc:
            return None, f"broken: {exc.message}"
    notes = [str(w.message) for w in said if issubclass(w.category, BelugaWarning)]
    return cls, "ok" + "".join(f" (warning: {n})" for n in notes)


def list_plugins() -> None:
    """Show every plugin kind with its plugins, the package each comes from, and whether it loads: each plugin is
    imported and checked as a run would, and a broken one shows its error."""
    console = Console()
    broken = 0
    for kind, reg in ALL.items():
        table = Table(title=f"{kind} ({reg.namespace})", title_justify="left", show_edge=False)
        table.add_column("name")
        table.add_column("from package")
        table.add_column("object")
        table.add_column("loads")
        for info in reg.entries():
            _, status = _load(reg, info.name)
            broken += status.startswith("broken")
            table.add_row(info.name, info.distribution, info.target,
                          f"[red]{escape(status)}[/]" if status.startswith("broken") else escape(status))
        console.print(table)
    if broken:
        console.print(f"[red]{broken} plugin(s) do not load[/]: a run that names one stops with the error shown")


def _options_of(cls: Any) -> type[Options] | None:
    declared = getattr(cls, "Options", None)
    return declared if inspect.isclass(declared) and issubclass(declared, Options) else None


def _summary(cls: Any) -> str:
    doc = inspect.getdoc(sys.modules.get(cls.__module__)) or inspect.getdoc(cls) or ""
    return " ".join(doc.split("\n\n")[0].split())


def show_plugin(name: str = typer.Argument(..., help="A plugin's name, as `beluga plugins list` shows it."),
                kind: str | None = typer.Option(None, "--kind", help=(
                    "The plugin kind (method, task, …) where the name is a plugin of several kinds."))) -> None:
    """Show one plugin: where it comes from, what it is, and its options with type, default, bounds and help (the
    options a config's table for it takes, checked when the config is read)."""
    console = Console()
    found = [(k, reg) for k, reg in ALL.items() if name in reg.names() and (kind is None or k == kind)]
    if not found:
        kinds = ", ".join(ALL)
        raise BelugaError(f"no {'plugin' if kind is None else kind + ' plugin'} named '{name}' is installed "
                          f"(`beluga plugins list` shows them; kinds: {kinds})")
    if len(found) > 1:
        raise BelugaError(f"'{name}' is a plugin of several kinds ({', '.join(k for k, _ in found)}): say which "
                          "with --kind")
    kind_name, reg = found[0]
    info = next(i for i in reg.entries() if i.name == name)
    cls, status = _load(reg, name)
    console.print(f"[bold]{escape(name)}[/] ({kind_name} plugin, {escape(info.target)}, from {info.distribution}): "
                  f"{escape(status)}", highlight=False, soft_wrap=True)
    if cls is None:
        raise typer.Exit(1)
    summary = _summary(cls)
    if summary:
        console.print(escape(summary), highlight=False, soft_wrap=True)
    options = _options_of(cls)
    if options is None:
        note = (" (a method written before Options: its defaults, unchecked: "
                f"{getattr(cls, 'defaults', {})})") if isinstance(cls, type) and issubclass(cls, Method) else ""
        console.print(f"options: none typed{escape(note)}", highlight=False, soft_wrap=True)
        return
    rows = option_rows(options)
    table = Table(title=f"options ({options.__name__})", title_justify="left", show_edge=False)
    for column in ("option", "type", "default", "bounds", "help"):
        table.add_column(column, overflow="fold")
    for row in rows:
        table.add_row(*(escape(row[c]) for c in ("name", "type", "default", "bounds", "help")))
    console.print(table if rows else "options: none")
    if isinstance(cls, type) and issubclass(cls, Method) and not cls.reuses:
        console.print("[method.NAME] also takes the training keys of the method's suite step (learning_rate, "
                      "batch_size, epochs, weight_decay, warmup_ratio, max_grad_norm).", highlight=False)
