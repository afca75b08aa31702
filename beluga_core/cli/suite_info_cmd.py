"""``beluga suite info FILE``."""

from __future__ import annotations

import json
from collections import Counter, defaultdict
from pathlib import Path

import typer
from rich.console import Console
from rich.markup import escape
from rich.table import Table

from beluga_core.core.errors import BelugaError
from beluga_core.data.iid.label_share import label_counts, majority_label_warning
from beluga_core.data.suite.suite_files import Suite
from beluga_core.evaluation.suites import load_checked_suite


def info(
    file: str = typer.Argument(..., help="Suite file (.jsonl / .jsonl.gz) or builtin:NAME."),
    as_released: bool = typer.Option(False, "--as-released", help="Ignore the documented corrections."),
    config: Path | None = typer.Option(
        None, "--config", help="A benchmark config with a task on this suite: also show the labels of that task's "
                               "i.i.d. data, and warn when one label dominates them while G's i.i.d. score is "
                               "accuracy."),
) -> None:
    """Levels, groups with case and input counts, test types, losses and label space of a suite; with --config, the
    labels of its task's i.i.d. data."""
    console = Console()
    released = load_checked_suite(file)
    suite = released if as_released else released.with_corrections()
    h = suite.header
    n_inputs = sum(len(c.inputs) for c in suite.cases)
    n_corrected = 0 if as_released else sum(1 for c in released.cases if c.correction)
    console.print(f"[bold]{h.name}[/] ({suite.path}): {len(suite.cases):,} cases, {n_inputs:,} inputs; "
                  f"format v{h.format_version}; task {h.task or '—'}; input kind {h.input_kind}")
    if h.description:
        console.print(h.description)
    nested = [lv for lv in h.levels if lv not in h.crossing_levels]
    crossing = f"; crossing: {', '.join(h.crossing_levels)}" if h.crossing_levels else ""
    console.print(f"levels: {' ⊃ '.join(nested)}{crossing} (scoring level: {h.scoring_level}); "
                  f"test_type can be held out too")
    console.print(f"label space: {', '.join(h.label_space) if h.label_space else 'free text (answers)'}")
    gens = h.source.get("generators") if isinstance(h.source, dict) else None
    if gens:
        made = ", ".join(f"{g.get('name')} v{g.get('version')} {json.dumps(g.get('options', {}), sort_keys=True)}"
                         for g in gens)
        against = h.source.get("model")
        model = "— (model-free)" if not against else (
            f"{against.get('name')}" + (f", model {str(against['model_id'])[:12]}" if against.get("model_id") else "")
            if isinstance(against, dict) else str(against))
        console.print(f"generated from {h.source.get('from')} (seed {h.source.get('seed')}; donors "
                      f"{h.source.get('donors') or '—'}; against model {model}) by {made}", highlight=False,
                      markup=False)
    elif h.source:
        console.print(f"source: {json.dumps(h.source, sort_keys=True)}", highlight=False, markup=False)
    if h.split_by:
        console.print(f"split by: cases sharing meta.{h.split_by} stay in one part of every split", highlight=False)
    if n_corrected:
        console.print(f"{n_corrected:,} case(s) carry a documented correction (applied here; see --as-released)")
    for name, counter in (("test types", Counter(c.test_type for c in suite.cases)),
                          ("losses", Counter(c.loss for c in suite.cases)),
                          ("expectation kinds", Counter(c.expectation.kind for c in suite.cases))):
        console.print(f"{name}: " + ", ".join(f"{k} ({v:,})" for k, v in sorted(counter.items())))
    for level in h.holdable_levels():
        cases: Counter[str] = Counter()
        inputs: Counter[str] = Counter()
        types: dict[str, set[str]] = defaultdict(set)
        parent: dict[str, str] = {}
        # A nested level's parent is the nested level above it; a crossing level has none.
        idx = nested.index(level) if level in nested else -1
        without = 0
        for c in suite.cases:
            g = suite.group_of(c, level)
            if g is None:
                without += 1
                continue
            cases[g] += 1
            inputs[g] += len(c.inputs)
            types[g].add(c.test_type)
            if idx > 0:
                parent[g] = c.groups[nested[idx - 1]]
        none = f" ({without:,} case(s) in none: a crossing level)" if without else ""
        table = Table(title=f"level {level}: {len(cases)} groups{none}", title_justify="left")
        if parent:
            table.add_column(nested[idx - 1])
        table.add_column(level)
        table.add_column("cases", justify="right")
        table.add_column("inputs", justify="right")
        table.add_column("test types")
        for g in sorted(cases, key=lambda g: (parent.get(g, ""), g)):
            row = [parent[g]] if parent else []
            table.add_row(*row, g, f"{cases[g]:,}", f"{inputs[g]:,}", ", ".join(sorted(types[g])))
        console.print(table)
    if config is not None:
        iid_lines(console, config, file, suite)


def iid_lines(console: Console, config: Path, file: str, suite: Suite) -> None:
    """Per task of ``config`` on the suite ``file``: its i.i.d. labels on D_val and D_test, G's i.i.d. metric,
    and the warning ``beluga run`` gives when one label dominates them under accuracy."""
    from beluga_core.config.load import load_config
    from beluga_core.planning.plan import make_task

    cfg = load_config(config)
    target = file if file.startswith("builtin:") else str(Path(file).resolve())
    specs = [s for s in cfg.tasks if (s.suite if s.suite.startswith("builtin:") else str(Path(s.suite).resolve()))
             == target]
    if not specs:
        suites = ", ".join(sorted({s.suite for s in cfg.tasks}))
        raise BelugaError(f"no task of the config has suite {file} (its tasks' suites: {suites})", source=config)
    for spec in specs:
        task = make_task(spec, suite)
        data = task.load_iid(spec.iid, eval_seed=cfg.split.iid_eval_seed)
        labels = label_counts(data)
        shown = labels.line() if labels is not None else "answers (no class labels)"
        console.print(f"i.i.d. data of task '{spec.name}' ({spec.iid}), D_val + D_test: {shown}; G's i.i.d. metric: "
                      f"{task.metric}", highlight=False, markup=False, soft_wrap=True)
        warning = majority_label_warning(data, task=spec.name, metric=task.metric, metrics=task.metrics)
        if warning:
            console.print(f"[yellow]warning:[/] {escape(warning)}", highlight=False, soft_wrap=True)
