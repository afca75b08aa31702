"""[model] config_overrides: the values reach every model of the run (under a method's own settings), are
part of the jobs' identity, and keep the pretrained weights of what they keep."""

from __future__ import annotations

from pathlib import Path

import pytest
import torch

from beluga_core.config.load import parse_config
from beluga_core.execution.worker import Worker
from beluga_core.planning.plan import build_plan
from beluga_core.training.models import load_sequence_classifier

CONFIG = """name = "t"
configurations = ["iid", "iid-then-t"]
scenarios = ["standard", "seen"]
[model]
name = "embedded:minilm"
{overrides}
[[tasks]]
name = "sentiment"
suite = "builtin:sst2-phenomena"
iid = "builtin:sst2"
"""


@pytest.fixture(scope="module")
def full_depth() -> torch.nn.Module:
    return load_sequence_classifier("embedded:minilm", 2)


def test_truncated_encoder_keeps_the_first_pretrained_layers(full_depth: torch.nn.Module) -> None:
    model = load_sequence_classifier("embedded:minilm", 2, config_overrides={"num_hidden_layers": 2})
    assert model.config.num_hidden_layers == 2 and len(model.bert.encoder.layer) == 2
    assert len(full_depth.bert.encoder.layer) == 6
    kept = model.state_dict()
    for name, value in full_depth.state_dict().items():
        if ".layer." in name and int(name.split(".layer.")[1].split(".")[0]) >= 2:
            assert name not in kept
        else:  # embeddings, layers 0-1, pooler and the seeded head: the same weights
            assert torch.equal(kept[name], value), name


def test_a_methods_own_settings_win_over_the_config_overrides() -> None:
    model = load_sequence_classifier("embedded:minilm", 2, dropout=0.3,
                                     config_overrides={"hidden_dropout_prob": 0.2, "num_hidden_layers": 1})
    assert model.config.hidden_dropout_prob == 0.3 and model.config.num_hidden_layers == 1


def test_overrides_reach_the_workers_models_and_the_job_ids(tmp_path: Path) -> None:
    path = tmp_path / "t.toml"
    plain = build_plan(parse_config(CONFIG.format(overrides=""), path), path)
    text = CONFIG.format(overrides="config_overrides = { num_hidden_layers = 2 }")
    truncated = build_plan(parse_config(text, path), path)
    assert len(truncated.jobs) == len(plain.jobs) > 0
    assert {j.id for j in truncated.jobs}.isdisjoint({j.id for j in plain.jobs})
    worker = Worker(truncated.for_workers(), device="cpu")
    task = worker.tasks["sentiment"].task
    job = truncated.jobs[0]
    assert worker.model(task, job.model, {}).config.num_hidden_layers == 2
    assert worker.model(task, job.model, {"dropout": 0.3}).config.num_hidden_layers == 2


def test_building_a_model_leaves_every_generator_as_it_was(monkeypatch: pytest.MonkeyPatch) -> None:
    """The head's initialisation follows ``seed`` alone, and a build in the middle of a job neither draws from
    nor re-seeds the job's generators: not the CPU one, and not CUDA's, which torch.manual_seed would re-seed
    (found on a GPU, where the job that built the model trained with other dropout masks than one reusing it)."""
    cuda_seeds: list[int] = []
    monkeypatch.setattr(torch.cuda, "manual_seed_all", cuda_seeds.append)
    torch.manual_seed(123)
    cuda_seeds.clear()
    before = torch.get_rng_state()
    heads = [load_sequence_classifier("embedded:minilm", 2, seed=s, config_overrides={"num_hidden_layers": 1})
             .classifier.weight for s in (7, 7, 8)]
    assert torch.equal(torch.get_rng_state(), before) and cuda_seeds == []
    assert torch.equal(heads[0], heads[1]) and not torch.equal(heads[0], heads[2])
