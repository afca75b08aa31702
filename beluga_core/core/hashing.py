"""Content identities: one canonical hash for jobs, splits and case-id lists."""

from __future__ import annotations

import hashlib
import json
from collections.abc import Sequence
from functools import lru_cache
from typing import Any


def digest(obj: Any) -> str:
    """sha256 of the canonical JSON of ``obj`` (sorted keys; non-JSON values by ``str``)."""
    return hashlib.sha256(json.dumps(obj, sort_keys=True, default=str).encode()).hexdigest()


@lru_cache(maxsize=8192)
def ids_digest(ids: tuple[str, ...]) -> str:
    """``digest`` of a tuple of ids; cached: the same fold's (tens of thousands of) case ids recur in every
    configuration, method and grid point."""
    return digest(ids)


def sorted_ids_digest(ids: Sequence[str]) -> str:
    """Order-free identity of a set of ids (what a model trained on, whatever order it saw them in)."""
    return ids_digest(tuple(sorted(ids)))
