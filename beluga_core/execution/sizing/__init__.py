"""How many jobs run at once, and where: workers sized to the machine (``[executor] workers``).

A number keeps its meaning: that many workers (on GPUs, 1 means one per GPU, ``options.folds_per_gpu`` per GPU).
``"auto"``, the default, keeps a CPU run as it was (one worker using every core) and on GPUs runs as many
workers per GPU as the host's cores and the GPU's free memory allow: one small fold leaves a GPU nearly idle (an
H200 busy 8 % of the time in the quick run) while folds side by side scale almost linearly (7.6× at 8 folds on
one H200; issue 40 has the table).

The memory one worker takes is measured by a probe: one forward and backward pass and one AdamW step of the plan's
largest model at its largest batch size and ``max_length`` tokens (the worst a training batch can be), in a
spawned process. The coordinator so never holds a CUDA context, which would take memory on a GPU that the sizing
counted free for the whole run. The probe's peak is what its caching allocator reserved; a worker also holds a
CUDA context that no allocator statistic sees, added as ``CONTEXT_BYTES``. Where the step fails (a GPU already
full, a model that does not build on it) the memory is estimated from the model's shape
(``estimated_worker_bytes``); where not even the model's config can be read here, auto runs one worker per GPU.

The pack size (``[executor] pack = "auto"``) is sized here too, from a probe of its own (a pack's step at one and
two members; ``PER_MEMBER`` says what a member's figure is): the same free memory, margin and probe process as
the workers'. Its result is kept in the user's cache folder, keyed by everything it depends on (``probe_key``), so
that a second dry run does not measure again (``BELUGA_PROBE_CACHE=refresh`` measures again).

The modules, by what they size: ``workers`` (how many workers, where), ``worker_probe`` (the memory one takes on a
GPU), ``pack_size`` (members per pack), ``pack_probe`` (the memory a pack and a member take, and its cache), over
``memory`` (units, the margin, the CUDA context's allowance). The executors import what they use from here.
"""

from beluga_core.execution.sizing.memory import (
    CONTEXT_BYTES,
    DEFAULT_MARGIN,
    GiB,
    MemoryUnknown,
    MiB,
    NothingToMeasure,
    memory_margin,
)
from beluga_core.execution.sizing.pack_probe import PROBE_CACHE_ENV, pack_memory, probe_key
from beluga_core.execution.sizing.pack_size import PER_MEMBER, PackMemory, PackSize, members_fit, plan_pack_size
from beluga_core.execution.sizing.worker_probe import estimated_worker_bytes, gpu_worker_memory, probe_shape
from beluga_core.execution.sizing.workers import (
    Slot,
    WorkerMemory,
    Workers,
    cpu_budget,
    interleave,
    plan_workers,
    workers_per_gpu,
)

__all__ = ["CONTEXT_BYTES", "DEFAULT_MARGIN", "PER_MEMBER", "PROBE_CACHE_ENV", "GiB", "MemoryUnknown", "MiB",
           "NothingToMeasure", "PackMemory", "PackSize", "Slot", "WorkerMemory", "Workers", "cpu_budget",
           "estimated_worker_bytes", "gpu_worker_memory", "interleave", "members_fit", "memory_margin",
           "pack_memory", "plan_pack_size", "plan_workers", "probe_key", "probe_shape", "workers_per_gpu"]
