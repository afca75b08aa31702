"""Token attributions inside a run: each fold's rows and cap, equality with the same computed afterwards by
``beluga explain``, explain's HTML, the store check and failing words, job ids, and the README's attribution
blocks (the estimators' known answers, word aggregation, offsets and determinism:
tests/unit/attributions/test_attributions.py)."""

from __future__ import annotations

import shlex
from pathlib import Path

import numpy as np
import pytest
from helpers import DATA, config_with, doc_blocks, query, run_benchmark, run_cli

from beluga_core.attributions.compute import select_items
from beluga_core.config.load import attribution_options, load_config

# ------------------------------------------------------------------------------------------ known answers


# ------------------------------------------------------------------------------------------ devices


# ------------------------------------------------------------------------------------------ inside a run

RUN = """
[attributions]
methods = ["ig", "occlusion", "lime", "shap"]
cap_per_fold = 5
[attributions.options.lime]
samples = 64
[attributions.options.shap]
samples = 64
"""


@pytest.fixture(scope="module")
def attribution_store(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path, str]:
    tmp = tmp_path_factory.mktemp("attributions")
    (tmp / "runs").mkdir()
    config = config_with(DATA / "tiny-sentiment.toml", tmp, append=RUN)
    store = tmp / "runs" / "attributions.duckdb"
    return config, store, run_benchmark(config, store)


def test_fold_rows_match_their_case_list_and_cap(attribution_store: tuple[Path, Path, str]) -> None:
    from beluga_core.planning.plan import build_plan, make_task

    config, store, _ = attribution_store
    cfg = load_config(config).with_store_path(str(store))
    plan = build_plan(cfg, config.resolve())
    (tp,) = plan.tasks
    task = make_task(tp.spec, tp.suite)
    stored = query(store, """SELECT a.model_id, a.case_id, a.input_idx, a.method FROM attributions a""")
    methods = {r[3] for r in stored}
    assert methods == {"ig", "occlusion", "lime", "shap"}
    for job in tp.jobs:
        outcomes = dict(query(store, "SELECT case_id, outcome FROM outcomes WHERE model_id = ?", [job.id]))
        expected = select_items([tp.suite.case(c) for c in job.fold.eval_ids], outcomes, "sentiment", task,
                                which="heldout_test", inputs="first", cap=5,
                                seed_key=f"{cfg.split.seed}|attributions|{job.id}")
        for method in methods:
            got = sorted((c, i) for m, c, i, me in stored if m == job.id and me == method)
            assert got == sorted((it.case_id, it.input_idx) for it in expected), (job.scenario, method)
        assert len(expected) == min(5, len(job.fold.eval_ids))


def test_in_run_attributions_equal_explain_afterwards(attribution_store: tuple[Path, Path, str]) -> None:
    from beluga_core.stored_models.explain import explain_store

    config, store, _ = attribution_store
    cfg = load_config(config)
    rows = query(store, """SELECT a.case_id, a.input_idx, a.method, a.scores FROM attributions a
                           JOIN models m USING (model_id) WHERE m.config = 'iid' ORDER BY ALL""")
    case_ids = sorted({r[0] for r in rows})
    options = {m: attribution_options(cfg, m, run=True) for m in cfg.attributions.methods}
    explained = explain_store(store, ["iid/vanilla"], case_ids=case_ids, group=None, methods=list(options),
                              options=options, max_inputs=100)
    assert explained[0].source == "computed now"
    # explain shows words; compare at the word level with the stored rows' words.
    words = query(store, """SELECT w.case_id, w.input_idx, w.method, list(w.score ORDER BY w.first_token)
                            FROM attribution_words w JOIN models m USING (model_id) WHERE m.config = 'iid'
                            GROUP BY ALL ORDER BY ALL""")
    recomputed = {(x.case_id, x.input_idx, x.method): [s for _, s, _ in x.words] for x in explained[0].inputs}
    assert len(words) == len(recomputed) == len(rows)
    for case_id, idx, method, scores in words:
        assert np.allclose(scores, recomputed[(case_id, idx, method)], atol=1e-5), (case_id, method)


def test_explain_renders_html_and_says_when_a_fold_has_nothing(
        attribution_store: tuple[Path, Path, str], tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    _, store, _ = attribution_store
    (case_id,) = query(store, """SELECT case_id FROM attributions a JOIN models m USING (model_id)
                                 WHERE m.config = 'iid' LIMIT 1""")[0]
    code, out, err = run_cli(capsys, "explain", store, "--case", case_id, "--model", "iid/vanilla",
                             "--model", "iid-then-t/vanilla@test_type=DIR", "--out", tmp_path)
    assert code == 0, err
    page = (tmp_path / "explain.html").read_text()
    assert "iid/vanilla@standard#42" in page and "<span class=\"w" in page and "predicted <b>" in page
    text = " ".join(out.split())
    assert "attributions computed now" in text
    assert "has no stored attributions for these cases" in text or "stored by the run" in text
    code, _, err = run_cli(capsys, "explain", store, "--case", "no-such-case")
    assert code == 2 and "no case 'no-such-case'" in " ".join(err.split())


def test_a_run_with_attributions_passes_the_store_check_and_reports_failing_words(
        attribution_store: tuple[Path, Path, str], tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    config, store, _ = attribution_store
    assert run_cli(capsys, "store", "check", store)[0] == 0
    code, out, _ = run_cli(capsys, "run", config, "--store", store, "--dry-run")
    assert code == 0 and "[attributions] ig, occlusion, lime, shap: 5–5 inputs per model" in " ".join(out.split())
    code, _, _ = run_cli(capsys, "report", store, "--format", "md", "--out", tmp_path)
    assert code == 0
    report = (tmp_path / "report.md").read_text()
    if query(store, "SELECT count(*) FROM failing_words")[0][0]:
        assert "## Attributions of failing groups" in report


def test_attributions_leave_job_ids_alone_and_a_rerun_names_models_without_them(
        sentiment_store: tuple[Path, str], tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    import shutil

    from beluga_core.planning.plan import build_plan

    config = config_with(DATA / "tiny-sentiment.toml", tmp_path, append=RUN)

    def job_ids(path: Path) -> list[str]:
        return sorted(j.id for tp in build_plan(load_config(path), path.resolve()).tasks for j in tp.jobs)

    assert job_ids(config) == job_ids(DATA / "tiny-sentiment.toml")
    store = tmp_path / "copy.duckdb"
    shutil.copy(sentiment_store[0], store)     # trained without [attributions]
    code, out, err = run_cli(capsys, "run", config, "--store", store)
    out = " ".join(out.split())
    n = query(store, "SELECT count(*) FROM models WHERE status = 'done' AND config <> 'external'")[0][0]
    assert code == 0, err
    assert "running 0" in out and f"{n} of the {n} models already in the store have no stored attributions" in out
    assert "0 of them kept their weights" in out    # the copy has no weights cache beside it
    assert query(store, "SELECT count(*) FROM attributions")[0][0] == 0


# ------------------------------------------------------------------------------------------ the guide

def _readme_blocks(language: str) -> list[str]:
    """The tested blocks of the attributions guide (they were the README's)."""
    return doc_blocks(language, "attributions", page="guides/attributions.md")


def test_the_readme_attribution_blocks_run(attribution_store: tuple[Path, Path, str], tmp_path: Path,
                                           capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch) -> None:
    _, store, _ = attribution_store
    (toml,) = _readme_blocks("toml")
    path = config_with(DATA / "tiny-sentiment.toml", tmp_path, append=toml)
    assert load_config(path).attributions.cases == "failing"
    monkeypatch.chdir(store.parent.parent)
    (commands,) = _readme_blocks("sh")
    for line in filter(str.strip, commands.splitlines()):
        argv = shlex.split(line)
        code, _, err = run_cli(capsys, *argv[1:])
        assert code == 0, f"{line}\n{err}"
    assert (store.parent.parent / "explain-iid" / "explain.html").exists()
    assert (store.parent.parent / "explain-two" / "explain.html").exists()
