"""The s2lct generator: capability spec, search rules, templates, the shipped corpus suite (S²LCT, phase 1)."""

from __future__ import annotations

import gzip
import hashlib
import json
import random
from pathlib import Path

import pytest
from helpers import REPO

from beluga_core.contracts.generators import Source, SourceInstance
from beluga_core.core.errors import BelugaError
from beluga_core.data.suite.suite_files import load_suite, resolve_suite_path
from beluga_core.generators.generation_sources import read_source
from beluga_core.generators.s2lct.capabilities import SearchRule, load_spec, matcher, transform
from beluga_core.generators.s2lct.lexicon import Lexicon
from beluga_core.generators.s2lct.s2lct_generator import S2LCT
from beluga_core.generators.suite_build import generate
from tests.helpers import run_cli

SPEC, _ = load_spec("builtin:s2lct-sentiment")
LC = {c.id: c for c in SPEC.lc}

# Ten words: polarity × part of speech, as the lexicon's classes hold them.
TOY = Lexicon(
    "toy",
    {("positive", "adj"): frozenset({"great", "fine"}), ("negative", "adj"): frozenset({"awful", "dull"}),
     ("neutral", "adj"): frozenset({"blue", "long"}), ("neutral", "noun"): frozenset({"film", "story"}),
     ("negative", "noun"): frozenset({"mess"}), ("positive", "verb"): frozenset({"love"})},
    {w: frozenset({p}) for (p, _), ws in [
        (("positive", "adj"), {"great", "fine", "love"}), (("negative", "adj"), {"awful", "dull", "mess"}),
        (("neutral", "adj"), {"blue", "long", "film", "story"})] for w in ws},
    {"great": "a", "fine": "a", "awful": "a", "dull": "a", "blue": "a", "long": "a", "film": "n", "story": "n",
     "mess": "n", "love": "v"},
)

CORPUS = [  # (sentence, corpus label)
    ("A blue film .", "neutral"),                                        # 0: 3 tokens, neutral adj + noun
    ("A long blue story about a film that goes on and on .", "neutral"),  # 1: 12 tokens
    ("This is a great film .", "positive"),                              # 2
    ("This is not a great film .", "negative"),                          # 3: negated copula
    ("That is an awful mess", "negative"),                               # 4
    ("These are dull .", "negative"),                                    # 5
    ("Those are n't dull at all", "positive"),                           # 6: negated copula (SST's "n't")
    ("I love the long story", "positive"),                               # 7
    ("a blue story , fine", "neutral"),                                  # 8: neutral label, positive adj
    ("Thisis blue .", "neutral"),                                        # 9: no copula
]


def select(*rules: SearchRule) -> list[int]:
    match = matcher(rules, TOY)
    return [i for i, (s, label) in enumerate(CORPUS) if match(s, label)]


def test_search_rules_select_exactly_the_hand_checked_sentences() -> None:
    # Length: a final "." is not a token; "<4" keeps sentences 0 and 5 (3 tokens + "."), and 9 (2 tokens).
    assert select(SearchRule(length="<4")) == [0, 5, 9]
    assert select(SearchRule(length="<=5")) == [0, 2, 4, 5, 7, 8, 9]
    # include: each class ANDed, at least one word of it (2 and 3 have a neutral noun but no neutral adjective).
    assert select(SearchRule(include=["neutral adjs", "neutral nouns"])) == [0, 1, 7, 8]
    # exclude: any word of any class drops the sentence.
    assert select(SearchRule(include=["neutral adjs", "neutral nouns"],
                             exclude=["positive adjs", "negative adjs"])) == [0, 1, 7]
    assert select(SearchRule(include=["neutral adjs", "neutral nouns"], exclude=["positive adjs"],
                             label="neutral")) == [0, 1]
    # LC1 as shipped, on the toy: short, neutral adj and noun, no sentiment adj/noun, neutral label.
    assert select(*LC["LC1"].search) == [0]
    # Rules are ORed.
    assert select(SearchRule(label="positive", length="<6"), SearchRule(include=["negative nouns"])) == [2, 4, 7]
    # The demonstrative copula and its negation guard ("not" or SST's "n't" right after it).
    demo = "^(This|That|These|Those) (is|are)"
    assert select(SearchRule(regex=demo)) == [2, 3, 4, 5, 6]
    assert select(SearchRule(regex=demo, not_negated=True)) == [2, 4, 5]
    assert select(*LC["LC4"].search) == [4, 5]


def test_spec_errors_name_the_field() -> None:
    with pytest.raises(ValueError, match="length"):
        SearchRule(length="ten")
    with pytest.raises(ValueError, match="not_negated needs a regex"):
        SearchRule(not_negated=True)
    with pytest.raises(ValueError, match="happy things"):
        SearchRule(include=["happy things"])


def test_templates_give_the_exact_strings_and_counts() -> None:
    rng = random.Random(0)
    seed = "A fine film ."
    lc3 = list(transform(LC["LC3"], seed, "positive", rng, {}))
    assert len(lc3) == 18 and {m.label for m in lc3} == {"negative"}
    assert lc3[0].text == 'Previously, I used to like it saying that "A fine film .", but now I don\'t like it.'
    assert lc3[-1].text == 'I liked it much as to say that "A fine film .", on the other hand now I hate it.'
    lc3n = list(transform(LC["LC3"], seed, "negative", rng, {}))
    assert len(lc3n) == 9 and {m.label for m in lc3n} == {"positive"}
    opposite = [("o1", "Bad ."), ("o2", "Dull ."), ("o3", "Awful ."), ("o4", "Weak .")]
    lc8 = list(transform(LC["LC8"], seed, "positive", random.Random(1), {"opposite": opposite}))
    assert len(lc8) == 12 and {m.label for m in lc8} == {"positive"}
    drawn = sorted({m.template.split("[")[1].split("]")[0] for m in lc8})
    assert len(drawn) == 3 and set(drawn) <= {"o1", "o2", "o3", "o4"}
    first = lc8[0]
    pooled = dict(opposite)[first.template.split("[")[1].split("]")[0]]
    assert first.text == f'Some people think that "{pooled}", but I think that "A fine film ."'
    lc9 = list(transform(LC["LC9"], seed, "negative", rng, {}))
    assert [m.text for m in lc9] == ['Do I think that "A fine film ."? yes', 'Do I agree that "A fine film ."? yes']
    assert {m.label for m in lc9} == {"negative"}
    assert [m.label for m in transform(LC["LC11"], seed, "negative", rng, {})] == [("positive", "neutral")] * 2
    assert list(transform(LC["LC11"], seed, "positive", rng, {})) == []      # no block for positive seeds
    lc4 = list(transform(LC["LC4"], "These are dull .", "negative", rng, {}))
    assert [(m.text, m.label) for m in lc4] == [("These are not dull .", ("positive", "neutral"))]
    lc6 = list(transform(LC["LC6"], "Dull .", "negative", rng, {}))
    assert [m.text for m in lc6] == [
        'I agreed that "Dull .", but it wasn\'t', 'I agreed that "Dull .", but I didn\'t',
        'I thought that "Dull .", but it wasn\'t', 'I thought that "Dull .", but I didn\'t']
    neutral = [("n1", "It is a film ."), ("n2", "A story ."), ("n3", "Blue .")]
    lc7 = list(transform(LC["LC7"], "Fine .", "positive", rng, {"neutral": neutral}))
    assert len(lc7) == 9 and lc7[0].text.startswith("I wouldn't say, given ") and lc7[0].text.endswith(", Fine .")


def _toy_source() -> Source:
    instances = tuple(SourceInstance(f"s{i}", s, label) for i, (s, label) in enumerate(CORPUS))
    return Source("toy", "text", instances, ("negative", "neutral", "positive"))


def test_generator_cases_groups_expectations_and_determinism(monkeypatch: pytest.MonkeyPatch) -> None:
    import beluga_core.generators.s2lct.lexicon as lexicon

    monkeypatch.setattr(lexicon, "load_lexicon", lambda spec="vader": TOY)

    def made(seed: int) -> bytes:
        from beluga_core.data.suite.suite_files import dump_records

        out = generate(_toy_source(), [("s2lct", S2LCT({"seeds": 0}))], seed=seed, name="toy")
        return "\n".join(dump_records(out.header, out.cases)).encode()

    a, b = made(0), made(0)
    assert a == b
    out = generate(_toy_source(), [("s2lct", S2LCT({"seeds": 0}))], seed=0, name="toy")
    h = out.header
    assert h.levels == ["capability", "lc", "origin"] and h.scoring_level == "lc" and h.split_by == "split_key"
    assert h.maps_from == "lc" and h.maps_to is not None
    assert h.maps_to["functionality"][LC["LC4"].name] == "simple negations: not negative"
    lc4 = [c for c in out.cases if c.groups["lc"] == LC["LC4"].name]
    assert sorted(c.inputs[0] for c in lc4) == ["That is not an awful mess", "These are not dull ."]
    assert all(c.label is None and c.expectation.kind == "not_eq" and c.expectation.model_dump()["value"] == 0
               for c in lc4)
    lc1 = [c for c in out.cases if c.groups["lc"] == LC["LC1"].name]
    assert [(c.inputs[0], c.label, c.groups["origin"], c.meta["split_key"]) for c in lc1] == [
        ("A blue film .", "neutral", "seed", "s0")]
    assert {c.test_type for c in out.cases} == {"MFT"}
    # Every case of one corpus sentence shares its split key (LC3, LC8, LC9 of sentence 2 among them).
    of_s2 = {c.groups["lc"] for c in out.cases if c.meta["split_key"] == "s2"}
    assert {LC["LC3"].name, LC["LC8"].name, LC["LC9"].name, LC["LC10"].name} <= of_s2


def test_generator_refuses_a_source_without_the_spec_labels_and_bad_options() -> None:
    with pytest.raises(BelugaError, match="builtin:sst3"):
        generate(read_source("builtin:sst2#val"), [("s2lct", S2LCT())], seed=0, name="x", limit=5)
    with pytest.raises(ValueError, match="expand needs parser, grammar, mlm"):
        S2LCT({"expand": True})
    with pytest.raises(ValueError, match="LC12"):
        S2LCT({"only": ["LC12"]})


def test_a_spec_file_in_json_and_its_errors(tmp_path: Path) -> None:
    spec = {"name": "mine", "label_space": ["negative", "positive"],
            "lc": [{"id": "A", "name": "short positive", "capability": "Vocabulary",
                    "search": [{"length": "<5", "label": "positive"}], "label": "positive"}]}
    good = tmp_path / "mine.json"
    good.write_text(json.dumps(spec))
    loaded, _ = load_spec(good)
    assert loaded.lc[0].search[0].length == "<5"
    spec["lc"][0]["label"] = "neutral"
    bad = tmp_path / "bad.json"
    bad.write_text(json.dumps(spec))
    with pytest.raises(BelugaError, match="not in the label space") as err:
        load_spec(bad)
    assert str(bad) in str(err.value)


def test_shipped_corpus_suite_regenerates_byte_for_byte(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    from tools.data import build_s2lct_suite as build

    out = tmp_path / "s2lct-sentiment.jsonl.gz"
    code, _printed, err = run_cli(capsys, *build.COMMAND, "--out", out)
    assert code == 0, err
    shipped = resolve_suite_path("builtin:s2lct-sentiment")
    fresh, kept = gzip.decompress(out.read_bytes()), gzip.decompress(shipped.read_bytes())
    assert hashlib.sha256(fresh).hexdigest() == hashlib.sha256(kept).hexdigest()
    suite = load_suite("builtin:s2lct-sentiment")
    assert suite.header.label_space == ["negative", "neutral", "positive"]
    assert {c.groups["origin"] for c in suite.cases} == {"seed"}
    assert len({c.groups["lc"] for c in suite.cases}) == 11


def test_expansion_end_to_end_with_supplied_parser_grammar_and_masked_lm(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """expand = true with a parse file, a grammar file and a small masked LM saved locally: the real fill path, the
    lexicon's tag and neutrality checks and LC1's search rule as the recheck."""
    import torch
    from transformers import BertConfig, BertForMaskedLM, BertTokenizer

    import beluga_core.generators.s2lct.lexicon as lexicon

    monkeypatch.setattr(lexicon, "load_lexicon", lambda spec="vader": TOY)
    vocab = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", ".", "a", "blue", "long", "great", "awful", "film",
             "story", "the"]
    (tmp_path / "vocab").mkdir()
    (tmp_path / "vocab" / "vocab.txt").write_text("\n".join(vocab) + "\n")
    mlm = tmp_path / "mlm"
    BertTokenizer.from_pretrained(str(tmp_path / "vocab")).save_pretrained(str(mlm))
    torch.manual_seed(0)
    BertForMaskedLM(BertConfig(vocab_size=len(vocab), hidden_size=32, num_hidden_layers=2, num_attention_heads=2,
                               intermediate_size=64, max_position_embeddings=64)).save_pretrained(str(mlm))
    trees = tmp_path / "seeds.mrg"
    trees.write_text("(S (NP (DT A) (JJ blue) (NN film)) (. .))\n")
    grammar = tmp_path / "grammar.json"
    grammar.write_text(json.dumps({"NP": [[["DT", "JJ", "JJ", "NN"], 0.5], [["DT", "JJ", "NN", "SBAR"], 0.5]]}))
    options = {"seeds": 0, "only": ["LC1"], "expand": True, "parser": f"trees:{trees}", "grammar": str(grammar),
               "mlm": str(mlm)}
    out = generate(_toy_source(), [("s2lct", S2LCT(options))], seed=0, name="toy")
    expanded = [c for c in out.cases if c.groups["origin"] == "expanded"]
    # The one masked sentence puts a JJ beside "blue"; of the vocabulary only "blue" and "long" are neutral
    # adjectives ("great", "awful" are not neutral; the rest are no JJ), and both keep LC1's search rule.
    texts = sorted(c.inputs[0] for c in expanded)
    assert texts and set(texts) <= {"A long blue film .", "A blue long film .", "A blue blue film ."}
    assert all(c.label == "neutral" and c.meta["split_key"] == "s0" for c in expanded)
    note = expanded[0].meta["note"]
    assert (note["cfg_from"], note["cfg_to"], note["seed"]) == ("NP -> DT JJ NN", "NP -> DT JJ JJ NN",
                                                                  "A blue film .")
    assert ("s2lct", "expansions", "LC1", float(len(expanded))) in out.reports
    again = generate(_toy_source(), [("s2lct", S2LCT(options))], seed=0, name="toy")
    assert [c.id for c in again.cases] == [c.id for c in out.cases]


def test_cli_dry_run_counts_per_capability_and_suite_info(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, printed, err = run_cli(capsys, "suite", "generate", "s2lct", "--source", "builtin:sst3#heldout",
                                 "--dry-run")
    assert code == 0, err
    text = " ".join(printed.split())
    for capability in ("Negation", "SRL", "Temporal", "Vocabulary"):
        assert capability in text
    assert "sentences found" in text and "origin = seed" in text and "nothing written" in text
    out = tmp_path / "mine.jsonl.gz"
    code, printed, err = run_cli(capsys, "suite", "generate", "s2lct", "--source", "builtin:sst3#heldout",
                                 "--option", "seeds=3", "--option", 'only=["LC4","LC9"]', "--out", out)
    assert code == 0, err
    code, printed, err = run_cli(capsys, "suite", "info", out)
    assert code == 0, err
    assert "capability" in printed and "Negated negative" in " ".join(printed.split())
    code, printed, err = run_cli(capsys, "suite", "generate", "s2lct", "--source", "builtin:sst3#heldout",
                                 "--option", "spec=nowhere.toml", "--dry-run")
    assert code == 2 and "nowhere.toml" in err


def test_holding_out_origin_is_refused_at_dry_run(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    config = tmp_path / "origin.toml"
    config.write_text("""name = "origin"
seeds = [1]
configurations = ["iid", "iid-then-t"]
methods = ["vanilla"]
scenarios = ["standard", "seen", "origin"]
[store]
path = "x.duckdb"
[model]
name = "embedded:minilm"
[[tasks]]
name = "sentiment"
suite = "builtin:s2lct-sentiment"
iid = "builtin:sst2"
""")
    code, _printed, err = run_cli(capsys, "run", config, "--dry-run")
    assert code == 2
    message = " ".join(err.split())
    assert "origin 'seed'" in message and "expand=true" in message and "nothing to train on" in message
    assert not (tmp_path / "x.duckdb").exists()


# ------------------------------------------------------------------------------------------ the guide and a real run

def _readme_blocks(language: str) -> list[str]:
    """The tested blocks of the guide "Suites from a corpus" (they were the README's)."""
    from tests.helpers import doc_blocks

    return doc_blocks(language, "s2lct", page="guides/suites-from-a-corpus.md")


def test_the_readme_spec_and_commands_work(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                           capsys: pytest.CaptureFixture[str]) -> None:
    import shlex
    import shutil

    (spec_text,) = _readme_blocks("toml")
    spec = tmp_path / "my-capabilities.toml"
    spec.write_text(spec_text)
    loaded, _ = load_spec(spec)
    assert [c.id for c in loaded.lc] == ["NEG", "QYES"]
    code, printed, err = run_cli(capsys, "suite", "generate", "s2lct", "--source", "builtin:sst3#heldout",
                                 "--option", f"spec={spec}", "--option", "seeds=5", "--dry-run")
    assert code == 0 and "Negation" in printed and "SRL" in printed, err
    (commands,) = _readme_blocks("sh")
    (tmp_path / "runs").mkdir()
    (tmp_path / "benchmarks").mkdir()
    for name in ("quick-s2lct.toml", "quick-s2lct-reverse.toml"):
        shutil.copy(REPO / "benchmarks" / name, tmp_path / "benchmarks")
    monkeypatch.chdir(tmp_path)
    for line in filter(str.strip, commands.splitlines()):
        code, out, err = run_cli(capsys, *shlex.split(line)[1:])
        assert code == 0, f"{line}\n{out[-2000:]}\n{err}"
    suite = load_suite(tmp_path / "runs" / "my-capabilities.jsonl.gz")
    assert {c.meta["note"]["lc"] for c in suite.cases} == {"LC4", "LC9"}
    assert not (tmp_path / "runs" / "quick-s2lct.duckdb").exists()


def test_expansion_flips_pair_each_expansion_with_its_seed(tmp_path: Path) -> None:
    """Seeds and expansions by hand: two seeds of one capability, three expansions; pass-to-fail per model."""
    from helpers import query

    from beluga_core.data.suite.suite_files import case_json
    from beluga_core.data.suite.suite_schema import Case
    from beluga_core.execution.results import JobResult, ModelRecord, Outcomes
    from beluga_core.store.rows import CaseRow, SuiteRow
    from beluga_core.store.writer import StoreWriter

    def case(cid: str, text: str, origin: str, seed: str | None = None, lc: str = "L1") -> Case:
        return Case(id=cid, groups={"capability": "C", "lc": lc, "origin": origin}, test_type="MFT", loss="mft",
                    inputs=[text], label="neutral", expectation={"kind": "eq", "target": "label"},
                    meta={"split_key": text, **({"note": {"seed": seed}} if seed else {})})

    cases = [case("s1", "Or both .", "seed"), case("s2", "A film .", "seed"),
             case("e1", "Or both ways .", "expanded", "Or both ."), case("e2", "Or both things .", "expanded",
                                                                         "Or both ."),
             case("e3", "A blue film .", "expanded", "A film ."),
             # Same text as a seed but another capability: not its expansion.
             case("x1", "A long film .", "expanded", "A film .", lc="L2")]
    writer = StoreWriter(tmp_path / "s.duckdb")
    writer.ensure_suite(SuiteRow("corpus", ("capability", "lc", "origin"), "lc", "text",
                                 ("negative", "neutral", "positive")),
                        [CaseRow(c.id, "MFT", dict(c.groups), "1") for c in cases])
    writer.record_case_specs("corpus", [(c.id, case_json(c)) for c in cases])
    outcomes = {"s1": "pass", "s2": "fail", "e1": "fail", "e2": "pass", "e3": "pass", "x1": "fail"}
    record = ModelRecord(model_id="m1", task="sentiment", suite="corpus", model_name="m", config="iid",
                         method="vanilla", scenario="standard", seed=1, split_seed=1)
    writer.commit(JobResult(record, Outcomes.of(list(outcomes), list(outcomes.values())), []))
    store = tmp_path / "s.duckdb"
    assert query(store, "SELECT case_id, seed_case_id FROM seed_expansions ORDER BY case_id") == [
        ("e1", "s1"), ("e2", "s1"), ("e3", "s2")]
    assert query(store, "SELECT case_id, flip FROM expansion_flips ORDER BY case_id") == [
        ("e1", "pass_to_fail"), ("e2", "same"), ("e3", "fail_to_pass")]
    (row,) = query(store, """SELECT scoring_group, n_seeds, seed_fail_rate, n_expansions, n_pass_to_fail,
                                    n_fail_to_pass, expansion_fail_rate FROM expansion_summary""")
    assert row == ("L1", 2, 0.5, 3, 1, 1, pytest.approx(1 / 3))
