"""The model requests of a trace: what each one read, what it wrote, which calls it issued.

A tool call is never free for the agent: some model request wrote it, and
the next request read its result together with the whole conversation before
it. `costing` prices wasted calls with these requests, so this module answers
two questions about a trace, once: which request issued each call, and how
many tokens each request read and wrote.

- With model turns, each turn is one request, and it issued the calls that
  follow it up to the next turn (several when the model called tools in
  parallel). What it read is its reported input (see `read_tokens`); what it
  wrote is its output.
- A turn without input figures (a runner that reported none) and a request
  the trace does not record (calls before the first turn; the answer after
  the last call) are estimated with the one estimator on the conversation
  before them: the prompt, every earlier turn's output and every earlier
  call's result (and its arguments when no recorded turn wrote them).
- Without any model turns (a runner that exports none), each call is taken to
  have its own request, as a sequential agent makes them, and a final request
  read everything when the trace has an answer. Their outputs are unknown and
  count as nothing: the arguments are already in each call's price.
"""

from __future__ import annotations

from dataclasses import dataclass

from mcpipechekr._util.tokens import estimate_tokens
from mcpipechekr.artifacts.trace import ModelTurn, ToolCall, Trace, Usage


@dataclass(frozen=True)
class Request:
    """One model request of a trace."""

    step: int | None
    """The model turn's step index; None for a request the trace does not record."""
    input_tokens: int
    """What it read: the conversation up to it."""
    output_tokens: int
    """What it wrote, including the arguments of the calls it issued."""
    calls: tuple[int, ...]
    """Step indexes of the calls it issued."""


def read_tokens(usage: Usage) -> int:
    """Tokens a request read, whichever way its provider counts prompt caching.

    pydantic-ai counts cached tokens inside `input_tokens`; Claude Code and
    opencode report Anthropic-style counts that leave them out. Cache counts
    above `input_tokens` can only be the second kind, so they are added.
    """
    cached = usage.cache_read_tokens + usage.cache_write_tokens
    return usage.input_tokens if usage.input_tokens >= cached else usage.input_tokens + cached


def requests_of(trace: Trace) -> list[Request]:
    """Every model request of the trace, in order (see the module docstring)."""
    if not any(isinstance(step, ModelTurn) for step in trace.steps):
        return _sequential(trace)
    requests: list[Request] = []
    read = estimate_tokens(trace.prompt)  # the conversation so far, estimated
    current: tuple[int | None, int, int, list[int]] | None = None
    for step in trace.steps:
        if isinstance(step, ModelTurn):
            if current is not None:
                requests.append(Request(current[0], current[1], current[2], tuple(current[3])))
            reported = read_tokens(step.usage)
            current = (step.index, reported or read, step.usage.output_tokens, [])
            read += step.usage.output_tokens or estimate_tokens(step.text)
            continue
        if current is None:  # calls before the first recorded turn: a request the trace lacks
            current = (None, read, 0, [])
            read += estimate_tokens(step.arguments)
        current[3].append(step.index)
        read += step.result_tokens_estimated
    if current is not None:
        requests.append(Request(current[0], current[1], current[2], tuple(current[3])))
    if isinstance(trace.steps[-1], ToolCall) and trace.final_answer is not None:
        requests.append(Request(None, read, 0, ()))  # the answer came from a request the trace lacks
    return requests


def _sequential(trace: Trace) -> list[Request]:
    """A request per call, then one for the answer: a trace that records no model turns."""
    requests: list[Request] = []
    read = estimate_tokens(trace.prompt)
    for step in trace.steps:
        if isinstance(step, ToolCall):
            requests.append(Request(None, read, 0, (step.index,)))
            read += estimate_tokens(step.arguments) + step.result_tokens_estimated
    if requests and trace.final_answer is not None:
        requests.append(Request(None, read, 0, ()))
    return requests
