"""``beluga explain``: which words a model relied on, for chosen cases, in the terminal and as an HTML page.

A model whose weights were kept (a store's IID models, its seen and update models with ``keep_weights``, a saved
checkpoint folder) is attributed now, with the estimators' full budgets (or the options given). A fold model's
weights are discarded after its fold: its attributions are those the run stored (``[attributions]``), and a fold
with none says so.
"""

from __future__ import annotations

import html
import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import duckdb

from beluga_core.attributions.compute import Item, attribute, encoder_text, gold_class, make_methods, tokenizer_id
from beluga_core.config.schema import TaskSpec
from beluga_core.contracts.attributions import word_scores
from beluga_core.contracts.tasks import Task
from beluga_core.core.errors import BelugaError
from beluga_core.data.suite.suite_files import Suite
from beluga_core.data.suite.suite_schema import Case, Input
from beluga_core.evaluation.suites import load_checked_suite
from beluga_core.planning.plan import make_task
from beluga_core.store.opened import StoreArg, held
from beluga_core.store.selectors import select_one
from beluga_core.stored_models.export import has_kept_weights, stored_model
from beluga_core.training.models import load_tokenizer, pick_device

Word = tuple[str, float, bool]   # text, score, special token


@dataclass
class ExplainedInput:
    case_id: str
    input_idx: int
    method: str
    predicted: str
    gold: str | None
    outcome: str | None
    words: list[Word]


@dataclass
class Explained:
    """One model's explanations (or why it has none)."""

    label: str
    source: str                          # "computed now" or "stored by the run"
    inputs: list[ExplainedInput] = field(default_factory=list)
    note: str | None = None


def _label(row: dict[str, Any]) -> str:
    group = f" ({row['heldout_group']})" if row.get("heldout_group") else ""
    seed = f"#{row['seed']}" if row.get("seed") is not None else ""
    return f"{row['config']}/{row['method']}@{row['scenario']}{group}{seed}"


def _words(text: Input, tokens: list[str], segments: list[tuple[int, int, int, float]]) -> list[Word]:
    parts = [text] if isinstance(text, str) else list(text)
    out: list[Word] = []
    special = iter(t for t in tokens if t.startswith("[") or t.startswith("<"))
    for seg, start, end, score in segments:
        if seg < 0:
            out.append((next(special, "[SEP]"), score, True))
        else:
            out.append((parts[seg][start:end], score, False))
    return out


def _class_name(value: str, labels: list[str] | None) -> str:
    if labels is None or ":" in value:
        return value
    try:
        return labels[int(value)]
    except (ValueError, IndexError):
        return value


def _cases(con: duckdb.DuckDBPyConnection, suite: str, case_ids: list[str], group: str | None,
           model_id: str) -> list[Case]:
    rows = dict(con.execute("SELECT case_id, spec::VARCHAR FROM case_specs WHERE suite = ?", [suite]).fetchall())
    if group is not None:
        scored = {r[0] for r in con.execute("SELECT case_id FROM outcomes WHERE model_id = ?", [model_id]).fetchall()}
        picked = [Case.model_validate_json(rows[c]) for c in sorted(scored) if c in rows]
        return [c for c in picked if group in {*c.groups.values(), c.test_type}]
    missing = [c for c in case_ids if c not in rows]
    if missing:
        raise BelugaError(f"no case {missing[0]!r} among the stored cases of suite '{suite}' (the store keeps the "
                          "cases a run evaluates: kept T_train, T_val and T_test cases)")
    return [Case.model_validate_json(rows[c]) for c in case_ids]


def explain_store(source: StoreArg, selectors: list[str], *, case_ids: list[str], group: str | None,
                  methods: list[str], options: dict[str, dict[str, Any]], max_inputs: int, stored_only: bool = False,
                  all_inputs: bool = False) -> list[Explained]:
    """The models ``selectors`` name in an open store (a path: opened for this call), each explained on the cases:
    computed now where its weights were kept (unless ``stored_only``), else what its run stored."""
    out = []
    with held(source) as opened:
        con, store = opened.con, opened.path
        for selector in selectors:
            row = select_one(con, selector, where=str(store))
            label = _label(row)
            cases = _cases(con, row["suite"], case_ids, group, row["model_id"])
            outcome = dict(con.execute("SELECT case_id, outcome FROM outcomes WHERE model_id = ?",
                                       [row["model_id"]]).fetchall())
            labels_json = con.execute("SELECT labels::VARCHAR FROM task_heads WHERE task = ? AND suite = ?",
                                      [row["task"], row["suite"]]).fetchall()
            labels = json.loads(labels_json[0][0]) if labels_json and labels_json[0][0] else None
            space_json = con.execute("SELECT label_space::VARCHAR FROM suites WHERE suite = ?",
                                     [row["suite"]]).fetchall()
            space = json.loads(space_json[0][0]) if space_json and space_json[0][0] else None
            if has_kept_weights(store, row["model_id"]) and not stored_only:
                sm = stored_model(con, store, row)
                computed = _compute(sm.build(), load_tokenizer(row["model_name"]), row["model_name"], sm.task,
                                    sm.max_length, row["suite"], cases, methods, options, max_inputs, all_inputs,
                                    labels, space, outcome)
                out.append(Explained(label, "computed now", computed))
            else:
                out.append(_stored(con, row, label, cases, methods, max_inputs, labels, space, outcome))
    return out


def _stored(con: duckdb.DuckDBPyConnection, row: dict[str, Any], label: str, cases: list[Case], methods: list[str],
            max_inputs: int, labels: list[str] | None, space: list[str] | None, outcome: dict[str, str]) -> Explained:
    wanted = [c.id for c in cases]
    found = con.execute(f"""SELECT case_id, input_idx, method, predicted, target, text, score, segment < 0
                            FROM attribution_words WHERE model_id = ? AND suite = ?
                              AND case_id IN (SELECT unnest(?::VARCHAR[]))
                              {"AND method IN (SELECT unnest(?::VARCHAR[]))" if methods else ""}
                            ORDER BY case_id, input_idx, method, first_token""",
                        [row["model_id"], row["suite"], wanted, *([methods] if methods else [])]).fetchall()
    if not found:
        kind = "a held-out fold" if row["heldout_group"] else "a model"
        return Explained(label, "stored by the run", note=(
            f"{kind} whose weights were not kept and that has no stored attributions for these cases: its run's "
            "[attributions] did not cover them (or was off). Re-run with [attributions] (cases = "
            "\"heldout_test\", or the group's name) or keep its weights with [store] keep_weights = \"all\"."))
    gold = {c.id: c for c in cases}
    by: dict[tuple[str, int, str], ExplainedInput] = {}
    for case_id, idx, method, predicted, _target, text, score, special in found:
        key = (case_id, idx, method)
        if key not in by:
            if len(by) >= max_inputs * max(1, len(methods) or 1):
                continue
            by[key] = ExplainedInput(case_id, idx, method, _class_name(predicted, labels),
                                     _gold_text(gold[case_id], idx, space), outcome.get(case_id), [])
        by[key].words.append((text or "", float(score), bool(special)))
    return Explained(label, "stored by the run", list(by.values()))


def _gold_text(case: Case, idx: int, labels: list[str] | None) -> str | None:
    label = case.label[idx] if isinstance(case.label, list) else case.label
    if label is None:
        return None
    return _class_name(str(label), None) if isinstance(label, str) else _class_name(str(label), labels)


def _compute(model: Any, tokenizer: Any, model_name: str, task: Task[Any], max_length: int, suite: str,
             cases: list[Case], methods: list[str], options: dict[str, dict[str, Any]], max_inputs: int,
             all_inputs: bool, labels: list[str] | None, space: list[str] | None,
             outcome: dict[str, str]) -> list[ExplainedInput]:
    import torch

    device = pick_device("auto")
    model.to(device)
    items = [Item(suite, c.id, i, x, gold_class(task, c, i)) for c in cases
             for i, x in enumerate(c.inputs if all_inputs else c.inputs[:1])][:max_inputs]
    estimators = make_methods(methods or ["ig"], options)
    # Through the task's encoder, as the model was trained: the relation task's entity markers are one vocabulary
    # id each (the encoder registers them with the tokenizer), not the word pieces of "[E1]".
    encoder = task.make_encoder(tokenizer, max_length)
    with torch.enable_grad():
        rows, _ = attribute(model, tokenizer, tokenizer_id(model_name, tokenizer, max_length, encoder), device, items,
                            estimators, max_length=max_length, span=task.head_labels is None,
                            model_text=encoder_text(encoder))
    cases_by_id = {c.id: c for c in cases}
    out = []
    for r in rows:
        case = cases_by_id[r.item.case_id]
        out.append(ExplainedInput(r.item.case_id, r.item.input_idx, r.method, _class_name(r.predicted, labels),
                                  _gold_text(case, r.item.input_idx, space), outcome.get(r.item.case_id),
                                  _words(r.item.text, list(r.x.tokens), word_scores(r.x, r.scores))))
    return out


def explain_path(path: Path, task_name: str, suite_spec: str, *, case_ids: list[str], group: str | None,
                 methods: list[str], options: dict[str, dict[str, Any]], max_inputs: int, max_length: int,
                 all_inputs: bool = False) -> list[Explained]:
    """A saved checkpoint folder, on cases of a suite file."""
    if not path.is_dir():
        raise BelugaError("not a model folder (a Hugging Face checkpoint with config.json)", source=path)
    suite: Suite = load_checked_suite(suite_spec)
    task = make_task(TaskSpec(name=task_name, suite=suite_spec, iid="none"), suite)
    if group is not None:
        cases = [c for c in suite.cases if group in {*c.groups.values(), c.test_type}]
    else:
        unknown = [c for c in case_ids if c not in suite]
        if unknown:
            raise BelugaError(f"no case {unknown[0]!r} in suite '{suite.header.name}'", source=suite.path)
        cases = [suite.case(c) for c in case_ids]
    model = task.build_model(str(path), seed=0)
    rows = _compute(model, load_tokenizer(str(path)), str(path), task, max_length, suite.header.name, cases, methods,
                    options, max_inputs, all_inputs, task.head_labels, suite.header.label_space, {})
    return [Explained(path.name, "computed now", rows)]


# ------------------------------------------------------------------------------------------------ rendering

def _colour(score: float, scale: float) -> tuple[int, int, int]:
    """White to green (positive) or red (negative), by |score| / scale."""
    a = 0.0 if scale == 0 else min(1.0, abs(score) / scale)
    if score >= 0:
        return (int(255 - 155 * a), 255, int(255 - 155 * a))
    return (255, int(255 - 155 * a), int(255 - 155 * a))


def print_terminal(explained: list[Explained], console: Any) -> None:
    from rich.text import Text

    for e in explained:
        console.print(Text(f"{e.label} — attributions {e.source}", style="bold"))
        if e.note:
            console.print(Text(e.note, style="yellow"))
        for x in e.inputs:
            head = f"  {x.case_id} [{x.input_idx}] {x.method}: predicted {x.predicted}"
            head += (f", gold {x.gold}" if x.gold is not None else "") + (f", {x.outcome}" if x.outcome else "")
            console.print(head, highlight=False)
            scale = max((abs(s) for _, s, _ in x.words), default=0.0)
            line = Text("    ")
            for text, score, special in x.words:
                r, g, b = _colour(score, scale)
                line.append(text, style=f"black on rgb({r},{g},{b})" + (" dim" if special else ""))
                line.append(" ")
            console.print(line)


def render_html(explained: list[Explained], title: str) -> str:
    """One page: a column per model, a row per case input, words shaded by score (hover: the score)."""
    keys: list[tuple[str, int, str]] = []
    for e in explained:
        for x in e.inputs:
            if (x.case_id, x.input_idx, x.method) not in keys:
                keys.append((x.case_id, x.input_idx, x.method))
    head = "".join(f"<th>{html.escape(e.label)}<br><span class=note>{html.escape(e.source)}</span></th>"
                   for e in explained)
    rows = []
    for key in keys:
        cells: list[str] = []
        for e in explained:
            found = next((i for i in e.inputs if (i.case_id, i.input_idx, i.method) == key), None)
            if found is None:
                cells.append(f"<td class=note>{html.escape(e.note or 'not attributed')}</td>")
                continue
            x = found
            scale = max((abs(s) for _, s, _ in x.words), default=0.0)
            spans = " ".join(
                f'<span class="w{" special" if special else ""}" style="background: rgb{_colour(score, scale)}" '
                f'title="{score:.4g}">{html.escape(text)}</span>' for text, score, special in x.words)
            meta = f"predicted <b>{html.escape(x.predicted)}</b>"
            meta += f", gold <b>{html.escape(x.gold)}</b>" if x.gold is not None else ""
            meta += f" — <span class={html.escape(x.outcome)}>{html.escape(x.outcome)}</span>" if x.outcome else ""
            cells.append(f"<td><div class=meta>{meta}</div><div class=text>{spans}</div></td>")
        rows.append(f"<tr><th class=case>{html.escape(key[0])}<br><span class=note>input {key[1]} · "
                    f"{html.escape(key[2])}</span></th>{''.join(cells)}</tr>")
    notes = "".join(f"<p class=note>{html.escape(e.label)}: {html.escape(e.note)}</p>" for e in explained if e.note)
    return f"""<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>{html.escape(title)}</title>
<style>
body {{ font: 14px/1.5 system-ui, -apple-system, "Segoe UI", Roboto, sans-serif; margin: 2em; color: #1f2328; }}
table {{ border-collapse: collapse; }} th, td {{ border: 1px solid #d0d7de; padding: .5em .7em; vertical-align: top; }}
th {{ background: #f6f8fa; text-align: left; }} .note {{ color: #57606a; font-weight: normal; font-size: 12px; }}
.w {{ padding: 1px 2px; border-radius: 3px; }} .special {{ color: #8c959f; font-size: 11px; }}
.meta {{ font-size: 12px; margin-bottom: .3em; }} .pass {{ color: #1a7f37; }} .fail {{ color: #cf222e; }}
.skip {{ color: #9a6700; }} .text {{ line-height: 1.9; }}
</style></head><body>
<h1>{html.escape(title)}</h1>
<p class=note>Green: the word raised the explained class's score; red: lowered it (shade: relative to the input's
largest |score|; hover for the value). A word's score is the sum over its word pieces.</p>
{notes}<table><thead><tr><th>case</th>{head}</tr></thead><tbody>{''.join(rows)}</tbody></table>
</body></html>
"""
