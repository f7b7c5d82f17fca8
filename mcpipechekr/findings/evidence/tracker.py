"""Pairing `tools/call` requests with their responses, and reading a response into a call record.

Shared by the passive proxy (messages as they cross the wire) and by the
conversion of Phase 1 journals (messages as they were journaled), so both
write the same record for the same exchange.

Reading a response:
- a JSON-RPC `error` object → `outcome: error`, `err_code` = its `code`;
- a `result` object with `isError: true` → `outcome: error`; a code and a
  `retryable` flag are taken from `structuredContent` (or from a text block
  that is a JSON object), at the top level or under `error`, when the server
  reports them; without a reported code, `classes.code_for_message` names
  one from the text (`exception`, `timeout`, …), the one fact about the text
  that classification needs, kept while the text is at hand;
- a `result` object with `isError` absent or false → `outcome: ok`;
- anything else (a result that is not an object, a non-boolean `isError`, an
  `error` that is not an object, neither key) is malformed → `outcome:
  unknown`, with no error metadata at all: the response is forwarded as it
  came, and recording a guess would make it evidence.

The error text is read here, once, for the template id and the derived code;
it is not kept.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

import orjson

from mcpipechekr.findings.classes import code_for_message
from mcpipechekr.findings.evidence.records import (
    ERR_CODE_PATTERN,
    CallRecord,
    arg_shape,
    template_id,
)

_ERR_CODE = re.compile(ERR_CODE_PATTERN)
_CODE_KEYS = ("code", "error_code", "errorCode")

_HANDSHAKES = ("initialize", "server/discover")
_SERVER_INFO_META = "io.modelcontextprotocol/serverInfo"
"""Where a server names itself: `serverInfo` of the initialize result, or, from protocol 2026-07-28,
this `_meta` key of the `server/discover` result and of every other result."""

UNANSWERED = {
    "cancelled": ("timeout", "no response: the client cancelled the call"),
    "server_exited": ("server_crash", "no response: the server exited"),
    "ended": ("no_response", "no response: the session ended before the answer"),
}
"""Why a call got no answer → (err_code, the message its template id is made from). A client cancels a
call it gave up waiting for, so a cancelled call counts as a timeout."""


@dataclass(frozen=True)
class ResponseReading:
    """What a response says, sanitized: ready to become a record's outcome fields."""

    outcome: str
    text: str | None = None
    err_code: str | None = None
    retryable: bool | None = None


@dataclass
class _Pending:
    position: int
    tool: str
    shape: dict[str, str]
    at: datetime
    t: float
    size: int
    cancelled: bool = False


def read_response(message: dict[str, Any]) -> ResponseReading:
    """Outcome, error text (for the template only), code and retryable flag of one response."""
    if "error" in message:
        error = message["error"]
        if not isinstance(error, dict) or isinstance(error.get("code"), bool):
            return ResponseReading("unknown")
        code = error.get("code")
        text = str(error.get("message") or "")
        data = error.get("data")
        return ResponseReading(
            "error",
            text=f"json-rpc error: {text}",
            err_code=_code(code) or code_for_message(text),
            retryable=_retryable(data),
        )
    if "result" not in message:
        return ResponseReading("unknown")
    result = message["result"]
    if not isinstance(result, dict):
        return ResponseReading("unknown")
    is_error = result.get("isError", False)
    if not isinstance(is_error, bool):
        return ResponseReading("unknown")
    if not is_error:
        return ResponseReading("ok")
    texts = [block.get("text") for block in _blocks(result) if isinstance(block.get("text"), str)]
    text = "\n".join(texts)
    bodies = [result.get("structuredContent"), *(_json_object(item) for item in texts)]
    code = next((found for body in bodies if (found := _body_code(body)) is not None), None)
    retryable = next((found for body in bodies if (found := _retryable(body)) is not None), None)
    return ResponseReading("error", text=text, err_code=code or code_for_message(text), retryable=retryable)


def _blocks(result: dict[str, Any]) -> Iterator[dict[str, Any]]:
    content = result.get("content")
    if isinstance(content, list):
        yield from (block for block in content if isinstance(block, dict))


def _json_object(text: str) -> dict[str, Any] | None:
    stripped = text.strip()
    if not stripped.startswith("{"):
        return None
    try:
        value = orjson.loads(stripped)
    except orjson.JSONDecodeError:
        return None
    return value if isinstance(value, dict) else None


def _code(value: Any) -> str | None:
    """A reported code as a short token; free text in a `code` field is not kept."""
    if isinstance(value, bool) or not isinstance(value, int | str):
        return None
    text = str(value)
    return text if _ERR_CODE.fullmatch(text) else None


def _body_code(body: Any) -> str | None:
    if not isinstance(body, dict):
        return None
    for holder in (body, body.get("error")):
        if isinstance(holder, dict):
            for key in _CODE_KEYS:
                if (code := _code(holder.get(key))) is not None:
                    return code
    return None


def _retryable(body: Any) -> bool | None:
    if not isinstance(body, dict):
        return None
    for holder in (body, body.get("error")):
        if isinstance(holder, dict) and isinstance(holder.get("retryable"), bool):
            return holder["retryable"]
    return None


def _key(request_id: Any) -> bytes:
    return orjson.dumps(request_id)


class CallTracker:
    """Turns one session's messages into call records; not thread-safe (callers hold a lock).

    `server` may be learned from the server's answers (`learn_server`): the
    handshake's, or the first call's; that is how the passive proxy names a
    server nobody named.
    """

    def __init__(
        self,
        *,
        salt: bytes,
        server: str,
        session: str,
        learn_server: bool = False,
        event_id: Callable[[int], str] | None = None,
    ):
        import uuid

        self.salt = salt
        self.server = server
        self.session = session
        self.learn_server = learn_server
        self._event_id = event_id or (lambda _position: str(uuid.uuid4()))
        self._pending: dict[bytes, _Pending] = {}
        self._handshakes: set[bytes] = set()
        self._position = 0

    @property
    def waiting(self) -> bool:
        """True while a response is still of interest (a call, or a handshake answer)."""
        return bool(self._pending or self._handshakes)

    def to_server(self, message: Any, size: int, t: float, at: datetime | None = None) -> None:
        """A message from the client: remember tool calls (and the handshake, to learn the server's name)."""
        for item in message if isinstance(message, list) else [message]:
            if not isinstance(item, dict):
                continue
            method = item.get("method")
            if method == "tools/call" and "id" in item:
                params = item.get("params") if isinstance(item.get("params"), dict) else {}
                name = params.get("name")
                tool = name[:200] if isinstance(name, str) and name else "(none)"
                self._pending[_key(item["id"])] = _Pending(
                    position=self._position,
                    tool=tool,
                    shape=arg_shape(params.get("arguments")),
                    at=at or datetime.now(UTC),
                    t=t,
                    size=size,
                )
                self._position += 1
            elif method in _HANDSHAKES and "id" in item and self.learn_server:
                self._handshakes.add(_key(item["id"]))
            elif method == "notifications/cancelled":
                params = item.get("params") if isinstance(item.get("params"), dict) else {}
                pending = self._pending.get(_key(params.get("requestId")))
                if pending is not None:
                    pending.cancelled = True

    def to_agent(self, message: Any, size: int, t: float) -> list[CallRecord]:
        """A message from the server: the records of the calls it answers."""
        out = []
        for item in message if isinstance(message, list) else [message]:
            if not isinstance(item, dict) or "method" in item or "id" not in item:
                continue
            key = _key(item["id"])
            if key in self._handshakes:
                self._handshakes.discard(key)
                self._learn(item)
                continue
            pending = self._pending.pop(key, None)
            if pending is not None:
                if self.learn_server:
                    self._learn(item)
                out.append(self._record(pending, read_response(item), size, t))
        return out

    def unanswered(self, t: float, reason: str) -> list[CallRecord]:
        """Records for every call still waiting (`reason`: `server_exited` or `ended`), then forget them."""
        out = []
        for pending in sorted(self._pending.values(), key=lambda item: item.position):
            code, text = UNANSWERED["cancelled" if pending.cancelled else reason]
            reading = ResponseReading("error", text=text, err_code=code)
            out.append(self._record(pending, reading, None, t))
        self._pending.clear()
        return out

    def _learn(self, response: dict[str, Any]) -> None:
        """Take the server's own name from a handshake answer (or any result that carries it), once."""
        result = response.get("result")
        if not isinstance(result, dict):
            return
        meta = result.get("_meta")
        info = result.get("serverInfo")
        if not isinstance(info, dict) and isinstance(meta, dict):
            info = meta.get(_SERVER_INFO_META)
        name = info.get("name") if isinstance(info, dict) else None
        if isinstance(name, str) and name.strip():
            self.server = name.strip()[:200]
            self.learn_server = False

    def _record(self, pending: _Pending, reading: ResponseReading, size: int | None, t: float) -> CallRecord:
        error = reading.outcome == "error"
        return CallRecord(
            event_id=self._event_id(pending.position),
            session=self.session,
            seq=pending.position,
            at=pending.at,
            server=self.server,
            tool=pending.tool,
            template_id=template_id(self.salt, reading.text or "", pending.tool) if error else None,
            arg_shape=pending.shape,  # type: ignore[arg-type]
            outcome=reading.outcome,  # type: ignore[arg-type]
            err_code=reading.err_code,
            retryable=reading.retryable,
            latency_ms=round(max(0.0, t - pending.t) * 1000, 3),
            request_bytes=pending.size,
            response_bytes=size,
        )
