"""The review page's JSON API, as models: what `GET /api/run` answers and what `POST /api/decision` takes.

The API is a wire format, not a file, but it is held to the same rule as the
files: a model per shape, unknown keys refused (`extra="forbid"`), so a
misspelt field (`bug_ids` for `bugs`) is a 400 naming it rather than an
approval of nothing. The request carries no run id and no report hash: the
server decides on the run and the exact bug_report.json bytes it loaded when it
started, so a page cannot approve another report than the one it shows.
"""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

MAX_ANNOTATION_CHARS = 20_000
"""A note longer than this is refused: it is guidance for a fix agent, not a file upload."""


class _Wire(BaseModel):
    model_config = ConfigDict(extra="forbid")


class DecisionRequest(_Wire):
    """`POST /api/decision`: the reviewer's decision on the report the page shows."""

    decision: Literal["approve", "exit"] = Field(
        description="`approve`: the fix loop may work on `bugs`; `exit`: stop, nothing is fixed."
    )
    bugs: list[str] = Field(
        default_factory=list,
        max_length=1_000,
        description="The ids approved (at least one, each selectable); empty for `exit`.",
    )
    annotation: str = Field(
        default="",
        max_length=MAX_ANNOTATION_CHARS,
        description="A note for the fix agent, recorded with the decision (redacted); empty for none.",
    )


class EvidenceView(_Wire):
    """Where one task's trace shows the bug, and the page address that opens it at the first step."""

    task_id: str
    trace: str = Field(description="The trace file, relative to the run folder (`traces/<file>.json`).")
    steps: list[int]
    url: str | None = Field(
        description="The trace view at the first step (`/trace/<name>#<step id>`, without the token); "
        "None when the run has no such trace."
    )


class BugView(_Wire):
    """One bug as the review shows it, in fix order."""

    id: str
    type: str
    severity: str
    tool: str | None
    fixable_by: str
    trigger: str
    token_cost_of_gap: int
    occurrences: int
    selectable: bool = Field(
        description="Whether an approval may name it (a server bug offered to the fixer)."
    )
    why_not: str | None = Field(description="Why it cannot be approved, when it cannot.")
    evidence: list[EvidenceView]


class RunView(_Wire):
    """`GET /api/run`: the run under review, its bugs and which of them an approval may name."""

    run_id: str
    bug_report_hash: str = Field(description="The hash of the bug_report.json bytes the page shows.")
    fixing_off: str | None = Field(description="Why nothing is fixed here (approve is refused), or None.")
    bugs: list[BugView]
    selectable: list[str] = Field(description="The ids an approval may name, in fix order.")
    annotations: list[str] = Field(description="Annotations already recorded for this very report.")
    decided: str | None = Field(description="The decision made on this page, once made; None before.")


class DecisionAnswer(_Wire):
    """What `POST /api/decision` answers once the decision is recorded (status 200)."""

    decision: Literal["approve", "exit"]
    bug_ids: list[str]
    message: str = Field(description="The line the terminal prints for the decision.")


class ErrorAnswer(_Wire):
    """Every refusal (400, 403, 404, 409, 413): why, in words."""

    error: str


class ProgressView(_Wire):
    """`GET /api/progress`: what the loop is doing while no review waits (the live line's counts).

    Read from the live progress display's current activity (`_util.progress`), the one place Phase 1
    counts its attempts and the fix step reports its agent's last line, so the page and the terminal
    never disagree.
    """

    phase: str = Field(
        description="What runs now: `phase 1`, `evaluate:<run>`, `fix`, …; `review` while a review "
        "waits on this page; `idle` between steps."
    )
    run_id: str | None = Field(description="The run the loop works on, or None before the first is planned.")
    iteration: int = Field(description="The loop's iteration (1 for the first run); 0 before it starts.")
    done: int = Field(description="Attempts (or items) finished in this phase.")
    running: int
    failed: int = Field(description="Of `done`, those that ended without their result.")
    total: int | None = Field(description="The attempts this phase runs, when it counts them; else None.")
    detail: str = Field(description="The latest thing the work said (the fix agent's last line), redacted.")
    elapsed_s: float = Field(description="Seconds since this phase started.")
    review_pending: bool = Field(description="Whether a review waits for its decision on this page now.")
    ended: str | None = Field(
        default=None,
        description="Why the loop ended, once it has (phase `ended`): the page then shows its last run.",
    )
