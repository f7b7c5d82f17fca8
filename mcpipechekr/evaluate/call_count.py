"""Call count: more tool calls than the task is known to need."""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

from mcpipechekr.evaluate.base import BugSighting, TraceContext


@dataclass
class CallCount:
    """Flags a trace whose tool calls exceed the task's known minimum by a wide margin.

    Rule: the minimum is the task's `min_calls`, else the number of its
    `reference_calls`, else the fewest calls the baseline took. A trace is
    flagged when it made at least `min_extra` calls more than that AND at
    least `min_ratio` times as many. The ratio observed / minimum is also
    reported per task in the statistics, flagged or not.

    Blind spots: it says nothing about WHY the calls were needed; the other
    analyzers do. When their sightings already account for the extra calls, the
    aggregation drops this one so the same waste is not counted twice. A task
    with no known minimum is never flagged.
    """

    name: ClassVar[str] = "call_count"
    # Priced as: all calls' tokens against the baseline's reference_tokens (or, without them,
    # the observed tokens scaled by minimum / observed); the model turns of the extra calls on top.
    min_extra: int = 2
    min_ratio: float = 1.5

    def analyze(self, ctx: TraceContext) -> list[BugSighting]:
        minimum = ctx.min_calls
        observed = len(ctx.calls)
        if not minimum or observed - minimum < self.min_extra or observed < self.min_ratio * minimum:
            return []
        task_id = ctx.trace.task_id
        tool = ctx.task.expected_tool if ctx.task and ctx.task.expected_tool else None
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
                severity="high" if ratio >= 3 else "medium",
                tool=tool,
                trigger=f"running task `{task_id}`",
                observed=f"{observed} tool calls where {minimum} are known to suffice (ratio {ratio:.1f})",
                expected=f"at most {minimum} tool call(s)",
                acceptance_criteria=[
                    f"an agent solves `{task_id}` in at most {minimum} tool call(s)",
                ],
                steps=[call.index for call in ctx.calls],
                wasted=[call.index for call in ctx.calls],
                extra_calls=observed - minimum,
                optimal_tokens=optimal,
                details={"calls": observed, "min_calls": minimum, "ratio": round(ratio, 3)},
            )
        ]
