"""A trained classifier as model-dependent generators see it (``TargetModel``): probabilities, loss gradients at
the word embeddings, token attributions — each through the task's own encoder, so a relation model reads its
entity markers as the single ``[unused0]``–``[unused3]`` ids it was trained with.

Everything runs in fp32 without autocast and in eval mode (no dropout): an attack's success must not depend on
rounding or on a random mask.
"""

from __future__ import annotations

import bisect
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
import torch

from beluga_core.attributions.attribution_context import ModelContext, fp32
from beluga_core.contracts.attributions import TokenizedInput, normalize
from beluga_core.contracts.generators import TokenScores, WordGradients
from beluga_core.contracts.registries import ATTRIBUTIONS
from beluga_core.contracts.tasks import Task
from beluga_core.core.errors import BelugaError
from beluga_core.data.suite.suite_schema import Input


class LoadedModel:
    """``TargetModel`` over a task's classifier (``name`` is what the suite header records)."""

    def __init__(self, model: torch.nn.Module, tokenizer: Any, task: Task[Any], max_length: int, name: str, *,
                 device: torch.device | None = None, batch_size: int = 64) -> None:
        labels = task.head_labels
        if labels is None:
            raise BelugaError(f"task '{task.name}' is not a classifier: attacks and counterfactual masking need "
                              "class probabilities")
        self.device = device or torch.device("cpu")
        self.model = model.to(self.device).eval()
        self.tokenizer = tokenizer
        self.task = task
        self.encoder = task.make_encoder(tokenizer, max_length)
        self.max_length = max_length
        self.name = name
        self.labels: tuple[str, ...] = tuple(labels)
        self.queries = 0
        self.batch_size = batch_size
        self.unk_token = str(tokenizer.unk_token or "[UNK]")
        self._index = {label: i for i, label in enumerate(self.labels)}

    def label_id(self, label: str) -> int:
        if label not in self._index:
            raise BelugaError(f"label '{label}' is not a class of the model ({', '.join(self.labels)})")
        return self._index[label]

    # -- TargetModel -----------------------------------------------------------------------------------------
    def probabilities(self, inputs: Sequence[Input]) -> np.ndarray:
        out = []
        self.queries += len(inputs)
        for start in range(0, len(inputs), self.batch_size):
            chunk = list(inputs[start:start + self.batch_size])
            with torch.no_grad(), fp32(self.device):
                logits = self.model(**self.task.features(self.encoder, chunk, self.device)).logits
            out.append(torch.softmax(logits.float(), dim=-1).cpu().numpy())
        return np.concatenate(out) if out else np.zeros((0, len(self.labels)), dtype=np.float32)

    def embeddings(self) -> np.ndarray:
        weight = self.task.input_embeddings(self.model).weight
        assert isinstance(weight, torch.Tensor)
        return np.asarray(weight.detach().float().cpu().numpy())

    def vocabulary(self) -> Sequence[str]:
        vocab = self.tokenizer.get_vocab()
        tokens = [""] * (max(vocab.values()) + 1)
        for token, i in vocab.items():
            tokens[i] = token
        return tokens

    def word_gradients(self, xs: Sequence[str], label: str) -> list[WordGradients]:
        """One forward and backward pass for all of ``xs``: the summed loss's gradient at a text's embeddings is
        that text's own (the texts of a batch do not interact)."""
        if not xs:
            return []
        pieces = [self._pieces(x) for x in xs]
        self.queries += len(xs)
        features = self.task.features(self.encoder, list(xs), self.device)
        layer = self.task.input_embeddings(self.model)
        target = torch.full((len(xs),), self.label_id(label), device=self.device)
        with fp32(self.device):
            emb = layer(features["input_ids"]).detach().requires_grad_(True)
            logits = self.task.forward_embeddings(self.model, features, emb)
            assert isinstance(logits, torch.Tensor)
            losses = torch.nn.functional.cross_entropy(logits.float(), target, reduction="none")
        (grad,) = torch.autograd.grad(losses.sum(), emb)
        out = []
        for row, (words, word_of, ids) in enumerate(pieces):
            g = grad[row].float().cpu().numpy()
            per_word = np.zeros((len(words), g.shape[1]), dtype=np.float32)
            chosen: list[list[int]] = [[] for _ in words]
            for pos, w in enumerate(word_of):
                if w >= 0:
                    if not chosen[w]:
                        per_word[w] = g[pos]
                    chosen[w].append(ids[pos])
            out.append(WordGradients(tuple(words), tuple(tuple(c) for c in chosen), per_word,
                                     float(losses[row].detach())))
        return out

    def substituted_gradients(self, x: str, label: str, words: Sequence[int],
                              embeddings: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Row (i, k) of one batched pass is ``x`` with word ``words[i]``'s first piece embedded as
        ``embeddings[k]``; its loss and the gradient at that piece."""
        _, word_of, _ = self._pieces(x)
        missing = [w for w in words if w not in word_of]
        if missing:
            raise BelugaError(f"word {missing[0]} of the input has no token in the model's input (truncated?)")
        slots = [(word_of.index(w), k) for w in words for k in range(len(embeddings))]
        values = torch.as_tensor(np.asarray(embeddings), dtype=torch.float32, device=self.device)
        layer = self.task.input_embeddings(self.model)
        target_id = self.label_id(label)
        losses, grads = [], []
        self.queries += len(slots)
        for start in range(0, len(slots), self.batch_size):
            chunk = slots[start:start + self.batch_size]
            features = self.task.features(self.encoder, [x] * len(chunk), self.device)
            rows = torch.arange(len(chunk), device=self.device)
            tokens = torch.tensor([t for t, _ in chunk], device=self.device)
            with fp32(self.device):
                emb = layer(features["input_ids"]).detach().float()
                emb[rows, tokens] = values[[k for _, k in chunk]]
                emb.requires_grad_(True)
                logits = self.task.forward_embeddings(self.model, features, emb)
                assert isinstance(logits, torch.Tensor)
                loss = torch.nn.functional.cross_entropy(
                    logits.float(), torch.full((len(chunk),), target_id, device=self.device), reduction="none")
            (grad,) = torch.autograd.grad(loss.sum(), emb)
            losses.append(loss.detach().cpu().numpy())
            grads.append(grad[rows, tokens].float().cpu().numpy())
        shape = (len(words), len(embeddings))
        return (np.concatenate(losses).reshape(shape).astype(np.float64),
                np.concatenate(grads).reshape(*shape, -1).astype(np.float64))

    def attribute(self, x: str, label: str, method: str, options: Mapping[str, Any]) -> TokenScores:
        _, word_of, ids = self._pieces(x)
        estimator = ATTRIBUTIONS.get(method)(dict(options))
        objective = estimator.option_values.get("objective", "prob")
        ctx = ModelContext(self.model, self.tokenizer, self.device, objective=objective)
        types = self.encoder[x][1]
        special = set(self.tokenizer.all_special_ids)
        tokens = tuple(self.tokenizer.convert_ids_to_tokens(ids))
        tx = TokenizedInput(tuple(ids), tokens, tuple((0, 0) for _ in ids),
                            tuple(-1 if i in special else 0 for i in ids), tuple(word_of),
                            tuple(types) if types is not None else None)
        target = self.label_id(label)
        self.queries += 1
        with torch.enable_grad():
            scores = estimator.attribute(ctx, tx, target, np.random.default_rng(0))
        return TokenScores(tokens, tuple(word_of), normalize(scores, str(estimator.option_values["normalize"])))

    # -- helpers -----------------------------------------------------------------------------------------------
    def _pieces(self, x: str) -> tuple[list[str], list[int], list[int]]:
        """The whitespace words of ``x``, the word each token of the model's input comes from (−1: special
        tokens and entity markers) and the token ids, identical to what the task's encoder feeds the model."""
        if not isinstance(x, str):
            raise BelugaError("attacks and counterfactual masking read single texts (or marked relation texts)")
        model_text = getattr(self.encoder, "model_text", None)
        text = model_text(x) if callable(model_text) else x
        enc = self.tokenizer(text, truncation=True, max_length=self.max_length, return_offsets_mapping=True)
        ids = list(enc["input_ids"])
        if ids != list(self.encoder[x][0]):
            raise BelugaError("the tokenizer's offsets disagree with the task's encoder on an input; attacks "
                              "need the same tokens", field="model")
        words = text.split()
        starts, ends, pos = [], [], 0
        for w in words:
            pos = text.index(w, pos)
            starts.append(pos)
            ends.append(pos + len(w))
            pos += len(w)
        original = x.split()
        special = set(self.tokenizer.all_special_ids)
        word_of = []
        for tid, (a, b) in zip(ids, enc["offset_mapping"], strict=True):
            if tid in special or a == b:
                word_of.append(-1)
                continue
            w = bisect.bisect_right(starts, a) - 1
            # Entity markers are words of the input, never words an attack or a mask may touch.
            word_of.append(w if 0 <= w < len(words) and a < ends[w] and original[w] == words[w] else -1)
        return original, word_of, ids
