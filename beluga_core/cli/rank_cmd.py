"""``beluga rank STORE --level L`` / ``beluga rank --zoo ZOO.toml``: which model will do best on a group none of
them saw, predicted from a few of its labelled cases — and how often each signal gets that right."""

from __future__ import annotations

from pathlib import Path

import typer
from rich.console import Console


def rank(
    store: Path | None = typer.Argument(None, help="A beluga result store whose run had [fewshot] enabled."),
    level: str | None = typer.Option(None, "--level", help="The held-out level whose groups are ranked on."),
    zoo: Path | None = typer.Option(None, "--zoo", help="A zoo file (TOML): checkpoints, a probe suite and a truth "
                                                        "suite (or true scores) — no run needed."),
    signals: str | None = typer.Option(None, "--signals", help=(
        "Comma-separated: acc, conf, conf-gt, random, a factor as METHOD:NAME (e.g. tokig:max-diff, "
        "shap:perturbation-focus), or acc+METHOD:NAME (ACC, ties broken by the factor). Default: every installed "
        "signal, factors once per stored attribution method, each also as acc+factor.")),
    option: list[str] = typer.Option([], "--option", help="SIGNAL.KEY=VALUE, e.g. window.words='[\"ran\"]' "
                                                          "(values read as JSON where they parse)."),
    n: int = typer.Option(10, "--n", min=1, help="Cases per probe."),
    bootstrap: int = typer.Option(500, "--bootstrap", min=1, help="Probes drawn per group (the same for every "
                                                                  "signal and model)."),
    seed: int = typer.Option(0, "--seed", help="Seed of the probes, the random order and the intervals."),
    ties: str = typer.Option("half", "--ties", help="A tie in the predicted order counts: half, fail or exclude."),
    task: str | None = typer.Option(None, "--task", help="The task, where the store has pools of several."),
    split: str | None = typer.Option(None, "--split", help="The split (a prefix of its id), where the store has "
                                                           "pools of several (another [split] seed or [sizes])."),
    save: bool = typer.Option(True, "--save/--no-save", help="Write the ranking to the store (fewshot_* tables)."),
) -> None:
    """Rank the models blind to each group of a held-out level — every fold that held the group out, and the IID
    model — from B probes of n cases drawn from the group's probe pool, with each signal; score the predicted
    order against the models' pass rates on the group's T_test cases. Prints per signal the pairwise ranking
    accuracy (95 % two-stage bootstrap interval over groups and probes), pairs used and excluded (equal true
    scores), the tie rate, Kendall τ-b, the top-1 hit rate, and the paired comparison with ACC on the same
    probes; stores it all (views fewshot_accuracy, fewshot_pairs). Where the candidates were trained with several
    seeds, also each seed's candidates ranked among themselves and that accuracy over the seeds (mean, seed-level t
    interval; view fewshot_seed_accuracy). The table fits the terminal's width (80 columns in a CI log), split
    into parts that repeat the signal column where it is wider."""
    from beluga_core.analysis.ranking.over_seeds import candidate_seeds, read_over_seeds
    from beluga_core.analysis.ranking.rank import check_signal_options, rank_groups, signal_specs
    from beluga_core.analysis.ranking.rank_inputs import load_store_groups
    from beluga_core.analysis.ranking.ranking_accuracy import TIES
    from beluga_core.analysis.ranking.save import save_ranking
    from beluga_core.analysis.report.renderers.terminal_tables import print_over_seeds, print_ranking
    from beluga_core.cli.explain_cmd import dotted_options
    from beluga_core.core.errors import BelugaError
    from beluga_core.store.opened import open_handle

    if ties not in TIES:
        raise BelugaError(f"--ties '{ties}': expected one of {', '.join(TIES)}")
    if (store is None) == (zoo is None):
        raise BelugaError("give a STORE (with --level) or --zoo ZOO.toml")
    options = dotted_options(option) if option else {}
    requested = [s.strip() for s in signals.split(",") if s.strip()] if signals else None
    console = Console()
    if zoo is not None:
        from beluga_core.stored_models.checkpoint_zoo import load_zoo, zoo_group

        spec = load_zoo(zoo)
        # A signal's options from the command line on top of the zoo file's, checked before any model loads.
        options = {name: {**spec.signal_options.get(name, {}), **options.get(name, {})}
                   for name in {*spec.signal_options, *options}}
        check_signal_options(options)
        with console.status("predicting the probe set") as status:
            group, suite = zoo_group(spec, zoo, progress=lambda name: status.update(f"predicting with {name}"))
        specs, skipped = signal_specs(requested, group.methods(), options)
        ranking = rank_groups(spec.group or "zoo", [group], specs, n=n, bootstrap=bootstrap, seed=seed,
                              ties=ties)
        print_ranking(ranking, console, title=f"Ranking {len(group.candidates)} models on {suite}", skipped=skipped)
        console.print("true scores: " + ", ".join(f"{c.label} {100 * c.truth:.1f}" for c in group.candidates),
                      highlight=False)
        if spec.store and save:
            out = Path(spec.store)
            out = out if out.is_absolute() else zoo.parent / out
            # The zoo's store is opened once, to write, and created on its first ranking.
            with open_handle(out, write=True, create=True) as opened:
                rid = save_ranking(opened, ranking, source="zoo", task=spec.task, suite=suite)
            console.print(f"stored as ranking {rid} in {out}", highlight=False)
        return
    assert store is not None
    if level is None:
        raise BelugaError("--level: name the held-out level to rank on (e.g. functionality)")
    if not store.is_file():
        raise BelugaError("no such store", source=store)
    check_signal_options(options)
    with open_handle(store, write=save) as opened:   # one open, read-write when it stores the ranking
        loaded = load_store_groups(opened.con, level, task, str(store), split)
        methods = sorted({m for g in loaded.groups for m in g.methods()})
        specs, skipped = signal_specs(requested, methods, options)
        with console.status("ranking") as status:
            ranking = rank_groups(level, loaded.groups, specs, n=n, bootstrap=bootstrap, seed=seed,
                                  ties=ties,
                                  progress=lambda name: status.update(f"ranking with {name}"))
        ranking.notes += loaded.notes
        print_ranking(ranking, console, title=f"Few-shot ranking on level '{level}' ({loaded.task}, {loaded.suite})",
                      skipped=skipped)
        if save:
            rid = save_ranking(opened, ranking, source="store", task=loaded.task, suite=loaded.suite,
                               split_id=loaded.split_id)
            # A replicated zoo (candidates trained with several seeds): each seed's candidates among themselves, over
            # the seeds, as the store's view fewshot_seed_accuracy defines it.
            print_over_seeds(read_over_seeds(opened.con, rid), console, order=list(ranking.summaries))
            console.print(f"stored as ranking {rid} (SELECT * FROM fewshot_accuracy WHERE rank_id = '{rid}')",
                          highlight=False)
        else:
            seeds = candidate_seeds(opened.con, [c.model_id for g in loaded.groups for c in g.candidates])
            if seeds > 1:
                console.print(f"The candidates were trained with {seeds} seeds: the ranking accuracy over seeds is "
                              "read from the stored ranking (view fewshot_seed_accuracy); rank without --no-save to "
                              "see it.",
                              style="dim", highlight=False)
