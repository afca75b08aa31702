"""JSON Schema files derived from the pydantic models (the single source of truth), kept in ``schemas/``.

    python -m beluga_core.cli.jsonschema [DIR]              # the files, with every installed method's options
    python -m beluga_core.cli.jsonschema --builtin schemas  # as committed: beluga's own methods only

The benchmark config's ``[method.NAME]`` tables are typed by each method's Options (``config.plugin_options``):
a third-party method's options appear in the schema a user writes with its plugin installed.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

from pydantic import BaseModel

from beluga_core.config.plugin_options import builtin_methods, documented_config
from beluga_core.contracts.registries import METHODS
from beluga_core.data.suite.suite_schema import Case, SuiteHeader
from beluga_core.generators.s2lct.capabilities import CapabilitySpec
from beluga_core.stored_models.checkpoint_zoo import Zoo


def models(methods: list[str] | None = None) -> dict[str, type[BaseModel]]:
    """The schema files and their models; the config's method tables for ``methods`` (default: beluga's own)."""
    return {
        "suite-header.schema.json": SuiteHeader,
        "suite-case.schema.json": Case,
        "benchmark-config.schema.json": documented_config(builtin_methods() if methods is None else methods),
        "capability-spec.schema.json": CapabilitySpec,
        "zoo.schema.json": Zoo,
    }


def render(model: type[BaseModel]) -> str:
    schema = model.model_json_schema(by_alias=True)
    schema["$schema"] = "https://json-schema.org/draft/2020-12/schema"
    return json.dumps(schema, indent=2, sort_keys=True, ensure_ascii=False) + "\n"


def export(directory: Path, methods: list[str] | None = None) -> list[Path]:
    directory.mkdir(parents=True, exist_ok=True)
    written = []
    for name, model in models(methods).items():
        path = directory / name
        path.write_text(render(model), encoding="utf-8")
        written.append(path)
    return written


if __name__ == "__main__":
    args = sys.argv[1:]
    builtin = "--builtin" in args
    folders = [a for a in args if a != "--builtin"]
    for p in export(Path(folders[0] if folders else "schemas"), None if builtin else METHODS.names()):
        print(p)
