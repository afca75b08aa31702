"""The s2lct generator: capability spec, search rules, templates, the shipped corpus suite (S²LCT, phase 1)."""

from __future__ import annotations

from pathlib import Path

import pytest

from beluga_core.generators.s2lct.capabilities import load_spec
from tests.helpers import run_cli

SPEC, _ = load_spec("builtin:s2lct-sentiment")


# ------------------------------------------------------------------------------------------ the guide and a real run

def _readme_blocks(language: str) -> list[str]:
    """The tested blocks of the guide "Suites from a corpus" (they were the README's)."""
    from tests.helpers import doc_blocks

    return doc_blocks(language, "s2lct", page="guides/suites-from-a-corpus.md")


@pytest.fixture(scope="module")
def s2lct_store(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A tiny IID→T run on CheckList's templates, every model also evaluated on the shipped corpus suite."""
    from helpers import DATA, config_with, run_benchmark

    tmp = tmp_path_factory.mktemp("s2lct")
    config = config_with(DATA / "tiny-sentiment.toml", tmp, replace={
        'scenarios = ["standard", "seen", "test_type"]': 'scenarios = ["standard", "seen", "class"]'},
        append='\n[[tasks.eval_suites]]\nsuite = "builtin:s2lct-sentiment"\ncases_per_group = 6\n')
    store = tmp / "s2lct.duckdb"
    run_benchmark(config, store)
    return store


def test_a_run_puts_templates_beside_real_sentences(s2lct_store: Path, tmp_path: Path,
                                                     capsys: pytest.CaptureFixture[str]) -> None:
    import duckdb

    (sql,) = _readme_blocks("sql")
    con = duckdb.connect(str(s2lct_store), read_only=True)
    try:
        rows = con.execute(sql).fetchall()
        # The IID and seen models are compared at every mapped level; a class fold at its own.
        units = con.execute("""SELECT count(*), count(DISTINCT unit) FROM cross_alignment_cases
                               WHERE side = 'eval' AND config = 'iid'""").fetchone()
    finally:
        con.close()
    assert {(r[0], r[1]) for r in rows} == {("iid", "standard"), ("iid-then-t", "seen")}
    lcs = {r[2] for r in rows}
    assert len(lcs) == 11 and all(r[3] for r in rows)
    assert all(r[5] is not None and 0 <= r[5] <= 1 for r in rows)
    # Template cases of one corpus sentence (LC3: up to 18) are one bootstrap unit.
    assert units is not None and units[1] < units[0]
    code, _out, err = run_cli(capsys, "report", s2lct_store, "--format", "md", "--out", tmp_path)
    assert code == 0, err
    text = (tmp_path / "report.md").read_text()
    assert "## Capabilities across suites" in text and "s2lct-sentiment against sentiment by functionality" in text
