"""`mcpipechekr compare RUN_A RUN_B --format json`: two runs side by side, with the tests that decide.

A comparison is not a file of a run: it is written where the user asks
(`--output`) or on stdout, and holds no time or path of the machine it was made
on, so the same two runs always give the same bytes. Everything in it is
derived from the two runs' manifest.json, bug_report.json and traces/; the
statistics are explained in docs/compare.md.
"""

from __future__ import annotations

from typing import Literal

from pydantic import Field, NonNegativeInt

from mcpipechekr.artifacts._base import VERSION_DESCRIPTION, ArtifactModel, FormatVersion, RunId, Score
from mcpipechekr.artifacts.kpi import KpiReport

TaskVerdict = Literal["better", "worse", "mixed", "no_significant_difference", "not_compared"]
BugStatus = Literal["fixed", "new", "unchanged", "not_compared"]
RunVerdict = Literal["better", "worse", "mixed", "no_significant_difference", "not_like_for_like"]
Metric = Literal["success", "calls", "tokens"]


class ComparedRun(ArtifactModel):
    """One side of the comparison, as its manifest and bug report describe it."""

    run_id: RunId = Field(description="The run's id.")
    server: str = Field(min_length=1, description="The server's name in the run's manifest.")
    server_sha: str | None = Field(default=None, description="Git commit of the server's source, if known.")
    server_dirty: bool = Field(
        default=False, description="True if the server's tree had uncommitted changes."
    )
    phase1_provider: str = Field(
        min_length=1, description="The Phase 1 model(s) whose traces were evaluated."
    )
    task_file_hash: str = Field(description="Hash of tasks.yaml as the run read it.")
    harness_version: str = Field(description="Version of MCPipeChekr that ran it.")
    tasks: NonNegativeInt = Field(description="Tasks in its bug report.")
    attempts: NonNegativeInt = Field(
        description="Answered traces read from its traces/ folder (an `errored` one is no answer)."
    )
    errored: NonNegativeInt = Field(
        default=0,
        description="Traces recorded `errored` (the agent never had a working server): left out of "
        "every figure, and a bug is never `fixed` by them.",
    )
    runners: list[str] = Field(
        default_factory=list,
        description="What ran the agent in its answered traces (`native`, `opencode`, …).",
    )
    bugs: NonNegativeInt = Field(description="Bugs in its bug report.")


class SuccessCounts(ArtifactModel):
    """A task's answers in one run, as its bug report counted them."""

    runs: NonNegativeInt = Field(description="Attempts evaluated.")
    successes: NonNegativeInt = Field(description="Attempts whose answer was checked or judged correct.")
    failures: NonNegativeInt = Field(description="Attempts whose answer was checked or judged wrong.")
    undecided: NonNegativeInt = Field(
        description="Attempts whose answer nobody could check: left out of the rate and the test."
    )
    rate: Score | None = Field(
        default=None, description="successes / (successes + failures); absent when none was decided."
    )


class MeanComparison(ArtifactModel):
    """A per-attempt mean in each run, and its difference (B − A) with a 95% bootstrap interval."""

    mean_a: float = Field(ge=0.0, description="Mean per attempt in run A.")
    mean_b: float = Field(ge=0.0, description="Mean per attempt in run B.")
    difference: float = Field(description="mean_b - mean_a: below 0 means B used less.")
    low: float = Field(description="Lower bound of the 95% percentile bootstrap interval of the difference.")
    high: float = Field(description="Upper bound of that interval.")
    significant: bool = Field(
        description="True when the interval excludes 0 and each run has at least two attempts."
    )


class TaskComparison(ArtifactModel):
    """One task in both runs (or in one only), and whether B did better."""

    task_id: str = Field(min_length=1, description="Id of the task in tasks.yaml.")
    present_in: Literal["both", "a", "b"] = Field(description="The runs whose bug report has the task.")
    split: Literal["train", "holdout"] = Field(
        default="train",
        description="The task's split (B's bug report when it has the task): the fix agent sees only the "
        "bugs of `train` tasks.",
    )
    success_a: SuccessCounts | None = Field(
        default=None, description="Its answers in run A, if it ran there."
    )
    success_b: SuccessCounts | None = Field(
        default=None, description="Its answers in run B, if it ran there."
    )
    p_value: float | None = Field(
        default=None,
        ge=0.0,
        le=1.0,
        description="Two-sided p-value of Fisher's exact test on successes and failures; absent when "
        "a run has no decided answer for the task.",
    )
    calls: MeanComparison | None = Field(
        default=None, description="Tool calls per attempt; absent when a run has no trace of the task."
    )
    tokens: MeanComparison | None = Field(
        default=None, description="Tokens per attempt (as evaluate counts them); absent likewise."
    )
    changed: list[Metric] = Field(
        default_factory=list,
        description="The measures that differ significantly between the runs: `success` (p < alpha), "
        "`calls`, `tokens` (interval excludes 0).",
    )
    verdict: TaskVerdict = Field(
        description="For B against A: `better`, `worse`, `mixed` (fewer calls but more tokens, or the "
        "reverse), `no_significant_difference`, or `not_compared` (the task ran in one run only)."
    )
    reason: str = Field(
        min_length=1, description="The verdict in one line, with the figures that decided it."
    )


class BugComparison(ArtifactModel):
    """One bug id of either bug report, and what became of it."""

    id: str = Field(min_length=1, description="The stable bug id (`BUG-…`, `GAP-…`, …).")
    status: BugStatus = Field(
        description="`fixed` (in A, not in B, and B answered a task it was seen in), `new` (in B, not "
        "in A, and A answered a task it was seen in), `unchanged` (in both), or `not_compared` (not "
        "seen: the other run has no answered attempt of its tasks, none run or all `errored`)."
    )
    type: str = Field(description="The bug's type, from the report that has it (B's when both do).")
    severity: str = Field(description="Its severity, likewise.")
    tool: str | None = Field(default=None, description="The tool at fault, if one is.")
    fixable_by: str = Field(description="`server` or `agent`, likewise.")
    occurrences_a: NonNegativeInt = Field(description="Times it was seen in run A (0 if not).")
    occurrences_b: NonNegativeInt = Field(description="Times it was seen in run B (0 if not).")
    token_cost_of_gap_a: NonNegativeInt | None = Field(
        default=None, description="Tokens lost per occurrence in run A, if it was seen there."
    )
    token_cost_of_gap_b: NonNegativeInt | None = Field(
        default=None, description="Tokens lost per occurrence in run B, if it was seen there."
    )


class ComparisonSummary(ArtifactModel):
    """The counts the verdict is made of."""

    tasks_compared: NonNegativeInt = Field(description="Tasks in both runs.")
    tasks_better: NonNegativeInt = Field(description="Tasks where B is significantly better.")
    tasks_worse: NonNegativeInt = Field(description="Tasks where B is significantly worse.")
    tasks_mixed: NonNegativeInt = Field(description="Tasks with significant changes both ways.")
    tasks_only_a: NonNegativeInt = Field(description="Tasks in run A only.")
    tasks_only_b: NonNegativeInt = Field(description="Tasks in run B only.")
    bugs_fixed: NonNegativeInt = Field(description="Bugs of A gone from B.")
    bugs_new: NonNegativeInt = Field(description="Bugs of B that A did not have.")
    bugs_unchanged: NonNegativeInt = Field(description="Bugs in both.")
    bugs_not_compared: NonNegativeInt = Field(description="Bugs seen only in tasks the other run lacks.")


class SplitComparison(ArtifactModel):
    """One split's tasks (train or holdout) from A to B, as the session summary counts them."""

    split: Literal["train", "holdout"] = Field(description="`train` or `holdout`.")
    tasks_compared: NonNegativeInt = Field(description="Tasks of this split in both runs.")
    tasks_better: NonNegativeInt = Field(description="Of them, significantly better in B.")
    tasks_worse: NonNegativeInt = Field(description="Of them, significantly worse in B.")
    tasks_mixed: NonNegativeInt = Field(description="Of them, with significant changes both ways.")
    tasks_unchanged: NonNegativeInt = Field(description="Of them, with no significant difference.")
    successes_a: NonNegativeInt = Field(description="Successes of run A's attempts at this split's tasks.")
    decided_a: NonNegativeInt = Field(description="Run A's attempts whose answer was checked or judged.")
    rate_a: Score | None = Field(default=None, description="successes_a / decided_a; absent when 0 decided.")
    successes_b: NonNegativeInt = Field(description="Likewise in run B.")
    decided_b: NonNegativeInt = Field(description="Likewise in run B.")
    rate_b: Score | None = Field(default=None, description="Likewise in run B.")
    mean_calls_a: float | None = Field(default=None, ge=0.0, description="Tool calls per attempt in run A.")
    mean_calls_b: float | None = Field(default=None, ge=0.0, description="Tool calls per attempt in run B.")
    mean_tokens_a: float | None = Field(default=None, ge=0.0, description="Tokens per attempt in run A.")
    mean_tokens_b: float | None = Field(default=None, ge=0.0, description="Tokens per attempt in run B.")
    trend: Literal["better", "worse", "same"] = Field(
        description="By success rate, then (rates equal) by fewer calls per attempt: the session "
        "summary's rule."
    )


class Comparison(ArtifactModel):
    """Two runs compared task by task and bug by bug: is run B better than run A?"""

    version: FormatVersion = Field(default=1, description=VERSION_DESCRIPTION)
    a: ComparedRun = Field(description="Run A, the reference (before a fix, or the first model).")
    b: ComparedRun = Field(description="Run B, compared against A.")
    alpha: float = Field(gt=0.0, lt=1.0, description="Significance level of every test.")
    bootstrap_resamples: int = Field(ge=1, description="Resamples of each bootstrap interval.")
    bootstrap_seed: str = Field(description="Seed of the bootstrap, with the task and measure appended.")
    changes: list[str] = Field(
        default_factory=list,
        description="What differs between the runs' manifests: server commit, model, task file, ...",
    )
    warnings: list[str] = Field(
        default_factory=list,
        description="What makes the comparison weaker: other servers, other task sets, stale reports.",
    )
    tasks: list[TaskComparison] = Field(default_factory=list, description="Every task, by id.")
    bugs: list[BugComparison] = Field(
        default_factory=list,
        description="Every bug id of either report: fixed, new, unchanged, then the rest.",
    )
    summary: ComparisonSummary = Field(description="The counts behind the verdict.")
    splits: list[SplitComparison] = Field(
        default_factory=list,
        description="Train and holdout side by side; empty unless a run has a `split: holdout` task.",
    )
    split_warnings: list[str] = Field(
        default_factory=list,
        description="`overfitting?` (train improved, holdout did not) and `holdout got worse`, by the "
        "session summary's rule.",
    )
    kpis_a: KpiReport | None = Field(
        default=None, description="Run A's key figures (its kpi.json); absent when it has none."
    )
    kpis_b: KpiReport | None = Field(
        default=None,
        description="Run B's key figures (its kpi.json), each met / not met / not measured against the "
        "targets of B's evaluation; absent when it has none.",
    )
    verdict: RunVerdict = Field(
        description="`better` (tasks improved or bugs fixed, none worse and none new, and success fell "
        "in no split), `worse` (the reverse), `mixed` (both, or better while success fell in a split), "
        "`no_significant_difference` (neither), `not_like_for_like` (the runs differ in what ran the "
        "agent, a model, the tasks or the configuration, named in `changes`: no verdict is drawn)."
    )
    verdict_line: str = Field(
        min_length=1, description="The verdict in one sentence, as the text output ends."
    )
