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

from pydantic import Field

from beluga_core.contracts.options import Options
from beluga_core.training.methods.adapters import AdapterMethod, ModuleNames

if TYPE_CHECKING:
    from peft import PeftConfig


class LoRAOptions(Options):
    """``[method.lora]``."""

    r: int = Field(8, ge=1, description="The rank of the update B A: a whole number ≥ 1.")
    alpha: int = Field(8, ge=1, description="The update is scaled by alpha / r: a whole number ≥ 1.")
    dropout: float = Field(0.1, ge=0, lt=1, description="Dropout on the adapters' input, a probability in [0, 1).")
    target_modules: ModuleNames = Field(["query", "value"], description=(
        "The linear layers that get adapters: module names (a module matches if its name is one, or ends with "
        "\".\" + one) or one regular expression a whole module name must match."))
    learning_rate: float = Field(5e-4, gt=0, description=(
        "The suite step's learning rate (a training key): LoRA's, an order above full fine-tuning's."))


class LoRA(AdapterMethod):
    name: ClassVar[str] = "lora"
    Options = LoRAOptions
    options: LoRAOptions
    grid_axes: ClassVar[dict[str, list[Any]]] = {"learning_rate": [2e-4, 5e-4, 1e-3]}
    packs: ClassVar[bool] = True

    def peft_config(self) -> PeftConfig:
        from peft import LoraConfig

        o = self.options
        return LoraConfig(r=o.r, lora_alpha=o.alpha, lora_dropout=float(o.dropout),
                          target_modules=self.target_modules(), bias="none")
