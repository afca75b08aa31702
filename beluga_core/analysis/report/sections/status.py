"""The report's opening lines: what it covers (models done and failed, the variant shown, failed jobs), the runs
recorded as running, and the state of the significance tests; the terminal table opens with the runs and scope."""

from __future__ import annotations

from beluga_core.analysis.report.g_table_data import PARTIAL_NOTE
from beluga_core.analysis.report.report_data import run_lines, scope_lines
from beluga_core.analysis.report.section import PARTIAL, Block, Paragraph, Section
from beluga_core.analysis.report.sections.context import Context


def status_lines(ctx: Context) -> list[str]:
    """What the report covers: models so far, a run in progress, significance state."""
    d, table = ctx.data, ctx.table
    lines = [f"{d.n_done} model(s) done, {d.n_failed} failed; read {d.read_at:%Y-%m-%d %H:%M:%S} UTC.",
             *scope_lines(d)]
    lines += run_lines(d)
    if any(c.partial for c in table.cells.values()):
        lines.append(f"{PARTIAL} {PARTIAL_NOTE}")
    status = table.significance_status
    if not table.has_significance:
        lines.append("No significance tests in this store yet: run `beluga analyze STORE` to mark cells.")
    elif status.get("stale") or status.get("missing"):
        lines.append(f"Significance: {status.get('current', 0)} test(s) current, {status.get('stale', 0)} "
                     f"stale, {status.get('missing', 0)} missing; only current tests mark cells "
                     "(run `beluga analyze STORE` to refresh).")
    return lines


def build(ctx: Context) -> list[Section]:
    d = ctx.data
    brief: list[Block] = [Paragraph([*run_lines(d), *scope_lines(d)], kind="plain")]
    if not ctx.table.rows:
        brief.append(Paragraph([f"no finished models in {d.store} yet"], kind="plain"))
    intro = Paragraph([f"Store `{d.store}`."], kind="plain")
    return [Section("status", "", blocks=[intro, Paragraph(status_lines(ctx))], brief=brief)]
