"""What a plan will cost on this machine (``beluga run --dry-run`` prints it; ``beluga run`` records it with the run
and its progress line's ETA weighs the jobs by it; ``beluga store info`` sets it against what the run took).

The cost model is ``planning.estimate`` (one job's examples, inputs and seconds). The rates come, first to last,
from: the store's own finished trainings of this plan (their ``train_seconds`` and ``eval_seconds`` against the
model's prediction: a fixed cost per job and a factor on the calibration), the calibration of this machine
(``execution.calibration``: a random-init model of each task's shape; cached), or the defaults (``BELUGA_CALIBRATION=
off``, or a model whose config this machine lacks). The wall time is the run's schedule simulated: the executor's
workers, each free one taking the first ready job in the executor's order (the critical path first where several
run), the phase before the grid's selection, then the one after.
"""

from __future__ import annotations

import functools
import heapq
import json
import os
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from beluga_core.core.errors import BelugaError
from beluga_core.execution.sizing import Workers
from beluga_core.planning.estimate import JobCost, Rates, TaskRates, job_costs
from beluga_core.planning.jobs import Job, JobSpec
from beluga_core.planning.plan import Plan, TaskPlan
from beluga_core.store.reader import finished_seconds

CALIBRATION_ENV = "BELUGA_CALIBRATION"   # "off": price at the defaults; "refresh": measure again
TOKEN_SAMPLE = 500                       # suite inputs tokenized per task for its typical length
DEFAULT_FIXED_S = 0.1                    # a job's seconds outside its steps before a store measures them
FIXED_SOURCE = ("0.1 s per job (default: a quick-run job's wall beyond its stored train and eval seconds on a "
                "2-core CPU was 0.06 s)")
MIN_FIT = 4                              # done trainings before a store's rates replace the calibration's
# (train, validation) sizes of the i.i.d. sources shipped configs name, for ``iid_train = 0`` / ``iid_test = 0`` (all
# of it), which the plan cannot count without reading them: the datasets' published split sizes (GLUE's SST-2 and
# QQP; SQuAD v1.1's, in questions). D_train is the train split; D_test the second of the validation set's seeded
# halves (``data.splits.halves``). ``builtin:sst2`` is GLUE's SST-2.
KNOWN_IID_SIZES: dict[str, tuple[int, int]] = {
    "glue/sst2": (67_349, 872), "builtin:sst2": (67_349, 872), "glue/qqp": (363_846, 40_430),
    "squad": (87_599, 10_570),
}


@dataclass(frozen=True)
class PhaseCost:
    name: str
    trainings: int
    examples: float        # training examples × epochs
    inputs: float          # evaluated inputs
    fixed: float           # seconds: trainings × the per-job fixed cost
    seconds: float         # compute seconds, all jobs in turn (fixed, training and evaluation)
    critical_path: float   # seconds: the longest chain of jobs that must follow one another
    wall: float            # seconds with the run's workers (the phase alone)


@dataclass(frozen=True)
class Pricing:
    phases: list[PhaseCost]    # IID models, grid points, scenario models, evaluation, in all
    workers: int
    rates: Rates
    sources: list[str]         # where each rate came from
    done: int                  # trainings the store holds already, not priced

    @property
    def total(self) -> PhaseCost:
        return self.phases[-1]

    def record(self) -> dict[str, Any]:
        """What the store keeps with the run (``runs.executor`` → ``estimate``), for ``beluga store info``."""
        return {"workers": self.workers, "sources": self.sources,
                "phases": [{"name": p.name, "trainings": p.trainings, "examples": p.examples, "inputs": p.inputs,
                            "seconds": round(p.seconds, 3), "wall": round(p.wall, 3)} for p in self.phases]}


def simulate(ids: Sequence[str], requires: Mapping[str, Sequence[str]],
             seconds: Mapping[str, float], slots: int) -> tuple[float, float]:
    """(wall, critical path) of running the jobs ``ids`` (in the executor's order; ``seconds`` each) on ``slots``
    workers: each free worker takes the first job, in that order, whose requirements among them have finished."""
    order = {i: k for k, i in enumerate(ids)}
    needs = {i: [r for r in requires.get(i, ()) if r in order] for i in ids}
    chain: dict[str, float] = {}
    for i in ids:   # the order has requirements first (executors start parents before children)
        chain[i] = seconds[i] + max((chain.get(r, 0.0) for r in needs[i]), default=0.0)
    waiting = {i: len(needs[i]) for i in ids}
    dependents: dict[str, list[str]] = {i: [] for i in ids}
    for i in ids:
        for r in needs[i]:
            dependents[r].append(i)
    ready = [order[i] for i in ids if not waiting[i]]
    heapq.heapify(ready)
    running: list[tuple[float, str]] = []
    now, free = 0.0, max(slots, 1)
    while ready or running:
        while ready and free:
            i = ids[heapq.heappop(ready)]
            heapq.heappush(running, (now + seconds[i], i))
            free -= 1
        now, done = heapq.heappop(running)
        free += 1
        for d in dependents[done]:
            waiting[d] -= 1
            if not waiting[d]:
                heapq.heappush(ready, order[d])
    return now, max(chain.values(), default=0.0)


def phase_costs(plan: Plan, cost: Callable[[JobSpec], JobCost], slots: int,
                order: Callable[[list[Job]], list[Job]], done: frozenset[str] = frozenset()) -> list[PhaseCost]:
    """Per phase (IID models, grid points, scenario models), evaluation, and in all: what the jobs not in ``done``
    cost; each phase's wall as if it ran alone, the total's as the run runs them (before selection, then after)."""
    first = [j for j in (plan.jobs + plan.grid_jobs if plan.pending else plan.jobs) if j.id not in done]
    # A halving search's later rungs (as many of its points as each trains), each after the rung before.
    planned = plan.planned_rungs() if plan.pending else []
    rungs = {j.id: before for j, before in planned}
    first += [j for j, _ in planned if j.id not in done]
    after: list[JobSpec] = list(plan.pending)
    costs: dict[str, JobCost] = {}
    requires: dict[str, tuple[str, ...]] = {}
    ids_first = [j.id for j in order(first)]
    for j in first:
        costs[j.id], requires[j.id] = cost(j), (*j.requires, *rungs.get(j.id, ()))
    ids_after = [f"pending:{k}" for k in range(len(after))]
    for i, spec in zip(ids_after, after, strict=True):
        costs[i] = cost(spec)   # their parents, in the first phase, have finished
    kinds = {j.id: "IID models" if j.is_iid_model else "grid points" if j.is_grid_point else "scenario models"
             for j in first}
    kinds |= dict.fromkeys(ids_after, "scenario models")
    every = ids_first + ids_after
    seconds = {i: c.seconds for i, c in costs.items()}

    def row(name: str, ids: list[str], evaluation: bool = False) -> PhaseCost:
        cs = [costs[i] for i in ids]
        if evaluation:
            return PhaseCost(name, 0, 0.0, sum(c.inputs for c in cs), 0.0, sum(c.eval_seconds for c in cs),
                             0.0, 0.0)
        wall, path = simulate(ids, requires, seconds, slots)
        return PhaseCost(name, len(ids), sum(c.examples for c in cs), sum(c.inputs for c in cs),
                         sum(c.fixed for c in cs), sum(c.seconds for c in cs), path, wall)

    rows = [row(kind, [i for i in every if kinds[i] == kind])
            for kind in ("IID models", "grid points", "scenario models")
            if any(kinds[i] == kind for i in every)]
    rows.append(row("evaluation (in the rows above)", every, evaluation=True))
    wall1, path1 = simulate(ids_first, requires, seconds, slots)
    wall2, path2 = simulate(ids_after, requires, seconds, slots)
    cs = list(costs.values())
    rows.append(PhaseCost("in all", len(every), sum(c.examples for c in cs), sum(c.inputs for c in cs),
                          sum(c.fixed for c in cs), sum(c.seconds for c in cs), path1 + path2, wall1 + wall2))
    return rows


# --- rates ---------------------------------------------------------------------------------------------------------

@functools.cache
def _tokenizer(name: str) -> Any:
    from beluga_core.training.models import load_tokenizer

    return load_tokenizer(name, local_only=True)   # the dry run downloads nothing


def task_tokens(plan: Plan, tp: TaskPlan) -> tuple[int, str]:
    """The mean tokens of a task's inputs (capped at its ``max_length``, special tokens included), over up to
    ``TOKEN_SAMPLE`` of its suite's inputs spread evenly; with the model's tokenizer where this machine has it,
    else the embedded MiniLM's (BERT's uncased WordPiece vocabulary)."""
    cap = int(tp.spec.options.get("max_length", plan.config.model.max_length))
    inputs = [i for c in tp.suite.cases for i in c.inputs]
    step = max(1, len(inputs) // TOKEN_SAMPLE)
    sample = inputs[::step][:TOKEN_SAMPLE]
    try:
        tokenizer, whence = _tokenizer(tp.model), f"{tp.model}'s tokenizer"
    except (BelugaError, OSError, ValueError):
        tokenizer, whence = _tokenizer("embedded:minilm"), f"MiniLM's tokenizer ({tp.model}'s is not here)"
    firsts = [i if isinstance(i, str) else i[0] for i in sample]
    seconds = [None if isinstance(i, str) else i[1] for i in sample]
    lengths = []
    for a, b in zip(firsts, seconds, strict=True):
        ids = tokenizer(a, b, truncation=True, max_length=cap)["input_ids"] if b is not None else \
            tokenizer(a, truncation=True, max_length=cap)["input_ids"]
        lengths.append(len(ids))
    mean = round(sum(lengths) / len(lengths)) if lengths else cap
    return max(2, mean), f"{mean} tokens per input ({len(lengths):,} of the suite's inputs, {whence})"


def iid_sizes(plan: Plan) -> tuple[dict[str, int | None], dict[str, int | None], list[str]]:
    """Per task, D_train's and D_test's sizes as the run uses them (``[sizes]``, else ``KNOWN_IID_SIZES``, else
    unknown: not counted), and a sentence for each task whose sizes are assumed or unknown."""
    sizes = plan.config.sizes
    train: dict[str, int | None] = {}
    test: dict[str, int | None] = {}
    notes = []
    for tp in plan.tasks:
        found = KNOWN_IID_SIZES.get(str(tp.spec.iid)) if tp.spec.iid else None
        known = (found[0], found[1] - found[1] // 2) if found else None   # D_test: the validation set's 2nd half
        train[tp.spec.name] = sizes.iid_train or (known[0] if known else None)
        test[tp.spec.name] = sizes.iid_test or (known[1] if known else None)
        if (not sizes.iid_train or not sizes.iid_test) and tp.spec.iid:
            notes.append(f"task {tp.spec.name}: all of {tp.spec.iid} ([sizes] iid_train or iid_test = 0): "
                         + (f"its published sizes, {known[0]:,} D_train / {known[1]:,} D_test (half of validation)"
                            if known else
                            "its size is unknown before the run reads it, so those examples are not counted"))
    return train, test, notes


def dval_sizes(plan: Plan) -> dict[str, int | None]:
    """Per task, D_val's size where the plan knows it (``KNOWN_IID_SIZES``: the validation set's first half), which
    grid points are scored on up to ``[grid] iid_val``."""
    out: dict[str, int | None] = {}
    for tp in plan.tasks:
        found = KNOWN_IID_SIZES.get(str(tp.spec.iid)) if tp.spec.iid else None
        out[tp.spec.name] = found[1] // 2 if found else None
    return out


def calibrated_rates(plan: Plan, workers: Workers, *, refresh: bool = False) -> tuple[Rates, list[str]]:
    """Rates measured on this machine for each task's shape (``execution.calibration``), and where each came from;
    the defaults for a task whose model cannot be measured here."""
    from beluga_core.execution.calibration import StepShape, calibrate
    from beluga_core.training import precision
    from beluga_core.training.models import pick_device
    from beluga_core.training.predict import CPU_BATCH, GPU_MAX_ROWS

    cfg = plan.config
    slot = workers.slots[0] if workers.slots else None
    device = pick_device(slot.device if slot is not None else cfg.executor.device)
    threads = slot.threads if slot is not None else 0
    resolved = precision.resolve(cfg.executor.precision, device)
    per_task: dict[str, TaskRates] = {}
    sources: list[str] = []
    for tp in plan.tasks:
        batches = _batches(plan, tp)
        tokens, length = task_tokens(plan, tp)
        n_labels = max(2, len(tp.suite.header.label_space or []))
        overrides = json.dumps(cfg.model.config_overrides or {}, sort_keys=True)
        eval_rows = CPU_BATCH if device.type != "cuda" else max(1, min(GPU_MAX_ROWS, 2 ** 16 // tokens))
        train = StepShape(tp.model, overrides, n_labels, tokens, True, max(batches), str(device), resolved, threads)
        evaluate = StepShape(tp.model, overrides, n_labels, tokens, False, eval_rows, str(device), resolved, threads)
        measured = calibrate([train, evaluate], refresh=refresh)
        m_train, m_eval = measured[train], measured[evaluate]
        if isinstance(m_train, str) or isinstance(m_eval, str):
            why = m_train if isinstance(m_train, str) else m_eval
            sources.append(f"task {tp.spec.name}: default rates ({why})")
            continue
        per_task[tp.spec.name] = TaskRates({b: m_train.seconds(b) for b in batches}, m_eval.seconds(eval_rows),
                                           "calibrated")
        where = f"{device}, {resolved}" + (f", {threads} thread(s)" if device.type == "cpu" else "")
        for kind, m, rows in (("training", m_train, batches), ("evaluation", m_eval, [eval_rows])):
            rate = ", ".join(f"{1 / m.seconds(b):,.1f}/s at batch {b}" for b in rows)
            sources.append(f"task {tp.spec.name} {kind}: {rate}; {'cached calibration' if m.cached else 'calibrated'}"
                           f" {m.when} ({m.how}; {where}); {length}")
    if not per_task:
        return Rates(fixed=DEFAULT_FIXED_S, fixed_source=FIXED_SOURCE), sources
    # One rate for the sections that price a task's extra work alone (eval suites, only:LEVEL, attributions): the
    # first measured task's, at the config's batch size.
    first = next(iter(per_task.values()))
    return Rates(1 / first.train_seconds(cfg.training.batch_size), 1 / first.eval,
                 f"calibrated on this machine (task {next(iter(per_task))})", per_task, DEFAULT_FIXED_S,
                 FIXED_SOURCE), sources


def _batches(plan: Plan, tp: TaskPlan) -> list[int]:
    """Every batch size the task's jobs train at."""
    cfg = plan.config
    sizes = {int(j.hparams.get("batch_size", 0)) for j in (*tp.jobs, *tp.grid_jobs)}
    sizes |= {int(cfg.training.stage(stage, c)["batch_size"]) for stage in ("iid", "suite")
              for c in cfg.configurations}
    return sorted(s for s in sizes if s > 0)


def fit_fixed_and_factor(predicted: Sequence[float], stored: Sequence[float], fixed: float) -> tuple[float, float]:
    """(fixed seconds per job, factor on the predicted seconds) that fit ``stored ≈ fixed + factor · predicted``:
    least squares where the predictions vary enough to tell the two apart (a coefficient of variation above 0.25)
    and the fit is sensible (a positive factor, a fixed cost not below 0); else ``fixed`` kept and the factor
    that makes the totals agree."""
    n = len(predicted)
    mx, my = sum(predicted) / n, sum(stored) / n
    sxx = sum((x - mx) ** 2 for x in predicted)
    if sxx > 0 and (sxx / n) ** 0.5 > 0.25 * mx:
        slope = sum((x - mx) * (y - my) for x, y in zip(predicted, stored, strict=True)) / sxx
        if slope > 0 and my - slope * mx >= 0:
            return my - slope * mx, slope
    return fixed, max((sum(stored) - n * fixed) / max(sum(predicted), 1e-9), 1e-6)


def fitted_rates(plan: Plan, rates: Rates, seconds: Mapping[str, tuple[float, float]],
                 iid_test: Mapping[str, int | None], iid_train: Mapping[str, int | None],
                 iid_val: Mapping[str, int | None] | None = None) -> tuple[Rates, str | None]:
    """``rates`` fitted to a store's finished trainings of this plan (job id → stored train and eval seconds): the
    stored train seconds against the predicted as ``fixed + factor · predicted`` (least squares; the fixed cost
    kept where the predictions do not vary enough to tell it), the eval seconds as a factor. Unchanged, with no
    sentence, below ``MIN_FIT`` trainings."""
    cost = job_costs(plan, rates, iid_test, iid_train, iid_val)
    by_id = {j.id: j for j in (*plan.jobs, *plan.grid_jobs)}
    pairs = [(cost(by_id[i]), t, e) for i, (t, e) in seconds.items() if i in by_id]
    if len(pairs) < MIN_FIT:
        return rates, None
    fixed, factor = fit_fixed_and_factor([c.train_seconds for c, _, _ in pairs], [t for _, t, _ in pairs],
                                         rates.fixed)
    n = len(pairs)
    predicted_eval = sum(c.eval_seconds for c, _, _ in pairs)
    eval_factor = sum(e for _, _, e in pairs) / predicted_eval if predicted_eval > 0 else 1.0
    per_task = {name: TaskRates({b: s * factor for b, s in r.train.items()}, r.eval * eval_factor, "measured")
                for name, r in rates.per_task.items()}
    scaled = Rates(rates.train / factor, rates.eval / eval_factor, "measured on this store's trainings",
                   per_task, fixed, f"{fixed:.2f} s per job (this store's {n} trainings)")
    return scaled, (f"this store's {n} finished trainings: steps ×{factor:.2f} and evaluation ×{eval_factor:.2f} the "
                    f"prior rates, {fixed:.2f} s per job beyond them")


def run_order(plan: Plan, slots: int) -> Callable[[list[Job]], list[Job]]:
    """The order the executor's dispatch starts jobs in (``execution.scheduling.dispatch``): the plan's with one
    worker, the critical path first with several."""
    from beluga_core.execution.scheduling import critical_path_order, order_jobs
    from beluga_core.planning.estimate import job_seconds

    if slots == 1:
        return order_jobs
    weight = job_seconds(plan)
    return lambda jobs: critical_path_order(jobs, weight)


def price(plan: Plan, workers: Workers, *,
          store: Path | Any | None = None, done: frozenset[str] = frozenset(), refresh: bool = False,
          given: tuple[Rates, list[str]] | None = None) -> Pricing:
    """``plan`` priced on this machine (module docstring): the jobs not in ``done``, with ``workers``; the rates
    from ``store`` (its path or open handle) where it has finished trainings of the plan. ``given``: rates and
    where they came from, to price the plan at instead of this machine's (a projection to another)."""
    setting = os.environ.get(CALIBRATION_ENV, "").strip().lower()
    if given is not None:
        rates, sources = given[0], list(given[1])
    elif setting == "off":
        rates, sources = Rates(fixed=DEFAULT_FIXED_S, fixed_source=FIXED_SOURCE), \
            [f"default rates ({CALIBRATION_ENV}=off): {Rates().source}"]
    else:
        rates, sources = calibrated_rates(plan, workers, refresh=refresh or setting == "refresh")
    iid_train, iid_test, notes = iid_sizes(plan)
    iid_val = dval_sizes(plan)
    sources += notes
    if store is not None:
        rates, fitted = fitted_rates(plan, rates, finished_seconds(store), iid_test, iid_train, iid_val)
        if fitted is not None:
            sources.insert(0, f"measured, which wins: {fitted}")
    sources.append(f"fixed cost: {rates.fixed_source}")
    slots = workers.count or 1
    cost = job_costs(plan, rates, iid_test, iid_train, iid_val)
    phases = phase_costs(plan, cost, slots, run_order(plan, slots), done)
    return Pricing(phases, slots, rates, sources, sum(1 for j in (*plan.jobs, *plan.grid_jobs) if j.id in done))
