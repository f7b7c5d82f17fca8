"""Layer 1, streamable HTTP (PC-70…PC-79): what the specification asks of a server's side of the wire.

The main check session goes through the MCP SDK's client, which hides the
transport: it adds the session id and the protocol version header to every
request, reads SSE and JSON answers alike and never sends a wrong header. These
checks talk to the server with a raw HTTP client (httpx2) instead, in a session
of their own (initialize, then notifications/initialized), so that the main
session is never disturbed, and send the requests a careless or hostile client
would: no session id, an id the server never issued, a foreign `Origin`, an
`Accept` that lists neither content type, an unsupported `MCP-Protocol-Version`,
a GET for the server's stream, a DELETE that ends the session. Only
initialize, ping and the transport's own requests are sent: no tool is called.

Each check judges one sentence of the specification (2025-11-25,
basic/transports; docs/check.md quotes them): FAIL for a MUST, WARN for a
SHOULD. A request the server refuses with another 4xx code than the one the
specification names is a WARN: the protection is there, the code a client keys
on is not. A stdio server has no HTTP transport, so every check is a SKIP;
so are the session checks for a server that issues no `Mcp-Session-Id`.

Every request has a bounded timeout, and SSE answers are read only until the
JSON-RPC response arrives, within that time and at most `MAX_BODY` bytes (the
raw HTTP client, check/raw_http.py, which the lifecycle checks' raw session
shares); the GET stream is closed as soon as its status and content type are
known.

Secrets: the configured headers are sent with every request (a server behind
authentication refuses requests without them) but no reason or detail names a
header value, and the session id the server issues is never quoted either,
only its length and the positions of characters that break the rule.
"""

from __future__ import annotations

import re
import uuid
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

import httpx2

from mcpipechekr.artifacts.check_report import CheckStatus
from mcpipechekr.check.context import CheckContext
from mcpipechekr.check.raw_http import MAX_REQUEST_S, Answer, Wire, own_origin

HTTP_GROUP = "Streamable HTTP"

HTTP_CHECK_NAMES: dict[str, str] = {
    "PC-70": "session id",
    "PC-71": "request without the session id",
    "PC-72": "unknown session id",
    "PC-73": "unsupported MCP-Protocol-Version",
    "PC-74": "foreign Origin refused",
    "PC-75": "own Origin accepted",
    "PC-76": "Accept header",
    "PC-77": "GET stream",
    "PC-78": "notification gets 202",
    "PC-79": "DELETE ends the session",
}
"""The streamable HTTP checks, in run order; check/protocol.py merges them into CHECKS."""

SESSION_ID = re.compile(r"^[\x21-\x7E]+$")
"""The specification's rule for a session id: visible ASCII only (0x21 to 0x7E)."""

FOREIGN_ORIGIN = "http://dns-rebinding.example"
"""An origin no server of ours can be: a web page elsewhere (`.example` is reserved, RFC 2606)."""

UNSUPPORTED_VERSION = "1999-01-01"
"""A protocol version no server supports: MCP's first revision is 2024-11-05."""

PROTOCOL_VERSION_HEADER_SINCE = "2025-06-18"
"""The revision that introduced the MCP-Protocol-Version header; before it no server had to read it."""

__all__ = ["HTTP_CHECK_NAMES", "HTTP_GROUP", "check_streamable_http"]


# --- the checks -----------------------------------------------------------------------------------

Verdict = Callable[..., None]


def _verdicts(ctx: CheckContext) -> dict[str, Verdict]:
    def recorder(check_id: str) -> Verdict:
        def record(status: CheckStatus, reason: str, answer: Answer | None = None, **details: Any) -> None:
            if answer is not None and answer.status is not None:
                details.setdefault("status", answer.status)
            ctx.record(
                check_id,
                HTTP_CHECK_NAMES[check_id],
                "protocol",
                HTTP_GROUP,
                status,
                reason,
                duration_ms=answer.ms if answer is not None else 0.0,
                details=details or None,
            )

        return record

    return {check_id: recorder(check_id) for check_id in HTTP_CHECK_NAMES}


def _skip_all(verdicts: dict[str, Verdict], reason: str) -> None:
    for verdict in verdicts.values():
        verdict("SKIP", reason)


def check_streamable_http(ctx: CheckContext) -> None:
    """PC-70…PC-79 against `ctx.server` over streamable HTTP; SKIPs, with the reason, otherwise."""
    verdicts = _verdicts(ctx)
    server = ctx.server.server
    if server.url is None:
        _skip_all(verdicts, "a stdio server: these check the streamable HTTP transport (a `url` server)")
        return
    if ctx.server_lost is not None:
        _skip_all(verdicts, ctx.server_lost)
        return
    ctx.step("PC-70 a session of its own over raw HTTP")
    timeout = httpx2.Timeout(min(ctx.call_timeout_s, MAX_REQUEST_S))
    with _client(timeout) as client:
        wire = Wire(client, server.url, dict(server.headers))
        health = ctx.server.health
        offered = (
            health.protocol_version
            if health is not None and health.protocol_version
            else wire.protocol_version
        )
        opened, initialized = wire.open(offered)
        if not opened.answered or "result" not in (opened.message or {}):
            why = "; ".join(part for part in (opened.describe(), opened.problem) if part)
            _skip_all(
                verdicts,
                f"an initialize over raw HTTP got no InitializeResult ({why}), so these checks could not "
                "open a session of their own",
            )
            return
        baseline = wire.ping()
        _run_checks(ctx, wire, verdicts, opened, initialized, baseline)


@contextmanager
def _client(timeout: httpx2.Timeout) -> Iterator[httpx2.Client]:
    with httpx2.Client(timeout=timeout, follow_redirects=False) as client:
        yield client


def _run_checks(
    ctx: CheckContext,
    wire: Wire,
    verdicts: dict[str, Verdict],
    opened: Answer,
    initialized: Answer,
    baseline: Answer,
) -> None:
    _check_session_id(wire, verdicts["PC-70"], baseline)
    if not baseline.answered:
        # Nothing to compare refusals with: a ping carrying every header a client sends was not answered.
        why = f"a ping with the headers a client sends was not answered: {baseline.describe()}"
        for check_id in ("PC-71", "PC-72", "PC-73", "PC-74", "PC-75", "PC-76", "PC-77"):
            verdicts[check_id]("SKIP", why, baseline)
        _check_notification(ctx, wire, verdicts["PC-78"], initialized)
        _check_delete(ctx, wire, verdicts["PC-79"])
        return
    no_session = "the server issued no Mcp-Session-Id at initialize: it keeps no session to check"
    if wire.session_id is None:
        verdicts["PC-71"]("SKIP", no_session)
        verdicts["PC-72"]("SKIP", no_session)
    else:
        ctx.step("PC-71 a request without the session id")
        _check_without_session(wire, verdicts["PC-71"])
        ctx.step("PC-72 a request with an unknown session id")
        _check_unknown_session(wire, verdicts["PC-72"])
    ctx.step("PC-73 an unsupported MCP-Protocol-Version")
    _check_protocol_version(wire, verdicts["PC-73"])
    ctx.step("PC-74 a foreign Origin")
    _check_foreign_origin(wire, verdicts["PC-74"])
    ctx.step("PC-75 its own Origin")
    _check_own_origin(wire, verdicts["PC-75"])
    ctx.step("PC-76 an Accept without JSON or SSE")
    _check_accept(wire, verdicts["PC-76"])
    ctx.step("PC-77 GET the server's stream")
    _check_get_stream(wire, verdicts["PC-77"])
    _check_notification(ctx, wire, verdicts["PC-78"], initialized)
    _check_delete(ctx, wire, verdicts["PC-79"])


def _refusal(
    verdict: Verdict,
    answer: Answer,
    *,
    expected: int,
    what: str,
    accepted: tuple[CheckStatus, str],
) -> None:
    """Judge a request the server should refuse with `expected`: another 4xx is a WARN, else `accepted`."""
    if answer.status == expected:
        verdict("PASS", f"{what}: refused with {expected}", answer)
    elif answer.refused:
        verdict(
            "WARN",
            f"{what}: refused, but with {answer.describe()}; the specification names {expected}",
            answer,
        )
    else:
        status, why = accepted
        verdict(status, f"{what}: {answer.describe()}; {why}", answer)


def _check_session_id(wire: Wire, verdict: Verdict, baseline: Answer) -> None:
    """PC-70: an issued Mcp-Session-Id is visible ASCII, and a request carrying it is answered."""
    session_id = wire.session_id
    if session_id is None:
        verdict("SKIP", "the server issued no Mcp-Session-Id at initialize (it keeps no sessions)")
        return
    bad = [index for index, char in enumerate(session_id) if not SESSION_ID.match(char)]
    if bad:
        shown = ", ".join(f"{index} (0x{ord(session_id[index]):02X})" for index in bad[:5])
        verdict(
            "FAIL",
            f"the Mcp-Session-Id it issued ({len(session_id)} characters) has characters outside visible "
            f"ASCII (0x21-0x7E) at {shown}",
            baseline,
            length=len(session_id),
        )
    elif not baseline.answered:
        verdict(
            "FAIL",
            f"issued a session id, but a ping carrying it was not answered: {baseline.describe()}",
            baseline,
        )
    else:
        verdict(
            "PASS",
            f"issued at initialize: {len(session_id)} visible ASCII characters; a ping carrying it "
            "was answered",
            baseline,
            length=len(session_id),
        )


def _check_without_session(wire: Wire, verdict: Verdict) -> None:
    """PC-71: a request without the session id the server issued gets 400 (SHOULD)."""
    _refusal(
        verdict,
        wire.ping(session=False),
        expected=400,
        what="a ping without the Mcp-Session-Id it issued",
        accepted=("WARN", "a server that requires a session id should answer such a request with 400"),
    )


def _check_unknown_session(wire: Wire, verdict: Verdict) -> None:
    """PC-72: a request with a session id the server never issued (or has ended) gets 404 (MUST)."""
    answer = wire.ping(mcp_session_id=f"mcpipechekr-unknown-{uuid.uuid4().hex}")
    if answer.status == 404:
        verdict("PASS", "a ping with a session id it never issued: refused with 404", answer)
    else:
        verdict(
            "FAIL",
            f"a ping with a session id it never issued: {answer.describe()}; the answer must be 404, which "
            "tells a client its session is gone and it must initialize again",
            answer,
        )


def _check_protocol_version(wire: Wire, verdict: Verdict) -> None:
    """PC-73: a request with an unsupported MCP-Protocol-Version gets 400 (MUST)."""
    if wire.protocol_version < PROTOCOL_VERSION_HEADER_SINCE:
        verdict(
            "SKIP",
            f"negotiated protocol {wire.protocol_version}: the MCP-Protocol-Version header came with "
            f"{PROTOCOL_VERSION_HEADER_SINCE}",
        )
        return
    _refusal(
        verdict,
        wire.ping(mcp_protocol_version=UNSUPPORTED_VERSION),
        expected=400,
        what=f"a ping with MCP-Protocol-Version: {UNSUPPORTED_VERSION}",
        accepted=("FAIL", "a request with an unsupported protocol version must be answered 400"),
    )


def _check_foreign_origin(wire: Wire, verdict: Verdict) -> None:
    """PC-74: a request from a foreign Origin is refused with 403 (MUST): DNS-rebinding protection."""
    _refusal(
        verdict,
        wire.ping(origin=FOREIGN_ORIGIN),
        expected=403,
        what=f"a ping with Origin: {FOREIGN_ORIGIN}",
        accepted=(
            "FAIL",
            "a web page the user opens could drive this server through DNS rebinding; the server must "
            "validate Origin and answer 403",
        ),
    )


def _check_own_origin(wire: Wire, verdict: Verdict) -> None:
    """PC-75: a request with the server's own origin works (one with none did: the baseline ping)."""
    origin = own_origin(wire.url)
    answer = wire.ping(origin=origin)
    if answer.answered:
        verdict("PASS", f"answered with Origin: {origin}, and without an Origin", answer)
    else:
        verdict(
            "WARN",
            f"a ping with its own Origin ({origin}) was not answered: {answer.describe()}; an Origin check "
            "that refuses the server's own origin locks out browser clients served from it",
            answer,
        )


def _check_accept(wire: Wire, verdict: Verdict) -> None:
    """PC-76: a POST whose Accept lists neither application/json nor text/event-stream is refused (406)."""
    answer = wire.ping(accept="text/plain")
    what = "a ping with Accept: text/plain"
    if answer.status == 406:
        verdict("PASS", f"{what}: refused with 406", answer)
    elif answer.refused:
        verdict(
            "PASS", f"{what}: refused with {answer.status} (406 Not Acceptable is HTTP's code for it)", answer
        )
    else:
        verdict(
            "WARN",
            f"{what}: {answer.describe()}; clients must list application/json and text/event-stream, and a "
            "server that ignores Accept may answer in a type the client cannot read",
            answer,
        )


def _check_get_stream(wire: Wire, verdict: Verdict) -> None:
    """PC-77: GET with Accept: text/event-stream opens an SSE stream or is answered 405 (MUST)."""
    answer = wire.send("GET", {}, wire.headers(accept="text/event-stream", content_type=None))
    if answer.status == 405:
        verdict("PASS", "405: it offers no SSE stream at this endpoint", answer)
    elif answer.status == 200 and answer.content_type == "text/event-stream":
        verdict("PASS", "opened an SSE stream (text/event-stream), closed again at once", answer)
    else:
        verdict(
            "FAIL",
            f"GET with Accept: text/event-stream: {answer.describe()}; the server must open an SSE stream "
            "(text/event-stream) or answer 405",
            answer,
        )


def _check_notification(ctx: CheckContext, wire: Wire, verdict: Verdict, initialized: Answer) -> None:
    """PC-78: a notification POSTed gets 202 with no body (MUST); so does a response, unless refused (4xx)."""
    problems = []
    if initialized.status != 202 or initialized.body.strip():
        problems.append(f"notifications/initialized: {initialized.describe()}")
    ctx.step("PC-78 POST a response to a request it never sent")
    stray = wire.post({"jsonrpc": "2.0", "id": f"mcpipechekr-{uuid.uuid4().hex[:8]}", "result": {}})
    if not stray.refused and (stray.status != 202 or stray.body.strip()):
        problems.append(f"a JSON-RPC response: {stray.describe()}")
    if problems:
        verdict(
            "FAIL",
            "; ".join(problems)
            + "; a notification or response the server accepts must get 202 Accepted with "
            "no body",
            initialized,
        )
        return
    stray_said = "202, no body" if stray.status == 202 else f"refused with {stray.status}"
    verdict(
        "PASS",
        f"notifications/initialized: 202, no body; a stray JSON-RPC response: {stray_said}",
        initialized,
    )


def _check_delete(ctx: CheckContext, wire: Wire, verdict: Verdict) -> None:
    """PC-79: DELETE with the session id ends the session (then 404), or is answered 405. Runs last."""
    if wire.session_id is None:
        verdict("SKIP", "the server issued no Mcp-Session-Id at initialize: there is no session to end")
        return
    ctx.step("PC-79 DELETE the session")
    deleted = wire.send("DELETE", {}, wire.headers(content_type=None))
    if deleted.status == 405:
        verdict("PASS", "405: it does not let clients end sessions (the specification allows that)", deleted)
        return
    if not deleted.accepted:
        verdict(
            "WARN",
            f"DELETE with the session id: {deleted.describe()}; the specification expects the session "
            "ended, or 405",
            deleted,
        )
        return
    after = wire.ping()
    _refusal(
        verdict,
        after,
        expected=404,
        what=f"DELETE answered {deleted.status}; a ping with the ended session id afterwards",
        accepted=("FAIL", "after a session ends, requests carrying its id must be answered 404"),
    )
