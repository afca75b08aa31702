"""``beluga export``: a stored model whose weights were kept, as a Hugging Face checkpoint with a model card, and
``beluga store info``: what a store and its cache folder hold."""

from __future__ import annotations

import json
import tomllib
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import duckdb

from beluga_core import __version__ as BELUGA_VERSION
from beluga_core.config.schema import BenchmarkConfig
from beluga_core.contracts.tasks import Task
from beluga_core.core.errors import BelugaError, format_validation_error
from beluga_core.data.suite.suite_files import Suite
from beluga_core.data.suite.suite_schema import SuiteHeader
from beluga_core.execution.worker import cache_dir_for, kept_from, weights_path
from beluga_core.planning.plan import make_task
from beluga_core.store.connection import expand_key_comparisons
from beluga_core.store.opened import StoreArg, held
from beluga_core.store.reader import FAILED_JOBS
from beluga_core.store.run_liveness import running_runs
from beluga_core.store.selectors import select_one
from beluga_core.training.checkpoint_file import CheckpointRejected, checkpoint_folder, peek
from beluga_core.training.models import load_tokenizer


def run_config(con: duckdb.DuckDBPyConnection, run_id: str | None, what: str) -> tuple[BenchmarkConfig, str]:
    """The config the run ``run_id`` ran, and where it was read: its ``effective_config`` (what ``--tiny``,
    ``--variant`` and ``--store`` made of the file), else, for a run recorded before schema 19, its ``config_text``
    (the file as read). Everything that rebuilds a stored model reads it here. A ``BelugaError`` starting with
    ``what`` (the model) names the run and what is wrong when there is no config to read or it is not valid."""
    row = con.execute("SELECT effective_config::VARCHAR, config_text FROM runs WHERE run_id = ?",
                      [run_id]).fetchall() if run_id else []
    if not row:
        raise BelugaError(f"{what}: the store records no run that trained it" +
                          (f" (no run '{run_id}' in its runs table)" if run_id else ""))
    effective, text = row[0]
    if effective is not None:
        where = f"run {run_id}'s effective config (runs.effective_config)"
        try:
            data = json.loads(effective)
        except json.JSONDecodeError as exc:
            raise BelugaError(f"{what}: {where} is not JSON: {exc}") from None
    elif text:
        where = (f"run {run_id}'s config file text (runs.config_text: the run recorded no effective config, as "
                 "none before schema 19 did; the file as read, before any --tiny, --variant or --store)")
        try:
            data = tomllib.loads(text)
        except tomllib.TOMLDecodeError as exc:
            raise BelugaError(f"{what}: {where} is not valid TOML: {exc}") from None
    else:
        raise BelugaError(f"{what}: the store does not hold the config of run {run_id}, which trained it "
                          "(runs.effective_config and runs.config_text are empty)")
    try:
        return BenchmarkConfig.model_validate(data), where
    except ValueError as exc:   # pydantic's ValidationError; a plugin's validator's ValueError
        why = format_validation_error(exc) if hasattr(exc, "errors") else str(exc)
        raise BelugaError(f"{what}: {where} is not a config this beluga ({BELUGA_VERSION}) reads: {why}") from None


@dataclass
class StoredModel:
    """A stored model whose weights were kept, ready to use: its row, the task told its suite, the run's config and
    the model with its weights (built on demand)."""

    row: dict[str, Any]
    task: Task[Any]
    config: BenchmarkConfig
    weights: Path
    config_from: str = "its run's config"  # where ``config`` was read (``run_config``)

    def build(self) -> Any:
        import torch

        overrides = self.config.model.config_overrides
        model = self.task.build_model(self.row["model_name"], seed=0, config_overrides=overrides)
        state = torch.load(self.weights, map_location="cpu", weights_only=True)
        try:
            model.load_state_dict(state)
        except RuntimeError:
            m = self.row
            raise BelugaError(f"model {m['model_id'][:12]} ({m['config']}/{m['method']}@{m['scenario']}): its kept "
                              f"weights ({self.weights}) do not fit the model built from {self.config_from}, "
                              f"{m['model_name']}" + (f" with config overrides {overrides}" if overrides else "")
                              + f": {_state_mismatch(model.state_dict(), state)}") from None
        return model.eval()

    @property
    def max_length(self) -> int:
        options = getattr(self.task, "options", None)
        if self.task.head_labels is None and isinstance(options, dict) and "max_length" in options:
            return int(options["max_length"])   # a span model reads windows of its own length
        return self.config.model.max_length


def _state_mismatch(own: Mapping[str, Any], kept: Mapping[str, Any]) -> str:
    """What differs between a model's state dict and kept weights: keys missing, unexpected, of another shape."""
    parts = []
    for what, keys in (("missing from the weights", [k for k in own if k not in kept]),
                       ("not in the model", [k for k in kept if k not in own]),
                       ("of another shape", [k for k in own if k in kept and tuple(own[k].shape) !=
                                             tuple(kept[k].shape)])):
        if keys:
            parts.append(f"{len(keys)} tensor(s) {what} (e.g. {keys[0]})")
    return "; ".join(parts) or "the weights do not load into it"


def has_kept_weights(store: Path, model_id: str) -> bool:
    return weights_path(cache_dir_for(store), model_id).exists()


def stored_model(con: duckdb.DuckDBPyConnection, store: Path, m: dict[str, Any]) -> StoredModel:
    """The stored model ``m`` (a row of ``select_models``); an error naming what is missing when its weights
    were not kept or its run's config is not in the store."""
    mid = m["model_id"]
    weights = weights_path(cache_dir_for(store), mid)
    if not weights.exists():
        try:
            least = kept_from(m["scenario"], m["config"])
        except BelugaError:   # a configuration whose plugin is not installed here
            least = "all"
        keep = '"seen" or "all"' if least == "seen" else '"all" (the one setting that keeps held-out folds)'
        raise BelugaError(f"model {mid[:12]} ({m['config']}/{m['method']}@{m['scenario']}) has no kept weights in "
                          f"{weights.parent}: keep them with [store] keep_weights = {keep} and re-run; the IID "
                          "models' are always kept")
    run_id = con.execute("SELECT run_id FROM models WHERE model_id = ?", [mid]).fetchall()[0][0]
    cfg, config_from = run_config(con, run_id, f"model {mid[:12]}")
    suite_row = con.execute("SELECT label_space::VARCHAR, levels::VARCHAR, scoring_level, input_kind FROM suites "
                            "WHERE suite = ?", [m["suite"]]).fetchall()
    if not suite_row:
        raise BelugaError(f"model {mid[:12]}: the store does not hold its suite '{m['suite']}'")
    spec = next((t for t in cfg.tasks if t.name == m["task"]), None)
    if spec is None:
        raise BelugaError(f"model {mid[:12]}: {config_from} has no task '{m['task']}'")
    space, levels, scoring, input_kind = suite_row[0]
    header = SuiteHeader(name=m["suite"], levels=json.loads(levels), scoring_level=scoring, input_kind=input_kind,
                         label_space=json.loads(space) if space else None)
    return StoredModel(m, make_task(spec, Suite(header, [])), cfg, weights, config_from)


def export_model(source: StoreArg, selector: str, out: Path) -> Path:
    """Write the model ``selector`` names in an open store (a path: opened for this call) as a checkpoint folder
    ``out`` (weights, config with label names, tokenizer, README.md model card); returns ``out``."""
    with held(source) as opened:
        con, store = opened.con, opened.path
        m = select_one(con, selector, where=str(store))
        sm = stored_model(con, store, m)
        mid = m["model_id"]
        scores = card_scores(con, mid)
        metrics = con.execute("SELECT split, metric, value FROM iid_metrics WHERE model_id = ? ORDER BY ALL",
                              [mid]).fetchall()
        # What changed the config file's settings before its run (migration 19: `--tiny`'s notes, --variant, --store).
        changes = con.execute("SELECT r.config_changes FROM runs r JOIN models m ON m.run_id = r.run_id "
                              "WHERE m.model_id = ?", [mid]).fetchall()
    model = sm.build()
    labels = sm.task.head_labels
    if labels is not None and hasattr(model, "config"):
        model.config.id2label = dict(enumerate(labels))
        model.config.label2id = {name: i for i, name in enumerate(labels)}
    out.mkdir(parents=True, exist_ok=True)
    model.save_pretrained(out)
    load_tokenizer(m["model_name"]).save_pretrained(out)
    notes = json.loads(changes[0][0]) if changes and changes[0][0] else []
    (out / "README.md").write_text(model_card(m, sm.config, scores, metrics, store, notes), encoding="utf-8")
    return out


def card_scores(con: duckdb.DuckDBPyConnection, model_id: str) -> list[tuple[Any, ...]]:
    """(scenario, s_suite, s_iid, g) of every scenario of the model's own replicate cell: a store with several
    suites, model names, split seeds or variants has one ``g_scores`` row per cell and scenario."""
    return con.execute(expand_key_comparisons("""SELECT s.scenario, s.s_suite, s.s_iid, s.g FROM g_scores s
                                                 JOIN models m ON same_replicate(s, m) WHERE m.model_id = ?
                                                 ORDER BY s.scenario"""), [model_id]).fetchall()


def model_card(m: dict[str, Any], cfg: BenchmarkConfig, scores: list[tuple[Any, ...]],
               metrics: list[tuple[Any, ...]], store: Path, config_changes: list[str] | None = None) -> str:
    def pct(v: float | None) -> str:
        return "—" if v is None else f"{100 * v:.1f}"

    hparams = json.loads(m["hparams"]) if isinstance(m["hparams"], str) else m["hparams"]

    lines = [f"# {m['task']}: {m['config']} / {m['method']} ({m['scenario']}" +
             (f", seed {m['seed']})" if m["seed"] is not None else ")"), "",
             f"Trained by beluga {BELUGA_VERSION} from `{m['model_name']}`"
             + (f" with config overrides {cfg.model.config_overrides}" if cfg.model.config_overrides else "")
             + f"; judged by suite `{m['suite']}`.", "",
             "| | |", "| --- | --- |",
             f"| training configuration | `{m['config']}` |", f"| method | `{m['method']}` |",
             f"| scenario | `{m['scenario']}`" + (f" (held out: {m['heldout_group']})" if m["heldout_group"] else "")
             + " |", f"| hyper-parameters | `{json.dumps(hparams, sort_keys=True)}` |",
             f"| provenance | store `{store.resolve()}`, model id `{m['model_id']}` |", ""]
    tiny = [c for c in config_changes or [] if c.startswith("--tiny")]
    if tiny:
        lines += ["**Trained by a `--tiny` run: its numbers mean nothing** (the run checked that the config works end "
                  "to end at the smallest sizes).", ""]
    if config_changes:
        lines += ["Its run's config was changed before it ran:", "", *(f"- {c}" for c in config_changes), ""]
    if metrics:
        lines += ["## i.i.d. metrics", "", "| split | metric | value |", "| --- | --- | --- |"]
        lines += [f"| {s} | {name} | {pct(v)} |" for s, name, v in metrics]
        lines.append("")
    if scores:
        lines += [f"## Suite scores of `{m['config']}` / `{m['method']}` (%)", "",
                  "| scenario | s_T | s_iid | G |", "| --- | --- | --- | --- |"]
        lines += [f"| {sc} | {pct(a)} | {pct(b)} | {pct(g)} |" for sc, a, b, g in scores]
        lines.append("")
    return "\n".join(lines)


def store_info(source: StoreArg) -> dict[str, Any]:
    """Size, schema, runs (those recorded as running judged running or interrupted: ``unfinished``), models and rows
    per table of an open store (a path: opened for this call), and what its cache folder holds."""
    with held(source) as opened:
        con, store = opened.con, opened.path
        version = con.execute("SELECT value FROM beluga_meta WHERE key = 'schema_version'").fetchall()[0][0]
        tables = [r[0] for r in con.execute("SELECT table_name FROM duckdb_tables() WHERE schema_name = 'main' "
                                            "ORDER BY 1").fetchall()]
        rows = {t: int(con.execute(f'SELECT count(*) FROM "{t}"').fetchall()[0][0]) for t in tables}
        models = dict(con.execute("SELECT status, count(*) FROM models GROUP BY ALL").fetchall())
        variants = dict(con.execute("SELECT variant, count(*) FROM models WHERE status = 'done' GROUP BY ALL "
                                    "ORDER BY ALL").fetchall())
        cur = con.execute(FAILED_JOBS)
        names = [d[0] for d in cur.description]
        failed = [dict(zip(names, r, strict=True)) for r in cur.fetchall()]
        runs = con.execute("SELECT count(*), max(started_at) FROM runs").fetchall()[0]
        unfinished = running_runs(con, store)
        estimates = [estimate_against_actual(con, *r) for r in con.execute(ESTIMATED_RUNS).fetchall()]
    cache = cache_dir_for(store)
    weights = sorted(cache.glob("*.pt")) if cache.exists() else []
    tokens = sum(p.stat().st_size for p in (cache / "tokens").rglob("*") if p.is_file()) if cache.exists() else 0
    return {"store": store, "bytes": store.stat().st_size, "schema_version": version, "runs": runs[0],
            "last_run": runs[1], "unfinished": unfinished, "models": models, "variants": variants, "failed": failed,
            "rows": rows, "weights": len(weights),
            "weights_bytes": sum(p.stat().st_size for p in weights), "token_cache_bytes": tokens,
            "checkpoints": checkpoints_in_flight(checkpoint_folder(cache)), "estimates": estimates}


# The runs whose start recorded an estimate (``runs.executor`` → ``estimate``: ``pricing.Pricing.record``).
ESTIMATED_RUNS = """
    SELECT run_id, status, epoch(finished_at) - epoch(started_at), executor->>'estimate' FROM runs
    WHERE executor->>'estimate' IS NOT NULL ORDER BY started_at, run_id"""

# What each phase of a run took: its models' and grid points' stored train and eval seconds (an IID model is the
# standard scenario's), and how many finished.
RUN_PHASES = """
    SELECT CASE WHEN scenario = 'standard' THEN 'IID models' ELSE 'scenario models' END,
           count(*), sum(coalesce(train_seconds, 0) + coalesce(eval_seconds, 0))
    FROM models WHERE run_id = ? AND status = 'done' GROUP BY 1
    UNION ALL
    SELECT 'grid points', count(*), sum(coalesce(train_seconds, 0) + coalesce(eval_seconds, 0))
    FROM grid_points WHERE run_id = ? AND status = 'done' GROUP BY 1"""


def estimate_against_actual(con: Any, run_id: str, status: str, wall: float | None, estimate: str) -> dict[str, Any]:
    """A run's estimate beside what it took: its wall time, and per phase the trainings and compute seconds (each
    job's stored train and eval seconds; the estimate's "seconds" count the same, plus its fixed cost)."""
    recorded = json.loads(estimate)
    took = {name: (int(n), float(s or 0.0)) for name, n, s in con.execute(RUN_PHASES, [run_id, run_id]).fetchall()}
    phases = [{"name": p["name"], "trainings": p["trainings"], "estimated": p["seconds"],
               "done": took.get(p["name"], (0, 0.0))[0], "took": took.get(p["name"], (0, 0.0))[1]}
              for p in recorded["phases"] if p["name"] in ("IID models", "grid points", "scenario models")]
    total = recorded["phases"][-1]
    return {"run_id": run_id, "status": status, "workers": recorded["workers"], "sources": recorded["sources"],
            "estimated_wall": total["wall"], "wall": wall, "phases": phases}


def checkpoints_in_flight(folder: Path) -> list[dict[str, Any]]:
    """The checkpoints of jobs that have not finished (or whose run was killed): job, position, size, age."""
    found = []
    for path in sorted(folder.glob("*.safetensors")) if folder.exists() else []:
        stat = path.stat()
        entry: dict[str, Any] = {"job_id": path.name.removesuffix(".safetensors"), "bytes": stat.st_size,
                                 "written": datetime.fromtimestamp(stat.st_mtime, UTC)}
        try:
            meta = peek(path)
            entry |= {"stage": int(meta["stage"]), "n_stages": int(meta["n_stages"]), "step": int(meta["step"]),
                      "n_steps": int(meta["n_steps"])}
        except (CheckpointRejected, OSError, KeyError, TypeError, ValueError) as exc:
            entry["error"] = str(exc) or type(exc).__name__
        found.append(entry)
    return found
