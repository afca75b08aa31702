"""Training and evaluation rates of this machine, measured for a plan's shapes (``beluga run --dry-run`` prices a
plan with them: ``orchestration.pricing``).

A shape is a model (its config as this machine reads it, else ``KNOWN_CONFIGS``: no download), inputs of a
typical length, training or evaluation, the device, precision and the worker's threads. A step of ``rows`` rows
costs ``per_step + rows · per_row`` seconds: AdamW's update and the clipping of the gradients' norm once per step,
the forward (and backward) passes per row. Both are measured on a randomly initialised slice of the model, its
embeddings, head and 2 of its layers, so that a paper-sized plan calibrates within seconds on a CPU:

- per row: the slice's forward and backward passes (a forward pass in inference mode, for evaluation) at the plan's
  batch and typical length (fewer rows where that is slow: ``SLICE_STEP_S``) give the FLOP/s this machine reaches
  on that work; the whole model's passes are its FLOPs at that rate (``pass_flops``: 2 per parameter of its layers
  and token forward, 6 forward and backward, plus attention's scores and mixing), so the slice's embeddings and
  head, counted at the layers' rate, make the figure err on the slow side;
- per step: the update of the slice's parameters, timed alone, times the whole model's parameters over the slice's.

Timing the whole model instead (BERT-large's 24 layers at 16 × 384 tokens take minutes a step on a CPU), or
differencing slices of 1 and 2 layers (the difference of two short timings, times the layers, swung 4× between
runs), was tried: the first breaks the budget, the second is noise.

Each result is cached in the user's cache folder (``$XDG_CACHE_HOME/beluga/calibration``), keyed on the shape,
the device, precision, threads, this machine's CPU, and the versions of torch, transformers and beluga;
``refresh`` (``beluga run --calibrate``) measures again.
"""

from __future__ import annotations

import hashlib
import json
import os
import statistics
import time
from collections.abc import Iterable
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

# The configs of the hub models beluga's shipped configs name (``benchmarks/full.toml``), so that a machine that has
# never downloaded them can price a plan: each is the model's config.json on the Hugging Face hub (Apache-2.0), the
# fields a sequence classifier's shape depends on. Any other model's config must be on this machine.
KNOWN_CONFIGS: dict[str, dict[str, Any]] = {
    "bert-base-uncased": {"model_type": "bert", "hidden_size": 768, "num_hidden_layers": 12,
                          "num_attention_heads": 12, "intermediate_size": 3072, "vocab_size": 30522,
                          "max_position_embeddings": 512, "type_vocab_size": 2},
    "bert-large-uncased-whole-word-masking": {"model_type": "bert", "hidden_size": 1024, "num_hidden_layers": 24,
                                              "num_attention_heads": 16, "intermediate_size": 4096,
                                              "vocab_size": 30522, "max_position_embeddings": 512,
                                              "type_vocab_size": 2},
}

SLICE_STEP_S = 0.8     # a slice's pass over the largest batch longer than this is timed on fewer rows
TIMED_S = 0.15         # each timing repeats steps until this long (at least 2 after a warm-up step), ...
TIMED_STEPS = 5        # ... or this many
CACHE_FORMAT = 2


@dataclass(frozen=True)
class StepShape:
    """What a rate depends on: the model, its inputs' tokens, training or evaluation, the most rows a step of the
    plan takes, and where it runs."""

    model: str
    overrides: str        # the config's [model] config_overrides, as sorted JSON
    num_labels: int
    tokens: int
    train: bool
    rows: int
    device: str
    precision: str        # resolved: "fp32" or "bf16"
    threads: int


@dataclass(frozen=True)
class Measured:
    per_step: float       # seconds
    per_row: float        # seconds
    how: str              # what was timed
    when: str             # when it was measured
    cached: bool = False

    def seconds(self, rows: int) -> float:
        """Seconds per row (per training example, or per evaluated input) in steps of ``rows`` rows."""
        return self.per_step / max(rows, 1) + self.per_row


def model_config(name: str, overrides: dict[str, Any] | None, num_labels: int) -> tuple[Any, str] | None:
    """The classifier config of ``name`` and where it came from: this machine's copy, else ``KNOWN_CONFIGS``;
    None when neither has it."""
    from transformers import AutoConfig

    from beluga_core.training.models import local_classifier_config

    config = local_classifier_config(name, num_labels, overrides)
    if config is not None:
        return config, "its config on this machine"
    known = KNOWN_CONFIGS.get(name)
    if known is None:
        return None
    fields = {k: v for k, v in known.items() if k != "model_type"}
    return (AutoConfig.for_model(known["model_type"], num_labels=num_labels, **fields, **(overrides or {})),
            "beluga's copy of its hub config")


def calibration_folder() -> Path:
    return Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "beluga" / "calibration"


def cache_key(shape: StepShape) -> dict[str, Any]:
    from importlib.metadata import version

    import torch

    import beluga_core
    from beluga_core.training.precision import cpu_model

    return {"format": CACHE_FORMAT, "shape": asdict(shape), "cpu": cpu_model(),
            "gpu": torch.cuda.get_device_name(0) if shape.device.startswith("cuda") else None,
            "versions": {"torch": torch.__version__, "transformers": version("transformers"),
                         "beluga": beluga_core.__version__}}


def _cache_path(key: dict[str, Any]) -> Path:
    digest = hashlib.sha256(json.dumps(key, sort_keys=True).encode()).hexdigest()[:24]
    return calibration_folder() / f"{digest}.json"


def _read_cache(key: dict[str, Any]) -> Measured | None:
    try:
        entry = json.loads(_cache_path(key).read_text(encoding="utf-8"))
        if entry["key"] != key:
            return None
        return Measured(float(entry["per_step"]), float(entry["per_row"]), str(entry["how"]), str(entry["when"]),
                        cached=True)
    except (OSError, ValueError, KeyError, TypeError):
        return None


def _write_cache(key: dict[str, Any], m: Measured) -> None:
    from beluga_core.core.io import atomic_write

    path = _cache_path(key)
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        atomic_write(path, json.dumps({"key": key, "per_step": m.per_step, "per_row": m.per_row, "how": m.how,
                                       "when": m.when},
                                      indent=1, sort_keys=True).encode())
    except OSError:   # a read-only home: the next dry run measures again
        pass


def calibrate(shapes: Iterable[StepShape], *, refresh: bool = False) -> dict[StepShape, Measured | str]:
    """Each shape's step model, from the cache or measured now (``refresh``: measured now); for a shape that
    cannot be measured, why (its config is not on this machine, the step failed). Shapes of one model share one
    randomly initialised copy of it."""
    out: dict[StepShape, Measured | str] = {}
    models: dict[tuple[str, str, int, str], Any] = {}
    for shape in shapes:
        key = cache_key(shape)
        cached = None if refresh else _read_cache(key)
        if cached is not None:
            out[shape] = cached
            continue
        result = measure(shape, models)
        if isinstance(result, Measured):
            _write_cache(key, result)
        out[shape] = result
    return out


def measure(shape: StepShape, models: dict[tuple[str, str, int, str], Any] | None = None) -> Measured | str:
    """Time ``shape`` on a randomly initialised model (the module docstring says how it is capped); ``models``:
    what earlier shapes built and timed (their slices, and a 1-row forward pass per length), reused."""
    import torch

    found = model_config(shape.model, json.loads(shape.overrides), shape.num_labels)
    if found is None:
        return f"the config of {shape.model} is not on this machine"
    config, whence = found
    threads = torch.get_num_threads()
    if shape.device == "cpu" and shape.threads > 0:
        torch.set_num_threads(shape.threads)
    try:
        return _measure(shape, config, whence, {} if models is None else models)
    except (RuntimeError, ValueError, TypeError) as exc:   # out of memory, a model that does not build here
        return f"its step failed: {type(exc).__name__}: {str(exc)[:200]}"
    finally:
        torch.set_num_threads(threads)


def pass_flops(layer_params: int, layers: int, hidden: int, tokens: int, train: bool) -> float:
    """FLOPs of one row's pass through ``layers`` transformer layers: 2 per layer parameter and token forward (a
    multiply and an add), 4 · tokens · hidden per layer and token for attention's scores and mixing; a backward
    pass twice the forward's (Kaplan et al. 2020, "Scaling Laws for Neural Language Models", section 2.1)."""
    forward = layers * tokens * (2 * layer_params + 4 * tokens * hidden)
    return 3 * forward if train else forward


def _measure(shape: StepShape, config: Any, whence: str, models: dict[tuple[str, str, int, str], Any]) -> Measured:
    layers = int(getattr(config, "num_hidden_layers", 0) or 0)
    hidden = int(getattr(config, "hidden_size", 0) or 0)
    tokens = max(2, min(shape.tokens, int(getattr(config, "max_position_embeddings", shape.tokens) or shape.tokens)))
    key = (shape.model, shape.overrides, shape.num_labels, shape.device)
    if key not in models:
        models[key] = _random_model(config, min(layers, 2) if layers else None, shape.device)
    model = models[key]
    stack = _layer_list(model, min(layers, 2)) if layers else None
    if stack is None or not hidden:
        raise ValueError(f"{shape.model} has no list of transformer layers to slice")
    slice_layers = len(stack[2])
    layer_params = sum(p.numel() for p in stack[2][0].parameters())
    slice_params = sum(p.numel() for p in model.parameters())
    whole_params = slice_params + (layers - slice_layers) * layer_params
    # The rows: the plan's batch, fewer where the pass would be slow, as a 1-row forward pass predicts (a backward
    # pass twice a forward's). A training pass is timed whole at those rows, the embeddings' gradient with it.
    rows = shape.rows
    forward_key = (*key[:3], f"{shape.device} forward at {tokens}")   # training and evaluation share it
    if forward_key not in models:
        models[forward_key] = _timed(shape, model, 1, tokens, "forward")
    guess = models[forward_key] * (3 if shape.train else 1)
    if guess * rows > SLICE_STEP_S:
        rows = max(1, min(rows, int(SLICE_STEP_S / guess)))
    t_pass = _timed(shape, model, rows, tokens, "pass")
    rate = rows * pass_flops(layer_params, slice_layers, hidden, tokens, shape.train) / t_pass   # FLOP/s
    per_row = pass_flops(layer_params, layers, hidden, tokens, shape.train) / rate
    per_step = 0.0
    if shape.train:   # an update's time depends on the parameters alone: one timing per model
        update_key = (*key[:3], f"{shape.device} update")
        if update_key not in models:
            models[update_key] = _timed(shape, model, rows, tokens, "update")
        per_step = models[update_key] * whole_params / slice_params
    fewer = f" (of its {shape.rows})" if rows < shape.rows else ""
    what = (f"random-init {shape.model} ({whence}): its embeddings, head and {slice_layers} of its {layers} layers "
            f"at {rows}{fewer} × {tokens} tokens, {rate / 1e9:,.0f} GFLOP/s, scaled to {layers} layers by FLOPs"
            + ("; AdamW's update timed, scaled by parameters" if shape.train else ""))
    return Measured(per_step, per_row, what, _now())


def _now() -> str:
    return time.strftime("%Y-%m-%d %H:%M")


def _random_model(config: Any, layers: int | None, device: str) -> Any:
    """A sequence classifier of ``config`` (``layers`` of its layers; None: all), its weights drawn uniformly: a
    step's time does not depend on their values, and transformers' own initialisation of every module takes longer
    than the steps timed."""
    import copy

    import torch
    from transformers import AutoModelForSequenceClassification

    try:   # where transformers 5 keeps it; 4 kept it in modeling_utils
        from transformers.initialization import no_init_weights
    except ImportError:
        from transformers.modeling_utils import no_init_weights  # type: ignore[no-redef,attr-defined]

    c = copy.deepcopy(config)
    if layers is not None:
        c.num_hidden_layers = layers
    with no_init_weights():
        model = AutoModelForSequenceClassification.from_config(c)
    generator = torch.Generator().manual_seed(0)
    with torch.no_grad():
        for p in model.parameters():
            p.uniform_(-0.02, 0.02, generator=generator)
    return model.to(torch.device(device))


def _layer_list(model: Any, n: int) -> tuple[Any, str, Any] | None:
    """The module holding the model's list of ``n`` transformer layers, the list's name, and the list."""
    import torch

    for module in model.modules():
        for name, child in module.named_children():
            if isinstance(child, torch.nn.ModuleList) and len(child) == n:
                return module, name, child
    return None


def _timed(shape: StepShape, model: Any, rows: int, tokens: int, what: str) -> float:
    """Median seconds of ``what`` on ``model`` with ``rows`` × ``tokens``: "pass", its forward and backward passes
    (training) or its forward pass in inference mode (evaluation); "forward", the latter whatever the shape;
    "update", AdamW's step and the clipping of the gradients' norm (as the training loop makes them)."""
    import torch

    from beluga_core.training import precision

    device = torch.device(shape.device)
    precision.configure("bf16" if shape.precision == "bf16" else "fp32", device)
    vocab = int(model.config.vocab_size)
    generator = torch.Generator().manual_seed(0)
    ids = torch.randint(min(1000, vocab - 1), vocab, (rows, tokens), generator=generator).to(device)
    mask = torch.ones_like(ids)
    labels = torch.zeros(rows, dtype=torch.long, device=device)
    model.train(shape.train and what != "forward")

    def backward() -> None:
        with precision.autocast(device):
            loss = model(input_ids=ids, attention_mask=mask, labels=labels).loss
        loss.backward()

    if what == "update":
        fused = device.type in ("cuda", "cpu")
        try:
            optimizer = torch.optim.AdamW(model.parameters(), lr=1e-5, fused=fused)
        except (RuntimeError, TypeError):
            optimizer = torch.optim.AdamW(model.parameters(), lr=1e-5)
        if any(p.grad is None for p in model.parameters() if p.requires_grad):
            backward()   # gradients to update with (the pass timed last leaves its own); each step updates again

        def step() -> None:
            torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)   # the loop's default max_grad_norm
            optimizer.step()
    elif shape.train and what == "pass":
        def step() -> None:
            model.zero_grad(set_to_none=True)
            backward()
    else:
        def step() -> None:
            with torch.inference_mode(), precision.autocast(device):
                model(input_ids=ids, attention_mask=mask).logits.float().cpu()

    def sync() -> None:
        if device.type == "cuda":
            torch.cuda.synchronize(device)

    step()   # warm-up: allocations, AdamW's moments, kernels chosen
    sync()
    times: list[float] = []
    started = time.perf_counter()
    while len(times) < 2 or (len(times) < TIMED_STEPS and time.perf_counter() - started < TIMED_S):
        t0 = time.perf_counter()
        step()
        sync()
        times.append(time.perf_counter() - t0)
    if what == "update":
        model.zero_grad(set_to_none=True)
    return statistics.median(times)
