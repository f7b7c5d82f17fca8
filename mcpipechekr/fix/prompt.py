"""The prompt the fix agent gets for one bug: the bug, its evidence, the acceptance criteria, the notes.

Besides the bug entry it carries the trace steps that show the defect (the
calls, their arguments, the start of each result), the description rewrite
`mcpipechekr lint --suggest` proposed for it when the run has one (the texts
now and proposed, and what the selection test says of them), the reviewer's
notes, the repository's tracked files, and `fix.test_command` when one is
configured.
After a run whose tests failed, or whose change kept the server from passing
its health check, the next run's prompt adds what failed (`feedback`): the
agent's change is still in the work tree, and the prompt says what to correct.
The caller redacts the whole prompt.

One bug per prompt keeps each agent run small enough to check, and its commit
about one thing. The prompt is the same for every run on a bug (each run starts
in a fresh context), so it tells the agent that an earlier run may already have
changed files and to look at `git diff` first.

The bug entry is also given verbatim as a JSON block: a program standing in for
an agent (the example's demo fixer) reads it from there, and a real agent gets
the exact figures and evidence without paraphrase.

Completion is signalled by the agent printing ``PROMISE``. The prompt names the
promise inside a sentence, never on a line of its own, and ``has_promise``
ignores output lines that repeat a prompt line, so an agent that echoes its
prompt (aider does) does not complete by quoting it.
"""

from __future__ import annotations

from dataclasses import dataclass

import orjson

from mcpipechekr.artifacts.bug_report import Bug
from mcpipechekr.artifacts.description_suggestions import DescriptionSuggestion, Rescore
from mcpipechekr.fix.agents import FINDINGS_SERVER

PROMISE = "<promise>COMPLETE</promise>"


@dataclass(frozen=True)
class FailedTests:
    """The repository's tests that failed after the agent's previous run: what is fed back."""

    command: str
    exit_code: int | None
    timed_out: bool
    output_tail: str


@dataclass(frozen=True)
class FailedHealth:
    """The server did not start or list its tools with the agent's previous change: what is fed back."""

    error: str


def build_fix_prompt(
    bug: Bug,
    annotations: list[str],
    *,
    server_name: str,
    evidence: list[str] | None = None,
    layout: list[str] | None = None,
    test_command: str | None = None,
    feedback: FailedTests | FailedHealth | None = None,
    finding_id: str | None = None,
    suggestion: DescriptionSuggestion | None = None,
) -> str:
    """The whole prompt for one bug, in Markdown.

    `evidence`: one line per trace step (`fix.evidence.evidence_lines`);
    `layout`: the repository's tracked files; `test_command`: the tests that
    must pass before the fix is committed; `feedback`: those tests failing, or
    the server's failed health check, after the previous run; `finding_id`:
    the bug's finding, when the agent has the findings server to verify it;
    `suggestion`: the bug's description rewrite from `lint --suggest`.
    """
    lines = [
        f"# Fix one defect in the MCP server `{server_name}`",
        "",
        "The current directory is the git repository of the server's source. Agents using this server "
        "ran into the defect below; fix it in the server's code (tool behaviour, parameters or "
        "descriptions), and nothing else.",
        "",
        f"## The defect: {bug.id}",
        "",
        f"- type: {bug.type}, severity: {bug.severity}"
        + (f", tool: `{bug.tool}`" if bug.tool else "")
        + (f" (agents should have used `{bug.expected_tool}`)" if bug.expected_tool else ""),
        f"- when: {bug.trigger}",
        f"- observed: {bug.observed}",
        f"- expected: {bug.expected}",
        f"- cost: {bug.token_cost_of_gap} tokens lost per occurrence, seen {bug.occurrences} time(s)",
    ]
    if bug.task_ids:
        lines.append(f"- tasks: {', '.join(bug.task_ids)}")
    if isinstance(feedback, FailedTests):
        ended = "timed out" if feedback.timed_out else f"exit code {feedback.exit_code}"
        lines += [
            "",
            "## The tests failed after the previous attempt",
            "",
            f"The previous attempt claimed completion, but `{feedback.command}` failed ({ended}), so "
            "nothing was committed. Its change is still in the work tree: correct it until the tests "
            "pass. The end of their output:",
            "",
            "```text",
            feedback.output_tail,
            "```",
        ]
    elif isinstance(feedback, FailedHealth):
        lines += [
            "",
            "## The server failed its health check after the previous attempt",
            "",
            "The previous attempt claimed completion, but with its change the server did not start or did "
            "not list its tools, so nothing was committed. The change is still in the work tree: correct "
            "it so that the server starts and lists its tools. What the health check said:",
            "",
            "```text",
            feedback.error,
            "```",
        ]
    if evidence:
        lines += ["", "## Evidence: the trace steps that show it", ""]
        lines += evidence
    if suggestion is not None:
        lines += suggestion_lines(suggestion)
    lines += ["", "## Acceptance criteria", ""]
    if bug.acceptance_criteria:
        lines += [f"- {criterion}" for criterion in bug.acceptance_criteria]
    else:
        lines.append(f"- an agent doing what the trigger describes gets: {bug.expected}")
    lines += ["- the server still starts and lists its tools; existing callers keep working"]
    if test_command:
        lines += [f"- the repository's tests pass: `{test_command}` (run before the fix is committed)"]
    if finding_id is not None:
        lines += [
            "",
            "## Check your fix with the findings server",
            "",
            f"The MCP server `{FINDINGS_SERVER}` in your configuration knows this defect as finding "
            f"`{finding_id}`. Before you claim completion:",
            "",
            f"1. call `generate_case` with `finding_id: {finding_id}`, `confirm_read_only: true`, the "
            "`arguments` of a call that shows the defect (with the parameter your fix adds, if any) and an "
            "`expect` block the fixed server must meet (for example `contains`, or `equals_paths` with JSON "
            "Pointers into the whole result, such as `/structuredContent/items/0/id`);",
            f"2. call `verify_fix` with `finding_id: {finding_id}`: it starts the server as your work tree "
            "now stands and runs that case. Red: correct the change and verify again. Green: you may claim "
            "completion.",
            "",
            "Its verdicts are for you; the fix is committed only after the loop's own checks.",
        ]
    if annotations:
        lines += ["", "## Notes from the reviewer (follow them)", ""]
        lines += [f"- {text}" for text in annotations]
    entry = orjson.dumps(bug.model_dump(mode="json"), option=orjson.OPT_INDENT_2).decode()
    lines += [
        "",
        "## The bug entry, as recorded in bug_report.json",
        "",
        "```json",
        entry,
        "```",
    ]
    if layout:
        lines += ["", "## Files in the repository (tracked)", "", "```text", *layout, "```"]
    lines += [
        "",
        "## How to work",
        "",
        "- An earlier attempt may already have changed files here: run `git status` and `git diff` "
        "first and continue from what is there.",
        "- Change only what this defect needs. Keep the change small and the code style of the file.",
        (
            f"- Run `{test_command}` and make it pass before you claim completion."
            if test_command
            else "- Run the project's tests if it has any."
        ),
        "- Do not commit, push or create branches: the change is reviewed and committed for you.",
        f"- When the fix is complete and meets every acceptance criterion, print {PROMISE} as the last "
        "line of your answer. If you could not complete it, say what is missing and do not print it.",
    ]
    return "\n".join(lines) + "\n"


def suggestion_lines(suggestion: DescriptionSuggestion) -> list[str]:
    """The prompt's section on a description rewrite: each text now and proposed, and its re-score."""
    made = "drafted by the phase-0.5 model" if suggestion.origin == "model" else "built from the traces"
    lines = [
        "",
        "## A description rewrite proposed for this defect",
        "",
        f"`mcpipechekr lint --suggest` proposes the text(s) below ({made}): {suggestion.reasoning}. "
        "Put them where the server defines these descriptions (docstring, `description=`, schema); adapt "
        "the wording if the code says more, keeping the words that make the selection test pick right.",
    ]
    for edit in suggestion.edits():
        where = (
            f"parameter `{edit.parameter}` of tool `{edit.tool}`" if edit.parameter else f"tool `{edit.tool}`"
        )
        lines += [
            "",
            f"- {where}",
            f"  - now: {edit.current or '(no description)'}",
            f"  - proposed: {edit.proposed}",
        ]
    lines += ["", "What the selection test says with the proposed text(s):", ""]
    lines += [_rescore_line(figures) for figures in suggestion.rescores]
    lines += [f"- note: {note}" for note in suggestion.notes]
    return lines


def _rescore_line(figures: Rescore) -> str:
    moves = [
        f"{change.source}: `{change.expected_tool}` picked "
        f"{'yes' if change.picked_before == change.expected_tool else 'no'} → "
        f"{'yes' if change.picked_after == change.expected_tool else 'no'}"
        for change in figures.changes
    ]
    moves += [
        f"{rank.source}: the parameter's place among {rank.parameters} "
        f"{rank.rank_before or 'none'} → {rank.rank_after or 'none'}"
        for rank in figures.parameter
    ]
    head = (
        f"- {figures.selector}: {figures.verdict}; {figures.right_before:g} → {figures.right_after:g} of "
        f"{figures.queries} queries answered by their right tool"
    )
    return head + (f" ({'; '.join(moves)})" if moves else "")


def has_promise(output: str, prompt: str) -> bool:
    """True when the agent's output carries the promise outside any line it echoed from the prompt."""
    if PROMISE not in output:
        return False
    prompt_lines = {line.strip() for line in prompt.splitlines() if line.strip()}
    return any(PROMISE in line and line.strip() not in prompt_lines for line in output.splitlines())
