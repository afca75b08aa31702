"""``beluga suite generate GENERATOR… --source SRC --out FILE [--model store:STORE#SELECTOR | path:DIR] [--seed N]
[--option k=v…] [--limit N] [--sample N] [--dry-run] [--audit N]``."""

from __future__ import annotations

import contextlib
import json
from pathlib import Path
from typing import Annotated, Any

import typer
from rich.console import Console
from rich.markup import escape
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn
from rich.table import Table


def parse_options(values: list[str], names: list[str],
                  defaults: dict[str, dict[str, Any]]) -> dict[str, dict[str, Any]]:
    """``[GENERATOR.]KEY=VALUE`` → per generator its options (values read as JSON where they parse, else text).
    A key without a generator goes to every generator that takes it; one that none takes is an error."""
    from beluga_core.core.errors import BelugaError, did_you_mean

    out: dict[str, dict[str, Any]] = {n: {} for n in names}
    for text in values:
        key, sep, raw = text.partition("=")
        if not sep or not key:
            raise BelugaError(f"--option {text!r}: expected [GENERATOR.]KEY=VALUE, e.g. "
                              "context.functions='[\"add_typos\"]' or k=0.5", field="--option")
        try:
            value: Any = json.loads(raw)
        except json.JSONDecodeError:
            value = raw
        target, dot, name = key.rpartition(".")
        if dot and target not in out:
            raise BelugaError(f"'{target}' is not one of the generators given ({', '.join(names)})"
                              f"{did_you_mean(target, names) or ''}", field=f"--option {key}")
        takers = [target] if dot else [n for n in names if key in defaults[n]]
        if not takers:
            raise BelugaError(f"no generator given takes '{key}'; they take: "
                              + "; ".join(f"{n}: {', '.join(sorted(defaults[n])) or 'nothing'}" for n in names),
                              field=f"--option {key}")
        for n in takers:
            out[n][name if dot else key] = value
    return out


def read_options_file(path: Path, names: list[str]) -> tuple[dict[str, dict[str, Any]], str]:
    """``--options FILE``: a TOML file with a table of options per generator (``[context] skip_years = false``);
    returns them and the file's text (for the line of an option a generator refuses)."""
    import tomllib

    from beluga_core.config.load import locate_key
    from beluga_core.core.errors import BelugaError, did_you_mean

    try:
        text = path.read_text(encoding="utf-8")
        data = tomllib.loads(text)
    except FileNotFoundError:
        raise BelugaError("options file not found", source=path, field="--options") from None
    except (tomllib.TOMLDecodeError, UnicodeDecodeError) as exc:
        raise BelugaError(f"cannot parse the options file: {exc}", source=path, field="--options") from None
    for name, table in data.items():
        if name not in names:
            raise BelugaError(f"[{name}] is not one of the generators given ({', '.join(names)})"
                              f"{did_you_mean(name, names) or ''}", source=path, line=locate_key(text, (name,)),
                              field=name)
        if not isinstance(table, dict):
            raise BelugaError(f"expected a table [{name}] of the generator's options", source=path,
                              line=locate_key(text, (name,)), field=name)
    return {name: dict(table) for name, table in data.items()}, text


def generate_cmd(
    generator: Annotated[list[str], typer.Argument(
        help="Generator plugin(s) (`beluga plugins list`), e.g. entity-swap context only-entity masked-entity "
             "cue-removal; several make one suite.")],
    source: Annotated[str, typer.Option("--source", help=(
        "builtin:fewrel16[#pool|train|val], builtin:sst2[#train|val|test] (also sst3, sst5, qqp-fixture; "
        "builtin:sst3#heldout is SST's official test split, which no run reads), a relation data file (FewRel / "
        "TACRED JSON, OpenNRE JSON Lines) or a suite file."))],
    out: Annotated[Path | None, typer.Option("--out", help="Suite file to write (.jsonl or .jsonl.gz).")] = None,
    seed: Annotated[int, typer.Option("--seed", help="Seed of every random choice.")] = 0,
    option: Annotated[list[str] | None, typer.Option(
        "--option", help="[GENERATOR.]KEY=VALUE (repeatable); VALUE is JSON where it parses. Over --options'.")] = None,
    options_file: Annotated[Path | None, typer.Option("--options", help=(
        "A TOML file of the generators' options, a table per generator ([context] skip_years = false); "
        "`beluga plugins show NAME` lists a generator's."))] = None,
    limit: Annotated[int | None, typer.Option("--limit", min=1, help=(
        "Only the source's first N instances (a source ordered by label, as FewRel's, then gives few labels: "
        "--sample draws across it)."))] = None,
    sample: Annotated[int | None, typer.Option("--sample", min=1, help=(
        "Only a seeded sample of N of the source's instances (after --limit), kept in source order."))] = None,
    name: Annotated[str | None, typer.Option("--name", help="Suite name (default: from the output file).")] = None,
    dry_run: Annotated[bool, typer.Option("--dry-run", help="Count what would be generated; write nothing.")] = False,
    model: Annotated[str | None, typer.Option("--model", help=(
        "The trained model that pwws, hotflip, ig-contrast, cda and entity-only-debiased work against: "
        "store:STORE#SELECTOR (weights kept beside the store, e.g. store:runs/x.duckdb#iid/vanilla) or "
        "path:DIR (a saved checkpoint). Recorded in the suite header."))] = None,
    task: Annotated[str | None, typer.Option("--task", help=(
        "path:DIR models only: the task plugin that reads them (default: relation for relation sources, "
        "classification otherwise)."))] = None,
    max_length: Annotated[int, typer.Option("--max-length", min=8, help=(
        "path:DIR models only: truncation length in tokens."))] = 128,
    audit: Annotated[int | None, typer.Option("--audit", min=1, help=(
        "Also write N sampled (original, perturbed, label, perturbation) rows as CSV beside the suite "
        "(FILE.audit.csv), for a person to check that the labels still hold."))] = None,
) -> None:
    """Generate a diagnostic suite from a source by rule: every generated input is an MFT case (the gold label
    on the perturbed input) and, where the rule keeps the label, an INV case [original, perturbed]; levels
    family ⊃ perturbation; cases from one source instance share a split_key, which a split never separates.
    The same source, options and seed give a byte-identical file."""
    from beluga_core.contracts.registries import GENERATORS
    from beluga_core.core.errors import BelugaError
    from beluga_core.core.io import atomic_write
    from beluga_core.data.suite.suite_files import write_suite
    from beluga_core.generators.generation_sources import read_source
    from beluga_core.generators.suite_build import audit_csv, by_family, family_shares, generate

    console = Console()
    if out is None and not dry_run:
        raise BelugaError("give --out FILE (or --dry-run to only count)", field="out")
    if out is not None and not out.name.endswith((".jsonl", ".jsonl.gz")):
        raise BelugaError("the suite file must end in .jsonl or .jsonl.gz", source=out, field="out")
    if len(set(generator)) != len(generator):
        raise BelugaError(f"a generator is named twice: {generator}", field="generator")
    classes = {g: GENERATORS.get(g) for g in generator}
    options = parse_options(option or [], generator, {g: dict(c.defaults) for g, c in classes.items()})
    from_file, text = read_options_file(options_file, generator) if options_file is not None else ({}, "")
    gens = []
    for g, cls in classes.items():
        try:
            gens.append((g, cls({**from_file.get(g, {}), **options[g]})))
        except BelugaError as exc:   # its options' check: the field is options.KEY, given as --option NAME.KEY
            if exc.field is None or not exc.field.startswith("options"):
                raise
            key = exc.field.removeprefix("options")
            if options_file is not None and key.lstrip(".").split(".")[0] in from_file.get(g, {}) \
                    and key.lstrip(".").split(".")[0] not in options[g]:
                from beluga_core.config.load import locate_key

                loc = (g, *key.lstrip(".").split("."))
                raise BelugaError(exc.message, source=options_file, line=locate_key(text, loc[:2]),
                                  field=".".join(loc)) from None
            raise BelugaError(f"generator '{g}': {exc.message}", field=f"--option {g}{key}") from None
        except ValueError as exc:
            raise BelugaError(f"generator '{g}': {exc}", field=f"--option {g}") from None
    src = read_source(source)
    target, record = None, None
    if model is not None:
        from beluga_core.store.opened import open_handle
        from beluga_core.stored_models.target import load_target, target_store

        if not any(c.requires_model for c in classes.values()):
            raise BelugaError(f"--model: none of {', '.join(generator)} works against a model", field="model")
        store = target_store(model)
        # The model's store is read once, while the model loads; generating reads it no more.
        with open_handle(store) if store is not None else contextlib.nullcontext() as opened:
            target, record = load_target(model, label_space=src.label_space, input_kind=src.kind,
                                         task_name=task or ("relation" if src.kind == "relation"
                                                            else "classification"),
                                         max_length=max_length, opened=opened)
    suite_name = name or (out.name.removesuffix(".gz").removesuffix(".jsonl") if out else "generated")
    with Progress(TextColumn("generating"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn(),
                  console=console, transient=True) as bar:
        n = min(limit, len(src.instances)) if limit else len(src.instances)
        n = min(n, sample) if sample else n
        bar_task = bar.add_task("generate", total=n)
        # Model-dependent generators take seconds per instance: show every step of theirs.
        every = 1 if target is not None else 100
        made = generate(src, gens, seed=seed, name=suite_name, limit=limit, sample=sample, model=target,
                        model_record=record,
                        progress=lambda i: bar.update(bar_task, completed=i) if i % every == 0 or i == n else None)
    _print_counts(console, made, by_family(made), family_shares(made))
    if dry_run:
        console.print("dry run: nothing written")
        return
    assert out is not None
    path = write_suite(out, made.header, made.cases)
    console.print(f"{len(made.cases):,} cases from {made.instances:,} instances of {escape(src.name)} → {path}",
                  highlight=False)
    if audit:
        audit_path = out.with_name(out.name.removesuffix(".gz").removesuffix(".jsonl") + ".audit.csv")
        atomic_write(audit_path, audit_csv(made, audit, seed))
        console.print(f"audit sample ({audit} rows; fill in label_kept) → {audit_path}", highlight=False)


def _print_counts(console: Console, made: object, families: dict[str, dict[str, dict[str, int]]],
                  shares: dict[str, float]) -> None:
    from beluga_core.generators.suite_build import Generated

    assert isinstance(made, Generated)
    table = Table(title=f"{made.instances:,} source instances", title_justify="left")
    for col in ("family", "perturbation", "MFT", "INV", "DIR", "duplicates", "family yield"):
        table.add_column(col, justify="left" if col in ("family", "perturbation") else "right")
    for family in sorted(families):
        first = True
        for perturbation, c in sorted(families[family].items()):
            table.add_row(family if first else "", perturbation, f"{c.get('MFT', 0):,}", f"{c.get('INV', 0):,}",
                          f"{c.get('DIR', 0):,}", f"{c.get('duplicates', 0):,}",
                          f"{100 * shares.get(family, 0):.1f} %" if first else "")
            first = False
    for family, share in sorted(shares.items()):
        if family not in families:
            table.add_row(family, "(none)", "0", "0", "0", "0", f"{100 * share:.1f} %")
    console.print(table)
    labels = sorted({label for _, label in made.per_label})
    per = Table(title="MFT cases per label", title_justify="left")
    per.add_column("label")
    fams = sorted(families)
    for f in fams:
        per.add_column(f, justify="right")
    for label in labels:
        per.add_row(label, *(f"{made.per_label[(f, label)]:,}" for f in fams))
    console.print(per)
    if made.reports:
        rep = Table(title="generator reports", title_justify="left")
        for col in ("generator", "what", "group", "value"):
            rep.add_column(col, justify="right" if col == "value" else "left")
        for gen, what, group, value in made.reports:
            shown = f"{100 * value:.1f} %" if what.startswith("share") else f"{value:g}"
            rep.add_row(gen, what, group, shown)
        console.print(rep)
    for note in made.notes:
        console.print(escape(note), highlight=False)
