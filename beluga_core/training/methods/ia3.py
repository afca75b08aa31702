"""ia3: IA³, learned rescaling vectors (Liu et al. 2022, "Few-Shot Parameter-Efficient Fine-Tuning is Better and
Cheaper than In-Context Learning") through ``peft``: the keys, the values and the feed-forward block's
intermediate activations are multiplied element-wise by trainable vectors that start at ones, so training
starts from the pretrained model exactly; the encoder's own weights stay frozen, the task head trains fully,
and the vectors are merged into the weights when the stage ends (``adapters``). About a fifth of LoRA's
parameters at r = 8 on BERT-shaped models (MiniLM: 16,128 against 73,728).

``target_modules`` and ``feedforward_modules`` default to peft's for BERT: ``key``, ``value`` and
``output.dense``, the last scaled on its input (the intermediate activations). ``output.dense`` also names the
attention's output projection, whose input rescaling only refines the value vectors' (attention output is
linear in the values). Learning rate 3e-3 as in the paper (an order above LoRA's: the vectors scale, they do
not add), hence the method's own default and grid.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, ClassVar

from pydantic import Field, ValidationInfo, field_validator

from beluga_core.contracts.options import Options
from beluga_core.training.methods.adapters import AdapterMethod, ModuleNames

if TYPE_CHECKING:
    from peft import PeftConfig


class IA3Options(Options):
    """``[method.ia3]``."""

    target_modules: ModuleNames = Field(["key", "value", "output.dense"], description=(
        "The layers whose activations are rescaled: module names (a module matches if its name is one, or ends with "
        "\".\" + one) or one regular expression a whole module name must match."))
    feedforward_modules: ModuleNames = Field(["output.dense"], description=(
        "Those of target_modules rescaled on their input (the feed-forward block's intermediate activations) "
        "rather than their output; as names, each one of target_modules."))
    learning_rate: float = Field(3e-3, gt=0, description=(
        "The suite step's learning rate (a training key): IA³'s, an order above LoRA's."))

    @field_validator("feedforward_modules")
    @classmethod
    def _feedforward_among_targets(cls, value: list[str] | str, info: ValidationInfo) -> list[str] | str:
        targets = info.data.get("target_modules")
        if isinstance(targets, list) and isinstance(value, list) and not set(value) <= set(targets):
            raise ValueError(f"feedforward_modules = {value}: each must be one of target_modules ({targets})")
        return value


class IA3(AdapterMethod):
    name: ClassVar[str] = "ia3"
    Options = IA3Options
    options: IA3Options
    grid_axes: ClassVar[dict[str, list[Any]]] = {"learning_rate": [1e-3, 3e-3, 1e-2]}

    def peft_config(self) -> PeftConfig:
        from peft import IA3Config

        return IA3Config(target_modules=self.target_modules(), feedforward_modules=self.options.feedforward_modules)
