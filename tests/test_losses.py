"""The mft / inv / dir losses (METHOD.md §3) against values worked out by hand.

Logits are chosen so the softmax is a round number (e.g. ``[ln 3, 0]`` → ``[3/4, 1/4]``), and every expected
value is written as explicit arithmetic rather than by re-using the implementation's formula, so a wrong
formula cannot agree with itself.
"""

from __future__ import annotations

import math

import pytest
import torch

from beluga_core.training.losses import DIRLoss, INVLoss, Loss, MFTLoss

LN3, LN4, LN9 = math.log(3), math.log(4), math.log(9)


def t(*rows: list[float], grad: bool = False) -> torch.Tensor:
    return torch.tensor(list(rows), dtype=torch.float32, requires_grad=grad)


# --------------------------------------------------------------------------------------------- plugin API


def test_plugin_metadata_and_registry() -> None:
    from beluga_core.core import registry

    assert (MFTLoss.name, MFTLoss.kind) == ("mft", "single")
    assert (INVLoss.name, INVLoss.kind) == ("inv", "pair")
    assert (DIRLoss.name, DIRLoss.kind) == ("dir", "pair")
    assert DIRLoss.COMPARISONS == {
        "not_less_confident": 0,
        "not_more_confident": 1,
        "not_more_negative": 2,
        "not_more_positive": 3,
    }
    assert (Loss.NEGATIVE_INDEX, Loss.POSITIVE_INDEX) == (0, -1)
    for name, cls in [("mft", MFTLoss), ("inv", INVLoss), ("dir", DIRLoss)]:
        assert registry.get("loss", name) is cls


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
    loss = INVLoss()(t([0.0, 0.0], [LN4, 0.0]), t([LN3, 0.0], [0.0, LN4]))
    assert loss.item() == pytest.approx((item1 + item2) / 2, rel=1e-6)


def test_inv_minimal_at_equal_predictions_with_zero_gradient() -> None:
    orig = t([LN3, 0.0])
    pert = t([LN3, 0.0], grad=True)
    loss = INVLoss()(orig, pert)
    entropy = -(0.75 * math.log(0.75) + 0.25 * math.log(0.25))
    assert loss.item() == pytest.approx(entropy, rel=1e-6)
    loss.backward()
    assert pert.grad is not None
    assert torch.allclose(pert.grad, torch.zeros(1, 2), atol=1e-7)
    for other in ([0.0, 0.0], [LN3 + 0.1, 0.0], [LN3 - 0.1, 0.0], [0.0, LN3]):
        assert INVLoss()(orig, t(other)).item() > entropy


def test_inv_gradient_flows_into_original() -> None:
    # L = −Σ p0_k g_k with g = −log ŷi = [log 4/3, log 4]; dL/dz0_0 = p0_0·(g_0 − p0·g)
    #   = ½·(log 4/3 − ½(log 4/3 + log 4)) = ¼·log(1/3) = −¼ ln 3; the other logit gets +¼ ln 3.
    orig = t([0.0, 0.0], grad=True)
    INVLoss()(orig, t([LN3, 0.0])).backward()
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

DIR_CASES = [
    # not_less_confident: ε = max(0, ŷ0[c*] − ŷi[c*])
    ("not_less_confident", A, -math.log(1 - (0.75 - 0.5))),  # confidence dropped ¾ → ½
    ("not_less_confident", B, 0.0),  # intensifier made it more confident: ¾ → 0.9
    # not_more_confident: ε = max(0, ŷi[c*] − ŷ0[c*])
    ("not_more_confident", B, -math.log(1 - (0.9 - 0.75))),
    ("not_more_confident", A, 0.0),
    # not_more_negative: ε = max(0, ŷi[neg] − ŷ0[neg])
    ("not_more_negative", C, -math.log(1 - (0.5 - 0.25))),
    ("not_more_negative", A, 0.0),  # neg fell ¾ → ½
    # not_more_positive: ε = max(0, ŷi[pos] − ŷ0[pos])
    ("not_more_positive", A, -math.log(1 - (0.5 - 0.25))),
    ("not_more_positive", C, 0.0),  # pos fell ¾ → ½
]


@pytest.mark.parametrize(("comparison", "pair", "expected"), DIR_CASES)
def test_dir_each_comparison(comparison: str, pair: tuple[list[float], list[float]], expected: float) -> None:
    orig, pert = t(pair[0], grad=True), t(pair[1], grad=True)
    code = torch.tensor([DIRLoss.COMPARISONS[comparison]])
    loss = DIRLoss()(orig, pert, code)
    assert loss.item() == pytest.approx(expected, rel=1e-5, abs=1e-7)
    loss.backward()
    if expected == 0.0:  # δ holds: nothing to learn from this item
        assert pert.grad is not None and orig.grad is not None
        assert torch.count_nonzero(pert.grad) == 0 and torch.count_nonzero(orig.grad) == 0


def test_dir_not_less_confident_gradient_sign() -> None:
    # Pair A: loss = −log(1 − ŷ0[c*] + ŷi[c*]), c* = 0. dL/dŷi[c*] = −1/(1 − ε) = −4/3 and
    # dŷi[c*]/dz_i[c*] = ŷi[c*](1 − ŷi[c*]) = ¼, so dL/dz_i[c*] = −1/3 < 0 (and +1/3 on the other logit).
    orig, pert = t(A[0], grad=True), t(A[1], grad=True)
    DIRLoss()(orig, pert, ["not_less_confident"]).backward()
    assert pert.grad is not None and orig.grad is not None
    assert pert.grad[0, 0].item() < 0
    assert torch.allclose(pert.grad, torch.tensor([[-1 / 3, 1 / 3]]), atol=1e-6)
    assert torch.count_nonzero(orig.grad) > 0  # ε is not detached from the original either
    stepped = pert.detach() - 0.5 * pert.grad
    assert torch.softmax(stepped, -1)[0, 0] > torch.softmax(pert.detach(), -1)[0, 0]


def test_dir_mixed_codes_in_one_batch() -> None:
    # items: (A, not_less_confident) (B, not_more_confident) (C, not_more_negative) (A, not_more_positive)
    # and one satisfied item (B, not_less_confident)
    orig = t(A[0], B[0], C[0], A[0], B[0])
    pert = t(A[1], B[1], C[1], A[1], B[1])
    codes = torch.tensor([0, 1, 2, 3, 0])
    expected = [-math.log(0.75), -math.log(0.85), -math.log(0.75), -math.log(0.75), 0.0]
    loss = DIRLoss()(orig, pert, codes)
    assert loss.item() == pytest.approx(sum(expected) / 5, rel=1e-5)
    eps = DIRLoss().violation(orig, pert, codes)
    assert torch.allclose(eps, torch.tensor([0.25, 0.15, 0.25, 0.25, 0.0]), atol=1e-6)


def test_dir_comparison_as_list_of_strings_and_single_string() -> None:
    orig = t(A[0], B[0], C[0], A[0])
    pert = t(A[1], B[1], C[1], A[1])
    names = ["not_less_confident", "not_more_confident", "not_more_negative", "not_more_positive"]
    by_name = DIRLoss()(orig, pert, names)
    by_code = DIRLoss()(orig, pert, torch.tensor([0, 1, 2, 3]))
    assert by_name.item() == pytest.approx(by_code.item(), rel=1e-7)
    assert by_name.item() == pytest.approx((3 * -math.log(0.75) - math.log(0.85)) / 4, rel=1e-5)
    # one name for the whole batch: pairs A and C both have ŷi[pos] − ŷ0[pos] = +¼ / −¼
    single = DIRLoss()(t(A[0], C[0]), t(A[1], C[1]), "not_more_positive")
    assert single.item() == pytest.approx(-math.log(0.75) / 2, rel=1e-5)


def test_dir_rejects_bad_comparisons() -> None:
    orig, pert = t(A[0]), t(A[1])
    with pytest.raises(ValueError, match="unknown dir comparison"):
        DIRLoss()(orig, pert, ["more_confident"])
    with pytest.raises(ValueError):
        DIRLoss()(orig, pert, torch.tensor([4]))
    with pytest.raises(ValueError):
        DIRLoss()(orig, pert, torch.tensor([0, 1]))
    with pytest.raises(ValueError):
        DIRLoss()(orig, pert, ["not_less_confident", "not_more_confident"])
    with pytest.raises(TypeError):
        DIRLoss()(orig, pert, torch.tensor([0.0]))


def test_dir_clamp_keeps_saturated_violation_finite() -> None:
    # ŷ0 ≈ [1, 0] and ŷi ≈ [0, 1]: ε rounds to 1 in float32; the clamp of 1 − ε keeps the loss finite.
    loss = DIRLoss()(t([100.0, 0.0]), t([0.0, 100.0]), ["not_less_confident"])
    assert math.isfinite(loss.item())
    assert loss.item() == pytest.approx(-math.log(DIRLoss.MIN_ONE_MINUS_EPS), rel=1e-4)


# ---------------------------------------------------------------------------------------- mixed precision


def test_losses_under_bf16_autocast_match_float32() -> None:
    gen = torch.Generator().manual_seed(0)
    head = torch.nn.Linear(8, 2)
    x_orig, x_pert = torch.randn(6, 8, generator=gen), torch.randn(6, 8, generator=gen)
    targets = torch.tensor([[0.0, 1.0], [1.0, 0.0], [0.5, 0.5], [1 / 3, 2 / 3], [0.0, 1.0], [1.0, 0.0]])
    codes = torch.tensor([0, 1, 2, 3, 0, 2])

    def losses() -> tuple[torch.Tensor, torch.Tensor, torch.Tensor, torch.Tensor, torch.Tensor]:
        lo, lp = head(x_orig), head(x_pert)
        return lo, lp, MFTLoss()(lo, targets), INVLoss()(lo, lp), DIRLoss()(lo, lp, codes)

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
        INVLoss()(lo.float(), lp.float()),
        DIRLoss()(lo.float(), lp.float(), codes),
    ]
    for got, ref in zip(bf16, exact, strict=True):
        assert got.item() == pytest.approx(ref.item(), rel=1e-6, abs=1e-7)
