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

from beluga_core.core.errors import BelugaError
from beluga_core.training.methods.adapters import AdapterMethod, module_names

if TYPE_CHECKING:
    from peft import PeftConfig


class IA3(AdapterMethod):
    name: ClassVar[str] = "ia3"
    defaults: ClassVar[dict[str, Any]] = {"target_modules": ["key", "value", "output.dense"],
                                          "feedforward_modules": ["output.dense"], "learning_rate": 3e-3}
    grid_axes: ClassVar[dict[str, list[Any]]] = {"learning_rate": [1e-3, 3e-3, 1e-2]}

    def __init__(self, hparams: dict[str, Any] | None = None) -> None:
        super().__init__(hparams)
        self.target_modules = module_names(self.hp["target_modules"], "method.ia3.target_modules")
        self.feedforward_modules = module_names(self.hp["feedforward_modules"], "method.ia3.feedforward_modules")
        if isinstance(self.target_modules, list) and isinstance(self.feedforward_modules, list) \
                and not set(self.feedforward_modules) <= set(self.target_modules):
            raise BelugaError(f"[method.ia3] feedforward_modules = {self.feedforward_modules}: each must be one of "
                              f"target_modules ({self.target_modules})", field="method.ia3.feedforward_modules")

    def peft_config(self) -> PeftConfig:
        from peft import IA3Config

        return IA3Config(target_modules=self.target_modules, feedforward_modules=self.feedforward_modules)
