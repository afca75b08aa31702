"""Tokenized inputs on disk, per (task, tokenizer, max_length, encoder format), for every later fold and run.

Layout: ``ROOT/<task>/<key>/<digest>.npz``, one immutable *shard* per batch of newly tokenized inputs.
``key`` hashes everything that determines the ids (tokenizer class, its full vocabulary/normalizer/
post-processor, ``max_length``, the encoder's class and format, the tokenizers library version), so a change
of any of them can never read stale ids.

Concurrency: a shard is written to a temporary file in the same folder and renamed into place (atomic on
POSIX), so readers only ever see complete shards; shards are never modified. Two processes that tokenize the
same input both write it; duplicates are harmless (same key → same ids). When a folder holds many shards a
writer merges them into one and then removes only the shards it merged; a reader that lists a shard which is
removed before it opens it simply lists again (the merged shard holds the same entries).

Shards are ``.npz`` files read with ``allow_pickle=False``: loading a cache never executes anything.
"""

from __future__ import annotations

import contextlib
import hashlib
import io
import itertools
import json
import os
import tempfile
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from beluga_core.data.suite.suite_schema import Input

Encoded = tuple[list[int], list[int] | None]  # input ids, token type ids (as training.encode)

# Bumped when the shard layout changes.
SHARD_FORMAT = 1
# Merge a folder's shards into one once it holds more than this many (first runs add one per fold).
MERGE_ABOVE = 24


def tokenizer_fingerprint(tokenizer: Any) -> str:
    """A hash of what decides the ids a tokenizer produces (not of where it was loaded from)."""
    h = hashlib.sha256()
    h.update(type(tokenizer).__name__.encode())
    backend = getattr(tokenizer, "backend_tokenizer", None)
    if backend is not None:
        # Fast tokenizers: the serialized pipeline holds vocab, normalizer, pre-tokenizer and post-processor;
        # its truncation/padding state changes with every call's arguments, and max_length is keyed apart.
        pipeline = json.loads(backend.to_str())
        pipeline.pop("truncation", None)
        pipeline.pop("padding", None)
        h.update(json.dumps(pipeline, sort_keys=True).encode())
    else:
        h.update(json.dumps(sorted(tokenizer.get_vocab().items())).encode())
    kwargs = {k: v for k, v in getattr(tokenizer, "init_kwargs", {}).items()
              if isinstance(v, (str, int, float, bool)) and k not in ("name_or_path", "model_max_length")}
    h.update(json.dumps(kwargs, sort_keys=True).encode())
    try:
        import tokenizers

        h.update(tokenizers.__version__.encode())
    except ImportError:  # pragma: no cover - transformers always brings it
        pass
    return h.hexdigest()[:24]


def cache_key(tokenizer: Any, max_length: int, encoder_format: str) -> str:
    name = Path(str(getattr(tokenizer, "name_or_path", "tokenizer"))).name or "tokenizer"
    safe = "".join(c if c.isalnum() or c in "-_." else "_" for c in name)[:40]
    digest = hashlib.sha256(f"{tokenizer_fingerprint(tokenizer)}|{max_length}|{encoder_format}|"
                            f"{SHARD_FORMAT}".encode()).hexdigest()[:16]
    return f"{safe}-L{max_length}-{digest}"


def _key_json(x: Input) -> Any:
    return x if isinstance(x, str) else list(x)


def _key_from_json(v: Any) -> Input:
    return v if isinstance(v, str) else (v[0], v[1])


@dataclass
class _Shard:
    ids: np.ndarray  # int32, all entries' ids concatenated
    offsets: np.ndarray  # int64, len = n + 1
    types: np.ndarray | None  # int8, aligned with ids; None when the tokenizer has no token types

    def entry(self, row: int) -> Encoded:
        a, b = int(self.offsets[row]), int(self.offsets[row + 1])
        return self.ids[a:b].tolist(), (self.types[a:b].tolist() if self.types is not None else None)

    def entries(self, rows: list[int]) -> list[Encoded]:
        """Many rows at once: one conversion of the whole shard to Python lists, then slices (a per-row
        ``tolist`` costs ~10x more per entry when a fold needs a large part of the shard)."""
        ids, offsets = self.ids.tolist(), self.offsets.tolist()
        types = self.types.tolist() if self.types is not None else None
        return [(ids[offsets[r]:offsets[r + 1]], types[offsets[r]:offsets[r + 1]] if types is not None else None)
                for r in rows]


def encode_shard(entries: Sequence[tuple[Input, Encoded]]) -> bytes:
    seqs = [enc[0] for _, enc in entries]
    lengths = np.fromiter(map(len, seqs), dtype=np.int64, count=len(seqs))
    offsets = np.concatenate([[0], np.cumsum(lengths)]).astype(np.int64)
    total = int(offsets[-1])
    # chain.from_iterable iterates in C, unlike a nested generator (benchmarks/perf/RESULTS.md, "Token cache").
    ids = np.fromiter(itertools.chain.from_iterable(seqs), dtype=np.int32, count=total)
    has_types = bool(entries) and entries[0][1][1] is not None
    types = (np.fromiter(itertools.chain.from_iterable(enc[1] or [] for _, enc in entries), dtype=np.int8,
                         count=total) if has_types else np.zeros(0, dtype=np.int8))
    keys = np.frombuffer(json.dumps([_key_json(x) for x, _ in entries]).encode(), dtype=np.uint8)
    buf = io.BytesIO()
    np.savez(buf, format=np.array([SHARD_FORMAT]), keys=keys, ids=ids, offsets=offsets, types=types,
             has_types=np.array([has_types]))
    return buf.getvalue()


def _read_shard(source: Path | bytes) -> tuple[list[Input], _Shard]:
    with np.load(io.BytesIO(source) if isinstance(source, bytes) else source, allow_pickle=False) as z:
        if int(z["format"][0]) != SHARD_FORMAT:
            raise ValueError("unknown shard format")
        keys = [_key_from_json(v) for v in json.loads(z["keys"].tobytes().decode())]
        shard = _Shard(z["ids"], z["offsets"], z["types"] if bool(z["has_types"][0]) else None)
    return keys, shard


class TokenCache:
    """The on-disk entries of one (task, tokenizer, max_length, format) folder, loaded lazily per entry."""

    def __init__(self, folder: Path) -> None:
        self.folder = folder
        self._shards: dict[str, _Shard] = {}
        self._where: dict[Input, tuple[str, int]] = {}
        self.hits = 0
        self.written = 0
        self.load_seconds = 0.0  # reading shards (for benchmarks and logs)
        self.refresh()

    def __len__(self) -> int:
        return len(self._where)

    def __contains__(self, x: Input) -> bool:
        return x in self._where

    def _listing(self) -> list[Path]:
        return sorted(self.folder.glob("*.npz")) if self.folder.is_dir() else []

    def refresh(self) -> None:
        """Load shards written since the last look (by this or any other process)."""
        started = time.perf_counter()
        try:
            self._refresh()
        finally:
            self.load_seconds += time.perf_counter() - started

    def _refresh(self) -> None:
        for _ in range(5):
            try:
                for path in self._listing():
                    if path.name not in self._shards:
                        self._add_shard(path.name, *_read_shard(path))
                return
            except FileNotFoundError:
                continue  # merged and removed by another process after we listed it: list again
            except (ValueError, OSError, KeyError, json.JSONDecodeError):
                return  # an unreadable shard (disk trouble, foreign file): those inputs are tokenized again

    def _add_shard(self, name: str, keys: list[Input], shard: _Shard) -> None:
        self._shards[name] = shard
        for row, x in enumerate(keys):
            self._where.setdefault(x, (name, row))

    def get(self, x: Input) -> Encoded | None:
        where = self._where.get(x)
        if where is None:
            return None
        self.hits += 1
        return self._shards[where[0]].entry(where[1])

    def get_many(self, inputs: Sequence[Input]) -> dict[Input, Encoded]:
        """The cached entries among ``inputs`` (shards needed for many rows are converted in one go)."""
        by_shard: dict[str, list[tuple[Input, int]]] = {}
        for x in inputs:
            where = self._where.get(x)
            if where is not None:
                by_shard.setdefault(where[0], []).append((x, where[1]))
        out: dict[Input, Encoded] = {}
        for name, wanted in by_shard.items():
            shard = self._shards[name]
            rows = [r for _, r in wanted]
            whole = len(rows) * 20 >= len(shard.offsets)  # ≥ 5% of the shard: convert it whole
            encs = shard.entries(rows) if whole else [shard.entry(r) for r in rows]
            out.update(zip((x for x, _ in wanted), encs, strict=True))
        self.hits += len(out)
        return out

    def add(self, entries: Sequence[tuple[Input, Encoded]]) -> None:
        """Persist newly tokenized inputs (those not already on disk) as one new shard."""
        new = [(x, enc) for x, enc in entries if x not in self._where]
        if not new:
            return
        try:
            self.folder.mkdir(parents=True, exist_ok=True)
            data = encode_shard(new)
            name = self._write(data)
        except OSError:
            return  # a read-only or full disk costs speed, never correctness
        self._add_shard(name, *_read_shard(data))
        self.written += len(new)
        if len(self._listing()) > MERGE_ABOVE:
            self.merge()

    def _write(self, data: bytes) -> str:
        name = hashlib.sha256(data).hexdigest()[:32] + ".npz"
        fd, tmp = tempfile.mkstemp(dir=self.folder, prefix=".tmp-", suffix=".npz")
        try:
            with os.fdopen(fd, "wb") as fh:
                fh.write(data)
                fh.flush()
                os.fsync(fh.fileno())
            os.replace(tmp, self.folder / name)
        except BaseException:
            with contextlib.suppress(OSError):
                os.unlink(tmp)
            raise
        return name

    def merge(self) -> None:
        """Replace the folder's shards by one holding all their entries (others' new shards are kept)."""
        self.refresh()
        merged_from = [p for p in self._listing() if p.name in self._shards]
        entries = [(x, self._shards[name].entry(row)) for x, (name, row) in self._where.items()
                   if name in {p.name for p in merged_from}]
        if len(merged_from) < 2:
            return
        try:
            name = self._write(encode_shard(entries))
        except OSError:
            return
        for p in merged_from:
            if p.name != name:
                with contextlib.suppress(OSError):
                    p.unlink()
        # Re-point the index at the merged shard (the old arrays stay valid in memory either way).
        self._shards = {}
        self._where = {}
        self.refresh()


def cache_folder(root: Path, task: str, tokenizer: Any, max_length: int, encoder_format: str) -> Path:
    return root / task / cache_key(tokenizer, max_length, encoder_format)


def attach(encoder: Any, root: Path, task: str) -> bool:
    """Give ``encoder`` an on-disk cache under ``root`` if its class declares a ``disk_format``."""
    fmt = getattr(encoder, "disk_format", None)
    if not fmt:
        return False
    cls = type(encoder)
    folder = cache_folder(root, task, encoder.tokenizer, encoder.max_length,
                          f"{cls.__module__}.{cls.__qualname__}:{fmt}")
    encoder.attach_disk_cache(TokenCache(folder))
    return True


def shard_files(root: Path) -> dict[str, bytes]:
    """Every shard under ``root`` as bytes, by relative path (the Ray executor ships them to workers that
    share no filesystem with the driver)."""
    out: dict[str, bytes] = {}
    if root.is_dir():
        for p in sorted(root.glob("*/*/*.npz")):
            with contextlib.suppress(FileNotFoundError):
                out[p.relative_to(root).as_posix()] = p.read_bytes()
    return out


def install_shards(root: Path, shards: dict[str, bytes]) -> int:
    """Write the shipped shards this machine's cache lacks (atomically, as ``TokenCache`` does)."""
    written = 0
    for rel, data in shards.items():
        target = root / rel
        if target.exists() or ".." in Path(rel).parts:
            continue
        target.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(dir=target.parent, prefix=".tmp-", suffix=".npz")
        with os.fdopen(fd, "wb") as fh:
            fh.write(data)
        os.replace(tmp, target)
        written += 1
    return written
