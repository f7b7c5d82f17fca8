"""Per-task figures across iterations: the numbers behind the report's charts.

Each evaluated run is one iteration (a point on the x axis); each task is one
series. The figures come from the bug report, so they agree with what
`mcpipechekr evaluate` printed and session_summary.md lists:

- success: the task's success rate over its decided attempts (`TaskStats`);
  no point when no attempt was decided (an unchecked or unjudged answer is
  neither a success nor a failure);
- calls and tokens: the mean tool calls and tokens per attempt;
- wasted tokens: what the bugs seen in the task's traces cost (each bug's
  gap per occurrence, once for every evidence entry in that task).

A task run by several providers in one run is one point: their figures
weighted by attempts.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from mcpipechekr.artifacts import BugReport, TaskStats
from mcpipechekr.report._data import ReportData


@dataclass(frozen=True)
class Metric:
    """One chart: a figure per task and run, how to read it, and how to print a value."""

    key: str
    title: str
    unit: str
    value: Callable[[BugReport, str], float | None]
    percent: bool = False

    def format(self, value: float) -> str:
        if self.percent:
            return f"{value:.0%}"
        return f"{value:,.0f}" if value >= 10 or value == int(value) else f"{value:,.1f}"


@dataclass(frozen=True)
class Series:
    """One task's line on one chart: a value (or None, a gap) per evaluated run, oldest first."""

    task_id: str
    values: list[float | None]


def _weighted(report: BugReport, task_id: str, figure: Callable[[TaskStats], float | None]) -> float | None:
    pairs = [
        (value, stats.runs)
        for stats in report.tasks
        if stats.task_id == task_id and (value := figure(stats)) is not None and stats.runs
    ]
    weight = sum(runs for _, runs in pairs)
    return sum(value * runs for value, runs in pairs) / weight if weight else None


def success_rate(report: BugReport, task_id: str) -> float | None:
    decided = [stats for stats in report.tasks if stats.task_id == task_id and stats.runs > stats.undecided]
    attempts = sum(stats.runs - stats.undecided for stats in decided)
    return sum(stats.successes for stats in decided) / attempts if attempts else None


def mean_calls(report: BugReport, task_id: str) -> float | None:
    return _weighted(report, task_id, lambda stats: stats.mean_calls)


def mean_tokens(report: BugReport, task_id: str) -> float | None:
    return _weighted(report, task_id, lambda stats: stats.mean_tokens_observed)


def wasted_tokens(report: BugReport, task_id: str) -> float | None:
    if not any(stats.task_id == task_id for stats in report.tasks):
        return None
    total = 0
    for bug in report.bugs:
        seen = sum(1 for evidence in bug.evidence if evidence.task_id == task_id)
        if not bug.evidence and task_id in (bug.task_ids or [bug.task_id]):
            seen = 1
        total += bug.token_cost_of_gap * seen
    return float(total)


METRICS: tuple[Metric, ...] = (
    Metric("success", "Success rate", "of decided attempts", success_rate, percent=True),
    Metric("calls", "Tool calls", "mean per attempt", mean_calls),
    Metric("tokens", "Tokens", "mean per attempt", mean_tokens),
    Metric("wasted", "Wasted tokens", "cost of the bugs seen in the task", wasted_tokens),
)
"""The charts of the report, in the order they are shown."""


def task_series(data: ReportData, metric: Metric) -> list[Series]:
    """One series per task of the covered runs, a value per evaluated run."""
    reports = [run.bug_report for run in data.evaluated if run.bug_report is not None]
    return [
        Series(task_id, [metric.value(report, task_id) for report in reports]) for task_id in data.task_ids
    ]
