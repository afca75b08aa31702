"""Checkpoints inside a job (``training.checkpoints``, its file ``training.checkpoint_file``): a stage resumed
from its checkpoint ends bit for bit where an uninterrupted one does, for every built-in method; bad checkpoints are
discarded with a warning and never loaded; the interval setting reads as documented.

The stages run through the real ``train_stage`` and method plugins on the toy BERT (dropout on, so the torch
generator's state matters); the end-to-end drill with killed processes is benchmarks/drills/bench_checkpoints.py.
"""

from __future__ import annotations

import logging
import os
import pickle
import random
import re
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest
import torch
from toys import ToyEncoder, ToyTask, tiny_bert, token_trainset

import beluga_core
from beluga_core.config.executor_spec import CheckpointEvery
from beluga_core.contracts.methods import Method
from beluga_core.contracts.registries import METHODS
from beluga_core.execution.worker import Worker
from beluga_core.training import checkpoint_file as ck_file
from beluga_core.training import checkpoint_interval as rule
from beluga_core.training import checkpoints as ck
from beluga_core.training.loop import TrainStats, seed_everything, train_stage

CPU = torch.device("cpu")


pytestmark = pytest.mark.usefixtures("one_thread")


HP = {"learning_rate": 1e-3, "batch_size": 4, "epochs": 2, "max_grad_norm": 1.0, "warmup_ratio": 0.2,
      "weight_decay": 0.01}
# Every built-in method whose jobs run on token inputs (reweight needs marked relation texts: its state is empty
# like vanilla's, and its steps replay as the test of the data order shows).
METHOD_NAMES = ["vanilla", "l2", "dropout", "lp", "fish", "group-dro", "irm", "distill", "lora", "ia3", "bitfit"]


class Stop(Exception):
    """Stands for the process being killed between two updates."""


def _job(tmp: Path, every: int | str = 2) -> ck.JobCheckpoints:
    return ck.JobCheckpoints(ck_file.FolderCheckpoints(tmp), "job-a", CheckpointEvery.parse(every), CPU)


def _stage(method_name: str, checkpoints: ck.JobCheckpoints | None, stop_at: int | None = None,
           resume: ck.Resume | None = None) -> tuple[dict[str, torch.Tensor], TrainStats, Method]:
    """Train the toy model one stage of ``method_name``: from a fixed start, seeded as a job is."""
    seed_everything(7)
    model = tiny_bert(seed=1)
    method = METHODS.get(method_name)({"inner_steps": 2} if method_name == "fish" else {})
    trainset = token_trainset(n=24, envs=("a", "b", "c"))

    def progress(step: int, n: int) -> None:
        if step == stop_at:
            raise Stop

    at = None if checkpoints is None else ck.StageCheckpoints(checkpoints, 0, 1, (0, 0, 0.0), resume)
    stats = train_stage(ToyTask(), model, ToyEncoder(), CPU, trainset, HP, method, seed=11, progress=progress,
                        checkpoints=at)
    return model.state_dict(), stats, method


@pytest.mark.parametrize("name", METHOD_NAMES)
def test_a_resumed_stage_ends_bit_for_bit_where_an_uninterrupted_one_does(name: str, tmp_path: Path) -> None:
    plain, plain_stats, _ = _stage(name, None)
    saving, saving_stats, _ = _stage(name, _job(tmp_path / "a"))   # saving a checkpoint changes nothing
    assert plain_stats.steps > 3
    with pytest.raises(Stop):
        _stage(name, _job(tmp_path / "b"), stop_at=3)
    job = _job(tmp_path / "b")
    resume = job.resume(n_stages=1)
    assert resume is not None and resume.step == 2   # the last save before the kill: every 2 steps
    resumed, stats, method = _stage(name, job, resume=resume)
    for state in (saving, resumed):
        assert state.keys() == plain.keys()
        assert all(torch.equal(state[k], plain[k]) for k in plain), name
    for s in (saving_stats, stats):
        assert (s.steps, s.examples) == (plain_stats.steps, plain_stats.examples)
        assert s.mean_loss == plain_stats.mean_loss   # the loss sum travels in the checkpoint
    if name == "group-dro":
        assert method.state_dict()["weights"].tolist() != [1 / 3] * 3   # the weights resumed, not restarted


def test_replaying_the_seeded_generator_gives_the_rest_of_the_original_order() -> None:
    trainset = token_trainset(n=40, envs=("a", "b", "c", "d", "e"))

    def order(method: Method, skip: int) -> list[list[tuple[Any, ...]]]:
        steps = iter(method.steps(trainset, random.Random(3), 4, 2.5))
        for _ in range(skip):
            next(steps)
        return [[tuple(b.inputs) for b in batches] for batches in steps]

    for name in ("vanilla", "fish", "group-dro", "irm"):
        method = METHODS.get(name)({"inner_steps": 2} if name == "fish" else {})
        full = order(method, 0)
        assert len(full) >= 4
        for k in (1, len(full) // 2, len(full) - 1):
            assert order(method, k) == full[k:], (name, k)


def _lp_ft(checkpoints: ck.JobCheckpoints | None, stop_at: tuple[str, int] | None = None,
           load: bool = True) -> tuple[dict[str, torch.Tensor], TrainStats, str | None]:
    """Train the toy model as a worker trains an lp-ft job: two stages, each with its own optimizer."""
    worker = object.__new__(Worker)   # the stage loop alone: no plan, task data or cache
    worker.device = CPU
    seed_everything(7)
    model = tiny_bert(seed=1)
    job = SimpleNamespace(id="job-a", training_key="job-a", seed=0,
                          hparams={**HP, "method": {"lp_epochs": 2, "ft_epochs": 2}})

    def progress(label: str, step: int, n: int) -> None:
        if (label, step) == stop_at:
            raise Stop

    stats, resumed = worker._train(job, ToyTask(), model, ToyEncoder(), token_trainset(n=32),  # type: ignore[arg-type]
                                   METHODS.get("lp-ft")(job.hparams["method"]), progress, checkpoints, load)
    return model.state_dict(), stats, resumed


@pytest.mark.parametrize("stop", [("train 1/2", 5), ("train 2/2", 3)])
def test_a_two_stage_job_resumes_in_the_stage_it_was_in(stop: tuple[str, int], tmp_path: Path) -> None:
    plain, plain_stats, _ = _lp_ft(None)
    with pytest.raises(Stop):
        _lp_ft(_job(tmp_path), stop_at=stop)
    resumed, stats, where = _lp_ft(_job(tmp_path))
    assert where == f"stage {stop[0][-3]} of 2, step {stop[1] - 1} of 16"
    assert all(torch.equal(resumed[k], plain[k]) for k in plain)
    assert (stats.steps, stats.examples, stats.mean_loss) == (plain_stats.steps, plain_stats.examples,
                                                              plain_stats.mean_loss)


def _blob(tmp: Path, job_id: str = "job-a") -> bytes:
    job = ck.JobCheckpoints(ck_file.FolderCheckpoints(tmp), job_id, CheckpointEvery.parse(2), CPU)
    with pytest.raises(Stop):
        _stage("group-dro", job, stop_at=3)
    return (tmp / f"{job_id}.safetensors").read_bytes()


def _tamper(tmp: Path, blob: bytes, caplog: pytest.LogCaptureFixture) -> str:
    """Put ``blob`` where job-a's checkpoint goes; return the warning its resume gave (it must give one and
    discard the file)."""
    folder = tmp / "bad"
    folder.mkdir(exist_ok=True)
    (folder / "job-a.safetensors").write_bytes(blob)
    with caplog.at_level(logging.WARNING, logger="beluga.checkpoints"):
        caplog.clear()
        assert _job(folder).resume(n_stages=1) is None
    assert not (folder / "job-a.safetensors").exists()   # discarded: the next save starts clean
    (message,) = [r.getMessage() for r in caplog.records]
    assert "discarded" in message and "starts over" in message
    return message


def test_bad_checkpoints_are_discarded_with_a_warning(tmp_path: Path, caplog: pytest.LogCaptureFixture,
                                                      monkeypatch: pytest.MonkeyPatch) -> None:
    good = _blob(tmp_path)
    assert "cut short" in _tamper(tmp_path, good[: len(good) // 2], caplog)
    assert "cut short" in _tamper(tmp_path, good[:5], caplog)
    altered = bytearray(good)
    altered[-10] ^= 0xFF   # a bit flipped in the last tensor's bytes
    assert "altered" in _tamper(tmp_path, bytes(altered), caplog)
    other = _blob(tmp_path / "other", job_id="job-b")
    assert "written by job job-b" in _tamper(tmp_path, other, caplog)
    monkeypatch.setattr(beluga_core, "__version__", "0.0.1")
    old = _blob(tmp_path / "old")
    monkeypatch.undo()
    assert "written by beluga 0.0.1" in _tamper(tmp_path, old, caplog)


class _Hostile:
    """Unpickling this creates a file: what loading an arbitrary pickle would let a checkpoint do."""

    def __init__(self, marker: Path) -> None:
        self.marker = marker

    def __reduce__(self) -> tuple[Any, ...]:
        return (os.system, (f"touch {self.marker}",))


def test_a_hostile_pickle_is_discarded_and_never_executed(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    marker = tmp_path / "pwned"
    payload = pickle.dumps(_Hostile(marker))
    for blob in (payload, _torch_saved(_Hostile(marker), tmp_path)):
        _tamper(tmp_path, blob, caplog)
        assert not marker.exists()


def _torch_saved(obj: Any, tmp: Path) -> bytes:
    path = tmp / "hostile.pt"
    torch.save({"model": obj}, path)
    return path.read_bytes()


def test_a_checkpoint_that_does_not_fit_the_stage_restarts_it(tmp_path: Path,
                                                              caplog: pytest.LogCaptureFixture) -> None:
    """A checkpoint of the right job and version whose stage differs (the config's epochs changed) is caught
    when the stage is built, before anything is loaded."""
    _blob(tmp_path)
    job = _job(tmp_path)
    resume = job.resume(n_stages=1)
    assert resume is not None
    model, method = tiny_bert(seed=1), METHODS.get("group-dro")()
    from beluga_core.training.loop import Trainer

    trainer = Trainer(ToyTask(), model, ToyEncoder(), CPU, HP, 99, method)
    before = {k: v.clone() for k, v in model.state_dict().items()}
    with pytest.raises(ck_file.CheckpointRejected, match=r"its stage has \d+ steps, this one 99"):
        resume.check_fits(model, trainer.optimizer, 99)
    assert all(torch.equal(before[k], v) for k, v in model.state_dict().items())


@pytest.mark.parametrize(("text", "mode", "every"), [
    (500, "steps", 500), ("500 steps", "steps", 500), ("1 step", "steps", 1), ("90 s", "seconds", 90),
    ("90s", "seconds", 90), ("5 min", "seconds", 300), ("1.5 h", "seconds", 5400), ("auto", "auto", 0),
    ("OFF", "off", 0)])
def test_the_interval_reads_steps_times_auto_and_off(text: str | int, mode: str, every: float) -> None:
    parsed = CheckpointEvery.parse(text)
    assert (parsed.mode, parsed.every) == (mode, every)
    assert CheckpointEvery.parse(str(parsed)) == parsed   # the config keeps the canonical text


@pytest.mark.parametrize("bad", [0, -3, True, "2.5 steps", "5 parsecs", "every minute", "0 s"])
def test_a_bad_interval_is_refused(bad: Any) -> None:
    with pytest.raises(ValueError):
        CheckpointEvery.parse(bad)


def test_auto_saves_every_5_percent_but_at_most_once_per_50_saves_and_never_under_a_minute() -> None:
    assert rule.auto_interval(1000.0, 0.1) == 50.0      # 5 % of 1000 s
    assert rule.auto_interval(1000.0, 2.0) == 100.0     # 50 × a 2-s save
    assert rule.describe_interval(CheckpointEvery.parse("auto"), 59.0) == "off (expected < 1 min)"
    assert rule.describe_interval(CheckpointEvery.parse("auto"), 1200.0) == "every ≈ 60 s (5 % of ≈ 20 min)"
    assert rule.describe_interval(CheckpointEvery.parse(200), None) == "every 200 steps"


def test_methods_say_what_their_state_is_or_train_without_checkpoints() -> None:
    assert all(METHODS.get(n).checkpointable() for n in [*METHOD_NAMES, "reweight", "lp-ft"])

    class Unknown(Method):
        def update(self, trainer: Any, batches: Any) -> torch.Tensor:
            return torch.zeros(())

    assert not Unknown.checkpointable() and Unknown().state_dict() is None


def test_the_dry_run_shows_each_jobs_interval_and_the_disk_checkpoints_take(
        capsys: pytest.CaptureFixture[str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from helpers import DATA, config_with, run_cli

    from beluga_core.training.methods.vanilla import Vanilla

    monkeypatch.setenv("COLUMNS", "200")
    config = config_with(DATA / "tiny-sentiment.toml", tmp_path,
                         {'name = "local"\n': 'name = "local"\ncheckpoint_every = "30 s"\n'})
    code, out, _ = run_cli(capsys, "run", config, "--dry-run")
    assert code == 0, out
    assert re.search(r"iid-then-t\s+│\s+vanilla\s+│\s+\d+\s+│\s+every 30 s", out), out
    out = " ".join(out.split())   # a table's title wraps at the table's width
    assert 'checkpoints inside a job ([executor] checkpoint_every = "30 s")' in out
    # The toy BERT: 2.06M parameters (1.95M of them the word embeddings), 12 bytes each: weights and AdamW's moments
    assert re.search(r"checkpoints: ≈ 23\.\d MiB each \(2\.1M parameters", out), out
    monkeypatch.setattr(Vanilla, "state_attributes", None)   # a method that does not say what its state is
    code, out, _ = run_cli(capsys, "run", config, "--dry-run")
    assert "off: method vanilla does not say what its state is" in " ".join(out.split())


def test_store_info_lists_the_checkpoints_in_flight(tmp_path: Path, capsys: pytest.CaptureFixture[str],
                                                    monkeypatch: pytest.MonkeyPatch) -> None:
    from helpers import run_cli

    from beluga_core.store.writer import StoreWriter

    store = tmp_path / "s.duckdb"
    StoreWriter(store)
    blob = _blob(tmp_path / "blob", job_id="0123456789abcdef")
    folder = ck_file.checkpoint_folder(tmp_path / "s.duckdb.cache")
    folder.mkdir(parents=True)
    (folder / "0123456789abcdef.safetensors").write_bytes(blob)
    (folder / "fedcba9876543210.safetensors").write_bytes(blob[:100])
    (folder / "aaaaaaaaaaaaaaaa.safetensors").write_bytes(blob[:-100])   # its header whole, its tensors cut
    monkeypatch.setenv("COLUMNS", "200")
    code, out, _ = run_cli(capsys, "store", "info", store)
    assert code == 0, out
    assert "checkpoints in flight: 3" in out
    assert re.search(r"0123456789ab: step 2 of \d+, [\d.]+ KiB, written 20\d\d-", out), out
    out = " ".join(out.split())
    assert "fedcba987654: unusable, the next run discards it: not a safetensors file, or cut short" in out
    assert f"aaaaaaaaaaaa: unusable, the next run discards it: cut short ({len(blob) - 100:,} of {len(blob):,}" in out


@pytest.mark.parametrize(("value", "says"), [
    ("true", 'not true / false (for no checkpoints: "off")'), ("false", "not true / false"),
    ("0", 'must be ≥ 1 (for no checkpoints: "off")'), ("1.5", 'a time ("90 s", "5 min"), "auto" or "off"'),
    ('"5 parsecs"', "unknown unit 'parsecs': use steps, s, min or h")])
def test_a_bad_interval_in_a_config_names_the_field_and_what_it_takes(value: str, says: str, tmp_path: Path) -> None:
    from beluga_core.config.load import parse_config
    from beluga_core.core.errors import BelugaError

    text = f'name = "t"\n[[tasks]]\nname = "sentiment"\nsuite = "builtin:sentiment"\niid = "builtin:sst2"\n' \
           f"[executor]\ncheckpoint_every = {value}\n"
    with pytest.raises(BelugaError) as err:
        parse_config(text, tmp_path / "t.toml")
    assert err.value.field == "executor.checkpoint_every" and says in str(err.value), str(err.value)


def test_a_save_killed_mid_write_leaves_nothing_behind_once_the_job_saves_again(tmp_path: Path) -> None:
    store = ck_file.FolderCheckpoints(tmp_path)
    dead = tmp_path / ".job-a.safetensors.x1y2z3.tmp"   # what a SIGKILL in the middle of atomic_write leaves
    dead.write_bytes(b"half a checkpoint")
    other = tmp_path / ".job-b.safetensors.q9w8e7.tmp"   # another job's save, maybe in progress: not touched
    other.write_bytes(b"")
    store.save("job-a", b"new")
    assert not dead.exists() and other.exists() and (tmp_path / "job-a.safetensors").read_bytes() == b"new"
    dead.write_bytes(b"")
    store.discard("job-a")
    assert sorted(p.name for p in tmp_path.iterdir()) == [other.name]


def test_a_save_says_when_it_takes_the_state_before_building_it(tmp_path: Path,
                                                                caplog: pytest.LogCaptureFixture) -> None:
    # The fold drill reads this line's time to tell the training a kill loses from the save's own time.
    job = _job(tmp_path)
    said: list[str] = []

    def blob() -> bytes:
        said.extend(r.getMessage() for r in caplog.records)
        return b"state"

    with caplog.at_level(logging.DEBUG, logger="beluga.checkpoints"):
        job.save(blob)
    assert said == ["job job-a: checkpoint 1: taking the state"]
    assert caplog.records[-1].getMessage().startswith("job job-a: checkpoint 1 saved (5 bytes,")


def test_a_bad_log_level_is_refused_naming_the_variable(capsys: pytest.CaptureFixture[str],
                                                        monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("BELUGA_LOG_LEVEL", "loud")
    from helpers import run_cli

    code, _, err = run_cli(capsys, "plugins", "list")
    assert code == 2 and "BELUGA_LOG_LEVEL='loud': expected one of DEBUG" in err


def test_a_time_interval_saves_before_a_long_step_would_carry_training_past_it(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # Batches padded to their longest input: every fourth step takes 0.8 s, the others 0.2 s; a save takes 1 s.
    clock = [100.0]
    monkeypatch.setattr(ck.time, "perf_counter", lambda: clock[0])
    job = _job(tmp_path, "3 s")
    job.stage_started(0.0)

    def blob() -> bytes:
        clock[0] += 1.0
        return b"state"

    trained, longest, saves = 0.0, 0.0, 0
    for step in range(1, 200):
        step_s = 0.8 if step % 4 == 0 else 0.2
        clock[0] += step_s
        trained += step_s
        longest = max(longest, trained)   # what a kill right now would lose
        if job.due(step, 200):
            job.save(blob)
            trained, saves = 0.0, saves + 1
    assert longest <= 3.0 + 1e-9 and saves >= 20   # 69 s of training, a save every 2.2-3 s, never past 3
