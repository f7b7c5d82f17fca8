"""How a tool's answer reads: a success, a refusal the tool meant, a crash, or a missing network.

Shared by the probes (check/protocol.py) and argument synthesis
(check/synthesis.py), which must tell a rightful refusal of a guessed argument
("'a' is not a repository") from a defect, with the same rules.

Limits: both "looks like an unhandled exception" and "needs the network" are
heuristics over the error text. A server that hides its crashes behind a polite
message passes the first; an error that merely mentions a timeout is taken for
the second, but only on a tool annotated `openWorldHint: true`; so is a short
success that reports such an error, while a long one is taken for content.
"""

from __future__ import annotations

import json
import re

import mcp_types
import pydantic

from mcpipechekr.errors import ServerHalt

RESOURCE_NOT_FOUND = -32002
SENSIBLE_ERROR_CODES = {
    mcp_types.INVALID_PARAMS: "invalid params",
    mcp_types.METHOD_NOT_FOUND: "method not found",
    mcp_types.INVALID_REQUEST: "invalid request",
    RESOURCE_NOT_FOUND: "resource not found",
}
"""JSON-RPC error codes that tell a client what it did wrong (as opposed to -32603, internal error)."""

UNHANDLED = re.compile(
    r"Traceback \(most recent call last\)"
    r"|^Error executing tool [^\s:]+\s*$"  # the Python SDK's text for a crash it caught (no detail)
    r"|\binternal (server )?error\b"
    r"|\b(KeyError|TypeError|AttributeError|NameError|IndexError|ZeroDivisionError|UnboundLocalError"
    r"|AssertionError|RecursionError)\b"
    r"|object has no attribute|'NoneType' object",
    re.IGNORECASE | re.MULTILINE,
)
"""Error texts that look like an exception the tool did not handle, rather than an error it reports."""

NEEDS_NETWORK = re.compile(
    r"connection (was )?(refused|reset|aborted)|\bECONNREFUSED\b|\bECONNRESET\b"
    r"|name or service not known|nodename nor servname|temporary failure in name resolution"
    r"|getaddrinfo|\bENOTFOUND\b|\bEAI_AGAIN\b|could not resolve|failed to resolve|name resolution"
    r"|network is unreachable|\bENETUNREACH\b|no route to host|host is unreachable|\bEHOSTUNREACH\b"
    r"|timed out|\btimeout\b|\bETIMEDOUT\b|failed to establish a new connection|\bConnectError\b"
    r"|connection error|connection issue|unable to connect|could not connect|cannot connect|fetch failed",
    re.IGNORECASE,
)
"""Error texts of a call that could not reach another host (for tools annotated openWorldHint: true)."""

REPORTED_FAILURE = re.compile(
    r"\b(error|errors|failed|failure|unable|could not|cannot|can't)\b", re.IGNORECASE
)
SHORT_ANSWER_CHARS = 300
"""Longer than this, a success that mentions a timeout is content (a page, a report), not an error."""


def unreached_in_success(text: str) -> bool:
    """True when a result without isError reads as a failure to reach the host ("Error …: fetch failed").

    Some open-world tools catch the network error and return its text as an
    ordinary answer. A short text that both reports a failure and names a
    network error is taken for one; a long one (a fetched page that mentions a
    timeout) is not. Only for tools annotated openWorldHint: true.
    """
    text = text.strip()
    return (
        0 < len(text) <= SHORT_ANSWER_CHARS
        and NEEDS_NETWORK.search(text) is not None
        and REPORTED_FAILURE.search(text) is not None
    )


def text_of(result: mcp_types.CallToolResult) -> str:
    """The text blocks of a result, joined by newlines."""
    return "\n".join(block.text for block in result.content if isinstance(block, mcp_types.TextContent))


REASON_MAX_CHARS = 300
"""Longest server text a check reason quotes; the rest is cut, and the cut says how much (docs/check.md)."""


def one_line(text: str, limit: int = REASON_MAX_CHARS) -> str:
    """A server's text as one line of a reason: JSON compacted, lines joined, cut only past `limit`.

    Why not its first line: servers answer with pretty-printed JSON
    (`{`, then the error on the lines below) and with messages whose cause is
    on the second line, and the first line alone said nothing. JSON, whole or
    after a prefix ("Error: {…}"), is re-written compact; other lines are
    joined with spaces. Past `limit` characters the text is cut, with an
    ellipsis and the count of characters left out, so the cut is never silent.
    """
    text = _compact_json(text.strip())
    joined = " ".join(line.strip() for line in text.splitlines() if line.strip())
    if len(joined) <= limit:
        return joined
    return f"{joined[:limit]}… ({len(joined) - limit} more characters)"


def _compact_json(text: str) -> str:
    """`text` with the JSON value that starts at its first `{` or `[` written on one line, if it parses."""
    start = min((i for i in (text.find("{"), text.find("[")) if i >= 0), default=-1)
    if start < 0:
        return text
    try:
        value, end = json.JSONDecoder().raw_decode(text, start)
    except ValueError:
        return text
    return text[:start] + json.dumps(value, ensure_ascii=False) + text[end:]


def content_problem(result: mcp_types.CallToolResult) -> str | None:
    """What the SDK's model accepts but a client still cannot use: media without data or type."""
    for index, block in enumerate(result.content):
        if isinstance(block, mcp_types.ImageContent | mcp_types.AudioContent):
            if not block.data:
                return f"content[{index}] ({block.type}) has no data"
            if not block.mime_type:
                return f"content[{index}] ({block.type}) has no mimeType"
    return None


def is_open_world(tool: mcp_types.Tool) -> bool:
    """True only for a tool annotated `openWorldHint: true` (a missing hint does not count here)."""
    return tool.annotations is not None and tool.annotations.open_world_hint is True


def halt_reason(halt: ServerHalt) -> str:
    """The halt's message: what happened, during which call, and the server's last stderr lines."""
    return str(halt).replace("\n  Its stderr is logged at", "\n  stderr log:")


def validation_reason(error: pydantic.ValidationError) -> str:
    """The first of pydantic's errors (the others are usually the same mistake seen by other union arms)."""
    first = error.errors()[0]
    where = ".".join(str(part) for part in first["loc"])
    value = first.get("input")
    shown = f" (got {value!r})" if not isinstance(value, dict | list) else ""
    return (
        f"{error.error_count()} validation error(s) for {error.title}; first: {where}: {first['msg']}{shown}"
    )
