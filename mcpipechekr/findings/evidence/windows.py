"""Failure windows: how many turns a session spent between a failing call and its recovery.

For each failing call (`outcome: error`), `turns` counts the calls after it in
its session up to and including the recovery, the next `ok` call of the same
tool on the same server (`recovered = 1`), or up to the session's end when it
never recovered (`recovered = 0`). A failure the client gets past with its
very next call costs one turn; a failure left as the session's last call
costs none, and says so with `recovered = 0`.

Calls with `outcome: unknown` are neither failures nor recoveries: the server
answered something malformed, and whether that helped the client is unknown.
Every failing call has its own window, even one inside another's.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from typing import Any

WindowInput = tuple[Any, ...]
"""(session, seq, event_id, server, tool, template_id, outcome): sorting these tuples gives the order
windows need."""

Window = tuple[Any, ...]
"""A `failure_windows` row: (event_id, session, server, tool, template_id, turns, recovered)."""

WINDOW_COLUMNS = ("session", "seq", "event_id", "server", "tool", "template_id", "outcome")
"""The `calls` columns a window is derived from, in `WindowInput` order."""
INPUT_SQL = f"SELECT {', '.join(WINDOW_COLUMNS)} FROM calls"
ORDER_SQL = " ORDER BY session, seq, event_id"


def failure_windows(calls: Iterable[WindowInput]) -> Iterator[Window]:
    """The windows of calls grouped by session and in seq order within it (as `ORDER_SQL` gives them)."""
    session_calls: list[WindowInput] = []
    current = None
    for call in calls:
        if call[0] != current:
            yield from _session_windows(session_calls)
            session_calls, current = [], call[0]
        session_calls.append(call)
    yield from _session_windows(session_calls)


def _session_windows(calls: list[WindowInput]) -> Iterator[Window]:
    """One pass from the end: the next `ok` position per (server, tool) is known when a failure is met."""
    next_ok: dict[tuple[str, str], int] = {}
    last = len(calls) - 1
    out = []
    for position in range(last, -1, -1):
        session, _seq, event_id, server, tool, template, outcome = calls[position]
        if outcome == "error":
            recovery = next_ok.get((server, tool))
            if recovery is None:
                out.append((event_id, session, server, tool, template, last - position, 0))
            else:
                out.append((event_id, session, server, tool, template, recovery - position, 1))
        elif outcome == "ok":
            next_ok[(server, tool)] = position
    yield from reversed(out)
