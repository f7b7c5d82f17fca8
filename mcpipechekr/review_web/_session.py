"""What one review page decides on, and the one place its decision is recorded.

The report is read once, when the server starts (`load_bug_report`: the bytes
parsed are the bytes hashed), and every answer of the page is built from that
reading; the decision is recorded with that hash, so if bug_report.json changes
while the page is open nothing is recorded (`record_decision` refuses) and the
page says so. The decision goes through `review.record_decision` with the same
arguments as the terminal's prompt: sealed review.json, the manifest's
`reviews` entry, the annotation through the project's redactor. A session
takes one decision: a second POST (another tab, a double click) is refused.
"""

from __future__ import annotations

import threading
from dataclasses import dataclass, field
from urllib.parse import quote

from mcpipechekr.artifacts import Bug, BugReport, Review, RunDir
from mcpipechekr.before_after import BeforeAfter, since_previous
from mcpipechekr.config import Config
from mcpipechekr.errors import UserError
from mcpipechekr.evaluate.aggregate import folded
from mcpipechekr.report import RunData, TraceData, load_report_data, step_id
from mcpipechekr.review.bugs import bugs_to_fix, fix_order
from mcpipechekr.review.decision import current_review, load_bug_report, record_decision, require_fixable
from mcpipechekr.review.prompt import describe_decision
from mcpipechekr.review_web._api import BugView, DecisionAnswer, DecisionRequest, EvidenceView, RunView


class Refused(Exception):
    """A request the page may not make: answered with `status` and `message`, nothing recorded."""

    def __init__(self, status: int, message: str) -> None:
        super().__init__(message)
        self.status = status
        self.message = message


@dataclass
class ReviewSession:
    """The run, the report as loaded, and the decision once made (`done` is set after it is answered)."""

    run_dir: RunDir
    config: Config | None
    report: BugReport
    digest: str
    run: RunData
    since_fix: BeforeAfter | None = None  # the run against the one whose fixes it followed
    review: Review | None = None
    done: threading.Event = field(default_factory=threading.Event)
    _lock: threading.Lock = field(default_factory=threading.Lock)

    @classmethod
    def load(cls, run_dir: RunDir, config: Config | None) -> ReviewSession:
        """Read the bug report (hashing the bytes parsed) and the run's traces for the trace view."""
        report, digest = load_bug_report(run_dir)
        (run,) = load_report_data([run_dir]).runs
        since = since_previous(run_dir)
        return cls(run_dir=run_dir, config=config, report=report, digest=digest, run=run, since_fix=since)

    @property
    def fixing_off(self) -> str | None:
        """Why nothing is fixed here (`Config.fixing_off`), or None; no config counts as on
        (`review.decision.why_fixing_off`)."""
        return None if self.config is None else self.config.fixing_off()

    def shown(self) -> tuple[list[Bug], dict[str, list[Bug]]]:
        """The bugs the table lists, in fix order, and per bug those priced in it (as the terminal shows)."""
        return folded(fix_order(self.report))

    def selectable(self) -> list[str]:
        """The ids an approval may name: the server bugs offered to the fixer (`bugs_to_fix`), fix order."""
        return [bug.id for bug in bugs_to_fix(self.report)]

    def trace(self, name: str) -> TraceData | None:
        """A trace of the run by its file stem, looked up among the run's traces (never a path joined)."""
        return next((data for data in self.run.traces if data.stem == name), None)

    def evidence_url(self, trace: str, steps: list[int]) -> str | None:
        """The trace view at the evidence's first step, without the token (the page adds it)."""
        data = self.run.trace_by_path(trace)
        if data is None:
            return None
        anchor = f"#{step_id(self.run.run_id, data.stem, steps[0])}" if steps else ""
        return f"/trace/{quote(data.stem, safe='')}{anchor}"

    def previous_annotations(self) -> list[str]:
        previous = current_review(self.run_dir, self.digest)
        return [note.text for note in previous.annotations] if previous else []

    def view(self) -> RunView:
        """`GET /api/run`: every bug in fix order, whether an approval may name it and why not."""
        selectable = self.selectable()
        bugs, inside = self.shown()
        listed = [bug for owner in bugs for bug in [owner, *inside.get(owner.id, [])]]
        return RunView(
            run_id=self.run_dir.run_id,
            bug_report_hash=self.digest,
            fixing_off=self.fixing_off,
            bugs=[self._bug_view(bug, bug.id in selectable) for bug in listed],
            selectable=selectable,
            annotations=self.previous_annotations(),
            decided=self.review.decision if self.review else None,
        )

    def _bug_view(self, bug: Bug, selectable: bool) -> BugView:
        return BugView(
            id=bug.id,
            type=bug.type,
            severity=bug.severity,
            tool=bug.tool,
            fixable_by=bug.fixable_by,
            trigger=bug.trigger,
            token_cost_of_gap=bug.token_cost_of_gap,
            occurrences=bug.occurrences,
            selectable=selectable,
            why_not=None if selectable else why_not_selectable(bug),
            evidence=[
                EvidenceView(
                    task_id=item.task_id,
                    trace=item.trace,
                    steps=list(item.steps),
                    url=self.evidence_url(item.trace, list(item.steps)),
                )
                for item in bug.evidence
            ],
        )

    def decide(self, request: DecisionRequest) -> DecisionAnswer:
        """Record the decision as the terminal does, or refuse it (`Refused`) with nothing written."""
        with self._lock:
            if self.review is not None:
                raise Refused(409, f"already decided on this page: {describe_decision(self.review)}")
            bug_ids = self._checked_ids(request)
            notes = [request.annotation.strip()] if request.annotation.strip() else []
            try:
                if request.decision == "approve" and self.config is not None:
                    require_fixable(self.run_dir, self.config)
                review = record_decision(
                    self.run_dir,
                    request.decision,
                    notes,
                    bug_report_hash=self.digest,
                    bug_ids=bug_ids if request.decision == "approve" else None,
                    redactor=self.config.redactor if self.config is not None else None,
                )
            except UserError as exc:  # fixing off, the report changed meanwhile: nothing was recorded
                raise Refused(400, exc.message) from None
            self.review = review
            return DecisionAnswer(
                decision=request.decision, bug_ids=list(review.bug_ids), message=describe_decision(review)
            )

    def _checked_ids(self, request: DecisionRequest) -> list[str]:
        """The approved ids, each one the report offers to the fixer; a `Refused` naming any other."""
        asked = list(dict.fromkeys(request.bugs))
        if request.decision == "exit":
            if asked:
                raise Refused(400, "`exit` approves nothing: send no bug ids with it (nothing was recorded).")
            return []
        if not asked:
            raise Refused(
                400, "an approval needs at least one bug: tick the bugs to fix (nothing was recorded)."
            )
        known = {bug.id: bug for bug in self.report.bugs}
        unknown = [bug_id for bug_id in asked if bug_id not in known]
        if unknown:
            raise Refused(
                400, f"not bugs of this run's bug report: {', '.join(unknown)} (nothing was recorded)."
            )
        selectable = set(self.selectable())
        refused = [bug_id for bug_id in asked if bug_id not in selectable]
        if refused:
            reasons = "; ".join(f"{bug_id}: {why_not_selectable(known[bug_id])}" for bug_id in refused)
            raise Refused(400, f"cannot be approved: {reasons} (nothing was recorded).")
        return asked


def why_not_selectable(bug: Bug) -> str:
    """Why a bug is shown as evidence and never offered to the fixer, in words."""
    if bug.fixable_by == "agent":
        return "agent behaviour: how the model behaved, with no server-side fix"
    if bug.token_cost_of_gap == 0 and bug.see_also:
        return f"evidence for {', '.join(bug.see_also)}: priced there, fixed with it"
    return "not offered to the fix loop (seen only in holdout tasks)"
