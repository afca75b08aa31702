"""Checks of a config against its suites and plugins, before anything trains (``--dry-run`` runs them)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from beluga_core.config.schema import BenchmarkConfig
from beluga_core.contracts.registries import CONFIGURATIONS
from beluga_core.core.errors import BelugaError, did_you_mean
from beluga_core.data.pretrained import check_config_overrides
from beluga_core.data.suite.suite_files import Suite


def check_levels(cfg: BenchmarkConfig, suite: Suite, config_path: Path) -> None:
    holdable = suite.header.holdable_levels()
    for scenario in cfg.heldout_levels:
        if scenario not in holdable:
            raise BelugaError(
                f"scenario '{scenario}' is not a level of suite '{suite.header.name}' ({suite.path}); "
                f"scenarios are standard, seen, one of its levels ({', '.join(holdable)}) or only:LEVEL",
                source=config_path, field="scenarios")
    for scenario in cfg.heldout_levels:
        groups = {g for c in suite.cases if (g := suite.group_of(c, scenario)) is not None}
        if not groups:
            raise BelugaError(f"scenario '{scenario}': no case of suite '{suite.header.name}' ({suite.path}) has a "
                              f"group at the crossing level '{scenario}', so it has nothing to hold out",
                              source=config_path, field="scenarios")
        if len(groups) == 1:
            (only,) = groups
            generated = [g.get("name") for g in suite.header.source.get("generators", []) if isinstance(g, dict)]
            hint = (" The s2lct generator writes origin = expanded only with expand = true, which needs a "
                    "constituency parser, a reference grammar and a masked language model you supply "
                    "(`beluga suite generate s2lct --option expand=true --option parser=… --option grammar=… "
                    "--option mlm=…`)." if scenario == "origin" and "s2lct" in generated else "")
            raise BelugaError(
                f"scenario '{scenario}': every case of suite '{suite.header.name}' ({suite.path}) is in the one "
                f"{scenario} '{only}', so holding it out leaves nothing to train on.{hint}",
                source=config_path, field="scenarios")
    for level in cfg.only_levels:
        if level not in holdable:
            raise BelugaError(
                f"scenario 'only:{level}': '{level}' is not a level of suite '{suite.header.name}' ({suite.path}); "
                f"its levels: {', '.join(holdable)}", source=config_path, field="scenarios")


def check_size_groups(per_group_of: dict[str, int], suite: Suite, config_path: Path) -> None:
    level = suite.header.scoring_level
    groups = {c.groups[level] for c in suite.cases}
    for name in per_group_of:
        if name not in groups:
            hint = did_you_mean(name, sorted(groups)) or f"; its groups are: {', '.join(sorted(groups))}"
            raise BelugaError(f"'{name}' is not a {level} of suite '{suite.header.name}'{hint}",
                              source=config_path, field=f"sizes.suite_test_per_group_of.{name}")


def check_configuration_keys(cfg: BenchmarkConfig, config_path: Path) -> None:
    """Per-configuration settings must name a configuration of the run that has the step they set."""
    checks = (("sizes.iid_mix_of", cfg.sizes.iid_mix_of, lambda c: c.uses_iid and not c.is_baseline(),
               "mix i.i.d. data into its step (a suite step that mixes it in, or an update of the i.i.d. model)"),
              ("training.configurations", cfg.training.configurations, lambda c: not c.is_baseline(),
               "have a step of its own (the baseline's is [training.iid])"))
    for where, table, has_step, what in checks:
        eligible = [c for c in cfg.configurations if has_step(CONFIGURATIONS.get(c))]
        for name in table:
            if name in eligible:
                continue
            if name in cfg.configurations:
                message = f"'{name}' does not {what}; the run's configurations that do: {', '.join(eligible) or 'none'}"
            else:
                # Not "(none installed)": the name may be an installed configuration the run no longer lists.
                message = (f"'{name}' is not a configuration of this run"
                           + (did_you_mean(name, eligible, cutoff=0.5) or ".")
                           + f" The run's configurations: {', '.join(cfg.configurations)}; of these, the ones "
                           f"this table may name: {', '.join(eligible) or 'none'} (each must {what}). Add "
                           f"'{name}' to `configurations` or remove this entry")
            raise BelugaError(message, source=config_path, field=f"{where}.{name}")


def check_model_config(cfg: BenchmarkConfig, model: str, config_path: Path) -> None:
    """``[model] config_overrides`` must name settings of the model's config."""
    if not cfg.model.config_overrides:
        return
    try:
        check_config_overrides(model, cfg.model.config_overrides)
    except BelugaError as exc:
        raise BelugaError(exc.message, source=config_path, field=exc.field) from None


def check_env_level(hp: dict[str, Any], method: str, suite: Suite, config_path: Path) -> None:
    level = hp.get("method", {}).get("env_level")
    holdable = suite.header.holdable_levels()
    if level is not None and level not in holdable:
        raise BelugaError(f"[method.{method}] env_level '{level}' is not a level of suite '{suite.header.name}'; "
                          f"choose one of {', '.join(holdable)} (default: the scoring level)",
                          source=config_path, field=f"method.{method}.env_level")
