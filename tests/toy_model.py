"""The toy pretrained model of the tests: a 2-layer BERT with hidden size 64, seeded weights and MiniLM's
tokenizer, written once as an ordinary model folder (``tests/data/models/toy-bert``, ignored by git).

Tests whose assertions are about behaviour (what a run writes, resumes, refuses, reports) train it instead of
MiniLM: a tiny fold's cost is mostly the optimizer step over the embedding matrix and loading the weights, and
both shrink with the hidden size (30,522 × 64 parameters in the embeddings instead of × 384). It is a folder, not
a special name, so ``from_pretrained``, ``beluga export``, ``store:`` starts and the tokenizer checks take the
same paths as a user's local model. Tests that need a model that really learns keep ``embedded:minilm``
(listed with their reasons in docs/project/development.md). No user default names it.
"""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

from filelock import FileLock

TOY_DIR = Path(__file__).resolve().parent / "data" / "models" / "toy-bert"
# What a TOML under tests/data names it by (paths in a config are relative to the config's folder).
TOY_NAME = "models/toy-bert"
# BERT's own module names (query, key, value, dense…), so that peft's default targets apply.
TOY_CONFIG = {
    "architectures": ["BertModel"], "model_type": "bert", "vocab_size": 30522, "hidden_size": 64,
    "num_hidden_layers": 2, "num_attention_heads": 2, "intermediate_size": 128, "hidden_act": "gelu",
    "hidden_dropout_prob": 0.1, "attention_probs_dropout_prob": 0.1, "max_position_embeddings": 512,
    "type_vocab_size": 2, "initializer_range": 0.02, "layer_norm_eps": 1e-12, "pad_token_id": 0,
    "position_embedding_type": "absolute",
}
_TOKENIZER_FILES = ("tokenizer.json", "tokenizer_config.json", "vocab.txt", "special_tokens_map.json")
SEED = 20261128


def toy_model() -> Path:
    """The toy model's folder, written on first use (under a file lock: pytest-xdist workers may ask at once)."""
    stamp = TOY_DIR / ".complete"
    if stamp.exists() and json.loads(stamp.read_text()) == _spec():
        return TOY_DIR
    TOY_DIR.parent.mkdir(parents=True, exist_ok=True)
    with FileLock(str(TOY_DIR.parent / ".toy-bert.lock")):
        if stamp.exists() and json.loads(stamp.read_text()) == _spec():
            return TOY_DIR
        _write(TOY_DIR)
        stamp.write_text(json.dumps(_spec()))
    return TOY_DIR


def _spec() -> dict[str, object]:
    import transformers

    return {"config": TOY_CONFIG, "seed": SEED, "transformers": transformers.__version__}


def _write(folder: Path) -> None:
    import torch
    from transformers import BertConfig, BertModel

    from beluga_core.data.pretrained import resolve_model_path

    partial = folder.with_name(folder.name + f".partial-{os.getpid()}")
    shutil.rmtree(partial, ignore_errors=True)
    partial.mkdir(parents=True)
    minilm = Path(resolve_model_path("embedded:minilm"))
    for name in _TOKENIZER_FILES:
        shutil.copy(minilm / name, partial / name)
    fields = {k: v for k, v in TOY_CONFIG.items() if k not in ("architectures", "model_type")}
    generator_state = torch.random.get_rng_state()
    try:
        torch.manual_seed(SEED)   # the same weights on every machine, whatever ran before
        BertModel(BertConfig(**fields)).save_pretrained(partial)
    finally:
        torch.random.set_rng_state(generator_state)
    shutil.rmtree(folder, ignore_errors=True)
    partial.rename(folder)
