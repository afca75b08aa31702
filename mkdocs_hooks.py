"""MkDocs hook (``hooks:`` in mkdocs.yml): a code fence may carry a marker for the tests after its language,
```LANG tested or ```LANG tested:TAG (blocks the tests run: tests/helpers.py, ``doc_blocks``) or ```sql significance
(the store reference's queries on a store with significance tests). Python-Markdown would not read such a fence as
one at all; the site shows it as the plain ```LANG block it is."""

from __future__ import annotations

import re

MARKED_FENCE = re.compile(r"^(```\w+)[ \t]+[\w:-]+[ \t]*$", re.M)


def on_page_markdown(markdown: str, **_: object) -> str:
    return MARKED_FENCE.sub(r"\1", markdown)
