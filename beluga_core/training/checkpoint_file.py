"""A checkpoint's file and where it is kept: one safetensors file per job, ``CACHE/checkpoints/JOB_ID.safetensors``,
written atomically (a reader sees the old file or the new one, never half of one).

It holds every tensor of the training state and, as JSON in the safetensors header, the rest (``training.checkpoints``
says what a stage puts there); the header also names the format, the beluga version that wrote it and a digest of
the tensors. Nothing is pickled, so loading a file can execute nothing, whoever wrote it; a file that is cut short,
altered, from another job or another beluga version is rejected (``CheckpointRejected`` says why).
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import Any, Protocol

import safetensors.torch
import torch

import beluga_core
from beluga_core.core.io import atomic_write

FORMAT = "beluga-checkpoint/1"


class CheckpointRejected(Exception):
    """A checkpoint that must not be loaded, and why."""


class CheckpointStore(Protocol):
    """Where a worker's checkpoints go: a folder (local and multi-process executors) or, on Ray, the driver."""

    def load(self, job_id: str) -> bytes | None: ...

    def save(self, job_id: str, blob: bytes) -> None: ...

    def discard(self, job_id: str) -> None: ...


class FolderCheckpoints:
    """Checkpoints as files in one folder (the run's cache): what survives a killed process."""

    def __init__(self, folder: Path) -> None:
        self.folder = folder

    def path(self, job_id: str) -> Path:
        return self.folder / f"{job_id}.safetensors"

    def load(self, job_id: str) -> bytes | None:
        path = self.path(job_id)
        return path.read_bytes() if path.exists() else None

    def save(self, job_id: str, blob: bytes) -> None:
        self._drop_partial(job_id)
        atomic_write(self.path(job_id), blob)

    def discard(self, job_id: str) -> None:
        self._drop_partial(job_id)
        self.path(job_id).unlink(missing_ok=True)

    def _drop_partial(self, job_id: str) -> None:
        """Remove the half-written files of saves killed mid-write (SIGKILL skips atomic_write's clean-up): one
        job is saved by one process at a time, so any of its temporaries is dead when a new save starts."""
        for tmp in self.folder.glob(f".{self.path(job_id).name}.*.tmp"):
            tmp.unlink(missing_ok=True)

    def job_ids(self) -> set[str]:
        return {p.name.removesuffix(".safetensors") for p in self.folder.glob("*.safetensors")}


def checkpoint_folder(cache_dir: Path) -> Path:
    return cache_dir / "checkpoints"


def rung_folder(cache_dir: Path) -> Path:
    """Where the rungs of halving searches keep their state for the next rung (``planning.halving``)."""
    return cache_dir / "rungs"



def _digest(tensors: dict[str, torch.Tensor]) -> str:
    h = hashlib.sha256()
    for name in sorted(tensors):
        t = tensors[name]
        h.update(f"{name}|{t.dtype}|{tuple(t.shape)}|".encode())
        h.update(t.detach().reshape(-1).contiguous().view(torch.uint8).numpy().tobytes())
    return h.hexdigest()


def encode(tensors: dict[str, torch.Tensor], meta: dict[str, Any]) -> bytes:
    """The checkpoint file: ``tensors`` (on the CPU) and ``meta`` with the format, version and a digest."""
    cpu: dict[str, torch.Tensor] = {}
    seen: set[int] = set()
    for k, v in tensors.items():
        t = v.detach().to("cpu").contiguous()
        if t.numel() and t.untyped_storage().data_ptr() in seen:   # tied weights: safetensors refuses shared memory
            t = t.clone()
        seen.add(t.untyped_storage().data_ptr())
        cpu[k] = t
    header = {**meta, "format": FORMAT, "beluga": beluga_core.__version__, "digest": _digest(cpu)}
    return safetensors.torch.save(cpu, metadata={"beluga": json.dumps(header)})


def read_header(blob: bytes) -> dict[str, Any]:
    """The beluga part of a checkpoint's header, read without touching its tensors."""
    if len(blob) < 8:
        raise CheckpointRejected(f"cut short ({len(blob)} bytes)")
    n = int.from_bytes(blob[:8], "little")
    if n <= 0 or 8 + n > len(blob):
        raise CheckpointRejected("not a safetensors file, or cut short (its header runs past the end)")
    try:
        header = json.loads(blob[8:8 + n])
        meta = json.loads(header["__metadata__"]["beluga"])
    except (ValueError, KeyError, TypeError) as exc:
        raise CheckpointRejected(f"no beluga checkpoint header ({type(exc).__name__})") from None
    if not isinstance(meta, dict):
        raise CheckpointRejected("its beluga header is not a JSON object")
    return meta


def _length(blob: bytes) -> int:
    """The file length a safetensors header announces: the header, then every tensor's bytes."""
    n = int.from_bytes(blob[:8], "little")
    header = json.loads(blob[8:8 + n])
    ends = [int(v["data_offsets"][1]) for k, v in header.items() if k != "__metadata__"]
    return 8 + n + max(ends, default=0)


def peek(path: Path) -> dict[str, Any]:
    """A checkpoint file's beluga header, reading its first bytes only (``beluga store info``); a file whose
    length is not the one its header announces is rejected (cut short)."""
    with path.open("rb") as f:
        head = f.read(8)
        n = int.from_bytes(head, "little") if len(head) == 8 else 0
        blob = head + f.read(n) if 0 < n < 2**24 else head
    meta = read_header(blob)
    size, expected = path.stat().st_size, _length(blob)
    if size != expected:
        raise CheckpointRejected(f"cut short ({size:,} of {expected:,} bytes)" if size < expected else
                                 f"{size - expected:,} bytes past its end")
    return meta


def decode(blob: bytes, job_id: str) -> tuple[dict[str, torch.Tensor], dict[str, Any]]:
    """A checkpoint's tensors and header, checked: format, beluga version, job and digest. Raises
    ``CheckpointRejected`` for anything else."""
    meta = read_header(blob)
    if meta.get("format") != FORMAT:
        raise CheckpointRejected(f"format {meta.get('format')!r}, expected {FORMAT!r}")
    if meta.get("beluga") != beluga_core.__version__:
        raise CheckpointRejected(f"written by beluga {meta.get('beluga')}, this is {beluga_core.__version__}")
    if meta.get("job_id") != job_id:
        raise CheckpointRejected(f"written by job {str(meta.get('job_id'))[:12]}, not this one ({job_id[:12]})")
    expected = _length(blob)
    if expected != len(blob):
        raise CheckpointRejected(f"cut short ({len(blob):,} of {expected:,} bytes)" if expected > len(blob) else
                                 f"{len(blob) - expected:,} bytes past its end")
    try:
        tensors = safetensors.torch.load(blob)
    except Exception as exc:  # safetensors raises its own error types for a damaged file
        raise CheckpointRejected(f"its tensors do not load ({type(exc).__name__}: {exc})") from None
    if _digest(tensors) != meta.get("digest"):
        raise CheckpointRejected("its tensors differ from the digest written with them (the file was altered)")
    return tensors, meta


