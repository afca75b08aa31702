"""Build the shipped Stanford Sentiment Treebank sentences, ``builtin:sst3`` and ``builtin:sst5``.

Reads SST's sentence-level splits from the shared data folder (``data/sst/{train,dev,test}.tsv.xz`` under
``$BELUGA_SHARED``, or under ``../shared`` beside the repository root), repairs their mojibake and writes
``beluga_core/data/builtin/sst/{train,dev,test}.tsv.xz``; see that folder's PROVENANCE.md.

Why a repair: SST's ``datasetSentences.txt`` holds UTF-8 text that was once decoded as Latin-1 and encoded
again, so ``André`` reads ``AndrÃ©`` and ``8 1\\/2`` (with a no-break space) reads ``8Â 1\\/2``. A model that
reads those sentences sees tokens no other text has. The repair is the exact inverse of that accident,
``sentence.encode("latin-1").decode("utf-8")``, applied to a sentence only when it has non-ASCII characters
and the round trip succeeds (text that really is Latin-1 fails to decode as UTF-8 and stays as it is). After
it, no sentence may still look like mojibake, else the build stops. Nothing else changes: SST's Penn
Treebank tokenisation (`` `` ``, ``''``, ``\\/``, ``\\*``, spaces around punctuation) is kept as it is,
and so are the other columns, the header, the row order and the LF line endings; every unchanged line is
checked to be byte-identical to the source's.

When ``ftfy`` is importable (a build-time tool only, never a dependency of beluga) every sentence is also
run through ``ftfy.fix_text`` with only its encoding repairs switched on, and the build stops if the two
disagree anywhere.

The ``.xz`` files are written by Python's ``lzma`` with fixed settings (preset 9 | extreme, CRC64 check; the
format stores no timestamp), so the same input and liblzma give byte-identical output.
``tests/unit/data/test_sst_data.py`` reruns ``convert`` in memory and compares with the shipped files.

    python -m tools.data.build_sst          # rewrites beluga_core/data/builtin/sst/*.tsv.xz
    python -m tools.data.build_sst --check  # writes nothing; exit 1 when the shipped files differ
    python -m tools.data.build_sst --all    # lists every changed sentence, not only a few
"""

from __future__ import annotations

import argparse
import lzma
import os
import re
import sys
from dataclasses import dataclass, field
from pathlib import Path

from tools.data import write_or_check

REPO_ROOT = Path(__file__).resolve().parents[2]
OUT_DIR = REPO_ROOT / "beluga_core" / "data" / "builtin" / "sst"
SPLITS = ("train", "dev", "test")
HEADER = ("sentence_index", "sentence", "score", "label5", "label3")
SENTENCE = HEADER.index("sentence")
XZ_SETTINGS = {"format": lzma.FORMAT_XZ, "check": lzma.CHECK_CRC64, "preset": 9 | lzma.PRESET_EXTREME}

# What UTF-8 read as Latin-1 (or cp1252) looks like: a lead byte U+00C2..U+00F4 followed by a continuation
# byte U+0080..U+00BF, the cp1252 forms of U+2018..U+201D ("â€"), or a replacement character.
MOJIBAKE = re.compile("[\u00c2-\u00f4][\u0080-\u00bf]|\u00e2\u20ac|\ufffd")


@dataclass
class Converted:
    """One split: the compressed output, and (sentence_index, before, after) for every changed sentence."""

    split: str
    text: str
    data: bytes
    changes: list[tuple[str, str, str]] = field(default_factory=list)


def shared_sst_dir() -> Path:
    """``data/sst`` of the shared folder; a clear error when it is not on this machine."""
    env = os.environ.get("BELUGA_SHARED")
    root = Path(env) if env else REPO_ROOT.parent / "shared"
    folder = root / "data" / "sst"
    missing = [s for s in SPLITS if not (folder / f"{s}.tsv.xz").is_file()]
    if missing:
        how = "$BELUGA_SHARED" if env else "../shared beside the repository root (or set BELUGA_SHARED)"
        raise FileNotFoundError(f"SST source files not found: {', '.join(f'{s}.tsv.xz' for s in missing)} "
                                f"in {folder} (looked in {how})")
    return folder


def fix_mojibake(sentence: str) -> str:
    """The sentence with its UTF-8-read-as-Latin-1 text undone; unchanged if ASCII or the round trip fails."""
    if sentence.isascii():
        return sentence
    try:
        return sentence.encode("latin-1").decode("utf-8")
    except UnicodeError:  # not Latin-1-representable, or not UTF-8 underneath: not this kind of mojibake
        return sentence


def convert_text(text: str, where: str = "input") -> tuple[str, list[tuple[str, str, str]]]:
    """The TSV ``text`` with every sentence repaired, and the changes; every other byte is kept."""
    if "\r" in text or not text.endswith("\n"):
        raise ValueError(f"{where}: expected LF line endings and a final newline")
    lines = text.split("\n")[:-1]
    if tuple(lines[0].split("\t")) != HEADER:
        raise ValueError(f"{where}: header {lines[0]!r}, expected {chr(9).join(HEADER)!r}")
    out = [lines[0]]
    changes = []
    for lineno, line in enumerate(lines[1:], start=2):
        parts = line.split("\t")
        if len(parts) != len(HEADER):
            raise ValueError(f"{where} line {lineno}: {len(parts)} fields, expected {len(HEADER)}")
        before = parts[SENTENCE]
        after = fix_mojibake(before)
        if MOJIBAKE.search(after):
            raise ValueError(f"{where} line {lineno}: still looks like mojibake after the repair: {after!r}")
        if after != before:
            if any(ch in after for ch in "\t\n\r"):
                raise ValueError(f"{where} line {lineno}: the repair made a tab or line break: {after!r}")
            parts[SENTENCE] = after
            changes.append((parts[0], before, after))
        new = "\t".join(parts)
        if after == before and new != line:
            raise AssertionError(f"{where} line {lineno}: an unchanged line must stay byte-identical")
        out.append(new)
    return "\n".join(out) + "\n", changes


def compress(text: str) -> bytes:
    return lzma.compress(text.encode("utf-8"), format=XZ_SETTINGS["format"], check=XZ_SETTINGS["check"],
                         preset=XZ_SETTINGS["preset"])


def convert(source: Path, split: str) -> Converted:
    """Read ``source/SPLIT.tsv.xz``, repair it, and compress it as shipped."""
    where = str(source / f"{split}.tsv.xz")
    text, changes = convert_text(lzma.decompress((source / f"{split}.tsv.xz").read_bytes()).decode("utf-8"),
                                 where)
    return Converted(split, text, compress(text), changes)


def cross_check_with_ftfy(source: Path) -> str:
    """Compare the round trip with ftfy's encoding repair on every sentence; a note for the log."""
    try:
        import ftfy
    except ImportError:
        return "ftfy not installed: cross-check skipped (pip install ftfy to run it)"
    config = ftfy.TextFixerConfig(
        unescape_html=False, remove_terminal_escapes=False, fix_encoding=True, restore_byte_a0=True,
        replace_lossy_sequences=False, decode_inconsistent_utf8=True, fix_c1_controls=False,
        fix_latin_ligatures=False, fix_character_width=False, uncurl_quotes=False, fix_line_breaks=False,
        fix_surrogates=False, remove_control_chars=False, normalization=None, explain=False)
    n = 0
    for split in SPLITS:
        text = lzma.decompress((source / f"{split}.tsv.xz").read_bytes()).decode("utf-8")
        for line in text.split("\n")[1:]:
            if not line:
                continue
            sentence = line.split("\t")[SENTENCE]
            ours, theirs = fix_mojibake(sentence), ftfy.fix_text(sentence, config)
            if ours != theirs:
                raise AssertionError(f"{split}: ftfy {ftfy.__version__} and the round trip disagree on "
                                     f"{sentence!r}: {theirs!r} vs {ours!r}")
            n += 1
    return f"ftfy {ftfy.__version__} (encoding repairs only) agrees on all {n:,} sentences"


def _changed_words(before: str, after: str) -> str:
    pairs = [(b, a) for b, a in zip(before.split(" "), after.split(" "), strict=True) if b != a]
    return ", ".join(f"{b!r} -> {a!r}" if not (b + a).isprintable() or "\u00a0" in b + a else f"{b} -> {a}"
                     for b, a in pairs)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--check", action="store_true", help="write nothing; exit 1 if the shipped files differ")
    parser.add_argument("--all", action="store_true", help="list every changed sentence")
    args = parser.parse_args(argv)
    try:
        source = shared_sst_dir()
    except FileNotFoundError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    results = [convert(source, split) for split in SPLITS]
    print(cross_check_with_ftfy(source))
    for res in results:
        rows = res.text.count("\n") - 1
        print(f"{res.split}: {rows:,} sentences, {len(res.changes)} changed by the mojibake repair")
        for index, before, after in res.changes if args.all else res.changes[:3]:
            print(f"  #{index}: {_changed_words(before, after)}")
    return write_or_check({OUT_DIR / f"{res.split}.tsv.xz": res.data for res in results}, args.check)

if __name__ == "__main__":
    sys.exit(main())
