"""A plugin's options: one strict pydantic model per plugin, its ``Options`` (peft's typed config classes).

Each field carries its type, default, bounds and help; the config loader validates a plugin's table with it (the
error names the config's file, line and field, exit 2), ``schemas/`` and the config reference are generated from
it, ``beluga plugins show NAME`` prints it, and the plugin reads a validated, typed instance.

Strict: nothing is coerced, so ``r = true`` and ``r = 8.0`` for a whole number stay errors (an integer is a valid
float, as TOML writes ``1e4`` or ``10000`` alike). The values a job's id and stored settings hash are the config's
own (``option_defaults`` with what the config sets, as written): validation checks them, it never rewrites them, so
an integer stays an integer and no default enters that was not there.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any, ClassVar

from pydantic import BaseModel, ConfigDict, ValidationError, create_model
from pydantic.fields import FieldInfo

from beluga_core.core.errors import BelugaError, did_you_mean


class Options(BaseModel):
    """Base of every plugin's options: strict (no coercion), unknown keys refused, frozen. Every field needs a
    default (a plugin's table may be left out of a config); its ``description`` is its help (``beluga plugins
    show``, the schema, the config reference), so give one."""

    model_config = ConfigDict(extra="forbid", strict=True, frozen=True)


class NoOptions(Options):
    """The options of a plugin that takes none."""


# The name plugin classes declare their options under (``Options = LoRAOptions``), taken here before the attribute.
PluginOptions = Options


class DeclaresOptions:
    """A plugin kind whose plugins declare their options as one ``Options`` model (methods, tasks): ``defaults`` is
    derived from it. A plugin that sets a ``defaults`` dict itself and no ``Options`` (written before them) gets
    ``Options = None``: its options are taken unchecked (the registry warns once when it loads)."""

    Options: ClassVar[type[PluginOptions] | None] = NoOptions
    defaults: ClassVar[dict[str, Any]] = {}

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        declared = cls.__dict__.get("Options")
        if declared is not None:
            if "defaults" in cls.__dict__:
                raise TypeError(f"{cls.__qualname__} declares both Options and defaults: the defaults are the "
                                "Options' own")
            cls.defaults = option_defaults(declared)
        elif "defaults" in cls.__dict__:
            parent = cls.Options
            # A plugin written before Options: its dict, unchecked. A subclass of a plugin with Options that sets a
            # defaults dict: its parent's options with those defaults (the code it inherits reads them typed).
            cls.Options = None if parent is None or parent is NoOptions else \
                with_defaults(parent, cls.__dict__["defaults"], f"{cls.__name__}Options")


def with_defaults(options: type[Options], defaults: Mapping[str, Any], name: str) -> type[Options]:
    """``options`` with other defaults (each field keeps its type and bounds); a key it lacks is an option of any
    type."""
    fields: dict[str, Any] = {}
    for key, value in defaults.items():
        field = options.model_fields.get(key)
        fields[key] = (field.annotation, FieldInfo.merge_field_infos(field, default=value)) if field is not None \
            else (Any, FieldInfo(default=value, description="(an option of the plugin's own defaults)"))
    return create_model(name, __base__=options, **fields)


def undeclared_options(plugin: type[DeclaresOptions]) -> type[Options]:
    """The options of a plugin written before Options: its ``defaults`` as options of any type, so that only their
    names are checked (the registry warned when it loaded the plugin)."""
    fields: dict[str, Any] = {k: (Any, FieldInfo(default=v, description="(the plugin declares no Options)"))
                              for k, v in plugin.defaults.items()}
    return create_model(f"{plugin.__name__}Defaults", __base__=Options, **fields)


def checked_options(plugin: type[DeclaresOptions], values: Mapping[str, Any], where: str) -> Any:
    """A plugin's options as it receives them: its ``Options`` instance, validated; for a plugin without Options
    its ``defaults`` with ``values`` as a dict, the names checked. ``where`` names the table in errors."""
    if plugin.Options is None:
        validate_options(undeclared_options(plugin), values, where)
        return {**plugin.defaults, **values}
    return validate_options(plugin.Options, values, where)


def option_defaults(options: type[Options]) -> dict[str, Any]:
    """The fields' defaults as one plain dict: what a plugin's ``defaults`` were before it declared ``Options``, and
    so what its jobs' ids hash when the config sets nothing."""
    out: dict[str, Any] = {}
    for name, field in options.model_fields.items():
        if field.is_required():
            raise TypeError(f"{options.__qualname__}.{name} has no default: every option needs one")
        out[name] = field.get_default(call_default_factory=True)
    return out


def problems(exc: ValidationError, fields: Mapping[str, Any]) -> list[tuple[str | None, str]]:
    """Each error of a validation as (the option, what was expected), an unknown key with its "did you mean". The
    option is the top-level key: a union's member tags and list indices pydantic adds go into the text."""
    out: list[tuple[str | None, str]] = []
    for err in exc.errors():
        loc = tuple(err.get("loc", ()))
        got = err.get("input")
        key = str(loc[0]) if loc else None
        if err.get("type") == "extra_forbidden" and key is not None:
            takes = f"it takes {', '.join(fields)}" if fields else "it takes no options"
            out.append((key, f"unknown option{did_you_mean(key, fields) or ';'} {takes}"))
            continue
        inner = [str(p) for p in loc[1:] if isinstance(p, int)]
        at = f"item {inner[-1]}: " if inner else ""
        # A boolean as the config writes it (TOML and JSON: true), not as Python does.
        shown = json.dumps(got) if isinstance(got, bool) else repr(got)
        got_txt = "" if isinstance(got, dict | list) or got is None else f" (got {shown})"
        # pydantic prefixes a validator's own message with "Value error, ": the message is the plugin's.
        message = str(err.get("msg", "invalid")).removeprefix("Value error, ")
        out.append((key, f"{at}{message}{got_txt}"))
    return out


def validate_options(options: type[Options], values: Mapping[str, Any], where: str) -> Options:
    """``values`` as ``options``, or a ``BelugaError`` whose field is ``where.KEY`` (``method.lora.r``) saying what
    was expected (the config loader adds the file and line). The one check of a plugin's options."""
    try:
        return options.model_validate(dict(values))
    except ValidationError as exc:
        # A union's members each report: the first option's messages together (expected this, or that).
        found = problems(exc, options.model_fields)
        key = found[0][0]
        message = "; or ".join(dict.fromkeys(m for k, m in found if k == key))
        others = len({k for k, _ in found} - {key})
        more = f" (and {others} more option(s) with a problem)" if others else ""
        raise BelugaError(f"{message}{more}", field=where if key is None else f"{where}.{key}") from None


def option_rows(options: type[Options]) -> list[dict[str, str]]:
    """Each option as text (name, type, default, bounds, help), read from the model's JSON Schema: what ``beluga
    plugins show`` prints, in the words an editor shows for the same schema."""
    schema = options.model_json_schema()
    rows = []
    for name, prop in schema.get("properties", {}).items():
        field = options.model_fields[name]
        default = field.get_default(call_default_factory=True) if not field.is_required() else "required"
        rows.append({"name": name, "type": _schema_type(prop, schema.get("$defs", {})),
                     "default": "not set" if default is None else json.dumps(default),
                     "bounds": ", ".join(f"{word} {part[key]}" for part in [prop, *prop.get("anyOf", [])]
                                         for key, word in _BOUNDS if key in part),
                     "help": prop.get("description", "")})
    return rows


_BOUNDS = (("minimum", "≥"), ("exclusiveMinimum", ">"), ("maximum", "≤"), ("exclusiveMaximum", "<"),
           ("minLength", "length ≥"), ("minItems", "items ≥"))


def _schema_type(prop: Mapping[str, Any], defs: Mapping[str, Any]) -> str:
    if "$ref" in prop:
        return _schema_type(defs.get(str(prop["$ref"]).rsplit("/", 1)[-1], {}), defs)
    if "enum" in prop:
        return " | ".join(json.dumps(v) for v in prop["enum"])
    if "const" in prop:
        return json.dumps(prop["const"])
    if "anyOf" in prop:
        kinds = [_schema_type(p, defs) for p in prop["anyOf"] if p.get("type") != "null"]
        return " | ".join(kinds) + (" | null" if any(p.get("type") == "null" for p in prop["anyOf"]) else "")
    kind = prop.get("type", "any")
    if kind == "array":
        return f"list of {_schema_type(prop.get('items', {}), defs)}"
    return str(kind)
