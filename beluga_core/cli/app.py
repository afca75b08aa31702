"""The ``beluga`` command: registers the commands of the ``*_cmd`` modules (which never import this one)."""

from __future__ import annotations

import logging
import os
import sys
import warnings
from typing import Any

import typer
from rich.console import Console
from rich.markup import escape

from beluga_core.cli import (
    analyze_cmd,
    ensemble_cmd,
    explain_cmd,
    export_cmd,
    plugins_cmd,
    power_cmd,
    rank_cmd,
    regress_cmd,
    report_cmd,
    run_cmd,
    select_cmd,
    sql_cmd,
    store_check_cmd,
    suite_check_cmd,
    suite_from_table_cmd,
    suite_generate_cmd,
    suite_import_cmd,
    suite_info_cmd,
)
from beluga_core.core.errors import BelugaError, BelugaWarning

# Markdown help: docstring paragraphs reflow to the terminal, and config tables ("[grid]") stay literal.
app = typer.Typer(no_args_is_help=True, add_completion=False, pretty_exceptions_enable=False,
                  rich_markup_mode="markdown", help="Behavioral learning generalization analysis.")
suite_app = typer.Typer(no_args_is_help=True, help="Import, build, inspect and check grouped test suites.")
plugins_app = typer.Typer(no_args_is_help=True, help="Installed plugins.")
store_app = typer.Typer(no_args_is_help=True, help="Result stores.")
app.add_typer(suite_app, name="suite")
app.add_typer(plugins_app, name="plugins")
app.add_typer(store_app, name="store")

app.command("run")(run_cmd.run)
app.command("report")(report_cmd.report)
app.command("analyze")(analyze_cmd.analyze)
app.command("select")(select_cmd.select)
app.command("regress")(regress_cmd.regress)
app.command("rank")(rank_cmd.rank)
app.command("ensemble")(ensemble_cmd.ensemble)
app.command("export")(export_cmd.export)
app.command("explain")(explain_cmd.explain)
app.command("sql")(sql_cmd.sql)
app.command("power")(power_cmd.power)
suite_app.command("info")(suite_info_cmd.info)
suite_app.command("check")(suite_check_cmd.check_cmd)
suite_app.command("import-checklist")(suite_import_cmd.import_checklist_cmd)
suite_app.command("from-table")(suite_from_table_cmd.from_table_cmd)
suite_app.command("generate")(suite_generate_cmd.generate_cmd)
plugins_app.command("list")(plugins_cmd.list_plugins)
plugins_app.command("show")(plugins_cmd.show_plugin)
store_app.command("check")(store_check_cmd.check_cmd)
store_app.command("info")(export_cmd.info)

err_console = Console(stderr=True)


def _log_level() -> None:
    """``BELUGA_LOG_LEVEL=DEBUG`` (or INFO, ...) shows beluga's own log lines on stderr, with the time; other
    libraries' loggers keep their levels (transformers alone says a lot at DEBUG)."""
    level = os.environ.get("BELUGA_LOG_LEVEL", "").strip().upper()
    if not level:
        return
    if level not in logging.getLevelNamesMapping():
        raise BelugaError(f"BELUGA_LOG_LEVEL={os.environ['BELUGA_LOG_LEVEL']!r}: expected one of DEBUG, INFO, "
                          "WARNING, ERROR")
    handler = logging.StreamHandler()
    handler.setFormatter(logging.Formatter("%(asctime)s %(name)s %(levelname)s: %(message)s"))
    for name in ("beluga", "beluga_core"):   # named loggers, and modules' getLogger(__name__)
        logger = logging.getLogger(name)
        logger.setLevel(level)
        logger.addHandler(handler)
        logger.propagate = False


def _show_warnings() -> None:
    """beluga's own warnings (a config option without effect, a plugin without Options) as a "warning:" line, not
    Python's file:line form; other libraries' warnings keep theirs."""
    default = warnings.showwarning

    def show(message: Warning | str, category: type[Warning], filename: str, lineno: int, file: Any = None,
             line: str | None = None) -> None:
        if issubclass(category, BelugaWarning):
            err_console.print(f"[bold yellow]warning:[/] {escape(str(message))}", highlight=False, soft_wrap=True)
        else:
            default(message, category, filename, lineno, file, line)

    warnings.showwarning = show


def main(argv: list[str] | None = None) -> None:
    try:
        _log_level()
        _show_warnings()
        # Outside standalone mode click returns a command's `typer.Exit(code)` instead of exiting with it.
        code = app(args=argv, standalone_mode=False)
        if isinstance(code, int) and code:
            sys.exit(code)
    except BelugaError as exc:
        # Messages name config tables ("[method.lp]"), which rich would read as markup and drop.
        err_console.print(f"[bold red]error:[/] {escape(str(exc))}", highlight=False, soft_wrap=True)
        sys.exit(exc.exit_code)
    except KeyboardInterrupt:
        err_console.print("interrupted; finished work is kept (re-run to resume)")
        sys.exit(130)
    except typer.Exit as exc:
        sys.exit(exc.exit_code)
    except typer.Abort:
        sys.exit(130)
    except Exception as exc:
        # Usage errors (unknown command or option, missing argument) come from typer's bundled click.
        show = getattr(exc, "show", None)
        if callable(show) and hasattr(exc, "exit_code"):
            show()
            sys.exit(2)
        raise
