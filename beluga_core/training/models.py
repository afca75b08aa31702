"""Loading pretrained models and tokenizers, and choosing the device."""

from __future__ import annotations

from typing import Any

import torch

from beluga_core.core.errors import BelugaError
from beluga_core.core.machine import usable_cores
from beluga_core.data.pretrained import offline_hint, resolve_model_path


def pick_device(spec: str = "auto") -> torch.device:
    if spec == "auto":
        return torch.device("cuda" if torch.cuda.is_available() else "cpu")
    try:
        dev = torch.device(spec)
    except RuntimeError:
        raise BelugaError(f"unknown device '{spec}'; use auto, cpu, cuda or cuda:N") from None
    if dev.type == "cuda" and not torch.cuda.is_available():
        raise BelugaError(f"device '{spec}' requested but no CUDA GPU is available")
    return dev


def load_tokenizer(name: str, *, local_only: bool = False) -> Any:
    """``name``'s tokenizer; ``local_only``: only from this machine (the hub's cache, a folder), never downloaded
    (without a network, a download attempt waits out its connection timeouts: tens of seconds)."""
    from transformers import AutoTokenizer

    path = resolve_model_path(name)
    try:
        return AutoTokenizer.from_pretrained(path, local_files_only=local_only)
    except OSError as exc:
        raise BelugaError(f"cannot load tokenizer '{name}': {exc}{offline_hint(path)}") from None


def load_sequence_classifier(name: str, num_labels: int, *, dropout: float | None = None, seed: int = 0,
                             config_overrides: dict[str, Any] | None = None) -> torch.nn.Module:
    """A transformers sequence-classification model; the new head is initialised from ``seed``."""
    from transformers import AutoModelForSequenceClassification

    return load_pretrained(AutoModelForSequenceClassification, name, {"num_labels": num_labels},
                           dropout=dropout, seed=seed, config_overrides=config_overrides)


def load_pretrained(auto_class: Any, name: str, overrides: dict[str, Any] | None = None, *,
                    dropout: float | None = None, seed: int = 0,
                    config_overrides: dict[str, Any] | None = None) -> torch.nn.Module:
    """``auto_class.from_pretrained`` of a hub name, local path or embedded model; the config takes the
    user's ``config_overrides`` (``[model] config_overrides``), then the task's ``overrides`` (its head), then
    ``dropout`` (the dropout method). A head the checkpoint lacks is initialised from ``seed``."""
    from transformers import AutoConfig
    from transformers.utils import logging as hf_logging

    path = resolve_model_path(name)
    overrides = {**(config_overrides or {}), **(overrides or {})}
    try:
        config = AutoConfig.from_pretrained(path, **overrides)
    except OSError as exc:
        raise BelugaError(f"cannot load model '{name}': {exc}{offline_hint(path)}") from None
    if dropout is not None:
        set_dropout(config, dropout, name)
    verbosity = hf_logging.get_verbosity()
    # The new head's weights are reported as missing by design; that report (and a per-load progress bar)
    # is noise for users.
    hf_logging.set_verbosity_error()
    hf_logging.disable_progress_bar()
    try:
        # The head's initialisation comes from ``seed`` without touching the global RNG: a job that builds
        # the model (the first of a process) must train with the same dropout masks as one that reuses it.
        # The model is built on the CPU, so only the CPU generator is seeded (and restored): torch.manual_seed
        # would also re-seed every CUDA generator, which fork_rng(devices=[]) does not restore, and the job
        # building the model would then train with other CUDA dropout masks than the job reusing it.
        with torch.random.fork_rng(devices=[]):
            torch.default_generator.manual_seed(seed)
            return auto_class.from_pretrained(path, config=config)
    except ValueError as exc:  # a model type without this head (e.g. no question-answering variant)
        raise BelugaError(f"model '{name}' has no {auto_class.__name__} variant in transformers: {exc}") from None
    finally:
        hf_logging.set_verbosity(verbosity)


# The hidden and attention dropout settings of the model families transformers ships: BERT, RoBERTa,
# ELECTRA, DeBERTa, ALBERT, MiniLM (the first two); DistilBERT, BART, XLM (dropout, attention_dropout);
# T5 (dropout_rate); GPT-2 (resid_pdrop, embd_pdrop, attn_pdrop).
DROPOUT_KEYS = ("hidden_dropout_prob", "attention_probs_dropout_prob", "dropout", "attention_dropout",
                "dropout_rate", "resid_pdrop", "embd_pdrop", "attn_pdrop")
# A classification head's own dropout, where it does not follow the hidden one (BERT's classifier_dropout
# is None, meaning "as hidden_dropout_prob"; DistilBERT's seq_classif_dropout is 0.2).
HEAD_DROPOUT_KEYS = ("classifier_dropout", "seq_classif_dropout")


def set_dropout(config: Any, p: float, name: str) -> None:
    """Set every hidden and attention dropout probability ``config`` has to ``p`` (the dropout method).

    An unknown key would be stored on the config and ignored by the model, so a config with none of the
    known keys is an error rather than a silent no-op."""
    settings = config.to_dict()
    keys = [k for k in DROPOUT_KEYS if k in settings]
    if not keys:
        raise BelugaError(f"the dropout method cannot set the dropout of model '{name}': its "
                          f"{config.model_type} config has none of {', '.join(DROPOUT_KEYS)}; set its own dropout "
                          "settings with [model] config_overrides (and compare with vanilla) instead")
    for key in keys + [k for k in HEAD_DROPOUT_KEYS if settings.get(k) is not None]:
        setattr(config, key, p)


def configure_threads(threads: int, workers: int = 1) -> None:
    # Oversubscribed CPU threads collapse throughput (benchmarks/perf/RESULTS.md): split the cores between workers.
    if threads <= 0:
        threads = max(1, usable_cores() // max(1, workers))
    torch.set_num_threads(threads)


def local_classifier_config(name: str, num_labels: int = 2, config_overrides: dict[str, Any] | None = None) -> Any:
    """The config of a sequence classifier of model ``name`` (with ``config_overrides``), read from this machine
    only (a dry run never reaches for the hub); None when it cannot be read here."""
    from transformers import AutoConfig

    try:
        return AutoConfig.from_pretrained(resolve_model_path(name), num_labels=num_labels, local_files_only=True,
                                          **(config_overrides or {}))
    except (OSError, ValueError, TypeError):
        return None


def meta_classifier(name: str, config_overrides: dict[str, Any] | None = None,
                    num_labels: int = 2) -> torch.nn.Module | None:
    """A sequence classifier of model ``name`` (with ``config_overrides``) built on the meta device: its structure
    and sizes, no weights read, no memory; None when its config cannot be read here."""
    from transformers import AutoModelForSequenceClassification

    config = local_classifier_config(name, num_labels, config_overrides)
    if config is None:
        return None
    try:
        with torch.device("meta"):
            model: torch.nn.Module = AutoModelForSequenceClassification.from_config(config)
    except (OSError, ValueError, TypeError):
        return None
    return model


def parameter_count(name: str, config_overrides: dict[str, Any] | None = None, num_labels: int = 2) -> int | None:
    """Parameters of a sequence classifier of model ``name`` (with ``config_overrides``), counted on a model
    built on the meta device (no weights read, no memory); None when its config cannot be read here."""
    model = meta_classifier(name, config_overrides, num_labels)
    return None if model is None else sum(p.numel() for p in model.parameters())
