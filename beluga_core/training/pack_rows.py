"""The rows of a pack's step: which members share a forward pass of the base (``row_groups``), each member's rows
padded to the pass's width, and where each member's rows are in the pass in progress (``PackRows``), which the
stand-in layers (``training.pack_layers``) read.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import torch
import torch.nn.functional as F

# How much padding a forward pass over several members' rows may add (× the tokens of their own batches):
# benchmarks/perf/bench_pack.py, "row grouping".
PAD_SLACK = 1.15
# The most tokens (rows × padded width) one forward pass takes on a CPU, members beyond it getting a pass of their
# own: on 2 cores a larger pass saves no time (bench_pack at K = 16: bounded / unbounded 1.02× [0.94, 1.11]) and
# holds more activations (peak 1.7 against 2.1 GiB). A GPU takes a step's rows in as few passes as padding allows.
CPU_PASS_TOKENS = 1024


@dataclass
class PackRows:
    """The rows of the forward pass in progress, per member, and each member's generator."""

    generators: list[torch.Generator]
    blocks: list[tuple[int, int, int]] = field(default_factory=list)   # (member, first row, end row)


def pad_to(batch: dict[str, torch.Tensor], width: int, pad_id: int) -> dict[str, torch.Tensor]:
    """``batch`` (one collated batch) padded on the right to ``width`` tokens: pad ids, attention 0, type 0."""
    out = {}
    for k, v in batch.items():
        extra = width - int(v.shape[1]) if v.dim() >= 2 else 0
        out[k] = F.pad(v, (0, extra), value=pad_id if k == "input_ids" else 0) if extra > 0 else v
    return out


def row_groups(collated: dict[int, list[dict[str, torch.Tensor]]], slack: float = PAD_SLACK,
               max_tokens: int | None = None) -> list[list[int]]:
    """The members of a step, grouped for the base's forward passes: by the width of their batches (longest
    token row), narrowest first, a member joining the group before it while the group padded to its widest row
    costs at most ``slack`` times the tokens of its members' own batches. One pass over every member pads each
    to the widest batch of the step: with members' batches drawn independently that pads 1.7× the tokens at
    K = 4 and 1.9× at K = 8 (SST-2, batch 16), which on a CPU costs more than the pass saves. A group also stays
    within ``max_tokens`` padded tokens (when set) unless it is one member."""
    rows = {m: sum(int(c["input_ids"].shape[0]) for c in cs) for m, cs in collated.items()}
    width = {m: max(int(c["input_ids"].shape[1]) for c in cs) for m, cs in collated.items()}
    groups: list[list[int]] = []
    own = 0
    for m in sorted(collated, key=lambda m: (width[m], m)):
        padded = (sum(rows[g] for g in groups[-1]) + rows[m]) * width[m] if groups else 0
        if groups and padded <= slack * (own + rows[m] * width[m]) and (max_tokens is None or padded <= max_tokens):
            groups[-1].append(m)
            own += rows[m] * width[m]
        else:
            groups.append([m])
            own = rows[m] * width[m]
    return groups
