"""Wrong tool: the task's expected tool never used, or used only after detours."""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass
from typing import ClassVar

from mcpipechekr.artifacts.trace import ToolCall
from mcpipechekr.evaluate.base import BugSighting, TraceContext


@dataclass
class WrongTool:
    """Flags a trace that never called the task's `expected_tool`, or called others first beyond need.

    Rule: the calls allowed before the expected tool are those the reference
    solution makes before it (its position in `reference_calls`; without
    reference calls, `min_calls - 1`). More calls before it is a detour; none
    at all is a wrong choice. Either points at tool descriptions that do not
    say when to use which tool, hence a `description` sighting, classified
    `server` (descriptions are the server's to change). `tool` is the tool
    misused in its place, where the calls were wasted (the one called most
    among the detour's calls, ties to the first called), and the id names it
    (`DSC-wrong-tool-<tool>`, `DSC-late-tool-<tool>`); `expected_tool` is the
    one that should have been chosen. Tasks that misused the same tool merge
    into one bug, and each evidence entry keeps its own task's misused and
    expected tool.

    Blind spots: tasks without `expected_tool` are skipped; an agent that
    reached the right answer another valid way is still flagged.
    """

    name: ClassVar[str] = "wrong_tool"

    def analyze(self, ctx: TraceContext) -> list[BugSighting]:
        task = ctx.task
        if task is None or not task.expected_tool or not ctx.calls:
            return []
        expected = task.expected_tool
        reference = [call.tool for call in task.reference_calls]
        allowed = reference.index(expected) if expected in reference else max(0, (task.min_calls or 1) - 1)
        first = next((n for n, call in enumerate(ctx.calls) if call.tool == expected), None)
        if first is not None and first <= allowed:
            return []
        used = sorted({call.tool for call in ctx.calls if call.tool != expected})
        before = ctx.calls if first is None else ctx.calls[:first]
        misused = _most_called(before[allowed:] or before)  # none of them is the expected tool
        if first is None:
            observed = f"`{expected}` was never called; the agent used {', '.join(f'`{t}`' for t in used)}"
            slug = ("wrong-tool", misused)
        else:
            observed = (
                f"`{expected}` was first called at step {ctx.calls[first].index}, after {first} call(s) "
                f"to {', '.join(f'`{t}`' for t in sorted({c.tool for c in before}))} "
                f"(the reference solution needs {allowed} before it)"
            )
            slug = ("late-tool", misused)
        return [
            BugSighting(
                type="description",
                slug=slug,
                severity="medium",
                tool=misused,
                expected_tool=expected,
                trigger=f"choosing a tool for task `{task.task_id}`",
                observed=observed,
                expected=f"`{expected}` chosen first (after {allowed} preparatory call(s) at most)",
                acceptance_criteria=[
                    f"{expected}'s description says which requests it answers, so agents pick it for "
                    f"tasks like `{task.task_id}`",
                    f"{misused}'s description says what it is not for, pointing to {expected}",
                    "tool-selection lint picks it for the task's prompt",
                ],
                steps=[call.index for call in before],
                wasted=[call.index for call in before[allowed:]],
                optimal_tokens=0 if first is None else None,
                details={"expected_tool": expected, "misused_tool": misused, "tools_used": used},
            )
        ]


def _most_called(calls: list[ToolCall]) -> str:
    """The tool called most often among `calls`; ties go to the one called first."""
    counts = Counter(call.tool for call in calls)
    order: dict[str, int] = {}
    for call in calls:
        order.setdefault(call.tool, call.index)
    return min(counts, key=lambda tool: (-counts[tool], order[tool]))
