"""The code blocks marked ``tested`` in the README and the documentation site work: the shell commands run, the
README's config plans, and the nine plugin examples of "Extending beluga" (one per kind) pass their kinds' checks;
seven then run together in one small benchmark through the real code path, the generator makes a suite, and the
ranking signal ranks models. Every block tested before the docs moved out of the README is still collected."""

from __future__ import annotations

import gzip
import json
import re
import shlex
import sys
import types
from collections.abc import Iterator
from pathlib import Path

import pytest
from helpers import DOCS, TESTED_FENCE, doc_blocks, doc_pages, query, run_benchmark, run_cli
from toy_model import TOY_DIR

from beluga_core.core.registry import ALL
from beluga_core.data import BUILTIN_DATA

# The tests' toy model (tests/toy_model.py): these runs check behaviour, not accuracy.
TOY = TOY_DIR.as_posix()
EXTENDING = (DOCS / "guides" / "extending.md").read_text(encoding="utf-8")
MODULE = "my_plugins"  # the package name the plugin guide's entry points use
# The tested blocks when the README held them all (27), and the README's config since: none may be lost.
TESTED_BLOCKS = 28


def blocks(language: str) -> list[str]:
    return doc_blocks(language)


@pytest.fixture(scope="module")
def plugins() -> Iterator[types.ModuleType]:
    """The Python blocks of the docs (all in the plugin guide), executed in order as the module ``my_plugins``."""
    module = types.ModuleType(MODULE)
    sys.modules[MODULE] = module
    try:
        for code in blocks("python"):
            exec(compile(code, f"docs/guides/extending.md ({MODULE})", "exec"), module.__dict__)
        yield module
    finally:
        del sys.modules[MODULE]


def test_the_docs_keep_every_tested_block() -> None:
    found = [(path.name, lang, tag) for path in doc_pages()
             for lang, tag, _ in TESTED_FENCE.findall(path.read_text(encoding="utf-8"))]
    assert len(found) >= TESTED_BLOCKS, found
    # Blocks outside the collected pages would run nowhere: every page with one is in the navigation.
    pages = set(doc_pages())
    stray = [p for p in DOCS.rglob("*.md") if p not in pages and TESTED_FENCE.search(p.read_text(encoding="utf-8"))]
    assert stray == []


def test_the_docs_have_a_tested_example_of_every_plugin_kind(plugins: types.ModuleType) -> None:
    assert len(blocks("python")) == 9 and blocks("python") == doc_blocks("python", page="guides/extending.md")
    names = {"LearningWithoutForgetting": "method", "JSInvariance": "loss", "ConfidentEq": "expectation kind",
             "SuiteOnly": "training configuration", "MacroF1Classification": "task",
             "InlineExecutor": "executor", "GradientTimesInput": "attribution", "ShoutOneWord": "generator",
             "Margin": "ranking signal"}
    for cls, kind in names.items():
        ALL[kind].check(getattr(plugins, cls), cls)  # raises, naming the member, if one is missing
    assert set(names.values()) == set(ALL)
    # Every entry point the plugin guide registers names one of the examples.
    for target in re.findall(rf'= "{MODULE}:(\w+)"', EXTENDING):
        assert target in names


def test_the_docs_shell_commands_run_and_the_readme_config_plans(tmp_path: Path, capsys: pytest.CaptureFixture[str],
                                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    commands = [line for block in blocks("sh") for line in block.splitlines() if line.strip()]
    assert commands
    for line in commands:
        argv = shlex.split(line)
        assert argv[0] == "beluga", line
        code, _, err = run_cli(capsys, *argv[1:])
        assert code == 0, f"{line}\n{err}"
    assert (tmp_path / "my-suite.jsonl.gz").exists()
    # The README's config runs on the suite the first command made.
    (config,) = doc_blocks("toml", page="README.md")
    (tmp_path / "my-run.toml").write_text(config, encoding="utf-8")
    code, out, err = run_cli(capsys, "run", tmp_path / "my-run.toml", "--dry-run")
    assert code == 0, err
    assert "phenomenon" in out and "l2" in out, out


def test_the_guide_generator_makes_a_suite(plugins: types.ModuleType, tmp_path: Path,
                                           capsys: pytest.CaptureFixture[str]) -> None:
    from beluga_core.data.suite.suite_files import load_suite

    out = tmp_path / "shout.jsonl"
    code, _, err = run_cli(capsys, "suite", "generate", f"{MODULE}:ShoutOneWord", "--source", "builtin:sst2#val",
                           "--limit", "40", "--option", "min_length=4", "--out", out)
    assert code == 0, err
    suite = load_suite(out)
    mft = [c for c in suite.cases if c.test_type == "MFT"]
    assert len(mft) == 40 and len(suite.cases) == 80 and suite.header.levels == ["family", "perturbation"]
    for case in mft:
        word = case.meta["note"]["word"]
        assert len(word) >= 4 and word.upper() in str(case.inputs[0]).split()


def test_the_guide_signal_ranks_models(plugins: types.ModuleType) -> None:
    import numpy as np

    from beluga_core.analysis.ranking.rank import Candidate, GroupData, rank_groups, signal_specs
    from beluga_core.contracts.signals import ProbeCase

    # Three models whose margin on every case grows with their true score: the signal ranks them all right.
    cases = [[ProbeCase(f"c{j}", "MFT", ("x",), "pass", (1,), (np.array([0.5 - d, 0.5 + d]),)) for j in range(6)]
             for d in (0.05, 0.2, 0.4)]
    group = GroupData("g", [Candidate(f"m{i}", f"m{i}", t, 10) for i, t in enumerate((0.3, 0.6, 0.9))],
                      [f"c{j}" for j in range(6)], {"": cases})
    specs, _ = signal_specs([f"{MODULE}:Margin"], [], {})
    ranking = rank_groups("level", [group], specs, n=4, bootstrap=20)
    assert ranking.summaries[f"{MODULE}:Margin"].accuracy == 1.0


def _suite_with_the_plugins(path: Path) -> Path:
    """builtin:sst2-phenomena with its MFT cases judged by the plugin guide's expectation kind and its INV cases
    trained with the plugin guide's loss."""
    with gzip.open(BUILTIN_DATA / "suites" / "sst2-phenomena.jsonl.gz", "rt", encoding="utf-8") as f:
        lines = f.read().splitlines()
    header, cases = json.loads(lines[0]), [json.loads(line) for line in lines[1:]]
    header.update(name="readme-phenomena", losses=["mft", f"{MODULE}:JSInvariance"])
    for case in cases:
        if case["test_type"] == "MFT":
            case["expectation"] = {"kind": f"{MODULE}:ConfidentEq", "min_prob": 0.55}
        else:
            case["loss"] = f"{MODULE}:JSInvariance"
    path.write_text("\n".join(json.dumps(r) for r in [header, *cases]) + "\n", encoding="utf-8")
    return path


@pytest.mark.slow
def test_the_seven_examples_run_together(plugins: types.ModuleType, tmp_path: Path) -> None:
    suite = _suite_with_the_plugins(tmp_path / "suite.jsonl")
    config = tmp_path / "readme.toml"
    config.write_text(f"""
name = "readme-plugins"
configurations = ["iid", "{MODULE}:SuiteOnly"]
methods = ["{MODULE}:LearningWithoutForgetting"]
scenarios = ["standard", "seen"]
[model]
name = "{TOY}"
max_length = 64
config_overrides = {{ num_hidden_layers = 2 }}
[[tasks]]
name = "{MODULE}:MacroF1Classification"
suite = "{suite}"
iid = "builtin:sst2"
[sizes]
iid_train = 64
iid_test = 32
suite_train_per_group = 4
suite_val_per_group = 1
suite_test_per_group = 4
[training]
learning_rate = 5e-5
batch_size = 16
epochs = 1
[attributions]
methods = ["{MODULE}:GradientTimesInput", "ig"]
cap_per_fold = 3
[executor]
name = "{MODULE}:InlineExecutor"
""", encoding="utf-8")
    store = tmp_path / "readme.duckdb"
    run_benchmark(config, store)
    rows = query(store, "SELECT config, method, scenario, iid_metric, g FROM g_scores ORDER BY ALL")
    assert [r[:4] for r in rows] == [
        ("iid", "vanilla", "standard", "macro_f1"),
        (f"{MODULE}:SuiteOnly", f"{MODULE}:LearningWithoutForgetting", "seen", "macro_f1")]
    assert all(0 <= g <= 1 for *_, g in rows)
    # The suite-only model started from the pretrained encoder, not from the IID model, and trained on suite
    # cases with the plugin guide's loss among them; the plugin guide's expectation kind judged the MFT cases.
    started = query(store, "SELECT parent_model_id, n_train_iid, n_train_suite FROM models "
                           "WHERE config = ?", [f"{MODULE}:SuiteOnly"])
    assert started == [(None, 0, started[0][2])] and started[0][2] > 0
    outcomes = dict(query(store, "SELECT c.test_type, count(*) FILTER (WHERE o.outcome <> 'skip') FROM outcomes o "
                                 "JOIN cases c USING (suite, case_id) GROUP BY 1"))
    assert outcomes["MFT"] > 0 and outcomes["INV"] > 0
    # The plugin guide's attribution method scored the inputs of both models, as the built-in ig did.
    attributed = dict(query(store, "SELECT method, count(*) FROM attributions GROUP BY 1"))
    assert attributed == {f"{MODULE}:GradientTimesInput": 6, "ig": 6}
