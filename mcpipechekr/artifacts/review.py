"""runs/{run-id}/review.json: the human's decision on a run's bug report.

Nothing in the server's repository changes without a person's approval, and an
approval is only worth something if it is tied to what the person saw. So the
decision records the hash of the exact bug_report.json bytes that were shown:
if the report is rewritten afterwards (a re-evaluation, a hand edit), the
approval no longer matches and the fix loop refuses to start until someone
reviews again. Annotations are the reviewer's guidance for the fix agent; they
travel into the Phase 3 prompt.

An approval covers exactly the bug ids it lists, and only a review written by
`mcpipechekr review` counts: `seal` is an HMAC over the rest of the file, keyed
by a secret next to the runs (see mcpipechekr.review). A file written or
widened by hand has no valid seal and approves nothing.

Where nothing is fixed (no `server.repo`, or `fix.agent: none`) or the reviewer
prefers it, the decision is `export`: the bugs listed were written as issues for
the server's authors, one markdown file each in runs/{run-id}/issues/, and the
session ends there as it does on `exit`.

Format versions: 2 added `seal`. A version 1 file (written before) still
reads, but, unsealed, approves nothing: review the run again.
"""

from __future__ import annotations

from typing import Literal

from pydantic import AwareDatetime, Field

from mcpipechekr.artifacts._base import (
    VERSION_DESCRIPTION,
    ArtifactModel,
    RunId,
    Sha256,
)

ReviewDecision = Literal["approve", "exit", "export"]

REVIEW_VERSION = 2
"""review.json's format version; see the module docstring for what each version added."""


class Annotation(ArtifactModel):
    """A note from the reviewer to the fix agent, e.g. how a defect should be fixed."""

    text: str = Field(min_length=1, description="The note, as typed; added to the Phase 3 prompt.")
    by: str = Field(min_length=1, description="Who wrote it (the local user name).")
    at: AwareDatetime = Field(description="When it was written.")


class Review(ArtifactModel):
    """runs/{run-id}/review.json: approve (the fix loop may run), export or exit, for one bug report."""

    version: Literal[1, 2] = Field(default=REVIEW_VERSION, description=VERSION_DESCRIPTION)
    run_id: RunId = Field(description="The run whose bug report was reviewed.")
    decision: ReviewDecision = Field(
        description="`approve`: Phase 3 may fix the bugs listed; `export`: the bugs listed were written as "
        "issues for the server's authors (runs/{run-id}/issues/) and nothing is fixed; `exit`: the reviewer "
        "stopped the loop here."
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
        description="`approve`: the bugs of that report the fix loop may work on, all `fixable_by: server`, "
        "in fix order (severity, then highest token_cost_of_gap); by default every server-fixable bug, "
        "or those named with `--bug`. `export`: the bugs written as issues, chosen and ordered the same way. "
        "`exit`: empty.",
    )
    seal: str | None = Field(
        default=None,
        description="`hmac-sha256:<hex>` over the other fields, written by `mcpipechekr review`; a review "
        "without a valid seal (written or edited by hand, or of version 1) approves nothing.",
    )
