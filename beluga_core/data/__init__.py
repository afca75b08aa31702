"""The inputs layer: suites, i.i.d. datasets, CheckList import and the seeded splits.

Files shipped with beluga (suites, SST-2, SST, the offline fixtures, the CheckList expectation table) live in
``builtin/``, each with its provenance.
"""

from pathlib import Path

BUILTIN_DATA = Path(__file__).resolve().parent / "builtin"
