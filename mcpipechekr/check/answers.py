"""How a tool's answer reads: a success, a refusal the tool meant, a crash, or a missing network.

Shared by the probes (check/protocol.py) and argument synthesis
(check/synthesis.py), which must tell a rightful refusal of a guessed argument
("'a' is not a repository") from a defect, with the same rules.

Limits: both "looks like an unhandled exception" and "needs the network" are
heuristics over the error text. A server that hides its crashes behind a polite
message passes the first; an error that merely mentions a timeout is taken for
the second, but only on a tool annotated `openWorldHint: true`.
"""

from __future__ import annotations

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


def text_of(result: mcp_types.CallToolResult) -> str:
    """The text blocks of a result, joined by newlines."""
    return "\n".join(block.text for block in result.content if isinstance(block, mcp_types.TextContent))


def first_line(text: str) -> str:
    return text.strip().splitlines()[0] if text.strip() else ""


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
