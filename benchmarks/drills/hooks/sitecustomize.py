"""Drill-only: kill beluga's coordinator inside a store commit (benchmarks/drills/run_drills.py).

Active when this folder is on PYTHONPATH (Python imports this module at start-up) and
``BELUGA_DRILL_DIE_IN_COMMIT_AFTER=SECONDS`` is set: the first model commit that starts at least SECONDS after
the process started creates the file ``BELUGA_DRILL_COMMIT_FLAG`` and SIGKILLs the process after the model's row
and its i.i.d. rows are written and before its outcomes and the COMMIT — an open transaction, which DuckDB must
discard on the next open.
"""

from __future__ import annotations

import os
import time

_AFTER = os.environ.get("BELUGA_DRILL_DIE_IN_COMMIT_AFTER")

if _AFTER:
    import signal
    from pathlib import Path
    from typing import Any

    from beluga_core.store import writer

    _START = time.monotonic()
    _AFTER_S = float(_AFTER)
    _insert_outcomes = writer.StoreWriter._insert_outcomes

    def _dying(self: writer.StoreWriter, *args: Any, **kwargs: Any) -> Any:
        if time.monotonic() - _START >= _AFTER_S:
            Path(os.environ["BELUGA_DRILL_COMMIT_FLAG"]).touch()
            os.kill(os.getpid(), signal.SIGKILL)
        return _insert_outcomes(self, *args, **kwargs)

    writer.StoreWriter._insert_outcomes = _dying  # type: ignore[method-assign]
