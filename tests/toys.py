"""Toy models, encoders and training sets for the method tests: the real ``Trainer`` / ``train_stage`` and method
plugins run on them; only the model (a tiny randomly initialised BERT, or a linear layer) and the encoder
(token-id tuples) are stand-ins."""

from __future__ import annotations

import random
from types import SimpleNamespace
from typing import Any

import numpy as np
import torch

from beluga_core.contracts.training import UnitInfo
from beluga_core.tasks.classification import ClassificationTask
from beluga_core.training.trainset import PairUnit, SingleUnit, TrainSet


class ToyTask(ClassificationTask):
    fixed_head = ("negative", "positive")
    text_fields = ("sentence",)


def single(choices: tuple[tuple[Any, Any], ...], env: str) -> SingleUnit:
    return SingleUnit(choices, env, UnitInfo("iid", choices[0][0], None, {}, env))


def pair(original: Any, perturbed: tuple[Any, ...], params: dict[str, Any], env: str) -> PairUnit:
    return PairUnit(original, perturbed, params, env, UnitInfo("suite", original, None, {}, env))


class ToyEncoder:
    """Inputs are tuples of token ids (or, for the linear toy, tuples of floats)."""

    def __init__(self, floats: bool = False) -> None:
        self.floats = floats

    def encode_many(self, inputs: Any) -> None:
        list(inputs)

    def length(self, x: Any) -> int:
        return len(x)

    def collate(self, inputs: list[Any]) -> dict[str, torch.Tensor]:
        if self.floats:
            return {"x": torch.tensor(inputs, dtype=torch.float32)}
        width = max(len(x) for x in inputs)
        ids = torch.tensor([list(x) + [0] * (width - len(x)) for x in inputs])
        return {"input_ids": ids, "attention_mask": (ids != 0).long()}


class LinearToy(torch.nn.Module):
    """logits = W x + b: small enough to compute everything by hand."""

    def __init__(self, d: int = 3, c: int = 2, seed: int = 0) -> None:
        super().__init__()
        torch.manual_seed(seed)
        self.head = torch.nn.Linear(d, c)

    def forward(self, x: torch.Tensor) -> SimpleNamespace:
        return SimpleNamespace(logits=self.head(x))


def tiny_bert(seed: int = 0) -> torch.nn.Module:
    from transformers import BertConfig, BertForSequenceClassification

    torch.manual_seed(seed)
    config = BertConfig(vocab_size=50, hidden_size=16, num_hidden_layers=1, num_attention_heads=2,
                        intermediate_size=32, max_position_embeddings=32, num_labels=2)
    return BertForSequenceClassification(config)


def onehot(label: int) -> np.ndarray:
    return np.eye(2, dtype=np.float32)[label]


def token_trainset(n: int = 24, envs: tuple[str, ...] = ("a",)) -> TrainSet:
    rng = random.Random(0)
    units = []
    for i in range(n):
        label = i % 2
        ids = tuple(rng.randrange(5, 25) + 20 * label for _ in range(rng.randrange(3, 7)))
        units.append(single(((ids, onehot(label)),), envs[i % len(envs)]))
    return TrainSet({"mft": units}, {"mft": "mft"})
