"""``beluga plugins list``."""

from __future__ import annotations

from rich.console import Console
from rich.table import Table

from beluga_core.contracts import registries  # noqa: F401 - declares the plugin kinds' registries
from beluga_core.core.registry import ALL
from beluga_core.execution.executors import base  # noqa: F401 - declares the executors' registry


def list_plugins() -> None:
    """Show every plugin kind with its plugins and the package each comes from."""
    console = Console()
    for kind, reg in ALL.items():
        table = Table(title=f"{kind} ({reg.namespace})", title_justify="left", show_edge=False)
        table.add_column("name")
        table.add_column("from package")
        table.add_column("object")
        for info in reg.entries():
            table.add_row(info.name, info.distribution, info.target)
        console.print(table)
