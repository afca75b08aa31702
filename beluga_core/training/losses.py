"""The three built-in training losses of BeLUGA (METHOD.md §3), as ``beluga.losses`` plugins.

Each loss takes **raw logits** over the model head's classes, shape ``[B, C]``, and returns a scalar (the mean
over the batch). Class-index convention, shared by every loss here: index ``0`` is the "negative" class and
the **last** index is the "positive" class; for the binary sentiment head that is ``[negative, positive]``.
Only :class:`DIRLoss`'s ``not_more_negative`` / ``not_more_positive`` comparisons rely on it.

Why the losses cast to float32 and switch autocast off: the log-softmax of a saturated head and the
``1 − ε`` of the dir loss lose most of their precision in bf16/fp16, and a mixed-precision training step
should still produce the same loss (up to the rounding of the logits themselves) as a float32 one. The
result is therefore always a float32 scalar on the logits' device.
"""

from __future__ import annotations

import contextlib
from abc import ABC, abstractmethod
from collections.abc import Iterator, Sequence
from typing import Any, ClassVar, Literal

import torch
import torch.nn.functional as F

__all__ = ["DIRLoss", "INVLoss", "Loss", "MFTLoss"]


@contextlib.contextmanager
def _full_precision(device: torch.device) -> Iterator[None]:
    """Disable autocast for ``device`` so the float32 maths below is not cast back down.

    Device types autocast does not know (e.g. ``meta``) have nothing to disable.
    """
    try:
        ctx: contextlib.AbstractContextManager[Any] = torch.autocast(device_type=device.type, enabled=False)
    except (RuntimeError, ValueError):
        ctx = contextlib.nullcontext()
    with ctx:
        yield


def _check_logits(name: str, logits: torch.Tensor) -> None:
    if logits.dim() != 2 or logits.shape[-1] < 2:
        raise ValueError(
            f"{name} must have shape [batch, classes] with classes >= 2, got {tuple(logits.shape)}"
        )


def _check_pair(orig_logits: torch.Tensor, pert_logits: torch.Tensor) -> None:
    _check_logits("orig_logits", orig_logits)
    _check_logits("pert_logits", pert_logits)
    if orig_logits.shape != pert_logits.shape:
        raise ValueError(
            f"orig_logits {tuple(orig_logits.shape)} and pert_logits {tuple(pert_logits.shape)} differ"
        )


class Loss(ABC):
    """Base of the loss plugins.

    ``name`` is the plugin name (the ``beluga.losses`` entry point). ``kind`` tells the batcher what one item
    of a batch is: ``"single"`` — one input per item (the loss gets one logits tensor) —, or ``"pair"`` — an
    original plus one of its perturbations per item (the loss gets the two logits tensors, row-aligned).

    Class-index convention: ``NEGATIVE_INDEX`` (0) is the negative class and ``POSITIVE_INDEX`` (−1, the last
    class) the positive one.
    """

    name: ClassVar[str]
    kind: ClassVar[Literal["single", "pair"]]
    NEGATIVE_INDEX: ClassVar[int] = 0
    POSITIVE_INDEX: ClassVar[int] = -1

    @abstractmethod
    def __call__(self, *args: Any, **kwargs: Any) -> torch.Tensor:
        """Return the batch-mean loss as a float32 scalar tensor."""

    def __repr__(self) -> str:
        return f"{type(self).__name__}()"


class MFTLoss(Loss):
    """Cross-entropy between softmax(logits) and a possibly soft target: mean_b −Σ_k t_k log softmax(z_b)_k.

    Soft targets are how the binary sentiment head learns three-way labels (METHOD.md §1): neutral is
    ``[1/2, 1/2]``, not-negative ``[1/3, 2/3]``. The paper's softmax cross-entropy is used, not the
    reference code's per-logit binary cross-entropy. ``targets`` is a ``[B, C]`` distribution; a 1-D integer
    tensor of class indices is accepted as a shorthand for one-hot targets.
    """

    name = "mft"
    kind = "single"

    def __call__(self, logits: torch.Tensor, targets: torch.Tensor) -> torch.Tensor:
        _check_logits("logits", logits)
        if targets.dim() == 1 and not targets.is_floating_point():
            targets = F.one_hot(targets.long(), num_classes=logits.shape[-1])
        if targets.shape != logits.shape:
            raise ValueError(f"targets {tuple(targets.shape)} must match logits {tuple(logits.shape)}")
        with _full_precision(logits.device):
            log_p = F.log_softmax(logits.float(), dim=-1)
            t = targets.to(device=logits.device, dtype=torch.float32)
            return -(t * log_p).sum(dim=-1).mean()


class INVLoss(Loss):
    """Invariance loss: mean_b −Σ_k ŷ0[k] log ŷi[k], ŷ = softmax, ŷ0 of the original, ŷi of the perturbation.

    It is minimal (equal to the entropy of ŷ0) when the perturbation's prediction equals the original's.
    ŷ0 is deliberately **not** detached, as in the reference: the gradient also moves the original's
    prediction, so the two meet rather than the perturbation alone chasing a fixed target.
    """

    name = "inv"
    kind = "pair"

    def __call__(self, orig_logits: torch.Tensor, pert_logits: torch.Tensor) -> torch.Tensor:
        _check_pair(orig_logits, pert_logits)
        with _full_precision(orig_logits.device):
            p0 = F.softmax(orig_logits.float(), dim=-1)
            log_pi = F.log_softmax(pert_logits.float(), dim=-1)
            return -(p0 * log_pi).sum(dim=-1).mean()


class DIRLoss(Loss):
    """Directional loss: mean_b −log(1 − ε_b), with ε(ŷ0, ŷi) ∈ [0, 1] the violation of the expected change.

    ε is zero when the expectation δ holds (so a satisfied item contributes neither loss nor gradient) and
    is not detached (gradient flows into both the original and the perturbation). Comparisons, with
    c* = argmax ŷ0 per item and the negative/positive classes of :class:`Loss`'s index convention:

    - ``not_less_confident`` (intensifiers): ε = max(0, ŷ0[c*] − ŷi[c*])
    - ``not_more_confident`` (reducers, "used to"): ε = max(0, ŷi[c*] − ŷ0[c*])
    - ``not_more_negative`` (positive phrase added): ε = max(0, ŷi[neg] − ŷ0[neg])
    - ``not_more_positive`` (negative phrase added): ε = max(0, ŷi[pos] − ŷ0[pos])

    ``comparison`` is a ``LongTensor[B]`` of codes from :attr:`COMPARISONS`, a sequence of comparison names,
    or one name applied to the whole batch; codes may be mixed within a batch.

    The max(0, ·) is ``relu``, whose gradient is zero at exactly 0, so an unchanged prediction is not pushed.
    ``1 − ε`` is clamped below at :attr:`MIN_ONE_MINUS_EPS` (1e-6, loss at most ≈ 13.8 per item): a saturated
    head can round ε to exactly 1 in float32, and −log(0) = inf would poison the whole batch. While the clamp
    is active that item's gradient is zero; it only binds on items that are already maximally wrong.
    """

    name = "dir"
    kind = "pair"
    COMPARISONS: ClassVar[dict[str, int]] = {
        "not_less_confident": 0,
        "not_more_confident": 1,
        "not_more_negative": 2,
        "not_more_positive": 3,
    }
    MIN_ONE_MINUS_EPS: ClassVar[float] = 1e-6

    def __call__(
        self,
        orig_logits: torch.Tensor,
        pert_logits: torch.Tensor,
        comparison: torch.Tensor | Sequence[str] | str,
    ) -> torch.Tensor:
        _check_pair(orig_logits, pert_logits)
        codes = self.codes(comparison, batch_size=orig_logits.shape[0], device=orig_logits.device)
        with _full_precision(orig_logits.device):
            eps = self.violation(orig_logits, pert_logits, codes)
            return -torch.log(torch.clamp(1.0 - eps, min=self.MIN_ONE_MINUS_EPS)).mean()

    def violation(
        self, orig_logits: torch.Tensor, pert_logits: torch.Tensor, codes: torch.Tensor
    ) -> torch.Tensor:
        """Per-item ε ∈ [0, 1] (float32, shape ``[B]``) for integer comparison ``codes``; all four
        candidate errors are computed for every item and the item's own one is gathered, so one batch may
        mix comparisons without a Python loop."""
        p0 = F.softmax(orig_logits.float(), dim=-1)
        pi = F.softmax(pert_logits.float(), dim=-1)
        c_star = p0.argmax(dim=-1, keepdim=True)  # argmax has no gradient; the gathered values do
        conf_drop = (p0.gather(-1, c_star) - pi.gather(-1, c_star)).squeeze(-1)
        neg, pos = self.NEGATIVE_INDEX, self.POSITIVE_INDEX
        candidates = torch.stack(
            [conf_drop, -conf_drop, pi[:, neg] - p0[:, neg], pi[:, pos] - p0[:, pos]], dim=-1
        )
        return torch.relu(candidates.gather(-1, codes.unsqueeze(-1)).squeeze(-1))

    @classmethod
    def codes(
        cls,
        comparison: torch.Tensor | Sequence[str] | str,
        batch_size: int,
        device: torch.device | str | None = None,
    ) -> torch.Tensor:
        """Normalise ``comparison`` to a validated ``LongTensor[batch_size]`` of codes on ``device``.

        Names are validated in Python and their codes built on the CPU, then copied without blocking, so
        the usual list-of-names call costs no device synchronisation; an integer tensor is range-checked
        where it lies (a host sync if that is an accelerator — pass CPU codes or names to avoid it).
        """
        if isinstance(comparison, str):
            comparison = [comparison] * batch_size
        if isinstance(comparison, torch.Tensor):
            if comparison.is_floating_point() or comparison.is_complex():
                raise TypeError(f"comparison codes must be an integer tensor, got {comparison.dtype}")
            if comparison.shape != (batch_size,):
                raise ValueError(f"comparison must have shape [{batch_size}], got {tuple(comparison.shape)}")
            if comparison.numel() and (
                int(comparison.min()) < 0 or int(comparison.max()) >= len(cls.COMPARISONS)
            ):
                raise ValueError(
                    f"comparison codes must be in 0..{len(cls.COMPARISONS) - 1}, got {comparison.tolist()}"
                )
            return comparison.to(device=device, dtype=torch.long, non_blocking=True)
        names = list(comparison)
        unknown = sorted({n for n in names if n not in cls.COMPARISONS})
        if unknown:
            raise ValueError(f"unknown dir comparison(s) {unknown}; known: {sorted(cls.COMPARISONS)}")
        if len(names) != batch_size:
            raise ValueError(f"comparison must have {batch_size} entries, got {len(names)}")
        codes = torch.tensor([cls.COMPARISONS[n] for n in names], dtype=torch.long)
        return codes.to(device=device, non_blocking=True)
