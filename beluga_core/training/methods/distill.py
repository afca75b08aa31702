"""Distillation from the old model against negative flips (Xie et al., 2021, "Regression Bugs Are In Your Model!").

The update minimises the task loss plus α · KL(p_old ‖ p_new) at temperature T, on the rows where the old model
does better than the new one (``where = "better"``: p_old(y) > p_new(y), the regression set the paper reports,
its "D_better"; ``"flip"``: the old model right and the new one wrong, the rule its text states; ``"correct"``:
the old model right; ``"all"``). Only rows with a hard label take part: i.i.d. examples and MFT cases whose target
is one class (a soft target, a label set such as "not negative", and INV/DIR pairs get no penalty). The penalty
is the mean over the batch's rows (rows outside the set count 0), so α does not depend on how many rows flip:

    penalty = (1/B) Σ_r m_r · T² · Σ_c p_old,c (log p_old,c − log p_new,c),   p = softmax(logits / T)

The masks are computed at T = 1 on detached values. The old model (``teacher``) is the weights the stage starts
from (``"start"``, default: for IID→T and IID→(IID+T), the IID model); ``"iid"`` the run's IID model of the
job's seed (``"iid#N"``: of seed N); ``"store:PATH#SELECTOR"`` a model whose weights are kept beside another
store; ``"path:DIR"`` a saved checkpoint (a Hugging Face model folder, or a state-dict file of the run's model)
with the same label space and tokenizer.
"""

from __future__ import annotations

import copy
from typing import Any, ClassVar, Literal

import torch
import torch.nn.functional as F
from pydantic import Field, field_validator

from beluga_core.contracts.methods import Method
from beluga_core.contracts.options import Options
from beluga_core.contracts.tasks import Trainer
from beluga_core.contracts.training import Batch, TrainSet
from beluga_core.core.errors import BelugaError
from beluga_core.training.precision import autocast


def teacher_kind(source: str) -> str:
    """"start", "iid", "store" or "path" — the kind of a teacher source; a clear error for anything else."""
    if source == "start" or source == "iid" or (source.startswith("iid#") and source[4:].lstrip("-").isdigit()):
        return source.split("#")[0]
    if (source.startswith("store:") and "#" in source[6:]) or (source.startswith("path:") and len(source) > 5):
        return source.split(":", 1)[0]
    raise BelugaError(f"[method.distill] teacher '{source}': expected 'start' (the weights the stage starts from), "
                      "'iid' or 'iid#SEED' (the run's IID model), 'store:PATH#SELECTOR' (a model kept beside "
                      "another store) or 'path:DIR' (a saved checkpoint)", field="method.distill.teacher")


def distillation_terms(student: torch.Tensor, teacher: torch.Tensor, labels: torch.Tensor, where: str,
                       temperature: float) -> tuple[torch.Tensor, torch.Tensor]:
    """(per-row mask m_r, per-row T²·KL(p_old ‖ p_new)) for logits ``[rows, classes]`` and hard labels."""
    with torch.no_grad():
        p_old = F.softmax(teacher.float(), dim=-1)
        p_new = F.softmax(student.detach().float(), dim=-1)
        rows = torch.arange(len(labels), device=labels.device)
        old_right = p_old.argmax(-1) == labels
        if where == "better":
            mask = p_old[rows, labels] > p_new[rows, labels]
        elif where == "flip":
            mask = old_right & (p_new.argmax(-1) != labels)
        elif where == "correct":
            mask = old_right
        else:
            mask = torch.ones_like(old_right)
    t = float(temperature)
    log_old = F.log_softmax(teacher.float() / t, dim=-1)
    log_new = F.log_softmax(student.float() / t, dim=-1)
    kl = t * t * (log_old.exp() * (log_old - log_new)).sum(-1)
    return mask.to(kl.dtype), kl


class DistillOptions(Options):
    """``[method.distill]``."""

    alpha: float = Field(1.0, ge=0, description="The weight α of the distillation penalty (0: vanilla's updates).")
    temperature: float = Field(1.0, gt=0, description="The temperature T of both distributions in the KL term.")
    where: Literal["better", "flip", "correct", "all"] = Field("better", description=(
        "The rows penalised: where the old model does better (p_old(y) > p_new(y)), where it is right and the new "
        "one wrong (flip), where it is right (correct), or all."))
    teacher: str = Field("start", description=(
        "The old model: 'start' (the weights the stage starts from), 'iid' or 'iid#SEED' (the run's IID model), "
        "'store:PATH#SELECTOR' (a model kept beside another store) or 'path:DIR' (a saved checkpoint)."))

    @field_validator("teacher")
    @classmethod
    def _teacher(cls, value: str) -> str:
        try:
            teacher_kind(value)
        except BelugaError as exc:
            raise ValueError(exc.message) from None
        return value


class Distill(Method):
    """Task loss + α · T² · KL(p_old ‖ p_new) on the rows the old model does better on (module docstring)."""

    Options = DistillOptions
    options: DistillOptions
    # The teacher is loaded (or copied from the start weights) by start, before a checkpoint's weights.
    state_attributes: ClassVar[tuple[str, ...] | None] = ()

    def __init__(self, hparams: dict[str, Any] | None = None) -> None:
        super().__init__(hparams)
        self.teacher: torch.nn.Module | None = None

    def teacher_sources(self) -> tuple[str, ...]:
        source = str(self.hp["teacher"])
        return () if source == "start" else (source,)

    def start(self, trainer: Trainer, trainset: TrainSet, n_steps: int) -> None:
        if float(self.hp["alpha"]) == 0:
            return  # no penalty: nothing to load (and exactly vanilla's updates)
        source = str(self.hp["teacher"])
        if source == "start":
            teacher = copy.deepcopy(trainer.model).eval()
            for p in teacher.parameters():
                p.requires_grad_(False)
            self.teacher = teacher
        else:
            self.teacher = trainer.teacher(source)

    def penalty(self, trainer: Trainer, batch: Batch, logits: Any) -> torch.Tensor | None:
        """The batch's distillation penalty, or None when no row of it has a hard label."""
        if batch.kind != "single" or batch.targets is None:
            return None
        if not isinstance(logits, torch.Tensor):
            raise BelugaError("method distill needs a classifier's logits; span models (reading) are not supported")
        targets = torch.as_tensor(batch.targets)
        hard = (targets.max(-1).values == 1) & ((targets > 0).sum(-1) == 1)
        if batch.label_sets is not None:
            hard &= ~torch.as_tensor(batch.label_sets, dtype=torch.bool)
        if not bool(hard.any()):
            return None
        assert self.teacher is not None
        with torch.no_grad(), autocast(trainer.device):
            features = trainer.task.features(trainer.encoder, batch.inputs, trainer.device)
            old = self.teacher(**features).logits
        labels = targets.argmax(-1).to(logits.device)
        mask, kl = distillation_terms(logits, old, labels, str(self.hp["where"]), float(self.hp["temperature"]))
        mask = mask * hard.to(logits.device, mask.dtype)
        return (mask * kl).sum() / len(batch)

    def update(self, trainer: Trainer, batches: list[Batch]) -> torch.Tensor:
        alpha = float(self.hp["alpha"])
        total = torch.zeros((), device=trainer.device)
        for batch in batches:
            out = trainer.batch_output(batch)
            loss = out.loss
            if alpha != 0:
                penalty = self.penalty(trainer, batch, out.logits)
                if penalty is not None:
                    loss = loss + alpha * penalty
            total = total + loss
        total = total / len(batches)
        trainer.backward_and_step(total)
        return total.detach()
