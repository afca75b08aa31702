"""Loading a Hugging Face dataset by name, failing in seconds (not after ~25 s of retries) when offline."""

from __future__ import annotations

import re
import ssl
import urllib.error
import urllib.request
from typing import Any

from beluga_core.core.errors import BelugaError

# Short enough that an unreachable hub fails in seconds instead of datasets' ~25 s of retries.
HUB_PROBE_TIMEOUT_S = 3.0
HF_NAME = re.compile(r"[A-Za-z0-9][\w.\-]*(/[\w.\-]+){0,2}")


def looks_like_path(source: str, suffixes: tuple[str, ...] = ()) -> bool:
    """Whether ``source`` is meant as a local path (a missing one must not be sent to the network)."""
    if source.startswith(("/", "./", "../", "~", ".")) or "\\" in source:
        return True
    return source.lower().endswith(suffixes)


def hub_reachable(endpoint: str, timeout: float = HUB_PROBE_TIMEOUT_S) -> bool:
    """Whether anything answers at the hub endpoint (urllib honours the *_PROXY variables)."""
    try:
        with urllib.request.urlopen(urllib.request.Request(endpoint, method="HEAD"), timeout=timeout):
            return True
    except urllib.error.HTTPError:
        return True  # an HTTP status, even an error, means the hub answered
    except urllib.error.URLError as exc:
        # A TLS failure means a server answered; a custom CA bundle may make it work for the hub client.
        return isinstance(exc.reason, ssl.SSLError)
    except ssl.SSLError:
        return True
    except OSError:  # timeouts and resets that urllib does not wrap
        return False


def split_name(source: str) -> tuple[str, str | None]:
    """``glue/sst2`` → ("glue", "sst2"); ``nyu-mll/glue/sst2`` → ("nyu-mll/glue", "sst2")."""
    parts = source.split("/")
    if len(parts) == 1:
        return parts[0], None
    if len(parts) == 2:
        return parts[0], parts[1]
    return "/".join(parts[:2]), parts[2]


def load_hub_dataset(source: str, alternatives: str) -> Any:
    """``datasets.load_dataset`` of a ``NAME[/CONFIG]`` source; ``alternatives`` ends the error messages
    (what the user can use instead)."""
    import datasets  # lazily: importing it costs about a second

    name, config = split_name(source)
    desc = f"Hugging Face dataset '{name}'" + (f" (config '{config}')" if config else "")
    alternatives = f"'{source}' is not an existing local directory either. {alternatives}"
    offline = bool(getattr(datasets.config, "HF_HUB_OFFLINE", False))
    if not offline:
        from huggingface_hub import constants

        if not hub_reachable(constants.ENDPOINT):
            raise BelugaError(f"cannot load {desc}: the Hugging Face hub ({constants.ENDPOINT}) is unreachable "
                              f"(probed with a {HUB_PROBE_TIMEOUT_S:g} s timeout). Set HF_HUB_OFFLINE=1 to use "
                              f"a copy already in the local Hugging Face cache. {alternatives}.")
    try:
        return datasets.load_dataset(name, config) if config else datasets.load_dataset(name)
    except (OSError, ValueError, datasets.exceptions.DatasetsError) as exc:
        if offline and isinstance(exc, ConnectionError):
            raise BelugaError(f"cannot load {desc}: offline mode is on (HF_HUB_OFFLINE), so the hub is "
                              f"unreachable, and the dataset is not in the local Hugging Face cache. "
                              f"{alternatives}.") from exc
        raise BelugaError(f"cannot load {desc}: {type(exc).__name__}: {exc}") from exc
