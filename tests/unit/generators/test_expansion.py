"""S²LCT / ALiCT Phase 2 (``beluga_core.generators.s2lct.expansion``), offline: given trees, toy grammars, stub fillers
and a tiny randomly initialised BERT.

Known answers: Algorithm 1 on the S²LCT paper's running example, and the fill validation of
the paper's six suggestions (made-up words, tags and polarities with exactly "ways" and "things" NNS and
neutral, as in the paper's Figure 2) plus a "length < 10" recheck that drops too-long expansions.
"""

from __future__ import annotations

import itertools
import json
import math
import random
import sys
import types
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pytest

nltk = pytest.importorskip("nltk")

from beluga_core.core.errors import BelugaError  # noqa: E402
from beluga_core.generators.s2lct.expansion import (  # noqa: E402
    Expanded,
    MaskedLMFiller,
    Parser,
    TreeNotFound,
    TreesParser,
    expand_seed,
    load_parser,
    validate_fills,
)
from beluga_core.generators.s2lct.grammar import (  # noqa: E402
    MASK,
    WORD_LEVEL_TAGS,
    Masked,
    ReferenceGrammar,
    base_label,
    load_grammar,
    masked_expansions,
    read_bracketed_trees,
)

T = nltk.Tree.fromstring
RUNNING = "(FRAG (CC Or) (NP (DT both)) (. .))"


def short(sentence: str) -> bool:
    """The LC1 search rule's length condition: fewer than 10 tokens, a final "." not counted."""
    tokens = sentence.split()
    return len(tokens) - (tokens[-1:] == ["."]) < 10


def mrules(grammar: ReferenceGrammar) -> dict[str, dict[tuple[str, ...], float]]:
    return {lhs: dict(entries) for lhs, entries in grammar.rules.items()}


# ---------------------------------------------------------------------------------------------------------
# Algorithm 1


def test_running_example_gives_one_masked_sentence() -> None:
    """§3.5 item 4: NP → DT NNS inserts an NNS mask; NP → DT NN NN S adds the clause symbol S: rejected."""
    grammar = ReferenceGrammar({"NP": [(("DT", "NNS"), 0.5), (("DT", "NN", "NN", "S"), 0.5)]})
    out = masked_expansions(T(RUNNING), grammar, random.Random(0))
    assert out == [Masked(tokens=("Or", "both", MASK, "."), masks=((2, "NNS"),), cfg_from="NP -> DT",
                          cfg_to="NP -> DT NNS", prob=0.5)]
    assert out[0].text == "Or both {mask} ."
    assert out[0].fill(["ways"]) == ("Or", "both", "ways", ".")


def test_restrictions_phrase_punctuation_and_length() -> None:
    grammar = ReferenceGrammar({"NP": [
        (("DT", "NNS"), 0.2),          # kept
        (("DT", "ADJP"), 0.2),         # phrase symbol added
        (("DT", ","), 0.2),            # punctuation is not maskable
        (("DT", "-NONE-"), 0.1),       # nor an empty element
        (("DT",), 0.1),                # not longer
        (("NN", "NNS"), 0.1),          # DT not a subsequence
        (("JJ", "DT", "RB"), 0.1),     # two masks, one before and one after
    ]})
    out = masked_expansions(T(RUNNING), grammar, random.Random(0))
    assert [(m.text, m.masks) for m in out] == [("Or both {mask} .", ((2, "NNS"),)),
                                                ("Or {mask} both {mask} .", ((1, "JJ"), (3, "RB")))]


def test_extra_copy_of_a_seed_phrase_symbol_is_not_a_mask() -> None:
    """ALiCT would insert a "{mask:PP}"; here only word-level tags become masks."""
    tree = T("(S (NP (NP (DT the) (NN dog)) (PP (IN in) (NP (NN town)))) (VP (VBD ran)))")
    grammar = ReferenceGrammar({"NP": [(("NP", "PP", "PP"), 0.5), (("NP", "PP", "RB"), 0.1)]})
    out = masked_expansions(tree, grammar, random.Random(0))
    assert [m.cfg_to for m in out] == ["NP -> NP PP RB"]
    assert out[0].tokens == ("the", "dog", "in", "town", MASK, "ran")


def test_top_per_production_ranked_by_probability_then_rhs() -> None:
    tags = ["JJ", "NN", "NNS", "RB", "CD", "VBG", "PRP"]
    probs = [0.05, 0.3, 0.2, 0.1, 0.1, 0.02, 0.01]
    grammar = ReferenceGrammar({"NP": [(("DT", t), p) for t, p in zip(tags, probs, strict=True)]})
    out = masked_expansions(T(RUNNING), grammar, random.Random(0), top=5, k=None)
    # 0.1 tie between CD and RB: broken by rhs
    assert [m.cfg_to for m in out] == ["NP -> DT NN", "NP -> DT NNS", "NP -> DT CD", "NP -> DT RB", "NP -> DT JJ"]


def test_probability_times_ancestor_productions_absent_count_as_one() -> None:
    tree = T("(S (NP (DT the) (NN movie)) (VP (VBZ is) (ADJP (JJ fine))) (. .))")
    grammar = ReferenceGrammar({
        "S": [(("NP", "VP", "."), 0.5)],
        # VP -> VBZ ADJP is absent: a factor 1
        "ADJP": [(("RB", "JJ"), 0.4)],
        "NP": [(("DT", "JJ", "NN"), 0.3)],
    })
    by_rule = {m.cfg_to: m for m in masked_expansions(tree, grammar, random.Random(0))}
    assert by_rule["ADJP -> RB JJ"].prob == pytest.approx(0.5 * 0.4, abs=1e-12)
    assert by_rule["ADJP -> RB JJ"].tokens == ("the", "movie", "is", MASK, "fine", ".")
    assert by_rule["NP -> DT JJ NN"].prob == pytest.approx(0.5 * 0.3, abs=1e-12)
    assert set(by_rule) == {"ADJP -> RB JJ", "NP -> DT JJ NN"}


def test_repeated_symbol_mapping_drawn_with_rng() -> None:
    tree = T("(S (NP (DT the) (NN dog)) (VP (VBD barked)))")
    grammar = ReferenceGrammar({"NP": [(("DT", "NN", "NN"), 1.0)]})
    seen = set()
    for seed in range(40):
        (m,) = masked_expansions(tree, grammar, random.Random(seed))
        assert m.masks in (((1, "NN"),), ((2, "NN"),))
        assert [t for t in m.tokens if t != MASK] == ["the", "dog", "barked"]
        seen.add(m.tokens)
        assert masked_expansions(tree, grammar, random.Random(seed)) == [m]
    assert seen == {("the", MASK, "dog", "barked"), ("the", "dog", MASK, "barked")}


def test_unique_mapping_draws_nothing_from_rng() -> None:
    rng = random.Random(3)
    state = rng.getstate()
    grammar = ReferenceGrammar({"NP": [(("DT", "NNS"), 1.0)]})
    masked_expansions(T(RUNNING), grammar, rng)
    assert rng.getstate() == state


def test_k_samples_uniformly_in_tree_order_and_deterministically() -> None:
    tree = T("(S (NP (DT the) (NN movie)) (VP (VBZ is) (ADJP (JJ fine))) (. .))")
    grammar = ReferenceGrammar({
        "NP": [(("DT", t, "NN"), 0.1) for t in ("JJ", "JJR", "JJS", "CD", "VBG")],
        "ADJP": [((t, "JJ"), 0.1) for t in ("RB", "RBR", "RBS")],
        "S": [(("CC", "NP", "VP", "."), 0.1), (("NP", "VP", "RB", "."), 0.1)],
    })
    every = masked_expansions(tree, grammar, random.Random(0), k=None)
    assert len(every) == 10
    sample = masked_expansions(tree, grammar, random.Random(11), k=4)
    assert len(sample) == 4
    assert [every.index(m) for m in sample] == sorted(every.index(m) for m in sample)
    assert masked_expansions(tree, grammar, random.Random(11), k=4) == sample
    draws = {tuple(m.cfg_to for m in masked_expansions(tree, grammar, random.Random(s), k=4)) for s in range(20)}
    assert len(draws) > 1


def test_seed_tree_normalised_wrapper_traces_and_function_tags() -> None:
    tree = T("(TOP (S (NP-SBJ (DT both) (-NONE- *T*-1)) (VP (VBD left) (NP (-NONE- *))) (. .)))")
    grammar = ReferenceGrammar({"NP": [(("DT", "NNS"), 1.0)], "VP": [(("VBD", "RB"), 1.0)]})
    out = masked_expansions(tree, grammar, random.Random(0))
    assert [(m.text, m.cfg_from) for m in out] == [("both {mask} left .", "NP -> DT"),
                                                   ("both left {mask} .", "VP -> VBD")]


def test_bad_arguments() -> None:
    grammar = ReferenceGrammar({})
    with pytest.raises(ValueError, match="top"):
        masked_expansions(T(RUNNING), grammar, random.Random(0), top=0)
    with pytest.raises(ValueError, match="k must"):
        masked_expansions(T(RUNNING), grammar, random.Random(0), k=0)
    assert masked_expansions(T(RUNNING), grammar, random.Random(0)) == []


def test_word_level_tags() -> None:
    assert len(WORD_LEVEL_TAGS) == 36
    assert {"NNS", "PRP$", "WP$", "JJ"} <= WORD_LEVEL_TAGS
    assert not {"NP", "S", ".", ",", "-NONE-", "$", "``"} & WORD_LEVEL_TAGS


# ---------------------------------------------------------------------------------------------------------
# Reference grammar

TOY_TREES = [
    "(S (NP (DT the) (NN dog)) (VP (VBD ran)) (. .))",
    "(S (NP (DT a) (JJ big) (NN cat)) (VP (VBD sat) (PP (IN on) (NP (DT the) (NN mat)))) (. .))",
    "(S (NP (PRP it)) (VP (VBD rained)))",
]


def test_grammar_matches_nltk_induce_pcfg() -> None:
    trees = [T(s) for s in TOY_TREES]
    grammar = ReferenceGrammar.from_trees(trees)
    pcfg = nltk.induce_pcfg(nltk.Nonterminal("S"), [p for t in trees for p in t.productions()])
    expected: dict[str, dict[tuple[str, ...], float]] = {}
    for p in pcfg.productions():
        if all(isinstance(s, nltk.Nonterminal) for s in p.rhs()):
            expected.setdefault(str(p.lhs()), {})[tuple(str(s) for s in p.rhs())] = p.prob()
    got = mrules(grammar)
    assert got.keys() == expected.keys()
    for lhs in expected:
        assert got[lhs].keys() == expected[lhs].keys()
        for rhs, p in expected[lhs].items():
            assert got[lhs][rhs] == pytest.approx(p, abs=1e-12)
    assert got["NP"] == pytest.approx({("DT", "NN"): 0.5, ("DT", "JJ", "NN"): 0.25, ("PRP",): 0.25})
    assert "DT" not in got and "NN" not in got                      # lexical productions left out
    assert grammar.prob("NP", ["DT", "NN"]) == 0.5 and grammar.prob("NP", ["NN"]) is None
    assert [rhs for rhs, _ in grammar.expansions("NP")] == [("DT", "NN"), ("DT", "JJ", "NN"), ("PRP",)]


def test_grammar_base_labels_wrapper_and_traces() -> None:
    tree = T("( (S (NP-SBJ-1 (DT the) (NN dog)) (VP (VBD was) (VP (VBN seen) (NP=2 (-NONE- *-1)))) (. .)) )")
    got = mrules(ReferenceGrammar.from_trees([tree]))
    assert got == {"S": {("NP", "VP", "."): 1.0}, "NP": {("DT", "NN"): 0.5, ("-NONE-",): 0.5},
                   "VP": {("VBD", "VP"): 0.5, ("VBN", "NP"): 0.5}}
    assert base_label("NP-SBJ-1") == "NP" and base_label("-LRB-") == "-LRB-" and base_label("PRP$") == "PRP$"


def test_load_grammar_from_tree_files_folder_and_json(tmp_path: Path) -> None:
    trees_file = tmp_path / "trees.txt"
    # several trees on a line, one spanning lines
    trees_file.write_text(f"{TOY_TREES[0]} {TOY_TREES[2]}\n(S (NP (DT a) (JJ big) (NN cat))\n"
                          "   (VP (VBD sat) (PP (IN on) (NP (DT the) (NN mat)))) (. .))\n")
    expected = mrules(ReferenceGrammar.from_trees([T(s) for s in TOY_TREES]))
    assert [line for line, _ in read_bracketed_trees(trees_file)] == [1, 1, 2]
    assert mrules(load_grammar(trees_file)) == expected
    folder = tmp_path / "wsj"
    folder.mkdir()
    for i, s in enumerate(TOY_TREES):
        (folder / f"wsj_000{i}.mrg").write_text(f"( {s} )\n")
    (folder / "README").write_text("not trees")
    assert mrules(load_grammar(folder)) == expected
    saved = tmp_path / "grammar.json"
    saved.write_text(json.dumps(load_grammar(trees_file).to_dict()))
    assert mrules(load_grammar(saved)) == expected
    assert mrules(load_grammar(str(saved))) == expected


@pytest.mark.parametrize(("text", "match", "line"), [
    ("(S (NP (DT a)))\n\n(S (NP (DT b))\n", "missing", 3),
    ("(S (NP (DT a)))\n(S (NP (DT b))))\n", "unbalanced", 2),
    ("(S (NP (DT a)))\nstray words\n", "outside", 2),
])
def test_bad_tree_file_names_file_and_line(tmp_path: Path, text: str, match: str, line: int) -> None:
    path = tmp_path / "bad.trees"
    path.write_text(text)
    with pytest.raises(BelugaError, match=match) as err:
        load_grammar(path)
    assert err.value.line == line and str(path) in str(err.value)


@pytest.mark.parametrize(("content", "match"), [
    ('{"NP": [[["DT", "NN"], 0.5],\n  [["DT"] 0.5]]}', "not valid JSON"),
    ('[["NP", "DT"]]', "JSON object"),
    ('{"NP": [[["DT", "NN"], 1.5]]}', "not in"),
    ('{"NP": [[["DT", "NN"], 0.5], [["DT", "NN"], 0.2]]}', "twice"),
    ('{"NP": [["DT", 0.5]]}', "rhs list"),
    ('{"NP": {"DT": 0.5}}', "list of"),
])
def test_bad_json_grammar(tmp_path: Path, content: str, match: str) -> None:
    path = tmp_path / "g.json"
    path.write_text(content)
    with pytest.raises(BelugaError, match=match) as err:
        load_grammar(path)
    assert str(path) in str(err.value)
    if match == "not valid JSON":
        assert err.value.line == 2


def test_missing_grammar_files(tmp_path: Path) -> None:
    with pytest.raises(BelugaError, match="no such grammar file"):
        load_grammar(tmp_path / "nope.json")
    with pytest.raises(BelugaError, match="nltk-treebank"):
        load_grammar(tmp_path / "nope.trees")
    (tmp_path / "empty").mkdir()
    with pytest.raises(BelugaError, match="mrg"):
        load_grammar(tmp_path / "empty")


def test_nltk_treebank_missing_says_how_to_get_it(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(nltk.data, "path", [str(tmp_path)])
    with pytest.raises(BelugaError, match=r"nltk.download\('treebank'\)"):
        load_grammar("nltk-treebank")


def test_nltk_treebank_from_nltk_data(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    combined = tmp_path / "corpora" / "treebank" / "combined"
    combined.mkdir(parents=True)
    (combined / "wsj_0001.mrg").write_text("\n".join(f"( {s} )" for s in TOY_TREES[:2]) + "\n")
    (combined / "wsj_0002.mrg").write_text(f"( {TOY_TREES[2]} )\n")
    monkeypatch.setattr(nltk.data, "path", [str(tmp_path)])
    assert mrules(load_grammar("nltk-treebank")) == mrules(ReferenceGrammar.from_trees([T(s) for s in TOY_TREES]))


# ---------------------------------------------------------------------------------------------------------
# Validation and selection (§3.5 item 5)

# word → (tags it can carry alone, polarity); only "ways" and "things" are NNS and neutral
LEXICON: dict[str, tuple[frozenset[str], str]] = {
    "ways": (frozenset({"NNS"}), "neutral"),
    "sides": (frozenset({"NNS", "VBZ"}), "negative"),
    "good": (frozenset({"JJ", "NN"}), "positive"),
    "things": (frozenset({"NNS"}), "neutral"),
    "day": (frozenset({"NN"}), "neutral"),
    "are": (frozenset({"VBP"}), "neutral"),
    "very": (frozenset({"RB"}), "neutral"),
    "quite": (frozenset({"RB"}), "neutral"),
    "old": (frozenset({"JJ"}), "neutral"),
    "new": (frozenset({"JJ"}), "neutral"),
    "awful": (frozenset({"JJ"}), "negative"),
}
SIX = [(("ways",), -0.5), (("sides",), -0.9), (("good",), -1.3), (("things",), -1.6), (("day",), -2.2),
       (("are",), -3.0)]


def tags_of(word: str) -> frozenset[str]:
    return LEXICON.get(word, (frozenset(), ""))[0]


def is_neutral(word: str) -> bool:
    return LEXICON.get(word, (frozenset(), ""))[1] == "neutral"


def running_masked() -> Masked:
    grammar = ReferenceGrammar({"NP": [(("DT", "NNS"), 0.5), (("DT", "NN", "NN", "S"), 0.5)]})
    (masked,) = masked_expansions(T(RUNNING), grammar, random.Random(0))
    return masked


def test_paper_six_suggestions_keep_ways_and_things() -> None:
    masked = running_masked()
    out = validate_fills(masked, SIX, tags_of=tags_of, is_neutral=is_neutral, recheck=short)
    assert [e.text for e in out] == ["Or both ways .", "Or both things ."]
    assert [e.fills for e in out] == [("ways",), ("things",)]
    # softmax of (−0.5, −1.6): 1 / (1 + e^−1.1) and e^−1.1 / (1 + e^−1.1)
    assert out[0].score == pytest.approx(0.7502601055951177, abs=1e-9)
    assert out[1].score == pytest.approx(0.2497398944048824, abs=1e-9)
    assert [e.mlm_score for e in out] == [-0.5, -1.6]
    assert all(e.masked is masked for e in out)
    assert out[0].tokens == ("Or", "both", "ways", ".")


def test_confidence_orders_by_score_and_random_uses_rng() -> None:
    masked = running_masked()
    shuffled = [(("things",), -0.75), (("sides",), 0.0), (("ways",), -0.25), (("day",), -2.0)]
    lexicon_extra = dict(LEXICON, day=(frozenset({"NNS"}), "neutral"))

    def tags(word: str) -> frozenset[str]:
        return lexicon_extra[word][0]

    out = validate_fills(masked, shuffled, tags_of=tags, is_neutral=is_neutral, recheck=short, keep=2)
    # softmax of (−0.75, −0.25, −2.0), the two best kept
    assert [(e.fills[0], round(e.score, 12)) for e in out] == [("ways", round(0.5617016314080712, 12)),
                                                                ("things", round(0.3406892610595999, 12))]
    picks = {tuple(e.fills[0] for e in validate_fills(masked, shuffled, tags_of=tags, is_neutral=is_neutral,
                                                      recheck=short, keep=2, selection="random",
                                                      rng=random.Random(s))) for s in range(30)}
    assert len(picks) > 1
    assert all(len(p) == 2 for p in picks)
    one = [validate_fills(masked, shuffled, tags_of=tags, is_neutral=is_neutral, recheck=short, keep=2,
                          selection="random", rng=random.Random(5)) for _ in range(2)]
    assert one[0] == one[1]
    with pytest.raises(BelugaError, match="selection"):
        validate_fills(masked, SIX, tags_of=tags_of, is_neutral=is_neutral, recheck=short, selection="best")
    with pytest.raises(ValueError, match="rng"):
        validate_fills(masked, SIX, tags_of=tags_of, is_neutral=is_neutral, recheck=short, selection="random")


def test_recheck_drops_a_too_long_expansion_and_runs_after_word_checks() -> None:
    # 8 words and a final "."; two JJ masks make 10 words: too long; one RB mask makes 9
    two = Masked(tokens=("the", MASK, MASK, "movie", "is", "fine", "for", "a", "long", "day", "."),
                 masks=((1, "JJ"), (2, "JJ")), cfg_from="NP -> DT NN", cfg_to="NP -> DT JJ JJ NN", prob=0.1)
    one = Masked(tokens=("the", "movie", "is", MASK, "fine", "for", "a", "long", "day", "."),
                 masks=((3, "RB"),), cfg_from="ADJP -> JJ", cfg_to="ADJP -> RB JJ", prob=0.1)
    checked: list[str] = []

    def recheck(sentence: str) -> bool:
        checked.append(sentence)
        return short(sentence)

    fills2 = [(("old", "new"), -1.0), (("awful", "old"), -1.5)]
    assert validate_fills(two, fills2, tags_of=tags_of, is_neutral=is_neutral, recheck=lambda s: True) != []
    assert validate_fills(two, fills2, tags_of=tags_of, is_neutral=is_neutral, recheck=recheck) == []
    assert checked == ["the old new movie is fine for a long day ."]     # "awful" failed the neutral check first
    out = validate_fills(one, [(("very",), -1.0), (("good",), -0.1)], tags_of=tags_of, is_neutral=is_neutral,
                         recheck=recheck)
    assert [(e.text, e.score) for e in out] == [("the movie is very fine for a long day .", 1.0)]
    with pytest.raises(ValueError, match="2 masks"):
        validate_fills(two, [(("old",), -1.0)], tags_of=tags_of, is_neutral=is_neutral, recheck=short)


# ---------------------------------------------------------------------------------------------------------
# Parsers


def test_trees_parser(tmp_path: Path) -> None:
    path = tmp_path / "seeds.trees"
    path.write_text(f"{RUNNING}\n(ROOT (S (NP (PRP It)) (VP (VBD rained) (NP (-NONE- *))) (. .)))\n")
    parser = load_parser(f"trees:{path}")
    assert isinstance(parser, TreesParser) and isinstance(parser, Parser) and len(parser) == 2
    assert parser.has(["Or", "both", "."]) and parser.has(["It", "rained", "."])
    assert parser.parse(["Or", "both", "."]) == T(RUNNING)
    assert not parser.has(["Or", "both"])
    with pytest.raises(TreeNotFound, match="no tree") as err:
        parser.parse(["Or", "both"])
    assert isinstance(err.value, KeyError)


def test_trees_parser_bad_files(tmp_path: Path) -> None:
    path = tmp_path / "seeds.trees"
    path.write_text(f"{RUNNING}\n(S (CC Or) (NP (DT both)) (. .))\n")
    with pytest.raises(BelugaError, match="second, different tree") as err:
        load_parser(f"trees:{path}")
    assert err.value.line == 2
    path.write_text(f"{RUNNING}\n{RUNNING}\n(S (NP (DT x))\n")
    with pytest.raises(BelugaError, match="missing") as err:
        load_parser(f"trees:{path}")
    assert err.value.line == 3
    with pytest.raises(BelugaError, match="no such file"):
        load_parser(f"trees:{tmp_path / 'none'}")
    for spec in ("stanza:en", "benepar:", "trees"):
        with pytest.raises(BelugaError, match="unknown parser"):
            load_parser(spec)


def test_benepar_missing_package_or_model(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "benepar", None)
    with pytest.raises(BelugaError, match="pip install benepar") as err:
        load_parser("benepar:benepar_en3")
    assert "benepar.download('benepar_en3')" in str(err.value)

    fake = types.ModuleType("benepar")

    class NoModel:
        def __init__(self, name: str) -> None:
            raise LookupError(f"Resource {name} not found. Please use benepar.download")

    fake.Parser = NoModel  # type: ignore[attr-defined]
    monkeypatch.setitem(sys.modules, "benepar", fake)
    with pytest.raises(BelugaError, match=r"benepar.download\('benepar_en3'\).*Resource benepar_en3 not found"):
        load_parser("benepar:benepar_en3")


def test_benepar_parser_passes_tokens(monkeypatch: pytest.MonkeyPatch) -> None:
    fake = types.ModuleType("benepar")

    class InputSentence:
        def __init__(self, words: list[str]) -> None:
            self.words = words

    class FakeParser:
        def __init__(self, name: str) -> None:
            self.name = name

        def parse(self, sentence: InputSentence) -> Any:
            return T(f"(TOP (FRAG {' '.join(f'(X {w})' for w in sentence.words)}))")

    fake.Parser = FakeParser  # type: ignore[attr-defined]
    fake.InputSentence = InputSentence  # type: ignore[attr-defined]
    monkeypatch.setitem(sys.modules, "benepar", fake)
    tree = load_parser("benepar:benepar_en3").parse(("Or", "both", "."))
    assert tree.leaves() == ["Or", "both", "."]


# ---------------------------------------------------------------------------------------------------------
# The whole expansion with stub components

LONG_TOKENS = ["the", "movie", "is", "fine", "for", "a", "long", "day", "."]
LONG_SEED = ("(S (NP (DT the) (NN movie)) (VP (VBZ is) (ADJP (JJ fine)) (PP (IN for) (NP (DT a) (JJ long) (NN day))))"
             " (. .))")
WORDS_BY_TAG = {"NNS": ["ways", "sides", "things"], "JJ": ["old", "awful", "new"], "RB": ["very", "quite"]}


class StubFiller:
    """Every combination of the words listed for the masks' tags, scored by minus the sum of their ranks."""

    def __init__(self) -> None:
        self.calls: list[tuple[str, int]] = []

    def suggest(self, masked: Masked, n: int) -> list[tuple[tuple[str, ...], float]]:
        self.calls.append((masked.text, n))
        lists = [WORDS_BY_TAG.get(tag, ["day"]) for tag in masked.tags]
        combos = [(words, -float(sum(lst.index(w) for lst, w in zip(lists, words, strict=True))))
                  for words in itertools.product(*lists)]
        return sorted(combos, key=lambda c: -c[1])[:n]


def test_expand_seed_running_example(tmp_path: Path) -> None:
    path = tmp_path / "seeds.trees"
    path.write_text(RUNNING + "\n")
    grammar = ReferenceGrammar({"NP": [(("DT", "NNS"), 0.5), (("DT", "NN", "NN", "S"), 0.5)]})
    filler = StubFiller()
    out = expand_seed(["Or", "both", "."], load_parser(f"trees:{path}"), grammar, filler, rng=random.Random(0),
                      tags_of=tags_of, is_neutral=is_neutral, recheck=short)
    assert [e.text for e in out] == ["Or both ways .", "Or both things ."]
    assert filler.calls == [("Or both {mask} .", 60)]
    assert all(isinstance(e, Expanded) for e in out)


def seeds_parser(tmp_path: Path) -> TreesParser:
    path = tmp_path / "long.trees"
    path.write_text(LONG_SEED + "\n")
    return TreesParser(path)


LONG_GRAMMAR = ReferenceGrammar({
    # the seed has 8 words: one mask makes 9, two make 10 (too long)
    "ADJP": [(("RB", "JJ"), 0.4)],
    "NP": [(("DT", "JJ", "JJ", "NN"), 0.2), (("DT", "JJ", "NN"), 0.3)],
})


def test_expand_seed_recheck_drops_too_long_sentences(tmp_path: Path) -> None:
    parser = seeds_parser(tmp_path)
    tokens = LONG_TOKENS
    everything = expand_seed(tokens, parser, LONG_GRAMMAR, StubFiller(), rng=random.Random(1), tags_of=tags_of,
                             is_neutral=is_neutral, recheck=lambda s: True)
    out = expand_seed(tokens, parser, LONG_GRAMMAR, StubFiller(), rng=random.Random(1), tags_of=tags_of,
                      is_neutral=is_neutral, recheck=short)
    too_long = [e.text for e in everything if not short(e.text)]
    assert too_long and all(len(e.text.split()) == 11 for e in everything if e.text in too_long)
    assert [e.text for e in out] == [e.text for e in everything if short(e.text)]
    assert "the movie is very fine for a long day ." in [e.text for e in out]
    assert "the old movie is fine for a long day ." in [e.text for e in out]
    assert not any("awful" in e.text for e in out)


def test_expand_seed_deterministic(tmp_path: Path) -> None:
    parser = seeds_parser(tmp_path)
    tokens = LONG_TOKENS
    runs = [[(e.text, e.score, e.masked) for e in expand_seed(
        tokens, parser, LONG_GRAMMAR, StubFiller(), rng=random.Random(7), tags_of=tags_of, is_neutral=is_neutral,
        recheck=lambda s: True, k=3, keep=2, selection=sel)] for sel in ("random", "random", "confidence")]
    assert runs[0] == runs[1] and runs[0]
    assert len({m for _, _, m in runs[0]}) <= 3
    with pytest.raises(TreeNotFound):
        expand_seed(["unknown"], parser, LONG_GRAMMAR, StubFiller(), rng=random.Random(0), tags_of=tags_of,
                    is_neutral=is_neutral, recheck=short)


# ---------------------------------------------------------------------------------------------------------
# Masked LM filler, on a tiny randomly initialised BERT

VOCAB = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", "[unused0]", ".", ",", "!", "or", "both", "ways", "things",
         "sides", "good", "bad", "the", "a", "movie", "film", "plot", "story", "is", "was", "and", "it", "this",
         "that", "people", "time", "day", "##s", "##ing", "123"]
ALLOWED = {w for w in VOCAB if w.isalnum()}      # whole words: no specials, punctuation or "##" pieces


@pytest.fixture(scope="module")
def tiny_mlm(tmp_path_factory: pytest.TempPathFactory) -> Path:
    torch = pytest.importorskip("torch")
    from transformers import BertConfig, BertForMaskedLM, BertTokenizer

    root = tmp_path_factory.mktemp("mlm")
    vocab_dir = root / "vocab"
    vocab_dir.mkdir()
    (vocab_dir / "vocab.txt").write_text("\n".join(VOCAB) + "\n")
    model_dir = root / "model"
    BertTokenizer.from_pretrained(str(vocab_dir)).save_pretrained(str(model_dir))
    torch.manual_seed(0)
    config = BertConfig(vocab_size=len(VOCAB), hidden_size=32, num_hidden_layers=2, num_attention_heads=2,
                        intermediate_size=64, max_position_embeddings=64)
    BertForMaskedLM(config).save_pretrained(str(model_dir))
    return model_dir


def masked_of(tokens: Sequence[str], tags: Sequence[str]) -> Masked:
    masks = tuple((i, tag) for i, tag in zip((i for i, t in enumerate(tokens) if t == MASK), tags, strict=True))
    return Masked(tokens=tuple(tokens), masks=masks, cfg_from="X -> Y", cfg_to="X -> Y Z", prob=1.0)


def test_masked_lm_filler_single_mask(tiny_mlm: Path) -> None:
    import torch

    filler = MaskedLMFiller(str(tiny_mlm), device="cpu")
    masked = running_masked()
    out = filler.suggest(masked, 5)
    assert len(out) == 5
    words = [w for (w,), _ in out]
    assert len(set(words)) == 5 and set(words) <= ALLOWED
    scores = [s for _, s in out]
    assert scores == sorted(scores, reverse=True) and all(s < 0 for s in scores)
    assert MaskedLMFiller(str(tiny_mlm), device="cpu").suggest(masked, 5) == out
    # the best single fill is the most probable allowed word: its log-probability
    tok = filler.tokenizer
    enc = tok("Or both [MASK] .", return_tensors="pt")
    pos = int((enc["input_ids"][0] == tok.mask_token_id).nonzero()[0])
    with torch.inference_mode():
        logp = torch.log_softmax(filler.model(**enc).logits[0, pos].float(), dim=-1)
    allowed_ids = [tok.convert_tokens_to_ids(w) for w in ALLOWED]
    best = max(allowed_ids, key=lambda i: float(logp[i]))
    assert out[0][0] == (tok.convert_ids_to_tokens(best),)
    assert out[0][1] == pytest.approx(float(logp[best]), abs=1e-5)
    # more than there are words: every allowed word once
    every = filler.suggest(masked, 60)
    assert sorted(w for (w,), _ in every) == sorted(ALLOWED)


def test_masked_lm_filler_two_masks(tiny_mlm: Path) -> None:
    filler = MaskedLMFiller(str(tiny_mlm), device="cpu")
    masked = masked_of(["the", MASK, "movie", "was", MASK, "."], ["JJ", "RB"])
    out = filler.suggest(masked, 20)
    assert len(out) == 20
    assert all(len(w) == 2 and set(w) <= ALLOWED for w, _ in out)
    assert len({w for w, _ in out}) == 20
    scores = [s for _, s in out]
    assert scores == sorted(scores, reverse=True)
    assert filler.suggest(masked, 20) == out
    assert all(math.isfinite(s) for s in scores)
    # a narrower beam keeps fewer fills
    assert len(MaskedLMFiller(str(tiny_mlm), device="cpu", beam=3).suggest(masked, 20)) == 3


def test_masked_lm_filler_errors(tmp_path: Path) -> None:
    with pytest.raises(BelugaError, match="no such masked-LM folder"):
        MaskedLMFiller(str(tmp_path / "nowhere"))
    (tmp_path / "empty").mkdir()
    with pytest.raises(BelugaError, match="cannot load a masked language model from the folder"):
        MaskedLMFiller(str(tmp_path / "empty"))
