"""The text form of a comparison: plain aligned columns, the verdict as its last line.

Plain text rather than a rich table, so that what `--output` writes, what a CI
log shows and what a test compares are the same characters whatever the
terminal's width.
"""

from __future__ import annotations

from collections.abc import Sequence

from mcpipechekr.artifacts.comparison import (
    ComparedRun,
    Comparison,
    MeanComparison,
    SplitComparison,
    SuccessCounts,
    TaskComparison,
)
from mcpipechekr.kpi import LABELS, format_value, status_text, target_text, trend_of

VERDICT_WORDS = {
    "better": "B better",
    "worse": "B worse",
    "mixed": "mixed",
    "no_significant_difference": "no significant difference",
    "not_compared": "not compared",
}


def columns(rows: Sequence[Sequence[str]], indent: str = "  ") -> list[str]:
    """Rows as lines whose columns line up (two spaces between them, no trailing spaces)."""
    widths = [max(len(row[i]) for row in rows) for i in range(len(rows[0]))]
    return [
        indent + "  ".join(cell.ljust(width) for cell, width in zip(row, widths, strict=True)).rstrip()
        for row in rows
    ]


def success_cell(counts: SuccessCounts | None) -> str:
    """`7/10`, with the answers nobody could check after it; `-` when the task did not run."""
    if counts is None:
        return "-"
    text = f"{counts.successes}/{counts.successes + counts.failures}"
    return text + f" (+{counts.undecided} unchecked)" if counts.undecided else text


def mean_cell(measure: MeanComparison | None) -> str:
    """`5 → 1 (-4; -4.5 to -3)`: the means, the difference and its interval; `*` marks a significant one."""
    if measure is None:
        return "-"
    mark = " *" if measure.significant else ""
    return (
        f"{measure.mean_a:g} → {measure.mean_b:g} "
        f"({measure.difference:+g}; {measure.low:+g} to {measure.high:+g}){mark}"
    )


def p_cell(p_value: float | None) -> str:
    if p_value is None:
        return "-"
    return f"{p_value:.2g}" if p_value < 0.001 else f"{p_value:.3f}"


def describe_run(run: ComparedRun) -> str:
    source = run.server_sha[:12] if run.server_sha else "source unknown"
    dirty = ", dirty" if run.server_dirty else ""
    return (
        f"{run.run_id}: server {run.server} ({source}{dirty}), model {run.phase1_provider}, "
        f"{run.tasks} task(s), {run.attempts} attempt(s), {run.bugs} bug(s)"
    )


def _rate(successes: int, decided: int, rate: float | None) -> str:
    return f"{successes}/{decided}" + ("" if rate is None else f" ({rate:.0%})")


def _figure(value: float | None, digits: int) -> str:
    return "-" if value is None else f"{value:,.{digits}f}"


def split_rows(comparison: Comparison) -> list[list[str]]:
    """Train and holdout side by side, a header row first; no rows when no task is holdout."""
    if not comparison.splits:
        return []
    rows = [
        [
            "split",
            "tasks",
            "better",
            "worse",
            "unchanged",
            "success A → B",
            "calls A → B",
            "tokens A → B",
            "trend",
        ]
    ]
    for side in comparison.splits:
        rows.append(split_row(side))
    return rows


def split_row(side: SplitComparison) -> list[str]:
    unchanged = str(side.tasks_unchanged) + (f" (+{side.tasks_mixed} mixed)" if side.tasks_mixed else "")
    return [
        side.split,
        str(side.tasks_compared),
        str(side.tasks_better),
        str(side.tasks_worse),
        unchanged,
        f"{_rate(side.successes_a, side.decided_a, side.rate_a)} → "
        f"{_rate(side.successes_b, side.decided_b, side.rate_b)}",
        f"{_figure(side.mean_calls_a, 1)} → {_figure(side.mean_calls_b, 1)}",
        f"{_figure(side.mean_tokens_a, 0)} → {_figure(side.mean_tokens_b, 0)}",
        side.trend,
    ]


def task_cells(task: TaskComparison, *, split: bool) -> list[str]:
    """One task's row, as the text and the HTML comparisons both show it; its split only when `split`."""
    return [
        task.task_id,
        *([task.split] if split else []),
        success_cell(task.success_a),
        success_cell(task.success_b),
        p_cell(task.p_value),
        mean_cell(task.calls),
        mean_cell(task.tokens),
        VERDICT_WORDS[task.verdict] if task.present_in == "both" else f"only in {task.present_in.upper()}",
    ]


def render_comparison_text(comparison: Comparison) -> str:
    """The comparison for people: the runs, what changed, tasks, bugs, warnings, then the verdict."""
    lines = [f"A  {describe_run(comparison.a)}", f"B  {describe_run(comparison.b)}", ""]
    if comparison.changes:
        lines.append("Changed from A to B:")
        lines.extend(f"  {change}" for change in comparison.changes)
    else:
        lines.append("Changed from A to B: nothing the manifests record")
    lines += [
        "",
        f"Tasks (success: Fisher's exact test, two-sided; calls and tokens per attempt: A → B "
        f"(B − A; 95% bootstrap interval), * significant; alpha {comparison.alpha:g}):",
    ]
    split = bool(comparison.splits)
    rows = [
        ["task", *(["split"] if split else []), "success A", "success B", "p", "calls", "tokens", "verdict"]
    ]
    rows.extend(task_cells(task, split=split) for task in comparison.tasks)
    lines += columns(rows) if comparison.tasks else ["  none"]
    if comparison.splits:
        lines += ["", "Train and holdout (the fix agent sees only the bugs of train tasks):"]
        lines += columns(split_rows(comparison))
        lines.extend(f"  Warning: {warning}" for warning in comparison.split_warnings)
    lines += ["", "Bugs (by id):"]
    if comparison.bugs:
        rows = [["status", "id", "severity", "occurrences A → B", "tokens lost each A → B"]]
        for bug in comparison.bugs:
            gap_a = "-" if bug.token_cost_of_gap_a is None else f"{bug.token_cost_of_gap_a:,}"
            gap_b = "-" if bug.token_cost_of_gap_b is None else f"{bug.token_cost_of_gap_b:,}"
            rows.append(
                [
                    bug.status.replace("_", " "),
                    bug.id,
                    bug.severity,
                    f"{bug.occurrences_a} → {bug.occurrences_b}",
                    f"{gap_a} → {gap_b}",
                ]
            )
        lines += columns(rows)
    else:
        lines.append("  none in either run")
    lines += kpi_rows(comparison)
    if comparison.warnings:
        lines += ["", "Warnings:"]
        lines.extend(f"  {warning}" for warning in comparison.warnings)
    lines += ["", comparison.verdict_line]
    return "\n".join(lines) + "\n"


NO_KPIS = "run B has no kpi.json (evaluated before KPIs existed): not measured"


def kpi_table(comparison: Comparison) -> tuple[str, list[list[str]]] | None:
    """The key figures of A and B (their kpi.json) side by side, B's against its targets, ▲▼ from A to B:
    the verdict and the rows, header first, for the text and the HTML alike; None when B has no kpi.json."""
    kpis_a, kpis_b = comparison.kpis_a, comparison.kpis_b
    if kpis_b is None:
        return None
    rows = [["KPI", "target", "A", "B", "B", "A → B"]]
    for figure in kpis_b.kpis:
        before = kpis_a.figure(figure.name) if kpis_a is not None else None
        value_a = before.value if before is not None else None
        trend = ""
        if value_a is not None and figure.value is not None:
            word = trend_of(figure.value, value_a, figure.direction)
            arrow = "=" if word == "same" else ("▲" if figure.value > value_a else "▼")
            trend = f"{arrow} {word}"
        rows.append(
            [
                LABELS[figure.name],
                target_text(figure),
                format_value(figure.name, value_a),
                format_value(figure.name, figure.value),
                status_text(figure),
                trend,
            ]
        )
    return ("every KPI met in B" if kpis_b.all_met() else "not every KPI met in B"), rows


def kpi_rows(comparison: Comparison) -> list[str]:
    """`kpi_table` as text lines for the terminal."""
    table = kpi_table(comparison)
    if table is None:
        return ["", f"KPIs: {NO_KPIS}"]
    verdict, rows = table
    return ["", f"KPIs (docs/kpi.md; {verdict}):", *columns(rows)]
