"""Build the shipped word-class table of the ``vader`` lexicon (``beluga_core.generators.s2lct.lexicon``).

Writes ``beluga_core/data/builtin/word_classes/word_classes.tsv.xz``; see that folder's PROVENANCE.md. Inputs:

* VADER 3.3.2's ``vader_lexicon.txt``, from the installed ``vaderSentiment`` package (``pip install
  vadersentiment==3.3.2``: a build-time tool only, never a dependency of beluga) or ``--vader PATH``. Read as
  VADER reads it: a later line for the same token replaces an earlier one, and only tokens equal to their
  lower-case form count (VADER lower-cases the text before the lookup, so ``:-D`` is never matched); tokens
  with a space are left out (one table row is one token).
* WordNet 3.0's lemmas from the database ``beluga_core.generators.attacks.wordnet`` uses (Debian's ``wordnet-base``, or
  ``BELUGA_WORDNET``): every part of speech a word has as a lemma, as the letters ``a`` (with satellites),
  ``n``, ``r``, ``v``. Multi-word lemmas (with ``_``) are left out. The lemma lists are the index files' first
  fields; a run of this script checks them against the repository's nltk reader (``load_wordnet``), which
  ``build()`` leaves out so that the test stays fast (nltk takes two seconds to open the database).

One row per word in either source, sorted by word: ``word<TAB>pos<TAB>polarity``, ``pos`` the sorted letters
(empty for a VADER token WordNet lacks), polarity ``positive`` (mean valence > 0), ``negative`` (< 0) or
``neutral`` (0, or not in VADER). The ``.xz`` is written by Python's ``lzma`` with fixed settings (preset 9 |
extreme, CRC64; the format stores no timestamp), so the same inputs and liblzma give byte-identical output.
``tests/unit/generators/test_lexicon.py`` rebuilds it with ``build()`` and compares checksums.

    python -m tools.data.build_word_classes          # rewrites the table, prints what PROVENANCE.md records
    python -m tools.data.build_word_classes --check  # writes nothing; exit 1 when the shipped file differs
"""

from __future__ import annotations

import argparse
import hashlib
import importlib.util
import lzma
import sys
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path

from tools.data import write_or_check

REPO_ROOT = Path(__file__).resolve().parents[2]
OUT_DIR = REPO_ROOT / "beluga_core" / "data" / "builtin" / "word_classes"
TABLE = OUT_DIR / "word_classes.tsv.xz"
HEADER = "word\tpos\tpolarity"
LETTERS = "anrv"
CLASS_OF = {"a": "adj", "r": "adj", "n": "noun", "v": "verb"}
# The index file of each letter of LETTERS.
INDEX_FILES = ("index.adj", "index.noun", "index.adv", "index.verb")


@dataclass
class Built:
    """The table's text and compressed bytes, WordNet's lemma lists, and the inputs' checksums."""

    text: str
    data: bytes
    lemmas: dict[str, set[str]]
    inputs: dict[str, str]


def vader_file() -> Path:
    """``vader_lexicon.txt`` of the installed vaderSentiment package; FileNotFoundError when it is absent."""
    spec = importlib.util.find_spec("vaderSentiment")
    if spec is None or spec.origin is None:
        raise FileNotFoundError("vaderSentiment is not installed: pip install vadersentiment==3.3.2 "
                                "(a build-time tool only), or pass --vader PATH")
    return Path(spec.origin).parent / "vader_lexicon.txt"


def read_vader(text: str, where: str = "vader_lexicon.txt") -> dict[str, float]:
    """Token → mean valence, as VADER's ``make_lex_dict`` reads the file (a later line wins), keeping only
    lower-case single tokens."""
    valence: dict[str, float] = {}
    # Only CR LF / LF end a line: str.splitlines would also break at characters such as U+0085.
    for lineno, line in enumerate(text.replace("\r\n", "\n").split("\n"), start=1):
        if not line.strip():
            continue
        parts = line.split("\t")
        if len(parts) != 4:
            raise ValueError(f"{where} line {lineno}: {len(parts)} fields, expected token, mean, sd, ratings")
        token, mean = parts[0], float(parts[1])
        if token == token.lower() and not any(ch.isspace() for ch in token):
            valence[token] = mean
    return valence


def wordnet_lemmas(root: Path) -> dict[str, set[str]]:
    """Letter → the one-word lemmas of the WordNet 3.0 database in ``root``: the first field of each entry of
    its index files, which is what nltk's ``all_lemma_names`` returns (``nltk_cross_check`` verifies it)."""
    lemmas: dict[str, set[str]] = {}
    for letter, name in zip(LETTERS, INDEX_FILES, strict=True):
        with (root / name).open(encoding="utf-8") as index:
            # Lines starting with a space are the licence header.
            firsts = (line.split(" ", 1)[0] for line in index if not line.startswith(" "))
            lemmas[letter] = {lemma for lemma in firsts if "_" not in lemma}
    return lemmas


def wordnet_folder() -> Path:
    """The database ``beluga_core.generators.attacks.wordnet`` reads (``BELUGA_WORDNET`` first, then Debian's)."""
    from beluga_core.generators.attacks.wordnet import INSTALL, wordnet_root

    root = wordnet_root()
    if root is None:
        raise FileNotFoundError(INSTALL)
    return root


def nltk_cross_check(lemmas: Mapping[str, set[str]]) -> str:
    """Compare the lemma lists with what the repository's reader (``load_wordnet``, nltk) gives; a note for the
    log. Left out of ``build`` because importing nltk and opening the reader take two seconds."""
    from beluga_core.core.errors import BelugaError
    from beluga_core.generators.attacks.wordnet import load_wordnet

    try:
        reader = load_wordnet().reader
    except BelugaError as exc:   # nltk missing: the build does not need it, only this check does
        return f"nltk cross-check skipped: {exc}"
    for letter in LETTERS:
        theirs = {name for name in reader.all_lemma_names(pos=letter) if "_" not in name}
        if theirs != lemmas[letter]:
            raise AssertionError(f"WordNet {letter!r}: the index files and nltk's reader disagree on "
                                 f"{sorted(theirs ^ lemmas[letter])[:10]}")
    return "nltk's WordNet reader (load_wordnet) gives the same lemma lists"


def table_text(valence: Mapping[str, float], lemmas: Mapping[str, Iterable[str]]) -> str:
    """The TSV: one row per word of either source, sorted by word."""
    letters: dict[str, set[str]] = {}
    for letter, names in lemmas.items():
        if letter not in LETTERS:
            raise ValueError(f"unknown WordNet part of speech {letter!r}")
        for name in names:
            letters.setdefault(name.lower(), set()).add(letter)
    rows = [HEADER]
    for word in sorted(set(letters) | set(valence)):
        if not word or any(ch.isspace() for ch in word):
            raise ValueError(f"not a single token: {word!r}")
        v = valence.get(word, 0.0)
        polarity = "positive" if v > 0 else "negative" if v < 0 else "neutral"
        rows.append(f"{word}\t{''.join(sorted(letters.get(word, ())))}\t{polarity}")
    return "\n".join(rows) + "\n"


def compress(text: str) -> bytes:
    return lzma.compress(text.encode("utf-8"), format=lzma.FORMAT_XZ, check=lzma.CHECK_CRC64,
                         preset=9 | lzma.PRESET_EXTREME)


def sha256(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def build(vader: Path | None = None) -> Built:
    """Read both sources from this machine and build the table (FileNotFoundError when one is missing)."""
    vader = vader or vader_file()
    raw = vader.read_bytes()
    root = wordnet_folder()
    lemmas = wordnet_lemmas(root)
    text = table_text(read_vader(raw.decode("utf-8"), str(vader)), lemmas)
    inputs = {str(vader): sha256(raw)}
    inputs.update({str(root / f): sha256((root / f).read_bytes()) for f in sorted(INDEX_FILES)})
    return Built(text, compress(text), lemmas, inputs)


def class_counts(text: str) -> dict[str, int]:
    """Rows, rows without a WordNet part of speech, and the size of each (polarity, part of speech) class."""
    counts = {"rows": 0, "not in WordNet": 0}
    for polarity in ("positive", "negative", "neutral"):
        counts[polarity] = 0
        for pos in ("adj", "noun", "verb"):
            counts[f"{polarity} {pos}"] = 0
    for line in text.split("\n")[1:-1]:
        _, letters, polarity = line.split("\t")
        counts["rows"] += 1
        counts[polarity] += 1
        counts["not in WordNet"] += not letters
        for pos in sorted({CLASS_OF[letter] for letter in letters}):
            counts[f"{polarity} {pos}"] += 1
    return counts


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n")[0])
    parser.add_argument("--check", action="store_true", help="write nothing; exit 1 if the shipped file differs")
    parser.add_argument("--vader", type=Path, help="vader_lexicon.txt (default: the installed vaderSentiment's)")
    args = parser.parse_args(argv)
    try:
        built = build(args.vader)
    except (OSError, ValueError) as exc:   # a missing or unreadable source: say which, without a traceback
        print(f"error: {exc}", file=sys.stderr)
        return 2
    print(nltk_cross_check(built.lemmas))
    for path, digest in built.inputs.items():
        print(f"input {path}: sha256 {digest}")
    for name, n in class_counts(built.text).items():
        print(f"{name}: {n:,}")
    text = built.text.encode("utf-8")
    print(f"text: {len(text):,} bytes, sha256 {sha256(text)}")
    print(f"xz:   {len(built.data):,} bytes, sha256 {sha256(built.data)}")
    return write_or_check({TABLE: built.data}, args.check)

if __name__ == "__main__":
    sys.exit(main())
