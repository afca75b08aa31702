"""The dispatch loop every executor shares: order, retries, failures and progress, on a scripted backend.

The backend here runs nothing: each job's fate (finish, raise, lose its worker n times) is scripted, so every
rule of ``scheduling.dispatch`` is checked exactly and in milliseconds. The real backends are run end to end,
with real worker deaths, in tests/e2e/test_executors.py.
"""

from __future__ import annotations

from typing import Any

import pytest

from beluga_core.api.executors import Backend, BelugaError, Event, Failed, Finished, Job, Lost, StepFn
from beluga_core.execution.results import JobResult
from beluga_core.execution.scheduling import JobFailure, JobsFailed, dispatch
from beluga_core.planning.jobs import Fold


def job(jid: str, parent: str | None = None) -> Job:
    return Job(task="t", config="iid" if parent is None else "iid-then-t", method="vanilla", seed=0,
               fold=Fold("standard", None, (), ()), parent_id=parent, score_iid=False, model="m", id=jid,
               hparams={})


def result(jid: str) -> Any:
    return f"result of {jid}"  # the loop passes results through untouched


class Scripted(Backend):
    """``slots`` jobs at a time; ``fate[job id]`` is a list of what happens on each attempt: "ok", "raise" or
    "lost". Records the order of submissions and of every event."""

    def __init__(self, slots: int, fate: dict[str, list[str]]) -> None:
        self.slots = slots
        self.fate = {k: list(v) for k, v in fate.items()}
        self.running: list[Job] = []
        self.submitted: list[str] = []
        self.closed = False

    def idle(self) -> int:
        return self.slots - len(self.running)

    def submit(self, job: Job) -> None:
        self.submitted.append(job.id)
        self.running.append(job)

    def events(self, step: StepFn) -> list[Event]:
        job = self.running.pop(0)
        step(job, "train", 1, 1)
        what = self.fate.get(job.id, ["ok"]).pop(0) if self.fate.get(job.id) else "ok"
        if what == "ok":
            return [Finished(job, result(job.id))]
        if what == "raise":
            return [Failed(job, f"Traceback: {job.id} raised\nRuntimeError: {job.id} broke\n")]
        return [Lost(job, "its worker process was killed by SIGKILL", worker="pid 7")]

    def close(self) -> None:
        self.closed = True


class Recorder:
    def __init__(self) -> None:
        self.log: list[tuple[str, ...]] = []

    def job_started(self, job: Job) -> None:
        self.log.append(("started", job.id))

    def job_step(self, job: Job, phase: str, step: int, total: int) -> None:
        self.log.append(("step", job.id))

    def job_finished(self, job: Job) -> None:
        self.log.append(("finished", job.id))

    def job_retried(self, job: Job, attempt: int, why: str) -> None:
        self.log.append(("retried", job.id, str(attempt), why))


def run(backend: Scripted, jobs: list[Job], max_retries: int = 2) -> tuple[list[JobResult], Recorder]:
    results: list[JobResult] = []
    progress = Recorder()
    dispatch(backend, jobs, results.append, progress, max_retries)
    return results, progress


def test_with_critical_path_the_longest_chain_starts_first() -> None:
    # p1 ← a; p2 ← b ← g. Today's order: the parents in plan order (p1, p2, b), then a, g. By chain (unit costs):
    # p2 heads 3 jobs, p1 and b 2, a and g 1.
    jobs = [job("p1"), job("a", "p1"), job("p2"), job("b", "p2"), job("g", "b")]
    plain, critical = Scripted(slots=2, fate={}), Scripted(slots=2, fate={})
    run(plain, jobs)
    dispatch(critical, jobs, lambda r: None, Recorder(), 2, critical_path=lambda j: 1.0)
    assert plain.submitted == ["p1", "p2", "a", "b", "g"]
    assert critical.submitted == ["p2", "p1", "b", "a", "g"]


def test_parents_run_before_the_jobs_that_start_from_them() -> None:
    jobs = [job("child-1", "parent"), job("other"), job("parent"), job("child-2", "parent")]
    backend = Scripted(slots=2, fate={})
    results, progress = run(backend, jobs)
    # The parent goes first; "other" needs no parent and shares its slot time; the children wait for it.
    assert backend.submitted[:2] == ["parent", "other"]
    assert set(backend.submitted[2:]) == {"child-1", "child-2"}
    assert sorted(results) == sorted(result(j.id) for j in jobs)
    assert [e for e in progress.log if e[0] == "finished"] == [("finished", j) for j in backend.submitted]


def test_a_lost_job_is_retried_first_and_counted() -> None:
    jobs = [job("a"), job("b"), job("c")]
    backend = Scripted(slots=1, fate={"a": ["lost", "lost", "ok"]})
    results, progress = run(backend, jobs, max_retries=2)
    assert backend.submitted == ["a", "a", "a", "b", "c"]
    assert len(results) == 3
    retried = [e for e in progress.log if e[0] == "retried"]
    assert retried == [("retried", "a", "2", "its worker process was killed by SIGKILL"),
                       ("retried", "a", "3", "its worker process was killed by SIGKILL")]


def test_a_job_lost_more_often_than_max_retries_fails_naming_it() -> None:
    backend = Scripted(slots=1, fate={"a": ["lost", "lost"]})
    failures: list[JobFailure] = []
    results: list[JobResult] = []
    with pytest.raises(JobsFailed, match=r"job a .*\(iid/vanilla/standard, seed 0\) failed after 2 attempt\(s\) "
                                         r"on pid 7: WorkerLost: lost its worker 2 times .*SIGKILL"):
        dispatch(backend, [job("a"), job("b")], results.append, Recorder(), 1, failures.append)
    assert [(f.job.id, f.error_type, f.attempts, f.worker) for f in failures] == [("a", "WorkerLost", 2, "pid 7")]
    assert results == [result("b")]  # the other job still ran
    assert JobsFailed("").exit_code == 1


def test_a_failing_job_is_recorded_and_the_jobs_that_do_not_need_it_go_on() -> None:
    jobs = [job("a"), job("b"), job("child", "a"), job("grandchild", "child"), job("c")]
    backend = Scripted(slots=2, fate={"a": ["raise"]})
    results: list[JobResult] = []
    failures: list[JobFailure] = []
    with pytest.raises(JobsFailed) as caught:
        dispatch(backend, jobs, results.append, Recorder(), 2, failures.append)
    # a raised once (a raising job is not retried); the jobs that start from it (transitively) never ran.
    assert backend.submitted == ["a", "b", "c"]
    assert results == [result("b"), result("c")]
    (f,) = failures
    assert (f.job.id, f.error_type, f.message, f.attempts, f.traceback) == (
        "a", "RuntimeError", "a broke", 1, "Traceback: a raised\nRuntimeError: a broke")
    assert f.started_at <= f.finished_at
    text = str(caught.value)
    assert "1 job(s) failed" in text and "RuntimeError: a broke" in text
    assert "2 job(s) that start from a failed one did not run" in text


def test_fail_fast_stops_starting_jobs_after_the_first_failure() -> None:
    jobs = [job("a"), job("b"), job("c")]
    backend = Scripted(slots=2, fate={"a": ["raise"]})
    results: list[JobResult] = []
    with pytest.raises(JobsFailed, match=r"1 job\(s\) did not start \(\[executor\] fail_fast\)"):
        dispatch(backend, jobs, results.append, Recorder(), 2, fail_fast=True)
    # b was running beside a: its result is kept; c never started.
    assert results == [result("b")] and backend.submitted == ["a", "b"]


def test_a_failure_with_its_exception_at_hand_names_its_class_and_message() -> None:
    error = BelugaError("the suite names no such loss")

    class Raising(Scripted):
        def events(self, step: StepFn) -> list[Event]:
            return [Failed(self.running.pop(0), "Traceback…", error, worker="here")]

    failures: list[JobFailure] = []
    with pytest.raises(JobsFailed, match="BelugaError: the suite names no such loss"):
        dispatch(Raising(slots=1, fate={}), [job("a")], lambda r: None, Recorder(), 2, failures.append)
    assert (failures[0].error_type, failures[0].message, failures[0].worker) == (
        "BelugaError", "the suite names no such loss", "here")


def test_the_failure_summary_names_the_held_out_group() -> None:
    held = Job(task="t", config="iid-then-t", method="sam", seed=3, fold=Fold("class", "Negation", (), ()),
               parent_id=None, score_iid=False, model="m", id="f" * 20, hparams={})
    with pytest.raises(JobsFailed, match=r"iid-then-t/sam/class=Negation, seed 3"):
        run(Scripted(slots=1, fate={held.id: ["raise"]}), [held])


def test_jobs_that_can_never_start_are_reported_not_waited_for() -> None:
    with pytest.raises(BelugaError, match="waiting for parents that are neither done nor scheduled: a, b"):
        run(Scripted(slots=1, fate={}), [job("a", "b"), job("b", "a")])


def test_the_backend_is_closed_by_executors_also_after_an_error(tmp_path: Any) -> None:
    from beluga_core.api.executors import Executor, ExecutorSpec, Slot, Workers

    backend = Scripted(slots=1, fate={"a": ["lost"]})

    class Once(Executor):
        def size_workers(self, plan: Any) -> Workers:
            return Workers((Slot("cpu", 1),), "one job at a time")   # so no job is weighed: there is no plan

        def open(self, plan: Any, jobs: Any, cache_dir: Any) -> Backend:
            return backend

    with pytest.raises(JobsFailed, match="lost its worker 1 times"):
        Once(ExecutorSpec(options={"max_retries": 0})).run(None, [job("a")], lambda r: None,  # type: ignore[arg-type]
                                                           Recorder(), str(tmp_path))
    assert backend.closed


@pytest.mark.parametrize(("value", "message"), [
    ("two", "field 'executor.options.max_retries': Input should be a valid integer \\(got 'two'\\)"),
    (-1, "field 'executor.options.max_retries': Input should be greater than or equal to 0 \\(got -1\\)")])
def test_max_retries_must_be_a_count(value: Any, message: str) -> None:
    from beluga_core.api.executors import Executor, ExecutorSpec

    class Any_(Executor):
        def open(self, plan: Any, jobs: Any, cache_dir: Any) -> Backend:
            raise AssertionError

    with pytest.raises(BelugaError, match=message):
        Any_(ExecutorSpec(options={"max_retries": value}))


def test_a_pack_member_retried_alone_trains_as_a_pack_of_one() -> None:
    """Its checkpoints were taken in a pack: alone it would not resume from them (its pack's model is not a
    sequential one), so a member whose mates finished goes back to the backend as a pack, even of one."""
    from beluga_core.planning.pack_groups import Packs

    class Packing(Scripted):
        packs = True

        def __init__(self) -> None:
            super().__init__(1, {})
            self.calls: list[tuple[str, ...]] = []
            self.lost_once = True

        def submit(self, job: Job) -> None:
            self.calls.append(("alone", job.id))
            super().submit(job)

        def submit_pack(self, jobs: Any, pack: dict[str, object]) -> None:
            self.calls.append(("pack", *[j.id for j in jobs]))
            self.running.extend(jobs)

        def events(self, step: StepFn) -> list[Event]:
            first = self.running.pop(0)
            if first.id == "a" and self.running and self.lost_once:   # a finishes; the pack's worker dies with b
                self.lost_once = False
                lost = self.running.pop(0)
                return [Finished(first, result("a")), Lost(lost, "its worker process was killed by SIGKILL")]
            return [Finished(first, result(first.id))]

    backend = Packing()
    results: list[JobResult] = []
    dispatch(backend, [job("a"), job("b"), job("c")], results.append, Recorder(), 2,
             packs=Packs(2, {"a": ("a", "b"), "b": ("a", "b")}), pack_setting=2)
    assert backend.calls == [("pack", "a", "b"), ("pack", "b"), ("alone", "c")]
    assert len(results) == 3
