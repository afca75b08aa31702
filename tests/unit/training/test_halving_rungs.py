"""A successive-halving rung (``planning.halving``) stops a training at its epochs and keeps its state; the next rung
goes on from that state and ends bit for bit where one uninterrupted training of the largest budget does, for every
method that says what its state is; without the kept state the rung trains from the start, to the same weights."""

from __future__ import annotations

import math
from pathlib import Path

import pytest
import torch
from toys import ToyEncoder, ToyTask, tiny_bert, token_trainset

from beluga_core.config.executor_spec import CheckpointEvery
from beluga_core.contracts.methods import Method
from beluga_core.contracts.registries import METHODS
from beluga_core.training import checkpoint_file as ck_file
from beluga_core.training import checkpoints as ck
from beluga_core.training.loop import seed_everything, train_stage

CPU = torch.device("cpu")
HP = {"learning_rate": 1e-3, "batch_size": 4, "epochs": 3, "max_grad_norm": 1.0, "warmup_ratio": 0.2,
      "weight_decay": 0.01}
METHOD_NAMES = ["vanilla", "l2", "dropout", "lp", "fish", "group-dro", "irm"]

pytestmark = pytest.mark.usefixtures("one_thread")


def _method(name: str) -> Method:
    return METHODS.get(name)({"inner_steps": 2} if name == "fish" else {})


def _train(name: str, stop_epochs: float | None, at: ck.StageCheckpoints | None,
           model: torch.nn.Module | None = None) -> tuple[torch.nn.Module, int]:
    """One stage of the toy model from its fixed start, seeded as a job is; returns the model and the updates run."""
    seed_everything(7)
    model = model or tiny_bert(seed=1)
    method = _method(name)
    updates = 0
    original = method.update

    def counted(trainer: object, batches: list[object]) -> torch.Tensor:
        nonlocal updates
        updates += 1
        return original(trainer, batches)   # type: ignore[arg-type]

    method.update = counted  # type: ignore[method-assign]
    train_stage(ToyTask(), model, ToyEncoder(), CPU, token_trainset(n=24, envs=("a", "b", "c")), HP, method,
                seed=11, checkpoints=at, stop_epochs=stop_epochs)
    return model, updates


def _rung(job: str, folder: Path, keep: ck_file.FolderCheckpoints | None,
          resume: ck.Resume | None = None) -> ck.StageCheckpoints:
    checkpoints = ck.JobCheckpoints(ck_file.FolderCheckpoints(folder), job, CheckpointEvery("off"), CPU)
    return ck.StageCheckpoints(checkpoints, 0, 1, (0, 0, 0.0), resume, keep_to=keep)


@pytest.mark.parametrize("name", METHOD_NAMES)
def test_each_rung_goes_on_from_the_last_and_ends_where_one_training_does(name: str, tmp_path: Path) -> None:
    plain, n_plain = _train(name, None, None)
    rungs = ck_file.FolderCheckpoints(tmp_path / "rungs")
    _, n0 = _train(name, 1, _rung("rung-0", tmp_path / "c0", rungs))
    assert rungs.load("rung-0") is not None   # kept for the next rung
    own = ck.JobCheckpoints(ck_file.FolderCheckpoints(tmp_path / "c1"), "rung-1", CheckpointEvery("off"), CPU)
    resume = own.resume_rung(rungs, "rung-0", n_stages=1)
    assert resume is not None and resume.step == n0
    _, n1 = _train(name, 2, _rung("rung-1", tmp_path / "c1", rungs, resume))
    resume = own.resume_rung(rungs, "rung-1", n_stages=1)
    last, n2 = _train(name, 3, _rung("rung-2", tmp_path / "c2", None, resume))
    # Each rung ran only its own epochs' updates, and the three add up to the one training's.
    assert n0 > 0 and n1 > 0 and n2 > 0 and n0 + n1 + n2 == n_plain
    if name in ("vanilla", "l2", "dropout", "lp"):   # one batch per update: each epoch a third of the updates
        assert n0 == math.ceil(n_plain / 3) and n0 + n1 == math.ceil(2 * n_plain / 3)
    state, expected = last.state_dict(), plain.state_dict()
    assert all(torch.equal(state[k], expected[k]) for k in expected), name


def test_without_the_kept_state_a_rung_trains_from_the_start_to_the_same_weights(tmp_path: Path,
                                                                               caplog: pytest.LogCaptureFixture
                                                                               ) -> None:
    rungs = ck_file.FolderCheckpoints(tmp_path / "rungs")
    full, n_full = _train("vanilla", 2, None)   # the 3-epoch schedule, stopped after 2 epochs
    _train("vanilla", 1, _rung("rung-0", tmp_path / "c0", rungs))
    rungs.path("rung-0").write_bytes(b"cut short")
    own = ck.JobCheckpoints(ck_file.FolderCheckpoints(tmp_path / "c1"), "rung-1", CheckpointEvery("off"), CPU)
    assert own.resume_rung(rungs, "rung-0", n_stages=1) is None
    assert "trains from the start" in caplog.text
    again, n = _train("vanilla", 2, _rung("rung-1", tmp_path / "c1", None))
    assert n == n_full   # every update of its 2 epochs, none skipped
    assert all(torch.equal(again.state_dict()[k], v) for k, v in full.state_dict().items())
