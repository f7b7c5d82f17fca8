"""Phase 1 capture journals converted to call records, the way the passive proxy would have written them.

The harness's capture proxy journals every message of an attempt
(`artifacts/journal.py`); after the attempt, `records_from_journal` replays
that journal through `tracker.CallTracker`, the same pairing the passive
`mcpipechekr capture` proxy uses live, so the two writers agree record for
record. It sits above both `records` (the format) and `tracker` (the pairing).

An attempt can be traced again in the same run (one edited prompt, a
one-target doit rebuild, a loop resumed after a kill): its journal is then
deleted and written anew under the same name. Event ids therefore derive from
the journal's life as well as from its name, the time its proxy started
(`journal_life`): converting one journal twice gives the same ids, a new
journal of the same attempt gives new ones. The index lets the later
records replace the earlier ones (`index.py`), so the attempt counts once.
"""

from __future__ import annotations

import re
from datetime import UTC, datetime, timedelta
from hashlib import sha256
from pathlib import Path

from mcpipechekr.artifacts.journal import JournalRecord, read_journal
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
    from it, the journal's life (`journal_life`) and the request's position,
    so converting twice yields the same records, and a re-traced attempt's
    journal new ones. Wall times come from the journal's `proxy_started` time plus the
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
    source = f"{path.name}@{journal_life(journal)}"
    tracker = CallTracker(
        salt=home.salt(),
        server=server,
        session=_session_token(session),
        event_id=lambda position: event_id_for(session, source, position),
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


def journal_life(journal: list[JournalRecord]) -> str:
    """What tells this journal from an earlier one of the same attempt: its first timed record.

    That is the proxy's `proxy_started` event: its wall-clock time (to the
    microsecond) and its monotonic time, both written once when the journal
    is created and never changed while it grows. Empty for a journal with no
    timed record (then ids derive from the name alone, as they always did).
    """
    anchor = next((record for record in journal if record.at is not None), None)
    if anchor is None or anchor.at is None:
        return ""
    return f"{anchor.at.astimezone(UTC).isoformat()}/{anchor.t!r}"


def _session_token(session: str) -> str:
    """A session name made safe for the record (an attempt name may hold any character)."""
    if re.fullmatch(SESSION_PATTERN, session):
        return session
    return "s-" + sha256(session.encode("utf-8")).hexdigest()[:32]
