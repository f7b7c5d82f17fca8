"""The `review>` prompt: show the review, take commands until a person approves, exports or exits.

Nothing approves by default: only the word `approve` records an approval; end
of input, an unknown command or a missing terminal never does. Without a
terminal (`review_checkpoint`), the commands to continue are printed instead.
"""

from __future__ import annotations

import sys
from collections.abc import Callable

from rich.console import Console
from rich.text import Text

from mcpipechekr._util.commands import script_command
from mcpipechekr._util.yamlsrc import display_path
from mcpipechekr.artifacts import Review, ReviewDecision, RunDir
from mcpipechekr.config import Config
from mcpipechekr.errors import UserError
from mcpipechekr.review.bugs import require_offered
from mcpipechekr.review.decision import (
    current_review,
    local_time,
    record_decision,
    require_fixable,
    why_fixing_off,
)
from mcpipechekr.review.render import show_review

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
    off = why_fixing_off(config)
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
    off = why_fixing_off(config)
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
                    require_offered(run_dir, report, scope, decision)
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
    return f"{review.run_id}: {what}{notes} ({review.decided_by}, {local_time(review.decided_at)})"


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
