"""What a run checks before anything trains, and its dry run shows: each method fits the run's models (what part
of them it trains), and each hub model or dataset the run names is at hand or downloadable now."""

from __future__ import annotations

import copy
from dataclasses import dataclass
from pathlib import Path

from beluga_core.config.load import with_config_line
from beluga_core.contracts.registries import METHODS
from beluga_core.core.errors import BelugaError
from beluga_core.data.availability import hub_status, iid_availability, model_availability, unreachable_hub_names
from beluga_core.planning.grid_space import method_hparams
from beluga_core.planning.plan import Plan
from beluga_core.training.models import meta_classifier

# Per model of the run and method: (parameters it trains, parameters of the model).
Footprints = dict[str, dict[str, tuple[int, int]]]


@dataclass(frozen=True)
class HubName:
    """A task's i.i.d. data or model: where it comes from, and what a run does with it."""

    field: str        # the config field that names it
    what: str         # "i.i.d. data" or "model"
    name: str
    ok: bool          # available now
    how: str
    status: str | None   # a hub name's "cached" / "will download …"; None for anything else


def hub_names(plan: Plan, index: int) -> list[HubName]:
    """The ``index``-th task's i.i.d. data and model, each with the config field naming it and whether it is
    available now; a dry run itself never downloads."""
    tp = plan.tasks[index]
    field_ = f"model.task_models.{tp.spec.name}" if tp.spec.name in plan.config.model.task_models else "model.name"
    return [HubName(field_name, what, name, *avail, hub_status(avail))
            for field_name, what, name, avail in ((f"tasks.{index}.iid", "i.i.d. data", tp.spec.iid,
                                                    iid_availability(tp.spec.iid)),
                                                   (field_, "model", tp.model, model_availability(tp.model)))]


def require_hub_names(plan: Plan, config_path: Path) -> None:
    """Fail before the first training, naming the field, when a hub model or dataset is neither cached nor
    downloadable now (a run would otherwise stop at the first fold that needs it, perhaps hours in)."""
    needed = [(h.field, h.name, (h.ok, h.how)) for i in range(len(plan.tasks)) for h in hub_names(plan, i)]
    problems = unreachable_hub_names(needed)
    if problems:
        field_, name, why = problems[0]
        more = f" (and {len(problems) - 1} more: {', '.join(n for _, n, _ in problems[1:])})" if problems[1:] else ""
        raise with_config_line(BelugaError(
            f"'{name}' is {why}{more}. Connect once so that it is downloaded, or name a local path, a builtin: "
            "dataset or embedded:minilm", source=config_path, field=field_), config_path)


def method_footprints(plan: Plan) -> Footprints:
    """Per model of the run and method: (parameters it trains, parameters of the model), from the method's
    ``prepare`` on the model built on the meta device (no weights read). A ``BelugaError`` there is the method not
    fitting the model (lora's target modules it lacks): raised, so that the run stops before anything trains."""
    out: Footprints = {}
    for name in sorted({tp.model for tp in plan.tasks}):
        base = meta_classifier(name, plan.config.model.config_overrides)
        if base is None:
            continue
        total = sum(p.numel() for p in base.parameters())
        for method in plan.config.methods:
            model = copy.deepcopy(base)
            plugin = METHODS.get(method)(method_hparams(plan.config, method))
            try:
                plugin.prepare(model)
            except BelugaError:
                raise
            except Exception:   # a plugin whose prepare needs real weights: nothing to count
                continue
            out.setdefault(name, {})[method] = (sum(p.numel() for p in model.parameters() if p.requires_grad), total)
    return out
