"""One raw HTTP client for the checks that speak streamable HTTP by hand, every read bounded.

Why: the transport checks (check/spec_http.py, PC-70…PC-79) and the raw
JSON-RPC session the lifecycle checks use over HTTP (check/spec_raw.py) both
send what the SDK's client never would, so neither can use it. They share this
client: `Wire` holds the URL (a redirect within the origin moves it), the
session id as the server sent it (byte for byte) and the headers a client
sends; `Wire.exchange` reads a JSON body or an SSE stream at most `MAX_BODY`
bytes within a deadline, so a server that streams forever or trickles cannot
hold either check.
"""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import urlsplit

import httpx2
from mcp_types.version import LATEST_HANDSHAKE_VERSION

from mcpipechekr.check.answers import one_line

MAX_BODY = 1_000_000
"""Bytes read from one answer at most: a server streaming forever cannot hold the check."""

MAX_REQUEST_S = 10.0
"""Seconds one request may take at most, whatever `--timeout` says: every probe here is a quick one."""

JSON_AND_SSE = "application/json, text/event-stream"


def own_origin(url: str) -> str:
    """`url`'s origin as a browser sends it: scheme, host, an explicit port (no user, path, query)."""
    parts = urlsplit(url)
    host = f"[{parts.hostname}]" if parts.hostname and ":" in parts.hostname else parts.hostname or ""
    return f"{parts.scheme}://{host}" + (f":{parts.port}" if parts.port else "")


@dataclass
class Answer:
    """What one HTTP request got: its status (None when none came), content type, body, timing."""

    status: int | None
    content_type: str = ""
    body: bytes = b""
    session_id: str | None = None
    location: str | None = None
    """Where a redirect points (its Location header), resolved against the request's URL."""
    message: dict[str, Any] | None = None
    """The JSON-RPC message answering a request (from a JSON body or an SSE event), or None."""
    problem: str = ""
    """Why no status came (a timeout, a refused connection), or what was wrong with the body."""
    ms: float = 0.0
    events: list[str] = field(default_factory=list)
    """The data of every SSE event read, when the whole stream was asked for (`Wire.exchange`)."""
    broken: httpx2.HTTPError | None = None
    """What cut the body short after the status came, when the whole stream was asked for."""

    @property
    def accepted(self) -> bool:
        return self.status is not None and 200 <= self.status < 300

    @property
    def refused(self) -> bool:
        return self.status is not None and 400 <= self.status < 500

    def describe(self) -> str:
        """The answer in a reason: `HTTP 200 (text/event-stream)`, `HTTP 404: <body>`, or the failure."""
        if self.status is None:
            return f"no answer ({self.problem})"
        kind = f" ({self.content_type})" if self.content_type else ""
        text = self.body.decode("utf-8", errors="replace").strip()
        return f"HTTP {self.status}{kind}" + (f": {one_line(text)}" if text else "")

    @property
    def answered(self) -> bool:
        """A request got its JSON-RPC response (a result or an error) with a 2xx status."""
        return self.accepted and self.message is not None


@dataclass
class Wire:
    """A raw HTTP conversation with the server: its own session, the headers a client sends, and probes."""

    client: httpx2.Client
    url: str
    configured: dict[str, str]
    protocol_version: str = LATEST_HANDSHAKE_VERSION
    session_id: str | None = None
    _ids: Iterator[int] = field(default_factory=lambda: iter(range(1, 1_000_000)))

    def headers(self, *, session: bool = True, version: bool = True, **changed: str | None) -> httpx2.Headers:
        """The configured headers plus what a client sends; `changed` sets (or, with None, drops) one.

        The session id goes back byte for byte as the server sent it (read as latin-1), so that one
        with characters outside ASCII, which PC-70 fails, still reaches the server in the later probes.
        """
        headers: dict[str, str | bytes] = {name.lower(): value for name, value in self.configured.items()}
        headers["accept"] = JSON_AND_SSE
        headers["content-type"] = "application/json"
        if session and self.session_id is not None:
            headers["mcp-session-id"] = self.session_id.encode("latin-1")
        if version:
            headers["mcp-protocol-version"] = self.protocol_version
        for name, value in changed.items():
            name = name.replace("_", "-")
            if value is None:
                headers.pop(name, None)
            else:
                headers[name] = value
        return httpx2.Headers(list(headers.items()))

    def send(self, method: str, message: dict[str, Any], headers: httpx2.Headers) -> Answer:
        """One request; for a JSON-RPC request, the body is read until its response (JSON or SSE)."""
        started = time.perf_counter()
        content = json.dumps(message).encode() if method == "POST" else None
        try:
            answer = self.exchange(method, content, headers, request_id=message.get("id"))
        except httpx2.TimeoutException:
            answer = Answer(status=None, problem=f"no answer within {self.client.timeout.read:g} s")
        except httpx2.HTTPError as exc:
            answer = Answer(status=None, problem=one_line(f"{type(exc).__name__}: {exc}"))
        answer.ms = (time.perf_counter() - started) * 1000
        return answer

    def exchange(
        self,
        method: str,
        content: bytes | None,
        headers: httpx2.Headers,
        *,
        request_id: Any = None,
        within_s: float = MAX_REQUEST_S,
        whole_stream: bool = False,
    ) -> Answer:
        """One request and its answer, read at most `MAX_BODY` bytes and `within_s` seconds.

        A POST's SSE stream is read until the response to `request_id`, or with `whole_stream` to its
        end, every event kept in `Answer.events`; a GET's stream is closed unread. Raises
        `httpx2.HTTPError` when no answer came, for the caller to word.
        """
        with self.client.stream(method, self.url, content=content, headers=headers) as response:
            answer = Answer(
                status=response.status_code,
                content_type=response.headers.get("content-type", "").split(";")[0].strip().lower(),
                session_id=_session_id(response),
            )
            if response.is_redirect and "location" in response.headers:
                answer.location = str(response.url.join(response.headers["location"]))
            try:
                _read_answer(answer, method, response, request_id, within_s, whole_stream)
            except httpx2.HTTPError as exc:
                if not whole_stream:
                    raise
                answer.broken = exc  # the status came, the body broke off: the events read so far are kept
        return answer

    def post(self, message: dict[str, Any], **header_changes: Any) -> Answer:
        return self.send("POST", message, self.headers(**header_changes))

    def ping(self, **header_changes: Any) -> Answer:
        return self.post({"jsonrpc": "2.0", "id": next(self._ids), "method": "ping"}, **header_changes)

    def open(self, offered_version: str) -> tuple[Answer, Answer]:
        """initialize (no session id, no version header yet), then notifications/initialized."""
        initialize = {
            "jsonrpc": "2.0",
            "id": 0,
            "method": "initialize",
            "params": {
                "protocolVersion": offered_version,
                "capabilities": {},
                "clientInfo": {"name": "mcpipechekr-http-check", "version": "1"},
            },
        }
        opened = self.post(initialize, session=False, version=False)
        if opened.location and own_origin(opened.location) == own_origin(self.url):
            # `/mcp` -> `/mcp/`, say: the SDK client follows a redirect within the origin, so do these
            # checks, once; the configured headers never go to another origin.
            self.url = opened.location
            opened = self.post(initialize, session=False, version=False)
        result = (opened.message or {}).get("result")
        if opened.answered and isinstance(result, dict):
            self.session_id = opened.session_id
            if isinstance(result.get("protocolVersion"), str):
                self.protocol_version = result["protocolVersion"]
        initialized = self.post({"jsonrpc": "2.0", "method": "notifications/initialized"})
        return opened, initialized


def _read_answer(
    answer: Answer, method: str, response: httpx2.Response, request_id: Any, within_s: float, whole: bool
) -> None:
    """Read the body into `answer`: a GET's stream closed unread, an SSE stream, or a JSON body."""
    if method == "GET" and answer.content_type == "text/event-stream":
        pass  # the stream is closed unread: its status and type are the answer
    elif method == "GET":
        answer.body = _read_bounded(response, within_s)  # what came instead of a stream, to quote
    elif answer.content_type == "text/event-stream":
        events = answer.events if whole else None
        answer.message, answer.body, answer.problem = _read_sse(
            response, request_id, within_s=within_s, events=events
        )
    else:
        answer.body = _read_bounded(response, within_s)
        answer.message = _json_rpc(answer.body, request_id)


def _session_id(response: httpx2.Response) -> str | None:
    """The Mcp-Session-Id header's bytes as latin-1 (one character per byte), or None."""
    raw = next((value for name, value in response.headers.raw if name.lower() == b"mcp-session-id"), None)
    return None if raw is None else raw.decode("latin-1")


def _read_bounded(response: httpx2.Response, within_s: float = MAX_REQUEST_S) -> bytes:
    """The body, up to `MAX_BODY` bytes or `within_s` seconds: a trickle cannot hold the check."""
    body = bytearray()
    deadline = time.monotonic() + within_s
    for chunk in response.iter_bytes():
        body.extend(chunk)
        if len(body) >= MAX_BODY or time.monotonic() > deadline:
            break
    return bytes(body[:MAX_BODY])


def _json_rpc(body: bytes, request_id: Any) -> dict[str, Any] | None:
    """The JSON-RPC response to `request_id` in a JSON body, or None (not JSON, not that response)."""
    if request_id is None:
        return None
    try:
        message = json.loads(body)
    except ValueError:
        return None
    if (
        isinstance(message, dict)
        and message.get("id") == request_id
        and ("result" in message or "error" in message)
    ):
        return message
    return None


def _read_sse(
    response: httpx2.Response,
    request_id: Any,
    *,
    within_s: float = MAX_REQUEST_S,
    events: list[str] | None = None,
) -> tuple[dict[str, Any] | None, bytes, str]:
    """Read SSE events until the response to `request_id`: (it or None, the bytes read, a problem).

    Given `events`, the stream is read to its end (or the bound) instead, each event's data appended.
    """
    read = bytearray()
    data: list[str] = []
    found: dict[str, Any] | None = None
    deadline = time.monotonic() + within_s
    for line in response.iter_lines():
        read.extend(line.encode() + b"\n")
        if line.startswith("data:"):
            data.append(line[5:].removeprefix(" "))
        elif not line and data:
            if events is not None:
                events.append("\n".join(data))
            if found is None:
                found = _json_rpc("\n".join(data).encode(), request_id)
            if found is not None and events is None:
                return found, bytes(read), ""
            data = []
        if len(read) >= MAX_BODY or time.monotonic() > deadline:
            if events is not None and data:
                events.append("\n".join(data))
            if found is not None:
                return found, bytes(read[:MAX_BODY]), ""
            return None, bytes(read[:MAX_BODY]), "the SSE stream did not carry the response in time"
    if data:
        if events is not None:
            events.append("\n".join(data))
        if found is None:
            found = _json_rpc("\n".join(data).encode(), request_id)
    if found is not None:
        return found, bytes(read), ""
    return None, bytes(read), "the SSE stream ended without the response"
