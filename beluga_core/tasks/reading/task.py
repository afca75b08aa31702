"""Extractive reading comprehension (SQuAD v1.1): a start / end span model judged by the CheckList SQuAD suite.

The task plugin, with its own windowed encoder (``encode``), span decoding (``decode``), SQuAD metrics
(``metrics``), invariance loss (``span_loss``) and i.i.d. loading (``beluga_core.data.iid.squad``).

- Model: any transformers question-answering model name or path; ``embedded:minilm`` (the shipped MiniLM
  encoder) gets a fresh span head.
- Training items: i.i.d. questions (their first gold answer's character span) and MFT suite inputs, whose
  gold span is the FIRST occurrence of the answer string in the context; inputs whose answer does not occur
  are dropped, and the count is logged and stored with the model (``hparams.train_notes``). Every window of
  an input trains: windows that do not wholly contain the answer point at [CLS], as in SQuAD fine-tuning.
  Loss: cross-entropy on the gold start and end positions, averaged (the ``mft`` plugin over token
  positions); an input's row loss is the mean over its windows, the batch loss the mean over all windows.
- INV suite cases train with ``span-inv`` on the first window of each input.
- Suite predictions are answer strings, which the expectations compare (exact match after CheckList's
  ``clean()`` for most MFTs; invariance with name substitution for the NER INVs).
- Settings (``[[tasks]] options``): max_length 384 and doc_stride 128 (the window; the config's
  ``[model] max_length`` is for the classifiers and is not used here), max_query_length 64,
  max_answer_length 30, n_best 20, eval_batch_size 64.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Mapping, Sequence
from typing import Any, ClassVar

import numpy as np
import torch
from pydantic import Field, ValidationInfo, field_validator

from beluga_core.contracts.expectations import FlatPredictions
from beluga_core.contracts.losses import ClassLoss, SpanPairLoss
from beluga_core.contracts.options import Options
from beluga_core.contracts.tasks import (
    GroupOf,
    IIDScores,
    InputPredictions,
    Task,
    Trainer,
    ValidationMetric,
)
from beluga_core.contracts.training import IID_ENV, IID_STREAM, Batch, BatchOutput, Logits, UnitInfo
from beluga_core.core.constants import TEST_TYPE_LEVEL
from beluga_core.core.errors import BelugaError
from beluga_core.data.iid.examples import Example, IIDData
from beluga_core.data.iid.squad import SquadExample, load_squad_iid
from beluga_core.data.suite.suite_schema import Case, Input, SuiteHeader
from beluga_core.evaluation.squad_metrics import squad_scores
from beluga_core.tasks.reading.decode import predict_answers, token_accuracy
from beluga_core.tasks.reading.reading_encode import ReadingEncoder, ReadingInput, Window, reading_input
from beluga_core.tasks.reading.span_loss import aligned_weights
from beluga_core.training.precision import autocast
from beluga_core.training.trainset import PairUnit, SingleUnit, TrainSet, loss_kind

log = logging.getLogger(__name__)

class ReadingOptions(Options):
    """The ``options`` of a ``reading`` task: its windows over long contexts and its answer decoding."""

    max_length: int = Field(384, ge=1, description="Tokens per window (question and context together).")
    max_query_length: int = Field(64, ge=1, description="The question's tokens kept (the rest is cut).")
    doc_stride: int = Field(128, ge=0, description=(
        "Tokens of context two neighbouring windows share; below max_length - max_query_length - 3, so that "
        "every window adds new context."))
    max_answer_length: int = Field(30, ge=1, description="The longest answer span decoded, in tokens.")
    n_best: int = Field(20, ge=1, description="Start and end candidates per window when decoding.")
    eval_batch_size: int = Field(64, ge=1, description="Windows per forward pass when predicting.")

    @field_validator("doc_stride")
    @classmethod
    def _windows_advance(cls, value: int, info: ValidationInfo) -> int:
        length, query = info.data.get("max_length"), info.data.get("max_query_length")
        if length is not None and query is not None and value >= length - query - 3:
            raise ValueError(f"doc_stride ({value}) must be below max_length ({length}) - max_query_length ({query}) "
                             "- 3, so that every window adds new context")
        return value
# Keys of TrainSet.notes (stored under models.hparams.train_notes): MFT inputs whose answer string does not
# occur in their context, the cases with at least one such input, and the cases left with none to train on.
DROPPED_INPUTS = "mft_inputs_dropped_answer_not_in_context"
AFFECTED_CASES = "mft_cases_with_a_dropped_input"
DROPPED_CASES = "mft_cases_dropped_entirely"


def load_qa_model(name: str, *, dropout: float | None = None, seed: int = 0,
                  config_overrides: dict[str, Any] | None = None) -> torch.nn.Module:
    """A transformers question-answering model; a head the checkpoint lacks is initialised from ``seed``."""
    from transformers import AutoModelForQuestionAnswering

    from beluga_core.training.models import load_pretrained

    return load_pretrained(AutoModelForQuestionAnswering, name, dropout=dropout, seed=seed,
                           config_overrides=config_overrides)


def first_occurrence(context: str, answer: Any) -> tuple[int, int] | None:
    """Character span [start, end) of the first occurrence of ``answer`` in ``context`` (None if absent)."""
    if not isinstance(answer, str) or not answer:
        return None
    start = context.find(answer)
    return None if start < 0 else (start, start + len(answer))


class ReadingTask(Task[ReadingEncoder]):
    metrics: ClassVar[tuple[str, ...]] = ("exact_match", "f1")
    primary_metric: ClassVar[str] = "exact_match"  # what G uses
    offline_iid: ClassVar[str | None] = "builtin:squad-fixture"  # not SQuAD: see its PROVENANCE.md
    # tests/data/tiny-reading.toml's windows: contexts still span several.
    tiny_options: ClassVar[dict[str, int]] = {"max_length": 96, "doc_stride": 24, "max_query_length": 32, "n_best": 5}
    # The reference searches batch sizes {2, 3} for reading (384-token windows, large model).
    grid_axes: ClassVar[dict[str, list[Any]]] = {"batch_size": [2, 3]}
    # Windows are long: one batch per forward pass keeps memory bounded.
    fuses_batches: ClassVar[bool] = False

    Options = ReadingOptions
    options: ReadingOptions

    def use_suite(self, header: SuiteHeader) -> None:
        if header.input_kind != "context_question":
            raise BelugaError(f"task 'reading' answers (context, question) pairs; suite '{header.name}' has "
                              f"{header.input_kind} inputs")
        super().use_suite(header)

    # -- data and model ---------------------------------------------------------------------------------
    def load_iid(self, source: str, eval_seed: int) -> IIDData:
        return load_squad_iid(source, eval_seed=eval_seed)

    def make_encoder(self, tokenizer: Any, max_length: int) -> ReadingEncoder:
        # ``max_length`` is the config's classifier truncation; windows use the task's own settings.
        o = self.options
        return ReadingEncoder(tokenizer, o.max_length, o.doc_stride, o.max_query_length)

    def build_model(self, model_name: str, *, seed: int = 0, dropout: float | None = None,
                    config_overrides: Mapping[str, Any] | None = None) -> torch.nn.Module:
        return load_qa_model(model_name, dropout=dropout, seed=seed, config_overrides=dict(config_overrides or {}))

    # -- training -----------------------------------------------------------------------------------------
    def build_trainset(self, cases: Sequence[Case], iid: Sequence[Example], env_level: str | None,
                       group_of: GroupOf | None = None) -> TrainSet:
        """Units as the core's batcher wants them; a single item is (input, [char_start, char_end])."""
        streams: dict[str, list[SingleUnit | PairUnit]] = {}
        losses: dict[str, str] = {}
        if iid:
            losses[IID_STREAM] = "mft"
            streams[IID_STREAM] = [
                SingleUnit(((ex.inputs, _span_target(_squad(ex).span())),), IID_ENV,
                           UnitInfo("iid", ex.inputs, ex.label, {}, IID_ENV)) for ex in iid]
        dropped_inputs = affected_cases = dropped_cases = 0
        for case in cases:
            # A case with no group at a crossing env_level: the environment of those without one.
            env = (group_of(case, env_level) or "") if env_level and group_of else ""
            info = UnitInfo("suite", case.inputs[0], case.label, {**case.groups, TEST_TYPE_LEVEL: case.test_type},
                            env, case.id)
            if loss_kind(case.loss) == "pair":
                if len(case.inputs) >= 2:  # a pair loss needs an original and a perturbation
                    losses[case.loss] = case.loss
                    streams.setdefault(case.loss, []).append(
                        PairUnit(reading_input(case.inputs[0]), tuple(reading_input(x) for x in case.inputs[1:]),
                                 case.loss_params, env, info))
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
                units += [SingleUnit((item,), env, info) for item in items]
            else:
                units.append(SingleUnit(tuple(items), env, info))
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
        items: list[tuple[ReadingInput, np.ndarray]] = []
        missing = 0
        for x, answer in zip(case.inputs, labels, strict=True):
            if not isinstance(x, tuple):
                raise BelugaError(f"case '{case.id}': reading inputs are (context, question) pairs, got {x!r}")
            span = first_occurrence(x[0], answer)
            if span is None:
                missing += 1
            else:
                items.append((reading_input(x), _span_target(span)))
        return items, missing

    def batch_outputs(self, trainer: Trainer, batches: Sequence[Batch]) -> list[BatchOutput]:
        return [self._output(trainer, b) for b in batches]

    def _output(self, trainer: Trainer, batch: Batch) -> BatchOutput:
        encoder = _reading_encoder(trainer)
        loss = trainer.loss_fn(batch.loss)
        if batch.kind == "single":
            if not isinstance(loss, ClassLoss):
                raise BelugaError(f"task 'reading': loss '{batch.loss}' is not a single-input class loss")
            assert batch.targets is not None
            windows, starts, ends, owner = [], [], [], []
            for row, (x, (cs, ce)) in enumerate(zip(batch.inputs, batch.targets.astype(np.int64).tolist(),
                                                    strict=True)):
                for w in encoder[_reading_input(x)]:
                    s, e = w.token_span(cs, ce)
                    windows.append(w)
                    starts.append(s)
                    ends.append(e)
                    owner.append(row)
            start_logits, end_logits = _forward(trainer, windows)
            device = start_logits.device
            per_window = 0.5 * (loss.per_row(start_logits, torch.tensor(starts, device=device))
                                + loss.per_row(end_logits, torch.tensor(ends, device=device)))
            index = torch.tensor(owner, device=device)
            counts = torch.zeros(len(batch.inputs), device=device).index_add_(0, index, torch.ones_like(per_window))
            rows = torch.zeros(len(batch.inputs), device=device).index_add_(0, index, per_window) / counts
            # The batch loss is the mean over windows, as SQuAD fine-tuning weighs them.
            return BatchOutput(per_window.mean(), rows, (start_logits, end_logits))
        if not isinstance(loss, SpanPairLoss):
            raise BelugaError(f"task 'reading': loss '{batch.loss}' is not a span pair loss (e.g. span-inv)")
        k = len(batch.inputs) // 2
        inputs = [_reading_input(x) for x in batch.inputs]
        start_logits, end_logits = _forward(trainer, [encoder[x][0] for x in inputs])
        alignments = [encoder.alignment(o, p) for o, p in zip(inputs[:k], inputs[k:], strict=True)]
        rows = loss.per_row((start_logits[:k], end_logits[:k]), (start_logits[k:], end_logits[k:]), alignments)
        return BatchOutput(loss.reduce(rows, aligned_weights(alignments, rows.device)), rows,
                           (start_logits, end_logits))

    # -- evaluation ---------------------------------------------------------------------------------------
    def _answers(self, model: torch.nn.Module, encoder: ReadingEncoder, inputs: Sequence[ReadingInput],
                 device: torch.device) -> tuple[list[str], np.ndarray]:
        o = self.options
        return predict_answers(model, encoder, inputs, device, n_best=o.n_best,
                               max_answer_length=o.max_answer_length, batch_size=o.eval_batch_size)

    def predict_cases(self, model: torch.nn.Module, encoder: ReadingEncoder, cases: Sequence[Case],
                      device: torch.device) -> FlatPredictions:
        """Answer strings for every input of ``cases``."""
        answers, _ = self._answers(model, encoder, [_reading_input(x) for c in cases for x in c.inputs], device)
        return FlatPredictions.from_arrays(answers=answers, lengths=[len(c.inputs) for c in cases])

    def predict_iid(self, model: torch.nn.Module, encoder: ReadingEncoder, examples: Sequence[Example],
                    device: torch.device) -> InputPredictions:
        answers, confidence = self._answers(model, encoder, [_reading_input(ex.inputs) for ex in examples], device)
        return InputPredictions(answers, confidence)

    def score_iid(self, examples: Sequence[Example], predictions: InputPredictions, split: str) -> IIDScores:
        """Per question: gold = the JSON list of its gold answers, correct = exact match; EM and F1."""
        squad = [_squad(ex) for ex in examples]
        em, f1 = squad_scores(predictions.labels, [ex.answers for ex in squad])
        n = len(squad)
        values = {"exact_match": sum(em) / n if n else float("nan"), "f1": sum(f1) / n if n else float("nan")}
        return IIDScores(split, [json.dumps(list(ex.answers), ensure_ascii=False) for ex in squad],
                         list(predictions.labels), np.asarray(em, dtype=bool), values, self.metric)

    def validation_metrics(self, model: torch.nn.Module, encoder: ReadingEncoder, cases: Sequence[Case],
                           predictions: FlatPredictions, device: torch.device) -> list[ValidationMetric]:
        """The MFT start and end token accuracy on the gold spans; their mean is the MFT objective term
        (the reference's reading objective: start/end token accuracy + the other types' pass rates)."""
        items = [item for c in cases if c.test_type == "MFT" for item in self.span_items(c)[0]]
        if not items:
            return []
        start_acc, end_acc = token_accuracy(model, encoder, items, device, self.options.eval_batch_size)
        return [ValidationMetric("MFT", "start_accuracy", start_acc),
                ValidationMetric("MFT", "end_accuracy", end_acc),
                ValidationMetric("MFT", "objective", (start_acc + end_acc) / 2)]

    # -- model internals ----------------------------------------------------------------------------------
    def features(self, encoder: Any, inputs: Sequence[Input], device: torch.device) -> dict[str, torch.Tensor]:
        """The first window of each input (what span-inv trains on)."""
        enc: ReadingEncoder = encoder
        return {k: v.to(device) for k, v in enc.collate([enc[_reading_input(x)][0] for x in inputs]).items()}

    def forward_embeddings(self, model: torch.nn.Module, features: Mapping[str, torch.Tensor],
                           embeddings: torch.Tensor) -> Logits:
        rest = {k: v for k, v in features.items() if k != "input_ids"}
        out = model(inputs_embeds=embeddings, **rest)
        return out.start_logits, out.end_logits


def _squad(ex: Example) -> SquadExample:
    if not isinstance(ex, SquadExample):
        raise BelugaError(f"task 'reading' needs SQuAD examples, got {type(ex).__name__}")
    return ex


def _reading_input(x: Input) -> ReadingInput:
    if isinstance(x, str):
        raise BelugaError(f"task 'reading': inputs are (context, question) pairs, got {x!r}")
    return (x[0], x[1])


def _reading_encoder(trainer: Trainer) -> ReadingEncoder:
    encoder = trainer.encoder
    if not isinstance(encoder, ReadingEncoder):
        raise BelugaError("task 'reading' trains with its own windowed encoder")
    return encoder


def _span_target(span: tuple[int, int]) -> np.ndarray:
    return np.asarray(span, dtype=np.float32)


def _forward(trainer: Trainer, windows: Sequence[Window]) -> tuple[torch.Tensor, torch.Tensor]:
    """Start and end logits of ``windows``; padding positions get a large negative logit so the batch's
    padding never takes probability mass."""
    encoder = _reading_encoder(trainer)
    batch = {k: v.to(trainer.device, non_blocking=True) for k, v in encoder.collate(windows).items()}
    with autocast(trainer.device):
        out = trainer.model(**batch)
    start, end = out.start_logits, out.end_logits
    transform = trainer.logit_transform  # a method's view of the logits (IRM's dummy scale)
    if transform is not None:
        start, end = transform(start), transform(end)
    pad = batch["attention_mask"] == 0
    return start.float().masked_fill(pad, -1e4), end.float().masked_fill(pad, -1e4)
