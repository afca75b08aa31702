"""The documentation: the site builds with MkDocs offline and fails on a broken internal link, its generated
references (config, plugin API) are what the code says, and the README stays a short front page whose command map
names every command and whose links land on existing pages and headings."""

from __future__ import annotations

import importlib.util
import re
import subprocess
import sys
from pathlib import Path

import pytest
import yaml
from helpers import REPO

README = REPO / "README.md"
MKDOCS = importlib.util.find_spec("mkdocs") is not None
NO_MKDOCS = "mkdocs is not installed (pip install -e '.[docs]', which the 'test' extra includes): the site is not built"


def build(config: Path, site: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "mkdocs", "build", "--strict", "--config-file", str(config),
                           "--site-dir", str(site)], capture_output=True, text=True, timeout=300, check=False)


@pytest.mark.skipif(not MKDOCS, reason=NO_MKDOCS)
def test_the_site_builds_strict_and_loads_nothing_from_another_host(tmp_path: Path) -> None:
    site = tmp_path / "site"
    result = build(REPO / "mkdocs.yml", site)
    assert result.returncode == 0, result.stderr[-5000:]
    pages = sorted(site.rglob("*.html"))
    assert len(pages) > 20 and (site / "reference" / "plugin-api.html").exists()
    # No CDN: every script, style, font and image a page or a style sheet loads lies in the site.
    remote = re.compile(r"""<(?:script|link|img|iframe|source)\b[^>]*?\b(?:src|href)=["']?(?:https?:)?//"""
                        r"""|@import\s+(?:url\()?["']?(?:https?:)?//|url\(["']?(?:https?:)?//""", re.I)
    loaded = [f"{p.relative_to(site)}: {m.group(0)}" for p in [*pages, *site.rglob("*.css")]
              for m in remote.finditer(p.read_text(encoding="utf-8", errors="replace"))]
    assert loaded == []
    # Every fenced block is a code block on the site, the tested ones (```sh tested) included: a fence Markdown did
    # not read would show as a paragraph starting with ```.
    assert [p.name for p in pages if "<p>```" in p.read_text(encoding="utf-8")] == []
    page = (site / "guides" / "your-data.html").read_text(encoding="utf-8")
    assert '<pre><code class="language-sh">beluga suite from-table builtin:sst-phenomena.csv' in page


@pytest.mark.skipif(not MKDOCS, reason=NO_MKDOCS)
def test_a_broken_link_or_anchor_fails_the_build(tmp_path: Path) -> None:
    """The site's own settings, on two pages: a link to a heading that is not there fails --strict, as does a link
    to a page that is not there; the same pages with the link fixed build."""
    settings = yaml.safe_load((REPO / "mkdocs.yml").read_text(encoding="utf-8"))
    docs = tmp_path / "docs"
    docs.mkdir()
    (docs / "index.md").write_text("# Home\n\nSee [the guide](guide.md#a-heading).\n", encoding="utf-8")
    settings.update(docs_dir=str(docs), nav=[{"Home": "index.md"}, {"Guide": "guide.md"}],
                    hooks=[str(REPO / hook) for hook in settings["hooks"]])
    config = tmp_path / "mkdocs.yml"
    config.write_text(yaml.safe_dump(settings), encoding="utf-8")
    for guide, fails in (("# Guide\n\n## Another heading\n", "guide.md"), ("# Guide\n\n## A heading\n", None)):
        (docs / "guide.md").write_text(guide, encoding="utf-8")
        result = build(config, tmp_path / "site")
        if fails:
            assert result.returncode != 0 and "a-heading" in result.stderr, result.stderr
        else:
            assert result.returncode == 0, result.stderr
    (docs / "index.md").write_text("# Home\n\nSee [the guide](guides.md).\n", encoding="utf-8")
    result = build(config, tmp_path / "site")
    assert result.returncode != 0 and "guides.md" in result.stderr, result.stderr
