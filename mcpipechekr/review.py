"""The review checkpoint: a person approves a run's bug report before anything is fixed.

Phase 3 changes the server's code and commits it, so it runs only on an explicit
approval, recorded in runs/{run-id}/review.json. These rules hold it together:

- Nothing approves by default. Only the word `approve`, typed at the prompt, or
  the `--approve` flag, records an approval; end of input, an unknown command or
  a missing terminal never does.
- An approval covers exactly the bug report that was shown: review.json keeps the
  hash of the bug_report.json bytes on screen, and ``require_approval`` refuses
  when the file has changed since (a re-evaluation, a hand edit).
- Annotations are the reviewer's guidance for the fix agent. They are kept with
  the decision, and carried over when the same report is decided again (an
  `exit` today, an `approve` tomorrow keeps what was said).
- No dead approvals: given the config the fix step will run with, an approval
  is refused (nothing recorded) while that step could not commit anything, for
  want of a `server.repo` (`server.workspace.fix_repo_problems`). Recorded, such an
  approval would make every later `fix` (and `doit loop`) fail at once.
- An approval covers exactly the bug ids it lists (every server-fixable bug by
  default, or those the reviewer named), and Phase 3 works on those alone
  (`approved_bugs`). An id the report does not offer to the fixer is refused.
- Where nothing is fixed here (`Config.fixing_off`: no `server.repo`, or
  `fix.agent: none`) the review ends with `export` or `exit`, and `approve` is
  refused, saying why and what to type instead. `export` (offered in either
  mode) writes the bugs an approval would cover (or those named) as issues for
  the server's authors, one markdown file each in runs/{run-id}/issues/
  (`evaluate.issues`), and ends the session as `exit` does.
- Only this module writes a review that counts: review.json carries a seal, an
  HMAC over its content keyed by a secret in the runs folder (`.review-key`,
  mode 0600, made on first use). A review.json written by hand, or one whose
  scope or decision was edited after the fact, fails the seal and approves
  nothing. Each decision is also added to the run's manifest (`reviews`), so
  the run says who approved which ids of which report, and when.

The fix order shown is `evaluate.aggregate.priority_order`, the same list the
narrative's priorities number: bugs the server can fix first, then by
severity, then highest token_cost_of_gap, ties by bug id. Phase 3 works on its
`server` bugs (`bugs_to_fix`); `agent` bugs (how the model behaved, with no
server-side lever) are shown, marked, as evidence and never sent to the fixer.
Everything here reads the report's `train_view`: a bug seen only in tasks of
`split: holdout` is neither shown nor approvable, and a bug's holdout evidence
is left out, so the holdout stays a fair test of the fixes.
"""

from __future__ import annotations

import getpass
import sys
from collections.abc import Callable, Iterable
from datetime import datetime
from pathlib import Path

from rich import box
from rich.console import Console
from rich.markdown import Markdown
from rich.table import Table
from rich.text import Text

from mcpipechekr._util.commands import script_command
from mcpipechekr._util.hashing import sha256_bytes
from mcpipechekr._util.seal import ensure_key, read_key, seal_json, seal_matches
from mcpipechekr._util.yamlsrc import display_path
from mcpipechekr.artifacts import (
    Annotation,
    Bug,
    BugReport,
    Manifest,
    Review,
    ReviewDecision,
    ReviewEntry,
    RunDir,
    read_model,
    utc_now,
    write_model,
)
from mcpipechekr.artifacts.atomic import parse_model
from mcpipechekr.artifacts.runstate import load_manifest
from mcpipechekr.config import Config, Redactor
from mcpipechekr.errors import UserError
from mcpipechekr.evaluate.aggregate import folded, priority_order
from mcpipechekr.evaluate.issues import write_issues
from mcpipechekr.kpi import kpi_lines, read_kpis
from mcpipechekr.server.workspace import fix_repo_problems
from mcpipechekr.session_summary import write_session_summary

__all__ = [
    "PROMPT",
    "announce_decision",
    "continue_hint",
    "current_review",
    "fix_order",
    "help_text",
    "interactive_review",
    "load_bug_report",
    "read_review",
    "record_decision",
    "approved_bugs",
    "approved_report",
    "bugs_to_fix",
    "review_key_path",
    "seal_problem",
    "require_approval",
    "require_fixable",
    "review_checkpoint",
    "reviewer_name",
    "show_review",
    "write_session_summary",
]

PROMPT = "review> "


def help_text(fixing_off: str | None = None) -> str:
    """The commands the `review>` prompt takes: with fixing on, approve / annotate / export / exit; with
    fixing off (``fixing_off`` says why, `Config.fixing_off`), annotate / export / exit."""
    export = (
        "`export` (write these bugs as issues for the server's authors, one file each in "
        "runs/<run>/issues/; `export ID ...` those alone; nothing is fixed), "
    )
    if fixing_off is not None:
        return (
            f"Fixing is off: {fixing_off}. Nothing is fixed here. Commands: "
            "`annotate <text>` (a note, written into the exported issues; the prompt comes back), "
            + export
            + "`exit` (stop here, nothing is exported)."
        )
    return (
        "Commands: `approve` (the fix loop may work on these bugs, in this order; `approve ID ...` on "
        "those alone), "
        "`annotate <text>` (a note for the fix agent and the exported issues; the prompt comes back), "
        + export
        + "`exit` (stop here, nothing is fixed)."
    )


InputFn = Callable[[str], str]

REVIEW_KEY = ".review-key"
"""The seal key's file name, in the runs folder: one key for every run of the project."""


def reviewer_name() -> str:
    """The local user name, recorded as who decided; never anything secret, `unknown` when there is none."""
    try:
        name = getpass.getuser()
    except (OSError, KeyError, ImportError):  # no login name and no passwd entry (some containers)
        name = ""
    return name.strip() or "unknown"


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


def review_key_path(run_dir: RunDir) -> Path:
    """Where the key that seals reviews lives: next to the runs, so a run folder finds it on its own."""
    return run_dir.root.parent / REVIEW_KEY


def seal_problem(run_dir: RunDir, review: Review) -> str | None:
    """Why ``review`` is not one `record_decision` wrote, in words; None when its seal is valid."""
    if review.seal is None:
        return "it has no seal (written by hand, or by a version of MCPipeChekr before reviews were sealed)"
    key = read_key(review_key_path(run_dir))
    if key is None:
        return f"the key it was sealed with ({review_key_path(run_dir)}) is missing or damaged"
    if not seal_matches(key, _sealed_content(review), review.seal):
        return (
            "its seal does not match its content (written or edited by hand after `mcpipechekr review`, "
            "or sealed in another project)"
        )
    return None


def _sealed_content(review: Review) -> dict[str, object]:
    return review.model_dump(mode="json", exclude={"seal"})


def load_bug_report(run_dir: RunDir) -> tuple[BugReport, str]:
    """The run's bug report and the hash of the very bytes it was parsed from.

    Parsing and hashing the same bytes is what makes an approval mean "this
    report": reading the file twice could hash a newer version than the one shown.
    """
    path = run_dir.bug_report
    try:
        raw = path.read_bytes()
    except FileNotFoundError:
        raise UserError(
            f"{path}: no bug report yet, so there is nothing to review. "
            f"Evaluate the run first: `mcpipechekr evaluate {run_dir.run_id}`."
        ) from None
    except OSError as exc:
        raise UserError(f"{path}: cannot read the bug report: {exc.strerror or exc}") from None
    return parse_model(path, raw, BugReport, fast=True), sha256_bytes(raw)


def read_review(run_dir: RunDir) -> Review | None:
    """review.json as recorded, or None when the run has not been reviewed; a damaged file is a UserError."""
    if not run_dir.review.exists():
        return None
    return read_model(run_dir.review, Review)


def current_review(run_dir: RunDir, digest: str | None = None) -> Review | None:
    """The recorded decision if `record_decision` made it on the bug report as it is now, else None.

    An unsealed or tampered review.json is no decision: it is neither shown as one nor are its
    annotations carried over.

    ``digest`` is the hash of the bug report a caller has just loaded (from
    ``load_bug_report``); without it the current file is read and hashed.
    """
    review = read_review(run_dir)
    if review is None:
        return None
    if digest is None:
        if not run_dir.bug_report.exists():
            return None
        _, digest = load_bug_report(run_dir)
    if review.bug_report_hash != digest or review.run_id != run_dir.run_id:
        return None
    return review if seal_problem(run_dir, review) is None else None


def require_approval(run_dir: RunDir) -> Review:
    """The approval Phase 3 runs under; a UserError saying how to continue when there is none.

    Refuses when review.json is missing, records `exit`, belongs to another run,
    or approved a bug report other than the current bug_report.json.
    """
    return approved_report(run_dir)[0]


def approved_report(run_dir: RunDir) -> tuple[Review, BugReport]:
    """`require_approval`, with the bug report it approved: read once, so what is fixed is exactly the
    report whose hash was checked, even if the file is rewritten meanwhile.

    Also refuses a review.json `record_decision` did not write (its seal is missing or does not
    match), so a file written by hand, or one whose decision or bug ids were edited, approves
    nothing. Phase 3 works on `approved_bugs(review, report)`.
    """
    run = run_dir.run_id
    report, digest = load_bug_report(run_dir)
    review = read_review(run_dir)
    if review is None:
        raise UserError(
            f"{run}: the bug report has not been reviewed, and nothing is fixed without a person's "
            f"approval. Review it with `mcpipechekr review {run}` (or, in a script, "
            f"`mcpipechekr review {run} --approve [--annotate TEXT]`)."
        )
    if review.run_id != run:
        raise UserError(
            f"{run_dir.review}: records a review of {review.run_id}, not of {run}. "
            f"Delete it and review this run: `mcpipechekr review {run}`."
        )
    problem = seal_problem(run_dir, review)
    if problem is not None:
        raise UserError(
            f"{run_dir.review}: not a review recorded by `mcpipechekr review`: {problem}. It approves "
            f"nothing. Record the decision with `mcpipechekr review {run}` (in a script: "
            f"`mcpipechekr review {run} --approve [--bug ID ...]`)."
        )
    if review.decision != "approve":
        raise UserError(
            f"{run}: {review.decided_by} chose `{review.decision}` at the review "
            f"({_when(review.decided_at)}), so nothing is fixed. To fix after all, approve it: "
            f"`mcpipechekr review {run} --approve`."
        )
    if review.bug_report_hash != digest:
        raise UserError(
            f"{run}: the approval ({review.decided_by}, {_when(review.decided_at)}) was for a different "
            f"bug report ({_short(review.bug_report_hash)}); bug_report.json has changed since "
            f"(now {_short(digest)}). Review it again: `mcpipechekr review {run}`."
        )
    _require_offered(run_dir, report, review.bug_ids)
    return review, report


def record_decision(
    run_dir: RunDir,
    decision: ReviewDecision,
    annotations: Iterable[str | Annotation] = (),
    *,
    bug_report_hash: str | None = None,
    by: str | None = None,
    config: Config | None = None,
    bug_ids: Iterable[str] | None = None,
    redactor: Redactor | None = None,
) -> Review:
    """Write review.json (atomically, sealed), add the decision to the run's manifest, return it.

    ``bug_report_hash`` is the hash of the report the person saw (from
    ``load_bug_report``); without it the current file is hashed. Annotations
    given as text are signed by ``by`` (the local user by default) and dated
    now. Annotations already recorded for the same report come first, so a
    second decision on it does not lose what the reviewer said before; an
    identical text is kept once. With ``config``, an approval is refused (a
    UserError, nothing written) while the fix step could not run with it, and
    an export's files are redacted with its secrets.

    ``bug_ids`` scopes an approval or an export: the fix loop works on those
    bugs only (in fix order), or only they are exported; None takes every
    server-fixable bug. An id the report does not offer to the fixer is a
    UserError naming it, and nothing is written. An `export` writes its issue
    files (`evaluate.issues.write_issues`) before the decision, so a recorded
    export always has them. The seal (``seal_problem``) is what makes this
    function the only way to record a review that counts. ``redactor`` (else
    ``config``'s) scrubs what the person typed: a key pasted into an
    annotation is not stored.
    """
    if decision == "approve" and config is not None:
        require_fixable(run_dir, config)
    report, digest = load_bug_report(run_dir)
    if bug_report_hash is not None and bug_report_hash != digest:
        raise UserError(
            f"{run_dir.bug_report}: changed while it was being reviewed ({_short(bug_report_hash)} shown, "
            f"{_short(digest)} now); nothing was recorded. Review it again: `mcpipechekr review "
            f"{run_dir.run_id}`."
        )
    chosen = _chosen_ids(run_dir, report, decision, bug_ids)
    who = by or reviewer_name()
    now = utc_now()
    previous = current_review(run_dir, digest)
    kept = list(previous.annotations) if previous else []
    scrub = redactor or (config.redactor if config is not None else None)
    for note in annotations:
        if isinstance(note, str) and scrub is not None:
            note = scrub.redact(note)
        annotation = note if isinstance(note, Annotation) else _annotation(note, who, now)
        if annotation.text not in {existing.text for existing in kept}:
            kept.append(annotation)
    review = Review(
        run_id=run_dir.run_id,
        decision=decision,
        annotations=kept,
        decided_by=who,
        decided_at=now,
        bug_report_hash=digest,
        bug_ids=chosen,
    )
    review = review.model_copy(
        update={"seal": seal_json(ensure_key(review_key_path(run_dir)), _sealed_content(review))}
    )
    manifest = load_manifest(run_dir) if run_dir.manifest.exists() else None  # damaged: nothing recorded
    if decision == "export":
        exported = [bug for bug in bugs_to_fix(report) if bug.id in set(chosen)]
        write_issues(run_dir.issues, exported, review, redactor=config.redactor if config else None)
    if manifest is not None:  # a run without one (made by hand) has nowhere to say it
        _add_to_manifest(run_dir, manifest, review)
    write_model(run_dir.review, review)
    return review


def _chosen_ids(
    run_dir: RunDir, report: BugReport, decision: ReviewDecision, bug_ids: Iterable[str] | None
) -> list[str]:
    """The ids an approval approves or an export exports, in fix order: all server-fixable bugs, or
    those asked for; none for `exit`."""
    if decision == "exit":
        if bug_ids:
            raise UserError(
                "bug ids scope an approval or an export; `exit` approves nothing (nothing was recorded)."
            )
        return []
    fixable = [bug.id for bug in bugs_to_fix(report)]
    if bug_ids is None:
        return fixable
    asked = list(dict.fromkeys(bug_ids))
    if not asked:
        verb = "approves" if decision == "approve" else "exports"
        raise UserError(
            f"{run_dir.run_id}: {_AN[decision]} scoped to no bug {verb} nothing; name at least one bug, "
            f"or leave out the bug ids to take every server-fixable one (nothing was recorded)."
        )
    _require_offered(run_dir, report, asked, decision)
    return [bug_id for bug_id in fixable if bug_id in set(asked)]


_AN = {"approve": "an approval", "export": "an export", "exit": "an exit"}


def _require_offered(
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


def _add_to_manifest(run_dir: RunDir, manifest: Manifest, review: Review) -> None:
    """Add the decision to the run's manifest (``manifest``, as read before anything was written)."""
    entry = ReviewEntry(
        decision=review.decision,
        decided_by=review.decided_by,
        decided_at=review.decided_at,
        bug_report_hash=review.bug_report_hash,
        bug_ids=list(review.bug_ids),
    )
    write_model(run_dir.manifest, manifest.model_copy(update={"reviews": [*manifest.reviews, entry]}))


def require_fixable(run_dir: RunDir, config: Config) -> None:
    """Refuse an approval the fix step could not act on: a UserError saying why and what to do instead.

    With fixing off (`Config.fixing_off`: no `server.repo`, or `fix.agent: none`) the way on is an
    export; with a `server.repo` the fix step cannot use (`fix_repo_problems`), a fix of config.yaml.
    """
    run = run_dir.run_id
    off = config.fixing_off()
    if off is not None:
        raise UserError(
            f"{run}: not approved, because fixing is off: {off}. Nothing was recorded. Export the "
            "bugs as issues for the server's authors instead: type "
            f"`export` at the prompt, or run `mcpipechekr review {run} --export`; or `exit`. "
            "To fix them here, set server.repo to the server's git checkout and fix.agent to a coding "
            "agent (docs/fix.md)."
        )
    problems = fix_repo_problems(config)
    if problems:
        listed = "\n".join(f"  {problem}" for problem in problems)
        raise UserError(
            f"{run_dir.run_id}: not approved, because the fix step could not run:\n{listed}\n"
            "Nothing was recorded. Fix config.yaml, then approve again: "
            f"`mcpipechekr review {run_dir.run_id} --approve`."
        )


def _annotation(text: str, by: str, at: datetime) -> Annotation:
    cleaned = text.strip()
    if not cleaned:
        raise UserError("an annotation needs text, e.g. `annotate prefer a sort_order parameter`.")
    return Annotation(text=cleaned, by=by, at=at)


def show_review(run_dir: RunDir, console: Console, *, config: Config | None = None) -> tuple[BugReport, str]:
    """Print what the reviewer decides on; returns the report shown and the hash of its bytes.

    First the figures (bug count, highest token_cost_of_gap), then the bugs in
    fix order, the run's KPIs against their targets (kpi.json), then the Phase 2
    narrative. ``config`` says whether fixing is on (`Config.fixing_off`), which
    decides what a run without bugs offers.
    """
    report, digest = load_bug_report(run_dir)
    bugs, inside = folded(fix_order(report))
    console.rule(Text(f"Review of {report.run_id}"))
    if not bugs:
        offers = (
            "`export` and `exit` end the session"
            if _fixing_off(config)
            else "`approve` goes on with nothing to fix, `exit` stops"
        )
        console.print(
            Text(
                f"{report.run_id}: no bugs found, so there is nothing to fix. The run still stops here: "
                f"{offers}."
            )
        )
    else:
        top = max(bugs, key=lambda bug: bug.token_cost_of_gap)
        agent = sum(bug.fixable_by == "agent" for bug in bugs)
        console.print(
            Text(
                f"{len(bugs)} bug(s); highest token_cost_of_gap {top.token_cost_of_gap:,} tokens ({top.id}). "
                + (
                    f"{agent} of them are agent behaviour (marked `agent`): evidence, not sent to the fix "
                    "loop. "
                    if agent
                    else ""
                )
                + "Fix order:"
            )
        )
        console.print(bug_table(bugs, console.width), soft_wrap=False)
        for owner, priced in inside.items():
            console.print(
                Text(
                    f"  also seen, no cost of its own (priced in {owner}): "
                    + ", ".join(bug.id for bug in priced)
                )
            )
    if report.notes:
        for note in report.notes:
            console.print(Text(f"note: {note}"))
    kpis = read_kpis(run_dir)
    if kpis is not None and kpis.run_id == report.run_id:  # the targets the reviewer decides against
        for line in kpi_lines(kpis):
            console.print(Text(line))
    try:
        narrative = run_dir.phase2_narrative.read_text(encoding="utf-8")
    except FileNotFoundError:
        console.print(Text(f"({run_dir.phase2_narrative.name} is missing: the bug report is all there is.)"))
    else:
        console.print(Markdown(narrative), soft_wrap=False)
    return report, digest


WIDE_TABLE = 120
"""From this console width on, each field of a bug gets its own column; narrower, fields are stacked."""


def bug_table(bugs: list[Bug], width: int = WIDE_TABLE) -> Table:
    """The bugs as a table in the order given (the fix order), one row each.

    Ids are long and must stay readable in one piece, so on a console narrower
    than ``WIDE_TABLE`` the type, severity, tool and trigger are stacked under
    the id instead of being squeezed into columns of their own.
    """
    wide = width >= WIDE_TABLE
    table = Table(box=box.SIMPLE_HEAD, header_style="bold", pad_edge=False)
    table.add_column("#", justify="right")
    longest = max((len(bug.id) for bug in bugs), default=0)
    table.add_column("id / trigger" if wide else "bug", overflow="fold", min_width=min(longest, width - 20))
    if wide:
        for column in ("type", "severity", "tool"):
            table.add_column(column, overflow="fold")
    table.add_column("gap tokens" if wide else "gap", justify="right")
    table.add_column("occurrences" if wide else "seen", justify="right")
    for number, bug in enumerate(bugs, start=1):
        cell = Text(bug.id, style="bold")
        if not wide:
            cell.append(f"\n{bug.type} · {bug.severity} · {bug.tool or 'no tool'} · {bug.fixable_by}")
        cell.append("\n" + bug.trigger, style="dim")
        if bug.fixable_by == "agent":
            cell.append("\nagent behaviour: not sent to the fix loop", style="italic")
        middle = [bug.type, bug.severity, Text(bug.tool or "-")] if wide else []
        table.add_row(str(number), cell, *middle, f"{bug.token_cost_of_gap:,}", str(bug.occurrences))
    return table


def continue_hint(run_dir: RunDir, config: Config | None = None) -> str:
    """How to go on from a review nobody answered (no terminal), in commands to copy: those that fit the
    mode ``config`` is in (with fixing off, `Config.fixing_off`, export instead of approve)."""
    run = run_dir.run_id
    review = f"{script_command('mcpipechekr')} review {run}"  # unquoted: spelled here, not by the console
    prompt = f"  {review}                 decide at the prompt (in a terminal)\n"
    export = (
        f"  {review} --export        write the bugs as issues for the server's authors "
        f"({display_path(run_dir.issues)}/); add --annotate TEXT for them\n"
    )
    off = _fixing_off(config)
    if off is not None:
        return (
            f"{run}: stopped at the review. Fixing is off: {off}; nothing is exported without a person. "
            f"To continue:\n{prompt}{export}"
            f"  {review} --exit          stop here, nothing is exported"
        )
    return (
        f"{run}: stopped at the review; nothing is approved without a person. To continue:\n{prompt}"
        f"  {review} --approve       approve; add --annotate TEXT for the fix agent\n"
        f"{export}"
        f"  {review} --exit          stop here, nothing is fixed\n"
        f"then fix the approved bugs with `mcpipechekr fix {run}`."
    )


def _fixing_off(config: Config | None) -> str | None:
    """Why nothing is fixed here, or None; a run reviewed away from its project (no config) counts as on."""
    return None if config is None else config.fixing_off()


def interactive_review(
    run_dir: RunDir, console: Console, input_fn: InputFn | None = None, *, config: Config | None = None
) -> Review:
    """Show the report and ask until the person approves, exports or exits; the decision is in review.json.

    ``input_fn`` reads one line after printing its prompt (``console.input`` by
    default; tests pass a scripted one). `annotate <text>` adds a note and asks
    again; anything unknown prints the commands and asks again. End of input
    (Ctrl-D, a closed pipe) counts as `exit`: leaving is never approval.
    `approve ID ...` and `export ID ...` take those bugs alone; an id the
    report does not offer to the fixer is refused, and the prompt asks again.
    With ``config``, `approve` is refused while the fix step could not run
    (``require_fixable``: fixing is off, or server.repo is unusable): the
    reason and what to type instead are printed and the prompt asks again;
    with fixing off the commands shown are annotate, export and exit.
    """
    read = input_fn or console.input
    off = _fixing_off(config)
    report, digest = show_review(run_dir, console, config=config)
    previous = current_review(run_dir, digest)
    if previous and previous.annotations:
        console.print(Text("Annotations already recorded for this report:"))
        for note in previous.annotations:
            console.print(Text(f"  - {note.text} ({note.by})"))
    console.print(Text(help_text(off)))
    notes: list[str] = []
    while True:
        try:
            line = read(PROMPT)
        except EOFError:
            console.print(Text("\nend of input: leaving the review without approving."))
            return _decide(run_dir, console, "exit", notes, digest, config=config)
        command, _, rest = line.strip().partition(" ")
        command = command.lower()
        if command in ("approve", "export"):
            decision: ReviewDecision = "approve" if command == "approve" else "export"
            scope = rest.split() or None
            try:
                if decision == "approve" and config is not None:
                    require_fixable(run_dir, config)
                if scope is not None:
                    _require_offered(run_dir, report, scope, decision)
            except UserError as exc:  # nothing was recorded: say why and ask again
                console.print(Text(exc.message))
                continue
            return _decide(run_dir, console, decision, notes, digest, scope, config=config)
        if command == "exit" and not rest.strip():
            return _decide(run_dir, console, "exit", notes, digest, config=config)
        if command == "annotate" and rest.strip():
            notes.append(rest.strip())
            reader = "the exported issues carry it" if off else "the fix agent will read it"
            console.print(Text(f"noted ({len(notes)} annotation(s) this review); {reader}."))
            continue
        if command == "annotate":
            console.print(Text("annotate needs text: `annotate <your note for the fix agent>`."))
            continue
        if command:
            console.print(Text(help_text(off)))


def _decide(
    run_dir: RunDir,
    console: Console,
    decision: ReviewDecision,
    notes: list[str],
    digest: str,
    bug_ids: list[str] | None = None,
    *,
    config: Config | None = None,
) -> Review:
    review = record_decision(
        run_dir,
        decision,
        notes,
        bug_report_hash=digest,
        bug_ids=bug_ids,
        config=config if decision == "export" else None,  # an approval was checked before: ask no more
        redactor=config.redactor if config is not None else None,
    )
    announce_decision(run_dir, review, console)
    return review


def announce_decision(run_dir: RunDir, review: Review, console: Console) -> None:
    """Say what was just recorded and where: review.json, and for an export the folder of its issues."""
    console.print(Text(describe_decision(review) + f" → {display_path(run_dir.review)}"))
    if review.decision == "export" and review.bug_ids:
        console.print(
            Text(
                f"issues → {display_path(run_dir.issues)}/ ({len(review.bug_ids)} file(s), one per bug: "
                "paste each into the server's issue tracker)"
            )
        )


def describe_decision(review: Review) -> str:
    """One line for people: what was decided, on how many bugs, by whom and when."""
    notes = f", {len(review.annotations)} annotation(s)" if review.annotations else ""
    if review.decision == "approve":
        what = (
            f"approved {len(review.bug_ids)} bug(s) for the fix loop"
            if review.bug_ids
            else "approved: no bugs, nothing to fix"
        )
    elif review.decision == "export":
        what = (
            f"exported {len(review.bug_ids)} bug(s) as issues for the server's authors"
            if review.bug_ids
            else "export: no bugs the server can fix, nothing to export"
        )
    else:
        what = "exit: nothing will be fixed"
    return f"{review.run_id}: {what}{notes} ({review.decided_by}, {_when(review.decided_at)})"


def review_checkpoint(
    run_dir: RunDir,
    console: Console,
    *,
    interactive: bool | None = None,
    input_fn: InputFn | None = None,
    config: Config | None = None,
) -> Review | None:
    """The checkpoint as the loop meets it: ask a person if there is one, else say how to continue.

    ``interactive`` defaults to whether stdin is a terminal. Without one, the
    report is shown and a decision already recorded for this very report is
    returned; otherwise the commands to continue are printed (those that fit
    ``config``'s mode) and the result is None: the caller stops, nothing
    approved. ``config`` is the fix step's, for ``interactive_review``.
    """
    if interactive is None:
        interactive = sys.stdin.isatty()
    if interactive:
        return interactive_review(run_dir, console, input_fn, config=config)
    _, digest = show_review(run_dir, console, config=config)
    decided = current_review(run_dir, digest)
    if decided is not None:
        console.print(Text(describe_decision(decided)))
        return decided
    console.print(Text(continue_hint(run_dir, config)))
    return None


def _when(moment: datetime) -> str:
    return moment.astimezone().strftime("%Y-%m-%d %H:%M")


def _short(digest: str) -> str:
    return digest.removeprefix("sha256:")[:12]
