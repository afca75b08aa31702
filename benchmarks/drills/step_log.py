"""The multi-node drill's worker (``[executor.options] worker = "benchmarks.drills.step_log:StepLogWorker"``): a beluga
``Worker`` that appends one JSON line per training step to ``$BELUGA_STEP_LOG`` (its job, process, Ray node and
step), so that the drill counts the steps a killed node's fold had trained when it died. Drill-only: it changes no
result."""

from __future__ import annotations

import json
import os
import time

from beluga_core.execution.results import JobResult
from beluga_core.execution.worker import ProgressFn, Worker
from beluga_core.planning.jobs import Job

LOG_ENV = "BELUGA_STEP_LOG"


class StepLogWorker(Worker):
    def run(self, job: Job, progress: ProgressFn | None = None) -> JobResult:
        import ray

        node = ray.get_runtime_context().get_node_id() if ray.is_initialized() else "local"
        path = os.environ.get(LOG_ENV)

        def logged(phase: str, step: int, total: int) -> None:
            if path and phase.startswith("train"):
                line = {"job": job.id, "pid": os.getpid(), "node": node, "step": step, "total": total,
                        "t": time.time()}
                with open(path, "a", encoding="utf-8") as f:
                    f.write(json.dumps(line) + "\n")
            if progress is not None:
                progress(phase, step, total)

        return super().run(job, logged)
