"""``beluga export STORE SELECTOR --out DIR`` and ``beluga store info STORE``."""

from __future__ import annotations

from pathlib import Path

import typer
from rich.console import Console
from rich.markup import escape


def export(
    store: Path = typer.Argument(..., help="A beluga result store (DuckDB file)."),
    selector: str = typer.Argument(..., help="The model: CONFIG/METHOD[@SCENARIO][#SEED] or a model id."),
    out: Path = typer.Option(..., "--out", help="Folder to write the checkpoint to."),
) -> None:
    """Write a stored model whose weights were kept (`[store] keep_weights`; the IID models' always are) as a
    Hugging Face checkpoint: weights, config with the label names, tokenizer, and a model card (README.md) with
    its configuration, method, hyper-parameters, scores and provenance."""
    from beluga_core.store.opened import open_handle
    from beluga_core.stored_models.export import export_model

    with open_handle(store) as opened:
        path = export_model(opened, selector, out)
    Console(highlight=False).print(f"exported {escape(selector)} to {escape(str(path))}")


def info(store: Path = typer.Argument(..., help="A beluga result store (DuckDB file).")) -> None:
    """What a store holds: its size and schema, runs (a run recorded as running: still going, or interrupted when its
    process is gone) and models, rows per table (kept probabilities included), and the weights, token cache and
    checkpoints in flight kept beside it."""
    from beluga_core.core.io import human_size as _size
    from beluga_core.orchestration.progress import duration
    from beluga_core.store.opened import open_handle
    from beluga_core.stored_models.export import store_info

    with open_handle(store) as opened:
        i = store_info(opened)
    console = Console(highlight=False)
    console.print(f"{escape(str(i['store']))}: {_size(i['bytes'])}, schema version {i['schema_version']}, "
                  f"{i['runs']} run(s) (last started {i['last_run']} UTC)")
    for run in i["unfinished"]:  # recorded as running: still going, or its process is gone
        console.print(escape(run.info_line()), soft_wrap=True)
    console.print("models: " + ", ".join(f"{n} {s}" for s, n in sorted(i["models"].items())))
    if len(i["variants"]) > 1 or any(i["variants"]):
        console.print("variants (done models): "
                      + ", ".join(f"{v or '(unnamed)'} {n}" for v, n in i["variants"].items()))
    for f in i["failed"]:
        where = f"{f['scenario']}={f['grp']}" if f["grp"] is not None else f["scenario"]
        variant = f" ~{f['variant']}" if f["variant"] else ""
        console.print(f"failed {f['kind']} {f['job_id'][:12]}: {f['task']} {f['config']}/{f['method']}{variant} "
                      f"{where} seed {f['seed']}: {escape(str(f['error']))} ({f['attempts']} attempt(s), "
                      f"{escape(str(f['worker']))}, {f['finished_at']:%Y-%m-%d %H:%M:%S} UTC)")
    for e in i["estimates"]:   # what `beluga run` estimated at its start, beside what the run took
        wall = f"took {duration(e['wall'])}" + (f" (×{e['wall'] / e['estimated_wall']:.2f} the estimate)"
                                                  if e["estimated_wall"] else "") if e["wall"] is not None else \
            "has not finished"
        console.print(f"run {escape(e['run_id'])} ({e['status']}): estimated {duration(e['estimated_wall'])} with "
                      f"{e['workers']} worker(s), {wall}", soft_wrap=True)
        for p in e["phases"]:
            ratio = f" (×{p['took'] / p['estimated']:.2f})" if p["estimated"] and p["done"] == p["trainings"] else ""
            console.print(f"  {p['name']}: {p['trainings']} estimated at {duration(p['estimated'])} of compute; "
                          f"{p['done']} done in {duration(p['took'])}{ratio}", soft_wrap=True)
        if e["sources"]:
            console.print(f"  rates: {escape(e['sources'][0])}", soft_wrap=True)
    console.print("rows: " + ", ".join(f"{t} {n:,}" for t, n in i["rows"].items() if n))
    console.print(f"kept weights: {i['weights']} model(s), {_size(i['weights_bytes'])}; token cache "
                  f"{_size(i['token_cache_bytes'])} (in {escape(str(store))}.cache)")
    checkpoints = i["checkpoints"]
    if checkpoints:
        console.print(f"checkpoints in flight: {len(checkpoints)}, {_size(sum(c['bytes'] for c in checkpoints))} "
                      "(of jobs not finished: a run was stopped, or one is going on; a run with the same settings "
                      "resumes each from it, a run with other settings has other jobs and leaves it; delete "
                      f"{escape(str(store))}.cache/checkpoints/ to discard them)")
    for c in checkpoints:
        where = (f"unusable, the next run discards it: {escape(c['error'])}" if "error" in c else
                 (f"stage {c['stage'] + 1} of {c['n_stages']}, " if c["n_stages"] > 1 else "")
                 + f"step {c['step']} of {c['n_steps']}")
        console.print(f"  {c['job_id'][:12]}: {where}, {_size(c['bytes'])}, written {c['written']:%Y-%m-%d %H:%M:%S} "
                      "UTC")
