"""Builders of the package data beluga ships (``beluga_core/data/builtin``): each writes its files from a named
source, deterministically, and most can ``--check`` the shipped bytes. Run as ``python -m tools.data.build_…``."""

from __future__ import annotations

import hashlib
import sys
from collections.abc import Mapping
from pathlib import Path


def write_or_check(files: Mapping[Path, bytes], check: bool) -> int:
    """Write each built file (0), or with ``check`` write nothing and compare it with the file there: 0 when every
    one is the same bytes, else 1, naming those that differ. The exit code of a builder's ``main``."""
    stale = []
    for target, data in files.items():
        if check:
            if not target.is_file() or target.read_bytes() != data:
                stale.append(str(target))
            continue
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_bytes(data)
        print(f"wrote {target} ({len(data):,} bytes, sha256 {hashlib.sha256(data).hexdigest()[:16]}…)")
    if stale:
        print(f"differ from a fresh build: {', '.join(stale)}", file=sys.stderr)
        return 1
    if check:
        print(f"up to date: {', '.join(str(t) for t in files)}")
    return 0
