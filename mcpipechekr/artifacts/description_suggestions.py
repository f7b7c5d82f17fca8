"""runs/{run-id}/description_suggestions.json: new tool and parameter texts for bugs a description caused.

Why a file of its own: `mcpipechekr lint --suggest` reads an evaluated run
(its bug report, its traces and the tools.json the agents were shown) and
proposes, for each bug whose cause is a description, the text that would have
steered the agent right, with the trace steps that show the need and the
selection test run again with the new text. The fix loop gives a bug's
suggestion to the fix agent; a person can apply it by hand. The file names the
bug report it was made from (`bug_report_hash`), so a suggestion for an older
evaluation is never mistaken for one of the current report.
"""

from __future__ import annotations

from typing import Literal

from pydantic import AwareDatetime, Field, NonNegativeInt, PositiveInt

from mcpipechekr.artifacts._base import (
    VERSION_DESCRIPTION,
    ArtifactModel,
    FormatVersion,
    RunId,
    Score,
    Sha256,
)
from mcpipechekr.artifacts.bug_report import BugType

SuggestionKind = Literal["wrong_tool", "late_tool", "unused_parameter", "parameter_values"]
Verdict = Literal["better", "same", "worse"]


class TextEdit(ArtifactModel):
    """One description replaced: a tool's, or one parameter's."""

    tool: str = Field(min_length=1, description="The tool whose text changes.")
    parameter: str | None = Field(
        default=None, description="The parameter whose description changes; absent for the tool's own."
    )
    current: str | None = Field(
        default=None, description="The text as the run's tools.json has it; absent when there is none."
    )
    proposed: str = Field(min_length=1, description="The text proposed in its place, whole.")


class StepQuote(ArtifactModel):
    """One trace step that shows why the text must change."""

    trace: str = Field(min_length=1, description="Trace file, relative to the run folder.")
    task_id: str = Field(min_length=1, description="The trace's task.")
    step: NonNegativeInt = Field(description="Index of the step in the trace (from 0).")
    call: str = Field(min_length=1, description="What the agent called: the tool and its arguments.")
    agent_said: str | None = Field(
        default=None, description="The agent's text in the turn before the call (its reason), cut short."
    )
    why: str = Field(min_length=1, description="What the step shows about the description.")


class QueryChange(ArtifactModel):
    """One selection query before and after the rewrite."""

    source: str = Field(min_length=1, description="`task:<id>` or `case:<n>` (tasks.yaml's selection cases).")
    query: str = Field(min_length=1, description="The query text.")
    expected_tool: str = Field(min_length=1, description="The tool that should answer it.")
    picked_before: str | None = Field(
        default=None, description="The tool picked with the current texts (most often, for a model)."
    )
    picked_after: str | None = Field(default=None, description="The tool picked with the proposed texts.")
    rank_before: PositiveInt | None = Field(
        default=None,
        description="Lexical selector only: the expected tool's place among the tools (1: picked); absent "
        "when it shares no word with the query, or for a model.",
    )
    rank_after: PositiveInt | None = Field(
        default=None, description="The same place with the proposed texts."
    )
    right_before: Score = Field(description="Share of the samples that picked the expected tool, before.")
    right_after: Score = Field(description="The same share with the proposed texts.")


class ToolFigures(ArtifactModel):
    """Selection precision and recall of one tool the rewrite concerns, before and after."""

    tool: str = Field(min_length=1, description="Tool name.")
    precision_before: Score | None = Field(
        default=None,
        description="Of the samples that picked it, the share it was right; absent if never picked.",
    )
    precision_after: Score | None = Field(default=None, description="The same with the proposed texts.")
    recall_before: Score | None = Field(
        default=None,
        description="Of the samples that needed it, the share that picked it; absent if never needed.",
    )
    recall_after: Score | None = Field(default=None, description="The same with the proposed texts.")


class ParameterRank(ArtifactModel):
    """Where the parameter stands among its tool's parameters for a query, by the words they share."""

    source: str = Field(min_length=1, description="The query: `task:<id>` or `case:<n>`.")
    parameters: PositiveInt = Field(description="How many parameters the tool has.")
    rank_before: PositiveInt | None = Field(
        default=None,
        description="The parameter's place (1: first) with its current text; absent when it "
        "shares no word with the query.",
    )
    rank_after: PositiveInt | None = Field(default=None, description="Its place with the proposed text.")


class Rescore(ArtifactModel):
    """The selection test run again with the proposed texts, by one selector."""

    selector: str = Field(
        min_length=1, description="`lexical-bm25` (offline) or `llm:<provider/model>` (`providers.phase05`)."
    )
    queries: NonNegativeInt = Field(
        description="Queries asked: the run's task prompts and tasks.yaml's cases."
    )
    right_before: float = Field(
        ge=0.0, description="Queries answered by their expected tool, before (samples averaged)."
    )
    right_after: float = Field(ge=0.0, description="The same with the proposed texts.")
    changes: list[QueryChange] = Field(
        default_factory=list,
        description="The bug's own tasks first, then every other query whose pick or rank moved.",
    )
    tools: list[ToolFigures] = Field(
        default_factory=list, description="Precision and recall of the tools the bug concerns."
    )
    parameter: list[ParameterRank] = Field(
        default_factory=list,
        description="Lexical selector, parameter suggestions: the parameter's place for the bug's tasks.",
    )
    verdict: Verdict = Field(
        description="`better`, `same` or `worse`: the bug's tasks (picks, then places, then a parameter's "
        "places) and all queries."
    )


class DescriptionSuggestion(ArtifactModel):
    """A new text for one bug's tool or parameter, the evidence for it, and its re-score."""

    bug_id: str = Field(min_length=1, description="The bug in bug_report.json.")
    bug_type: BugType = Field(description="The bug's type.")
    kind: SuggestionKind = Field(
        description="`wrong_tool` (the right tool never called), `late_tool` (called after others), "
        "`unused_parameter` (a parameter that would have saved calls went unused), `parameter_values` "
        "(the agent had to guess a parameter's accepted values)."
    )
    tool: str = Field(min_length=1, description="The tool whose text changes first.")
    parameter: str | None = Field(default=None, description="The parameter whose text changes, if one.")
    current: str | None = Field(
        default=None, description="Its text now (tools.json); absent when there is none."
    )
    proposed: str = Field(min_length=1, description="The text proposed in its place, whole.")
    also: list[TextEdit] = Field(
        default_factory=list,
        description="Other texts to change with it (the tool agents took instead: what it is not for).",
    )
    origin: Literal["evidence", "model"] = Field(
        description="`evidence`: built offline from the traces, tasks and tools.json; `model`: drafted by "
        "the phase-0.5 model and kept because it scored no worse."
    )
    reasoning: str = Field(min_length=1, description="How the text was built, from which evidence.")
    quotes: list[StepQuote] = Field(default_factory=list, description="The trace steps that motivate it.")
    rescores: list[Rescore] = Field(
        default_factory=list, description="The selection test with the proposed texts, per selector."
    )
    notes: list[str] = Field(
        default_factory=list, description="What else to know: a draft not kept, a limit."
    )

    def edits(self) -> list[TextEdit]:
        """Every text the suggestion changes: its own first, then `also`."""
        main = TextEdit(
            tool=self.tool, parameter=self.parameter, current=self.current, proposed=self.proposed
        )
        return [main, *self.also]


class SkippedBug(ArtifactModel):
    """A bug of the report with no suggestion, and why."""

    bug_id: str = Field(min_length=1, description="The bug in bug_report.json.")
    reason: str = Field(min_length=1, description="Why no description change is proposed for it.")


class DescriptionSuggestions(ArtifactModel):
    """runs/{run-id}/description_suggestions.json: what `mcpipechekr lint --suggest` proposed for a run."""

    version: FormatVersion = Field(default=1, description=VERSION_DESCRIPTION)
    run_id: RunId = Field(description="The evaluated run.")
    generated_at: AwareDatetime = Field(description="When the suggestions were made.")
    bug_report_hash: Sha256 = Field(description="Hash of the bug_report.json bytes they were made from.")
    tools_hash: Sha256 = Field(description="tools_hash of the run's tools.json: the texts they start from.")
    selectors: list[str] = Field(
        default_factory=list, description="The selectors each rewrite was scored by."
    )
    suggestions: list[DescriptionSuggestion] = Field(
        default_factory=list, description="One per bug a description caused, in the report's order."
    )
    skipped: list[SkippedBug] = Field(
        default_factory=list, description="Every other bug of the report, with the reason it has none."
    )

    def for_bug(self, bug_id: str) -> DescriptionSuggestion | None:
        """The suggestion for one bug, or None."""
        return next((item for item in self.suggestions if item.bug_id == bug_id), None)
