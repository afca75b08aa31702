"""``beluga plugins list`` and ``beluga plugins show NAME``."""

from __future__ import annotations

import importlib
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


def _is_kind(registry: Registry[Any], reference: str) -> bool:
    """Whether ``module:Class`` (a plugin under development, as a config may name it) is of ``registry``'s kind."""
    module, _, attr = reference.partition(":")
    try:
        obj: Any = importlib.import_module(module)
        for part in attr.split("."):
            obj = getattr(obj, part)
    except Exception:   # not importable: no kind claims it (the error says no plugin of that name)
        return False
    return inspect.isclass(obj) and issubclass(obj, registry.base)


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


# Where a config or command line sets a plugin's options, per kind.
_WHERE = {
    "task": "in a [[tasks]] entry's options = { … }",
    "attribution": "in [attributions.options.NAME]",
    "generator": "with beluga suite generate NAME --option NAME.KEY=VALUE",
    "ranking signal": "in a zoo file's [signal_options.NAME], or with beluga rank --option NAME.KEY=VALUE",
    "executor": "in [executor.options] (checked when beluga run starts)",
}


def _options_of(cls: Any) -> type[Options] | None:
    declared = getattr(cls, "Options", None)
    return declared if inspect.isclass(declared) and issubclass(declared, Options) else None


def _summary(cls: Any) -> str:
    # The class's own docstring (not one it inherits from its kind's base), else its module's.
    own = cls.__dict__.get("__doc__") if isinstance(cls, type) else None
    doc = inspect.cleandoc(own) if own else inspect.getdoc(sys.modules.get(cls.__module__)) or ""
    return " ".join(doc.split("\n\n")[0].split())


def show_plugin(name: str = typer.Argument(..., help="A plugin's name, as `beluga plugins list` shows it."),
                kind: str | None = typer.Option(None, "--kind", help=(
                    "The plugin kind (method, task, …) where the name is a plugin of several kinds."))) -> None:
    """Show one plugin: where it comes from, what it is, and its options with type, default, bounds and help (the
    options a config's table for it takes, checked when the config is read)."""
    console = Console()
    found = [(k, reg) for k, reg in ALL.items() if (kind is None or k == kind)
             and (name in reg.names() or (":" in name and _is_kind(reg, name)))]
    if not found:
        kinds = ", ".join(ALL)
        raise BelugaError(f"no {'plugin' if kind is None else kind + ' plugin'} named '{name}' is installed "
                          f"(`beluga plugins list` shows them; kinds: {kinds})")
    if len(found) > 1:
        raise BelugaError(f"'{name}' is a plugin of several kinds ({', '.join(k for k, _ in found)}): say which "
                          "with --kind")
    kind_name, reg = found[0]
    info = next((i for i in reg.entries() if i.name == name), None)
    where = f"{info.target}, from {info.distribution}" if info else "a module:Class reference, not installed"
    cls, status = _load(reg, name)
    console.print(f"[bold]{escape(name)}[/] ({kind_name} plugin, {escape(where)}): {escape(status)}",
                  highlight=False, soft_wrap=True)
    if cls is None:
        raise typer.Exit(1)
    summary = _summary(cls)
    if summary:
        console.print(escape(summary), highlight=False, soft_wrap=True)
    options = _options_of(cls)
    if options is None:
        defaults = getattr(cls, "defaults", None)
        note = f" (a plugin written before Options: its defaults, their types unchecked: {defaults})" \
            if defaults else ""
        console.print(f"options: none typed{escape(note)}", highlight=False, soft_wrap=True)
        return
    rows = option_rows(options)
    table = Table(title=f"options ({options.__name__})", title_justify="left", show_edge=False)
    for column in ("option", "type", "default", "bounds", "help"):
        table.add_column(column, overflow="fold")
    for row in rows:
        table.add_row(*(escape(row[c]) for c in ("name", "type", "default", "bounds", "help")))
    console.print(table if rows else "options: none")
    if rows and kind_name in _WHERE:
        console.print(escape(f"set them {_WHERE[kind_name].replace('NAME', name)}"), highlight=False, soft_wrap=True)
    if isinstance(cls, type) and issubclass(cls, Method) and not cls.reuses:
        console.print(escape(f"[method.{name}] also takes the training keys of the method's suite step "
                             "(learning_rate, batch_size, epochs, weight_decay, warmup_ratio, max_grad_norm)."),
                      highlight=False)
