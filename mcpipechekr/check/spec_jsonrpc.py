"""PC-38…PC-42: JSON-RPC itself over a raw session: unknown methods, invalid params, ids, batches, bad JSON.

Part of the checks check/spec_lifecycle.py runs on its raw sessions (it says
which session carries which check, and why); apart from it because these judge
JSON-RPC 2.0, which MCP adopts, rather than MCP's own lifecycle and utilities.
"""

from __future__ import annotations

import re
from typing import Any

import mcp_types
from mcp_types.version import KNOWN_PROTOCOL_VERSIONS, LATEST_HANDSHAKE_VERSION

from mcpipechekr.check.answers import one_line
from mcpipechekr.check.context import CheckContext
from mcpipechekr.check.raw_answers import Record, _ended, _error, _result, _then_ping
from mcpipechekr.check.spec_raw import RawSession, StdioRawSession, is_response, same_id

UNKNOWN_METHOD = "mcpipechekr/no_such_method"
IDS: tuple[Any, ...] = ("abc-1", 7, 2**53 - 1)
"""A string, a small integer and the largest integer every JSON parser keeps exact."""
QUIET_S = 1.0
"""How long a process that stopped answering is given to exit, for its exit status."""
TRACEBACK = re.compile(r"Traceback \(most recent call last\)|^\s*at .+\(.+:\d+:\d+\)$|panic:", re.MULTILINE)


def _check_unknown_method(ctx: CheckContext, session: RawSession, record: Record) -> None:
    """PC-38: a method nobody defines gets an error, -32601 by JSON-RPC's table."""
    ctx.step("PC-38 unknown method")
    response = session.request(UNKNOWN_METHOD, {}, timeout_s=ctx.call_timeout_s)
    error = _error(response)
    if response is None:
        record("PC-38", "FAIL", f"no answer to {UNKNOWN_METHOD} within {ctx.call_timeout_s:g}s")
    elif error is None:
        record(
            "PC-38", "FAIL", f"answered {UNKNOWN_METHOD} with a result: {one_line(str(_result(response)))}"
        )
    elif error[0] != mcp_types.METHOD_NOT_FOUND:
        record("PC-38", "WARN", f"JSON-RPC error {error[0]} ({error[1]}), not -32601 (method not found)")
    else:
        record("PC-38", "PASS", f"JSON-RPC error -32601 ({error[1]})")


def _check_invalid_params(ctx: CheckContext, session: RawSession, record: Record) -> None:
    """PC-39: a known method with params of the wrong JSON type gets an error, -32602 by JSON-RPC's table."""
    capabilities = session.capabilities
    if "tools" in capabilities and "42" not in ctx.listed_names:
        method, params = "tools/call", {"name": 42, "arguments": {}}
    elif "resources" in capabilities:
        method, params = "resources/read", {"uri": 42}
    elif "prompts" in capabilities:
        method, params = "prompts/get", {"name": 42}
    else:
        record("PC-39", "SKIP", "the server declares none of tools, resources, prompts")
        return
    ctx.step(f"PC-39 {method} with params of the wrong type")
    response = session.request(method, params, timeout_s=ctx.call_timeout_s)
    error, result = _error(response), _result(response)
    shown = f"{method} {params}"
    if response is None:
        record("PC-39", "FAIL", f"no answer to {shown} within {ctx.call_timeout_s:g}s")
    elif error is not None:
        code, message = error
        if code == mcp_types.INVALID_PARAMS:
            record("PC-39", "PASS", f"{shown}: JSON-RPC error -32602 ({message})")
        else:
            record(
                "PC-39", "WARN", f"{shown}: JSON-RPC error {code} ({message}), not -32602 (invalid params)"
            )
    elif isinstance(result, dict) and result.get("isError") is True:
        record("PC-39", "WARN", f"{shown}: a tool error, not a JSON-RPC error -32602 (invalid params)")
    else:
        record("PC-39", "FAIL", f"answered {shown} as a success")


def _check_ids(ctx: CheckContext, session: RawSession, record: Record) -> None:
    """PC-40: each response carries its request's id exactly: a string, a small and a large integer."""
    ctx.step("PC-40 request ids")
    wrong, silent = [], []
    for msg_id in IDS:
        session.send({"jsonrpc": "2.0", "id": msg_id, "method": "ping"})
        answer = session.wait_for(is_response, ctx.call_timeout_s)
        if answer is None:
            silent.append(repr(msg_id))
        elif not same_id(msg_id, answer.get("id")):
            wrong.append(f"{msg_id!r} answered with id {answer.get('id')!r}")
    if wrong:
        record("PC-40", "FAIL", "; ".join(wrong))
    elif silent:
        record("PC-40", "SKIP", "no answer to ping to judge ids by (see PC-34): " + ", ".join(silent))
    else:
        record("PC-40", "PASS", "echoed " + ", ".join(repr(i) for i in IDS) + " exactly")


def _check_batch(ctx: CheckContext, session: RawSession, record: Record) -> None:
    """PC-41: a batch is answered under 2025-03-26 and rejected (or ignored) since 2025-06-18."""
    version = session.protocol_version
    if version not in KNOWN_PROTOCOL_VERSIONS or version == "2024-11-05":
        record("PC-41", "SKIP", f"negotiated {version!r}, which says nothing of batches")
        return
    ctx.step("PC-41 JSON-RPC batch")
    must_answer = version == "2025-03-26"
    ids = ("mcpipechekr-batch-1", "mcpipechekr-batch-2")
    second = "tools/list" if "tools" in session.capabilities else "ping"
    session.send(
        [
            {"jsonrpc": "2.0", "id": msg_id, "method": method}
            for msg_id, method in zip(ids, ("ping", second), strict=True)
        ]
    )

    def about_batch(value: Any) -> bool:
        return isinstance(value, list) or (is_response(value) and value.get("id") in (*ids, None))

    answers, alive = _then_ping(ctx, session, about_batch)
    items = [item for answer in answers for item in (answer if isinstance(answer, list) else [answer])]
    results = [item for item in items if isinstance(item, dict) and "result" in item]
    if must_answer:
        if len(results) == len(ids):
            record("PC-41", "PASS", f"negotiated 2025-03-26 and answered a batch (ping, {second})")
        else:
            record(
                "PC-41",
                "FAIL",
                f"negotiated 2025-03-26, which requires receiving batches, but answered "
                f"{len(results)} of the batch's {len(ids)} requests (ping, {second})"
                + ("" if alive else "; " + _ended(session)),
            )
        return
    if results:
        record(
            "PC-41",
            "WARN",
            f"negotiated {version}, which removed batches, yet answered a batch with "
            f"{len(results)} result(s)",
        )
    elif not alive:
        record(
            "PC-41",
            "FAIL",
            "a batch stopped the server: "
            + (_ended(session) if session.ended else "no answer to ping afterwards"),
        )
    elif items:
        error = _error(items[0]) or (None, "")
        record("PC-41", "PASS", f"rejected the batch: JSON-RPC error {error[0]} ({error[1]})")
    else:
        record("PC-41", "PASS", "ignored the batch and still answers")


def _check_malformed(ctx: CheckContext, session: RawSession, other: RawSession, record: Record) -> None:
    """PC-42: a line that is not JSON gets -32700, is ignored, or closes the session cleanly; no crash."""
    ctx.step("PC-42 malformed JSON")
    if session.protocol_version is None:
        session.initialize(LATEST_HANDSHAKE_VERSION, ctx.call_timeout_s)  # PC-30's answer was a refusal
    session.notify("notifications/initialized")
    if not session.send('{"jsonrpc": "2.0", "id": "mcpipechekr-malformed", "method": "ping"'):
        record("PC-42", "SKIP", f"could not send: {session.lost}")
        return
    answers, alive = _then_ping(ctx, session, is_response)
    answer = answers[0] if answers else None
    statuses = getattr(session, "statuses", [])
    error = _error(answer)
    if statuses and statuses[-1] >= 500:
        record("PC-42", "FAIL", f"HTTP {statuses[-1]} for a body that is not JSON")
    elif error is not None and error[0] == mcp_types.PARSE_ERROR:
        record("PC-42", "PASS", f"JSON-RPC error -32700 ({error[1]})")
    elif error is not None:
        record("PC-42", "WARN", f"JSON-RPC error {error[0]} ({error[1]}), not -32700 (parse error)")
    elif answer is not None:
        record("PC-42", "FAIL", f"answered a line that is not JSON with a result: {one_line(str(answer))}")
    elif alive:
        record("PC-42", "PASS", "ignored the line and still answers")
    elif isinstance(session, StdioRawSession):
        code = session.wait_exit(QUIET_S)
        tail = session.stderr_tail()
        if code == 0 and not TRACEBACK.search(tail):
            record("PC-42", "PASS", "closed the session cleanly (exit code 0)")
        elif code is None:
            record(
                "PC-42", "FAIL", "stopped answering after a line that is not JSON (the process still runs)"
            )
        else:
            record("PC-42", "FAIL", "crashed on a line that is not JSON: " + _ended(session))
    elif other.request("ping", timeout_s=ctx.call_timeout_s) is None:
        record("PC-42", "FAIL", "the server stopped answering after a body that is not JSON")
    else:
        record("PC-42", "PASS", "dropped the session and still answers on another")
