"""lora: low-rank adaptation (Hu et al. 2021, "LoRA: Low-Rank Adaptation of Large Language Models") through
``peft``: each targeted linear layer's frozen weight W gets a trainable update (alpha / r) · B A, with A (r × in)
random and B (out × r) zero at the start, so training starts from the pretrained model exactly. The encoder's
own weights stay frozen; the task head trains fully; the update is merged into W when the stage ends
(``adapters``).

Defaults, from the paper's RoBERTa-base GLUE runs (its Table 9): r = 8 and alpha = 8 on the attention's query
and value projections (its Table 5: with a fixed budget of trainable parameters, adapting W_q and W_v beats
any single matrix and all four at a lower rank; BERT's, MiniLM's and RoBERTa's layers are named ``query`` and
``value``), and learning rates of 4e-4 to 5e-4, an order above full fine-tuning's (few parameters, starting
from a zero update), hence the method's own default and grid, as lp has. Adapter dropout 0.1 (the paper's
GPT-2 runs; peft's sequence-classification examples): beluga's training sets are small.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, ClassVar

from beluga_core.core.errors import BelugaError
from beluga_core.training.methods.adapters import AdapterMethod, module_names

if TYPE_CHECKING:
    from peft import PeftConfig


class LoRA(AdapterMethod):
    name: ClassVar[str] = "lora"
    defaults: ClassVar[dict[str, Any]] = {"r": 8, "alpha": 8, "dropout": 0.1, "target_modules": ["query", "value"],
                                          "learning_rate": 5e-4}
    grid_axes: ClassVar[dict[str, list[Any]]] = {"learning_rate": [2e-4, 5e-4, 1e-3]}
    packs: ClassVar[bool] = True

    def __init__(self, hparams: dict[str, Any] | None = None) -> None:
        super().__init__(hparams)
        r, alpha, dropout = self.hp["r"], self.hp["alpha"], self.hp["dropout"]
        if isinstance(r, bool) or not isinstance(r, int) or r < 1:
            raise BelugaError(f"[method.lora] r = {r!r}: expected the rank, a whole number ≥ 1", field="method.lora.r")
        if isinstance(alpha, bool) or not isinstance(alpha, int) or alpha < 1:
            raise BelugaError(f"[method.lora] alpha = {alpha!r}: expected a whole number ≥ 1 (the update is scaled "
                              "by alpha / r)", field="method.lora.alpha")
        if isinstance(dropout, bool) or not isinstance(dropout, int | float) or not 0 <= dropout < 1:
            raise BelugaError(f"[method.lora] dropout = {dropout!r}: expected a probability in [0, 1)",
                              field="method.lora.dropout")
        self.target_modules = module_names(self.hp["target_modules"], "method.lora.target_modules")

    def peft_config(self) -> PeftConfig:
        from peft import LoraConfig

        return LoraConfig(r=int(self.hp["r"]), lora_alpha=int(self.hp["alpha"]),
                          lora_dropout=float(self.hp["dropout"]), target_modules=self.target_modules, bias="none")
