"""The bug report as issues: one markdown file per bug, for the server's authors (the review's `export`).

Where nothing is fixed here (a server installed from a package, `fix.agent:
none`) the bugs still have to reach someone who can fix them, and an issue
tracker is where they go. Each file is what a server author pastes into one:
a title, what kind of problem it is and how bad, the tool and what the agent
was doing, the evidence (tasks, trace files and step numbers), what the gap
costs in tokens, what "done" looks like (the bug's `expected` and
`acceptance_criteria`, the same checks the fix loop would be given) and the
reviewer's annotations.

Everything comes from the bug report, which is already redacted, and from the
review; a `Redactor` of the project's secrets is still applied to the whole
text, so a secret that reached the report some other way is not written. The
text of a bug is the analyzers' or the Phase 2 model's, never re-worded here,
so an issue says what the report says.

Files are named `<bug id>.md` and written atomically; an export replaces the
folder's previous one: a file named like a bug that this export does not list
is removed, so the folder holds exactly the bugs review.json says were exported.
"""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from datetime import UTC
from pathlib import Path

from mcpipechekr._util.redact import Redactor
from mcpipechekr.artifacts import Bug, Review, atomic_write_text
from mcpipechekr.artifacts.bug_report import BUG_ID_PATTERN

__all__ = ["issue_markdown", "issue_title", "write_issues"]

_ISSUE_FILE = re.compile(BUG_ID_PATTERN.removesuffix("$") + r"\.md$")
_FOUND_BY = {"analyzer": "the trace analysis (rules)", "llm": "the Phase 2 model"}


def write_issues(
    folder: Path, bugs: Sequence[Bug], review: Review, *, redactor: Redactor | None = None
) -> list[Path]:
    """Write one `<bug id>.md` per bug into ``folder`` and remove the files of bugs no longer exported.

    ``review`` is the `export` decision the files belong to: its run, its annotations, who decided and
    when. Returns the files written, in the order of ``bugs``.
    """
    folder.mkdir(parents=True, exist_ok=True)
    written = []
    for bug in bugs:
        text = issue_markdown(bug, review)
        text = redactor.redact(text) if redactor else text
        written.append(atomic_write_text(folder / f"{bug.id}.md", text))
    kept = {path.name for path in written}
    for stale in sorted(folder.iterdir()):
        if _ISSUE_FILE.match(stale.name) and stale.name not in kept and stale.is_file():
            stale.unlink()
    return written


def issue_title(bug: Bug) -> str:
    """`query_email_database: no date sort`: the tool, then the id's words without its prefix and tool."""
    words = bug.id.split("-", 1)[1]
    if bug.tool:
        tool_slug = "-".join(piece for piece in re.split(r"[^a-z0-9]+", bug.tool.lower()) if piece)
        if tool_slug and words.endswith("-" + tool_slug):
            words = words.removesuffix("-" + tool_slug)
    words = words.replace("-", " ")
    return f"{bug.tool}: {words}" if bug.tool else words


def issue_markdown(bug: Bug, review: Review) -> str:
    """The issue text of one bug of the run ``review`` decided on."""
    tool = f"`{bug.tool}`" if bug.tool else "none (the server as a whole)"
    if bug.expected_tool:
        tool += f"; the agent should have used `{bug.expected_tool}`"
    tasks = ", ".join(f"`{task}`" for task in bug.task_ids) or "-"
    lines = [
        f"# {issue_title(bug)}",
        "",
        f"- Bug: `{bug.id}`",
        f"- Type: {bug.type.replace('_', ' ')}",
        f"- Severity: {bug.severity}",
        f"- Tool: {tool}",
        f"- Trigger: {_line(bug.trigger)}",
        f"- Seen: {bug.occurrences} time(s), in task(s) {tasks}",
        f"- Found by: {_FOUND_BY.get(bug.source, bug.source)}",
        "",
        "## What happens",
        "",
        bug.observed.strip(),
        "",
        "## What should happen",
        "",
        bug.expected.strip(),
        "",
        "## Evidence",
        "",
        f"The agent's traces of run `{review.run_id}`, in the `traces/` folder of that run "
        "(step numbers count from 0):",
        "",
        *(
            f"- task `{evidence.task_id}`: `{evidence.trace}`, "
            + (f"step(s) {', '.join(str(step) for step in evidence.steps)}" if evidence.steps else "no step")
            for evidence in bug.evidence
        ),
    ]
    if not bug.evidence:
        lines.append("- none recorded")
    if bug.details:
        lines += ["", "Facts of the first occurrence:", "", *_fenced(_json(bug.details), "json")]
    lines += [
        "",
        "## What it costs",
        "",
        f"About {bug.token_cost_of_gap:,} tokens more than needed each time it happens "
        f"({bug.token_cost_observed:,} spent where {bug.token_cost_optimal:,} would do), "
        f"{bug.occurrences} time(s) in this run: about {bug.token_cost_of_gap * bug.occurrences:,} tokens "
        "that agents using the server pay for nothing.",
    ]
    if bug.see_also:
        lines += ["", "Some of its steps are priced under " + ", ".join(f"`{i}`" for i in bug.see_also) + "."]
    lines += ["", "## Done when", ""]
    criteria = bug.acceptance_criteria or [bug.expected]
    lines += [f"- [ ] {_line(criterion)}" for criterion in criteria]
    if review.annotations:
        lines += ["", "## Reviewer's notes", ""]
        for note in review.annotations:
            lines.append(f"- {_line(note.text)} ({note.by}, {note.at.astimezone(UTC):%Y-%m-%d})")
    lines += [
        "",
        "---",
        "",
        f"Found by MCPipeChekr in run `{review.run_id}` (bug report "
        f"`{review.bug_report_hash.removeprefix('sha256:')[:12]}`), exported at its review by "
        f"{review.decided_by} on {review.decided_at.astimezone(UTC):%Y-%m-%d %H:%M} UTC.",
    ]
    return "\n".join(lines) + "\n"


def _line(text: str) -> str:
    """One line of a list item: a line break inside would end the item."""
    return " ".join(text.split())


def _json(value: object) -> str:
    return json.dumps(value, indent=2, ensure_ascii=False)


def _fenced(text: str, language: str) -> list[str]:
    """``text`` in a code fence longer than any run of backticks in it, so nothing in it ends the block."""
    longest = max((len(run) for run in re.findall(r"`+", text)), default=0)
    fence = "`" * max(3, longest + 1)
    return [fence + language, text, fence]
