"""The memory one training worker takes on a GPU: measured by a probe in a spawned process (one forward and
backward pass and AdamW step of the plan's largest model at its largest batch size and ``max_length`` tokens),
estimated from the model's shape where the probe's step fails."""

from __future__ import annotations

import multiprocessing as mp
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass
from typing import Any, Literal

from beluga_core.execution.sizing.memory import (
    CONTEXT_BYTES,
    PROBE_TIMEOUT_S,
    GiB,
    MemoryUnknown,
)
from beluga_core.execution.sizing.workers import WorkerMemory
from beluga_core.planning.plan import Plan


def estimated_worker_bytes(parameters: int, hidden: int, layers: int, heads: int, batch: int, length: int,
                           bf16: bool) -> int:
    """A training worker's peak memory from its model's shape, where the probe cannot measure it.

    Weights, gradients and AdamW's two moments in fp32 (16 bytes a parameter); a transformer layer's activations
    kept for the backward pass, 34·b·s·h + 5·a·b·s² bytes in 16-bit (Korthikanti et al. 2022, "Reducing Activation
    Recomputation in Large Transformer Models", eq. 1), twice that in fp32; and the CUDA context."""
    state = 16 * parameters
    per_layer = batch * length * (34 * hidden + 5 * heads * length)
    return state + layers * per_layer * (1 if bf16 else 2) + CONTEXT_BYTES


@dataclass(frozen=True)
class ProbeShape:
    """The largest training step of a plan: its biggest model at its largest batch size and ``max_length``."""

    model: str
    parameters: int
    config_overrides: dict[str, Any]
    batch: int
    length: int
    precision: Literal["auto", "fp32", "bf16"]
    device: str


def probe_shape(plan: Plan, device: str) -> ProbeShape:
    """The plan's largest model (by parameters; read from this machine only) at its largest batch size."""
    from beluga_core.training.models import parameter_count

    cfg = plan.config
    overrides = dict(cfg.model.config_overrides or {})
    sizes = {m: parameter_count(m, overrides) for m in sorted({tp.model for tp in plan.tasks})}
    known = {m: n for m, n in sizes.items() if n is not None}
    if not known:
        raise MemoryUnknown(f"the config of model {', '.join(sizes) or '(none)'} is not on this machine")
    model = max(known, key=lambda m: (known[m], m))
    batches = [int(j.hparams.get("batch_size", 0)) for j in (*plan.jobs, *plan.grid_jobs)]
    grid = list(cfg.grid.batch_size) if cfg.grid.enabled else []
    return ProbeShape(model, known[model], overrides, max([cfg.training.batch_size, *grid, *batches]),
                      cfg.model.max_length, cfg.executor.precision, device)


def gpu_worker_memory(plan: Plan, device: str) -> WorkerMemory:
    """Free memory of every GPU and one worker's peak, measured by the probe (estimated where its step failed).
    Call it only where there is a GPU: it starts CUDA, in a process of its own."""
    shape = probe_shape(plan, device)
    try:
        with ProcessPoolExecutor(1, mp_context=mp.get_context("spawn")) as pool:
            free, peak, facts = pool.submit(_probe, shape).result(timeout=PROBE_TIMEOUT_S)
    except Exception as exc:  # the probe process died, CUDA is unusable, the config unreadable: nothing known
        raise MemoryUnknown(f"the probe failed: {type(exc).__name__}: {exc}") from None
    where = f"{shape.model} at batch {shape.batch} × {shape.length} tokens, {facts['precision']}"
    if isinstance(peak, int):
        return WorkerMemory(tuple(free), peak + CONTEXT_BYTES,
                            f"measured: a training step of {where} peaked at {peak / GiB:.2f} GiB, + "
                            f"{CONTEXT_BYTES / GiB:.1f} GiB CUDA context")
    if facts.get("shape") is None:
        raise MemoryUnknown(f"the probe's step failed ({peak}) and the config of {shape.model} has no "
                            "transformer shape to estimate from")
    hidden, layers, heads = facts["shape"]
    estimate = estimated_worker_bytes(shape.parameters, hidden, layers, heads, shape.batch, shape.length,
                                      facts["precision"] == "bf16")
    return WorkerMemory(tuple(free), estimate, f"estimated from {where}: the probe's step failed ({peak})")


def _probe(shape: ProbeShape) -> tuple[list[int], int | str, dict[str, Any]]:
    """In the probe process: every GPU's free bytes, then one training step's peak reserved bytes, or why it failed
    and the model's shape (hidden size, layers, heads) to estimate from."""
    import torch
    from transformers import AutoModelForSequenceClassification

    from beluga_core.training import precision
    from beluga_core.training.models import local_classifier_config

    free = [torch.cuda.mem_get_info(i)[0] for i in range(torch.cuda.device_count())]
    config = local_classifier_config(shape.model, config_overrides=shape.config_overrides)
    if config is None:
        raise MemoryUnknown(f"the config of model {shape.model} is not on this machine")
    device = torch.device(shape.device if shape.device.startswith("cuda:") else "cuda:0")
    facts: dict[str, Any] = {"precision": precision.configure(shape.precision, device)}
    try:
        model = AutoModelForSequenceClassification.from_config(config).to(device)
        optimizer = torch.optim.AdamW(model.parameters(), lr=1e-5)
        ids = torch.randint(0, config.vocab_size, (shape.batch, shape.length), device=device)
        labels = torch.zeros(shape.batch, dtype=torch.long, device=device)
        for _ in range(2):  # the second step holds AdamW's moments, made by the first, beside its activations
            with precision.autocast(device):
                loss = model(input_ids=ids, attention_mask=torch.ones_like(ids), labels=labels).loss
            loss.backward()
            optimizer.step()
            optimizer.zero_grad()
        torch.cuda.synchronize(device)
        return free, int(torch.cuda.max_memory_reserved(device)), facts
    except Exception as exc:  # out of memory, a model that does not build here: estimated instead
        sizes = [_first_int(config, *names) for names in (("hidden_size", "n_embd", "d_model"),
                                                          ("num_hidden_layers", "n_layer", "num_layers"),
                                                          ("num_attention_heads", "n_head", "num_heads"))]
        facts["shape"] = None if None in sizes else sizes
        return free, f"{type(exc).__name__}: {str(exc)[:200]}", facts


def _first_int(config: Any, *names: str) -> int | None:
    return next((v for v in (getattr(config, n, None) for n in names) if isinstance(v, int)), None)
