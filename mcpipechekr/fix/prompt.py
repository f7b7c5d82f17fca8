"""The prompt the fix agent gets for one bug: the bug entry, the reviewer's notes, the acceptance criteria.

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

import orjson

from mcpipechekr.artifacts.bug_report import Bug

PROMISE = "<promise>COMPLETE</promise>"


def build_fix_prompt(bug: Bug, annotations: list[str], *, server_name: str) -> str:
    """The whole prompt for one bug, in Markdown."""
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
    lines += ["", "## Acceptance criteria", ""]
    if bug.acceptance_criteria:
        lines += [f"- {criterion}" for criterion in bug.acceptance_criteria]
    else:
        lines.append(f"- an agent doing what the trigger describes gets: {bug.expected}")
    lines += ["- the server still starts and lists its tools; existing callers keep working"]
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
        "",
        "## How to work",
        "",
        "- An earlier attempt may already have changed files here: run `git status` and `git diff` "
        "first and continue from what is there.",
        "- Change only what this defect needs. Keep the change small and the code style of the file.",
        "- Run the project's tests if it has any.",
        "- Do not commit, push or create branches: the change is reviewed and committed for you.",
        f"- When the fix is complete and meets every acceptance criterion, print {PROMISE} as the last "
        "line of your answer. If you could not complete it, say what is missing and do not print it.",
    ]
    return "\n".join(lines) + "\n"


def has_promise(output: str, prompt: str) -> bool:
    """True when the agent's output carries the promise outside any line it echoed from the prompt."""
    if PROMISE not in output:
        return False
    prompt_lines = {line.strip() for line in prompt.splitlines() if line.strip()}
    return any(PROMISE in line and line.strip() not in prompt_lines for line in output.splitlines())
