"""The base of the parameter-efficient methods built on ``peft`` (lora, ia3): adapters injected into the frozen
pretrained body, the task head trained with them, and the adapters merged away when the stage ends.

The adapters go into the model in place (``peft.inject_adapter_in_model``, no ``PeftModel`` wrapper), so the
loop, the tasks and the checkpoints keep the transformers model they hold; a checkpoint inside the stage holds
its state dict with the adapters' keys, loaded after ``prepare`` has injected them. ``finish`` merges each
adapter into the weight it adapts and puts the original layer back: what the worker keeps, evaluates and
exports, what a teacher or a ``store:`` start loads, and what the next job of the process starts from, is a
plain model of the architecture, whose predictions are the adapted model's (up to float rounding).
"""

from __future__ import annotations

from abc import abstractmethod
from typing import TYPE_CHECKING, Annotated, Any, ClassVar

import torch
from pydantic import Field

from beluga_core.core.errors import BelugaError
from beluga_core.training.methods.lp import encoder_of
from beluga_core.training.methods.vanilla import Vanilla

if TYPE_CHECKING:
    from peft import PeftConfig


def adapter_layers(model: torch.nn.Module) -> list[tuple[str, Any]]:
    """The peft layers in ``model`` (name, module): the modules that wrap a base layer with adapters (typed Any:
    peft's ``BaseTunerLayer`` is a mixin its layers combine with ``torch.nn.Module``)."""
    from peft.tuners.tuners_utils import BaseTunerLayer

    return [(n, m) for n, m in model.named_modules() if isinstance(m, BaseTunerLayer)]


def adapter_parameters(model: torch.nn.Module) -> list[torch.nn.Parameter]:
    """The adapters' own parameters (not those of the layers they wrap)."""
    out = []
    for _, layer in adapter_layers(model):
        base = {id(p) for p in layer.get_base_layer().parameters()}
        out += [p for p in layer.parameters() if id(p) not in base]
    return out


def merge_adapters(model: torch.nn.Module) -> None:
    """Merge every adapter into the weight it adapts and put the wrapped layer back in its place, in place (what
    peft's ``merge_and_unload`` does to a ``PeftModel``, for a model the adapters were injected into)."""
    for name, layer in adapter_layers(model):
        layer.merge()
        parent, _, attr = name.rpartition(".")
        setattr(model.get_submodule(parent), attr, layer.get_base_layer())
    for module in model.modules():   # the injection's record on the module it went into
        module.__dict__.pop("peft_config", None)


# A ``target_modules``-like option: a non-empty list of module names (each matches a module whose name is it or ends
# with "." + it), or one string, a regular expression a whole module name must match.
ModuleNames = Annotated[list[Annotated[str, Field(min_length=1)]], Field(min_length=1)] | Annotated[
    str, Field(min_length=1)]


class AdapterMethod(Vanilla):
    """Adapters from ``peft_config`` in the pretrained body (``base_model``), which stays frozen; the adapters
    and everything outside the body (the task head) train."""

    name: ClassVar[str]
    # AdamW's moments are the optimizer's; the adapters' weights are the model's, so a checkpoint carries them.
    state_attributes: ClassVar[tuple[str, ...] | None] = ()

    @abstractmethod
    def peft_config(self) -> PeftConfig:
        """The peft configuration of the adapters, from the method's hyper-parameters."""

    def target_modules(self) -> list[str] | str:
        """The ``target_modules`` option as peft takes it (a list, or one regular expression)."""
        value = self.hp["target_modules"]
        return value if isinstance(value, str) else list(value)

    def prepare(self, model: torch.nn.Module) -> None:
        from peft import inject_adapter_in_model

        body = encoder_of(model)
        # prepare runs once per stage, and finish takes the adapters out at the stage's end; a model that still
        # has some (a stage of this method that did not finish) keeps them rather than getting a second set.
        if not adapter_layers(model):
            config = self.peft_config()
            try:
                inject_adapter_in_model(config, body)
            except ValueError as exc:   # peft's NoMatchingPeftModuleError among them
                raise BelugaError(f"[method.{self.name}] target_modules = {self.hp['target_modules']!r}: {exc} (the "
                                  f"linear layers of {type(body).__name__} are named {', '.join(linear_names(body))})",
                                  field=f"method.{self.name}.target_modules") from None
        adapters = {id(p) for p in adapter_parameters(body)}
        frozen = {id(p) for p in body.parameters()} - adapters
        for p in model.parameters():
            p.requires_grad_(id(p) not in frozen)

    def finish(self, model: torch.nn.Module) -> None:
        merge_adapters(model)


def linear_names(body: torch.nn.Module) -> list[str]:
    """The last parts of the names of the linear layers in ``body``: what ``target_modules`` may name."""
    return sorted({n.rsplit(".", 1)[-1] for n, m in body.named_modules() if isinstance(m, torch.nn.Linear)})
