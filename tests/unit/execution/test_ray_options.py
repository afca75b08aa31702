"""The Ray executor's options and cluster connection fail as config errors (exit 2, the field named), never as
Ray's tracebacks: found by a new user's trial (a wrong address ended in a 22-frame traceback, exit 1)."""

from __future__ import annotations

import importlib.util
from typing import Any

import pytest

from beluga_core.config.executor_spec import ExecutorSpec
from beluga_core.core.errors import BelugaError
from beluga_core.execution.executors.base import check_executor_options

pytestmark = pytest.mark.skipif(importlib.util.find_spec("ray") is None, reason="Ray is not installed (an extra)")


def test_local_sizes_with_an_address_are_refused_not_ignored() -> None:
    with pytest.raises(BelugaError, match="num_cpus and num_gpus size a local Ray started for the run; with address"):
        check_executor_options(ExecutorSpec(name="ray", options={"address": "auto", "num_cpus": 2, "num_gpus": 1}))
    check_executor_options(ExecutorSpec(name="ray", options={"num_cpus": 2}))


@pytest.mark.parametrize(("address", "hint"), [
    ("ray://head:10001", "ray:// addresses need Ray Client: pip install 'ray[client]'"),
    ("auto", "\"auto\" joins a cluster started on this machine with `ray start --head`"),
    ("10.0.0.1:6379", "")])
def test_a_cluster_that_cannot_be_joined_is_a_config_error(address: str, hint: str,
                                                            monkeypatch: pytest.MonkeyPatch) -> None:
    import ray

    from beluga_core.execution.executors.ray import RayExecutor

    def refuse(**kwargs: Any) -> None:
        raise ConnectionError(f"Failed to connect to Ray cluster at {kwargs['address']}")

    monkeypatch.setattr(ray, "is_initialized", lambda: False)
    monkeypatch.setattr(ray, "init", refuse)
    with pytest.raises(BelugaError) as caught:
        RayExecutor(ExecutorSpec(name="ray", options={"address": address}))._session()
    assert caught.value.field == "executor.options.address"
    assert f"cannot start or join the Ray cluster at {address!r}" in caught.value.message
    assert hint in caught.value.message and "ConnectionError: Failed to connect" in caught.value.message
