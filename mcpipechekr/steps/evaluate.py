"""Phase 2, `evaluate`: a run's traces → bug_report.json and phase2_narrative.md, then the findings hand-off,
kpi.json and report.html.

Both front ends get the same evaluation and the same hand-off: the run's bugs
are registered as findings, and every finding a fix claimed is judged by this
run (`handoff.register_and_verify`). The lines that describe the report are
printed here, once, for both. Last comes the HTML report of the run and of
the runs whose fixes led to it (`steps.report`), with its path: `mcpipechekr
evaluate`, `doit evaluate` and each iteration of `doit loop` leave it in the
run folder, there before the review asks for a decision.
"""

from __future__ import annotations

from rich.console import Console

from mcpipechekr._util.console import console
from mcpipechekr._util.yamlsrc import display_path
from mcpipechekr.artifacts import BugReport, RunDir
from mcpipechekr.artifacts.kpi import KpiReport
from mcpipechekr.config import Config
from mcpipechekr.steps.handoff import register_and_verify
from mcpipechekr.steps.kpi import kpi_step
from mcpipechekr.steps.report import report_step
from mcpipechekr.steps.stage import coverage_note, require_traced, run_stage


def evaluate_step(
    config: Config,
    run_dir: RunDir,
    *,
    require_baseline: bool = False,
    allow_incomplete: bool = False,
    out: Console = console,
) -> BugReport:
    """Evaluate the run, describe the report on `out`, register and verify its findings, write report.html;
    return the report.

    `require_baseline` refuses to evaluate before runs/baseline.json exists
    (the loop judges answers against it); without it, a missing baseline is a
    note in the report and answers go unchecked. A run that lacks planned
    traces is refused unless `allow_incomplete`; then the report's first note
    says how many attempts it covers. report.html is written once the run's
    status is final (after `run_stage`), so the page shows it as it stays.
    """
    from mcpipechekr.baseline import require_baseline as baseline_exists
    from mcpipechekr.evaluate import evaluate_run

    if require_baseline:
        baseline_exists(config)
    coverage = require_traced(run_dir, "evaluate", allow_incomplete=allow_incomplete)
    notes = [coverage_note(coverage)] if coverage else []
    with run_stage(config, run_dir, "evaluate"):
        report = evaluate_run(config, run_dir, notes=notes)
        for line in report_lines(report, run_dir):
            out.print(line, markup=False)
        for line in before_after_lines(run_dir):
            out.print(line, markup=False)
        register_and_verify(config, run_dir, report, out=out)
        kpis = kpi_step(config, run_dir)  # after the hand-off: its verification may find a regression
        out.print(kpi_count_line(kpis, run_dir), markup=False)
    report_step([run_dir], out=out)
    return report


def kpi_count_line(kpis: KpiReport, run_dir: RunDir) -> str:
    """The KPIs in one line (the review shows each): how many are met, not met, not measured."""
    counts = {status: sum(kpi.status == status for kpi in kpis.kpis) for status in ("met", "not_met")}
    unmeasured = sum(kpi.status == "not_measured" for kpi in kpis.kpis)
    verdict = "every KPI met" if kpis.all_met() else f"{counts['met']} met, {counts['not_met']} not met"
    if unmeasured and not kpis.all_met():
        verdict += f", {unmeasured} not measured"
    return f"{kpis.run_id}: KPIs: {verdict} → {display_path(run_dir.kpi)}"


def before_after_lines(run_dir: RunDir) -> list[str]:
    """The run against the one whose fixes it was traced after (`before_after`): a line per changed task."""
    from mcpipechekr.before_after import since_previous

    comparison = since_previous(run_dir)
    return [] if comparison is None else comparison.lines()


def report_lines(report: BugReport, run_dir: RunDir) -> list[str]:
    """What a bug report says, in a few lines: counts and files, one line per bug, the notes."""
    files = f"{display_path(run_dir.bug_report)}, {display_path(run_dir.phase2_narrative)}"
    counts = f"{len(report.bugs)} bug(s), {len(report.review_flags)} answer(s) to review"
    if report.errored:
        counts = f"{len(report.errored)} attempt(s) errored (in no figure), {counts}"
    lines = [f"{report.run_id}: {counts} → {files}"]
    lines += [
        f"  {bug.id}  {bug.severity}  x{bug.occurrences}  gap {bug.token_cost_of_gap:,} tokens"
        for bug in report.bugs
    ]
    lines += [f"note: {note}" for note in report.notes]
    return lines
