"""lp-ft: linear probing, then full fine-tuning from the probed model with a fresh optimizer (docs/method.md,
"Generalization methods").

No grid search of its own: stage 1 reuses lp's (selected) hyper-parameters, stage 2 vanilla's; each stage
runs ``lp_epochs`` / ``ft_epochs`` (1.5) epochs whatever epochs those selections chose.
"""

from __future__ import annotations

from typing import Any, ClassVar

from pydantic import Field

from beluga_core.contracts.methods import Stage, stage_part
from beluga_core.contracts.options import Options
from beluga_core.training.methods.lp import LinearProbing
from beluga_core.training.methods.vanilla import Vanilla


class LinearProbingFineTuningOptions(Options):
    """``[method.lp-ft]``."""

    lp_epochs: float = Field(1.5, gt=0, description="Epochs of the linear-probing stage (whatever lp's search chose).")
    ft_epochs: float = Field(1.5, gt=0, description=(
        "Epochs of the fine-tuning stage (whatever vanilla's search chose)."))


class LinearProbingFineTuning(Vanilla):
    name: ClassVar[str] = "lp-ft"
    Options = LinearProbingFineTuningOptions
    options: LinearProbingFineTuningOptions
    reuses: ClassVar[tuple[str, ...]] = ("lp", "vanilla")

    def stages(self, hp: dict[str, Any]) -> list[Stage]:
        # The plan gives lp's and vanilla's full hyper-parameters under "stages"; without them (a job built
        # by hand), each stage takes the job's training values and its method's defaults.
        lp_hp, ft_hp = hp.get("stages") or ({**stage_part(hp), **LinearProbing.defaults, "method": {}},
                                             {**stage_part(hp), "method": {}})
        return [(LinearProbing(lp_hp.get("method")), stage_part(lp_hp) | {"epochs": float(self.hp["lp_epochs"])}),
                (Vanilla(ft_hp.get("method")), stage_part(ft_hp) | {"epochs": float(self.hp["ft_epochs"])})]
