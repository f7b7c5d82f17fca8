"""pydantic-ai message history -> trace steps (ModelTurn, ToolCall), in the order they happened.

Why a converter of its own: the native and demo runners both drive a pydantic-ai
agent, and what only the agent knows (each response's text, its thinking blocks,
the usage the provider reported per request) lives in its message history. Tool
calls are converted too, as placeholders: `assemble_trace` replaces them with the
capture proxy's journal records, which are the authority on what the server
answered. A placeholder still carries what the model saw (the result as text,
whether it was an error), so a trace stays useful where no journal exists.

Mapping:
- each `ModelResponse` -> one `ModelTurn`: its text parts joined, its thinking
  parts as `thinking`, its usage as `reported` when the provider gave numbers,
  else estimated with the one estimator (`Usage.estimated`) from what the model
  read (instructions, prompt, earlier turns, tool results; not the tool
  definitions, which the history does not hold) and what it wrote;
- each `ToolCallPart` -> one `ToolCall` after that turn, paired with the
  `ToolReturnPart` (or deprecated `RetryPromptPart`) answering its call id; a
  failed, retried or denied outcome is an error whose text is what the model saw.
  A call nobody answered (the run was cut short) gets an error saying so.

Limits: latency is only known when the runner measured it (`latencies`, by call
id); otherwise it is 0 and the journal's figure replaces it.

The same history is what a scripted model (provider `demo`) decides from:
`user_prompt` and `tool_results` read it back for one, and are the public helpers
a server's own `demo_agent.py` may use (see `runners/demo.py`).
"""

from __future__ import annotations

import copy
import json
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import orjson
from pydantic_ai.messages import (
    ModelMessage,
    ModelRequest,
    ModelResponse,
    RetryPromptPart,
    TextPart,
    ThinkingPart,
    ToolCallPart,
    ToolReturnPart,
    UserPromptPart,
)

from mcpipechekr.artifacts.trace import ModelTurn, ToolCall, Usage, tool_call_from_result

ERROR_OUTCOMES = frozenset({"failed", "retried", "denied", "interrupted"})
NO_RESULT = "no result: the run ended before the tool answered"


def content_text(content: Any) -> str:
    """A tool return as the text a model reads: strings as they are, anything else as compact JSON."""
    if isinstance(content, str):
        return content
    return orjson.dumps(content, default=str).decode()


def _visible(message: ModelMessage) -> list[Any]:
    """What a message puts in front of the model: instructions, prompts, results, text, thinking, calls.

    Estimates are taken from this, not from pydantic-ai's serialised messages, whose
    timestamps and ids no model ever reads.
    """
    if isinstance(message, ModelRequest):
        seen: list[Any] = [message.instructions] if message.instructions else []
        for part in message.parts:
            if isinstance(part, RetryPromptPart):
                seen.append(part.model_response())
            elif hasattr(part, "content"):
                seen.append(part.content)
        return seen
    seen = []
    for part in message.parts:
        if isinstance(part, TextPart | ThinkingPart):
            seen.append(part.content)
        elif isinstance(part, ToolCallPart):
            seen.append({"name": part.tool_name, "arguments": part.args_as_dict()})
    return seen


def _usage(response: ModelResponse, sent: Sequence[ModelMessage], estimate: bool) -> Usage:
    reported = response.usage
    numbers = reported.input_tokens or reported.output_tokens
    if numbers and not estimate:
        return Usage(
            input_tokens=reported.input_tokens,
            output_tokens=reported.output_tokens,
            cache_read_tokens=reported.cache_read_tokens,
            cache_write_tokens=reported.cache_write_tokens,
            source="reported",
        )
    prompt = [item for message in sent for item in _visible(message)]
    return Usage.estimated(prompt, _visible(response))


def _answers(messages: Sequence[ModelMessage]) -> dict[str, ToolReturnPart | RetryPromptPart]:
    answers: dict[str, ToolReturnPart | RetryPromptPart] = {}
    for message in messages:
        if isinstance(message, ModelRequest):
            for part in message.parts:
                if isinstance(part, ToolReturnPart | RetryPromptPart):
                    answers[part.tool_call_id] = part
    return answers


def _tool_call(
    index: int,
    call: ToolCallPart,
    answer: ToolReturnPart | RetryPromptPart | None,
    latency_ms: float,
    tool_name: Callable[[str], str],
) -> ToolCall:
    if answer is None:
        text, is_error = NO_RESULT, True
    elif isinstance(answer, RetryPromptPart):
        text, is_error = answer.model_response(), True
    else:
        text, is_error = content_text(answer.content), answer.outcome in ERROR_OUTCOMES
    return tool_call_from_result(
        index=index,
        call_id=call.tool_call_id,
        tool=tool_name(call.tool_name),
        arguments=call.args_as_dict(),
        content=[{"type": "text", "text": text}],
        is_error=is_error,
        latency_ms=latency_ms,
    )


def steps_from_messages(
    messages: Sequence[ModelMessage],
    *,
    estimate_usage: bool = False,
    latencies: Mapping[str, float] | None = None,
    tool_prefix: str | None = None,
) -> list[ModelTurn | ToolCall]:
    """The trace steps of a pydantic-ai run, indexed from 0.

    `estimate_usage` forces estimated usage (a scripted model's numbers are not a
    provider's); `latencies` maps call ids to measured milliseconds; a tool name
    starting with `tool_prefix` + `_` loses that prefix.
    """
    latencies = latencies or {}
    answers = _answers(messages)

    def tool_name(name: str) -> str:
        if tool_prefix and name.startswith(f"{tool_prefix}_") and len(name) > len(tool_prefix) + 1:
            return name[len(tool_prefix) + 1 :]
        return name

    steps: list[ModelTurn | ToolCall] = []
    for position, message in enumerate(messages):
        if not isinstance(message, ModelResponse):
            continue
        steps.append(
            ModelTurn(
                index=len(steps),
                text="".join(part.content for part in message.parts if isinstance(part, TextPart)),
                thinking=[
                    part.content for part in message.parts if isinstance(part, ThinkingPart) and part.content
                ],
                usage=_usage(message, messages[:position], estimate_usage),
                request_id=message.provider_response_id,
            )
        )
        for part in message.parts:
            if isinstance(part, ToolCallPart):
                answer = answers.get(part.tool_call_id)
                latency = latencies.get(part.tool_call_id, 0.0)
                steps.append(_tool_call(len(steps), part, answer, latency, tool_name))
    return steps


def final_answer(messages: Sequence[ModelMessage]) -> str | None:
    """The text of the last model response, if that response called no tool (the agent's answer)."""
    for message in reversed(messages):
        if isinstance(message, ModelResponse):
            if any(isinstance(part, ToolCallPart) for part in message.parts):
                return None
            text = "".join(part.content for part in message.parts if isinstance(part, TextPart))
            return text or None
    return None


# --- Reading a history back, for scripted models --------------------------------------------------


@dataclass(frozen=True)
class ToolResult:
    """One tool call a model made and what came back, as a scripted model reads it.

    `data` is the result parsed as JSON when it was JSON text, else the result as
    it came (a private copy: changing it never changes the history); `text` is the
    result as text (an error's message); `ok` is false for an error, a retry
    prompt, and a call that got no answer.
    """

    tool: str
    args: dict[str, Any]
    ok: bool
    data: Any
    text: str


def user_prompt(messages: Sequence[ModelMessage]) -> str:
    """The text of the first user prompt in the history (the task's prompt), or "" when there is none."""
    for message in messages:
        if isinstance(message, ModelRequest):
            for part in message.parts:
                if isinstance(part, UserPromptPart) and isinstance(part.content, str):
                    return part.content
    return ""


def _tool_result(call: ToolCallPart, answer: ToolReturnPart | RetryPromptPart | None) -> ToolResult:
    args = call.args_as_dict()
    if answer is None:
        return ToolResult(call.tool_name, args, False, None, "no result")
    if isinstance(answer, RetryPromptPart):
        return ToolResult(call.tool_name, args, False, None, answer.model_response())
    data: Any = copy.deepcopy(answer.content)
    text = data if isinstance(data, str) else json.dumps(data, default=str)
    if isinstance(data, str):
        try:
            data = json.loads(data)
        except ValueError:
            pass
    return ToolResult(call.tool_name, args, answer.outcome not in ERROR_OUTCOMES, data, text)


def tool_results(messages: Sequence[ModelMessage]) -> list[ToolResult]:
    """Every tool call of the history with its result, in the order the calls were made."""
    answers = _answers(messages)
    return [
        _tool_result(part, answers.get(part.tool_call_id))
        for message in messages
        if isinstance(message, ModelResponse)
        for part in message.parts
        if isinstance(part, ToolCallPart)
    ]
