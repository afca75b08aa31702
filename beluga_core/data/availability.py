"""Whether what a plan needs is at hand offline, checked without loading it (``beluga run --dry-run``).

Only names and caches are looked at: a dry run never loads a model or an i.i.d. dataset.
"""

from __future__ import annotations

import os
from pathlib import Path

from beluga_core.data.pretrained import EMBEDDED


def _hf_home() -> Path:
    return Path(os.environ.get("HF_HOME") or Path.home() / ".cache" / "huggingface")


def _hub_cache() -> Path:
    return Path(os.environ.get("HF_HUB_CACHE") or os.environ.get("HUGGINGFACE_HUB_CACHE") or _hf_home() / "hub")


def _datasets_cache() -> Path:
    return Path(os.environ.get("HF_DATASETS_CACHE") or _hf_home() / "datasets")


def iid_availability(source: str) -> tuple[bool, str]:
    """(available offline, how) for a task's ``iid`` source."""
    if source.startswith("builtin:"):
        return True, "shipped with beluga"
    if Path(source).expanduser().exists():
        return True, "local path"
    name = source.split("/")
    repo = name[0] if len(name) <= 2 else "/".join(name[:2])
    # GLUE moved to nyu-mll/glue on the hub; `glue` resolves there.
    repos = {repo, "nyu-mll/glue"} if repo == "glue" else {repo}
    hub = [_hub_cache() / f"datasets--{r.replace('/', '--')}" for r in repos]
    local = [_datasets_cache() / r.replace("/", "___") for r in repos]
    if any(p.exists() for p in [*hub, *local]):
        return True, CACHED
    return False, f"Hugging Face dataset {NOT_CACHED_MARK}: needs the hub (network) on first use"


def model_availability(name: str) -> tuple[bool, str]:
    if name in EMBEDDED:
        import importlib.util

        ok = importlib.util.find_spec(EMBEDDED[name]) is not None
        return ok, "embedded package installed" if ok else f"needs pip install {EMBEDDED[name].replace('_', '-')}"
    if Path(name).expanduser().exists():
        return True, "local path"
    if (_hub_cache() / f"models--{name.replace('/', '--')}").exists():
        return True, CACHED
    return False, f"hub model {NOT_CACHED_MARK}: needs the hub (network) on first use"


# What ``*_availability`` says of a name found in the Hugging Face cache, and of one that is not.
CACHED = "in the local Hugging Face cache"
NOT_CACHED_MARK = "not in the local cache"


def hub_status(availability: tuple[bool, str]) -> str | None:
    """For a hub name, what a run will do with it: ``cached`` or ``will download``; None for anything else
    (a builtin, an embedded model, a local path)."""
    ok, how = availability
    if how == CACHED:
        return "cached"
    if not ok and NOT_CACHED_MARK in how:
        return "will download" + (" — but offline mode is on (HF_HUB_OFFLINE): the run will stop" if hub_offline()
                                  else " before the first training (needs the hub)")
    return None


def hub_offline() -> bool:
    """Whether Hugging Face's offline mode is on (``HF_HUB_OFFLINE``), as huggingface_hub reads it."""
    return os.environ.get("HF_HUB_OFFLINE", "").strip().lower() in ("1", "on", "yes", "true")


def unreachable_hub_names(needed: list[tuple[str, str, tuple[bool, str]]]) -> list[tuple[str, str, str]]:
    """(field, name, why) for every ``(field, name, availability)`` that is neither at hand nor downloadable
    now: not in the local cache while offline mode is on or the hub does not answer. Probes the hub once, and
    only when something is missing."""
    missing = [(field, name) for field, name, (ok, _) in needed if not ok]
    if not missing:
        return []
    if hub_offline():
        why = "not in the local Hugging Face cache, and offline mode is on (HF_HUB_OFFLINE)"
    else:
        from huggingface_hub import constants

        from beluga_core.data.iid.hub import hub_reachable

        if hub_reachable(constants.ENDPOINT):
            return []
        why = f"not in the local Hugging Face cache, and the hub ({constants.ENDPOINT}) does not answer"
    return [(field, name, why) for field, name in missing]
