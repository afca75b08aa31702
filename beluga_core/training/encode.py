"""Tokenizing inputs once and padding batches dynamically."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any

import torch

from beluga_core.suite.schema import Input

Encoded = tuple[list[int], list[int] | None]  # input ids, token type ids


class Encoder:
    """Tokenizes each distinct input once per process and keeps the ids for every later fold."""

    def __init__(self, tokenizer: Any, max_length: int) -> None:
        self.tokenizer = tokenizer
        self.max_length = max_length
        self.pad_id = tokenizer.pad_token_id or 0
        self._cache: dict[Input, Encoded] = {}

    def encode_many(self, inputs: Iterable[Input]) -> None:
        missing = list(dict.fromkeys(x for x in inputs if x not in self._cache))
        if not missing:
            return
        step = 4096
        for start in range(0, len(missing), step):
            chunk = missing[start:start + step]
            singles = [x for x in chunk if isinstance(x, str)]
            pairs = [x for x in chunk if not isinstance(x, str)]
            for group, args in ((singles, (singles,)),
                                (pairs, ([p[0] for p in pairs], [p[1] for p in pairs]))):
                if not group:
                    continue
                enc = self.tokenizer(*args, truncation=True, max_length=self.max_length)
                types = enc.get("token_type_ids")
                for i, x in enumerate(group):
                    self._cache[x] = (enc["input_ids"][i], types[i] if types is not None else None)

    def __getitem__(self, x: Input) -> Encoded:
        if x not in self._cache:
            self.encode_many([x])
        return self._cache[x]

    def length(self, x: Input) -> int:
        return len(self[x][0])

    def collate(self, inputs: Sequence[Input]) -> dict[str, torch.Tensor]:
        encoded = [self[x] for x in inputs]
        width = max(len(ids) for ids, _ in encoded)
        ids = torch.full((len(encoded), width), self.pad_id, dtype=torch.long)
        mask = torch.zeros((len(encoded), width), dtype=torch.long)
        has_types = encoded[0][1] is not None
        types = torch.zeros((len(encoded), width), dtype=torch.long) if has_types else None
        for row, (tok, typ) in enumerate(encoded):
            n = len(tok)
            ids[row, :n] = torch.tensor(tok)
            mask[row, :n] = 1
            if types is not None and typ is not None:
                types[row, :n] = torch.tensor(typ)
        batch = {"input_ids": ids, "attention_mask": mask}
        if types is not None:
            batch["token_type_ids"] = types
        return batch
