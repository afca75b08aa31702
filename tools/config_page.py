"""``docs/reference/config.md``: every key of the benchmark config, from the pydantic models that
``BenchmarkConfig`` (``beluga_core/config/schema.py``) reaches through its fields (type, default, constraints,
description), one section per TOML table, each built-in method's ``[method.NAME]`` from its Options
(``config.plugin_options.documented_config``) (``tools.docs_reference`` writes it)."""

from __future__ import annotations

import dataclasses
import inspect
import re
import types
import typing
from typing import Any, Literal, get_args, get_origin

from pydantic import BaseModel
from pydantic.fields import FieldInfo

from beluga_core.config.plugin_options import builtin_methods, documented_config
from tools.markdown_text import GENERATED, cell, is_class, rst_to_md, slug


@dataclasses.dataclass(frozen=True)
class Section:
    """One TOML table of the config: its header as a user writes it and the model that validates it."""

    header: str
    model: type[BaseModel]
    how: str  # how the key takes the table: "table", "array" (of tables), "map" (a table per name), "top"


def _unwrap(annotation: Any) -> Any:
    """``Annotated[X, …]`` → ``X``."""
    while get_origin(annotation) is typing.Annotated:
        annotation = get_args(annotation)[0]
    return annotation


def _models_in(annotation: Any) -> list[type[BaseModel]]:
    annotation = _unwrap(annotation)
    if is_class(annotation) and issubclass(annotation, BaseModel):
        return [annotation]
    return [m for arg in get_args(annotation) for m in _models_in(arg)]


def _subsection(prefix: str, key: str, annotation: Any) -> Section | None:
    """The table a field opens, if its type holds a model: ``[key]``, ``[[key]]`` or ``[key.NAME]``."""
    models = _models_in(annotation)
    if not models:
        return None
    path = f"{prefix}.{key}" if prefix else key
    options = [_unwrap(a) for a in get_args(_unwrap(annotation))] or [_unwrap(annotation)]
    origin = get_origin(_unwrap(annotation))
    if origin is list:
        return Section(f"[[{path}]]", models[0], "array")
    if origin is dict:
        return Section(f"[{path}.NAME]", models[0], "map")
    if any(get_origin(o) is list for o in options):
        return Section(f"[[{path}]]", models[0], "array")
    return Section(f"[{path}]", models[0], "table")


def _type_name(annotation: Any, table: str) -> str:
    """How a user writes a value of ``annotation`` in TOML; ``table`` names a model's table."""
    annotation = _unwrap(annotation)
    origin, args = get_origin(annotation), get_args(annotation)
    if annotation is Any:
        return "any value"
    if origin is Literal:
        return " or ".join(f'`{a!r}`'.replace("'", '"') for a in args)
    if origin in (typing.Union, types.UnionType):
        return " or ".join(_type_name(a, table) for a in args if a is not type(None))
    if origin is list:
        inner = _type_name(args[0], table)
        return "array of tables" if inner == table else f"list of {inner}"
    if origin is tuple:
        if len(set(args)) == 1:
            return f"list of {len(args)} {_type_name(args[0], table)}s"
        return "list of " + ", ".join(_type_name(a, table) for a in args)
    if origin is dict:
        inner = _type_name(args[1], table)
        return "one table per name" if inner == table else f"table of {inner}"
    if is_class(annotation) and issubclass(annotation, BaseModel):
        return table
    names = {str: "string", int: "integer", float: "number", bool: "boolean"}
    if annotation in names:
        return names[annotation]
    raise TypeError(f"the config reference cannot name the type {annotation!r}: teach config_page._type_name")


def _constraints(metadata: list[Any], unit: str = "") -> list[str]:
    words = []
    for meta in metadata:
        for attr, fmt in (("ge", "≥ {}"), ("gt", "> {}"), ("le", "≤ {}"), ("lt", "< {}"),
                          ("min_length", f"at least {{}} {unit}"), ("max_length", f"at most {{}} {unit}")):
            value = getattr(meta, attr, None)
            if value is not None:
                words.append(fmt.format(value))
    return words


def _value_constraints(annotation: Any) -> list[str]:
    """Constraints on the values of a container type (``dict[str, Annotated[int, Field(ge=0)]]``)."""
    return [c for arg in get_args(annotation) if get_origin(arg) is typing.Annotated
            for c in _constraints(list(FieldInfo.from_annotation(arg).metadata))]


def _toml(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, str):
        return '"' + value.replace('"', '\\"') + '"'
    if isinstance(value, list | tuple):
        return "[" + ", ".join(_toml(v) for v in value) + "]"
    if isinstance(value, dict):
        return "{" + ", ".join(f"{k} = {_toml(v)}" for k, v in value.items()) + "}"
    return repr(value)


def _default(field: FieldInfo) -> str:
    if field.is_required():
        return "required"
    value = field.get_default(call_default_factory=True)
    if value is None:
        return "not set"
    if isinstance(value, BaseModel):
        return "its table's defaults"
    return f"`{_toml(value)}`"


# The guide that explains a table (the site's strict build checks that each page exists).
GUIDES = {
    "top level": ("Benchmark configs", "benchmark-configs.md"),
    "[store]": ("The result store and SQL", "store.md"),
    "[[tasks]]": ("Tasks", "tasks.md"),
    "[[tasks.eval_suites]]": ("Cross-suite evaluation", "cross-suite.md"),
    "[training.configurations.NAME]": ("Regression between model versions", "regression.md"),
    "[executor]": ("Speed and scale", "speed-and-scale.md"),
    "[grid]": ("Hyper-parameter search", "grid-search.md"),
    "[method]": ("Generalization methods", "methods.md"),
    "[attributions]": ("Attributions", "attributions.md"),
    "[fewshot]": ("Ranking models on an unseen group", "ranking.md"),
    "[[ensembles]]": ("Regression between model versions", "regression.md"),
}


def config_sections() -> list[Section]:
    """Every table of the config, each followed by the tables its keys open, in the models' field order."""
    sections: list[Section] = []

    def visit(section: Section) -> None:
        sections.append(section)
        prefix = "" if section.how == "top" else re.sub(r"[\[\]]", "", section.header)
        for name, field in section.model.model_fields.items():
            sub = _subsection(prefix, field.alias or name, field.annotation)
            if sub is not None:
                visit(sub)

    # The config as its schema documents it: [method.NAME] typed by each built-in method's Options.
    visit(Section("top level", documented_config(builtin_methods()), "top"))
    return sections


def config_reference() -> str:
    lines = [
        "# Config reference",
        "",
        GENERATED.format(source="the pydantic models of `beluga_core/config/schema.py`"),
        "",
        "A benchmark config is the TOML file `beluga run CONFIG` reads. This page lists every key it accepts, table",
        "by table, with its type, default and meaning, as the pydantic models that validate a config declare them;",
        "a key not listed here is an error naming the file and the key.",
        "[Benchmark configs](../guides/benchmark-configs.md) explains how a config runs, `benchmarks/quick.toml` is a",
        "commented example, and `schemas/benchmark-config.schema.json` is the same schema as JSON Schema, for an",
        "editor.",
        "",
    ]
    for section in config_sections():
        prefix = "" if section.how == "top" else re.sub(r"[\[\]]", "", section.header)
        lines += [f"## {'Top level' if section.how == 'top' else f'`{section.header}`'}", ""]
        doc = vars(section.model).get("__doc__")
        if doc:
            lines += [rst_to_md(inspect.cleandoc(doc)), ""]
        if section.header in GUIDES:
            title, page = GUIDES[section.header]
            lines += [f"The guide: [{title}](../guides/{page}).", ""]
        if section.how == "array":
            lines += ["An array of tables: the header may be repeated, one table per entry.", ""]
        elif section.how == "map":
            lines += ["One table per name (`NAME` stands for it), each with the keys below.", ""]
        lines += ["| key | type | default | meaning |", "| --- | --- | --- | --- |"]
        for name, field in section.model.model_fields.items():
            key = field.alias or name
            if field.description is None:
                raise ValueError(f"{section.model.__name__}.{name} has no description: the config reference needs "
                                 "one (Field(description=...))")
            sub = _subsection(prefix, key, field.annotation)
            type_text = _type_name(field.annotation, "table")
            unit = "characters" if _unwrap(field.annotation) is str else "entries"
            constraints = _constraints(list(field.metadata), unit) + _value_constraints(field.annotation)
            if constraints:
                type_text += f" ({', '.join(constraints)})"
            if sub is not None:
                type_text += f", see [`{sub.header}`](#{slug(sub.header)})"
            row = [f"`{key}`", type_text, _default(field), rst_to_md(field.description)]
            lines.append("| " + " | ".join(cell(c) for c in row) + " |")
        lines.append("")
    return "\n".join(lines)
