"""runs/baseline.json: the accepted answer for each task, shared by every run.

Why shared: a baseline is what "correct" looked like when someone last checked,
so later runs are compared with it rather than with themselves. It lives next to
the run folders (see ``rundir.baseline_path``), is rewritten only when a result
is accepted, and may be edited by hand, which is why its errors point at lines.
"""

from __future__ import annotations

from typing import Literal

from pydantic import AwareDatetime, Field, JsonValue, NonNegativeInt, field_validator

from mcpipechekr.artifacts._base import VERSION_DESCRIPTION, ArtifactModel, FormatVersion, Score, Sha256


class BaselineEntry(ArtifactModel):
    """The accepted result of one task and how far it is trusted."""

    task_id: str = Field(min_length=1, description="Id of the task in tasks.yaml.")
    result: JsonValue = Field(description="The accepted result, any JSON value.")
    plausibility_score: Score = Field(
        description="How plausible the evaluator judged the result, from 0 (implausible) to 1."
    )
    evaluator: str = Field(
        min_length=1, description="Who judged it: `rules`, or `llm:<provider>` such as `llm:openai/gpt-4o`."
    )
    timestamp: AwareDatetime = Field(description="When the result was accepted.")
    method: Literal["reference_calls", "agent", "manual"] = Field(
        default="manual",
        description="How the result was obtained: the task's `reference_calls` run without a model, "
        "a phase-0 `agent`, or written by hand (`manual`).",
    )
    calls: NonNegativeInt | None = Field(
        default=None,
        description="Tool calls the result took: the fewest seen (after a change of the server's tools, "
        "the phase-0 agent's count when it answers right in fewer calls than the reference calls).",
    )
    reference_tokens: NonNegativeInt | None = Field(
        default=None,
        description="Estimated tokens of that call sequence (arguments + results): the optimal cost.",
    )
    plausibility_reason: str | None = Field(
        default=None, description="Why the evaluator gave that score, in one sentence."
    )
    warnings: list[str] = Field(
        default_factory=list,
        description="What keeps this result from checking answers, e.g. `unchecked: ...` when it names "
        "no values to look for; answers to such a task are reported unchecked, never correct.",
    )
    tools_hash: Sha256 | None = Field(
        default=None,
        description="`tools_hash` of the tool definitions the entry was made against (as in tools.json). "
        "When the server's tools differ, the entry is stale: rebuilt by `mcpipechekr baseline` and "
        "before the loop evaluates. Absent: unknown, never counted stale.",
    )

    def is_stale(self, tools_hash: str | None) -> bool:
        """True when the entry was made against other tool definitions than `tools_hash`.

        Hand-written entries (`manual`) and entries that recorded no hash are
        never stale: the first is a person's decision, the second cannot be told.
        """
        return (
            tools_hash is not None
            and self.tools_hash is not None
            and self.method != "manual"
            and self.tools_hash != tools_hash
        )


class Baseline(ArtifactModel):
    """runs/baseline.json: accepted results per task, at most one entry per task."""

    version: FormatVersion = Field(default=1, description=VERSION_DESCRIPTION)
    generated_at: AwareDatetime = Field(description="When this file was last written.")
    mcp_server_sha: str | None = Field(
        default=None, description="Git commit of the server the results were accepted for."
    )
    tasks: list[BaselineEntry] = Field(default_factory=list, description="One entry per task.")

    @field_validator("tasks")
    @classmethod
    def _one_per_task(cls, tasks: list[BaselineEntry]) -> list[BaselineEntry]:
        seen: set[str] = set()
        for entry in tasks:
            if entry.task_id in seen:
                raise ValueError(f"task `{entry.task_id}` appears twice; keep one entry per task")
            seen.add(entry.task_id)
        return tasks

    def entry(self, task_id: str) -> BaselineEntry | None:
        """The accepted entry for a task, or None if it has no baseline yet."""
        return next((entry for entry in self.tasks if entry.task_id == task_id), None)

    def stale_tasks(self, tools_hash: str | None) -> list[str]:
        """Ids of the entries made against other tool definitions than `tools_hash`, in file order."""
        return [entry.task_id for entry in self.tasks if entry.is_stale(tools_hash)]
