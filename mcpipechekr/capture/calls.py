"""Reading a capture journal back: the tool calls it proves, and whether the server failed.

`journal_tool_calls` pairs every `tools/call` request with its response by
JSON-RPC id and turns each pair into a trace `ToolCall`: arguments as sent,
result content, structured content and `isError` as answered, latency from
the proxy's clock, and the result's size measured the one shared way
(`artifacts.trace.measure_result`). A request that never got an answer (the
server died, the agent cancelled it, the attempt was cut short) is still a
call the agent made: it is kept, marked as an error that says why.

Step indexes are placeholders (the position among the calls); the trace
assembler renumbers them.
"""

from __future__ import annotations

from collections import defaultdict, deque
from pathlib import Path
from typing import Any

import orjson

from mcpipechekr.artifacts.journal import JournalRecord, read_journal
from mcpipechekr.artifacts.trace import ToolCall, tool_call_from_result


def _key(request_id: Any) -> bytes:
    return orjson.dumps(request_id)


def _records(journal: Path | str | list[JournalRecord]) -> list[JournalRecord]:
    records = read_journal(journal) if isinstance(journal, str | Path) else list(journal)
    return sorted(records, key=lambda record: record.seq)


def journal_tool_calls(journal: Path | str | list[JournalRecord]) -> list[ToolCall]:
    """The journal's `tools/call` request/response pairs, in the order the requests were sent."""
    records = _records(journal)
    calls: list[dict[str, Any]] = []
    pending: dict[bytes, deque[dict[str, Any]]] = defaultdict(deque)
    by_key_any: dict[bytes, deque[dict[str, Any]]] = defaultdict(deque)
    end_t = max((record.t for record in records), default=0.0)
    server_death: str | None = None
    for record in records:
        if record.kind == "event":
            if record.event == "server_exited" and not record.expected:
                server_death = record.detail or "the server exited"
            elif record.event == "upstream_error":
                server_death = record.detail or "the server could not be reached"
            continue
        message = record.message
        if not isinstance(message, dict):
            continue
        if record.direction == "to_server":
            method = message.get("method")
            if method == "tools/call" and "id" in message:
                params = message.get("params") if isinstance(message.get("params"), dict) else {}
                call = {"request": record, "params": params, "id": message["id"], "response": None}
                calls.append(call)
                pending[_key(message["id"])].append(call)
                by_key_any[_key(message["id"])].append(call)
            elif method == "notifications/cancelled":
                params = message.get("params") if isinstance(message.get("params"), dict) else {}
                for call in by_key_any.get(_key(params.get("requestId")), ()):
                    if call["response"] is None:
                        call["cancelled"] = params.get("reason") or "cancelled by the agent"
        elif "id" in message and "method" not in message:
            queue = pending.get(_key(message["id"]))
            if queue:
                call = queue.popleft()
                call["response"] = record
    return [_tool_call(position, call, end_t, server_death) for position, call in enumerate(calls)]


def _tool_call(position: int, call: dict[str, Any], end_t: float, server_death: str | None) -> ToolCall:
    request: JournalRecord = call["request"]
    params: dict[str, Any] = call["params"]
    arguments = params.get("arguments")
    common = {
        "index": position,
        "call_id": f"jsonrpc:{orjson.dumps(call['id']).decode()}",
        "tool": str(params.get("name") or "?"),
        "arguments": arguments if isinstance(arguments, dict) else {},
    }
    response: JournalRecord | None = call["response"]
    if response is None:
        if call.get("cancelled"):
            why = f"no result: the agent cancelled the call ({call['cancelled']})"
        elif server_death:
            why = f"no result: {server_death}"
        else:
            why = "no result: the attempt ended before the server answered"
        return tool_call_from_result(
            **common, content=[], is_error=True, error_text=why, latency_ms=max(0.0, end_t - request.t) * 1000
        )
    latency_ms = max(0.0, response.t - request.t) * 1000
    message = response.message if isinstance(response.message, dict) else {}
    if "error" in message:
        error = message["error"] if isinstance(message["error"], dict) else {}
        text = f"JSON-RPC error {error.get('code', '?')}: {error.get('message', '')}".rstrip(": ")
        return tool_call_from_result(
            **common, content=[], is_error=True, error_text=text, latency_ms=latency_ms
        )
    result = message.get("result") if isinstance(message.get("result"), dict) else {}
    content = result.get("content") if isinstance(result.get("content"), list) else []
    return tool_call_from_result(
        **common,
        content=[block for block in content if isinstance(block, dict)],
        structured_content=result.get("structuredContent"),
        is_error=bool(result.get("isError")),
        latency_ms=latency_ms,
    )


def server_failure(journal: Path | str | list[JournalRecord]) -> str | None:
    """Why the server failed during the attempt (it died, or could not be reached), or None if it did not.

    A server that exits after the agent closed the connection did not fail.
    """
    for record in _records(journal):
        if record.kind != "event":
            continue
        if record.event == "server_exited" and record.expected is False:
            return record.detail or "the server exited while the agent was connected"
        if record.event == "upstream_error":
            return record.detail or "the server could not be reached"
    return None


HANDSHAKES = frozenset({"initialize", "server/discover"})
"""How a client opens a session: `initialize`, or the stateless revisions' `server/discover`."""


def start_failure(journal: Path | str | list[JournalRecord]) -> str | None:
    """Why the agent never had a working server, or None when it had one: an infrastructure failure.

    The agent reached the proxy (the journal has records) but the server
    answered none of its requests: it could not be started, died while it
    started, or was too slow for the agent's client, which gave up. Such an
    attempt says nothing about the server's tools or the agent's answer, so
    Phase 1 tries it once more and records it `errored` when the second try
    fails too; it is never judged as an answer. A handshake refused with an
    error (`initialize`, `server/discover`) counts only when no request got an
    answer after it: a client of a newer revision first asks `server/discover`
    and, refused by an older server, goes on with `initialize`. A journal
    without records (the agent failed before it launched its MCP server) is
    not one: the runner's own error says what happened.
    """
    records = _records(journal)
    if not records:
        return None
    asked: dict[bytes, str] = {}
    refused: str | None = None
    death: str | None = None
    for record in records:
        if record.kind == "event":
            if record.event == "server_exited" and record.expected is False:
                death = death or record.detail or "the server exited"
            elif record.event == "upstream_error":
                death = death or record.detail or "the server could not be reached"
            continue
        message = record.message
        if not isinstance(message, dict) or "id" not in message:
            continue
        if record.direction == "to_server" and isinstance(message.get("method"), str):
            asked[_key(message["id"])] = message["method"]
        elif record.direction == "to_agent" and "method" not in message:
            method = asked.get(_key(message["id"]))
            if method is None:
                continue
            if "result" in message or method not in HANDSHAKES:
                return None  # the server answered: it was up, whatever happened next
            error = message.get("error") if isinstance(message.get("error"), dict) else {}
            refused = f"the server refused {method}: {error.get('message') or 'JSON-RPC error'}"
    if refused is not None:
        return refused
    if death is not None:
        return f"{death} before it answered any request"
    if asked:
        return "the server answered no request before the agent's client gave up"
    return None  # the agent asked nothing, and the server did not die: nothing to say of the server
