"""Regression between model versions: the flip views on hand-made stores (known answers), distillation's
penalty and its gradient, ensembles, the NFR randomization test, centric selection, importing models from
elsewhere, and a tiny real run with updates, distillation, an ensemble and kept probabilities and weights."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pytest
import torch
import torch.nn.functional as F
from helpers import DATA, query, run_cli
from regression_toy import CASES, add_model, regression_writer
from toys import ToyEncoder, ToyTask, tiny_bert, token_trainset

from beluga_core.analysis.regression.ensemble import EnsembleSpec, build_ensemble, combine
from beluga_core.analysis.regression.flips import centric_selection, nfr_randomization_test
from beluga_core.core.errors import BelugaError
from beluga_core.training.loop import seed_everything, train_stage
from beluga_core.training.methods.distill import Distill, distillation_terms
from beluga_core.training.methods.vanilla import Vanilla

# ------------------------------------------------------------------------------------------ hand-made stores


def test_the_hand_made_pair_of_five_examples(tmp_path: Path) -> None:
    # Old right on examples 1, 2, 3; new right on 2, 3, 4 (of 0..4): one negative flip (1), one positive (4).
    writer = regression_writer(tmp_path / "s.duckdb")
    add_model(writer, "old", "iid", correct=[False, True, True, True, False])
    add_model(writer, "new", "iid-update", correct=[False, False, True, True, True])
    store = tmp_path / "s.duckdb"
    (row,) = query(store, "SELECT n, n_neg, n_pos, nfr, pfr, delta_acc, rel_nfr, old_model_id FROM regression_iid")
    assert row[:6] == (5, 1, 1, 0.2, 0.2, 0.0) and row[7] == "old"
    assert row[6] == pytest.approx(0.2 / (0.6 * 0.4))           # NFR / (acc_old · error_new)
    (between,) = query(store, "SELECT source, part, n, nfr, pfr, delta_acc FROM regression_between('old', 'new')")
    assert between == ("iid", "test", 5, 0.2, 0.2, 0.0)
    flips = query(store, "SELECT example_idx, flip FROM iid_flips ORDER BY example_idx")
    assert flips == [(0, "none"), (1, "negative"), (2, "none"), (3, "none"), (4, "positive")]
    assert query(store, "SELECT item, flip FROM flips_between('old', 'new') WHERE flip <> 'none' ORDER BY item") == \
        [("1", "negative"), ("4", "positive")]


def test_suite_flips_leave_skips_out_and_count_them_and_assemble_held_out_folds(tmp_path: Path) -> None:
    writer = regression_writer(tmp_path / "s.duckdb")
    add_model(writer, "iid", "iid", outcomes={"c0": "pass", "c1": "pass", "c2": "skip", "c3": "fail",
                                           "c4": "pass", "c5": "pass", "c6": "fail", "c7": "pass"})
    # Two fold models of one held-out scenario, each on its group; their union is compared with the IID model.
    add_model(writer, "f1", "iid-then-t", outcomes={"c0": "fail", "c1": "pass", "c2": "pass", "c3": "pass"},
           scenario="skill", group="g1", parent="iid")
    add_model(writer, "f2", "iid-then-t", outcomes={"c4": "fail", "c5": "skip", "c6": "pass", "c7": "pass"},
           scenario="skill", group="g2", parent="iid")
    store = tmp_path / "s.duckdb"
    rows = {r[0]: r[1:] for r in query(store, """SELECT scoring_group, n, n_skipped, n_neg, n_pos, nfr, pfr,
                                                  delta_pass_rate, n_models FROM regression_cases""")}
    # g1: c2 skipped (old); c0 pass→fail, c3 fail→pass, c1 none. g2: c5 skipped (new); c4 pass→fail; c6 fail→pass.
    assert rows["g1"][:4] == (3, 1, 1, 1) and rows["g2"][:4] == (3, 1, 1, 1)
    assert rows[None] == (6, 2, 2, 2, 2 / 6, 2 / 6, 0.0, 2)
    flips = dict(query(store, "SELECT case_id, flip FROM case_flips"))
    assert flips == {"c0": "negative", "c1": "none", "c2": "skip", "c3": "positive", "c4": "negative", "c5": "skip",
                     "c6": "positive", "c7": "none"}


# ------------------------------------------------------------------------------------------ distillation

def test_kl_matches_torch_kl_div_and_scales_by_t_squared() -> None:
    torch.manual_seed(0)
    student, teacher = torch.randn(6, 3), torch.randn(6, 3)
    labels = torch.tensor([0, 1, 2, 0, 1, 2])
    for t in (1.0, 2.0):
        _, kl = distillation_terms(student, teacher, labels, "all", t)
        reference = F.kl_div(F.log_softmax(student / t, -1), F.log_softmax(teacher / t, -1), log_target=True,
                             reduction="none").sum(-1)
        assert torch.allclose(kl, t * t * reference, atol=1e-6)
    _, kl2 = distillation_terms(student, teacher, labels, "all", 2.0)
    plain = F.kl_div(F.log_softmax(student / 2, -1), F.log_softmax(teacher / 2, -1), log_target=True,
                     reduction="none").sum(-1)
    assert torch.allclose(kl2, 4 * plain, atol=1e-6)


def test_teacher_equal_to_student_gives_zero_penalty_and_gradient() -> None:
    torch.manual_seed(1)
    logits = torch.randn(5, 2, requires_grad=True)
    mask, kl = distillation_terms(logits, logits.detach().clone(), torch.tensor([0, 1, 1, 0, 1]), "all", 2.0)
    penalty = (mask * kl).sum()
    penalty.backward()
    assert penalty.item() == pytest.approx(0.0, abs=1e-7)
    assert logits.grad is not None and torch.allclose(logits.grad, torch.zeros_like(logits.grad), atol=1e-6)


def test_better_masks_rows_where_the_new_model_already_does_as_well() -> None:
    student = torch.tensor([[2.0, 0.0], [0.0, 2.0], [0.5, 1.0]], requires_grad=True)
    teacher = torch.tensor([[0.0, 1.0], [0.0, 3.0], [3.0, 0.0]])
    labels = torch.tensor([0, 1, 0])
    mask, kl = distillation_terms(student, teacher, labels, "better", 1.0)
    # Row 0: p_new(y) high, p_old(y) low → no penalty; row 1: old more confident → penalty; row 2: old better.
    assert mask.tolist() == [0.0, 1.0, 1.0]
    (mask * kl).sum().backward()
    assert student.grad is not None and torch.equal(student.grad[0], torch.zeros(2))
    flip, _ = distillation_terms(student.detach(), teacher, labels, "flip", 1.0)
    assert flip.tolist() == [0.0, 0.0, 1.0]      # only row 2: old right, new wrong


def test_distill_with_alpha_zero_trains_exactly_as_vanilla() -> None:
    hp = {"learning_rate": 5e-3, "batch_size": 8, "epochs": 2, "max_grad_norm": 1.0}
    a, b = tiny_bert(), tiny_bert()
    seed_everything(3)  # as the worker does before every job (dropout draws from torch's generator)
    train_stage(ToyTask(), a, ToyEncoder(), torch.device("cpu"), token_trainset(), hp, Vanilla(), seed=3)
    seed_everything(3)
    train_stage(ToyTask(), b, ToyEncoder(), torch.device("cpu"), token_trainset(), hp,
                Distill({"alpha": 0.0, "where": "all"}), seed=3)
    assert all(torch.equal(x, y) for x, y in zip(a.state_dict().values(), b.state_dict().values(), strict=True))
    # With a penalty and an untrained teacher at the start, the update differs (the method is not a no-op).
    c = tiny_bert()
    seed_everything(3)
    train_stage(ToyTask(), c, ToyEncoder(), torch.device("cpu"), token_trainset(), hp,
                Distill({"alpha": 5.0, "where": "all", "temperature": 2.0}), seed=3)
    assert not all(torch.equal(x, y) for x, y in zip(a.state_dict().values(), c.state_dict().values(), strict=True))


@pytest.mark.parametrize(("hp", "field", "fragment"), [
    ({"where": "worse"}, "where", "'better', 'flip', 'correct' or 'all'"),
    ({"teacher": "teacher.pt"}, "teacher", "teacher 'teacher.pt'"),
    ({"temperature": 0}, "temperature", "greater than 0"), ({"alpha": -1}, "alpha", "greater than or equal to 0")])
def test_distill_settings_are_checked(hp: dict[str, Any], field: str, fragment: str) -> None:
    with pytest.raises(BelugaError, match=fragment) as err:
        Distill(hp)
    assert err.value.field == f"method.distill.{field}"


# ------------------------------------------------------------------------------------------ ensembles, tests

def test_votes_ties_and_vote_shares() -> None:
    labels = np.array([[0, 1, 1, 2], [0, 0, 1, 1], [1, 0, 1, 0]])   # 3 members × 4 items, 3 classes
    pred, share = combine(labels, None, "vote", 3)
    assert pred.tolist() == [0, 0, 1, 2]          # item 3: a three-way tie: the first member's label (2)
    assert share[0].tolist() == pytest.approx([2 / 3, 1 / 3, 0]) and share[3].tolist() == pytest.approx([1 / 3] * 3)
    # A two-member tie broken by the mean probability.
    two = np.array([[0], [1]])
    probs = np.array([[[0.6, 0.4]], [[0.1, 0.9]]])
    p, s = combine(two, probs, "vote", 2)
    assert p.tolist() == [1] and s.tolist() == [[0.5, 0.5]]
    p, m = combine(two, probs, "mean", 2)
    assert p.tolist() == [1] and m[0].tolist() == pytest.approx([0.35, 0.65])
    with pytest.raises(BelugaError, match="keep_probabilities"):
        combine(two, None, "mean", 2)


def test_first_member_breaks_ties_without_probabilities() -> None:
    pred, _ = combine(np.array([[2, 0], [0, 1]]), None, "vote", 3)
    assert pred.tolist() == [2, 0]


def test_ensemble_rows_are_judged_again_from_the_members_predictions(tmp_path: Path,
                                                                    capsys: pytest.CaptureFixture[str]) -> None:
    writer = regression_writer(tmp_path / "s.duckdb")
    add_model(writer, "iid", "iid", correct=[True, True, False, False], outcomes={c.id: "pass" for c in CASES})
    votes = {"u0": [1, 1, 0, 1], "u1": [1, 0, 0, 1], "u2": [0, 0, 0, 1]}
    for seed, (mid, preds) in enumerate(votes.items()):
        probs = {c.id: ([0.2, 0.8] if (int(c.id[1:]) + seed) % 3 else [0.7, 0.3]) for c in CASES}
        add_model(writer, mid, "iid-update", correct=[p == 1 for p in preds], seed=seed, parent=None,
               outcomes={c: "pass" for c in probs}, case_probs=probs,
               iid_probs=[[0.3, 0.7] if p else [0.6, 0.4] for p in preds])
    (eid,) = build_ensemble(tmp_path / "s.duckdb", EnsembleSpec("ens", ("iid-update/vanilla",), "vote"))
    store = tmp_path / "s.duckdb"
    preds = [r[0] for r in query(store, "SELECT pred FROM iid_predictions WHERE model_id = ? ORDER BY example_idx",
                                 [eid])]
    assert preds == ["1", "0", "0", "1"]          # majority of (1,1,0), (1,0,0), (0,0,0), (1,1,1)
    shares = [r[0] for r in query(store, "SELECT probs FROM iid_probs WHERE model_id = ? ORDER BY example_idx",
                                  [eid])]
    assert shares[0] == pytest.approx([1 / 3, 2 / 3])
    # Suite cases: per case the members' argmax votes, then eq against the label.
    outcomes = dict(query(store, "SELECT case_id, outcome FROM outcomes WHERE model_id = ?", [eid]))
    for c in CASES:
        votes_c = [1 if (int(c.id[1:]) + seed) % 3 else 0 for seed in range(3)]
        majority = int(sum(votes_c) >= 2)
        assert outcomes[c.id] == ("pass" if majority == c.label else "fail"), c.id
    meta = query(store, "SELECT seed, method, parent_model_id, hparams->>'vote_share' FROM models WHERE model_id = ?",
                 [eid])
    assert meta == [(None, "ens", "iid", "true")]
    assert run_cli(capsys, "store", "check", store)[0] == 0


def test_nfr_randomization_test_known_answers() -> None:
    rng = np.random.default_rng(0)
    old = rng.random(436) < 0.85
    same = old.copy()
    identical = nfr_randomization_test(old, same, same.copy(), rounds=2000, rng=np.random.default_rng(1))
    assert identical.p_value == 1.0 and identical.n_discordant == 0
    planted = same.copy()
    planted[np.flatnonzero(old)[:30]] = False      # 30 more negative flips for a
    test = nfr_randomization_test(old, planted, same, rounds=10_000, rng=np.random.default_rng(2))
    assert test.nfr_a - test.nfr_b == pytest.approx(30 / 436) and test.p_value < 0.01
    again = nfr_randomization_test(old, planted, same, rounds=10_000, rng=np.random.default_rng(2))
    assert again == test


def test_centric_selection_picks_the_model_closest_to_the_others() -> None:
    # Model m2 is right wherever m1 or m3 is: nobody's update to m2 flips anything; m1 and m3 disagree.
    m1 = np.array([1, 1, 0, 0, 1, 1, 0, 0] * 10, dtype=bool)
    m3 = np.array([0, 0, 1, 1, 1, 1, 0, 0] * 10, dtype=bool)
    m2 = m1 | m3
    result = centric_selection({"m1": m1, "m2": m2, "m3": m3}, seed=0)
    assert result.chosen == "m2" and result.selection_nfr["m2"] == 0.0
    assert result.n_selection + result.n_report == 80


# ------------------------------------------------------------------------------------------ a tiny real run


def test_dry_run_prints_what_keeping_costs(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, err = run_cli(capsys, "run", DATA / "tiny-regression.toml", "--dry-run")
    text = " ".join(out.split())
    assert code == 0, err
    assert "keep_probabilities: ≈" in text and 'keep_weights = "seen": 9 model(s) kept beside the store, ≈' in text


# ------------------------------------------------------------------------------------------ the guide


def test_an_ensemble_of_a_held_out_scenario_has_one_row_per_group(tmp_path: Path) -> None:
    writer = regression_writer(tmp_path / "s.duckdb")
    add_model(writer, "iid", "iid", outcomes={c.id: "pass" for c in CASES})
    for seed in (0, 1):
        for group, ids in (("g1", ["c0", "c1", "c2", "c3"]), ("g2", ["c4", "c5", "c6", "c7"])):
            add_model(writer, f"f{seed}{group}", "iid-then-t", seed=seed, scenario="skill", group=group, parent="iid",
                   outcomes=dict.fromkeys(ids, "pass"), case_probs={c: [0.3, 0.7] for c in ids})
    ids = build_ensemble(tmp_path / "s.duckdb", EnsembleSpec("ens", ("iid-then-t/vanilla@skill",), "mean"))
    rows = query(tmp_path / "s.duckdb", "SELECT heldout_group, count(*) FROM outcomes JOIN models USING (model_id) "
                                        "WHERE method = 'ens' GROUP BY ALL ORDER BY ALL")
    assert len(ids) == 2 and rows == [("g1", 4), ("g2", 4)]
    # The two rows form one held-out scenario of the ensemble: one outcome per case.
    (n,) = query(tmp_path / "s.duckdb", "SELECT n_cases FROM suite_scores WHERE method = 'ens'")[0]
    assert n == 8
