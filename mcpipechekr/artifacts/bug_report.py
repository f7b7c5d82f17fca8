"""runs/{run-id}/bug_report.json: what agents got wrong or paid too much for, priced in tokens.

Each bug is written so it can be fixed and verified without the trace at hand:
a trigger, what was observed, what was expected, acceptance criteria, and the
token cost of the gap between the observed and the optimal call sequence.
Evidence points back into the traces by file and step index. Per-task
statistics carry confidence intervals because agent runs are noisy.

Bug ids are `<PREFIX>-<slug>`; the prefix names the type (see ``BUG_ID_PREFIXES``)
so an id alone says what kind of problem it is, and the slug stays the same
across runs for the same problem, which is what lets a fix be checked later.
"""

from __future__ import annotations

import re
from typing import Any, Literal

from pydantic import AwareDatetime, Field, JsonValue, NonNegativeInt, model_validator

from mcpipechekr.artifacts._base import (
    VERSION_DESCRIPTION,
    ArtifactModel,
    FormatVersion,
    RunId,
    Score,
)

BugType = Literal["bug", "feature_gap", "efficiency", "correctness", "description"]
BugSeverity = Literal["low", "medium", "high"]
FixableBy = Literal["server", "agent"]
"""Who can remove a bug: `server` (a change to the server's code or descriptions), `agent` (the model's
behaviour, with no server-side lever: kept as evidence, never sent to the fix loop)."""

BUG_ID_PREFIXES: dict[str, str] = {
    "bug": "BUG",
    "feature_gap": "GAP",
    "efficiency": "EFF",
    "correctness": "COR",
    "description": "DSC",
}
BUG_ID_PATTERN = r"^(BUG|GAP|EFF|COR|DSC)-[a-z0-9]+(-[a-z0-9]+)*$"


def bug_id(bug_type: BugType, *parts: str) -> str:
    """Build a stable id such as `EFF-no-date-sort-query-email-database` from free-text parts."""
    slug = "-".join(piece for part in parts for piece in re.split(r"[^a-z0-9]+", part.lower()) if piece)
    if not slug:
        raise ValueError("a bug id needs at least one word after its prefix")
    return f"{BUG_ID_PREFIXES[bug_type]}-{slug}"


class Evidence(ArtifactModel):
    """Where in the traces a bug was seen."""

    task_id: str = Field(min_length=1, description="Task whose trace shows the bug.")
    trace: str = Field(
        min_length=1, description="Trace file, relative to the run folder, e.g. `traces/<file>.json`."
    )
    steps: list[NonNegativeInt] = Field(
        default_factory=list, description="Indexes (from 0) of the trace steps that show it."
    )
    tool: str | None = Field(
        default=None,
        description="The tool this trace wasted its calls on, when it is not the bug's own `tool`.",
    )
    expected_tool: str | None = Field(
        default=None,
        description="The tool this task should have used, when the bug is about a choice of tool.",
    )


class Bug(ArtifactModel):
    """One problem, with what it costs and how to tell it is fixed."""

    id: str = Field(
        pattern=BUG_ID_PATTERN,
        description="Stable id `<PREFIX>-<slug>`: BUG, GAP (feature gap), EFF, COR or DSC (description).",
    )
    type: BugType = Field(description="What kind of problem it is; must match the id's prefix.")
    severity: BugSeverity = Field(description="How much it hurts agents using the server.")
    source: Literal["analyzer", "llm"] = Field(
        description="`analyzer` for deterministic trace analysis, `llm` for the phase-2 model."
    )
    tool: str | None = Field(default=None, description="The tool at fault, if one is.")
    task_id: str | None = Field(default=None, description="The task where it was first seen, if one.")
    trigger: str = Field(min_length=1, description="What the agent was doing when it happened.")
    observed: str = Field(min_length=1, description="What happened.")
    expected: str = Field(min_length=1, description="What should have happened.")
    acceptance_criteria: list[str] = Field(
        default_factory=list, description="Checks that pass once the bug is fixed."
    )
    token_cost_observed: int = Field(
        ge=0,
        description="Tokens the steps showing this bug cost: their calls, plus the model turns around "
        "wasted calls.",
    )
    token_cost_optimal: int = Field(ge=0, description="Tokens the optimal call sequence would cost.")
    token_cost_of_gap: int = Field(ge=0, description="Tokens lost to this bug per occurrence.")
    occurrences: int = Field(default=1, ge=1, description="How many times it was seen in this run.")
    task_ids: list[str] = Field(default_factory=list, description="Every task where it was seen.")
    evidence: list[Evidence] = Field(default_factory=list, description="Trace steps that show it.")
    details: dict[str, JsonValue] = Field(
        default_factory=dict,
        description="Facts of the first occurrence for whoever fixes it, e.g. `windows` walked, "
        "`error_text`, `unread_fields` with their tokens.",
    )
    fixable_by: FixableBy = Field(
        default="server",
        description="`server`: a change to the server's code or tool descriptions can remove it, so the fix "
        "loop works on it; `agent`: how the model behaved, with no server-side lever, kept as evidence "
        "and never sent to the fix loop.",
    )
    expected_tool: str | None = Field(
        default=None,
        description="The tool that should have been used instead of `tool`, when another one should have.",
    )
    see_also: list[str] = Field(
        default_factory=list,
        description="Bugs that own (and price) steps this one also saw: each wasted step is priced once.",
    )

    @model_validator(mode="after")
    def _prefix_matches_type(self) -> Bug:
        expected = BUG_ID_PREFIXES[self.type]
        if not self.id.startswith(expected + "-"):
            raise ValueError(f"a `{self.type}` bug id starts with `{expected}-` (got `{self.id}`)")
        return self


class TaskStats(ArtifactModel):
    """How reliably agents solved one task across repetitions."""

    task_id: str = Field(min_length=1, description="Id of the task in tasks.yaml.")
    runs: int = Field(ge=0, description="Repetitions evaluated.")
    successes: int = Field(ge=0, description="Repetitions whose answer was checked or judged correct.")
    undecided: int = Field(
        default=0,
        ge=0,
        description="Repetitions whose answer was neither checked nor judged (`unchecked`, `unjudged`): "
        "counted neither as successes nor as failures; the success rate, Wilson interval, pass@k and "
        "pass^k are over the other runs.",
    )
    success_rate: Score = Field(
        description="successes / (runs - undecided) (0 when no run was decided, see `correctness`)."
    )
    wilson_low: Score = Field(description="Lower bound of the 95% Wilson interval of the success rate.")
    wilson_high: Score = Field(description="Upper bound of the 95% Wilson interval of the success rate.")
    k: int = Field(default=1, ge=1, description="The k of pass@k and pass^k.")
    pass_at_k: Score = Field(description="Chance that at least one of k attempts succeeds (pass@k).")
    pass_hat_k: Score = Field(description="Chance that all k attempts succeed (pass^k).")
    efficiency_ratio: float | None = Field(
        default=None,
        ge=0.0,
        description="Optimal tokens / observed tokens over successful runs (1 is optimal); absent if none.",
    )
    provider: str | None = Field(
        default=None, description="Phase 1 provider of these runs (a run may compare several)."
    )
    min_calls: int | None = Field(
        default=None, ge=0, description="Known minimum of tool calls (min_calls, reference calls, baseline)."
    )
    mean_calls: float | None = Field(default=None, ge=0.0, description="Mean tool calls per run.")
    call_ratio: float | None = Field(
        default=None, ge=0.0, description="mean_calls / min_calls (1 is optimal); absent without a minimum."
    )
    mean_tokens_observed: float | None = Field(
        default=None, ge=0.0, description="Mean tokens per run, as the provider reported them or estimated."
    )
    tokens_source: Literal["reported", "estimated", "mixed"] | None = Field(
        default=None, description="Whether mean_tokens_observed was reported, estimated, or both."
    )
    token_cost_optimal: int | None = Field(
        default=None, ge=0, description="Estimated tokens of the minimum call sequence (from the baseline)."
    )
    correctness: Literal["checked", "judged", "unchecked", "unjudged"] | None = Field(
        default=None,
        description="How answers were decided: `checked` against the baseline's values, `judged` by the "
        "phase-2 model, `unchecked` (nothing to check against) or `unjudged` (open-ended, no phase-2 "
        "model). Unchecked and unjudged answers are not failed, and not shown correct either.",
    )
    correctness_reason: str | None = Field(
        default=None, description="Why correctness was decided that way, e.g. why a task is unchecked."
    )
    split: Literal["train", "holdout"] = Field(
        default="train",
        description="The task's split in tasks.yaml: a `holdout` task's bugs are never shown to the review, "
        "the fix agent or the findings home (`BugReport.train_view`).",
    )

    @model_validator(mode="after")
    def _consistent(self) -> TaskStats:
        if self.successes > self.runs:
            raise ValueError(f"`successes` ({self.successes}) exceeds `runs` ({self.runs})")
        if self.wilson_low > self.wilson_high:
            raise ValueError("`wilson_low` is above `wilson_high`")
        return self


class ReviewFlag(ArtifactModel):
    """An answer a person should look at: it may be right, but no rule can tell."""

    task_id: str = Field(min_length=1, description="Task of the answer.")
    trace: str = Field(min_length=1, description="Trace file, relative to the run folder.")
    similarity: Score = Field(description="Lexical similarity of the answer to the baseline result.")
    divergence: Score = Field(
        description="1 - similarity; flagged for a person when above the configured threshold (a hint "
        "only: it never fails an answer)."
    )
    reason: str = Field(min_length=1, description="Why it was flagged.")


class ErroredAttempt(ArtifactModel):
    """An attempt that is no answer (its agent never had a working server, or the agent, its runner or
    its model failed): left out of the evaluation, never judged."""

    trace: str = Field(min_length=1, description="The trace file, relative to the run folder.")
    task_id: str = Field(min_length=1, description="Its task.")
    reason: str = Field(description="Why its tries had no working server (the trace's status_reason).")


class BugReport(ArtifactModel):
    """runs/{run-id}/bug_report.json: the evaluated bugs and per-task statistics of one run."""

    version: FormatVersion = Field(default=1, description=VERSION_DESCRIPTION)
    run_id: RunId = Field(description="The run whose traces were evaluated.")
    phase1_provider: str = Field(min_length=1, description="Model that produced the traces.")
    phase2_provider: str | None = Field(
        default=None, description="Model that evaluated them; absent when only the analyzer ran."
    )
    evaluated_at: AwareDatetime = Field(description="When the evaluation finished.")
    bugs: list[Bug] = Field(default_factory=list, description="Problems found, most costly first.")
    tasks: list[TaskStats] = Field(default_factory=list, description="Statistics per task.")
    review_flags: list[ReviewFlag] = Field(
        default_factory=list, description="Open-ended answers that diverge from the baseline."
    )
    notes: list[str] = Field(
        default_factory=list,
        description="What the evaluation could not do: unreadable traces, failed analyzers, no baseline.",
    )
    errored: list[ErroredAttempt] = Field(
        default_factory=list,
        description="Attempts that are no answer: recorded `errored` (the server did not start or "
        "connect, twice) or `error` (the agent, its runner or its model provider failed): an "
        "infrastructure failure, so neither their calls nor their answers are evaluated or counted.",
    )

    def holdout_task_ids(self) -> set[str]:
        """Ids of the tasks evaluated as `split: holdout`."""
        return {stats.task_id for stats in self.tasks if stats.split == "holdout"}

    def train_view(self) -> BugReport:
        """The report as the fix loop may see it: nothing learnt from holdout tasks.

        Why: holdout tasks measure whether fixes help beyond the tasks they were
        made from; a fix agent that saw their traces would be fitted to them too.
        A bug seen only in holdout tasks is left out; another one keeps its train
        tasks and evidence alone. When it was first seen in a holdout task, its
        `task_id` becomes its first train task and its `details` (facts of that
        first occurrence) are dropped. Its `trigger`, `observed` and
        `expected` text is kept as the evaluation wrote it.
        """
        holdout = self.holdout_task_ids()
        if not holdout:
            return self
        bugs = []
        for bug in self.bugs:
            seen = {*bug.task_ids, *(item.task_id for item in bug.evidence)}
            if bug.task_id:
                seen.add(bug.task_id)
            if seen and seen <= holdout:
                continue
            task_ids = [task_id for task_id in bug.task_ids if task_id not in holdout]
            evidence = [item for item in bug.evidence if item.task_id not in holdout]
            update: dict[str, Any] = {"task_ids": task_ids, "evidence": evidence}
            if bug.task_id in holdout:
                update["task_id"] = next(iter([*task_ids, *(item.task_id for item in evidence)]), None)
                update["details"] = {}
            bugs.append(bug.model_copy(update=update))
        return self.model_copy(update={"bugs": bugs})

    @model_validator(mode="after")
    def _unique_ids(self) -> BugReport:
        seen: set[str] = set()
        for bug in self.bugs:
            if bug.id in seen:
                raise ValueError(f"bug id `{bug.id}` appears twice; merge them and count `occurrences`")
            seen.add(bug.id)
        return self
