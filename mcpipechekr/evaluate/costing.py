"""Pricing: what a trace cost, what the optimum would have cost, and the gap a bug is worth.

Two figures, kept apart on purpose:

- a trace's *observed* tokens are what the provider reported for its model
  turns (input + output), or the trace's estimate when it reported none; the
  statistics say which (`tokens_source`);
- a bug's costs are the tokens of the steps that show it, priced alike
  whatever the provider.

A bug's steps are priced in two parts:

1. **Calls.** Each call's arguments plus its result as the agent received it,
   always estimated with the one estimator (`_util.tokens.estimate_tokens`,
   4 bytes per token). A sighting names the steps that show it and the steps
   that were waste; unless the analyzer priced it itself (a projected result,
   a response budget, the baseline's reference tokens), observed = the cost
   of its steps and optimal = observed - the cost of the wasted steps.
2. **Model turns around wasted calls.** A wasted call also costs the model
   requests around it (`turns.requests_of` says which request issued each
   call and what each read and wrote). When every call a request issued is
   waste, the agent would not have needed that round trip:
   - the output tokens of the request that issued the calls;
   - the request that read their results, which re-reads the whole
     conversation so far: its input tokens, as reported when the trace has
     per-request usage, otherwise estimated from the conversation up to that
     point;
   - and every later request re-reads what the round added (that output and
     the calls' tokens): that much again per later request, except the
     requests already counted whole above.
   A wasted call issued together with needed ones (parallel calls) adds no
   round trip; later requests still re-read it. When an analyzer cannot say
   which calls were extra (call_count: every call, `extra_calls` of them too
   many), the turns of all are priced and scaled to the extra share.
   These tokens are added to observed, not to optimal: they are all gap.

So for a date walk of 4 windows the gap is the four calls, plus four round
trips that each re-read a growing conversation, plus the final request
re-reading all four: what an agent without a sort parameter really pays.
The figure is still an estimate: it overlaps where the reading request's
input holds the wasted call's result, and a real agent's requests also carry
the system prompt and tool list, which a trace does not record when its
runner estimates usage.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from mcpipechekr._util.tokens import estimate_tokens
from mcpipechekr.artifacts.trace import ToolCall, Trace
from mcpipechekr.evaluate.base import BugSighting, TraceContext, call_cost


@dataclass(frozen=True)
class Cost:
    observed: int
    optimal: int

    @property
    def gap(self) -> int:
        return max(0, self.observed - self.optimal)


def price(sighting: BugSighting, ctx: TraceContext) -> Cost:
    """The cost of one sighting: its calls, plus the model turns around its wasted calls."""
    tokens = ctx.call_tokens

    def cost(indexes: list[int]) -> int:
        return sum(tokens.get(index, 0) for index in set(indexes))

    observed = sighting.observed_tokens if sighting.observed_tokens is not None else cost(sighting.steps)
    optimal = sighting.optimal_tokens
    if optimal is None:
        optimal = observed - cost(sighting.wasted)
    optimal = max(0, min(optimal, observed))
    observed += turn_tokens(sighting, ctx)
    # what other sightings of the trace already price is not this one's gap (aggregate.assign_steps)
    return Cost(observed=observed, optimal=min(observed, optimal + sighting.explained_tokens))


def turn_tokens(sighting: BugSighting, ctx: TraceContext) -> int:
    """Tokens of the model turns a sighting's wasted calls added (part 2 of the module docstring)."""
    wasted = {index for index in sighting.wasted if index in ctx.call_tokens}
    if not wasted:
        return 0
    requests = ctx.requests
    removed: set[int] = set()  # requests the agent would not have made
    added: list[tuple[int, int]] = []  # (position of the request that read a round, tokens it added)
    total = 0
    for position, request in enumerate(requests):
        issued = wasted.intersection(request.calls)
        if not issued:
            continue
        content = sum(ctx.call_tokens[index] for index in issued)
        reader = position + 1
        if len(issued) == len(request.calls):
            content += request.output_tokens
            total += request.output_tokens
            if reader < len(requests):
                total += requests[reader].input_tokens
                removed.add(reader)
        added.append((reader, content))
    later = [0] * (len(requests) + 1)  # later[p]: requests after position p that the agent still makes
    for position in range(len(requests) - 1, 0, -1):
        later[position - 1] = later[position] + (position not in removed)
    total += sum(content * later[reader] for reader, content in added)
    if sighting.extra_calls is not None:
        total = round(total * min(sighting.extra_calls, len(wasted)) / len(wasted))
    return total


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
