"""Tokenizing (context, question) inputs into overlapping windows, once per process.

Long contexts are split as SQuAD models are usually fed: every window holds the whole question and a slice
of the context, at most ``max_length`` tokens, consecutive slices overlapping by ``stride`` tokens (the
tokenizers library's meaning of stride, which is what HF's ``doc_stride`` maps to). Each window keeps the
character offsets of its context tokens, so token spans map back to answer text and answer characters map
to token positions. Questions longer than ``max_query_length`` tokens are cut, as in the reference scripts,
so that every window has room for context.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import torch

from beluga_core.core.errors import BelugaError
from beluga_core.data.suite.schema import Input
from beluga_core.tasks.reading.span_loss import aligned_positions

ReadingInput = tuple[str, str]  # (context, question), the suite's order


def reading_input(x: Input | Sequence[str]) -> ReadingInput:
    """A (context, question) input as a hashable pair (suites read from JSON hold lists)."""
    if isinstance(x, str) or len(x) != 2:
        raise ValueError(f"a reading input is a (context, question) pair, got {x!r}")
    return (x[0], x[1])


@dataclass(frozen=True)
class Window:
    """One model input: token ids (question and a context slice) and the context offsets of each token."""

    ids: tuple[int, ...]
    type_ids: tuple[int, ...] | None
    # [n_tokens, 2] character offsets into the context; (-1, -1) for question and special tokens.
    offsets: np.ndarray
    cls_index: int

    def __len__(self) -> int:
        return len(self.ids)

    @property
    def context_positions(self) -> np.ndarray:
        return np.flatnonzero(self.offsets[:, 0] >= 0)

    def token_span(self, char_start: int, char_end: int) -> tuple[int, int]:
        """Token positions (start, end) covering context characters [char_start, char_end), or
        ``(cls_index, cls_index)`` when the answer is not wholly inside this window (SQuAD's convention)."""
        ctx = self.context_positions
        if len(ctx) == 0 or char_end <= char_start:
            return self.cls_index, self.cls_index
        starts, ends = self.offsets[ctx, 0], self.offsets[ctx, 1]
        if starts[0] > char_start or ends[-1] < char_end:
            return self.cls_index, self.cls_index
        # First token ending after the answer's start; last token starting before its end.
        s = ctx[int(np.argmax(ends > char_start))]
        e = ctx[len(ctx) - 1 - int(np.argmax(starts[::-1] < char_end))]
        return (int(s), int(e)) if s <= e else (self.cls_index, self.cls_index)

    def text(self, context: str, start: int, end: int) -> str:
        return context[int(self.offsets[start, 0]):int(self.offsets[end, 1])]


class ReadingEncoder:
    """Windows of every distinct input, computed once and kept for every later fold."""

    def __init__(self, tokenizer: Any, max_length: int = 384, stride: int = 128, max_query_length: int = 64) -> None:
        if not getattr(tokenizer, "is_fast", False):
            raise BelugaError("the reading task needs a fast (Rust) tokenizer: it maps answers through character "
                              f"offsets; {type(tokenizer).__name__} has none")
        if stride >= max_length - max_query_length - 3:
            raise BelugaError(f"doc_stride {stride} leaves no new context per window: it must be below max_length "
                              f"({max_length}) - max_query_length ({max_query_length}) - 3", field="options")
        self.tokenizer = tokenizer
        self.max_length = max_length
        self.stride = stride
        self.max_query_length = max_query_length
        self.pad_id = tokenizer.pad_token_id or 0
        # Question first, unless the model pads on the left (then context first), as HF's run_qa does.
        self.question_first = getattr(tokenizer, "padding_side", "right") == "right"
        self._cache: dict[ReadingInput, tuple[Window, ...]] = {}
        self._alignments: dict[tuple[ReadingInput, ReadingInput], tuple[np.ndarray, np.ndarray]] = {}

    # -- windows ----------------------------------------------------------------------------------------
    def encode_many(self, inputs: Iterable[Input]) -> None:
        missing = [x for x in dict.fromkeys(reading_input(x) for x in inputs) if x not in self._cache]
        step = 1024
        for start in range(0, len(missing), step):
            self._encode_chunk(missing[start:start + step])

    def _encode_chunk(self, chunk: list[ReadingInput]) -> None:
        contexts = [c for c, _ in chunk]
        questions = self._short_questions([q for _, q in chunk])
        first, second = (questions, contexts) if self.question_first else (contexts, questions)
        enc = self.tokenizer(first, second, truncation="only_second" if self.question_first else "only_first",
                             max_length=self.max_length, stride=self.stride, return_overflowing_tokens=True,
                             return_offsets_mapping=True, padding=False)
        context_seq = 1 if self.question_first else 0
        types = enc.get("token_type_ids")
        windows: list[list[Window]] = [[] for _ in chunk]
        for w, owner in enumerate(enc["overflow_to_sample_mapping"]):
            ids = enc["input_ids"][w]
            seq = enc.sequence_ids(w)
            offsets = np.array([off if s == context_seq else (-1, -1)
                                for off, s in zip(enc["offset_mapping"][w], seq, strict=True)], dtype=np.int64)
            cls = self.tokenizer.cls_token_id
            cls_index = ids.index(cls) if cls is not None and cls in ids else 0
            windows[owner].append(Window(tuple(ids), tuple(types[w]) if types is not None else None,
                                         offsets.reshape(-1, 2), cls_index))
        for x, ws in zip(chunk, windows, strict=True):
            self._cache[x] = tuple(ws)

    def _short_questions(self, questions: list[str]) -> list[str]:
        enc = self.tokenizer(questions, add_special_tokens=False, return_offsets_mapping=True)
        out = []
        for q, offsets in zip(questions, enc["offset_mapping"], strict=True):
            out.append(q[:offsets[self.max_query_length - 1][1]] if len(offsets) > self.max_query_length else q)
        return out

    def __getitem__(self, x: Input) -> tuple[Window, ...]:
        key = reading_input(x)
        if key not in self._cache:
            self.encode_many([key])
        return self._cache[key]

    def length(self, x: Input) -> int:
        """Tokens of the input's first window (what length-grouped batching sorts by)."""
        return len(self[x][0])

    # -- batches ----------------------------------------------------------------------------------------
    def collate(self, windows: Sequence[Window]) -> dict[str, torch.Tensor]:
        width = max(len(w) for w in windows)
        ids = torch.full((len(windows), width), self.pad_id, dtype=torch.long)
        mask = torch.zeros((len(windows), width), dtype=torch.long)
        has_types = windows[0].type_ids is not None
        types = torch.zeros((len(windows), width), dtype=torch.long) if has_types else None
        for row, w in enumerate(windows):
            ids[row, :len(w)] = torch.tensor(w.ids)
            mask[row, :len(w)] = 1
            if types is not None and w.type_ids is not None:
                types[row, :len(w)] = torch.tensor(w.type_ids)
        batch = {"input_ids": ids, "attention_mask": mask}
        if types is not None:
            batch["token_type_ids"] = types
        return batch

    @staticmethod
    def context_mask(windows: Sequence[Window], width: int) -> torch.Tensor:
        """[n_windows, width] True at context tokens (the only places an answer may start or end)."""
        mask = torch.zeros((len(windows), width), dtype=torch.bool)
        for row, w in enumerate(windows):
            mask[row, torch.from_numpy(w.context_positions)] = True
        return mask

    # -- span-inv -------------------------------------------------------------------------------------------
    def alignment(self, original: ReadingInput, perturbed: ReadingInput) -> tuple[np.ndarray, np.ndarray]:
        """Positions of the context tokens the two inputs' first windows share (unchanged words), as two
        equally long index arrays into each window."""
        key = (reading_input(original), reading_input(perturbed))
        if key not in self._alignments:
            w0, w1 = self[original][0], self[perturbed][0]
            c0, c1 = w0.context_positions, w1.context_positions
            i, j = aligned_positions([w0.ids[k] for k in c0], [w1.ids[k] for k in c1])
            self._alignments[key] = (np.asarray(c0[i]), np.asarray(c1[j]))
        return self._alignments[key]
