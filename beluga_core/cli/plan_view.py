"""The dry run's text: the plan's summary (``beluga_core.orchestration.plan_summary``) formatted with rich, a
section per thing the run will do, as ``beluga run --dry-run`` prints it."""

from __future__ import annotations

import json

from rich.console import Console
from rich.markup import escape
from rich.table import Table

from beluga_core.core.io import human_size
from beluga_core.orchestration.plan_summary import PlanSummary, TaskSummary
from beluga_core.orchestration.pricing import Pricing
from beluga_core.planning.estimate import Rates, describe
from beluga_core.planning.jobs import JobKind


def _plain(console: Console, text: str) -> None:
    """A line of text the layers below wrote (a pack's members, the workers' reason): no markup, unwrapped."""
    console.print(text, highlight=False, markup=False, soft_wrap=True)


def _table(console: Console, title: str, columns: dict[str, str], rows: list[list[str]],
           total: list[str] | None = None) -> None:
    table = Table(title=title, title_justify="left")
    for col, justify in columns.items():
        table.add_column(col, justify="right" if justify == "r" else "left")
    for row in rows:
        table.add_row(*row)
    if total is not None:
        table.add_row(*total, style="bold")
    console.print(table)


def print_plan(s: PlanSummary, console: Console) -> None:
    """The dry run: ``s`` as text, a section per thing the run will do."""
    for t in s.tasks:
        _print_task(s, t, console)
    for method, hp, sizes in s.methods:
        parts = [", ".join(f"{k} = {'unset' if v is None else json.dumps(v)}" for k, v in hp.items())] if hp else []
        parts += [f"trains {n:,} of {model}'s {total / 1e6:.1f}M parameters"
                  + (f" ({100 * n / total:.2g} %)" if n < total else "") for model, n, total in sizes]
        if parts:
            console.print(f"  method {escape(method)}: {escape('; '.join(parts))}", highlight=False)
    if s.grid is not None:
        mode, criterion = s.grid
        other = "strict" if mode == "seen" else "seen"
        # A halving search trains a point once per rung it reaches: its trainings are more than its points.
        halving = any(c.rungs for t in s.tasks for c in t.grid or [])
        grid = "grid trainings (the rungs of successive halving" if halving else "grid points ("
        console.print(f"[bold]{s.trainings} trainings in all[/]: {s.scenario_models} scenario models + "
                      f"{s.grid_points[mode]} {grid}{'; ' if halving else ''}grid mode {mode}, criterion {criterion}); "
                      f"grid mode {other} would train {s.scenario_models + s.grid_points[other]}")
    else:
        console.print(f"[bold]{s.trainings} trainings in all[/]")
    if s.workers is not None:
        _plain(console, s.workers)
    if s.pricing is not None:
        _print_pricing(s.pricing, console)
    if (p := s.packs) is not None and p.shown:
        head = f"packs ([executor] pack = {p.setting}"
        if p.size <= 1:
            _plain(console, f"{head}): none, every training alone{f': {p.why}' if p.why else ''}")
        else:
            if p.why:   # the line the run prints too
                _plain(console, f"packs: up to {p.size} members ({p.why})")
            _plain(console, f"{head}, up to {p.size} members): {p.summary}; a pack's members share the task, base "
                   "model, start weights (the pretrained model or one parent), method and hyper-parameters but the "
                   "learning rate, and packs are as even as the size allows"
                   + "".join(f"; {n} alone: {w}" for w, n in p.alone.items())
                   + (f"; the {p.pending} trainings that wait for the grid search pack once it has chosen their "
                      "hyper-parameters" if p.pending else ""))
            for group in p.groups[:5]:
                _plain(console, "  pack: " + ", ".join(group))
            if len(p.groups) > 5:
                console.print(f"  … and {len(p.groups) - 5} more pack(s)", highlight=False)
    console.print(f"store: {s.store}{f' (variant {s.variant!r})' if s.variant else ''}", highlight=False)
    for k in s.status:
        waits = ("the rungs before have run (successive halving)" if k.kind is JobKind.GRID
                 else "the grid search has chosen their hyper-parameters")
        later = f" (+ {k.pending} once {waits})" if k.pending else ""
        console.print(f"  {k.kind.plural}: {k.planned} planned, {k.done} done, {k.failed} failed (retried), "
                      f"{k.to_run} to run{later}", highlight=False)
    for level, text in s.warnings:
        console.print(f"[yellow]{level}:[/] {escape(text)}", soft_wrap=True, highlight=False)


def _print_pricing(p: Pricing, console: Console) -> None:
    """The run's cost per phase on this machine, and where its rates came from."""
    done = f"; {p.done} training(s) already in the store not counted" if p.done else ""
    short = {"IID models": "IID", "grid points": "grid", "scenario models": "scenario",
             "evaluation (in the rows above)": "evaluation"}

    def t(x: float, shown: bool = True) -> str:
        return describe(x).removeprefix("≈ ") if shown else ""

    _table(console, f"cost on this machine ({p.workers} worker(s){done})",
           {"phase": "l", "trainings": "r", "examples": "r", "inputs": "r", "fixed": "r", "compute": "r",
            "critical": "r", "wall": "r"},
           [[short.get(ph.name, ph.name), f"{ph.trainings:,}" if ph.trainings else "",
             f"{ph.examples:,.0f}" if ph.examples else "", f"{ph.inputs:,.0f}", t(ph.fixed, bool(ph.trainings)),
             t(ph.seconds), t(ph.critical_path, bool(ph.trainings)), t(ph.wall, bool(ph.trainings))]
            for ph in p.phases[:-1]],
           [p.total.name, f"{p.total.trainings:,}", f"{p.total.examples:,.0f}", f"{p.total.inputs:,.0f}",
            t(p.total.fixed), t(p.total.seconds), t(p.total.critical_path), t(p.total.wall)])
    _plain(console, "  examples: training examples × epochs; inputs: evaluated inputs; fixed: the per-job fixed cost "
           "of its trainings; compute: its jobs one after another; critical: its longest chain of jobs that wait "
           "for one another; wall: with the workers above (a phase's as if alone; in all: before the grid's "
           "selection, then after); evaluation: its part of the rows above. Rates:")
    for line in p.sources:
        _plain(console, f"  - {line}")


def _print_task(s: PlanSummary, t: TaskSummary, console: Console) -> None:
    done = [str(sum(r.done for r in t.folds))] if s.with_store else []
    _table(console, f"task {t.name}: suite {t.suite} ({t.cases:,} cases; T_train {t.train:,} / T_val {t.val:,} / "
           f"T_test {t.test:,} used); model {t.model}",
           {"configuration": "l", "method": "l", "scenario": "l", "trainings": "r", **({"done": "r"} if done else {})},
           [[r.config, r.method, r.scenario, str(r.trainings), *([str(r.done)] if done else [])] for r in t.folds],
           ["total", "", "", str(sum(r.trainings for r in t.folds)), *done])
    for level, groups in t.skipped.items():
        if groups:
            console.print(f"  held-out {level}: no fold for {len(groups)} group(s) without T_test cases: "
                          f"{', '.join(groups[:5])}{' …' if len(groups) > 5 else ''}")
    if t.grid is not None and s.grid is not None:
        halving = any(c.rungs for c in t.grid)
        _table(console, f"task {t.name}: grid search (selected by {s.grid[1]} on T_val; mode {s.grid[0]}"
               + ("; successive halving: points per rung" if halving else "") + ")",
               {"configuration": "l", "method searched": "l", "points": "r", **({"rungs": "l"} if halving else {}),
                "seen mode": "r", "strict mode": "r"},
               [[c.config, c.method, str(c.points), *([c.rungs_text()] if halving else []), str(c.seen),
                 str(c.strict)] for c in t.grid],
               ["total", "", "", *([""] if halving else []), str(sum(c.seen for c in t.grid)),
                str(sum(c.strict for c in t.grid))])
        for method, reuses in t.reusing:
            console.print(f"  {method}: no search of its own; reuses the choices of {' and '.join(reuses)}")
    for config, n, start, source in t.starts:
        console.print(f"  {escape(config)}: its {n} job(s) start from {escape(start)} ({escape(source)})",
                      highlight=False)
    if t.only is not None:
        console.print(f"  {', '.join(t.only.levels)}: {t.only.trainings} more trainings (one per group and "
                      f"configuration-method-seed), each evaluated on all {t.test:,} T_test cases: "
                      f"{describe(t.only.seconds)}", highlight=False, emoji=False)
    for e in t.evals:
        console.print(f"  eval suite [bold]{escape(e.name)}[/] ({e.evaluated:,} of {e.cases:,} cases evaluated): "
                      f"{e.passes} evaluation passes, {e.inputs:,} inputs, {describe(e.seconds)}", highlight=False)
        if e.mapped:
            mapped = "; ".join(f"{lvl}: {n:,} cases mapped, {how}" for lvl, n, how in e.mapped)
            console.print(f"    held-out folds see the cases mapped to their group — {escape(mapped)}",
                          highlight=False)
        if e.unmapped:
            console.print(f"    no mapping at {', '.join(e.unmapped)}: those folds are not evaluated on it",
                          highlight=False)
    if t.only is not None or t.evals:
        r: Rates = s.rates
        console.print(f"  (times: {r.source}, {r.train:.0f} training examples/s, {r.eval:.0f} inputs/s)",
                      highlight=False)
    k = t.kept
    if k.probabilities:
        iid = f"{human_size(k.iid_bytes)} of i.i.d. probabilities" if k.iid_bytes is not None else \
            "i.i.d. probabilities of every D_test example (\\[sizes] iid_test = 0: all of it)"
        console.print(f"  \\[store] keep_probabilities: ≈ {human_size(k.case_bytes)} of per-input suite predictions, "
                      f"{iid} (uncompressed)", highlight=False)
    weights = "" if k.params is None else \
        f", ≈ {human_size(4 * k.params * k.models)} ({k.params / 1e6:.1f}M parameters each)"
    console.print(f"  \\[store] keep_weights = \"{k.keep_weights}\": {k.models} model(s) kept beside the store"
                  f"{weights}", highlight=False)
    if (a := t.attributions) is not None:
        pools = " + \\[fewshot] probe pools" if a.pools else ""
        console.print(f"  \\[attributions] {', '.join(a.methods)}:{' at most' if a.at_most else ''} {a.least}–"
                      f"{a.most} inputs per model, {a.total:,} in all (cases: {a.cases}, {a.inputs} input, cap "
                      f"{a.cap}{pools}): {describe(a.seconds)} "
                      f"(≈ {a.forwards:,.0f} forward passes per input)", highlight=False)
    for f in t.fewshot:
        console.print(f"  \\[fewshot] {f.level}: {f.groups} groups, probe pools of {f.pool_sizes[0]}–"
                      f"{f.pool_sizes[1]} cases (T_train ∪ T_val), {f.candidates[0]}–{f.candidates[1]} candidate "
                      f"models per group (its folds + {f.iid} IID); `beluga rank STORE --level {f.level}` ranks them",
                      highlight=False)
    if t.steps:
        _table(console, f"task {t.name}: evaluation steps, in the order each model runs them",
               {"jobs": "l", "scenarios": "l", "count": "r", "steps": "l"},
               [[st.kind.plural, escape(", ".join(st.scenarios)), str(st.count), escape(st.steps)] for st in t.steps])
    c = t.checkpoints
    if c.off:
        console.print("  checkpoints: off (\\[executor] checkpoint_every = \"off\"): a killed run restarts the folds "
                      "in progress", highlight=False)
    else:
        _table(console, f"task {t.name}: checkpoints inside a job (\\[executor] checkpoint_every = \"{c.interval}\")",
               {"configuration": "l", "method": "l", "jobs": "r", "interval": "l"},
               [[r.config, r.method, str(r.jobs), escape("; ".join(w if n == r.jobs else f"{n}: {w}"
                                                                   for w, n in r.intervals))] for r in c.rows])
        if not c.saves:
            console.print("  checkpoints: none written (no job saves one; see the table)", highlight=False)
        elif c.params is not None and c.save_bytes is not None:
            console.print(f"  checkpoints: ≈ {human_size(c.save_bytes)} each ({c.params / 1e6:.1f}M parameters: "
                          f"weights and AdamW's moments), one per job in flight, two while a save replaces the last: "
                          f"≈ {human_size(2 * c.save_bytes * c.slots)} in {escape(c.cache)}.cache/checkpoints at most "
                          f"with {c.slots} job(s) in flight; deleted as each job's result is stored", highlight=False)
    if t.unavailable:
        console.print(f"  [yellow]task plugin '{t.name}' is not importable[/] ({escape(t.unavailable)}); the folds "
                      "above are counted from the suite, but the run needs the plugin", highlight=False)
    for h in t.hub:
        if h.status is not None:
            colour = "green" if h.ok else "yellow"
            console.print(f"  {escape(f'{h.what} {h.name}')}: [{colour}]{escape(h.status)}[/]", highlight=False)
        elif not h.ok:
            console.print(f"  [yellow]{escape(f'{h.what} {h.name}')}[/]: {escape(h.how)}", highlight=False)
