"""A scripted OpenAI-compatible chat-completions server on 127.0.0.1, for tests.

Why a real HTTP server instead of a mocked client: the code under test builds
its model from a provider string and talks to it through the OpenAI SDK and
pydantic-ai, exactly as it would talk to a real provider. Only the answers are
scripted.

    with FakeOpenAI() as fake:                       # free port, background thread
        fake.enqueue(text_reply('{"tool": "get_email", "confidence": "high"}'))
        fake.enqueue(tool_call_reply("get_email", {"email_id": 7}))
        ... point a client at fake.base_url (…/v1), any api key ...
        fake.requests                                # every request body, parsed

Answers come from the queue in order; when it is empty, from `responder`
(a function of the request body, for answers that depend on the prompt, e.g.
when requests arrive concurrently); with neither, the request gets HTTP 500 and
a message naming the problem. `stream: true` requests get the same reply as
server-sent events, with a usage chunk when `stream_options.include_usage` is
set. Bounded: at most `max_requests` requests and `max_body` bytes per body are
served; the server always shuts down on leaving the `with` block.
"""

from __future__ import annotations

import itertools
import json
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler
from typing import Any

from fakes.scripted_http import ScriptedHTTPServer


@dataclass
class Reply:
    """One scripted answer: assistant text and/or tool calls, with the usage to report.

    `reasoning` is sent as `reasoning_content`, the field DeepSeek, Moonshot and vLLM use for
    visible thinking.
    """

    content: str | None = None
    tool_calls: list[dict[str, Any]] = field(default_factory=list)
    prompt_tokens: int = 10
    completion_tokens: int = 5
    status: int = 200
    error: str | None = None
    reasoning: str | None = None

    @property
    def finish_reason(self) -> str:
        return "tool_calls" if self.tool_calls else "stop"


def text_reply(content: str, *, prompt_tokens: int = 10, completion_tokens: int = 5) -> Reply:
    """An assistant message with plain text (or JSON text) content."""
    return Reply(content=content, prompt_tokens=prompt_tokens, completion_tokens=completion_tokens)


def tool_call_reply(
    name: str,
    arguments: dict[str, Any],
    *,
    content: str | None = None,
    reasoning: str | None = None,
    prompt_tokens: int = 10,
    completion_tokens: int = 5,
) -> Reply:
    """An assistant message calling one tool with these arguments."""
    return Reply(
        content=content,
        tool_calls=[{"name": name, "arguments": arguments}],
        reasoning=reasoning,
        prompt_tokens=prompt_tokens,
        completion_tokens=completion_tokens,
    )


def error_reply(status: int, message: str) -> Reply:
    """An HTTP error in OpenAI's error format (e.g. 429 rate limit, 401 bad key)."""
    return Reply(status=status, error=message)


Responder = Callable[[dict[str, Any]], Reply]


class FakeOpenAI(ScriptedHTTPServer[Reply]):
    """The server; use it as a context manager. `base_url` ends in /v1 like OpenAI's."""

    url_suffix = "/v1"
    error_reply = staticmethod(error_reply)

    def __init__(
        self,
        responder: Responder | None = None,
        *,
        model: str = "fake-model",
        max_requests: int = 1000,
        max_body: int = 4_000_000,
    ):
        super().__init__(responder, max_requests, max_body)
        self.model = model
        self._ids = itertools.count(1)

    # --- answers ------------------------------------------------------------------------------

    def completion(self, reply: Reply, body: dict[str, Any]) -> dict[str, Any]:
        message: dict[str, Any] = {"role": "assistant", "content": reply.content}
        if reply.reasoning:
            message["reasoning_content"] = reply.reasoning
        if reply.tool_calls:
            message["tool_calls"] = [
                {
                    "id": f"call_{next(self._ids)}",
                    "type": "function",
                    "function": {"name": call["name"], "arguments": json.dumps(call["arguments"])},
                }
                for call in reply.tool_calls
            ]
        return {
            "id": f"chatcmpl-{next(self._ids)}",
            "object": "chat.completion",
            "created": int(time.time()),
            "model": body.get("model") or self.model,
            "choices": [{"index": 0, "message": message, "finish_reason": reply.finish_reason}],
            "usage": _usage(reply),
        }

    def chunks(self, reply: Reply, body: dict[str, Any]) -> list[dict[str, Any]]:
        base = {
            "id": f"chatcmpl-{next(self._ids)}",
            "object": "chat.completion.chunk",
            "created": int(time.time()),
            "model": body.get("model") or self.model,
        }

        def chunk(delta: dict[str, Any], finish: str | None = None) -> dict[str, Any]:
            return {**base, "choices": [{"index": 0, "delta": delta, "finish_reason": finish}]}

        out = [chunk({"role": "assistant", "content": ""})]
        if reply.reasoning:
            out.append(chunk({"reasoning_content": reply.reasoning}))
        if reply.content:
            middle = max(1, len(reply.content) // 2)  # two pieces, so clients must join deltas
            out += [chunk({"content": reply.content[:middle]}), chunk({"content": reply.content[middle:]})]
        for index, call in enumerate(reply.tool_calls):
            arguments = json.dumps(call["arguments"])
            head = {"index": index, "id": f"call_{next(self._ids)}", "type": "function"}
            out.append(chunk({"tool_calls": [{**head, "function": {"name": call["name"], "arguments": ""}}]}))
            out.append(chunk({"tool_calls": [{"index": index, "function": {"arguments": arguments}}]}))
        out.append(chunk({}, reply.finish_reason))
        if (body.get("stream_options") or {}).get("include_usage"):
            out.append({**base, "choices": [], "usage": _usage(reply)})
        return out


def _usage(reply: Reply) -> dict[str, int]:
    return {
        "prompt_tokens": reply.prompt_tokens,
        "completion_tokens": reply.completion_tokens,
        "total_tokens": reply.prompt_tokens + reply.completion_tokens,
    }


class _Handler(BaseHTTPRequestHandler):
    owner: FakeOpenAI
    protocol_version = "HTTP/1.1"

    def log_message(self, format: str, *args: Any) -> None:  # noqa: A002 - quiet test output
        return

    def do_GET(self) -> None:  # noqa: N802
        if self.path.rstrip("/").endswith("/models"):
            self._json(200, {"object": "list", "data": [{"id": self.owner.model, "object": "model"}]})
        else:
            self._json(404, {"error": {"message": f"no route {self.path}", "type": "not_found"}})

    def do_POST(self) -> None:  # noqa: N802
        self.owner.note_headers(self.headers)
        length = int(self.headers.get("Content-Length") or 0)
        if length > self.owner.max_body:
            self._json(413, {"error": {"message": "request body too large", "type": "invalid_request"}})
            return
        raw = self.rfile.read(length)
        if not self.path.rstrip("/").endswith("/chat/completions"):
            self._json(404, {"error": {"message": f"no route {self.path}", "type": "not_found"}})
            return
        try:
            body = json.loads(raw or b"{}")
        except ValueError:
            self._json(400, {"error": {"message": "body is not JSON", "type": "invalid_request"}})
            return
        reply = self.owner._next_reply(body)
        if reply.error is not None:
            self._json(reply.status, {"error": {"message": reply.error, "type": "fake_error"}})
        elif body.get("stream"):
            self._stream(self.owner.chunks(reply, body))
        else:
            self._json(200, self.owner.completion(reply, body))

    def _json(self, status: int, payload: dict[str, Any]) -> None:
        data = json.dumps(payload).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def _stream(self, chunks: list[dict[str, Any]]) -> None:
        self.send_response(200)
        self.send_header("Content-Type", "text/event-stream")
        self.send_header("Cache-Control", "no-cache")
        self.send_header("Connection", "close")
        self.end_headers()
        for item in chunks:
            self.wfile.write(f"data: {json.dumps(item)}\n\n".encode())
        self.wfile.write(b"data: [DONE]\n\n")
        self.wfile.flush()
        self.close_connection = True


def last_user_text(body: dict[str, Any]) -> str:
    """The text of the last user message of a chat request (content may be a string or parts)."""
    for message in reversed(body.get("messages") or []):
        if message.get("role") == "user":
            content = message.get("content")
            if isinstance(content, str):
                return content
            return "".join(part.get("text", "") for part in content or [] if isinstance(part, dict))
    return ""


FakeOpenAI.handler = _Handler
