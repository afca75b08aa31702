"""``beluga plugins list``."""

from __future__ import annotations

from rich.console import Console
from rich.table import Table

from beluga_core import registry
from beluga_core.cli.app import plugins_app


@plugins_app.command("list")
def list_plugins() -> None:
    """Show every plugin namespace with its plugins and the package each comes from."""
    console = Console()
    infos = registry.list_plugins()
    for kind, namespace in registry.NAMESPACES.items():
        table = Table(title=f"{kind} ({namespace})", title_justify="left", show_edge=False)
        table.add_column("name")
        table.add_column("from package")
        table.add_column("object")
        for info in infos:
            if info.kind == kind:
                table.add_row(info.name, info.distribution, info.target)
        console.print(table)
