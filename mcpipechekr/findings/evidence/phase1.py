"""Phase 1 capture journals converted to call records, the way the passive proxy would have written them.

The harness's capture proxy journals every message of an attempt
(`artifacts/journal.py`); after the attempt, `records_from_journal` replays
that journal through `tracker.CallTracker`, the same pairing the passive
`mcpipechekr capture` proxy uses live, so the two writers agree record for
record. It sits above both `records` (the format) and `tracker` (the pairing).
"""

from __future__ import annotations

import re
from datetime import UTC, datetime, timedelta
from hashlib import sha256
from pathlib import Path

from mcpipechekr.artifacts.journal import read_journal
from mcpipechekr.findings.evidence.records import SESSION_PATTERN, CallRecord, event_id_for
from mcpipechekr.findings.evidence.tracker import CallTracker
from mcpipechekr.findings.home import Home


def records_from_journal(
    journal_path: str | Path,
    server: str,
    session: str,
    *,
    home: Home,
) -> list[CallRecord]:
    """The call records of one Phase 1 capture journal (`artifacts/journal.py` lines), in request order.

    `session` names the attempt (e.g. the journal's stem); event ids derive
    from it and the request's position, so converting twice yields the same
    records. Wall times come from the journal's `proxy_started` time plus the
    monotonic clock's offsets. Unanswered requests become `error` records with
    `err_code: no_response` (or `server_crash`, or `timeout` when the client cancelled).
    """
    path = Path(journal_path)
    journal = sorted(read_journal(path), key=lambda record: record.seq)
    anchor = next((record for record in journal if record.at is not None), None)
    if anchor is not None and anchor.at is not None:
        base_at, base_t = anchor.at.astimezone(UTC), anchor.t
    else:
        base_at, base_t = datetime.fromtimestamp(path.stat().st_mtime, UTC), 0.0
    tracker = CallTracker(
        salt=home.salt(),
        server=server,
        session=_session_token(session),
        event_id=lambda position: event_id_for(session, path.name, position),
    )
    out: list[CallRecord] = []
    end_t = base_t
    for record in journal:
        end_t = max(end_t, record.t)
        if record.kind != "message" or record.message is None:
            if record.kind == "event" and record.event in ("server_exited", "upstream_error"):
                if record.event == "upstream_error" or record.expected is False:
                    out.extend(tracker.unanswered(record.t, reason="server_exited"))
            continue
        size = record.size or 0
        if record.direction == "to_server":
            at = base_at + timedelta(seconds=record.t - base_t)
            tracker.to_server(record.message, size, record.t, at)
        else:
            out.extend(tracker.to_agent(record.message, size, record.t))
    out.extend(tracker.unanswered(end_t, reason="ended"))
    return sorted(out, key=lambda record: record.seq)


def _session_token(session: str) -> str:
    """A session name made safe for the record (an attempt name may hold any character)."""
    if re.fullmatch(SESSION_PATTERN, session):
        return session
    return "s-" + sha256(session.encode("utf-8")).hexdigest()[:32]
