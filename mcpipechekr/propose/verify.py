"""Verifying a proposed task before it is written: replay its reference calls, find its answer.

Why: a proposal is a guess (a template's, or a model's) until the server gives
the same answer again. Each proposal's reference calls are replayed in order
on a freshly started server (not the one exploration warmed up), and the task
is kept only when

- every call names a tool the server lists and annotates read-only (the
  baseline would refuse any other, `baseline.write_call_problems`) and
  answers without an error;
- every scalar of its `expected_result` is a value of the last call's result
  (numbers equal, strings equal ignoring case and surrounding space) or the
  length of a list in it (a count of listed records);
- the correctness check of Phase 2 (`evaluate.correctness.check_deterministic`)
  finds the expected values in that result, so an agent that reports the
  result is judged right.

Anything else is refused with its reason, and listed, never written.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import mcp_types
import orjson

from mcpipechekr.evaluate.correctness import check_deterministic, identifying_payload
from mcpipechekr.propose.explore import document_of
from mcpipechekr.propose.templates import Proposal
from mcpipechekr.server.annotations import write_risk
from mcpipechekr.server.lifecycle import ServerUnderTest


@dataclass(frozen=True)
class Refusal:
    """A proposal that was not written, and why."""

    prompt: str
    reason: str
    template: str


def verify_proposal(
    server: ServerUnderTest, tools: dict[str, mcp_types.Tool], proposal: Proposal, timeout_s: float
) -> str | None:
    """None when the proposal's answer is reproduced; else why not."""
    if not proposal.reference_calls:
        return "it has no reference calls"
    if proposal.expected_result in (None, "", [], {}):
        return "it has no expected_result"
    document: Any = None
    for number, (name, arguments) in enumerate(proposal.reference_calls, start=1):
        tool = tools.get(name)
        if tool is None:
            return f"reference call {number}: the server has no tool '{name}'"
        if (risk := write_risk(tool)) is not None:
            return f"reference call {number}: '{name}' may change state ({risk})"
        try:
            result = server.call_tool(name, arguments, timeout_s)
        except Exception as exc:  # a refusal, a halt: the answer is not reproduced either way
            return (
                f"reference call {number} ({name}) failed: {type(exc).__name__}: {str(exc).splitlines()[0]}"
            )
        if result.is_error:
            text = " ".join(b.text for b in result.content if isinstance(b, mcp_types.TextContent))
            return f"reference call {number} ({name}) failed: {text.strip()[:200]}"
        document = document_of(result)
    if document is None:
        return "the last reference call's result is not JSON: nothing to compare the answer with"
    missing = [value for value in scalars(proposal.expected_result) if not found_in(value, document)]
    if missing:
        shown = ", ".join(orjson.dumps(value).decode() for value in missing[:3])
        return f"the replayed result does not contain {shown}"
    seen = orjson.dumps(document, default=str).decode()
    verdict = check_deterministic(seen, identifying_payload(proposal.expected_result, expected=True))
    if not verdict.correct:
        return f"the correctness check would not accept the replayed result: {verdict.reason}"
    return None


def scalars(value: Any) -> Iterator[Any]:
    if isinstance(value, dict):
        for item in value.values():
            yield from scalars(item)
    elif isinstance(value, list):
        for item in value:
            yield from scalars(item)
    elif value is not None:
        yield value


def found_in(value: Any, document: Any) -> bool:
    """Whether `value` is a scalar of `document`, or (an integer) the length of one of its lists."""
    if isinstance(document, dict):
        return any(found_in(value, item) for item in document.values())
    if isinstance(document, list):
        if isinstance(value, int) and not isinstance(value, bool) and len(document) == value:
            return True
        return any(found_in(value, item) for item in document)
    if isinstance(value, bool) or isinstance(document, bool):
        return value is document
    if isinstance(value, int | float) and isinstance(document, int | float):
        return float(value) == float(document)
    if isinstance(value, str) and isinstance(document, str):
        return value.strip().lower() == document.strip().lower()
    if isinstance(value, str) and isinstance(document, int | float):
        return value.strip() == str(document)
    return False
