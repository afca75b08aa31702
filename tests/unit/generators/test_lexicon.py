"""Word lexicon classes (``beluga_core.generators.s2lct.lexicon``): the Colhon et al. rule on hand-built
SentiWordNet rows, a tiny SentiWordNet file, the shipped ``vader`` table against its PROVENANCE.md, class names,
and the table's rebuild. See beluga_core/data/builtin/word_classes/PROVENANCE.md."""

from __future__ import annotations

import hashlib
import importlib.util
import lzma
from pathlib import Path

import pytest
from helpers import REPO

from beluga_core.core.errors import BelugaError
from beluga_core.generators.s2lct.lexicon import (
    OTHER_NEUTRAL,
    POLARITIES,
    POS_CLASSES,
    TABLE,
    colhon_label,
    load_lexicon,
    parse_class,
)
from tools.data import build_word_classes

REPO_ROOT = REPO

# As recorded in PROVENANCE.md.
XZ_SHA256 = "ed31b289804ea81d8d2162a638f495304118ec520bbafc8fe4eddb97e0061b8c"
TEXT_SHA256 = "24d6c2926341497e5970a8b72542b68be5533dc1446c5095e82e877629713bf9"
ROWS = 86_783
CLASS_SIZES = {
    ("positive", "adj"): 835, ("positive", "noun"): 839, ("positive", "verb"): 269,
    ("negative", "adj"): 1_086, ("negative", "noun"): 1_067, ("negative", "verb"): 407,
    ("neutral", "adj"): 22_385, ("neutral", "noun"): 55_600, ("neutral", "verb"): 8_024,
}


# --- the Colhon et al. rule -------------------------------------------------------------------------------------

@pytest.mark.parametrize(("senses", "label"), [
    # k = 1: score = p − n.
    ([(0.5, 0.0)], "positive"),                          # 0.5
    ([(0.0, 0.625)], "negative"),                        # −0.625
    # k = 3: 0.5 + (1/2)·0² + (1/3)·(−0.5)³ = 0.5 − 0.041666… > 0; the odd power keeps the sign.
    ([(0.5, 0.0), (0.0, 0.0), (0.0, 0.5)], "positive"),
    # Even-power sign loss: every sense is negative, yet −0.25 + (1/2)·(−0.75)² = −0.25 + 0.28125 = 0.03125 > 0.
    ([(0.0, 0.25), (0.0, 0.75)], "positive"),
    # Likewise 0 + (1/2)·(−0.5)² = 0.125 > 0 for a word whose only scored sense is negative.
    ([(0.0, 0.0), (0.0, 0.5)], "positive"),
    # score 0, agg_pos = agg_neg = 0, obj = 1.
    ([(0.0, 0.0), (0.0, 0.0)], "pure neutral"),
    # score 0; agg_pos = agg_neg = 0.375, obj = 0.25: 0.006 ≤ 0.375 ≤ 0.41, 0.375 ≥ 0.006, 0.16 ≤ 0.25 ≤ 0.41.
    ([(0.375, 0.375)], "balanced neutral"),
    # score 0; 0.5 / 0.5 / 0.
    ([(0.5, 0.5)], "half-pos-neg neutral"),
    # score 0; agg 0.125 each, obj 0.75 > 0.41: none of the named neutrals.
    ([(0.125, 0.125)], "neutral"),
    # score 0 + 0 = 0; agg_pos = agg_neg = 0.25 / 1.5 = 0.1666…, obj = 0.6666… > 0.41.
    ([(0.25, 0.25), (0.0, 0.0)], "neutral"),
])
def test_colhon_label(senses: list[tuple[float, float]], label: str) -> None:
    assert colhon_label(senses) == label


def test_colhon_label_needs_a_sense() -> None:
    with pytest.raises(ValueError, match="at least one sense"):
        colhon_label([])


# --- a SentiWordNet file ----------------------------------------------------------------------------------------

SWN = """\
# SentiWordNet v3.0.0 (a tiny hand-made extract in the real format)
# POS\tID\tPosScore\tNegScore\tSynsetTerms\tGloss
a\t00002100\t0.5\t0\tgood#2\tmorally admirable
a\t00001740\t0.75\t0\tgood#1 full#3\thaving desirable qualities
a\t00002000\t0\t0.625\tbad#1\tnot good
n\t00003000\t0\t0\ttable#1 tabular_array#1\ta set of data arranged in rows and columns
n\t00003100\t0\t0\ttable#2\ta piece of furniture
r\t00004000\t0\t0.25\tbadly#1\tin a poor way
r\t00004100\t0\t0.75\tbadly#2\tseverely
v\t00005000\t0.375\t0.375\tfancy#1\tto imagine
n\t00006000\t0.5\t0.5\tFancy#1\ta capitalised term
a\t00007000\t0.125\t0.125\tplain#1\tclearly apparent
\t\t\t\t\t
"""


def write(tmp_path: Path, text: str, name: str = "SentiWordNet_3.0.0.txt") -> Path:
    path = tmp_path / name
    path.write_text(text, encoding="utf-8")
    return path


def test_sentiwordnet_classes(tmp_path: Path) -> None:
    path = write(tmp_path, SWN)
    lex = load_lexicon(f"sentiwordnet:{path}")
    assert lex.name == f"sentiwordnet:{path}"
    classes = {(p, c): lex.words(p, c) for p in POLARITIES for c in POS_CLASSES}
    # good: senses 1, 2 (file order 2, 1): 0.75 + (1/2)·0.5² = 0.875. full: its one sense, 0.75.
    # badly (r → adj): −0.25 + (1/2)·(−0.75)² = 0.03125, positive by the sign loss. table: two zero senses.
    assert {k: v for k, v in classes.items() if v} == {
        ("positive", "adj"): {"good", "full", "badly"},
        ("negative", "adj"): {"bad"},
        ("neutral", "noun"): {"table"},
    }
    assert lex.polarities("GOOD") == {"positive"} and lex.is_neutral("table")
    # fancy v 0.375/0.375 → balanced; Fancy n 0.5/0.5 → half-pos-neg: in no class, and not neutral.
    assert lex.polarities("fancy") == {"balanced neutral", "half-pos-neg neutral"}
    assert not lex.is_neutral("fancy") and lex.pos("fancy") == {"noun", "verb"}
    assert lex.polarities("plain") == {OTHER_NEUTRAL} and not lex.is_neutral("plain")
    assert lex.polarities("tabular_array") == {"neutral"} and lex.pos("tabular_array") == frozenset()
    assert lex.is_neutral("zebra") and lex.pos("zebra") == frozenset()
    assert lex.pos("badly") == {"adj"} and lex.penn_tags("badly") == {"RB"}
    assert lex.penn_tags("tables") == {"NNS"} and lex.penn_tags("goodest") == {"JJS"}


def test_sentiwordnet_file_is_read_again_when_it_changes(tmp_path: Path) -> None:
    path = write(tmp_path, SWN)
    assert "bad" in load_lexicon(f"sentiwordnet:{path}").words("negative", "adj")
    write(tmp_path, SWN.replace("0\t0.625\tbad#1", "0.625\t0\tbad#1") + "\n")
    assert "bad" in load_lexicon(f"sentiwordnet:{path}").words("positive", "adj")


@pytest.mark.parametrize(("line", "problem"), [
    ("a\t00001740\tx\t0\tgood#1\tgloss", "not numbers"),
    ("s\t00001740\t0.5\t0\tgood#1\tgloss", "POS 's'"),
    ("a\t00001740\t0.75\t0.5\tgood#1\tgloss", "sum to at most 1"),
    ("a\t00001740\t0.5\t0\tgood\tgloss", "word#sense"),
    ("a\t00001740\t0.5", "3 fields"),
])
def test_malformed_sentiwordnet_names_file_and_line(tmp_path: Path, line: str, problem: str) -> None:
    path = write(tmp_path, f"# header\na\t00000001\t0\t0\table#1\tgloss\n{line}\n")
    with pytest.raises(BelugaError) as err:
        load_lexicon(f"sentiwordnet:{path}")
    message = str(err.value)
    assert message.startswith(f"{path}, line 3: ") and problem in message and "PosScore, NegScore" in message


@pytest.mark.parametrize(("spec", "expected"), [
    ("vaderx", "expected 'vader' or 'sentiwordnet:PATH'"),
    ("sentiwordnet:", "expected 'vader' or 'sentiwordnet:PATH'"),
    ("sentiwordnet:/nonexistent/SentiWordNet_3.0.0.txt", "/nonexistent/SentiWordNet_3.0.0.txt: SentiWordNet file "
                                                         "not found"),
])
def test_bad_spec(spec: str, expected: str) -> None:
    with pytest.raises(BelugaError, match=expected):
        load_lexicon(spec)


# --- the shipped vader table ------------------------------------------------------------------------------------

def test_shipped_table_matches_provenance() -> None:
    data = TABLE.read_bytes()
    text = lzma.decompress(data)
    assert hashlib.sha256(data).hexdigest() == XZ_SHA256 and hashlib.sha256(text).hexdigest() == TEXT_SHA256
    assert text.count(b"\n") == ROWS + 1
    lex = load_lexicon()
    assert lex.name == "vader" and load_lexicon("vader") is lex
    assert {(p, c): len(lex.words(p, c)) for p in POLARITIES for c in POS_CLASSES} == CLASS_SIZES


def test_shipped_table_spot_words() -> None:
    lex = load_lexicon()
    assert "good" in lex.words("positive", "adj") and lex.pos("good") == {"adj", "noun"}   # WordNet a, n, r
    assert "awful" in lex.words("negative", "adj") and lex.polarities("awful") == {"negative"}
    assert "table" in lex.words("neutral", "noun") and lex.is_neutral("table")
    assert "hate" in lex.words("negative", "verb") and "love" in lex.words("positive", "noun")
    # A VADER token WordNet lacks: known, positive, in no class.
    assert lex.polarities("loves") == {"positive"} and lex.pos("loves") == frozenset()
    assert not lex.is_neutral(":)") and lex.is_neutral("qwertyuiop")
    assert {"NN", "NNS"} <= lex.penn_tags("ways")           # "ways" is itself a WordNet noun
    assert lex.penn_tags("tables") == {"NNS", "VBZ"}       # table: noun and verb lemma
    assert lex.penn_tags("both") == {"DT", "PDT", "CC"}     # closed class, although WordNet has an adjective
    assert lex.penn_tags("the") == {"DT"} and lex.penn_tags("is") == {"VBZ"} and lex.penn_tags("1,000") == {"CD"}
    assert lex.penn_tags("quickly") == {"RB"} and lex.penn_tags("walked") == {"VBD", "VBN"}
    assert lex.penn_tags("walking") >= {"VBG"} and lex.penn_tags("greener") >= {"JJR"}
    assert lex.penn_tags("children") == frozenset()         # irregular: WordNet's exception lists are not used


def test_words_rejects_unknown_class() -> None:
    with pytest.raises(BelugaError, match="expected a polarity among positive, negative, neutral"):
        load_lexicon().words("positive", "adjs")


# --- class names ------------------------------------------------------------------------------------------------

@pytest.mark.parametrize(("text", "parsed"), [
    ("positive adjs", ("positive", "adj")), ("neutral nouns", ("neutral", "noun")), ("neg verb", ("negative", "verb")),
    ("pos adj", ("positive", "adj")), ("positive_adj", ("positive", "adj")), ("neu verbs", ("neutral", "verb")),
    ("  Negative  Adjectives ", ("negative", "adj")),
])
def test_parse_class_accepts(text: str, parsed: tuple[str, str]) -> None:
    assert parse_class(text) == parsed


@pytest.mark.parametrize("text", ["positive", "adjs", "good adjs", "positive adverbs", "positive adjs nouns", ""])
def test_parse_class_rejects(text: str) -> None:
    with pytest.raises(BelugaError, match=r"expected '<polarity> <part of speech>'.*neutral nouns"):
        parse_class(text)


# --- the rebuild ------------------------------------------------------------------------------------------------

def test_rebuild_gives_the_shipped_table() -> None:
    from beluga_core.generators.attacks.wordnet import wordnet_root

    if importlib.util.find_spec("vaderSentiment") is None:
        pytest.skip("vaderSentiment is not installed (pip install vadersentiment==3.3.2, a build-time tool only)")
    if wordnet_root() is None:
        pytest.skip("WordNet 3.0 is not installed (apt-get install wordnet-base, or set BELUGA_WORDNET)")
    built = build_word_classes.build()
    assert hashlib.sha256(built.data).hexdigest() == hashlib.sha256(TABLE.read_bytes()).hexdigest()
