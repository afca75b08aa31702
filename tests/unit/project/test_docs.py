"""The documentation: the site builds with MkDocs offline and fails on a broken internal link, its generated
references (config, plugin API) are what the code says, and the README stays a short front page whose command map
names every command and whose links land on existing pages and headings."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest
from helpers import DOCS, REPO

from tools.config_page import config_reference
from tools.docs_reference import TARGETS
from tools.markdown_text import slug
from tools.plugin_api_page import members, plugin_reference

README = REPO / "README.md"


def build(config: Path, site: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "mkdocs", "build", "--strict", "--config-file", str(config),
                           "--site-dir", str(site)], capture_output=True, text=True, timeout=300, check=False)


@pytest.mark.parametrize("target", sorted(TARGETS))
def test_the_generated_references_are_current(target: str) -> None:
    path = REPO / target
    assert path.exists() and path.read_text(encoding="utf-8") == TARGETS[target](), \
        f"{target} is stale: run python -m tools.docs_reference"


def test_the_config_reference_has_every_key_of_every_table() -> None:
    from tools.config_page import GUIDES, config_sections

    text = config_reference()
    sections = config_sections()
    headers = [s.header for s in sections]
    assert headers[:3] == ["top level", "[store]", "[model]"]
    assert set(GUIDES) <= set(headers)  # each guide link names a table the config has
    for header in ("[[tasks]]", "[[tasks.eval_suites]]", "[training.iid]", "[training.suite]",
                   "[training.configurations.NAME]", "[executor]", "[grid]", "[[ensembles]]"):
        assert f"## `{header}`" in text
    for section in sections:
        title = "## Top level" if section.how == "top" else f"## `{section.header}`"
        body = text[text.index(title + "\n"):]
        body = body[:body.find("\n## ", 1)]
        keys = re.findall(r"^\| `([\w-]+)` \|", body, re.M)
        assert keys == [f.alias or n for n, f in section.model.model_fields.items()], section.header
    # A row, by hand: type (with its constraint), default and description as the model declares them.
    assert ("| `max_length` | integer (≥ 8, ≤ 4096) | `128` | Truncation length in tokens. |") in text
    assert "| `store` | string or table, see [`[store]`](#store) | `\"runs/beluga.duckdb\"` |" in text
    assert '| `keep_weights` | `"iid"` or `"seen"` or `"all"` | `"iid"` |' in text


def test_the_plugin_reference_has_every_member_of_every_base_and_of_trainer() -> None:
    from beluga_core.api.kinds_table import kinds
    from beluga_core.api.methods import Trainer

    text = plugin_reference()
    sections = {m.group(1): m.group(0) for m in re.finditer(r"^### `(\w+)`.*?(?=^### |^## |\Z)", text, re.M | re.S)}
    classes = [Trainer, *(cls for kind in kinds() for cls in (kind.base, *kind.alternatives()))]
    missing = []
    for cls in classes:
        beluga_mro = [c for c in cls.__mro__ if c.__module__.startswith("beluga_core.")]
        for name in sorted({n for n in dir(cls) if not n.startswith("_")} | set(getattr(cls, "__annotations__", {}))):
            if not any(re.search(rf"^#### `{name}\b", sections.get(c.__name__, ""), re.M) for c in beluga_mro):
                missing.append(f"{cls.__name__}.{name}")
    assert missing == []
    # Known answers: a signature as the source writes it, an abstract member marked, a comment as an attribute's doc.
    method = sections["Method"]
    assert "#### `update(trainer: Trainer, batches: list[Batch]) -> torch.Tensor`\n\n*method, required of a plugin*" \
        in method
    assert "#### `state_attributes: ClassVar[tuple[str, ...] | None] = None`\n\n*class attribute*. What a checkpoint" \
        in method
    assert "#### `zero_grad() -> None`\n\n*method*. Clear the gradients" in sections["Trainer"]


class _Documented:
    """A class with every kind of member the reference renders."""

    # Why it is 1.
    level: int = 1
    plain = "x"

    def __init__(self, a: int, *, b: str = "y") -> None:
        self.a = a

    @property
    def size(self) -> int:
        """The size."""
        return 0

    @staticmethod
    def make(x: int, /) -> _Documented:
        return _Documented(x)

    def _private(self) -> None: ...


def test_members_render_in_source_order_with_signatures_and_comments() -> None:
    rendered = [(m.heading, m.what, m.doc) for m in members(_Documented)]
    assert rendered == [
        ("level: int = 1", "attribute", "Why it is 1."),
        ('plain = "x"', "class attribute", ""),
        ("_Documented(a: int, *, b: str = 'y') -> None", "constructor", ""),
        ("size: int", "property", "The size."),
        ("make(x: int, /) -> _Documented", "static method", ""),
    ]
    assert slug("`[training.configurations.NAME]`") == "trainingconfigurationsname"
    assert slug("Score macros — each formula defined once") == "score-macros-each-formula-defined-once"


def test_the_figures_getting_started_shows_are_the_measured_ones() -> None:
    """Measurements live in benchmarks/*/RESULTS.md; the one table of figures the docs show (the quick run's, as an
    example of what a run prints) must be a copy of figures recorded there."""
    shown = re.findall(r"[+−-]?\d\.\d{3} \[[^\]]+\]", (DOCS / "getting-started.md").read_text(encoding="utf-8"))
    results = (REPO / "benchmarks" / "findings" / "RESULTS.md").read_text(encoding="utf-8")
    assert len(shown) == 8 and [f for f in shown if f not in results] == []


def _links(text: str) -> list[str]:
    return [m for m in re.findall(r"\]\(([^)\s]+)\)", text) if not re.match(r"[a-z]+:", m)]


def test_the_readme_is_a_short_front_page_with_every_command_and_working_links() -> None:
    from beluga_core.cli.app import app

    text = README.read_text(encoding="utf-8")
    assert len(text.splitlines()) <= 250
    commands = [c.name for c in app.registered_commands]
    commands += [f"{g.name} {c.name}" for g in app.registered_groups for c in g.typer_instance.registered_commands]
    assert len(commands) >= 18
    table = text[text.index("## Commands"):]
    assert [c for c in commands if f"| `beluga {c}" not in table] == []
    # Every link is to a file of the repository, and an anchor to one of the page's headings.
    broken = []
    for link in _links(text):
        path, _, anchor = link.partition("#")
        target = REPO / path
        if not target.is_file():
            broken.append(link)
        elif anchor:
            headings = re.findall(r"^#+ (.*)$", target.read_text(encoding="utf-8"), re.M)
            if anchor not in {slug(h) for h in headings}:
                broken.append(link)
    assert broken == []
    # The docs pages it links are the site's (each is also in the navigation, which the strict build checks).
    assert {REPO / link.partition("#")[0] for link in _links(text) if link.startswith("docs/")} <= \
        {p for p in DOCS.rglob("*.md")}
