"""The protocol checks' ids, names and groups, and how each of their verdicts is recorded.

Shared by the checks of Layer 1 (check/protocol.py) and its error-handling
probes (check/protocol_errors.py): a module below both, so that neither
imports the other back.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any, TypeVar

import mcp_types
import pydantic
from mcp import Client
from mcp.shared.exceptions import MCPError

from mcpipechekr.artifacts.check_report import CheckStatus
from mcpipechekr.check.answers import halt_reason, validation_reason
from mcpipechekr.check.context import CheckContext
from mcpipechekr.check.spec_features import FEATURE_CHECKS
from mcpipechekr.check.spec_http import HTTP_CHECK_NAMES, HTTP_GROUP
from mcpipechekr.check.spec_lifecycle import LIFECYCLE_CHECKS
from mcpipechekr.errors import ServerHalt
from mcpipechekr.server.connection import StructuredContentMismatch

T = TypeVar("T")

DISCOVERY, CALLS, ERRORS = "Discovery", "Tool calls", "Error handling"


@dataclass(frozen=True)
class CheckSpec:
    """A protocol check as docs/check.md and the reports name it."""

    id: str
    name: str
    group: str


CHECKS: dict[str, CheckSpec] = {
    spec.id: spec
    for spec in (
        CheckSpec("PC-01", "initialize", DISCOVERY),
        CheckSpec("PC-02", "tools/list", DISCOVERY),
        CheckSpec("PC-03", "tool definition", DISCOVERY),
        CheckSpec("PC-04", "tool names", DISCOVERY),
        CheckSpec("PC-05", "annotations", DISCOVERY),
        CheckSpec("PC-06", "expected tools", DISCOVERY),
        CheckSpec("PC-07", "resources", DISCOVERY),
        CheckSpec("PC-08", "prompts", DISCOVERY),
        CheckSpec("PC-10", "call with generated arguments", CALLS),
        CheckSpec("PC-11", "structuredContent matches outputSchema", CALLS),
        CheckSpec("PC-12", "read-only tool changes nothing", CALLS),
        CheckSpec("PC-13", "idempotent tool answers alike", CALLS),
        CheckSpec("PC-20", "unknown tool", ERRORS),
        CheckSpec("PC-21", "missing required argument", ERRORS),
        CheckSpec("PC-22", "wrong argument type", ERRORS),
        CheckSpec("PC-23", "unknown resource", ERRORS),
        CheckSpec("PC-24", "still answers after errors", ERRORS),
    )
}
"""Every Layer 1 check, in run order. Per-tool checks are recorded as `PC-10:TOOL`."""
CHECKS.update({check_id: CheckSpec(check_id, *spec) for check_id, spec in LIFECYCLE_CHECKS.items()})
CHECKS.update({id_: CheckSpec(id_, name, group) for id_, (name, group) in FEATURE_CHECKS.items()})
CHECKS.update(
    {check_id: CheckSpec(check_id, name, HTTP_GROUP) for check_id, name in HTTP_CHECK_NAMES.items()}
)


# --- plumbing -------------------------------------------------------------------------------------

Verdict = Callable[..., None]
"""`verdict(status, reason, duration_ms=…, details=…)` records one check's result."""


def _verdict(ctx: CheckContext, check_id: str, tool: str | None = None, **fixed: Any) -> Verdict:
    """A recorder for one check (on one tool): its id, name and group come from CHECKS."""
    spec = CHECKS[check_id]

    def record(status: CheckStatus, reason: str = "", **extra: Any) -> None:
        full_id = f"{check_id}:{tool}" if tool else check_id
        ctx.record(
            full_id, spec.name, "protocol", spec.group, status, reason, tool=tool, **{**fixed, **extra}
        )

    return record


def _lost(ctx: CheckContext, verdict: Verdict) -> bool:
    """Record a SKIP when the server is gone for good; True if so."""
    if ctx.server_lost is None:
        return False
    verdict("SKIP", ctx.server_lost)
    return True


def _session_call(ctx: CheckContext, during: str, request: Callable[[Client], Awaitable[T]]) -> T:
    """Run `request(client)` on the live session under the call timeout and the lifecycle's halt rules.

    For requests `ServerUnderTest` has no method for (resources, prompts, a
    tools/list that bypasses the client's cache); a dead or hung server raises
    `ServerHalt` exactly as `call_tool` does.
    """
    return ctx.server.request(during, request, ctx.call_timeout_s)


def _capabilities(ctx: CheckContext) -> mcp_types.ServerCapabilities:
    return ctx.server.capabilities


def _attempt(ctx: CheckContext, call: Callable[[], T]) -> tuple[T | None, Exception | None, float]:
    """Run one request: (answer, None, ms), or (None, the halt / malformed answer / JSON-RPC error, ms)."""
    with ctx.timed() as took:
        try:
            answer: T | None = call()
            error: Exception | None = None
        except (ServerHalt, pydantic.ValidationError, MCPError, StructuredContentMismatch) as exc:
            answer, error = None, exc
    return answer, error, took["ms"]


def _failed(ctx: CheckContext, verdict: Verdict, error: Exception, what: str) -> None:
    """FAIL for a request that halted the server, was malformed or was refused; restart after a halt."""
    if isinstance(error, ServerHalt):
        verdict("FAIL", halt_reason(error))
        ctx.recover()
    elif isinstance(error, pydantic.ValidationError):
        verdict("FAIL", f"malformed answer ({what}): {validation_reason(error)}")
    else:
        verdict("FAIL", f"{what}: {error}")
