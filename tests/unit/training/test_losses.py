"""The mft / inv / dir losses (docs/method.md, "Losses") against values worked out by hand.

Logits are chosen so the softmax is a round number (e.g. ``[ln 3, 0]`` → ``[3/4, 1/4]``), and every expected
value is written as explicit arithmetic rather than by re-using the implementation's formula, so a wrong
formula cannot agree with itself.
"""

from __future__ import annotations

import math

import pytest
import torch

from beluga_core.contracts.losses import ClassLoss, PairLoss
from beluga_core.contracts.registries import LOSSES
from beluga_core.training.builtin_losses import DIRLoss, INVLoss, MFTLoss

LN3, LN4, LN9 = math.log(3), math.log(4), math.log(9)


def t(*rows: list[float], grad: bool = False) -> torch.Tensor:
    return torch.tensor(list(rows), dtype=torch.float32, requires_grad=grad)


# --------------------------------------------------------------------------------------------- plugin API


def test_plugin_kinds_and_registry() -> None:
    assert issubclass(MFTLoss, ClassLoss) and MFTLoss.kind == "single"
    assert issubclass(INVLoss, PairLoss) and INVLoss.kind == "pair"
    assert issubclass(DIRLoss, PairLoss) and DIRLoss.kind == "pair"
    assert DIRLoss.COMPARISONS == {"not_less_confident": 0, "not_more_confident": 1, "not_more": 2, "not_less": 3}
    for name, cls in [("mft", MFTLoss), ("inv", INVLoss), ("dir", DIRLoss)]:
        assert LOSSES.get(name) is cls


# ----------------------------------------------------------------------------------------------------- mft


def test_mft_hard_target() -> None:
    # logits [2, 0], target positive: −log(e^0 / (e^2 + e^0)) = log(1 + e^2)
    loss = MFTLoss()(t([2.0, 0.0]), t([0.0, 1.0]))
    assert loss.dtype == torch.float32 and loss.dim() == 0
    assert loss.item() == pytest.approx(math.log(1 + math.e**2), rel=1e-6)


def test_mft_hard_target_as_class_index() -> None:
    loss = MFTLoss()(t([2.0, 0.0]), torch.tensor([1]))
    assert loss.item() == pytest.approx(math.log(1 + math.e**2), rel=1e-6)


def test_mft_soft_not_negative_target() -> None:
    # logits [1, 0]: p = [e/(e+1), 1/(e+1)]; target [1/3, 2/3]
    # −(1/3·(1 − log(e+1)) + 2/3·(0 − log(e+1))) = log(e+1) − 1/3
    loss = MFTLoss()(t([1.0, 0.0]), t([1 / 3, 2 / 3]))
    assert loss.item() == pytest.approx(math.log(math.e + 1) - 1 / 3, rel=1e-6)


def test_mft_label_set_is_minus_log_of_the_accepted_mass() -> None:
    # logits [0, ln 2, ln 3] → p = [1/6, 2/6, 3/6]; accepted {1, 2}: −log(5/6); a one-class set is the
    # ordinary cross-entropy; a soft row beside it keeps its own formula.
    logits = t([0.0, math.log(2), LN3], [0.0, math.log(2), LN3], [0.0, math.log(2), LN3])
    targets = t([0.0, 1.0, 1.0], [0.0, 0.0, 1.0], [0.5, 0.5, 0.0])
    sets = torch.tensor([True, True, False])
    rows = MFTLoss().per_row(logits, targets, sets)
    expected = [-math.log(5 / 6), -math.log(3 / 6), -(0.5 * math.log(1 / 6) + 0.5 * math.log(2 / 6))]
    assert rows.tolist() == pytest.approx(expected, rel=1e-6)
    assert MFTLoss()(logits, targets, sets).item() == pytest.approx(sum(expected) / 3, rel=1e-6)


def test_mft_label_set_gradient_only_moves_mass_between_accepted_and_rejected() -> None:
    # d(−log(p1 + p2))/dz_k = p_k − p_k·[k ∈ S]/(p1 + p2): for S = {1, 2} and p = [1/6, 2/6, 3/6] that is
    # [1/6, 2/6 − 2/5, 3/6 − 3/5] — the rejected class is pushed down, the accepted ones keep their ratio.
    logits = t([0.0, math.log(2), LN3], grad=True)
    MFTLoss()(logits, t([0.0, 1.0, 1.0]), torch.tensor([True])).backward()
    assert logits.grad is not None
    assert logits.grad[0].tolist() == pytest.approx([1 / 6, 2 / 6 - 2 / 5, 3 / 6 - 3 / 5], abs=1e-6)


def test_mft_batch_mean() -> None:
    # item 1: hard positive on [2, 0] → log(1 + e^2); item 2: neutral [1/2, 1/2] on [ln 3, 0]:
    # p = [3/4, 1/4] → −(½ log ¾ + ½ log ¼)
    item1 = math.log(1 + math.e**2)
    item2 = -(0.5 * math.log(0.75) + 0.5 * math.log(0.25))
    loss = MFTLoss()(t([2.0, 0.0], [LN3, 0.0]), t([0.0, 1.0], [0.5, 0.5]))
    assert loss.item() == pytest.approx((item1 + item2) / 2, rel=1e-6)


def test_mft_rejects_mismatched_targets() -> None:
    with pytest.raises(ValueError):
        MFTLoss()(t([1.0, 0.0]), t([1.0, 0.0, 0.0]))


# ----------------------------------------------------------------------------------------------------- inv


def test_inv_two_item_batch() -> None:
    # item 1: ŷ0 = [½, ½] (logits [0, 0]), ŷi = [¾, ¼] (logits [ln 3, 0]) → −(½ log ¾ + ½ log ¼)
    # item 2: ŷ0 = [⅘, ⅕] (logits [ln 4, 0]), ŷi = [⅕, ⅘] (logits [0, ln 4]) → −(0.8 log 0.2 + 0.2 log 0.8)
    item1 = -(0.5 * math.log(0.75) + 0.5 * math.log(0.25))
    item2 = -(0.8 * math.log(0.2) + 0.2 * math.log(0.8))
    loss = INVLoss()(t([0.0, 0.0], [LN4, 0.0]), t([LN3, 0.0], [0.0, LN4]), [])
    assert loss.item() == pytest.approx((item1 + item2) / 2, rel=1e-6)


def test_inv_minimal_at_equal_predictions_with_zero_gradient() -> None:
    orig = t([LN3, 0.0])
    pert = t([LN3, 0.0], grad=True)
    loss = INVLoss()(orig, pert, [])
    entropy = -(0.75 * math.log(0.75) + 0.25 * math.log(0.25))
    assert loss.item() == pytest.approx(entropy, rel=1e-6)
    loss.backward()
    assert pert.grad is not None
    assert torch.allclose(pert.grad, torch.zeros(1, 2), atol=1e-7)
    for other in ([0.0, 0.0], [LN3 + 0.1, 0.0], [LN3 - 0.1, 0.0], [0.0, LN3]):
        assert INVLoss()(orig, t(other), []).item() > entropy


def test_inv_gradient_flows_into_original() -> None:
    # L = −Σ p0_k g_k with g = −log ŷi = [log 4/3, log 4]; dL/dz0_0 = p0_0·(g_0 − p0·g)
    #   = ½·(log 4/3 − ½(log 4/3 + log 4)) = ¼·log(1/3) = −¼ ln 3; the other logit gets +¼ ln 3.
    orig = t([0.0, 0.0], grad=True)
    INVLoss()(orig, t([LN3, 0.0]), []).backward()
    assert orig.grad is not None
    expected = torch.tensor([[-0.25 * LN3, 0.25 * LN3]])
    assert torch.allclose(orig.grad, expected, atol=1e-6)


# ----------------------------------------------------------------------------------------------------- dir

# Hand-made pairs (orig logits, pert logits) and the softmaxes they give:
#   A: [ln 3, 0] → [¾, ¼] (c* = negative)   then [0, 0]    → [½, ½]
#   B: [0, ln 3] → [¼, ¾] (c* = positive)   then [0, ln 9] → [0.1, 0.9]
#   C: [0, ln 3] → [¼, ¾] (c* = positive)   then [0, 0]    → [½, ½]
A = ([LN3, 0.0], [0.0, 0.0])
B = ([0.0, LN3], [0.0, LN9])
C = ([0.0, LN3], [0.0, 0.0])

NEG, POS = {"comparison": "not_more", "classes": [0]}, {"comparison": "not_more", "classes": [1]}
DIR_CASES = [
    # not_less_confident: ε = max(0, ŷ0[c*] − ŷi[c*])
    ({"comparison": "not_less_confident"}, A, -math.log(1 - (0.75 - 0.5))),  # confidence dropped ¾ → ½
    ({"comparison": "not_less_confident"}, B, 0.0),  # intensifier made it more confident: ¾ → 0.9
    # not_more_confident: ε = max(0, ŷi[c*] − ŷ0[c*])
    ({"comparison": "not_more_confident"}, B, -math.log(1 - (0.9 - 0.75))),
    ({"comparison": "not_more_confident"}, A, 0.0),
    # not_more over the negative class: ε = max(0, ŷi[neg] − ŷ0[neg])
    (NEG, C, -math.log(1 - (0.5 - 0.25))),
    (NEG, A, 0.0),  # neg fell ¾ → ½
    # not_more over the positive class: ε = max(0, ŷi[pos] − ŷ0[pos])
    (POS, A, -math.log(1 - (0.5 - 0.25))),
    (POS, C, 0.0),  # pos fell ¾ → ½
    # not_less over the positive class: ε = max(0, ŷ0[pos] − ŷi[pos])
    ({"comparison": "not_less", "classes": [1]}, C, -math.log(1 - (0.75 - 0.5))),
    ({"comparison": "not_less", "classes": [1]}, B, 0.0),
]


@pytest.mark.parametrize(("params", "pair", "expected"), DIR_CASES)
def test_dir_each_comparison(params: dict, pair: tuple[list[float], list[float]], expected: float) -> None:
    orig, pert = t(pair[0], grad=True), t(pair[1], grad=True)
    loss = DIRLoss()(orig, pert, [params])
    assert loss.item() == pytest.approx(expected, rel=1e-5, abs=1e-7)
    loss.backward()
    if expected == 0.0:  # δ holds: nothing to learn from this item
        assert pert.grad is not None and orig.grad is not None
        assert torch.count_nonzero(pert.grad) == 0 and torch.count_nonzero(orig.grad) == 0


def test_dir_class_mass_over_several_classes_of_a_three_class_head() -> None:
    # orig [ln 3, ln 2, 0] → [1/2, 1/3, 1/6]; pert [0, ln 2, ln 3] → [1/6, 1/3, 1/2]. "The non-positive
    # classes may not gain": mass {0, 1} went 5/6 → 1/2, so ε = 0; "not_more" on {1, 2}: 1/2 → 5/6, ε = 1/3.
    orig, pert = t([LN3, math.log(2), 0.0]), t([0.0, math.log(2), LN3])
    assert DIRLoss()(orig, pert, [{"comparison": "not_more", "classes": [0, 1]}]).item() == pytest.approx(0.0)
    got = DIRLoss()(orig, pert, [{"comparison": "not_more", "classes": [1, 2]}]).item()
    assert got == pytest.approx(-math.log(1 - 1 / 3), rel=1e-5)


def test_dir_not_less_confident_gradient_sign() -> None:
    # Pair A: loss = −log(1 − ŷ0[c*] + ŷi[c*]), c* = 0. dL/dŷi[c*] = −1/(1 − ε) = −4/3 and
    # dŷi[c*]/dz_i[c*] = ŷi[c*](1 − ŷi[c*]) = ¼, so dL/dz_i[c*] = −1/3 < 0 (and +1/3 on the other logit).
    orig, pert = t(A[0], grad=True), t(A[1], grad=True)
    DIRLoss()(orig, pert, [{"comparison": "not_less_confident"}]).backward()
    assert pert.grad is not None and orig.grad is not None
    assert pert.grad[0, 0].item() < 0
    assert torch.allclose(pert.grad, torch.tensor([[-1 / 3, 1 / 3]]), atol=1e-6)
    assert torch.count_nonzero(orig.grad) > 0  # ε is not detached from the original either
    stepped = pert.detach() - 0.5 * pert.grad
    assert torch.softmax(stepped, -1)[0, 0] > torch.softmax(pert.detach(), -1)[0, 0]


def test_dir_mixed_comparisons_in_one_batch() -> None:
    # items: (A, not_less_confident) (B, not_more_confident) (C, not_more neg) (A, not_more pos)
    # and one satisfied item (B, not_less_confident)
    orig = t(A[0], B[0], C[0], A[0], B[0])
    pert = t(A[1], B[1], C[1], A[1], B[1])
    params = [{"comparison": "not_less_confident"}, {"comparison": "not_more_confident"}, NEG, POS,
              {"comparison": "not_less_confident"}]
    expected = [-math.log(0.75), -math.log(0.85), -math.log(0.75), -math.log(0.75), 0.0]
    rows = DIRLoss().per_row(orig, pert, params)
    assert rows.tolist() == pytest.approx(expected, rel=1e-5, abs=1e-7)
    assert DIRLoss()(orig, pert, params).item() == pytest.approx(sum(expected) / 5, rel=1e-5)
    codes, masks = DIRLoss.encode(params, 2)
    eps = DIRLoss().violation(orig, pert, codes, masks)
    assert torch.allclose(eps, torch.tensor([0.25, 0.15, 0.25, 0.25, 0.0]), atol=1e-6)


def test_dir_rejects_bad_comparisons() -> None:
    orig, pert = t(A[0]), t(A[1])
    with pytest.raises(ValueError, match="unknown comparison"):
        DIRLoss()(orig, pert, [{"comparison": "more_confident"}])
    with pytest.raises(ValueError, match="needs 'classes'"):
        DIRLoss()(orig, pert, [{"comparison": "not_more"}])
    with pytest.raises(ValueError, match="needs 'classes'"):
        DIRLoss()(orig, pert, [{"comparison": "not_more", "classes": [2]}])
    with pytest.raises(ValueError, match="unknown comparison"):
        DIRLoss()(orig, pert, [{"comparison": "not_more_negative"}])  # label names are not comparisons


def test_dir_clamp_keeps_saturated_violation_finite() -> None:
    # ŷ0 ≈ [1, 0] and ŷi ≈ [0, 1]: ε rounds to 1 in float32; the clamp of 1 − ε keeps the loss finite.
    loss = DIRLoss()(t([100.0, 0.0]), t([0.0, 100.0]), [{"comparison": "not_less_confident"}])
    assert math.isfinite(loss.item())
    assert loss.item() == pytest.approx(-math.log(DIRLoss.MIN_ONE_MINUS_EPS), rel=1e-4)


# ---------------------------------------------------------------------------------------- mixed precision


def test_losses_under_bf16_autocast_match_float32() -> None:
    gen = torch.Generator().manual_seed(0)
    head = torch.nn.Linear(8, 2)
    x_orig, x_pert = torch.randn(6, 8, generator=gen), torch.randn(6, 8, generator=gen)
    targets = torch.tensor([[0.0, 1.0], [1.0, 0.0], [0.5, 0.5], [1 / 3, 2 / 3], [0.0, 1.0], [1.0, 0.0]])
    params = [{"comparison": "not_less_confident"}, {"comparison": "not_more_confident"}, NEG, POS,
              {"comparison": "not_less_confident"}, NEG]

    def losses() -> tuple[torch.Tensor, torch.Tensor, torch.Tensor, torch.Tensor, torch.Tensor]:
        lo, lp = head(x_orig), head(x_pert)
        return lo, lp, MFTLoss()(lo, targets), INVLoss()(lo, lp, []), DIRLoss()(lo, lp, params)

    _, _, *fp32 = losses()
    with torch.autocast(device_type="cpu", dtype=torch.bfloat16):
        lo, lp, *bf16 = losses()
    assert lo.dtype == torch.bfloat16  # the head really ran in bf16
    for got, ref in zip(bf16, fp32, strict=True):
        assert got.dtype == torch.float32
        assert got.item() == pytest.approx(ref.item(), abs=2e-2, rel=2e-2)
    # and given the same (bf16-rounded) logits, autocast changes nothing: the loss maths is float32
    exact = [
        MFTLoss()(lo.float(), targets),
        INVLoss()(lo.float(), lp.float(), []),
        DIRLoss()(lo.float(), lp.float(), params),
    ]
    for got, ref in zip(bf16, exact, strict=True):
        assert got.item() == pytest.approx(ref.item(), rel=1e-6, abs=1e-7)
