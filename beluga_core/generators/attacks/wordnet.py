"""WordNet 3.0 synonyms and parts of speech, read offline with nltk's corpus reader.

The database comes from the machine, never from the network: Debian's ``wordnet-base`` (``/usr/share/wordnet``),
or a folder named by ``BELUGA_WORDNET`` (any WordNet 3.0 ``dict`` folder: ``index.noun``, ``data.noun``, …).
Debian's package lacks the ``lexnames`` file nltk's reader opens at start, a fixed list of WordNet 3.0's 45
lexicographer files, and nltk opens only files it owns and that are not links: the reader gets a copy of the
database with that list, made once in the user's cache folder (``~/.cache/beluga/wordnet-3.0``, 30 MB). Without
a database (or without nltk, the ``wordnet`` extra) ``load_wordnet`` says what to install.

Parts of speech: there is no offline tagger, so a word's part of speech is WordNet's most frequent one for it
(the sum of its senses' tag counts; ties: noun, verb, adjective, adverb), and its synonyms are the lemmas of
its synsets of that part of speech — the documented stand-in for "synonyms with the same part of speech".
"""

from __future__ import annotations

import hashlib
import os
import shutil
import tempfile
import warnings
from collections.abc import Sequence
from functools import lru_cache
from pathlib import Path
from typing import Any

from beluga_core.core.errors import BelugaError

DEFAULT_ROOTS = ("/usr/share/wordnet", "/usr/share/wordnet/dict", "/usr/local/share/wordnet")
FILES = ("index.noun", "index.verb", "index.adj", "index.adv", "data.noun", "data.verb", "data.adj", "data.adv",
         "noun.exc", "verb.exc", "adj.exc", "adv.exc")
LEXNAMES = ("adj.all", "adj.pert", "adv.all", "noun.Tops", "noun.act", "noun.animal", "noun.artifact",
            "noun.attribute", "noun.body", "noun.cognition", "noun.communication", "noun.event", "noun.feeling",
            "noun.food", "noun.group", "noun.location", "noun.motive", "noun.object", "noun.person",
            "noun.phenomenon", "noun.plant", "noun.possession", "noun.process", "noun.quantity", "noun.relation",
            "noun.shape", "noun.state", "noun.substance", "noun.time", "verb.body", "verb.change",
            "verb.cognition", "verb.communication", "verb.competition", "verb.consumption", "verb.contact",
            "verb.creation", "verb.emotion", "verb.motion", "verb.perception", "verb.possession", "verb.social",
            "verb.stative", "verb.weather", "adj.ppl")
# Sense tag counts (the most frequent part of speech) and the lexicographer file list, where the database has them.
OPTIONAL = ("cntlist.rev", "lexnames")
_SYNTACTIC = {"adj": 3, "adv": 4, "noun": 1, "verb": 2}
POS_ORDER = ("n", "v", "a", "r")
INSTALL = ("WordNet 3.0 is not installed: install Debian's wordnet-base (apt-get install wordnet-base) and "
           "nltk (pip install 'beluga[wordnet]'), or point BELUGA_WORDNET at a WordNet 3.0 dict folder")


def wordnet_root() -> Path | None:
    """The first folder holding a WordNet 3.0 database (``BELUGA_WORDNET`` first), or None."""
    named = os.environ.get("BELUGA_WORDNET")
    for root in ([named] if named else []) + list(DEFAULT_ROOTS):
        if all((Path(root) / f).is_file() for f in FILES):
            return Path(root)
    return None


def _reader_folder(root: Path) -> Path:
    """A copy of the database nltk will open (it refuses links, and files it does not own), kept in the user's
    cache folder and made again when the database changes."""
    stamp = "-".join(f"{(root / f).stat().st_size}.{int((root / f).stat().st_mtime)}" for f in FILES)
    base = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "beluga" / "wordnet-3.0"
    folder = base / hashlib.sha256(f"{root.resolve()}\x1f{stamp}".encode()).hexdigest()[:16]
    if (folder / "lexnames").is_file():
        return folder
    tmp = Path(tempfile.mkdtemp(prefix="wordnet-", dir=_mkdir(base)))
    for f in FILES + tuple(f for f in OPTIONAL if (root / f).is_file()):
        shutil.copyfile(root / f, tmp / f)
    if not (root / "lexnames").is_file():
        lines = [f"{i:02d}\t{name}\t{_SYNTACTIC[name.split('.')[0]]}" for i, name in enumerate(LEXNAMES)]
        (tmp / "lexnames").write_text("\n".join(lines) + "\n", encoding="utf-8")
    try:
        tmp.rename(folder)     # another process may have made it meanwhile: then use theirs
    except OSError:
        shutil.rmtree(tmp, ignore_errors=True)
    return folder


def _mkdir(path: Path) -> Path:
    path.mkdir(parents=True, exist_ok=True)
    return path


class WordNet:
    """Synonyms and most frequent parts of speech of lower-cased words."""

    def __init__(self, reader: Any, root: Path) -> None:
        self.reader = reader
        self.root = root

    @lru_cache(maxsize=65536)  # noqa: B019 - one WordNet per process; the cache lives as long as it
    def pos(self, word: str) -> str | None:
        """WordNet's most frequent part of speech of ``word`` (n, v, a, r; None: not in WordNet)."""
        counts: dict[str, int] = {}
        for pos in POS_ORDER:
            synsets = self.reader.synsets(word, pos=pos)
            if synsets:
                # +1 per sense, so that a word whose senses have no tagged counts still has its part of speech.
                counts[pos] = sum(1 + sum(lemma.count() for lemma in s.lemmas()
                                          if lemma.name().lower() == word) for s in synsets)
        if not counts:
            return None
        return max(POS_ORDER, key=lambda p: (counts.get(p, -1), -POS_ORDER.index(p)))

    @lru_cache(maxsize=65536)  # noqa: B019 - as above
    def synonyms(self, word: str) -> tuple[str, ...]:
        """The one-word lemmas of ``word``'s synsets of its most frequent part of speech, other than the word
        itself, in WordNet's order (multi-word lemmas left out: they would change the word count)."""
        pos = self.pos(word)
        if pos is None:
            return ()
        seen: dict[str, None] = {}
        for synset in self.reader.synsets(word, pos=pos):
            for lemma in synset.lemmas():
                name = lemma.name().lower()
                if "_" not in name and "-" not in name and name != word and name.isalpha():
                    seen.setdefault(name, None)
        return tuple(seen)

    def same_pos(self, a: str, candidates: Sequence[str]) -> list[str]:
        pos = self.pos(a)
        return [c for c in candidates if pos is not None and self.pos(c) == pos]


@lru_cache(maxsize=1)
def load_wordnet() -> WordNet:
    """The machine's WordNet, or a BelugaError saying what to install."""
    root = wordnet_root()
    if root is None:
        raise BelugaError(INSTALL)
    try:
        import nltk
        from nltk.corpus.reader.wordnet import WordNetCorpusReader
    except ImportError:
        raise BelugaError(INSTALL) from None
    class Reader(WordNetCorpusReader):
        def map_wn(self, version: str = "wordnet") -> None:
            # nltk maps a database that is not its own download onto WordNet 3.0 for the multilingual data,
            # reading that download (absent offline); this database is 3.0 and nothing multilingual is used.
            return None

    folder = _reader_folder(root)
    # nltk only opens corpora under its data path.
    if str(folder) not in nltk.data.path:
        nltk.data.path.append(str(folder))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")   # "the multilingual functions are not available": not used
        return WordNet(Reader(str(folder), None), root)


def have_wordnet() -> bool:
    try:
        load_wordnet()
    except BelugaError:
        return False
    return True
