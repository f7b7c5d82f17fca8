"""Call count: more tool calls than the task is known to need, named on the tool called too often."""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass
from typing import ClassVar

from mcpipechekr.artifacts.bug_report import BugSeverity
from mcpipechekr.evaluate.base import BugSighting, TraceContext


def overcalled_tool(ctx: TraceContext) -> tuple[str, int]:
    """(the tool called most beyond what the reference solution calls it, its extra calls).

    The reference is the task's `reference_calls` (each tool as often as they call it); without
    them nothing is known per tool, and the most-called tool is the one that took the extra
    calls. Ties go to the tool with more calls, then to the one called first.
    """
    counts = Counter(call.tool for call in ctx.calls)
    reference = Counter(call.tool for call in ctx.task.reference_calls) if ctx.task else Counter()
    first: dict[str, int] = {}
    for call in ctx.calls:
        first.setdefault(call.tool, call.index)
    tool = min(counts, key=lambda name: (-(counts[name] - reference[name]), -counts[name], first[name]))
    return tool, counts[tool] - reference[tool]


def severity_of(ratio: float) -> BugSeverity:
    """By how many times the minimum's cost was paid: 3x or more high, 2x medium, less low."""
    return "high" if ratio >= 3 else "medium" if ratio >= 2 else "low"


@dataclass
class CallCount:
    """Flags a trace with more tool calls than the task's known minimum.

    Rule: the minimum is the task's `min_calls`, else the number of its
    `reference_calls`, else the fewest calls the baseline took. Any call above
    it is reported (2 calls against a minimum of 1 is twice the cost), as long
    as the calls cost more tokens than the known solution; the severity is by
    the ratio observed / minimum (3x or more high, 2x medium, less low). The
    sighting names the tool called most beyond the reference solution (`tool`)
    and, when that is not the task's expected tool, the expected one
    (`expected_tool`). The ratio is also in the statistics per task, flagged or
    not.

    Classified `agent`: the count alone names no change to the server; the
    analyzers that say why (a missing sort, an error) carry the server lever,
    and when they account for the extra calls this sighting is dropped or
    reduced to what they leave unexplained (`aggregate`).

    Blind spots: it does not say why the calls were made; a task with no known
    minimum is never flagged; without reference calls the over-called tool is
    simply the most-called one.
    """

    name: ClassVar[str] = "call_count"
    # Priced as: all calls' tokens against the baseline's reference_tokens (or, without them,
    # the observed tokens scaled by minimum / observed); the model turns of the extra calls on top.

    def analyze(self, ctx: TraceContext) -> list[BugSighting]:
        minimum = ctx.min_calls
        observed = len(ctx.calls)
        if not minimum or observed <= minimum:
            return []
        task_id = ctx.trace.task_id
        tool, extra_of_tool = overcalled_tool(ctx)
        expected = ctx.task.expected_tool if ctx.task and ctx.task.expected_tool else None
        ratio = observed / minimum
        spent = sum(ctx.call_tokens.values())
        reference = ctx.baseline.reference_tokens if ctx.baseline else None
        optimal = reference if reference is not None else round(spent / ratio)
        if optimal >= spent:
            return []  # more calls, but no more tokens than the known solution: nothing wasted
        return [
            BugSighting(
                type="efficiency",
                slug=("too-many-calls", task_id),
                severity=severity_of(ratio),
                tool=tool,
                expected_tool=expected if expected != tool else None,
                fixable_by="agent",
                trigger=f"running task `{task_id}`",
                observed=f"{observed} tool calls where {minimum} are known to suffice (ratio {ratio:.1f}, "
                f"about {ratio:.1f}x the calls' cost); `{tool}` took {extra_of_tool} call(s) more than "
                "the reference solution",
                expected=f"at most {minimum} tool call(s)",
                acceptance_criteria=[
                    f"an agent solves `{task_id}` in at most {minimum} tool call(s)",
                ],
                steps=[call.index for call in ctx.calls],
                wasted=[call.index for call in ctx.calls],
                extra_calls=observed - minimum,
                optimal_tokens=optimal,
                details={
                    "calls": observed,
                    "min_calls": minimum,
                    "ratio": round(ratio, 3),
                    "calls_by_tool": dict(sorted(Counter(call.tool for call in ctx.calls).items())),
                },
            )
        ]
