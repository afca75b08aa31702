"""Build ``builtin:s2lct-sentiment``: S²LCT's 11 capabilities searched in SST's held-out test split.

    python -m tools.data.build_s2lct_suite           # writes beluga_core/data/builtin/suites/s2lct-sentiment.jsonl.gz
    python -m tools.data.build_s2lct_suite --check   # writes nothing; exit 1 when the shipped file differs

It is one ``beluga suite generate`` command (``COMMAND``; tests/unit/generators/test_s2lct.py runs the same and
compares the sha256 of the decompressed text with the shipped file):

- source ``builtin:sst3#heldout``: SST's official test split (2,210 sentences with SST's sentiment scores, labels
  by the 0.4 / 0.6 cut-offs), which no run reads: no model trained on builtin:sst2 / sst3 / sst5 saw a seed;
- spec ``builtin:s2lct-sentiment`` with the shipped VADER + WordNet lexicon, 50 seeds per capability (S²LCT's
  later tables; its draft used 10 for memory reasons, which leaves CIs too wide to compare capabilities);
- seed 0; no expansion (it needs a parser, a grammar and a masked language model, none of which is shipped), so
  every case has ``origin = seed``.
"""

from __future__ import annotations

import argparse
import gzip
import hashlib
import sys
import tempfile
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
SHIPPED = REPO / "beluga_core" / "data" / "builtin" / "suites" / "s2lct-sentiment.jsonl.gz"
SEEDS = 50
COMMAND = ("suite", "generate", "s2lct", "--source", "builtin:sst3#heldout", "--option", f"seeds={SEEDS}",
           "--seed", "0", "--name", "s2lct-sentiment")


def build(out: Path) -> None:
    from beluga_core.cli.app import main

    try:
        main([*COMMAND, "--out", str(out)])
    except SystemExit as exc:
        if exc.code:
            raise


def digest(path: Path) -> str:
    return hashlib.sha256(gzip.decompress(path.read_bytes())).hexdigest()


if __name__ == "__main__":
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--check", action="store_true", help="compare a fresh build with the shipped file")
    args = ap.parse_args()
    if args.check:
        with tempfile.TemporaryDirectory() as tmp:
            fresh = Path(tmp) / SHIPPED.name
            build(fresh)
            same = digest(fresh) == digest(SHIPPED)
        print(f"{SHIPPED.name}: {'identical' if same else 'DIFFERS from a fresh build'}")
        sys.exit(0 if same else 1)
    build(SHIPPED)
    print(f"sha256 of the decompressed suite: {digest(SHIPPED)}")
