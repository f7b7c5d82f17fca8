"""Recording a review's decision, and reading it back: the only way to a review.json that counts.

Phase 3 changes the server's code and commits it, so it runs only on an explicit
approval, recorded in runs/{run-id}/review.json. These rules hold it together
(which bugs are shown and offered is `bugs.py`):

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
"""

from __future__ import annotations

import getpass
from collections.abc import Iterable
from datetime import datetime
from pathlib import Path

from mcpipechekr._util.hashing import sha256_bytes
from mcpipechekr._util.seal import ensure_key, read_key, seal_json, seal_matches
from mcpipechekr.artifacts import (
    Annotation,
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
from mcpipechekr.evaluate.issues import write_issues
from mcpipechekr.review.bugs import bugs_to_fix, require_offered
from mcpipechekr.server.workspace import fix_repo_problems

REVIEW_KEY = ".review-key"
"""The seal key's file name, in the runs folder: one key for every run of the project."""


def reviewer_name() -> str:
    """The local user name, recorded as who decided; never anything secret, `unknown` when there is none."""
    try:
        name = getpass.getuser()
    except (OSError, KeyError, ImportError):  # no login name and no passwd entry (some containers)
        name = ""
    return name.strip() or "unknown"


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
            f"({local_time(review.decided_at)}), so nothing is fixed. To fix after all, approve it: "
            f"`mcpipechekr review {run} --approve`."
        )
    if review.bug_report_hash != digest:
        raise UserError(
            f"{run}: the approval ({review.decided_by}, {local_time(review.decided_at)}) was for a different "
            f"bug report ({_short(review.bug_report_hash)}); bug_report.json has changed since "
            f"(now {_short(digest)}). Review it again: `mcpipechekr review {run}`."
        )
    require_offered(run_dir, report, review.bug_ids)
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
    require_offered(run_dir, report, asked, decision)
    return [bug_id for bug_id in fixable if bug_id in set(asked)]


_AN = {"approve": "an approval", "export": "an export", "exit": "an exit"}


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


def why_fixing_off(config: Config | None) -> str | None:
    """Why nothing is fixed here, or None; a run reviewed away from its project (no config) counts as on."""
    return None if config is None else config.fixing_off()


def local_time(moment: datetime) -> str:
    """A moment as the reviewer reads it: local time, to the minute."""
    return moment.astimezone().strftime("%Y-%m-%d %H:%M")


def _short(digest: str) -> str:
    return digest.removeprefix("sha256:")[:12]
