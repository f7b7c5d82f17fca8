"""runs/{run-id}/tef_report.json: how well the tool descriptions steer an agent to the right tool.

Tool-description evaluation (TEF) combines static lint findings, a tool-selection
test (for each task, which tool would a selector pick from the descriptions
alone, scored per tool as precision/recall), pairs of tools whose descriptions
overlap enough to confuse, security findings in description text, and drift
against the previous run's tool list. ``summary`` repeats the counts so a
glance (or a doit check) need not walk the lists; it is computed from them
and a file whose summary disagrees with its lists is rejected.
"""

from __future__ import annotations

from typing import Literal

from pydantic import AwareDatetime, Field, NonNegativeInt, PositiveInt, model_validator

from mcpipechekr.artifacts._base import (
    VERSION_DESCRIPTION,
    AcceptedRisk,
    ArtifactModel,
    FormatVersion,
    Score,
    Sha256,
)

FindingSeverity = Literal["error", "warning", "info"]


class StaticFinding(ArtifactModel):
    """A lint rule that a tool's description or schema breaks."""

    rule_id: str = Field(min_length=1, description="Rule that fired, e.g. `TEF-D001`.")
    severity: FindingSeverity = Field(description="`error`, `warning` or `info`.")
    message: str = Field(min_length=1, description="What is wrong.")
    suggestion: str | None = Field(default=None, description="How to fix it, if the rule knows.")


class Confusion(ArtifactModel):
    """How often the selector picked one tool when another was expected."""

    picked: str = Field(min_length=1, description="Tool the selector chose.")
    expected: str = Field(min_length=1, description="Tool the task needed.")
    count: int = Field(ge=1, description="Times this mix-up happened.")


class ToolEvaluation(ArtifactModel):
    """Lint findings and selection scores of one tool."""

    name: str = Field(min_length=1, description="Tool name as listed by the server.")
    findings: list[StaticFinding] = Field(default_factory=list, description="Static lint findings.")
    precision: Score | None = Field(
        default=None,
        description="Of the times it was picked, the share it was right; absent if never picked.",
    )
    recall: Score | None = Field(
        default=None,
        description="Of the times it was needed, the share it was picked; absent if never needed.",
    )
    f1: Score | None = Field(
        default=None, description="Harmonic mean of precision and recall, when both exist."
    )
    support: NonNegativeInt = Field(default=0, description="Selection cases that needed this tool.")
    misleading: bool = Field(
        default=False, description="True if its description draws picks meant for other tools."
    )
    confusions: list[Confusion] = Field(
        default_factory=list, description="Mix-ups where this tool was picked or expected."
    )


class Overlap(ArtifactModel):
    """Two tools whose descriptions are similar enough to confuse a selector."""

    tool_a: str = Field(min_length=1, description="First tool of the pair.")
    tool_b: str = Field(min_length=1, description="Second tool of the pair.")
    score: Score = Field(description="Combined overlap score; higher means more confusable.")
    lexical: Score = Field(description="Similarity of the description texts.")
    param_jaccard: Score = Field(description="Jaccard similarity of the parameter names.")
    shared_terms: list[str] = Field(
        default_factory=list, description="Distinctive terms both descriptions use."
    )


class SecurityFinding(ArtifactModel):
    """Text in a description that could steer an agent against its user (hidden instructions, secrets)."""

    tool: str = Field(min_length=1, description="Tool whose description contains it.")
    rule_id: str = Field(min_length=1, description="Rule that fired, e.g. `TEF-S001`.")
    severity: FindingSeverity = Field(description="`error`, `warning` or `info`.")
    span: str = Field(description="The offending text, as found.")
    start: NonNegativeInt = Field(description="Character offset where the span starts in the description.")
    end: NonNegativeInt = Field(description="Character offset just past the span.")
    location: str = Field(
        default="description",
        description="Which text holds the span: `description`, or `parameter 'NAME'` for a parameter's.",
    )
    message: str = Field(min_length=1, description="Why it is a risk.")

    @classmethod
    def in_text(
        cls,
        tool: str,
        text: str,
        start: int,
        end: int,
        *,
        rule_id: str,
        severity: str,
        location: str,
        message: str,
    ) -> SecurityFinding:
        """The finding for `text[start:end]`: the span is cut from the text the offsets index."""
        return cls.model_validate(
            {
                "tool": tool,
                "rule_id": rule_id,
                "severity": severity,
                "span": text[start:end],
                "start": start,
                "end": end,
                "location": location,
                "message": message,
            }
        )

    @model_validator(mode="after")
    def _ordered(self) -> SecurityFinding:
        if self.end < self.start:
            raise ValueError("`end` is before `start`")
        return self


class ToolChange(ArtifactModel):
    """A tool whose description or schema changed since the previous run."""

    tool: str = Field(min_length=1, description="Tool name.")
    diff: str = Field(
        description="Unified diff of its definition (title, description, schemas, annotations) as JSON."
    )


class Drift(ArtifactModel):
    """What changed in the tool list since the previous run."""

    added: list[str] = Field(default_factory=list, description="Tools that are new.")
    removed: list[str] = Field(default_factory=list, description="Tools that are gone.")
    changed: list[ToolChange] = Field(
        default_factory=list, description="Tools whose description or schema changed."
    )


class TefSummary(ArtifactModel):
    """Counts over the lists of the report."""

    tools: NonNegativeInt = Field(default=0, description="Tools evaluated.")
    errors: NonNegativeInt = Field(default=0, description="Static and security findings of severity `error`.")
    warnings: NonNegativeInt = Field(
        default=0, description="Static and security findings of severity `warning`."
    )
    infos: NonNegativeInt = Field(default=0, description="Static and security findings of severity `info`.")
    misleading_tools: NonNegativeInt = Field(default=0, description="Tools marked misleading.")
    overlaps: NonNegativeInt = Field(default=0, description="Confusable tool pairs.")
    security_findings: NonNegativeInt = Field(default=0, description="Security findings.")
    drift_changes: NonNegativeInt = Field(default=0, description="Tools added, removed or changed.")


class TefReport(ArtifactModel):
    """runs/{run-id}/tef_report.json: the tool-description evaluation of one run."""

    version: FormatVersion = Field(default=1, description=VERSION_DESCRIPTION)
    generated_at: AwareDatetime = Field(description="When the evaluation ran.")
    server: str = Field(min_length=1, description="The server's short name from config.yaml.")
    tools_hash: Sha256 = Field(description="Hash of the tool list (names, descriptions, schemas) evaluated.")
    selector: str = Field(
        pattern=r"^(lexical-bm25|llm:.+)$",
        description="What picked tools in the selection test: `lexical-bm25` (word overlap, no model: its "
        "low precisions are notes) or `llm:<provider>` (a model: they are warnings).",
    )
    selection_cases: NonNegativeInt = Field(
        default=0,
        description="Queries in the selection test: tasks with an `expected_tool` or reference calls, "
        "and `selection_cases`.",
    )
    repeat: PositiveInt = Field(default=1, description="Samples the selector was asked for per query.")
    tools: list[ToolEvaluation] = Field(default_factory=list, description="One entry per tool.")
    overlaps: list[Overlap] = Field(
        default_factory=list, description="Confusable pairs, highest score first."
    )
    security: list[SecurityFinding] = Field(default_factory=list, description="Security findings.")
    drift: Drift = Field(default_factory=Drift, description="Changes since the previous run.")
    summary: TefSummary = Field(
        default_factory=TefSummary, description="Counts over the lists above; computed when omitted."
    )
    accepted_risks: list[AcceptedRisk] = Field(
        default_factory=list,
        description="Findings accepted as known risks; they are left out of the lists and counts above.",
    )

    def compute_summary(self) -> TefSummary:
        """The counts implied by the lists, which is what ``summary`` must say."""
        severities = [f.severity for tool in self.tools for f in tool.findings]
        severities += [f.severity for f in self.security]
        return TefSummary(
            tools=len(self.tools),
            errors=severities.count("error"),
            warnings=severities.count("warning"),
            infos=severities.count("info"),
            misleading_tools=sum(1 for tool in self.tools if tool.misleading),
            overlaps=len(self.overlaps),
            security_findings=len(self.security),
            drift_changes=len(self.drift.added) + len(self.drift.removed) + len(self.drift.changed),
        )

    @model_validator(mode="after")
    def _summary_matches(self) -> TefReport:
        computed = self.compute_summary()
        if "summary" not in self.model_fields_set:
            self.summary = computed
        elif self.summary != computed:
            raise ValueError(
                f"`summary` does not match the lists (they give {computed.model_dump()}); "
                "fix the counts or remove `summary` to have it computed"
            )
        return self
