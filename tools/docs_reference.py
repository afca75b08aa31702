"""The two generated pages of the documentation site, written from the code so that they cannot drift from it: a
tool of the docs' build, beside ``mkdocs.yml`` and ``mkdocs_hooks.py``, not part of the ``beluga`` package.

- ``docs/reference/config.md``: every key of the benchmark config, from the pydantic models that ``BenchmarkConfig``
  (``beluga_core/config/schema.py``) reaches (type, default, constraints, description), one section per TOML table.
- ``docs/reference/plugin-api.md``: per plugin kind, the API module's exports and every member of every class a
  plugin derives from or receives (the kind's base, its other bases, the ``Trainer``, batches, contexts, …), with
  signatures as written in the source and the docstrings (an attribute's doc is the comment block above it).

``tests/unit/project/test_docs.py`` fails when a committed page differs from what this module renders. To rewrite
both, from the repository's root:

    python -m tools.docs_reference

The pages' own modules: ``tools.config_page`` and ``tools.plugin_api_page``, over the Markdown helpers of
``tools.markdown_text``.
"""

from __future__ import annotations

import sys
from collections.abc import Callable
from pathlib import Path

from tools.config_page import config_reference
from tools.plugin_api_page import plugin_reference

TARGETS: dict[str, Callable[[], str]] = {
    "docs/reference/config.md": config_reference,
    "docs/reference/plugin-api.md": plugin_reference,
}


def main(root: Path) -> list[Path]:
    written = []
    for target, render in TARGETS.items():
        path = root / target
        text = render()
        if not path.exists() or path.read_text(encoding="utf-8") != text:
            path.write_text(text, encoding="utf-8")
            written.append(path)
    return written


if __name__ == "__main__":
    for p in main(Path(sys.argv[1]) if len(sys.argv) > 1 else Path(__file__).resolve().parents[1]):
        print(f"rewrote {p}")
