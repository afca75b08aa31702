"""Token attributions: the estimators' known answers (integrated gradients' completeness on the embedded MiniLM,
Kernel SHAP and LIME on an additive function), word aggregation and offsets, determinism, and attributions
computed inside a run against the same computed afterwards by ``beluga explain``."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import torch
from helpers import DATA, config_with, run_cli

from beluga_core.attributions.attribution_context import ModelContext, tokenize
from beluga_core.attributions.compute import Item, attribute, make_methods, tokenizer_id
from beluga_core.attributions.estimators import IntegratedGradients, KernelShap, Lime, shap_coalitions
from beluga_core.contracts.attributions import TokenizedInput, normalize, word_scores
from beluga_core.core.errors import BelugaError
from beluga_core.training.models import load_sequence_classifier, load_tokenizer

# ------------------------------------------------------------------------------------------ known answers


@pytest.fixture(scope="module")
def minilm() -> tuple[torch.nn.Module, Any]:
    torch.manual_seed(0)
    model = load_sequence_classifier("embedded:minilm", 2, seed=0)
    with torch.no_grad():   # a head that separates the classes, so that outputs move with the input
        model.classifier.weight.mul_(40.0)
    return model.eval(), load_tokenizer("embedded:minilm")


SINGLES = ["a gripping , beautifully shot film", "the plot is thin and the acting wooden", "i loved every minute",
           "dull , predictable and far too long", "a small miracle of a movie", "it never quite comes together",
           "the best film of the year", "an utter waste of time", "funny and touching", "not worth the ticket"]
PAIRS = [("is the food good ?", "the meal was tasty"), ("how do i learn python ?", "what is the best way to "
         "learn python ?"), ("who won the game ?", "which team won the match ?"), ("is it cold outside ?",
         "what time is it ?"), ("can dogs eat grapes ?", "are grapes safe for dogs ?"), ("why is the sky blue ?",
         "what colour is the sea ?"), ("where is paris ?", "what is the capital of france ?")]


@pytest.fixture(scope="module")
def responsive_bert() -> tuple[torch.nn.Module, Any]:
    """A 2-layer BERT (hidden size 64) with MiniLM's tokenizer, its weights drawn 10× wider than BERT's
    initialisation, so that its output moves with the input as a trained model's does (at BERT's 0.02 an untrained
    model's output barely moves: the toy model's gaps were all below 0.02). Integrated gradients' completeness is a
    property of the method on any differentiable network; this one costs a hundredth of MiniLM's 300 passes."""
    from toy_model import toy_model
    from transformers import BertConfig, BertForSequenceClassification

    torch.manual_seed(0)
    config = BertConfig(vocab_size=30522, hidden_size=64, num_hidden_layers=2, num_attention_heads=2,
                        intermediate_size=128, initializer_range=0.2, num_labels=2)
    return BertForSequenceClassification(config).eval(), load_tokenizer(str(toy_model()))


@pytest.mark.parametrize("inputs", [SINGLES, PAIRS], ids=["single texts", "text pairs"])
def test_integrated_gradients_complete_at_300_steps(responsive_bert: tuple[torch.nn.Module, Any],
                                                    inputs: list[Any]) -> None:
    model, tok = responsive_bert
    ctx = ModelContext(model, tok, torch.device("cpu"))
    ig = IntegratedGradients({"steps": 300, "baseline": "mask", "aggregate": "signed", "normalize": "none"})
    checked = 0
    for text in inputs:
        x = tokenize(tok, text, 64)
        target = ctx.predict(x)
        f = ctx.objective_from_ids(x, target)
        with torch.no_grad():
            gap = float(f(ctx.ids(x))[0]) - float(f(ctx.masked_ids(x))[0])
        if abs(gap) < 0.1:
            continue
        total = float(ig.attribute(ctx, x, target, np.random.default_rng(0)).sum())
        # The error is the 300-step Riemann sum's, not noise (fp32 rounding across devices is ~1e-6 of it).
        # Measured |Σ − gap| / |gap| over these inputs: at most 0.0043 with this model (seed 0), 0.0080 over model
        # seeds 0–2 (MiniLM's were 0.0082 and 0.0163); 0.02 is 2.5× the largest.
        assert abs(total - gap) <= 0.02 * abs(gap), (text, total, gap)
        checked += 1
    assert checked >= 3, "fewer than 3 inputs with |f(x) − f(baseline)| ≥ 0.1"


class AdditiveContext:
    """f(ids) = w · (token present) + c over the non-special tokens: an exactly additive function."""

    device = torch.device("cpu")
    mask_id = 103
    objective = "prob"

    def __init__(self, w: np.ndarray, c: float = 0.3) -> None:
        self.w, self.c = torch.tensor(w, dtype=torch.float64), c

    def ids(self, x: TokenizedInput) -> torch.Tensor:
        return torch.tensor([x.input_ids])

    def objective_from_ids(self, x: TokenizedInput, target: Any,
                           objective: Any = None) -> Callable[[torch.Tensor], torch.Tensor]:
        features = torch.tensor([s >= 0 for s in x.segment_ids])

        def f(ids: torch.Tensor) -> torch.Tensor:
            present = (ids[:, features] != self.mask_id).double()
            return present @ self.w + self.c

        return f


def toy_input(d: int) -> TokenizedInput:
    ids = (101, *range(2000, 2000 + d), 102)
    return TokenizedInput(ids, tuple(f"t{i}" for i in ids), ((0, 0), *((i, i + 1) for i in range(d)), (0, 0)),
                          (-1, *([0] * d), -1), (-1, *range(d), -1))


def test_kernel_shap_recovers_an_additive_function() -> None:
    w = np.array([0.5, -1.0, 2.0, 0.0, 0.25, -0.75, 1.5, 0.1])
    ctx = AdditiveContext(w)
    out = KernelShap().attribute(ctx, toy_input(len(w)), 0, np.random.default_rng(0))  # type: ignore[arg-type]
    assert out[0] == 0 and out[-1] == 0
    assert np.allclose(out[1:-1], w, atol=1e-6)
    # With a budget below every coalition, sampled sizes (paired complements) still recover it.
    sampled = KernelShap({"samples": 60}).attribute(ctx, toy_input(len(w)), 0,  # type: ignore[arg-type]
                                                    np.random.default_rng(1))
    assert np.allclose(sampled[1:-1], w, atol=1e-6)


def test_shap_sampler_enumerates_complete_sizes_then_pairs_complements() -> None:
    z, weights = shap_coalitions(6, 2 * 6 + 2 * 15 + 10, np.random.default_rng(0))
    sizes = z.sum(axis=1)
    # Sizes 1 and 5 (6 + 6 coalitions) and 2 and 4 (15 + 15) complete; the rest sampled in complementary pairs.
    assert np.bincount(sizes[:42], minlength=7).tolist() == [0, 6, 15, 0, 15, 6, 0]
    rest = z[42:]
    assert len(rest) == 10 and all((rest[i] == ~rest[i + 1]).all() for i in range(0, 10, 2))
    assert weights.min() > 0


def test_lime_recovers_the_sign_order_of_an_additive_function() -> None:
    w = np.array([1.5, -2.0, 0.6, -0.4, 3.0])
    out = Lime({"samples": 2000}).attribute(AdditiveContext(w), toy_input(len(w)), 0,  # type: ignore[arg-type]
                                            np.random.default_rng(0))
    # Exact order and signs: held for generator seeds 0–19, the scores at least 0.399 apart and from 0 (the
    # weights are 0.4 from 0 and 0.9 apart at the closest).
    assert list(np.argsort(out[1:-1])) == list(np.argsort(w))
    assert np.all(np.sign(out[1:-1]) == np.sign(w))


def test_same_seed_same_lime_and_shap_scores(minilm: tuple[torch.nn.Module, Any]) -> None:
    model, tok = minilm
    items = [Item("s", "c1", 0, "the plot is thin and the acting wooden")]
    methods = make_methods(["lime", "shap"], {"lime": {"samples": 64}, "shap": {"samples": 64}})
    runs = [attribute(model, tok, "t", torch.device("cpu"), items, methods, max_length=64)[0] for _ in range(2)]
    assert all(np.array_equal(a.scores, b.scores) for a, b in zip(*runs, strict=True))
    other = make_methods(["lime"], {"lime": {"samples": 64, "seed": 1}})
    moved = attribute(model, tok, "t", torch.device("cpu"), items, other, max_length=64)[0]
    assert not np.array_equal(moved[0].scores, runs[0][0].scores)


def test_words_sum_their_pieces_and_keep_offsets_in_a_pair() -> None:
    # "is it ta ##sty ?" [SEP] "yes": the word "tasty" is two pieces.
    x = TokenizedInput((101, 1, 2, 3, 4, 5, 102, 6, 102), ("[CLS]", "is", "it", "ta", "##sty", "?", "[SEP]", "yes",
                       "[SEP]"), ((0, 0), (0, 2), (3, 5), (6, 8), (8, 11), (12, 13), (0, 0), (0, 3), (0, 0)),
                       (-1, 0, 0, 0, 0, 0, -1, 1, -1), (-1, 0, 1, 2, 2, 3, -1, 4, -1))
    scores = np.array([0.0, 0.1, 0.2, 0.3, 0.4, -0.5, 0.0, 0.7, 0.0])
    assert word_scores(x, scores) == [(-1, 0, 0, 0.0), (0, 0, 2, 0.1), (0, 3, 5, 0.2), (0, 6, 11, pytest.approx(0.7)),
                                      (0, 12, 13, -0.5), (-1, 0, 0, 0.0), (1, 0, 3, 0.7), (-1, 0, 0, 0.0)]
    # The real tokenizer gives the same structure: "tasty" → ta ##sty, one word, offsets into each text.
    real = tokenize(load_tokenizer("embedded:minilm"), ("is it tasty ?", "yes"), 32)
    assert real.tokens == ("[CLS]", "is", "it", "ta", "##sty", "?", "[SEP]", "yes", "[SEP]")
    assert real.offsets == x.offsets and real.segment_ids == x.segment_ids and real.word_ids == x.word_ids


def test_normalisations() -> None:
    s = np.array([-1.0, 3.0, 0.0])
    assert normalize(s, "l1").tolist() == [-0.25, 0.75, 0.0]
    assert normalize(s, "max").tolist() == [-1 / 3, 1.0, 0.0]
    assert normalize(s, "minmax").tolist() == [0.0, 1.0, 0.25]
    assert normalize(np.zeros(3), "minmax").tolist() == [0.0, 0.0, 0.0]


# ------------------------------------------------------------------------------------------ devices


class ModelElsewhere:
    """The real MiniLM context as an estimator sees a model on a GPU, on a machine without one: ``device`` and
    ``ids`` are on the meta device (tensors without data, as GPU memory is to captum's CPU-side samples); the
    objective is the real one, computed on the CPU, from ids that hold data — and it records where each came
    from. An estimator that hands captum ids or a feature mask on the model's device fails here as it failed on
    CUDA (captum mixes them with its interpretable samples, which are always on the CPU)."""

    device = torch.device("meta")

    def __init__(self, ctx: ModelContext) -> None:
        self.ctx, self.model, self.mask_id, self.objective = ctx, ctx.model, ctx.mask_id, ctx.objective
        self.seen: list[torch.device] = []

    def ids(self, x: TokenizedInput) -> torch.Tensor:
        return self.ctx.ids(x).to(self.device)

    def objective_from_ids(self, x: TokenizedInput, target: Any,
                           objective: Any = None) -> Callable[[torch.Tensor], torch.Tensor]:
        f = self.ctx.objective_from_ids(x, target, objective)

        def recorded(ids: torch.Tensor) -> torch.Tensor:
            self.seen.append(ids.device)
            return f(ids)

        return recorded


@pytest.mark.parametrize("method", ["lime", "occlusion", "shap"])
def test_perturbation_samples_are_built_on_the_cpu_whatever_the_models_device(
        minilm: tuple[torch.nn.Module, Any], method: str) -> None:
    model, tok = minilm
    ctx = ModelContext(model, tok, torch.device("cpu"))
    x = tokenize(tok, "the plot is thin and the acting wooden", 64)
    target = ctx.predict(x)
    estimator = make_methods([method], {"lime": {"samples": 64}, "shap": {"samples": 64}})[method]
    on_cpu = estimator.attribute(ctx, x, target, np.random.default_rng(0))
    elsewhere = ModelElsewhere(ctx)
    moved = estimator.attribute(elsewhere, x, target, np.random.default_rng(0))  # type: ignore[arg-type]
    assert elsewhere.seen and set(elsewhere.seen) == {torch.device("cpu")}
    # The same samples from the same generator: the same scores, bit for bit, wherever the model is.
    assert np.array_equal(moved, on_cpu)


@pytest.mark.gpu
def test_cpu_and_cuda_attributions_agree_at_fp32(minilm: tuple[torch.nn.Module, Any]) -> None:
    import copy

    model, tok = minilm
    items = [Item("s", f"c{i}", 0, text) for i, text in enumerate(SINGLES[:4])]
    methods = make_methods(["ig", "occlusion", "lime", "shap"],
                           {"ig": {"steps": 32}, "lime": {"samples": 256}, "shap": {"samples": 256}})
    cpu = attribute(model, tok, "t", torch.device("cpu"), items, methods, max_length=64)[0]
    gpu = attribute(copy.deepcopy(model).to("cuda"), tok, "t", torch.device("cuda"), items, methods, max_length=64)[0]
    assert len(cpu) == len(gpu) == 16
    for a, b in zip(cpu, gpu, strict=True):
        assert (a.method, a.item, a.target) == (b.method, b.item, b.target)
        # Same samples (drawn on the CPU); only the model's fp32 rounding differs between the two devices. The
        # bound is not yet measured on a GPU (this test ran on none when written): scores are O(0.01–1), and fp32
        # forwards of this model agree to ~1e-6 across devices, so 1e-4 leaves two orders of magnitude.
        np.testing.assert_allclose(b.scores, a.scores, rtol=1e-3, atol=1e-4, err_msg=a.method)


# ------------------------------------------------------------------------------------------ inside a run


@pytest.mark.parametrize(("append", "fragments"), [
    ('[attributions]\nmethods = ["gi"]\n', ["unknown attribution 'gi'", "did you mean 'ig'"]),
    ('[attributions]\nmethods = ["ig"]\n[attributions.options.ig]\nbaseline = "noise"\n',
     ["field 'attributions.options.ig.baseline'", "'zero' or 'mask'", "(got 'noise')"]),
    ('[attributions]\nmethods = ["lime"]\n[attributions.options.lime]\nsamples = 1\n',
     ["field 'attributions.options.lime.samples'", "greater than or equal to 2"]),
    # Options are checked (issue 58): a misspelt one was accepted in silence, and stored.
    ('[attributions]\nmethods = ["ig"]\n[attributions.options.ig]\nstep = 8\n',
     ["field 'attributions.options.ig.step'", "unknown option; did you mean 'steps'?"]),
    ('[attributions]\nmethods = ["ig"]\n[attributions.options.ig]\nsteps = 8.0\n',
     ["field 'attributions.options.ig.steps'", "valid integer"]),
    ('[attributions]\nmethods = ["ig"]\n[attributions.options.ig]\nsteps = 1\n',
     ["field 'attributions.options.ig'", "steps must be ≥ 2 with rule riemann_left"]),
    # A table for an estimator the run does not compute is checked too.
    ('[attributions]\nmethods = ["ig"]\n[attributions.options.shap]\nsamples = 1\n',
     ["field 'attributions.options.shap.samples'", "greater than or equal to 2"]),
])
def test_attribution_config_mistakes_exit_2(append: str, fragments: list[str], tmp_path: Path,
                                            capsys: pytest.CaptureFixture[str]) -> None:
    path = config_with(DATA / "tiny-sentiment.toml", tmp_path, append=append)
    code, _, err = run_cli(capsys, "run", path, "--dry-run")
    err = " ".join(err.split())
    assert code == 2 and str(path) in err, err
    for fragment in fragments:
        assert fragment in err, (fragment, err)


def test_span_models_refuse_lime_and_shap() -> None:
    with pytest.raises(BelugaError, match="explains classifiers only"):
        attribute(torch.nn.Linear(1, 1), load_tokenizer("embedded:minilm"), "t", torch.device("cpu"),
                  [Item("s", "c", 0, ("context", "question"))], make_methods(["lime"], {}), max_length=32, span=True)


def test_tokenizer_ids_differ_by_truncation() -> None:
    tok = load_tokenizer("embedded:minilm")
    assert tokenizer_id("m", tok, 64) != tokenizer_id("m", tok, 128)


# ------------------------------------------------------------------------------------------ the guide
