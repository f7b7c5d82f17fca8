"""One trace from two witnesses: the runner's view of the attempt and the capture proxy's journal.

The runner knows what only the agent side knows (model turns, thinking, token
usage, the final answer) and reports tool calls as it saw them, possibly
renamed (`<server>_<tool>` in opencode, `mcp__<server>__<tool>` in Claude
Code) or with truncated results. The journal knows exactly what reached the
server and what came back. So:

1. each tool call the runner reported is paired with a journal call of the
   same tool, preferring one with identical arguments, earliest first; the
   journal's version replaces it (arguments, result, error, latency, size),
   keeping the runner's `call_id`, which links the call to its model turn.
   Where the runner says the model was shown a preview of the result (the
   client cut a large result short), the call keeps the preview as its content
   and price, and the journal's result gives the whole size
   (`result_bytes_full`): a result is priced as the model saw it;
2. a journal call the runner did not report is inserted right after the
   nearest earlier paired call (or before the nearest later one; with none
   paired at all, before the final model turn), in journal order;
3. a runner call with no journal counterpart stays as the runner saw it (a
   built-in tool of the agent, or a call that never reached the server);
4. steps are renumbered, totals computed, and the whole trace redacted.

Anything in (2) or (3) is noted in `status_reason`, so a reader knows the
runner's export and the wire disagreed (unless the runner reported no steps at
all: an attempt cut off by a timeout or Ctrl-C has only the journal's calls).
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

from mcpipechekr.artifacts._base import utc_now
from mcpipechekr.artifacts.trace import ModelTurn, ToolCall, Trace
from mcpipechekr.config import Redactor
from mcpipechekr.runners.base import RunnerName, RunnerOutput, RunRequest


def tool_name_matches(reported: str, actual: str, server_name: str) -> bool:
    """True when a runner's name for a tool is the server's `actual` name, prefixed as agents do."""
    if reported == actual:
        return True
    prefixes = (f"{server_name}_", f"{server_name}__", f"mcp__{server_name}__")
    return any(reported == prefix + actual for prefix in prefixes)


def _pair(placeholders: list[ToolCall], journal_calls: list[ToolCall], server_name: str) -> dict[int, int]:
    """placeholder position -> journal position, by name and arguments, earliest first."""
    pairs: dict[int, int] = {}
    used: set[int] = set()
    for exact in (True, False):
        for position, call in enumerate(placeholders):
            if position in pairs:
                continue
            for index, actual in enumerate(journal_calls):
                if index in used or not tool_name_matches(call.tool, actual.tool, server_name):
                    continue
                if exact and call.arguments != actual.arguments:
                    continue
                pairs[position] = index
                used.add(index)
                break
    return pairs


def _paired(placeholder: ToolCall, actual: ToolCall) -> ToolCall:
    """The journal's call with the runner's call id; shown and priced as the runner's preview, if one."""
    update: dict[str, Any] = {"call_id": placeholder.call_id}
    if placeholder.result_preview and not actual.is_error:
        update.update(
            result_content=placeholder.result_content,
            result_bytes=placeholder.result_bytes,
            result_tokens_estimated=placeholder.result_tokens_estimated,
            result_preview=True,
            result_bytes_full=actual.result_bytes,
            result_tokens_full=actual.result_tokens_estimated,
        )
    return actual.model_copy(update=update)


def assemble_trace(
    request: RunRequest,
    output: RunnerOutput,
    journal_calls: list[ToolCall],
    *,
    runner: RunnerName | None = None,
    redactor: Redactor | None = None,
    started_at: datetime | None = None,
    ended_at: datetime | None = None,
) -> Trace:
    """The attempt's trace: the runner's turns with the journal's tool calls (see the module doc).

    `runner` defaults to `demo` for the demo provider and `native` otherwise;
    `redactor` to the request config's. Start and end times come from the
    output, else from the arguments, else now.
    """
    steps = list(output.steps)
    placeholder_at = [position for position, step in enumerate(steps) if isinstance(step, ToolCall)]
    placeholders = [steps[position] for position in placeholder_at]
    assert all(isinstance(step, ToolCall) for step in placeholders)
    pairs = _pair(placeholders, journal_calls, request.server.name)  # type: ignore[arg-type]

    step_of_journal: dict[int, int] = {}
    for number, position in enumerate(placeholder_at):
        journal_index = pairs.get(number)
        if journal_index is None:
            continue
        steps[position] = _paired(placeholders[number], journal_calls[journal_index])
        step_of_journal[journal_index] = position

    keyed: list[tuple[tuple[int, int, int], ModelTurn | ToolCall]] = [
        ((position, 0, 0), step) for position, step in enumerate(steps)
    ]
    unreported = [index for index in range(len(journal_calls)) if index not in step_of_journal]
    for index in unreported:
        earlier = [j for j in step_of_journal if j < index]
        later = [j for j in step_of_journal if j > index]
        if earlier:
            key = (step_of_journal[max(earlier)], 1, index)
        elif later:
            key = (step_of_journal[min(later)], -1, index)
        elif steps and isinstance(steps[-1], ModelTurn):
            key = (len(steps) - 1, -1, index)
        else:
            key = (len(steps), 0, index)
        keyed.append((key, journal_calls[index]))
    keyed.sort(key=lambda item: item[0])
    ordered = [step.model_copy(update={"index": number}) for number, (_, step) in enumerate(keyed)]

    notes = [output.status_reason] if output.status_reason else []
    if unreported and output.steps:  # with no steps at all, the runner was cut off: nothing to disagree with
        names = ", ".join(journal_calls[index].tool for index in unreported)
        notes.append(
            f"{len(unreported)} tool call(s) seen by the capture proxy, not reported by the runner: {names}"
        )
    unpaired = [placeholders[number].tool for number in range(len(placeholders)) if number not in pairs]
    if unpaired:
        notes.append(
            f"{len(unpaired)} tool call(s) reported by the runner never reached the server: "
            + ", ".join(unpaired)
        )

    start = output.started_at or started_at or utc_now()
    end = output.ended_at or ended_at or utc_now()
    data: dict[str, Any] = {
        "task_id": request.task.task_id,
        "repetition": request.repetition,
        "provider": str(request.provider),
        "model": output.model,
        "runner": runner or ("demo" if request.provider.is_demo else "native"),
        "prompt": request.prompt,
        "started_at": start,
        "ended_at": max(end, start),
        "status": output.status,
        "status_reason": "; ".join(notes) or None,
        "steps": [step.model_dump(mode="json") for step in ordered],
        "final_answer": output.final_answer,
    }
    scrub = redactor or request.config.redactor
    return Trace.model_validate(scrub.redact(data))
