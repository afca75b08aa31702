"""The stand-ins for a packed base's layers: each applies one member's part to that member's rows of the forward
pass in progress (``PackRows``). A LoRA layer holds one update per member; a dropout, the base's attention-probability
dropout included (registered with transformers as ``beluga_pack``), draws each member's mask from the member's own
generator. ``training.packed_training`` builds a pack from them.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import torch
import torch.nn.functional as F

from beluga_core.training.pack_rows import PackRows

PACK_ATTENTION = "beluga_pack"


def member_dropout(x: torch.Tensor, p: float, rows: PackRows) -> torch.Tensor:
    """Inverted dropout with each member's rows masked from its own generator (as ``F.dropout`` masks: a
    Bernoulli(1 - p) draw divided by 1 - p)."""
    mask = torch.empty_like(x)
    for m, s, e in rows.blocks:
        mask[s:e].bernoulli_(1 - p, generator=rows.generators[m])
    return x * mask.div_(1 - p)


class PackDropout(torch.nn.Module):
    """Stands in for an ``nn.Dropout`` of the shared base."""

    def __init__(self, p: float, rows: PackRows) -> None:
        super().__init__()
        self.p = p
        self.rows = rows

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        if not self.training or self.p == 0:
            return x
        return member_dropout(x, self.p, self.rows)


class MemberDropout(torch.nn.Module):
    """Stands in for an ``nn.Dropout`` of a member's own head: its masks come from the member's generator."""

    def __init__(self, p: float, generator: torch.Generator) -> None:
        super().__init__()
        self.p = p
        self.generator = generator

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        if not self.training or self.p == 0:
            return x
        return member_dropout(x, self.p, PackRows([self.generator], [(0, 0, int(x.shape[0]))]))


class PackedLoRALinear(torch.nn.Module):
    """A frozen linear layer with one LoRA update per member, each applied to its member's rows:
    ``base(x) + B_m A_m dropout_m(x) · scaling`` (peft's ``lora.Linear`` forward, row block by row block)."""

    def __init__(self, base: torch.nn.Linear, a: Sequence[torch.Tensor], b: Sequence[torch.Tensor], scaling: float,
                 p: float, rows: PackRows) -> None:
        super().__init__()
        self.base_layer = base
        self.lora_A = torch.nn.ParameterList([torch.nn.Parameter(t) for t in a])
        self.lora_B = torch.nn.ParameterList([torch.nn.Parameter(t) for t in b])
        self.scaling = scaling
        self.p = p
        self.rows = rows

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        out = self.base_layer(x)
        blocks = self.rows.blocks
        if self.training and self.p:
            x = member_dropout(x, self.p, self.rows)
        sizes = {e - s for _, s, e in blocks}
        if len(blocks) > 1 and len(sizes) == 1 and blocks[0][1] == 0 and blocks[-1][2] == x.shape[0]:
            # Blocks of one size (the usual step): two batched products for every member at once.
            k = len(blocks)
            a = torch.stack([self.lora_A[m] for m, _, _ in blocks])            # [k, r, in]
            b = torch.stack([self.lora_B[m] for m, _, _ in blocks])            # [k, out, r]
            rows = x.reshape(k, -1, x.shape[-1])                               # [k, n·…, in]
            delta = torch.bmm(torch.bmm(rows, a.transpose(1, 2)), b.transpose(1, 2)) * self.scaling
            return out + delta.reshape(out.shape)
        parts = [F.linear(F.linear(x[s:e], self.lora_A[m]), self.lora_B[m]) * self.scaling for m, s, e in blocks]
        return out + torch.cat(parts)

    def merged_weight(self, m: int) -> torch.Tensor:
        """The base weight with member ``m``'s update merged, as peft's ``merge`` computes it."""
        return self.base_layer.weight.detach() + (self.lora_B[m].detach() @ self.lora_A[m].detach()) * self.scaling


def pack_attention(module: torch.nn.Module, query: torch.Tensor, key: torch.Tensor, value: torch.Tensor,
                   attention_mask: torch.Tensor | None, dropout: float = 0.0, scaling: float | None = None,
                   **kwargs: Any) -> tuple[torch.Tensor, torch.Tensor | None]:
    """The attention of a packed base (registered with transformers as ``beluga_pack``): scaled dot-product
    attention, whose probability dropout masks each member's rows from its generator. Without dropout (p = 0,
    evaluation) it is transformers' sdpa."""
    from transformers.integrations.sdpa_attention import sdpa_attention_forward

    rows: PackRows | None = getattr(module, "beluga_pack_rows", None)
    if not dropout or not module.training or rows is None:
        return sdpa_attention_forward(module, query, key, value, attention_mask, dropout=0.0, scaling=scaling,
                                      **kwargs)
    scale = query.size(-1) ** -0.5 if scaling is None else scaling
    scores = torch.matmul(query, key.transpose(2, 3)) * scale
    if attention_mask is not None:
        scores = (scores.masked_fill(~attention_mask, torch.finfo(scores.dtype).min)
                  if attention_mask.dtype == torch.bool else scores + attention_mask)
    probs = member_dropout(torch.softmax(scores, dim=-1), dropout, rows)
    return torch.matmul(probs, value).transpose(1, 2).contiguous(), None


def register_pack_attention() -> None:
    from transformers import AttentionInterface
    from transformers.masking_utils import ALL_MASK_ATTENTION_FUNCTIONS, sdpa_mask

    AttentionInterface.register(PACK_ATTENTION, pack_attention)
    ALL_MASK_ATTENTION_FUNCTIONS.register(PACK_ATTENTION, sdpa_mask)
