"""User-facing errors.

Anything a user can cause (a bad file, a bad config, an unknown plugin name) raises ``BelugaError``;
the CLI prints its message and exits with status 2 instead of showing a traceback.
"""

from __future__ import annotations

import difflib
from collections.abc import Iterable
from pathlib import Path


class BelugaError(Exception):
    """An error caused by user input; ``str(err)`` is the whole message shown to the user."""

    exit_code = 2

    def __init__(self, message: str, *, source: str | Path | None = None, line: int | None = None,
                 field: str | None = None) -> None:
        where = []
        if source is not None:
            where.append(str(source))
        if line is not None:
            where.append(f"line {line}")
        if field:
            where.append(f"field '{field}'")
        prefix = ": ".join([", ".join(where)]) + ": " if where else ""
        super().__init__(prefix + message)
        self.message = message
        self.source = source
        self.line = line
        self.field = field


class BelugaWarning(UserWarning):
    """Something a user set that beluga accepts but that is probably not what they meant; the CLI prints it as a
    warning line (``beluga_core.cli.app``)."""


class ConfigWarning(BelugaWarning):
    """A config setting that has no effect (options of a plugin the run does not use)."""


class PluginWarning(BelugaWarning):
    """A plugin that works the old way (a method without ``Options``)."""


def did_you_mean(name: str, options: Iterable[str], cutoff: float = 0.6) -> str:
    """"; did you mean 'x'?" for the closest of ``options`` to a mistyped ``name``, else ""."""
    close = difflib.get_close_matches(name, list(options), n=1, cutoff=cutoff)
    return f"; did you mean '{close[0]}'?" if close else ""


def format_validation_error(exc: object) -> str:
    """Render a pydantic ``ValidationError`` as 'field: what was expected' lines."""
    lines = []
    for err in exc.errors():  # type: ignore[attr-defined]
        loc = ".".join(str(p) for p in err.get("loc", ())) or "(record)"
        msg = err.get("msg", "invalid")
        got = err.get("input")
        got_txt = "" if isinstance(got, dict | list) else f" (got {got!r})"
        lines.append(f"{loc}: {msg}{got_txt}")
    return "; ".join(lines)
