"""JSON Schema files derived from the pydantic models (the single source of truth), kept in ``schemas/``.

    python -m beluga_core.cli.jsonschema [DIR]     # rewrite the files (default: ./schemas)
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

from pydantic import BaseModel

from beluga_core.config.schema import BenchmarkConfig
from beluga_core.data.suite.suite_schema import Case, SuiteHeader
from beluga_core.generators.s2lct.capabilities import CapabilitySpec
from beluga_core.stored_models.checkpoint_zoo import Zoo

MODELS: dict[str, type[BaseModel]] = {
    "suite-header.schema.json": SuiteHeader,
    "suite-case.schema.json": Case,
    "benchmark-config.schema.json": BenchmarkConfig,
    "capability-spec.schema.json": CapabilitySpec,
    "zoo.schema.json": Zoo,
}


def render(model: type[BaseModel]) -> str:
    schema = model.model_json_schema(by_alias=True)
    schema["$schema"] = "https://json-schema.org/draft/2020-12/schema"
    return json.dumps(schema, indent=2, sort_keys=True, ensure_ascii=False) + "\n"


def export(directory: Path) -> list[Path]:
    directory.mkdir(parents=True, exist_ok=True)
    written = []
    for name, model in MODELS.items():
        path = directory / name
        path.write_text(render(model), encoding="utf-8")
        written.append(path)
    return written


if __name__ == "__main__":
    for p in export(Path(sys.argv[1] if len(sys.argv) > 1 else "schemas")):
        print(p)
