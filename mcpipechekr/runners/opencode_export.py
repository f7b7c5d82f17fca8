"""What opencode recorded of a session, read back: the JSON event stream of `opencode run`, and an
`opencode export` session (also as `mcpipechekr import` reads one) turned into a runner output.

The conversion: each step (`step-start` … `step-finish`) of an assistant
message is one model turn — its text parts, its reasoning parts as thinking,
and the tokens its `step-finish` reports (input excludes cached tokens, which
are counted apart; output includes reasoning tokens) — followed by the tool
calls it made. opencode names MCP tools `<server>_<tool>`; those of our server
are mapped back to the tool's name; calls to other tools (opencode's built-ins,
when kept) stay as opencode named them, and the assembler keeps them as calls
that never reached the server.
Tool results here are opencode's text rendering of them: the text blocks of a
result joined with blank lines, split back into blocks (`split_joined_text`);
an output opencode truncated (`metadata.truncated`) is kept as the truncated text
the model read, with the whole result's size beside it. When the trace is
assembled the capture journal's exact result replaces the text, except where the
model was shown a preview (`assemble.py`).
"""

from __future__ import annotations

import re
from datetime import UTC, datetime
from typing import Any

import orjson

from mcpipechekr._util.tokens import BYTES_PER_TOKEN
from mcpipechekr.artifacts.tool_result import split_joined_text
from mcpipechekr.artifacts.trace import ModelTurn, ToolCall, Usage, tool_call_from_result
from mcpipechekr.runners.base import RunnerOutput, TraceStatus
from mcpipechekr.runners.cliagent import SessionFormatError
from mcpipechekr.runners.opencode_config import opencode_server_key


def parse_event_lines(lines: list[str]) -> list[dict[str, Any]]:
    """The JSON events of `opencode run --format json` (other lines are skipped)."""
    events = []
    for line in lines:
        line = line.strip()
        if not line.startswith("{"):
            continue
        try:
            event = orjson.loads(line)
        except orjson.JSONDecodeError:
            continue
        if isinstance(event, dict):
            events.append(event)
    return events


def session_id_from_events(events: list[dict[str, Any]]) -> str | None:
    """The session id the event stream names first."""
    for event in events:
        session = event.get("sessionID") or (event.get("part") or {}).get("sessionID")
        if isinstance(session, str) and session:
            return session
    return None


def export_from_events(events: list[dict[str, Any]], session_id: str) -> dict[str, Any]:
    """An export-shaped session built from the event stream's parts, grouped by message."""
    messages: dict[str, dict[str, Any]] = {}
    for event in events:
        part = event.get("part")
        if not isinstance(part, dict) or "type" not in part:
            continue
        message_id = str(part.get("messageID") or "unknown")
        message = messages.setdefault(
            message_id, {"info": {"id": message_id, "role": "assistant"}, "parts": []}
        )
        message["parts"].append(part)
        if part["type"] == "step-finish" and part.get("reason"):
            message["info"]["finish"] = part["reason"]
    return {"info": {"id": session_id}, "messages": list(messages.values())}


# --- conversion ------------------------------------------------------------------------------------


def _ms_to_datetime(value: Any) -> datetime | None:
    if isinstance(value, int | float) and value > 0:
        return datetime.fromtimestamp(value / 1000, UTC)
    return None


def _require(condition: bool, where: str, problem: str) -> None:
    if not condition:
        raise SessionFormatError(f"not an opencode export: {where}: {problem}")


def validate_opencode_export(export: Any) -> None:
    """Raise SessionFormatError naming the first place where `export` is not an `opencode export` session."""
    _require(isinstance(export, dict), "top level", "expected a JSON object with `info` and `messages`")
    _require(isinstance(export.get("info"), dict), "info", "missing or not an object")
    _require(isinstance(export["info"].get("id"), str), "info.id", "missing session id")
    messages = export.get("messages")
    _require(isinstance(messages, list), "messages", "missing or not a list")
    for number, message in enumerate(messages):
        where = f"messages[{number}]"
        _require(isinstance(message, dict), where, "not an object")
        info, parts = message.get("info"), message.get("parts")
        _require(isinstance(info, dict) and isinstance(info.get("role"), str), f"{where}.info", "no `role`")
        _require(isinstance(parts, list), f"{where}.parts", "missing or not a list")
        for index, part in enumerate(parts):
            at = f"{where}.parts[{index}]"
            _require(isinstance(part, dict) and isinstance(part.get("type"), str), at, "no `type`")
            if part["type"] == "tool":
                _require(isinstance(part.get("tool"), str), at, "tool part without `tool` name")
                _require(isinstance(part.get("state"), dict), at, "tool part without `state`")
                _require(
                    isinstance(part["state"].get("input", {}), dict), f"{at}.state.input", "not an object"
                )


def opencode_session_prompt(export: dict[str, Any]) -> str | None:
    """The text of the session's first user message: the prompt the agent was given."""
    for message in export.get("messages") or []:
        if (message.get("info") or {}).get("role") == "user":
            texts = [
                part.get("text", "")
                for part in message.get("parts") or []
                if part.get("type") == "text" and not part.get("synthetic")
            ]
            return "".join(texts) or None
    return None


def opencode_client_version(export: dict[str, Any]) -> str | None:
    """The opencode version that recorded an export (`info.version`), if it says."""
    version = (export.get("info") or {}).get("version")
    return version if isinstance(version, str) and version else None


def _usage(tokens: Any, completion: Any) -> Usage:
    if not isinstance(tokens, dict):
        return Usage.estimated("", completion)
    cache = tokens.get("cache") or {}
    return Usage(
        input_tokens=int(tokens.get("input") or 0),
        output_tokens=int(tokens.get("output") or 0) + int(tokens.get("reasoning") or 0),
        cache_read_tokens=int(cache.get("read") or 0),
        cache_write_tokens=int(cache.get("write") or 0),
        source="reported",
    )


class _Turn:
    def __init__(self) -> None:
        self.text: list[str] = []
        self.thinking: list[str] = []
        self.calls: list[dict[str, Any]] = []
        self.tokens: Any = None

    @property
    def empty(self) -> bool:
        return not (self.text or self.thinking or self.calls or self.tokens)


def _tool_call(part: dict[str, Any], tool: str, index: int) -> ToolCall:
    state = part["state"]
    status = state.get("status")
    timing = state.get("time") or {}
    start, end = timing.get("start"), timing.get("end")
    latency = float(end - start) if isinstance(start, int | float) and isinstance(end, int | float) else 0.0
    output = state.get("output")
    text = output if isinstance(output, str) else orjson.dumps(output).decode()
    metadata = state.get("metadata") if isinstance(state.get("metadata"), dict) else {}
    full = truncated_full_size(text) if metadata.get("truncated") is True else None
    blocks = [text] if full is not None else split_joined_text(text)
    content = [{"type": "text", "text": block} for block in blocks]
    if status == "completed":
        return tool_call_from_result(
            index=index,
            call_id=str(part.get("callID") or part.get("id") or index),
            tool=tool,
            arguments=state.get("input") or {},
            content=content if output is not None else [],
            latency_ms=max(0.0, latency),
            shown=content if full is not None and output is not None else None,
            full_size=full,
        )
    error = state.get("error") if status == "error" else None
    message = (
        str(error) if error else f"no result: the call was still {status or 'pending'} when the session ended"
    )
    return tool_call_from_result(
        index=index,
        call_id=str(part.get("callID") or part.get("id") or index),
        tool=tool,
        arguments=state.get("input") or {},
        content=[{"type": "text", "text": message}],
        is_error=True,
        error_text=message,
        latency_ms=max(0.0, latency),
    )


_TRUNCATED = re.compile(r"\n\n\.\.\.(?P<count>\d+) (?P<unit>bytes|lines) truncated\.\.\.\n\n")


def truncated_full_size(text: str) -> tuple[int, int]:
    """(bytes, tokens) of the whole result behind opencode's truncated output.

    opencode keeps the head of a long output, says how many bytes it cut
    (`...N bytes truncated...`) and where it saved the whole. The whole is the
    kept head plus those bytes; when it counts lines instead, the shown text is all
    that is known.
    """
    match = _TRUNCATED.search(text)
    size = len(text.encode("utf-8"))
    if match is not None:
        kept = len(text[: match.start()].encode("utf-8"))
        size = kept + int(match.group("count")) if match.group("unit") == "bytes" else size
    return size, -(-size // BYTES_PER_TOKEN)


def convert_opencode_export(
    export: Any, *, server_name: str | None, max_requests: int | None = None
) -> RunnerOutput:
    """Turn an `opencode export` session into a runner output (see the module docstring).

    `server_name`: the MCP server whose tools are renamed back (`<key>_<tool>` ->
    `<tool>`); other tools, or all with None, keep the name opencode gave them.
    Raises SessionFormatError when `export` is not an opencode export.
    """
    validate_opencode_export(export)
    prefix = f"{opencode_server_key(server_name)}_" if server_name else ""
    steps: list[ModelTurn | ToolCall] = []
    final_answer: str | None = None
    model: str | None = None
    error_reason: str | None = None
    last_finish: str | None = None
    turns = 0
    ended: datetime | None = None

    def flush(turn: _Turn) -> None:
        nonlocal turns
        if turn.empty:
            return
        text = "".join(turn.text)
        steps.append(
            ModelTurn(
                index=len(steps),
                text=text,
                thinking=turn.thinking,
                usage=_usage(
                    turn.tokens, [text, turn.thinking, [c["state"].get("input") for c in turn.calls]]
                ),
            )
        )
        turns += 1
        for part in turn.calls:
            name = part["tool"]
            owned = prefix and name.startswith(prefix) and len(name) > len(prefix)
            steps.append(_tool_call(part, name[len(prefix) :] if owned else name, len(steps)))

    for message in export["messages"]:
        info = message["info"]
        if info["role"] != "assistant":
            continue
        model = info.get("modelID") or model
        if info.get("error"):
            error = info["error"]
            data = error.get("data") if isinstance(error, dict) else None
            detail = data.get("message") if isinstance(data, dict) else None
            name = error.get("name") if isinstance(error, dict) else None
            error_reason = f"{name or 'error'}: {detail or error}"
        ended = _ms_to_datetime((info.get("time") or {}).get("completed")) or ended
        turn = _Turn()
        message_text: list[str] = []
        for part in message["parts"]:
            kind = part["type"]
            if kind == "step-start":
                flush(turn)
                turn, message_text = _Turn(), []
            elif kind == "reasoning" and part.get("text"):
                turn.thinking.append(part["text"])
            elif kind == "text" and part.get("text") and not part.get("synthetic"):
                turn.text.append(part["text"])
                message_text.append(part["text"])
            elif kind == "tool":
                turn.calls.append(part)
            elif kind == "step-finish":
                turn.tokens = part.get("tokens") or {}
                last_finish = part.get("reason") or last_finish
                flush(turn)
                turn = _Turn()
        flush(turn)
        last_finish = info.get("finish") or last_finish
        if message_text and last_finish not in ("tool-calls", "tool_calls"):
            final_answer = "".join(message_text)

    status: TraceStatus
    reason: str | None = None
    if error_reason:
        status, reason = "error", f"the model request failed: {error_reason}"
    elif max_requests is not None and turns >= max_requests:
        status, reason = "incomplete", f"reached the limit of {max_requests} model requests"
    elif final_answer is None:
        status, reason = "incomplete", "the session ended without a final answer"
    else:
        status = "completed"
    started = _ms_to_datetime((export["info"].get("time") or {}).get("created"))
    return RunnerOutput(
        status=status,
        status_reason=reason,
        steps=steps,
        final_answer=final_answer,
        model=model,
        started_at=started,
        ended_at=ended if started and ended and ended >= started else None,
    )
