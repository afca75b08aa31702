"""Extractive reading comprehension (SQuAD v1.1): a start / end span model judged by the CheckList SQuAD suite.

The task plugin the core calls (``load_iid``, ``make_encoder``, ``build_model``, ``build_trainset``,
``batch_loss``, ``predict_cases``, ``score_iid``), with its own windowed encoder (``reading_encode``), span
decoding (``reading_decode``), SQuAD metrics (``squad_metrics``) and i.i.d. loading (``reading_data``).

- Model: any transformers question-answering model name or path; ``embedded:minilm`` (the shipped MiniLM
  encoder) gets a fresh span head.
- Training items: i.i.d. questions (their first gold answer's character span) and MFT suite inputs, whose
  gold span is the FIRST occurrence of the answer string in the context; inputs whose answer does not occur
  are dropped, and the count is logged and stored with the model (``hparams.train_notes``). Every window of
  an input trains: windows that do not wholly contain the answer point at [CLS], as in SQuAD fine-tuning.
  Loss: cross-entropy on the gold start and end positions, averaged (the ``mft`` plugin over token positions).
- INV suite cases train with ``span-inv`` on the first window of each input (``training/span_losses.py``).
- Suite predictions are answer strings, which the expectations compare (exact match after CheckList's
  ``clean()`` for most MFTs; invariance with name substitution for the NER INVs).
- Settings (``[[tasks]] options``): max_length 384 and doc_stride 128 (the window; the config's
  ``[model] max_length`` is for the classifiers and is not used here), max_query_length 64,
  max_answer_length 30, n_best 20, eval_batch_size 64.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, ClassVar

import numpy as np
import torch

from beluga_core.errors import BelugaError
from beluga_core.expectations.base import FlatPredictions
from beluga_core.suite.schema import Case
from beluga_core.tasks.base import check_iid_metric
from beluga_core.tasks.iid_data import IIDData
from beluga_core.tasks.reading_data import BUILTIN_SQUAD, SquadExample, load_squad_iid
from beluga_core.tasks.reading_decode import predict_answers, token_accuracy
from beluga_core.tasks.reading_encode import ReadingEncoder, ReadingInput, Window
from beluga_core.tasks.squad_metrics import squad_scores
from beluga_core.training.batches import IID_ENV, IID_STREAM, Batch, PairUnit, SingleUnit, TrainSet
from beluga_core.training.precision import autocast

if TYPE_CHECKING:
    from beluga_core.config.schema import TaskSpec
    from beluga_core.training.loop import Trainer

log = logging.getLogger(__name__)

DEFAULT_OPTIONS: dict[str, int] = {
    "max_length": 384, "doc_stride": 128, "max_query_length": 64, "max_answer_length": 30, "n_best": 20,
    "eval_batch_size": 64,
}
# Keys of TrainSet.notes (stored under models.hparams.train_notes): MFT inputs whose answer string does not
# occur in their context, the cases with at least one such input, and the cases left with none to train on.
DROPPED_INPUTS = "mft_inputs_dropped_answer_not_in_context"
AFFECTED_CASES = "mft_cases_with_a_dropped_input"
DROPPED_CASES = "mft_cases_dropped_entirely"


def load_qa_model(name: str, *, dropout: float | None = None, seed: int = 0,
                  config_overrides: dict[str, Any] | None = None) -> torch.nn.Module:
    """A transformers question-answering model; a head the checkpoint lacks is initialised from ``seed``."""
    from transformers import AutoModelForQuestionAnswering

    from beluga_core.training.model import load_pretrained

    return load_pretrained(AutoModelForQuestionAnswering, name, dropout=dropout, seed=seed,
                           config_overrides=config_overrides)


def first_occurrence(context: str, answer: Any) -> tuple[int, int] | None:
    """Character span [start, end) of the first occurrence of ``answer`` in ``context`` (None if absent)."""
    if not isinstance(answer, str) or not answer:
        return None
    start = context.find(answer)
    return None if start < 0 else (start, start + len(answer))


class ReadingTask:
    name: ClassVar[str] = "reading"
    metrics: ClassVar[tuple[str, ...]] = ("exact_match", "f1")
    primary_metric: ClassVar[str] = "exact_match"  # what G uses (METHOD.md §6)
    builtin_iid: ClassVar[dict[str, Path]] = BUILTIN_SQUAD
    # METHOD.md §5: the reference searches batch sizes {2, 3} for reading (384-token windows, large model).
    grid_axes: ClassVar[dict[str, list[Any]]] = {"batch_size": [2, 3]}

    def __init__(self) -> None:
        self.suite_labels: list[str] | None = None
        self.options: dict[str, int] = dict(DEFAULT_OPTIONS)

    def configure(self, spec: TaskSpec) -> None:
        self.primary_metric = check_iid_metric(self.name, self.metrics, spec.iid_metric) or self.primary_metric
        unknown = sorted(set(spec.options) - set(DEFAULT_OPTIONS))
        if unknown:
            raise BelugaError(f"task 'reading': unknown option(s) {unknown}; it takes {sorted(DEFAULT_OPTIONS)}",
                              field="options")
        for key, value in spec.options.items():
            if isinstance(value, bool) or not isinstance(value, int) or value < (0 if key == "doc_stride" else 1):
                raise BelugaError(f"task 'reading': option {key} must be a positive integer, got {value!r}",
                                  field=f"options.{key}")
        self.options = {**DEFAULT_OPTIONS, **spec.options}
        o = self.options
        if o["doc_stride"] >= o["max_length"] - o["max_query_length"] - 3:
            raise BelugaError(f"task 'reading': doc_stride ({o['doc_stride']}) must be below max_length "
                              f"({o['max_length']}) - max_query_length ({o['max_query_length']}) - 3, so that "
                              "every window adds new context", field="options.doc_stride")

    def use_suite(self, label_space: list[str] | None) -> None:
        self.suite_labels = label_space  # answers are strings: no label space to map

    # -- data and model ---------------------------------------------------------------------------------
    def load_iid(self, source: str, eval_seed: int) -> IIDData:
        return load_squad_iid(source, eval_seed=eval_seed, builtin=self.builtin_iid)

    def make_encoder(self, tokenizer: Any, max_length: int) -> ReadingEncoder:
        # ``max_length`` is the config's classifier truncation; windows use the task's own settings.
        o = self.options
        return ReadingEncoder(tokenizer, o["max_length"], o["doc_stride"], o["max_query_length"])

    def build_model(self, model_name: str, *, seed: int = 0, dropout: float | None = None,
                    config_overrides: dict[str, Any] | None = None) -> torch.nn.Module:
        return load_qa_model(model_name, dropout=dropout, seed=seed, config_overrides=config_overrides)

    # -- training -----------------------------------------------------------------------------------------
    def build_trainset(self, cases: Sequence[Case], iid: Sequence[SquadExample], env_level: str | None,
                       group_of: Callable[[Case, str], str] | None = None) -> TrainSet:
        """Units as the core's batcher wants them; a single item is (input, [char_start, char_end])."""
        from beluga_core import registry

        streams: dict[str, list[SingleUnit | PairUnit]] = {}
        losses: dict[str, str] = {}
        if iid:
            losses[IID_STREAM] = "mft"
            streams[IID_STREAM] = [SingleUnit(((ex.inputs, _span_target(ex.span())),), IID_ENV) for ex in iid]
        dropped_inputs = affected_cases = dropped_cases = 0
        for case in cases:
            env = group_of(case, env_level) if env_level and group_of else ""
            kind = registry.get("loss", case.loss).kind
            if kind == "pair":
                if len(case.inputs) >= 2:  # a pair loss needs an original and a perturbation
                    losses[case.loss] = case.loss
                    streams.setdefault(case.loss, []).append(
                        PairUnit(tuple(case.inputs[0]), tuple(tuple(x) for x in case.inputs[1:]), case.loss_params,
                                 env))
                continue
            items, missing = self.span_items(case)
            dropped_inputs += missing
            affected_cases += bool(missing)
            if not items:
                dropped_cases += bool(missing)
                continue
            losses[case.loss] = case.loss
            units = streams.setdefault(case.loss, [])
            if case.test_type == "MFT":
                units += [SingleUnit((item,), env) for item in items]
            else:
                units.append(SingleUnit(tuple(items), env))
        notes: dict[str, Any] = {}
        if dropped_inputs:
            notes = {DROPPED_INPUTS: dropped_inputs, AFFECTED_CASES: affected_cases, DROPPED_CASES: dropped_cases}
            log.warning("reading: %d MFT input(s) dropped from training, their answer string does not occur in "
                        "the context (%d case(s) affected, %d of them dropped entirely)", dropped_inputs,
                        affected_cases, dropped_cases)
        return TrainSet(streams, losses, notes=notes)

    def span_items(self, case: Case) -> tuple[list[tuple[ReadingInput, np.ndarray]], int]:
        """(input, span target) items of a case trained with the mft loss, and how many inputs were dropped."""
        labels = case.label if isinstance(case.label, list) else [case.label] * len(case.inputs)
        if len(labels) != len(case.inputs):
            raise BelugaError(f"case '{case.id}': {len(labels)} answers for {len(case.inputs)} inputs")
        items, missing = [], 0
        for x, answer in zip(case.inputs, labels, strict=True):
            if not isinstance(x, tuple):
                raise BelugaError(f"case '{case.id}': reading inputs are (context, question) pairs, got {x!r}")
            span = first_occurrence(x[0], answer)
            if span is None:
                missing += 1
            else:
                items.append((x, _span_target(span)))
        return items, missing

    def batch_loss(self, trainer: Trainer, batch: Batch) -> torch.Tensor:
        encoder: ReadingEncoder = trainer.encoder  # type: ignore[assignment]
        if batch.kind == "single":
            assert batch.targets is not None
            windows, starts, ends = [], [], []
            for x, (cs, ce) in zip(batch.inputs, batch.targets.astype(np.int64).tolist(), strict=True):
                for w in encoder[x]:
                    s, e = w.token_span(cs, ce)
                    windows.append(w)
                    starts.append(s)
                    ends.append(e)
            start_logits, end_logits = _forward(trainer, windows)
            loss = trainer.loss_fn(batch.loss)  # mft: cross-entropy over token positions
            device = start_logits.device
            return 0.5 * (loss(start_logits, torch.tensor(starts, device=device))
                          + loss(end_logits, torch.tensor(ends, device=device)))
        k = len(batch.inputs) // 2
        originals, perturbed = batch.inputs[:k], batch.inputs[k:]
        start_logits, end_logits = _forward(trainer, [encoder[x][0] for x in batch.inputs])
        alignments = [encoder.alignment(o, p) for o, p in zip(originals, perturbed, strict=True)]
        return trainer.loss_fn(batch.loss)(start_logits[:k], end_logits[:k], start_logits[k:], end_logits[k:],
                                           alignments)

    # -- evaluation ---------------------------------------------------------------------------------------
    def _answers(self, model: torch.nn.Module, encoder: ReadingEncoder, inputs: Sequence[ReadingInput],
                 device: torch.device) -> list[str]:
        o = self.options
        return predict_answers(model, encoder, inputs, device, n_best=o["n_best"],
                               max_answer_length=o["max_answer_length"], batch_size=o["eval_batch_size"])

    def predict_cases(self, model: torch.nn.Module, encoder: ReadingEncoder, cases: Sequence[Case],
                      device: torch.device) -> tuple[FlatPredictions, list[str]]:
        """Answer strings for every input of ``cases``, and each case's first answer."""
        answers = self._answers(model, encoder, [tuple(x) for c in cases for x in c.inputs], device)
        preds = FlatPredictions.from_arrays(answers=answers, lengths=[len(c.inputs) for c in cases])
        return preds, [answers[i] for i in preds.offsets[:-1].tolist()]

    def validation_metrics(self, model: torch.nn.Module, encoder: ReadingEncoder, cases: Sequence[Case],
                           outcomes: Sequence[dict[str, Any]], device: torch.device) -> list[dict[str, Any]]:
        """T_val scores for hyper-parameter selection (METHOD.md §5, reading): per test type its pass rate;
        for MFT also the start and end token accuracy on the gold spans, whose mean is the MFT ``objective``
        term; other types' objective is their pass rate."""
        counts: dict[str, list[int]] = {}
        for case, out in zip(cases, outcomes, strict=True):
            if out["outcome"] != "skip":
                counts.setdefault(case.test_type, [0, 0])[out["outcome"] == "pass"] += 1
        items = [item for c in cases if c.test_type == "MFT" for item in self.span_items(c)[0]]
        rows: list[dict[str, Any]] = []
        for test_type in sorted(counts):
            fail, passed = counts[test_type]
            rate = passed / (passed + fail) if passed + fail else None
            rows.append({"test_type": test_type, "metric": "pass_rate", "value": rate})
            objective = rate
            if test_type == "MFT" and items:
                start_acc, end_acc = token_accuracy(model, encoder, items, device, self.options["eval_batch_size"])
                rows += [{"test_type": test_type, "metric": "start_accuracy", "value": start_acc},
                         {"test_type": test_type, "metric": "end_accuracy", "value": end_acc}]
                objective = (start_acc + end_acc) / 2
            rows.append({"test_type": test_type, "metric": "objective", "value": objective})
        return rows

    def score_iid(self, model: torch.nn.Module, encoder: ReadingEncoder, examples: Sequence[SquadExample],
                  device: torch.device) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
        """Per-question rows (gold = the JSON list of gold answers; correct = exact match) and EM / F1."""
        preds = self._answers(model, encoder, [ex.inputs for ex in examples], device)
        em, f1 = squad_scores(preds, [ex.answers for ex in examples])
        rows = [{"split": "test", "example_idx": i, "gold": json.dumps(list(ex.answers), ensure_ascii=False),
                 "pred": p, "correct": bool(e)} for i, (ex, p, e) in enumerate(zip(examples, preds, em, strict=True))]
        n = len(examples)
        values = {"exact_match": sum(em) / n if n else float("nan"), "f1": sum(f1) / n if n else float("nan")}
        metrics = [{"split": "test", "metric": name, "value": value, "is_primary": name == self.primary_metric}
                   for name, value in values.items()]
        return rows, metrics


def _span_target(span: tuple[int, int]) -> np.ndarray:
    return np.asarray(span, dtype=np.float32)


def _forward(trainer: Trainer, windows: Sequence[Window]) -> tuple[torch.Tensor, torch.Tensor]:
    """Start and end logits of ``windows``; padding positions get a large negative logit so the batch's
    padding never takes probability mass."""
    encoder: ReadingEncoder = trainer.encoder  # type: ignore[assignment]
    batch = {k: v.to(trainer.device, non_blocking=True) for k, v in encoder.collate(windows).items()}
    with autocast(trainer.device):
        out = trainer.model(**batch)
    start, end = out.start_logits, out.end_logits
    transform = getattr(trainer, "logit_transform", None)  # a method's view of the logits (IRM's dummy scale)
    if transform is not None:
        start, end = transform(start), transform(end)
    pad = batch["attention_mask"] == 0
    return start.float().masked_fill(pad, -1e4), end.float().masked_fill(pad, -1e4)
