"""``[training]``: the training values of every step, and the overrides of one step (``[training.iid]``,
``[training.suite]``) and of one configuration (``[training.configurations.NAME]``, with where its models start)."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import Field, field_validator

from beluga_core.config.strict import Strict


class StageHParams(Strict):
    """One training step's overrides of the ``[training]`` values; a key left out keeps ``[training]``'s."""

    learning_rate: float | None = Field(None, gt=0, description="Peak learning rate of AdamW.")
    batch_size: int | None = Field(None, ge=1, description="Training examples (or pairs) per batch.")
    epochs: float | None = Field(None, gt=0, description="Passes over the step's training data (may be fractional).")
    weight_decay: float | None = Field(None, ge=0, description="AdamW's decoupled weight decay.")
    warmup_ratio: float | None = Field(None, ge=0, lt=1, description=(
        "Share of the steps over which the learning rate rises linearly from 0 (then it decays linearly to 0)."))


class ConfigurationSettings(StageHParams):
    """``[training.configurations.NAME]``: a configuration's own training values, and where it starts."""

    start: str | None = Field(None, description=(
        "Where its models start instead of where the configuration starts by default: \"plm\" (the pretrained "
        "model), \"iid\" (the run's IID model of the job's seed, e.g. iid-update from the IID model) or "
        "\"store:PATH#SELECTOR\" (one done model of another store whose weights were kept, e.g. the model a "
        "suite's attacks were generated against: adaptive adversarial training; its id enters the job ids)."),
        json_schema_extra={"pattern": "^(plm|iid|store:[^#]+#.+)$"})

    @field_validator("start")
    @classmethod
    def _start(cls, value: str | None) -> str | None:
        if value is None or value in ("plm", "iid"):
            return value
        store, _, selector = value.removeprefix("store:").partition("#")
        if not value.startswith("store:") or not store.strip() or not selector.strip():
            raise ValueError(f"start '{value}': expected \"plm\", \"iid\" or \"store:PATH#SELECTOR\" (a model of "
                             "another store, e.g. store:runs/relation-iid.duckdb#iid/vanilla#42)")
        return value


class TrainingSpec(Strict):
    """``[training]``: the training values of every step; ``[training.iid]``, ``[training.suite]`` and
    ``[training.configurations.NAME]`` override them for one step, and a method's own training keys and a grid
    point override those."""

    learning_rate: float = Field(2e-5, gt=0, description="Peak learning rate of AdamW.")
    batch_size: int = Field(16, ge=1, description="Training examples (or pairs) per batch.")
    epochs: float = Field(3, gt=0, description="Passes over a step's training data (may be fractional).")
    weight_decay: float = Field(0.0, ge=0, description="AdamW's decoupled weight decay.")
    warmup_ratio: float = Field(0.0, ge=0, lt=1, description=(
        "Share of the steps over which the learning rate rises linearly from 0 (then it decays linearly to 0)."))
    max_grad_norm: float | None = Field(1.0, gt=0, description=(
        "Gradients are clipped to this norm before every optimizer step."))
    iid: StageHParams = Field(default_factory=StageHParams, description="Overrides for the IID step.")
    suite: StageHParams = Field(default_factory=StageHParams,
                                description="Overrides for the step that sees suite data.")
    configurations: dict[str, ConfigurationSettings] = Field(default_factory=dict, description=(
        "Per-configuration overrides of the suite step, on top of [training.suite], e.g. "
        "[training.configurations.iid-plus-t] learning_rate = 2e-4 (the reference selects hyper-parameters "
        "per task, configuration and method; a method's own training keys and a grid point still win)."))

    def stage(self, which: Literal["iid", "suite"], configuration: str | None = None) -> dict[str, Any]:
        base = {k: getattr(self, k) for k in ("learning_rate", "batch_size", "epochs", "weight_decay",
                                              "warmup_ratio", "max_grad_norm")}
        override = (self.iid if which == "iid" else self.suite).model_dump(exclude_none=True)
        per_config = self.configurations.get(configuration) if configuration else None
        return base | override | (per_config.model_dump(exclude_none=True, exclude={"start"}) if per_config else {})

    def start_of(self, configuration: str, default: str) -> str:
        """Where ``configuration``'s models start: its ``start`` setting, else the plugin's own."""
        per_config = self.configurations.get(configuration)
        return per_config.start if per_config is not None and per_config.start else default
