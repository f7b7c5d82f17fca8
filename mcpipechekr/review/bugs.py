"""Which bugs a review shows, and which an approval or an export may name.

The fix order shown is `evaluate.aggregate.priority_order`, the same list the
narrative's priorities number: bugs the server can fix first, then by
severity, then highest token_cost_of_gap, ties by bug id. Phase 3 works on its
`server` bugs (`bugs_to_fix`); `agent` bugs (how the model behaved, with no
server-side lever) are shown, marked, as evidence and never sent to the fixer.
Everything here reads the report's `train_view`: a bug seen only in tasks of
`split: holdout` is neither shown nor approvable, and a bug's holdout evidence
is left out, so the holdout stays a fair test of the fixes.

Recording (`decision.py`), showing (`render.py`) and the prompt (`prompt.py`)
all choose bugs by these rules, so they are in one place.
"""

from __future__ import annotations

from collections.abc import Iterable

from mcpipechekr.artifacts import Bug, BugReport, Review, ReviewDecision, RunDir
from mcpipechekr.errors import UserError
from mcpipechekr.evaluate.aggregate import priority_order


def fix_order(report: BugReport) -> list[Bug]:
    """Every bug the review shows, in the order the narrative ranks them (`priority_order`).

    Only what train tasks showed (`BugReport.train_view`): a bug seen in holdout
    tasks alone is neither shown nor offered to the fixer, so the holdout stays a
    fair test of the fixes.
    """
    return priority_order(list(report.train_view().bugs))


def bugs_to_fix(report: BugReport) -> list[Bug]:
    """The bugs Phase 3 works on, in fix order: the `server` ones; `agent` bugs have no server-side fix.

    A bug whose every step is priced by another one (no gap of its own, `see_also` naming the owner)
    is evidence for that bug, not a second fix: the fix agent would spend its iterations on a change
    the owner's fix already makes.
    """
    return [
        bug
        for bug in fix_order(report)
        if bug.fixable_by == "server" and not (bug.token_cost_of_gap == 0 and bug.see_also)
    ]


def approved_bugs(review: Review, report: BugReport) -> list[Bug]:
    """The bugs Phase 3 works on under ``review``: those it approved, in fix order.

    ``review`` is the approval ``approved_report`` returned with ``report``, so its ids are the
    report's server-fixable bugs; nothing outside them is ever returned.
    """
    approved = set(review.bug_ids)
    return [bug for bug in bugs_to_fix(report) if bug.id in approved]


def require_offered(
    run_dir: RunDir, report: BugReport, bug_ids: Iterable[str], decision: ReviewDecision = "approve"
) -> None:
    """Refuse, naming it, an id the report does not offer to the fixer (unknown, or not server-fixable):
    it can be neither approved nor exported as an issue of the server."""
    known = {bug.id for bug in report.bugs}
    fixable = {bug.id for bug in bugs_to_fix(report)}
    which = "the fix loop can work on" if decision == "approve" else "that can be exported"
    offered = f"The bugs {which}: {', '.join(sorted(fixable)) or 'none'}."
    for bug_id in bug_ids:
        if bug_id not in known:
            raise UserError(f"{run_dir.run_id}: {bug_id!r} is not a bug of this run's bug report. {offered}")
        if bug_id not in fixable:
            what = "approved" if decision == "approve" else "exported as an issue of the server"
            raise UserError(
                f"{run_dir.run_id}: {bug_id!r} is not sent to the fix loop (agent behaviour, evidence "
                f"for another bug, or seen only in holdout tasks), so it cannot be {what}. {offered}"
            )
