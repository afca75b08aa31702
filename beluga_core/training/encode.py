"""Tokenizing inputs once and padding batches dynamically.

An ``Encoder`` keeps every tokenized input in memory for the process; with a ``TokenCache`` attached
(``training.token_cache.attach``, done by the worker when the run has a cache folder) inputs tokenized by any
earlier fold, run or process are read from disk instead, and what it tokenizes is written there for the next.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import TYPE_CHECKING, Any, ClassVar

import torch

from beluga_core.data.suite.suite_schema import Input

if TYPE_CHECKING:
    from beluga_core.training.token_cache import TokenCache

Encoded = tuple[list[int], list[int] | None]  # input ids, token type ids


class Encoder:
    """Tokenizes each distinct input once per process and keeps the ids for every later fold."""

    # Names what an entry holds, for the on-disk cache (part of its key). A subclass that tokenizes
    # differently or keeps other data per input sets its own name, or None to never be cached on disk.
    disk_format: ClassVar[str | None] = "ids+token_types/1"

    def __init__(self, tokenizer: Any, max_length: int) -> None:
        self.tokenizer = tokenizer
        self.max_length = max_length
        self.pad_id = tokenizer.pad_token_id or 0
        self._cache: dict[Input, Encoded] = {}
        self._disk: TokenCache | None = None

    def attach_disk_cache(self, disk: TokenCache) -> None:
        self._disk = disk

    def encode_many(self, inputs: Iterable[Input]) -> None:
        missing = list(dict.fromkeys(x for x in inputs if x not in self._cache))
        if not missing:
            return
        if self._disk is not None:
            missing = self._from_disk(missing)
            if missing:
                self._disk.refresh()  # another worker may have tokenized them meanwhile
                missing = self._from_disk(missing)
        if not missing:
            return
        self._tokenize(missing)
        if self._disk is not None:
            self._disk.add([(x, self._cache[x]) for x in missing])

    def _from_disk(self, inputs: list[Input]) -> list[Input]:
        assert self._disk is not None
        found = self._disk.get_many(inputs)
        self._cache.update(found)
        return [x for x in inputs if x not in found]

    def _tokenize(self, missing: list[Input]) -> None:
        step = 4096
        for start in range(0, len(missing), step):
            chunk = missing[start:start + step]
            singles = [x for x in chunk if isinstance(x, str)]
            pairs = [x for x in chunk if not isinstance(x, str)]
            groups: list[tuple[list[Input], tuple[list[str], ...]]] = [
                (list[Input](singles), (singles,)),
                (list[Input](pairs), ([p[0] for p in pairs], [p[1] for p in pairs]))]
            for group, args in groups:
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
