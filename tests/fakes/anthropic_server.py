"""A scripted Anthropic Messages API server on 127.0.0.1, for tests.

Why: Claude Code (and pydantic-ai's Anthropic model) talk to Anthropic's
Messages API; pointing them at this server (`ANTHROPIC_BASE_URL`) lets a test
drive the real client end to end with scripted answers and no provider.

    with FakeAnthropic() as fake:                      # free port, background thread
        fake.enqueue(tool_use_reply("mcp__emailindex__count_emails", {"keywords": "Ron"}))
        fake.enqueue(text_reply("103 emails", thinking="Counting first."))
        ... ANTHROPIC_BASE_URL=fake.base_url, any ANTHROPIC_API_KEY ...
        fake.requests                                  # every /v1/messages body, parsed

Answers come from the queue in order, then from `responder` (a function of the
request body), else HTTP 500 with a message naming the problem. A request with
`"stream": true` gets the reply as server-sent events in the Messages API's
order: `message_start` (with input usage), per block `content_block_start`,
deltas (`thinking_delta` + `signature_delta`, `text_delta`, `input_json_delta`
split in two pieces so clients must join them), `content_block_stop`, then
`message_delta` (stop reason, output usage) and `message_stop`. Other
requests get one JSON message. `count_tokens` is answered with an estimate.
Bounded: at most `max_requests` requests and `max_body` bytes per body.
"""

from __future__ import annotations

import itertools
import json
from collections.abc import Callable
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler
from typing import Any

from fakes.scripted_http import ScriptedHTTPServer


@dataclass
class Reply:
    """One scripted assistant message: content blocks in order, and the usage to report."""

    blocks: list[dict[str, Any]] = field(default_factory=list)
    input_tokens: int = 20
    output_tokens: int = 7
    cache_read_input_tokens: int = 0
    cache_creation_input_tokens: int = 0
    status: int = 200
    error: str | None = None

    @property
    def stop_reason(self) -> str:
        return "tool_use" if any(block["type"] == "tool_use" for block in self.blocks) else "end_turn"


def text_reply(text: str, *, thinking: str | None = None, **usage: int) -> Reply:
    """A final answer, optionally preceded by a thinking block."""
    blocks: list[dict[str, Any]] = []
    if thinking:
        blocks.append({"type": "thinking", "thinking": thinking})
    blocks.append({"type": "text", "text": text})
    return Reply(blocks=blocks, **usage)


def tool_use_reply(
    name: str,
    arguments: dict[str, Any],
    *,
    text: str | None = None,
    thinking: str | None = None,
    **usage: int,
) -> Reply:
    """An assistant message calling one tool (after optional thinking and text)."""
    blocks: list[dict[str, Any]] = []
    if thinking:
        blocks.append({"type": "thinking", "thinking": thinking})
    if text:
        blocks.append({"type": "text", "text": text})
    blocks.append({"type": "tool_use", "name": name, "input": arguments})
    return Reply(blocks=blocks, **usage)


def error_reply(status: int, message: str) -> Reply:
    """An HTTP error in Anthropic's error format (e.g. 401, 429, 529)."""
    return Reply(status=status, error=message)


Responder = Callable[[dict[str, Any]], Reply]


class FakeAnthropic(ScriptedHTTPServer[Reply]):
    """The server; use it as a context manager. `base_url` has no /v1 (clients append it)."""

    url_suffix = ""
    error_reply = staticmethod(error_reply)

    def __init__(
        self,
        responder: Responder | None = None,
        *,
        model: str = "claude-fake-1",
        max_requests: int = 1000,
        max_body: int = 8_000_000,
    ):
        super().__init__(responder, max_requests, max_body)
        self.model = model
        self.paths: list[str] = []
        self._ids = itertools.count(1)

    # --- answers ------------------------------------------------------------------------------

    def _full_blocks(self, reply: Reply) -> list[dict[str, Any]]:
        """The reply's blocks as the API returns them: tool_use ids and thinking signatures filled in."""
        out = []
        for block in reply.blocks:
            block = dict(block)
            if block["type"] == "tool_use":
                block.setdefault("id", f"toolu_fake{next(self._ids):04d}")
            if block["type"] == "thinking":
                block.setdefault("signature", "fake-signature")
            out.append(block)
        return out

    def message(self, reply: Reply, body: dict[str, Any]) -> dict[str, Any]:
        return {
            "id": f"msg_fake{next(self._ids):04d}",
            "type": "message",
            "role": "assistant",
            "model": body.get("model") or self.model,
            "content": self._full_blocks(reply),
            "stop_reason": reply.stop_reason,
            "stop_sequence": None,
            "usage": _usage(reply),
        }

    def events(self, reply: Reply, body: dict[str, Any]) -> list[tuple[str, dict[str, Any]]]:
        head = self.message(reply, body)
        blocks = head.pop("content")
        start_usage = {**_usage(reply), "output_tokens": 1}
        out: list[tuple[str, dict[str, Any]]] = [
            (
                "message_start",
                {
                    "type": "message_start",
                    "message": {**head, "content": [], "stop_reason": None, "usage": start_usage},
                },
            ),
        ]
        for index, block in enumerate(blocks):
            kind = block["type"]
            if kind == "text":
                start, deltas = {"type": "text", "text": ""}, _halves(block["text"], "text_delta", "text")
            elif kind == "thinking":
                start = {"type": "thinking", "thinking": "", "signature": ""}
                deltas = _halves(block["thinking"], "thinking_delta", "thinking")
                deltas.append({"type": "signature_delta", "signature": block["signature"]})
            elif kind == "tool_use":
                start = {"type": "tool_use", "id": block["id"], "name": block["name"], "input": {}}
                deltas = _halves(json.dumps(block["input"]), "input_json_delta", "partial_json")
            else:
                raise ValueError(f"fake server: unknown block type {kind!r}")
            out.append(
                (
                    "content_block_start",
                    {"type": "content_block_start", "index": index, "content_block": start},
                )
            )
            out += [
                ("content_block_delta", {"type": "content_block_delta", "index": index, "delta": delta})
                for delta in deltas
            ]
            out.append(("content_block_stop", {"type": "content_block_stop", "index": index}))
        out.append(
            (
                "message_delta",
                {
                    "type": "message_delta",
                    "delta": {"stop_reason": reply.stop_reason, "stop_sequence": None},
                    "usage": {"output_tokens": reply.output_tokens},
                },
            )
        )
        out.append(("message_stop", {"type": "message_stop"}))
        return out


def _halves(text: str, delta_type: str, key: str) -> list[dict[str, Any]]:
    middle = max(1, len(text) // 2)
    pieces = [text[:middle], text[middle:]] if len(text) > 1 else [text]
    return [{"type": delta_type, key: piece} for piece in pieces]


def _usage(reply: Reply) -> dict[str, int]:
    return {
        "input_tokens": reply.input_tokens,
        "output_tokens": reply.output_tokens,
        "cache_read_input_tokens": reply.cache_read_input_tokens,
        "cache_creation_input_tokens": reply.cache_creation_input_tokens,
    }


class _Handler(BaseHTTPRequestHandler):
    owner: FakeAnthropic
    protocol_version = "HTTP/1.1"

    def log_message(self, format: str, *args: Any) -> None:  # noqa: A002 - quiet test output
        return

    def do_HEAD(self) -> None:  # noqa: N802 - connectivity probes
        self.send_response(200)
        self.send_header("Content-Length", "0")
        self.end_headers()

    def do_GET(self) -> None:  # noqa: N802
        path = self.path.split("?")[0].rstrip("/")
        if path.endswith("/v1/models"):
            self._json(
                200,
                {
                    "data": [{"type": "model", "id": self.owner.model, "display_name": "fake"}],
                    "has_more": False,
                    "first_id": self.owner.model,
                    "last_id": self.owner.model,
                },
            )
        else:
            self._json(404, _error("not_found_error", f"no route {self.path}"))

    def do_POST(self) -> None:  # noqa: N802
        self.owner.note_headers(self.headers)
        length = int(self.headers.get("Content-Length") or 0)
        if length > self.owner.max_body:
            self._json(413, _error("request_too_large", "request body too large"))
            return
        raw = self.rfile.read(length)
        path = self.path.split("?")[0].rstrip("/")
        self.owner.paths.append(path)
        try:
            body = json.loads(raw or b"{}")
        except ValueError:
            self._json(400, _error("invalid_request_error", "body is not JSON"))
            return
        if path.endswith("/v1/messages/count_tokens"):
            self._json(200, {"input_tokens": max(1, len(raw) // 4)})
            return
        if not path.endswith("/v1/messages"):
            self._json(404, _error("not_found_error", f"no route {self.path}"))
            return
        reply = self.owner._next_reply(body)
        if reply.error is not None:
            self._json(reply.status, _error("api_error", reply.error))
        elif body.get("stream"):
            self._stream(self.owner.events(reply, body))
        else:
            self._json(200, self.owner.message(reply, body))

    def _json(self, status: int, payload: dict[str, Any]) -> None:
        data = json.dumps(payload).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.send_header("request-id", "req_fake")
        self.end_headers()
        self.wfile.write(data)

    def _stream(self, events: list[tuple[str, dict[str, Any]]]) -> None:
        self.send_response(200)
        self.send_header("Content-Type", "text/event-stream")
        self.send_header("Cache-Control", "no-cache")
        self.send_header("Connection", "close")
        self.send_header("request-id", "req_fake")
        self.end_headers()
        for name, data in events:
            self.wfile.write(f"event: {name}\ndata: {json.dumps(data)}\n\n".encode())
        self.wfile.flush()
        self.close_connection = True


def _error(kind: str, message: str) -> dict[str, Any]:
    return {"type": "error", "error": {"type": kind, "message": message}}


def tool_names(body: dict[str, Any]) -> list[str]:
    """Names of the tools a request offers the model."""
    return [tool.get("name", "") for tool in body.get("tools") or []]


def tool_results(body: dict[str, Any]) -> list[dict[str, Any]]:
    """Every tool_result block the request's messages carry, in order."""
    results = []
    for message in body.get("messages") or []:
        content = message.get("content")
        if isinstance(content, list):
            results += [
                block for block in content if isinstance(block, dict) and block.get("type") == "tool_result"
            ]
    return results


FakeAnthropic.handler = _Handler
