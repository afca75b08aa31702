"""What a grid search costs, in trainings, in either mode (for ``--dry-run``)."""

from __future__ import annotations

from dataclasses import dataclass

from beluga_core.contracts.registries import CONFIGURATIONS
from beluga_core.planning.grid_space import grid_methods, grid_points, halving_points
from beluga_core.planning.halving import rung_sizes
from beluga_core.planning.plan import Plan, TaskPlan


@dataclass(frozen=True)
class GridCost:
    task: str
    config: str
    method: str
    points: int  # grid points per selection
    seen: int  # trainings in seen mode (one selection)
    strict: int  # trainings in strict mode (one selection per fold: seen + every held-out fold)
    # [grid] strategy = "halving": the points each rung trains and its epochs (empty for the full search).
    rungs: tuple[int, ...] = ()
    budgets: tuple[float, ...] = ()

    def rungs_text(self) -> str:
        """E.g. "6 → 2 → 1 at 1, 2, 3 epochs" ("" for a full search)."""
        if not self.rungs:
            return ""
        return (f"{' → '.join(map(str, self.rungs))} at {', '.join(f'{b:g}' for b in self.budgets)} epochs")


def grid_costs(plan: Plan, tp: TaskPlan) -> list[GridCost]:
    cfg = plan.config
    heldout_folds = sum(1 for f in tp.folds if f.heldout_level is not None)
    out: list[GridCost] = []
    if not tp.folds:
        return out
    for config in cfg.configurations:
        if CONFIGURATIONS.get(config).is_baseline():
            continue
        for method in grid_methods(cfg.methods):
            if cfg.grid.strategy == "halving":
                points, budgets = halving_points(cfg, tp.spec.name, method)
                sizes = tuple(rung_sizes(len(points), len(budgets), cfg.grid.reduction))
                n = sum(sizes)
                out.append(GridCost(tp.spec.name, config, method, len(points), n, n * (1 + heldout_folds), sizes,
                                    budgets))
                continue
            n = len(grid_points(cfg, tp.spec.name, method))
            out.append(GridCost(tp.spec.name, config, method, n, n, n * (1 + heldout_folds)))
    return out
