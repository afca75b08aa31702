"""The table of plugin kinds, generated from the registries so that it cannot drift from them.

One row per registry (``beluga_core.core.registry.ALL``): the kind, its entry-point group, its base class, the
members a plugin must implement — what the registry's load-time check rejects a plugin for leaving out
(``missing_members``) — and the API module that exports the base with everything a plugin of that kind needs,
``beluga_core.api.<group>`` for the entry-point group ``beluga.<group>``. The kind module's other subclasses of
the base (``ClassificationTask``, ``PairLoss``, ``PerInputKind``, …) are listed with what they leave to
implement.

The table stands between two marker lines in the package's docstring (``beluga_core/api/__init__.py``) and in
the plugin guide (``docs/guides/extending.md``); ``tests/unit/api/test_api_kinds.py`` fails when either differs from
``table()``. To rewrite both:

    python -m beluga_core.api.kinds_table
"""

from __future__ import annotations

import importlib
import inspect
import sys
from dataclasses import dataclass
from pathlib import Path
from types import ModuleType
from typing import Any

from beluga_core.core.registry import ALL, Registry, missing_members

BEGIN = "<!-- the table of plugin kinds: generated from the registries by `python -m beluga_core.api.kinds_table` -->"
END = "<!-- end of the table of plugin kinds -->"
GROUP_PREFIX = "beluga."
# Where the table stands, relative to the repository root.
TARGETS = ("beluga_core/api/__init__.py", "docs/guides/extending.md")


@dataclass(frozen=True)
class Kind:
    """One plugin kind as its registry declares it, with its API module (imported)."""

    registry: Registry[Any]
    module: ModuleType

    @property
    def base(self) -> type:
        return self.registry.base

    def alternatives(self) -> list[type]:
        """The module's other bases of this kind: exported subclasses of the kind's base, by name."""
        exported = (getattr(self.module, name) for name in sorted(self.module.__all__))
        return [cls for cls in exported if inspect.isclass(cls) and cls is not self.base and issubclass(cls, self.base)]


def module_name(registry: Registry[Any]) -> str:
    """``beluga_core.api.<group>`` for the entry-point group ``beluga.<group>``."""
    return f"{__package__}.{registry.namespace.removeprefix(GROUP_PREFIX)}"


def kinds() -> list[Kind]:
    """Every plugin kind, in the order its registry was created (the contracts' kinds, then the executor's)."""
    # ALL is complete here: importing this module ran the package's __init__, which imports every kind module.
    return [Kind(registry, importlib.import_module(module_name(registry))) for registry in ALL.values()]


def member(cls: type, name: str) -> str:
    """A member as a plugin writes it: ``name(parameters)`` for a method, ``name`` for an attribute."""
    attr = inspect.getattr_static(cls, name, None)
    skip = 0 if isinstance(attr, staticmethod) else 1  # self, or cls
    if isinstance(attr, staticmethod | classmethod):
        attr = attr.__func__
    if not inspect.isfunction(attr):
        return f"`{name}`"
    params: list[str] = []
    star = False
    for p in list(inspect.signature(attr).parameters.values())[skip:]:
        if p.kind is p.KEYWORD_ONLY and not star:
            params.append("*")
            star = True
        params.append(p.name)
    return f"`{name}({', '.join(params)})`"


def implements(cls: type, base: type) -> str:
    names = missing_members(cls, base)
    return ", ".join(member(cls, name) for name in names) if names else "nothing (override what differs)"


def row(kind: Kind) -> str:
    what = implements(kind.base, kind.base)
    others = "; ".join(f"`{cls.__name__}`: {implements(cls, kind.base)}" for cls in kind.alternatives())
    if others:
        what += f"; or derive from {others}"
    cells = [kind.registry.kind, f"`{kind.registry.namespace}`", f"`{kind.base.__name__}`", what,
             f"`{kind.module.__name__}`"]
    return f"| {' | '.join(cells)} |"


def table() -> str:
    """The Markdown table of the plugin kinds."""
    head = ["| kind | entry-point group | base class | what a plugin implements | API module |",
            "| --- | --- | --- | --- | --- |"]
    return "\n".join(head + [row(kind) for kind in kinds()])


def current(text: str, where: str) -> str:
    """The table as it stands between the markers in ``text``."""
    start, end = text.find(BEGIN), text.find(END)
    if start < 0 or end < start:
        raise ValueError(f"{where}: no table of plugin kinds between the lines {BEGIN!r} and {END!r}")
    return text[start + len(BEGIN):end].strip("\n")


def rewrite(text: str, where: str) -> str:
    """``text`` with the table between the markers regenerated."""
    current(text, where)  # the markers are there
    head, _, rest = text.partition(BEGIN)
    _, _, tail = rest.partition(END)
    return f"{head}{BEGIN}\n{table()}\n{END}{tail}"


def main(root: Path) -> list[Path]:
    written = []
    for target in TARGETS:
        path = root / target
        text = path.read_text(encoding="utf-8")
        new = rewrite(text, str(path))
        if new != text:
            path.write_text(new, encoding="utf-8")
            written.append(path)
    return written


if __name__ == "__main__":
    repo = Path(__file__).resolve().parents[2]
    try:
        for p in main(repo):
            print(f"rewrote the table of plugin kinds in {p}")
    except (OSError, ValueError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        sys.exit(2)
