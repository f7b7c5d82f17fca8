"""Pricing: what a trace cost, what the optimum would have cost, and the gap a bug is worth.

Two figures, kept apart on purpose:

- a trace's *observed* tokens are what the provider reported for its model
  turns (input + output), or the trace's estimate when it reported none; the
  statistics say which (`tokens_source`);
- a bug's costs are *call-sequence* tokens, always estimated with the one
  estimator (`_util.tokens.estimate_tokens`, 4 bytes per token) on each call's
  arguments plus its result as the agent received it. The optimal sequence is
  priced the same way, so the gap compares like with like whatever the
  provider. It is a lower bound: each extra call also costs a model turn and
  makes every later turn re-read it.

A finding names the steps that show it and the steps that were waste; unless
the analyzer priced it itself, observed = the cost of its steps, optimal =
observed - the cost of the wasted steps, and the gap is the difference.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from mcpipechekr._util.tokens import estimate_tokens
from mcpipechekr.artifacts.trace import ToolCall, Trace
from mcpipechekr.evaluate.base import Finding, TraceContext, call_cost


@dataclass(frozen=True)
class Cost:
    observed: int
    optimal: int

    @property
    def gap(self) -> int:
        return max(0, self.observed - self.optimal)


def price(finding: Finding, ctx: TraceContext) -> Cost:
    """The call-sequence cost of one finding (see module docstring)."""
    steps = ctx.trace.steps

    def cost(indexes: list[int]) -> int:
        return sum(
            call_cost(step)
            for index in set(indexes)
            if 0 <= index < len(steps) and isinstance(step := steps[index], ToolCall)
        )

    observed = finding.observed_tokens if finding.observed_tokens is not None else cost(finding.steps)
    optimal = finding.optimal_tokens
    if optimal is None:
        optimal = observed - cost(finding.wasted)
    optimal = max(0, min(optimal, observed))
    return Cost(observed=observed, optimal=optimal)


def sequence_tokens(calls: list[ToolCall]) -> int:
    """Estimated tokens of a call sequence: arguments plus results of each call."""
    return sum(call_cost(call) for call in calls)


def trace_tokens(trace: Trace) -> tuple[int, Literal["reported", "estimated", "mixed"]]:
    """The tokens a trace cost, and whether the provider reported them.

    Without model turns (a runner that exports none), the estimate is the
    prompt, every call's arguments and result, and the final answer.
    """
    if trace.totals.model_turns:
        return trace.totals.total_tokens, trace.totals.usage_source
    calls = [step for step in trace.steps if isinstance(step, ToolCall)]
    estimate = (
        estimate_tokens(trace.prompt) + sequence_tokens(calls) + estimate_tokens(trace.final_answer or "")
    )
    return estimate, "estimated"
