"""What the fix prompt shows of the run: the bug's trace steps, its description suggestion, the file layout.

The bug entry says what went wrong in words; the trace steps show it as the
agent saw it (the calls with their arguments and the start of each result), so
a coding agent can reproduce the defect instead of guessing from a summary.
The file layout saves it a round of exploring. Both are capped so a long trace
or a large repository cannot crowd the defect out of the prompt; the caller
redacts the prompt as a whole. When `mcpipechekr lint --suggest` proposed a
new description for the bug, from the very report that was approved
(`suggestions_for`), the prompt carries it too.
"""

from __future__ import annotations

import json

import git

from mcpipechekr.artifacts import RunDir
from mcpipechekr.artifacts.atomic import read_model
from mcpipechekr.artifacts.bug_report import Bug
from mcpipechekr.artifacts.description_suggestions import DescriptionSuggestions
from mcpipechekr.artifacts.trace import ToolCall, read_trace
from mcpipechekr.errors import UserError

MAX_STEPS = 12
"""Trace steps shown per bug, over all its evidence."""
EXCERPT_CHARS = 300
"""Characters of arguments and of each result shown."""
MAX_FILES = 200
"""Tracked files listed in the layout."""


def evidence_lines(bug: Bug, run_dir: RunDir) -> list[str]:
    """One Markdown line per tool call the bug's evidence names, oldest first; a missing trace is said."""
    lines: list[str] = []
    for evidence in bug.evidence:
        path = run_dir.root / evidence.trace
        try:
            trace = read_trace(path)
        except (OSError, UserError):
            lines.append(f"- task `{evidence.task_id}`: trace {evidence.trace} could not be read")
            continue
        wanted = set(evidence.steps)
        for step in trace.steps:
            if len(lines) >= MAX_STEPS:
                return [*lines, f"- ... (more steps in {evidence.trace})"]
            if step.index in wanted and isinstance(step, ToolCall):
                lines.append(f"- task `{evidence.task_id}`, step {step.index}: {_call_line(step)}")
    return lines


def suggestions_for(run_dir: RunDir, bug_report_hash: str) -> DescriptionSuggestions | None:
    """The run's description suggestions when they were made from this bug report, else None.

    Suggestions of an earlier evaluation of the run (another hash) would speak of
    other bugs or other evidence, so they are left out rather than trusted; so is
    a file that cannot be read (the prompt is still complete without it).
    """
    path = run_dir.description_suggestions
    if not path.exists():
        return None
    try:
        suggestions = read_model(path, DescriptionSuggestions)
    except (OSError, UserError):
        return None
    return suggestions if suggestions.bug_report_hash == bug_report_hash else None


def _call_line(call: ToolCall) -> str:
    arguments = _cut(json.dumps(call.arguments, ensure_ascii=False, sort_keys=True))
    if call.is_error:
        result = "error: " + _cut(call.error_text or _result_text(call))
    else:
        result = _cut(_result_text(call))
    return f"`{call.tool}({arguments})` → {result or '(empty result)'}"


def _result_text(call: ToolCall) -> str:
    texts = [str(block.get("text", "")) for block in call.result_content if block.get("type") == "text"]
    if any(texts):
        return " ".join(text.strip() for text in texts)
    if call.structured_content is not None:
        return json.dumps(call.structured_content, ensure_ascii=False)
    return ""


def _cut(text: str, limit: int = EXCERPT_CHARS) -> str:
    flat = " ".join(text.split())
    return flat if len(flat) <= limit else flat[: limit - 1] + "…"


def file_layout(repo: git.Repo) -> list[str]:
    """The repository's tracked files, sorted, at most MAX_FILES (the rest counted)."""
    files = sorted(path for path in repo.git.ls_files().splitlines() if path)
    if len(files) <= MAX_FILES:
        return files
    return [*files[:MAX_FILES], f"... and {len(files) - MAX_FILES} more"]
