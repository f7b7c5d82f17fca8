"""runs/{run-id}/review.json: the human's decision on a run's bug report.

Nothing in the server's repository changes without a person's approval, and an
approval is only worth something if it is tied to what the person saw. So the
decision records the hash of the exact bug_report.json bytes that were shown:
if the report is rewritten afterwards (a re-evaluation, a hand edit), the
approval no longer matches and the fix loop refuses to start until someone
reviews again. Annotations are the reviewer's guidance for the fix agent; they
travel into the Phase 3 prompt.
"""

from __future__ import annotations

from typing import Literal

from pydantic import AwareDatetime, Field

from mcpipechekr.artifacts._base import (
    VERSION_DESCRIPTION,
    ArtifactModel,
    FormatVersion,
    RunId,
    Sha256,
)

ReviewDecision = Literal["approve", "exit"]


class Annotation(ArtifactModel):
    """A note from the reviewer to the fix agent, e.g. how a defect should be fixed."""

    text: str = Field(min_length=1, description="The note, as typed; added to the Phase 3 prompt.")
    by: str = Field(min_length=1, description="Who wrote it (the local user name).")
    at: AwareDatetime = Field(description="When it was written.")


class Review(ArtifactModel):
    """runs/{run-id}/review.json: approve (the fix loop may run) or exit (stop here), for one bug report."""

    version: FormatVersion = Field(default=1, description=VERSION_DESCRIPTION)
    run_id: RunId = Field(description="The run whose bug report was reviewed.")
    decision: ReviewDecision = Field(
        description="`approve`: Phase 3 may fix the bugs listed; `exit`: the reviewer stopped the loop here."
    )
    annotations: list[Annotation] = Field(
        default_factory=list, description="The reviewer's notes for the fix agent, oldest first."
    )
    decided_by: str = Field(min_length=1, description="Who decided (the local user name).")
    decided_at: AwareDatetime = Field(description="When the decision was made.")
    bug_report_hash: Sha256 = Field(
        description="Hash of the bug_report.json bytes that were reviewed; an approval counts only while "
        "the file still has this hash."
    )
    bug_ids: list[str] = Field(
        default_factory=list,
        description="The bugs of that report the fix loop works on (`fixable_by: server`), in fix order "
        "(severity, then highest token_cost_of_gap), as shown.",
    )
