"""Before and after a fix: what each task cost, and whether it succeeded, in the runs either side of it.

The loop's runs form a chain through the server's repository: a run's fix step
commits `fix: <bug id>` there, and the next run is traced on the commit the
fix step left, which its manifest records (`mcp_server_sha`). So the run
before another is found from the files alone, whichever invocation of the
loop made them: the latest earlier run whose fix record's last commit is the
commit this run was traced on. No session file is kept, so nothing can lose
it: a second `doit loop` finds the same chain as the first.

The figures are the bug reports' per-task statistics (means over
repetitions): tool calls, tokens and the success rate. A task is listed when
any of them changed; the fixes named are the commits of the fix step between
the two runs. The chain is broken by a commit made by hand between two runs,
or by a run traced on a dirty tree: then the runs are not compared, because
the change was not only the fixes'.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Literal, NamedTuple

from pydantic import BaseModel, ConfigDict, Field

from mcpipechekr.artifacts import BugReport, FixRecord, RunDir, list_runs, read_model
from mcpipechekr.artifacts.bug_report import TaskStats
from mcpipechekr.artifacts.runstate import load_manifest
from mcpipechekr.errors import UserError

__all__ = [
    "BeforeAfter",
    "Split",
    "SplitFigures",
    "SplitWarning",
    "TaskChange",
    "compare_runs",
    "previous_run",
    "run_chain",
    "since_previous",
    "split_trend",
    "split_warnings",
]

_SAME_TOKENS = 0.5  # token means are shown rounded: closer than this reads as no change


class TaskChange(BaseModel):
    """One task (and Phase 1 model) whose calls, tokens or success changed between two runs."""

    model_config = ConfigDict(frozen=True)

    task_id: str = Field(description="The task's id in tasks.yaml.")
    provider: str | None = Field(default=None, description="The Phase 1 model of both runs.")
    calls_before: float | None = Field(default=None, description="Mean tool calls per attempt, before.")
    calls_after: float | None = Field(default=None, description="Mean tool calls per attempt, after.")
    tokens_before: float | None = Field(default=None, description="Mean tokens per attempt, before.")
    tokens_after: float | None = Field(default=None, description="Mean tokens per attempt, after.")
    success_before: float | None = Field(
        default=None, description="Success rate before (None when no attempt's answer was decided)."
    )
    success_after: float | None = Field(default=None, description="Success rate after, likewise.")
    fixes: list[str] = Field(default_factory=list, description="The bugs committed between the runs.")

    @property
    def statement(self) -> str:
        """`find-first-email: 5 → 1 calls, 1,908 → 389 tokens, after fix: BUG-…`: only what changed."""
        parts: list[str] = []
        if _changed(self.calls_before, self.calls_after, 1e-9):
            parts.append(f"{_count(self.calls_before)} → {_count(self.calls_after)} calls")
        if _changed(self.tokens_before, self.tokens_after, _SAME_TOKENS):
            parts.append(f"{_tokens(self.tokens_before)} → {_tokens(self.tokens_after)} tokens")
        if _changed(self.success_before, self.success_after, 1e-9):
            parts.append(f"success {_rate(self.success_before)} → {_rate(self.success_after)}")
        if self.fixes:
            parts.append(f"after fix: {', '.join(self.fixes)}")
        return f"{self.task_id}: {', '.join(parts)}"


class BeforeAfter(BaseModel):
    """Two consecutive runs of the chain, the fixes between them, and every task that changed."""

    model_config = ConfigDict(frozen=True)

    before_run: str = Field(description="The earlier run's id.")
    after_run: str = Field(description="The later run's id.")
    fixes: list[str] = Field(
        default_factory=list, description="Bugs committed by the earlier run's fix step."
    )
    changes: list[TaskChange] = Field(default_factory=list, description="Tasks that changed, in task order.")
    unchanged: int = Field(default=0, description="Tasks in both runs whose figures did not change.")

    def lines(self) -> list[str]:
        """The comparison as the terminal and the session summary say it: a heading, one line per task."""
        head = f"before/after {self.before_run} → {self.after_run}"
        if not self.changes:
            return [f"{head}: no task changed its calls, tokens or success"]
        same = f"; {self.unchanged} task(s) unchanged" if self.unchanged else ""
        return [f"{head}{same}:", *(f"  {change.statement}" for change in self.changes)]


def compare_runs(before: RunDir, after: RunDir) -> BeforeAfter | None:
    """The tasks whose figures changed from `before` to `after`; None when either run has no bug report."""
    first, second = _report(before), _report(after)
    if first is None or second is None:
        return None
    fixes = committed_bugs(before)
    earlier = {(stats.task_id, stats.provider): stats for stats in first.tasks}
    changes: list[TaskChange] = []
    unchanged = 0
    for stats in second.tasks:
        old = earlier.get((stats.task_id, stats.provider))
        if old is None:
            continue
        change = _change(old, stats, fixes)
        if change is None:
            unchanged += 1
        else:
            changes.append(change)
    return BeforeAfter(
        before_run=before.run_id, after_run=after.run_id, fixes=fixes, changes=changes, unchanged=unchanged
    )


def since_previous(run: RunDir) -> BeforeAfter | None:
    """`run` against the run whose fixes it was traced after; None when there is none (or no report)."""
    before = previous_run(run)
    return compare_runs(before, run) if before is not None else None


def previous_run(run: RunDir) -> RunDir | None:
    """The run whose fix step left the commit `run` was traced on (see the module docstring), if any."""
    sha = _traced_on(run)
    if sha is None:
        return None
    for earlier in reversed([one for one in list_runs(run.root.parent) if one.run_id < run.run_id]):
        record = _fix_record(earlier)
        if record is not None and record.commits and record.commits[-1] == sha:
            return earlier
    return None


def run_chain(runs: Sequence[RunDir]) -> list[RunDir]:
    """`runs` (oldest first) with the earlier runs that led to the first of them, oldest first.

    What a session summary covers: a second `doit loop` that only ends the
    session still reports the fixes the first one committed.
    """
    chain = list(runs)
    seen = {run.run_id for run in chain}
    while chain and (earlier := previous_run(chain[0])) is not None and earlier.run_id not in seen:
        chain.insert(0, earlier)
        seen.add(earlier.run_id)
    return chain


def committed_bugs(run: RunDir) -> list[str]:
    """The bugs the run's fix step committed, in fix order; none without a readable fix.json."""
    record = _fix_record(run)
    return [] if record is None else [bug.bug_id for bug in record.bugs if bug.commit]


def _change(old: TaskStats, new: TaskStats, fixes: list[str]) -> TaskChange | None:
    change = TaskChange(
        task_id=new.task_id,
        provider=new.provider,
        calls_before=old.mean_calls,
        calls_after=new.mean_calls,
        tokens_before=old.mean_tokens_observed,
        tokens_after=new.mean_tokens_observed,
        success_before=_success(old),
        success_after=_success(new),
        fixes=fixes,
    )
    moved = (
        _changed(change.calls_before, change.calls_after, 1e-9)
        or _changed(change.tokens_before, change.tokens_after, _SAME_TOKENS)
        or _changed(change.success_before, change.success_after, 1e-9)
    )
    return change if moved else None


def _success(stats: TaskStats) -> float | None:
    return stats.success_rate if stats.runs > stats.undecided else None


def _changed(before: float | None, after: float | None, tolerance: float) -> bool:
    if before is None or after is None:
        return False
    return abs(before - after) >= tolerance


def _count(value: float | None) -> str:
    if value is None:
        return "?"
    return f"{value:.0f}" if float(value).is_integer() else f"{value:.1f}"


def _tokens(value: float | None) -> str:
    return "?" if value is None else f"{value:,.0f}"


def _rate(value: float | None) -> str:
    return "?" if value is None else f"{value:.0%}"


def _report(run: RunDir) -> BugReport | None:
    if not run.bug_report.exists():
        return None
    try:
        return read_model(run.bug_report, BugReport)
    except UserError:
        return None


def _fix_record(run: RunDir) -> FixRecord | None:
    if not run.fix_record.exists():
        return None
    try:
        return read_model(run.fix_record, FixRecord)
    except UserError:
        return None


def _traced_on(run: RunDir) -> str | None:
    """The clean commit the run was traced on; None for a dirty tree, no git, or no readable manifest."""
    try:
        manifest = load_manifest(run)
    except (OSError, UserError, ValueError):
        return None
    return None if manifest.mcp_server_dirty else manifest.mcp_server_sha


Split = Literal["train", "holdout"]
Trend = Literal["better", "worse", "same"]


class SplitFigures:
    """One run's results over the tasks of one split: successes of the decided attempts, calls and
    tokens per attempt (the bug report's per-task means weighted by attempts)."""

    def __init__(self, report: BugReport, split: Split) -> None:
        stats = [s for s in report.tasks if s.split == split]
        self.tasks = len({s.task_id for s in stats})
        self.successes = sum(s.successes for s in stats)
        self.decided = sum(s.runs - s.undecided for s in stats)
        runs = sum(s.runs for s in stats)
        self.calls = sum((s.mean_calls or 0.0) * s.runs for s in stats) / runs if runs else None
        self.tokens = sum((s.mean_tokens_observed or 0.0) * s.runs for s in stats) / runs if runs else None

    @property
    def rate(self) -> float | None:
        return self.successes / self.decided if self.decided else None

    def cell(self) -> str:
        """`3/4 (75%), 2.5 calls`; `-` when the run has no task of this split."""
        if not self.tasks:
            return "-"
        rate = "-" if self.rate is None else f"{self.rate:.0%}"
        calls = "-" if self.calls is None else f"{self.calls:.1f}"
        return f"{self.successes}/{self.decided} ({rate}), {calls} calls"


def split_trend(first: SplitFigures, last: SplitFigures) -> Trend:
    """`better`, `worse` or `same`: by success rate, then (rates equal) by fewer calls per attempt."""
    if first.rate is not None and last.rate is not None and abs(last.rate - first.rate) > 1e-9:
        return "better" if last.rate > first.rate else "worse"
    if first.calls is not None and last.calls is not None and abs(last.calls - first.calls) > 1e-9:
        return "better" if last.calls < first.calls else "worse"
    return "same"


class SplitWarning(NamedTuple):
    """A sign that the fixes helped only the tasks the fix agent saw, or broke the others."""

    title: str
    """`overfitting?` or `holdout got worse`."""
    detail: str
    """The figures either side and what they may mean."""


def split_warnings(
    span: str, train_a: SplitFigures, train_b: SplitFigures, holdout_a: SplitFigures, holdout_b: SplitFigures
) -> list[SplitWarning]:
    """The train/holdout rule, one for the session summary, `compare` and the report.

    Holdout tasks (`split: holdout` in tasks.yaml) are traced and evaluated but
    never shown to the fix agent: train getting better while holdout does not is
    the sign of a fix fitted to its tasks, and holdout getting worse one of a fix
    that broke something else. `span` says between which runs ("from A to B").
    Nothing is said when either run has no holdout task.
    """
    if not (holdout_a.tasks and holdout_b.tasks):
        return []
    train_trend, holdout_trend = split_trend(train_a, train_b), split_trend(holdout_a, holdout_b)
    warnings = []
    if train_trend == "better" and holdout_trend != "better":
        warnings.append(
            SplitWarning(
                "overfitting?",
                f"Train tasks improved {span} ({train_a.cell()} → {train_b.cell()}) but holdout tasks "
                f"did not ({holdout_a.cell()} → {holdout_b.cell()}): the fixes may suit the train tasks "
                "only.",
            )
        )
    if holdout_trend == "worse":
        warnings.append(
            SplitWarning(
                "holdout got worse",
                f"{span} ({holdout_a.cell()} → {holdout_b.cell()}): a fix may have broken what no train "
                "task covers.",
            )
        )
    return warnings
