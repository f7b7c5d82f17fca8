"""PC-30…PC-42: the protocol's lifecycle, its utilities and JSON-RPC itself, over a raw session.

Why a raw session (check/spec_raw.py): these checks send what the SDK client
never would (an unsupported version, a ping before `initialized`, a line that is
not JSON, a batch, ids of chosen types) and read the answers byte for byte.
The JSON-RPC checks (PC-38…PC-42) live in check/spec_jsonrpc.py and what a
session's answers say in check/raw_answers.py; this module opens the sessions
and runs them all.

Sessions, kept few because each stdio one is another process of the server:

- B (opened first) asks initialize for "1999-01-01" (PC-30), then gets a line
  that is not JSON (PC-42), which may end it: it is closed right after.
- A asks for the SDK's latest revision (PC-31), pings before the initialized
  notification (PC-33), then carries every other check; the batch (PC-41), which
  may end it, comes last.

For stdio both processes start at once, so the set costs about one server
start. For HTTP both are new sessions on the server already running.

Severity follows the text: FAIL where the specification (or JSON-RPC 2.0, which
it adopts) says MUST, WARN for SHOULD and for what it only implies. A feature
the server does not declare is a SKIP. No check calls a tool, except PC-36,
which calls at most a few tools `CheckContext.may_call` allows, with the
arguments PC-10 already got an answer with.

Limits: a server whose answer to a message that ends its session is silence
cannot be told from one that ignores it until a ping goes unanswered; what an
HTTP server sends on its own GET stream is not seen; a stdio server that closes
on a malformed line is not restarted to prove a fresh session works (the main
server's start already proved that).
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

import mcp_types
from mcp_types.version import KNOWN_PROTOCOL_VERSIONS, LATEST_HANDSHAKE_VERSION, LATEST_PROTOCOL_VERSION

from mcpipechekr.artifacts.check_report import CheckStatus
from mcpipechekr.check.context import CheckContext
from mcpipechekr.check.raw_answers import Record, _ended, _error, _result, _then_ping
from mcpipechekr.check.spec_jsonrpc import (
    _check_batch,
    _check_ids,
    _check_invalid_params,
    _check_malformed,
    _check_unknown_method,
)
from mcpipechekr.check.spec_raw import (
    RawSession,
    RawUnavailable,
    is_response,
    open_raw_session,
    same_id,
)

LIFECYCLE, UTILITIES, JSONRPC = "Lifecycle", "Utilities", "JSON-RPC"

LIFECYCLE_CHECKS: dict[str, tuple[str, str]] = {
    "PC-30": ("unsupported version negotiated", LIFECYCLE),
    "PC-31": ("latest version answered with a known revision", LIFECYCLE),
    "PC-32": ("declared capabilities answer", LIFECYCLE),
    "PC-33": ("before initialized", LIFECYCLE),
    "PC-34": ("ping", UTILITIES),
    "PC-35": ("logging/setLevel", UTILITIES),
    "PC-36": ("progress notifications", UTILITIES),
    "PC-37": ("cancellation", UTILITIES),
    "PC-38": ("unknown method", JSONRPC),
    "PC-39": ("invalid params", JSONRPC),
    "PC-40": ("request ids echoed", JSONRPC),
    "PC-41": ("JSON-RPC batch", JSONRPC),
    "PC-42": ("malformed JSON", JSONRPC),
}
"""id -> (name, group), in run order; check/protocol.py merges them into its CHECKS."""

UNSUPPORTED_VERSION = "1999-01-01"
PRE_INITIALIZED_S = 1.0
"""How long a ping before the initialized notification is given before that notification is sent."""
PROGRESS_TOOLS = 3
PROGRESS_SLOW_MS = 5000.0
"""PC-36 calls at most this many tools, each of which answered PC-10 faster than this."""
LOG_LEVELS = ("debug", "info", "notice", "warning", "error", "critical", "alert", "emergency")
SET_LEVEL = "error"
EMPTY_RESULT_KEYS = {"_meta", "resultType"}
__all__ = ["LIFECYCLE_CHECKS", "run_lifecycle_checks"]


def run_lifecycle_checks(ctx: CheckContext) -> None:
    """Record PC-30…PC-42 for the server under test (each one once: a verdict or a SKIP saying why)."""
    verdicts: dict[str, tuple[CheckStatus, str, dict[str, Any]]] = {}

    def record(check_id: str, status: CheckStatus, reason: str, **extra: Any) -> None:
        verdicts.setdefault(check_id, (status, reason, extra))

    try:
        if ctx.server_lost is None:
            _run(ctx, record)
    finally:
        # Recorded in id order (the sessions run them in another), each exactly once.
        why = ctx.server_lost or "not reached: the raw session ended before this check"
        for check_id, (name, group) in LIFECYCLE_CHECKS.items():
            status, reason, extra = verdicts.get(check_id, ("SKIP", why, {}))
            ctx.record(check_id, name, "protocol", group, status, reason, **extra)


def _log_path(ctx: CheckContext, label: str) -> Path:
    """Beside the main server's stderr log: `<log>.raw-<label>.log` (the same folder, the same privacy)."""
    base = Path(ctx.server.log_path or "server.stderr.log")
    return base.with_name(f"{base.stem}.raw-{label}.log")


def _open(ctx: CheckContext, label: str) -> RawSession:
    return open_raw_session(ctx.config.server, _log_path(ctx, label), ctx.config.redactor, ctx.call_timeout_s)


def _run(ctx: CheckContext, record: Record) -> None:
    ctx.step("PC-30 raw JSON-RPC sessions")
    try:
        second = _open(ctx, "b")
    except RawUnavailable as exc:
        record("PC-30", "SKIP", f"no raw session: {exc}")
        return
    try:
        main = _open(ctx, "a")  # for stdio, its process starts while the first one answers
    except RawUnavailable as exc:
        second.close()
        record("PC-30", "SKIP", f"no raw session: {exc}")
        return
    with main:
        with second:
            ctx.step("PC-30 initialize with an unsupported version")
            with ctx.timed() as took:
                refused = second.initialize(UNSUPPORTED_VERSION, ctx.call_timeout_s)
            ctx.step("PC-31 initialize with the latest version")
            asked, answer = _handshake(ctx, main)
            if refused is None and _result(answer) is None and (second.ended or main.ended):
                # Neither process answered and one exited: a server that allows one process at a
                # time (a lock, a port) cannot be checked this way, which is no finding of its own.
                why = f"no second process of the server answered initialize: {_ended(main)}"
                for check_id in LIFECYCLE_CHECKS:
                    record(check_id, "SKIP", why)
                return
            _judge_unsupported_version(ctx, second, refused, took["ms"], record)
            opened = _judge_latest_version(main, asked, answer, record)
            _check_malformed(ctx, second, main, record)
        if not opened:
            return
        _check_before_initialized(ctx, main, record)
        _check_ping(ctx, main, record)
        _check_ids(ctx, main, record)
        _check_unknown_method(ctx, main, record)
        _check_invalid_params(ctx, main, record)
        capabilities = main.capabilities
        _check_capabilities(ctx, main, capabilities, record)
        level_set = _set_level(ctx, main, capabilities, record)
        _check_cancellation(ctx, main, record)
        _check_progress(ctx, main, record)
        _judge_logging(main, capabilities, level_set, record)
        _check_batch(ctx, main, record)


# --- Lifecycle ------------------------------------------------------------------------------------


def _judge_unsupported_version(
    ctx: CheckContext, session: RawSession, response: dict[str, Any] | None, ms: float, record: Record
) -> None:
    """PC-30: initialize asking for a version nobody supports gets one the server supports, not the echo."""
    if response is None:
        record(
            "PC-30",
            "FAIL",
            f"no answer to initialize within {ctx.call_timeout_s:g}s; " + _ended(session)
            if session.ended
            else f"no answer to initialize within {ctx.call_timeout_s:g}s",
            duration_ms=ms,
        )
        return
    error = _error(response)
    if error is not None:
        record(
            "PC-30",
            "PASS",
            f"refused {UNSUPPORTED_VERSION!r} with JSON-RPC error {error[0]} ({error[1]}), the "
            "specification's own example of a version mismatch",
            duration_ms=ms,
        )
        return
    answered = (
        (_result(response) or {}).get("protocolVersion") if isinstance(_result(response), dict) else None
    )
    details = {"requested": UNSUPPORTED_VERSION, "answered": answered}
    if answered == UNSUPPORTED_VERSION:
        record(
            "PC-30",
            "FAIL",
            f"echoed {UNSUPPORTED_VERSION!r} back: it must answer a version it supports (it answers "
            "whatever it is asked)",
            duration_ms=ms,
            details=details,
        )
    elif answered in KNOWN_PROTOCOL_VERSIONS:
        record("PC-30", "PASS", f"answered {answered}", duration_ms=ms, details=details)
    else:
        record(
            "PC-30",
            "FAIL",
            f"answered {answered!r}, not a released protocol revision",
            duration_ms=ms,
            details=details,
        )


def _handshake(ctx: CheckContext, session: RawSession) -> tuple[str, dict[str, Any] | None]:
    """initialize asking for the SDK's latest revision, then the latest handshake one after an error."""
    response = session.initialize(LATEST_PROTOCOL_VERSION, ctx.call_timeout_s)
    if _error(response) is None:
        return LATEST_PROTOCOL_VERSION, response
    # A server that refuses a revision it does not know may still speak the latest handshake one.
    return LATEST_HANDSHAKE_VERSION, session.initialize(LATEST_HANDSHAKE_VERSION, ctx.call_timeout_s)


def _judge_latest_version(
    session: RawSession, asked: str, response: dict[str, Any] | None, record: Record
) -> bool:
    """PC-31: the main raw session's handshake. False when it could not be opened."""
    result = _result(response)
    if not isinstance(result, dict):
        error = _error(response)
        why = f"JSON-RPC error {error[0]} ({error[1]})" if error else "no answer"
        record(
            "PC-31",
            "FAIL",
            f"initialize asking for {asked}: {why}" + (f"; {_ended(session)}" if session.ended else ""),
        )
        return False
    answered = result.get("protocolVersion")
    details = {"requested": asked, "answered": answered}
    if answered in KNOWN_PROTOCOL_VERSIONS:
        record("PC-31", "PASS", f"asked for {asked}, answered {answered}", details=details)
    else:
        record(
            "PC-31",
            "FAIL",
            f"asked for {asked}, answered {answered!r}: not a released protocol revision",
            details=details,
        )
    return True


def _check_before_initialized(ctx: CheckContext, session: RawSession, record: Record) -> None:
    """PC-33: a ping before the initialized notification is answered; the server asks nothing then."""
    ctx.step("PC-33 ping before initialized")
    ping_id = "mcpipechekr-before-initialized"
    session.send({"jsonrpc": "2.0", "id": ping_id, "method": "ping"})
    early = session.response_to(ping_id, PRE_INITIALIZED_S)
    asked = [request["method"] for request in session.server_requests if request["method"] != "ping"]
    session.notify("notifications/initialized")
    late = None if early is not None else session.response_to(ping_id, ctx.call_timeout_s)
    problems = []
    if asked:
        problems.append("sent request(s) before the initialized notification: " + ", ".join(asked))
    if early is None and late is not None:
        problems.append("held a ping sent before the initialized notification until it came")
    elif early is None:
        problems.append("never answered a ping sent before the initialized notification")
    elif _error(early) is not None:
        code, message = _error(early) or (None, "")
        problems.append(
            f"refused a ping before the initialized notification: JSON-RPC error {code} ({message})"
        )
    if problems:
        record("PC-33", "WARN", "; ".join(problems))
    else:
        record("PC-33", "PASS", "answered a ping before the initialized notification and asked nothing")


def _check_capabilities(
    ctx: CheckContext, session: RawSession, capabilities: dict[str, Any], record: Record
) -> None:
    """PC-32: each declared capability's basic method exists (logging's is PC-35)."""
    ctx.step("PC-32 declared capabilities")
    methods = {"tools": "tools/list", "resources": "resources/list", "prompts": "prompts/list"}
    declared = [kind for kind in (*methods, "completions") if kind in capabilities]
    if not declared:
        record("PC-32", "SKIP", "the server declares none of tools, resources, prompts, completions")
        return
    failures, warnings, answered = [], [], []
    for kind in declared:
        if kind == "completions":
            method, params = "completion/complete", _completion_params(ctx)
        else:
            method, params = methods[kind], {}
        response = session.request(method, params, timeout_s=ctx.call_timeout_s)
        error = _error(response)
        if response is None:
            failures.append(f"{kind}: no answer to {method}")
        elif error is not None and (error[0] == mcp_types.METHOD_NOT_FOUND or kind != "completions"):
            (warnings if kind == "completions" else failures).append(
                f"{kind} declared, but {method}: JSON-RPC error {error[0]} ({error[1]})"
            )
        else:
            answered.append(method)
    details = {"declared": declared}
    if failures or warnings:
        record("PC-32", "FAIL" if failures else "WARN", "; ".join(failures + warnings), details=details)
    else:
        record("PC-32", "PASS", "answered " + ", ".join(answered), details=details)


def _completion_params(ctx: CheckContext) -> dict[str, Any]:
    """completion/complete for a made-up argument of a made-up prompt: only whether the method exists."""
    return {
        "ref": {"type": "ref/prompt", "name": "mcpipechekr_no_such_prompt"},
        "argument": {"name": "x", "value": ""},
    }


# --- Utilities ------------------------------------------------------------------------------------


def _check_ping(ctx: CheckContext, session: RawSession, record: Record) -> None:
    """PC-34: ping gets an empty result, promptly."""
    ctx.step("PC-34 ping")
    with ctx.timed() as took:
        response = session.request("ping", timeout_s=ctx.call_timeout_s)
    ms = took["ms"]
    error, result = _error(response), _result(response)
    if response is None:
        record("PC-34", "FAIL", f"no answer to ping within {ctx.call_timeout_s:g}s", duration_ms=ms)
    elif error is not None:
        record("PC-34", "FAIL", f"refused ping: JSON-RPC error {error[0]} ({error[1]})", duration_ms=ms)
    elif not isinstance(result, dict):
        record("PC-34", "FAIL", f"answered ping with {result!r}, not an object", duration_ms=ms)
    elif set(result) - EMPTY_RESULT_KEYS:
        extra = ", ".join(sorted(set(result) - EMPTY_RESULT_KEYS))
        record(
            "PC-34",
            "WARN",
            f"answered ping with fields ({extra}) in what must be an empty result",
            duration_ms=ms,
        )
    else:
        record("PC-34", "PASS", f"empty result in {ms:.0f} ms", duration_ms=ms)


def _set_level(
    ctx: CheckContext, session: RawSession, capabilities: dict[str, Any], record: Record
) -> float | None:
    """PC-35's request: logging/setLevel to `SET_LEVEL` when logging is declared; when accepted, or None.

    A refusal is recorded here; an acceptance is judged at the end of the session
    (`_judge_logging`), once the log notifications sent meanwhile are in.
    """
    if "logging" not in capabilities:
        return None
    ctx.step("PC-35 logging/setLevel")
    response = session.request("logging/setLevel", {"level": SET_LEVEL}, timeout_s=ctx.call_timeout_s)
    error = _error(response)
    if response is None:
        record(
            "PC-35",
            "WARN",
            f"declares logging, but logging/setLevel got no answer within {ctx.call_timeout_s:g}s",
        )
    elif error is not None:
        record(
            "PC-35", "WARN", f"declares logging, but logging/setLevel: JSON-RPC error {error[0]} ({error[1]})"
        )
    else:
        return time.monotonic()
    return None


def _judge_logging(
    session: RawSession, capabilities: dict[str, Any], level_set: float | None, record: Record
) -> None:
    """PC-35: log notifications only with logging declared, and none below the level set."""
    messages = [n for n in session.notifications if n.get("method") == "notifications/message"]
    if "logging" not in capabilities:
        if messages:
            record("PC-35", "FAIL", f"sent {len(messages)} log notification(s) without declaring logging")
        else:
            record("PC-35", "SKIP", "the server does not declare logging")
        return
    if level_set is None:
        return  # the refusal is recorded
    floor = LOG_LEVELS.index(SET_LEVEL)
    after = [n for n in messages if n["_received"] >= level_set]
    below = [
        str((n.get("params") or {}).get("level"))
        for n in after
        if (n.get("params") or {}).get("level") not in LOG_LEVELS[floor:]
    ]
    if below:
        record(
            "PC-35",
            "WARN",
            f"after logging/setLevel {SET_LEVEL!r}, sent log notification(s) at "
            + ", ".join(sorted(set(below))),
        )
    else:
        seen = f"; {len(after)} log notification(s) since, all at or above it" if after else ""
        record("PC-35", "PASS", f"accepted level {SET_LEVEL!r}{seen}")


def _check_cancellation(ctx: CheckContext, session: RawSession, record: Record) -> None:
    """PC-37: a cancelled request and a cancellation of an unknown request leave the server answering."""
    ctx.step("PC-37 cancellation")
    request_id = session.new_id()
    session.send({"jsonrpc": "2.0", "id": request_id, "method": "ping"})
    session.notify("notifications/cancelled", {"requestId": request_id, "reason": "mcpipechekr PC-37"})
    session.notify(
        "notifications/cancelled", {"requestId": "mcpipechekr-never-sent", "reason": "mcpipechekr PC-37"}
    )
    late, alive = _then_ping(ctx, session, lambda v: is_response(v) and same_id(request_id, v.get("id")))
    if not alive:
        why = _ended(session) if session.ended else f"no answer to ping within {ctx.call_timeout_s:g}s"
        record("PC-37", "FAIL", f"stopped answering after notifications/cancelled: {why}")
        return
    answered = (
        "answered the cancelled request anyway (a client ignores it)"
        if late
        else "did not answer the cancelled request"
    )
    record("PC-37", "PASS", f"{answered}; ignored the cancellation of an unknown request; still answers")


def _check_progress(ctx: CheckContext, session: RawSession, record: Record) -> None:
    """PC-36: progress for a progressToken only while the request runs, each value greater than the last."""
    candidates = []
    for tool in ctx.tools:
        reach = ctx.coverage.get(tool.name)
        decisive = reach.decisive if reach is not None else None
        if reach is None or reach.status != "reached" or decisive is None or not ctx.may_call(tool)[0]:
            continue
        if decisive.ms <= PROGRESS_SLOW_MS:
            candidates.append((decisive.ms, tool.name, decisive.candidate.arguments))
    if not candidates:
        record("PC-36", "SKIP", "no tool check may call answered PC-10 (progress needs a tool call)")
        return
    tried: dict[str, str] = {}
    answered_at: dict[str, float] = {}
    for _, name, arguments in sorted(candidates, key=lambda item: item[0])[:PROGRESS_TOOLS]:
        ctx.step(f"PC-36 calling {name} with a progressToken")
        token = f"mcpipechekr-progress-{len(tried) + 1}"
        tried[token] = name
        params = {"name": name, "arguments": arguments, "_meta": {"progressToken": token}}
        response = session.request("tools/call", params, timeout_s=ctx.call_timeout_s)
        if response is not None:
            answered_at[token] = time.monotonic()
        if session.ended:
            break
    session.settle(0.2)
    progress = [n for n in session.notifications if n.get("method") == "notifications/progress"]
    by_token: dict[str, list[dict[str, Any]]] = {}
    for note in progress:
        token = (note.get("params") or {}).get("progressToken")
        if token in tried:
            by_token.setdefault(token, []).append(note)
    if not by_token:
        record(
            "PC-36", "SKIP", "no callable tool reported progress (called " + ", ".join(tried.values()) + ")"
        )
        return
    problems = []
    for token, notes in by_token.items():
        values = [(n.get("params") or {}).get("progress") for n in notes]
        if any(not isinstance(v, int | float) for v in values) or any(
            b <= a for a, b in zip(values, values[1:], strict=False)
        ):
            problems.append(f"{tried[token]}: progress values {values} do not increase")
        late = [n for n in notes if token in answered_at and n["_received"] > answered_at[token]]
        if late:
            problems.append(f"{tried[token]}: {len(late)} progress notification(s) after its response")
    unknown = [n for n in progress if (n.get("params") or {}).get("progressToken") not in tried]
    if unknown:
        problems.append(f"{len(unknown)} progress notification(s) for a token never sent")
    reporters = ", ".join(tried[token] for token in by_token)
    if problems:
        record("PC-36", "FAIL", "; ".join(problems))
    else:
        record("PC-36", "PASS", f"{reporters}: increasing progress, all before the response")
