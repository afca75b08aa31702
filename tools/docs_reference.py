"""The two generated pages of the documentation site, written from the code so that they cannot drift from it: a
tool of the docs' build, beside ``mkdocs.yml`` and ``mkdocs_hooks.py``, not part of the ``beluga`` package.

- ``docs/reference/config.md``: every key of the benchmark config, from the pydantic models that ``BenchmarkConfig``
  (``beluga_core/config/schema.py``) reaches (type, default, constraints, description), one section per TOML table.
- ``docs/reference/plugin-api.md``: per plugin kind, the API module's exports and every member of every class a
  plugin derives from or receives (the kind's base, its other bases, the ``Trainer``, batches, contexts, …), with
  signatures as written in the source and the docstrings (an attribute's doc is the comment block above it).

``tests/unit/project/test_docs.py`` fails when a committed page differs from what this module renders. To rewrite
both, from the repository's root (``--check``: only say which would change, exit 1 if any):

    python -m tools.docs_reference [--check]

The pages' own modules: ``tools.config_page`` and ``tools.plugin_api_page``, over the Markdown helpers of
``tools.markdown_text``.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable
from pathlib import Path

from tools.config_page import config_reference
from tools.plugin_api_page import plugin_reference

TARGETS: dict[str, Callable[[], str]] = {
    "docs/reference/config.md": config_reference,
    "docs/reference/plugin-api.md": plugin_reference,
}


def main(root: Path, check: bool = False) -> list[Path]:
    """The pages under ``root`` that differ from what the code renders, rewritten unless ``check``."""
    stale = []
    for target, render in TARGETS.items():
        path = root / target
        text = render()
        if not path.exists() or path.read_text(encoding="utf-8") != text:
            if not check:
                path.write_text(text, encoding="utf-8")
            stale.append(path)
    return stale


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--check", action="store_true", help="write nothing; exit 1 if a page is stale")
    parser.add_argument("--root", type=Path, default=Path(__file__).resolve().parents[1],
                        help="the repository whose docs/reference pages to write (default: this one)")
    args = parser.parse_args()
    stale = main(args.root, args.check)
    for p in stale:
        print(f"{'stale' if args.check else 'rewrote'} {p}")
    sys.exit(1 if args.check and stale else 0)
