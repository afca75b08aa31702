"""``docs/reference/plugin-api.md``: per plugin kind, the API module's exports and every member of every class a
plugin derives from or receives (the kind's base, its other bases, the ``Trainer``, batches, contexts, …), with
signatures as written in the source and the docstrings (an attribute's doc is the comment block above it)
(``tools.docs_reference`` writes it)."""

from __future__ import annotations

import ast
import dataclasses
import functools
import inspect
import re
import textwrap
from collections.abc import Callable, Iterator
from typing import Any

from pydantic import BaseModel

from beluga_core.api.kinds_table import Kind, implements, kinds
from beluga_core.core.registry import Registry, missing_members
from tools.markdown_text import GENERATED, cell, is_class, rst_to_md, slug


def _annotation_text(annotation: Any) -> str:
    if isinstance(annotation, str):
        return annotation
    return inspect.formatannotation(annotation)


def signature(func: Callable[..., Any], *, skip_first: bool) -> str:
    """``(a: int, *, b: str = "x") -> R`` as the source writes the annotations."""
    sig = inspect.signature(func)
    params = list(sig.parameters.values())[1 if skip_first else 0:]
    parts: list[str] = []
    star = False
    for i, p in enumerate(params):
        if p.kind is p.KEYWORD_ONLY and not star:
            parts.append("*")
            star = True
        prefix = "*" if p.kind is p.VAR_POSITIONAL else "**" if p.kind is p.VAR_KEYWORD else ""
        text = prefix + p.name
        star = star or p.kind is p.VAR_POSITIONAL
        if p.annotation is not p.empty:
            text += f": {_annotation_text(p.annotation)}"
        if p.default is not p.empty:
            text += f" = {p.default!r}"
        parts.append(text)
        if p.kind is p.POSITIONAL_ONLY and (i + 1 == len(params) or params[i + 1].kind is not p.POSITIONAL_ONLY):
            parts.append("/")
    text = f"({', '.join(parts)})"
    if sig.return_annotation is not sig.empty:
        text += f" -> {_annotation_text(sig.return_annotation)}"
    return text


@dataclasses.dataclass(frozen=True)
class Member:
    name: str
    heading: str  # name with its signature or type
    what: str  # "method", "abstract method", "property", "class attribute", …
    doc: str


def _comment_above(lines: list[str], lineno: int) -> str:
    """The block of ``#`` comments directly above line ``lineno`` (1-based) of ``lines``."""
    found: list[str] = []
    i = lineno - 2
    while i >= 0 and lines[i].strip().startswith("#"):
        found.insert(0, lines[i].strip().lstrip("#").strip())
        i -= 1
    return " ".join(found)


def _class_body(cls: type) -> tuple[list[ast.stmt], list[str]]:
    source_lines, _ = inspect.getsourcelines(cls)
    source = textwrap.dedent("".join(source_lines))
    node = ast.parse(source).body[0]
    assert isinstance(node, ast.ClassDef)
    return node.body, source.splitlines()


def _public(name: str) -> bool:
    return not name.startswith("_") or name in ("__init__", "__call__", "__len__", "__iter__")


def _decorators(node: ast.FunctionDef | ast.AsyncFunctionDef) -> set[str]:
    names = set()
    for d in node.decorator_list:
        target = d.func if isinstance(d, ast.Call) else d
        names.add(target.attr if isinstance(target, ast.Attribute) else getattr(target, "id", ""))
    return names


def _docstring(cls: type, name: str) -> str:
    """A method's or property's docstring, or the one it overrides in a class of beluga's (never object's)."""
    for owner in cls.__mro__:
        if owner is not cls and not owner.__module__.startswith("beluga_core."):
            continue
        attr = vars(owner).get(name)
        if isinstance(attr, staticmethod | classmethod):
            attr = attr.__func__
        described = isinstance(attr, property | functools.cached_property) or inspect.isfunction(attr)
        doc = attr.__doc__ if described else None
        if doc:
            return rst_to_md(inspect.cleandoc(doc))
    return ""


def members(cls: type, required: frozenset[str] = frozenset()) -> list[Member]:
    """The members ``cls`` itself defines, in source order: methods and properties with their signatures and
    docstrings, attributes with their annotations, values and comments. ``required``: those a plugin must define."""
    body, lines = _class_body(cls)
    source = "\n".join(lines)
    annotations = inspect.get_annotations(cls)
    found: list[Member] = []
    seen: set[str] = set()

    def kind_of(name: str, what: str) -> str:
        return f"{what}, required of a plugin" if name in required else what

    for node in body:
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
            name = node.name
            if not _public(name) or name in seen or "overload" in _decorators(node):
                continue
            seen.add(name)
            attr = inspect.getattr_static(cls, name)
            doc = _docstring(cls, name)
            if isinstance(attr, property | functools.cached_property):
                getter = attr.fget if isinstance(attr, property) else attr.func
                assert getter is not None
                ret = inspect.signature(getter).return_annotation
                heading = f"{name}: {_annotation_text(ret)}" if ret is not inspect.Signature.empty else name
                found.append(Member(name, heading, kind_of(name, "property"), doc))
                continue
            func = attr.__func__ if isinstance(attr, staticmethod | classmethod) else attr
            what = ("static method" if isinstance(attr, staticmethod) else "class method"
                    if isinstance(attr, classmethod) else "constructor" if name == "__init__" else "method")
            shown = cls.__name__ if name == "__init__" else name
            found.append(Member(name, shown + signature(func, skip_first=not isinstance(attr, staticmethod)),
                                kind_of(name, what), doc))
        elif isinstance(node, ast.AnnAssign | ast.Assign):
            targets = [node.target] if isinstance(node, ast.AnnAssign) else node.targets
            for target in targets:
                if not isinstance(target, ast.Name) or not _public(target.id) or target.id in seen:
                    continue
                name = target.id
                seen.add(name)
                annotation = annotations.get(name)
                heading = name + (f": {_annotation_text(annotation)}" if annotation is not None else "")
                if node.value is not None:
                    value = " ".join((ast.get_source_segment(source, node.value) or "…").split())
                    heading += f" = {value if len(value) <= 60 else '…'}"
                what = "field" if dataclasses.is_dataclass(cls) and "ClassVar" not in str(annotation) else \
                    "class attribute" if "ClassVar" in str(annotation) or annotation is None else "attribute"
                doc = rst_to_md(_comment_above(lines, node.lineno))
                found.append(Member(name, heading, kind_of(name, what), doc))
    return found


def _short(text: str) -> str:
    """A type as a reader writes it: `Task[Encoder]`, not `beluga_core.contracts.tasks.Task[~EncoderT]`."""
    return re.sub(r"\b(?:[a-z_]\w*\.)+", "", text).replace("~", "")


def _bases(cls: type) -> str:
    shown = vars(cls).get("__orig_bases__", cls.__bases__)
    # Task[Encoder] rather than beluga_core.contracts.tasks.Task[beluga_core.contracts.training.Encoder]
    names = [b.__name__ if is_class(b) else _short(_annotation_text(b)) for b in shown if b is not object]
    return f"({', '.join(names)})" if names else ""


def _documented(value: Any) -> bool:
    """Whether an export gets a section of its own: a class of beluga's that is not an error or a config model.
    Suites, cases and inputs are pydantic models documented by their JSON Schemas (`schemas/`)."""
    return (is_class(value) and value.__module__.startswith("beluga_core.")
            and not issubclass(value, Exception) and not isinstance(value, Registry)
            and not (issubclass(value, BaseModel) and not value.__module__.startswith("beluga_core.contracts.")))


def _order(kind: Kind) -> Iterator[type]:
    """The kind's base, its other bases, then the module's other classes, alphabetically."""
    yield kind.base
    alternatives = kind.alternatives()
    yield from alternatives
    for name in sorted(kind.module.__all__):
        value = getattr(kind.module, name)
        if _documented(value) and value is not kind.base and value not in alternatives:
            yield value


def _class_section(cls: type, kind: Kind, documented: set[type]) -> list[str]:
    """A class's section: its docstring, then every member it defines, and those of the ancestors of beluga's
    that the page does not document elsewhere (an ancestor it documents is linked)."""
    lines = [f"### `{cls.__name__}`", "",
             f"`class {cls.__name__}{_bases(cls)}`, defined in `{cls.__module__}`.", ""]
    if cls.__doc__ and "__doc__" in vars(cls) and not (dataclasses.is_dataclass(cls) and
                                                        cls.__doc__.startswith(cls.__name__ + "(")):
        lines += [rst_to_md(inspect.cleandoc(cls.__doc__)), ""]
    required = frozenset(missing_members(cls, kind.base)) if issubclass(cls, kind.base) else frozenset[str]()
    owners = [cls]
    for ancestor in cls.__mro__[1:]:
        if not ancestor.__module__.startswith("beluga_core."):
            continue
        if ancestor in documented:
            lines += [f"It inherits every member of [`{ancestor.__name__}`](#{slug(ancestor.__name__)}) it does "
                      "not list here.", ""]
            break
        owners.append(ancestor)
    seen: set[str] = set()
    for owner in owners:
        own = [m for m in members(owner, required) if m.name not in seen]
        seen.update(m.name for m in own)
        if owner is not cls and own:
            lines += [f"Inherited from `{owner.__name__}` (`{owner.__module__}`):", ""]
        for m in own:
            lines += [f"#### `{m.heading}`", "", f"*{m.what}*{'. ' + m.doc if m.doc else ''}", ""]
    if not seen:
        lines += ["No members of its own.", ""]
    return lines


def _other_exports(kind: Kind, documented: set[type]) -> list[str]:
    rows = []
    for name in sorted(kind.module.__all__):
        value = getattr(kind.module, name)
        if isinstance(value, Registry):
            what = f"the registry of this kind (`{value.namespace}`)"
        elif is_class(value) and value in documented:
            what = f"a class: [`{name}`](#{slug(value.__name__)})"
        elif is_class(value) and issubclass(value, Exception):
            what = "the error a plugin raises for bad input: beluga reports its message and exits with status 2"
        elif is_class(value) and issubclass(value, BaseModel):
            what = f"pydantic model, `{value.__module__}` (the JSON Schemas in `schemas/` describe the suite's)"
        elif inspect.isfunction(value):
            doc = inspect.getdoc(value) or ""
            what = f"function `{name}{signature(value, skip_first=False)}`" + (f": {rst_to_md(doc)}" if doc else "")
        else:
            what = f"`{_short(_annotation_text(value)) if not isinstance(value, str | int | float) else repr(value)}`"
        rows.append(f"| `{name}` | {cell(what)} |")
    return ["| name | what it is |", "| --- | --- |", *rows, ""]


def plugin_reference() -> str:
    lines = [
        "# Plugin API reference",
        "",
        GENERATED.format(source="the classes of `beluga_core.api`"),
        "",
        "Every plugin kind has one module, `beluga_core.api.<group>` for the entry-point group `beluga.<group>`.",
        "Below, per kind: what the module exports, then every member of every class a plugin derives from or is",
        "handed (the kind's base class first), with its signature as the source writes it and its documentation.",
        "A class appears once, under the first kind that exports it. [Extending beluga](../guides/extending.md)",
        "has a tested example of every kind.",
        "",
    ]
    # Each class under the first kind that exports it.
    by_kind: list[tuple[Kind, list[type]]] = []
    documented: set[type] = set()
    for kind in kinds():
        classes = [c for c in _order(kind) if c not in documented]
        documented.update(classes)
        by_kind.append((kind, classes))
    for kind, classes in by_kind:
        lines += [f"## {kind.registry.kind.capitalize()}: `{kind.module.__name__}`", "",
                  f"Entry-point group `{kind.registry.namespace}`; base class `{kind.base.__name__}`; a plugin "
                  f"implements {implements(kind.base, kind.base)}.", ""]
        if kind.module.__doc__:
            lines += [rst_to_md(inspect.cleandoc(kind.module.__doc__)), ""]
        lines += _other_exports(kind, documented)
        for cls in classes:
            lines += _class_section(cls, kind, documented)
    return "\n".join(lines).rstrip("\n") + "\n"
