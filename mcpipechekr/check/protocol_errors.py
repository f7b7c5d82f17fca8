"""Layer 1's error handling (PC-20…PC-24): bad requests must get a structured error, not a crash.

An unknown tool, a missing required argument, a wrong argument type and an
unknown resource, then a tools/list to see the server still answers. Run by
`run_protocol` (check/protocol.py) after the tool calls, so a tool whose
valid call already halted the server is not probed again.
"""

from __future__ import annotations

import uuid
from collections.abc import Callable
from typing import Any

import mcp_types
from mcp.shared.exceptions import MCPError

from mcpipechekr.artifacts.check_report import CheckStatus
from mcpipechekr.check.answers import SENSIBLE_ERROR_CODES, UNHANDLED, one_line, text_of
from mcpipechekr.check.argsgen import minimal_arguments
from mcpipechekr.check.context import CheckContext
from mcpipechekr.check.protocol_verdicts import (
    _attempt,
    _capabilities,
    _failed,
    _lost,
    _session_call,
    _verdict,
)

UNKNOWN_TOOL = "mcpipechekr_no_such_tool"
UNKNOWN_RESOURCE = "mcpipechekr://no-such-resource/"

_WRONG_TYPE_VALUES: dict[str, Any] = {
    "string": 12345,
    "integer": "not-a-number",
    "number": "not-a-number",
    "boolean": "not-a-boolean",
    "array": "not-an-array",
    "object": "not-an-object",
}


def _probe(
    ctx: CheckContext,
    check_id: str,
    tool: str | None,
    *,
    during: str,
    call: Callable[[], Any],
    on_success: tuple[CheckStatus, str],
) -> None:
    """Make one bad request and judge the answer: a structured error passes, a crash or hang fails.

    `on_success` is the verdict when the server answers as if nothing were wrong.
    """
    ctx.step(f"{check_id} {during}")
    answer, error, ms = _attempt(ctx, call)
    verdict = _verdict(ctx, check_id, tool, duration_ms=ms)
    if isinstance(error, MCPError):
        code, known = error.error.code, SENSIBLE_ERROR_CODES.get(error.error.code)
        label = known or "not a code that names the client's mistake (-32602 does)"
        message = one_line(error.error.message)
        verdict("PASS" if known else "WARN", f"JSON-RPC error {code}, {label}: {message}")
    elif error is not None:
        _failed(ctx, verdict, error, during)
    elif isinstance(answer, mcp_types.CallToolResult) and answer.is_error:
        text = text_of(answer)
        if UNHANDLED.search(text):
            verdict("WARN", f"isError, but it looks like an unhandled exception: {one_line(text)}")
        else:
            verdict("PASS", f"isError: {one_line(text)}")
    else:
        verdict(*on_success)


def _check_unknown_tool(ctx: CheckContext) -> None:
    """PC-20: calling a tool that does not exist gets an error, not a crash."""
    if _lost(ctx, _verdict(ctx, "PC-20")):
        return
    missing = f"{UNKNOWN_TOOL}_{uuid.uuid4().hex[:8]}"
    _probe(
        ctx,
        "PC-20",
        None,
        during=f"calling {missing}",
        call=lambda: ctx.server.call_tool(missing, {}, timeout_s=ctx.call_timeout_s),
        on_success=("FAIL", f"answered a call to the unknown tool {missing!r} as a success"),
    )


def _required_typed(tool: mcp_types.Tool) -> tuple[list[str], str | None, str | None]:
    """(required names, the first required property with a known JSON type, that type)."""
    schema = tool.input_schema if isinstance(tool.input_schema, dict) else {}
    required = [name for name in schema.get("required") or [] if isinstance(name, str)]
    properties = schema.get("properties") if isinstance(schema.get("properties"), dict) else {}
    for name in required:
        prop = properties.get(name)
        kind = prop.get("type") if isinstance(prop, dict) else None
        if isinstance(kind, str) and kind in _WRONG_TYPE_VALUES:
            return required, name, kind
    return required, None, None


def _check_bad_arguments(ctx: CheckContext, tool: mcp_types.Tool, halted: set[str]) -> None:
    """PC-21 (missing required argument) and PC-22 (wrong type), for a tool with required arguments."""
    required, typed, kind = _required_typed(tool)
    if not required:
        return  # nothing to leave out (docs/check.md says so)
    missing_verdict, wrong_verdict = _verdict(ctx, "PC-21", tool.name), _verdict(ctx, "PC-22", tool.name)
    allowed, why_not = ctx.may_call(tool)
    base = minimal_arguments(tool.input_schema)
    skip = ctx.server_lost
    if skip is None and not allowed:
        skip = f"not called: {why_not}"
    if skip is None and tool.name in halted:
        skip = "not probed: its call with valid arguments already halted the server (PC-10)"
    if skip is None and base is None:
        skip = "cannot generate arguments from its inputSchema"
    if skip is not None or base is None:
        missing_verdict("SKIP", skip or "")
        wrong_verdict("SKIP", skip or "")
        return
    left_out = required[0]
    without = {key: value for key, value in base.items() if key != left_out}
    _probe(
        ctx,
        "PC-21",
        tool.name,
        during=f"calling {tool.name} without {left_out}",
        call=lambda: ctx.server.call_tool(tool.name, without, timeout_s=ctx.call_timeout_s),
        on_success=("WARN", f"answered without the required {left_out!r} as if nothing were wrong"),
    )
    if _lost(ctx, wrong_verdict):
        return
    if typed is None or kind is None:
        wrong_verdict("SKIP", "no required argument declares a JSON type")
        return
    wrong = {**base, typed: _WRONG_TYPE_VALUES[kind]}
    _probe(
        ctx,
        "PC-22",
        tool.name,
        during=f"calling {tool.name} with a non-{kind} {typed}",
        call=lambda: ctx.server.call_tool(tool.name, wrong, timeout_s=ctx.call_timeout_s),
        on_success=("WARN", f"accepted {wrong[typed]!r} for {typed!r} ({kind}) without an error"),
    )


def _check_unknown_resource(ctx: CheckContext) -> None:
    """PC-23: reading a resource that does not exist gets an error (-32002), when resources are declared."""
    verdict = _verdict(ctx, "PC-23")
    if _lost(ctx, verdict):
        return
    if _capabilities(ctx).resources is None:
        verdict("SKIP", "the server does not declare resources")
        return
    uri = f"{UNKNOWN_RESOURCE}{uuid.uuid4().hex[:8]}"
    _probe(
        ctx,
        "PC-23",
        None,
        during=f"reading {uri}",
        call=lambda: _session_call(
            ctx, "during resources/read", lambda c: c.read_resource(uri, cache_mode="bypass")
        ),
        on_success=("WARN", f"returned contents for {uri}, which cannot exist"),
    )


def _check_still_answers(ctx: CheckContext) -> None:
    """PC-24: after every bad request the server still answers tools/list."""
    verdict = _verdict(ctx, "PC-24")
    if _lost(ctx, verdict):
        return
    ctx.step("PC-24 tools/list")
    page, error, ms = _attempt(
        ctx, lambda: _session_call(ctx, "during tools/list", lambda c: c.list_tools(cache_mode="refresh"))
    )
    if error is not None or page is None:
        _failed(ctx, verdict, error or RuntimeError("no answer"), "tools/list")
        return
    verdict("PASS", f"tools/list answered ({len(page.tools)} tool(s))", duration_ms=ms)
