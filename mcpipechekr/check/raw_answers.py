"""What a raw session's answers say, read alike by the lifecycle and the JSON-RPC checks.

Shared by check/spec_lifecycle.py (PC-30…PC-37) and check/spec_jsonrpc.py
(PC-38…PC-42), which run on the same raw sessions (check/spec_raw.py); a
module below both, so that neither imports the other back.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

from mcpipechekr.check.answers import one_line
from mcpipechekr.check.context import CheckContext
from mcpipechekr.check.spec_raw import RawSession, StdioRawSession, is_response, same_id

Record = Callable[..., None]


def _ended(session: RawSession) -> str:
    """Why the session is over: the exit status and the last stderr lines when there are any."""
    if isinstance(session, StdioRawSession):
        session.wait_exit(0.5)  # let the exit status land
    code = session.exit_code()
    what = "the raw session ended" + (f" (the server exited with code {code})" if code is not None else "")
    tail = session.stderr_tail()
    return what + (f"; its stderr ends:\n{tail}" if tail else "")


def _error(response: dict[str, Any] | None) -> tuple[int | None, str] | None:
    """(code, message) of an error response, None for anything else."""
    if not response or not isinstance(response.get("error"), dict):
        return None
    error = response["error"]
    code = error.get("code")
    return (code if isinstance(code, int) else None), one_line(str(error.get("message", "")))


def _result(response: dict[str, Any] | None) -> Any:
    return response.get("result") if response else None


def _then_ping(
    ctx: CheckContext, session: RawSession, wanted: Callable[[Any], bool]
) -> tuple[list[Any], bool]:
    """What `wanted` accepts of the answers to what was just sent, and whether a ping sent next is answered.

    Why a ping instead of a wait: a server answers in order, so the ping's answer
    marks the end of whatever the message got, and silence (the answer most SDKs
    give a batch or a malformed line) costs nothing instead of a timeout.
    """
    ping_id = session.new_id()
    session.send({"jsonrpc": "2.0", "id": ping_id, "method": "ping"})
    answers: list[Any] = []
    deadline = time.monotonic() + ctx.call_timeout_s
    while (left := deadline - time.monotonic()) > 0:
        value = session.wait_for(
            lambda v: (is_response(v) and same_id(ping_id, v.get("id"))) or wanted(v), left
        )
        if value is None:
            return answers, False
        if is_response(value) and same_id(ping_id, value.get("id")):
            late = session.wait_for(wanted, 0.05)  # one written just after the ping's answer
            return [*answers, *([late] if late is not None else [])], True
        answers.append(value)
    return answers, False
