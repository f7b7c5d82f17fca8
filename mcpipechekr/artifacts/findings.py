"""The finding: the unit the promote, lifecycle, verify, export and serve modules share.

Its formats (a finding, and the `mcpipechekr findings --format json` list)
live here with the other file formats, so that the schema export
(`schemas.py`) needs nothing from the findings package, which builds on this one.

A finding is either promoted from recurring captured failures (`origin:
captured`) or registered from a Phase 2 bug report entry (`origin: bug_report`,
keyed by the bug's stable id). Either way it has one lifecycle.
"""

from __future__ import annotations

from typing import Literal

from pydantic import AwareDatetime, Field

from mcpipechekr.artifacts._base import VERSION_DESCRIPTION, ArtifactModel, FormatVersion

FindingState = Literal["open", "fix-claimed", "verifying", "closed"]
Severity = Literal["low", "medium", "high", "critical"]
DefectClass = Literal[
    "unhandled_exception",
    "validation_error",
    "timeout",
    "not_found",
    "permission",
    "false_success",
    "efficiency",
    "correctness",
    "feature_gap",
    "other",
]
FINDING_ID_PATTERN = r"^finding-[0-9a-f]{16}$"


class Finding(ArtifactModel):
    """One recurring defect, sanitized: identifiers, shapes and aggregates, never raw values or texts."""

    id: str = Field(
        pattern=FINDING_ID_PATTERN, description="`finding-` + 16 hex digits; stable across rebuilds."
    )
    origin: Literal["captured", "bug_report"] = Field(
        description="`captured`: promoted from call records; `bug_report`: a Phase 2 bug entry."
    )
    bug_id: str | None = Field(
        default=None, description="bug_report origin: the stable bug id (EFF-…, BUG-…)."
    )
    server: str = Field(min_length=1, description="Server name the failures came from.")
    tool: str | None = Field(default=None, description="The tool at fault, if one is.")
    template_id: str | None = Field(
        default=None, description="Salted identifier of the error message template (never the text)."
    )
    defect_class: DefectClass = Field(description="What kind of defect it is (see docs/findings.md).")
    hint: str = Field(min_length=1, description="One line: the server-side fix this class usually needs.")
    severity: Severity = Field(description="How much it hurts; capped at medium without a probe.")
    probe: bool = Field(
        default=True,
        description="Whether a fix can be checked automatically (a generated case for a captured "
        "finding, the loop's next run for a bug-report one); without a probe a finding stays open "
        "until closed by hand.",
    )
    err_code: str | None = Field(default=None, description="The most frequent error code.")
    err_codes: list[str] = Field(default_factory=list, description="Every distinct error code seen.")
    rate: float = Field(ge=0.0, le=1.0, description="Observed failure rate of the group.")
    score: float = Field(ge=0.0, description="Promotion score (see docs/findings.md).")
    occurrences: int = Field(ge=0, description="Failing calls (or bug occurrences) in the group.")
    sessions: int = Field(ge=0, description="Distinct sessions the group was seen in.")
    blast_radius: int = Field(ge=0, description="Distinct tools affected by this template.")
    retryable: bool | None = Field(
        default=None, description="true when every failure was retryable, false when none, null when mixed."
    )
    arg_shapes: list[dict[str, str]] = Field(
        default_factory=list, description="Argument shapes (key → type) seen on failing calls."
    )
    first_seen: AwareDatetime | None = Field(default=None, description="Earliest evidence.")
    last_seen: AwareDatetime | None = Field(default=None, description="Latest evidence.")
    state: FindingState = Field(default="open", description="Lifecycle state (see docs/findings.md).")
    streak: int = Field(
        default=0, ge=0, description="Consecutive green verifications under one credit binding."
    )


class FindingsList(ArtifactModel):
    """`mcpipechekr findings --format json`: the registered findings, sanitized."""

    version: FormatVersion = Field(default=1, description=VERSION_DESCRIPTION)
    findings: list[Finding] = Field(
        default_factory=list, description="Open first, then by severity and score."
    )


def shape_text(shape: dict[str, str]) -> str:
    """An argument shape (`Finding.arg_shapes`) as `{key: type, …}`, the one way views and generated
    cases write it."""
    return "{" + ", ".join(f"{key}: {kind}" for key, kind in shape.items()) + "}"
