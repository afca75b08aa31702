"""Tokenizing (context, question) inputs into overlapping windows, once per process.

Long contexts are split as SQuAD models are usually fed: every window holds the whole question and a slice
of the context, at most ``max_length`` tokens, consecutive slices overlapping by ``stride`` tokens (the
tokenizers library's meaning of stride, which is what HF's ``doc_stride`` maps to). Each window keeps the
character offsets of its context tokens, so token spans map back to answer text and answer characters map
to token positions. Questions longer than ``max_query_length`` tokens are cut, as in the reference scripts,
so that every window has room for context.

The windows are cut here, from the context's tokens and offsets, not by the tokenizer's overflow
(``return_overflowing_tokens``): tokenizers 0.23.1 and 0.23.2 return only the first overflow of a long context
(2 windows where 0.22 and 0.23.3 give 7), so the windows, and every reading score, depended on the installed
version. The tokenizer only tokenizes each text and names its special tokens (``_PairTemplate``).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import torch

from beluga_core.core.errors import BelugaError
from beluga_core.data.suite.suite_schema import Input
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



class _PairTemplate:
    """Where a tokenizer puts its special tokens around a pair of sequences (BERT's ``[CLS] a [SEP] b [SEP]``,
    RoBERTa's ``<s> a </s></s> b </s>``) and the token type of each part, read off its encoding of a short
    pair: the tokens of each sequence are their own tokenization either way."""

    def __init__(self, tokenizer: Any) -> None:
        enc = tokenizer("a", "b", add_special_tokens=True)
        types = enc.get("token_type_ids")
        self.has_types = types is not None
        # (sequence or None for a special token, its id, its type id), a sequence's tokens collapsed into one part
        self.parts: list[tuple[int | None, int, int]] = []
        for pos, (s, token) in enumerate(zip(enc.sequence_ids(), enc["input_ids"], strict=True)):
            kind = None if s is None else int(s)
            if kind is None or not self.parts or self.parts[-1][0] != kind:
                self.parts.append((kind, int(token), int(types[pos]) if types is not None else 0))
        if sorted(k for k, _, _ in self.parts if k is not None) != [0, 1]:
            raise BelugaError(f"{type(tokenizer).__name__} does not encode a pair of texts as two sequences: the "
                              "reading task needs one that does")
        self.n_special = sum(k is None for k, _, _ in self.parts)

    def join(self, first: Sequence[int], second: Sequence[int]) -> tuple[list[int], list[int], tuple[int, int]]:
        """Token ids and type ids of the pair as the tokenizer would encode it, and where each sequence starts."""
        ids: list[int] = []
        types: list[int] = []
        starts = [0, 0]
        for kind, token, type_id in self.parts:
            if kind is not None:
                starts[kind] = len(ids)
            tokens = [token] if kind is None else list(first if kind == 0 else second)
            ids += tokens
            types += [type_id] * len(tokens)
        return ids, types, (starts[0], starts[1])

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
        self.context_seq = 1 if self.question_first else 0
        self.template = _PairTemplate(tokenizer)
        self._cache: dict[ReadingInput, tuple[Window, ...]] = {}
        self._alignments: dict[tuple[ReadingInput, ReadingInput], tuple[np.ndarray, np.ndarray]] = {}

    # -- windows ----------------------------------------------------------------------------------------
    def encode_many(self, inputs: Iterable[Input]) -> None:
        missing = [x for x in dict.fromkeys(reading_input(x) for x in inputs) if x not in self._cache]
        step = 1024
        for start in range(0, len(missing), step):
            self._encode_chunk(missing[start:start + step])

    def _encode_chunk(self, chunk: list[ReadingInput]) -> None:
        # Whole contexts, longer than the model reads: verbose=False keeps the tokenizer from warning so.
        contexts = self.tokenizer([c for c, _ in chunk], add_special_tokens=False, return_offsets_mapping=True,
                                  truncation=False, padding=False, verbose=False)
        questions = self._question_ids([q for _, q in chunk])
        for i, x in enumerate(chunk):
            self._cache[x] = self._windows(contexts["input_ids"][i], contexts["offset_mapping"][i], questions[i])

    def _windows(self, context: Sequence[int], offsets: Sequence[tuple[int, int]],
                 question: Sequence[int]) -> tuple[Window, ...]:
        """The question with consecutive context slices of as many tokens as ``max_length`` leaves, each
        starting ``stride`` tokens before the previous one's end, until one reaches the context's end."""
        room = self.max_length - len(question) - self.template.n_special
        if room <= self.stride:
            raise BelugaError(f"doc_stride {self.stride} leaves no new context per window: a question of "
                              f"{len(question)} tokens and {self.template.n_special} special tokens leave "
                              f"{room} context tokens of max_length {self.max_length}", field="options")
        spans = np.asarray(offsets, dtype=np.int64).reshape(-1, 2)
        cls = self.tokenizer.cls_token_id
        out = []
        start = 0
        while True:
            piece = context[start:start + room]
            ids, types, starts = self.template.join(*((question, piece) if self.question_first else (piece, question)))
            window_offsets = np.full((len(ids), 2), -1, dtype=np.int64)
            at = starts[self.context_seq]
            window_offsets[at:at + len(piece)] = spans[start:start + len(piece)]
            cls_index = ids.index(cls) if cls is not None and cls in ids else 0
            out.append(Window(tuple(ids), tuple(types) if self.template.has_types else None, window_offsets,
                              cls_index))
            if start + room >= len(context):
                return tuple(out)
            start += room - self.stride

    def _question_ids(self, questions: list[str]) -> list[list[int]]:
        """Each question's tokens; one longer than ``max_query_length`` tokens is cut where its
        ``max_query_length``-th token ends, and the cut text tokenized again (as the reference scripts cut it)."""
        enc = self.tokenizer(questions, add_special_tokens=False, return_offsets_mapping=True)
        out = [list(ids) for ids in enc["input_ids"]]
        long = [i for i, offsets in enumerate(enc["offset_mapping"]) if len(offsets) > self.max_query_length]
        if long:
            cut = [questions[i][:enc["offset_mapping"][i][self.max_query_length - 1][1]] for i in long]
            for i, ids in zip(long, self.tokenizer(cut, add_special_tokens=False)["input_ids"], strict=True):
                out[i] = list(ids)
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
