"""A worker process that dies in the middle of sending a message: the fault that hung the multi-worker executor
when its workers shared one result queue (the dead worker's feeder thread held the queue's write lock).

Test-only, and process-level on purpose: it patches ``multiprocessing.connection.Connection`` itself, so it
reproduces the same fault on any version of the executor, whatever its channels. Active when this folder is on
PYTHONPATH (Python then imports this module at start-up, in every process, fork servers included) and
``BELUGA_DIE_MID_SEND=MARKER[,MARKER…]`` is set: for each MARKER, the first process other than a main process
to send a message of at least 1 KiB (a finished job's result; progress messages are ~100 bytes) while MARKER
does not exist creates MARKER, writes the message's length header and half of its bytes, and SIGKILLs itself.
(benchmarks/drills/run_drills.py uses it too, for its worker deaths while sending a result.)
"""

from __future__ import annotations

import os

_MARKERS = [m for m in os.environ.get("BELUGA_DIE_MID_SEND", "").split(",") if m]

if _MARKERS:
    import multiprocessing
    import signal
    import struct
    from multiprocessing.connection import Connection

    _send_bytes = Connection._send_bytes  # type: ignore[attr-defined]

    def _claim(marker: str) -> bool:
        try:
            os.close(os.open(marker, os.O_CREAT | os.O_EXCL | os.O_WRONLY))
        except FileExistsError:
            return False
        return True

    def _dying_send_bytes(self: Connection, buf: memoryview) -> None:
        if (len(buf) >= 1024 and multiprocessing.current_process().name != "MainProcess"
                and any(_claim(m) for m in _MARKERS)):
            self._send(struct.pack("!i", len(buf)) + bytes(buf[:len(buf) // 2]))  # type: ignore[attr-defined]
            os.kill(os.getpid(), signal.SIGKILL)
        _send_bytes(self, buf)

    Connection._send_bytes = _dying_send_bytes  # type: ignore[attr-defined]
