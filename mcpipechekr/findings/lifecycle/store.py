"""lifecycle.db: the authoritative store of findings and annotations.

index.db is derived from the journals and can be deleted at any time; what
people and the loop decided cannot be derived again, so it lives here:
registered findings (this module's `findings` table), annotations
(`annotations`), and the lifecycle module's states and verification evidence
in tables of its own. The schema of all of them is versioned in
`migrations.py` and brought up to date on every open, so any command can be
the first.

A finding row keeps the finding as JSON without its lifecycle state: the
state is owned by the lifecycle module and merged in by ``load_findings``.
Rows are never deleted: a finding whose evidence was lost keeps its last
metrics and its state. Transactions are short and the file is in WAL mode,
so a `findings` reader never waits for a `promote` writer.
"""

from __future__ import annotations

import contextlib
import sqlite3
from collections.abc import Iterator
from datetime import datetime

import orjson

from mcpipechekr.artifacts._base import utc_now
from mcpipechekr.artifacts.findings import Finding
from mcpipechekr.findings.home import Home
from mcpipechekr.findings.lifecycle.database import lifecycle_db
from mcpipechekr.findings.lifecycle.states import standings_on

_STATE_FIELDS = {"state", "streak"}


@contextlib.contextmanager
def lifecycle_connection(home: Home) -> Iterator[sqlite3.Connection]:
    """A connection to lifecycle.db, migrated to the current schema; closed on exit.

    Use ``with conn:`` around each write so it is one short transaction.
    """
    with lifecycle_db(home, autocommit=False) as conn:
        yield conn


def finding_body(finding: Finding) -> str:
    """The stored JSON of a finding: everything but the lifecycle state, keys sorted."""
    data = finding.model_dump(mode="json", exclude=_STATE_FIELDS)
    return orjson.dumps(data, option=orjson.OPT_SORT_KEYS).decode()


def upsert_finding(conn: sqlite3.Connection, finding: Finding, *, now: datetime | None = None) -> bool:
    """Register a finding or refresh its metrics; True when it was new. Call inside a transaction."""
    stamp = (now or utc_now()).isoformat()
    body = finding_body(finding)
    row = conn.execute("SELECT body FROM findings WHERE id = ?", (finding.id,)).fetchone()
    if row is None:
        conn.execute(
            "INSERT INTO findings (id, origin, bug_id, body, registered_at, updated_at)"
            " VALUES (?, ?, ?, ?, ?, ?)",
            (finding.id, finding.origin, finding.bug_id, body, stamp, stamp),
        )
        return True
    if row[0] != body:
        conn.execute("UPDATE findings SET body = ?, updated_at = ? WHERE id = ?", (body, stamp, finding.id))
    return False


def stored_findings(conn: sqlite3.Connection) -> list[Finding]:
    """Every registered finding as stored, state left at its default (open)."""
    rows = conn.execute("SELECT body FROM findings ORDER BY id").fetchall()
    return [Finding.model_validate(orjson.loads(body)) for (body,) in rows]


def _with_states(conn: sqlite3.Connection, findings: list[Finding]) -> list[Finding]:
    if not findings:
        return findings
    standing = standings_on(conn)
    merged = []
    for finding in findings:
        if finding.id in standing:
            state = standing[finding.id]
            finding = finding.model_copy(update={"state": state.state, "streak": state.streak})
        merged.append(finding)
    return merged


def load_findings(home: Home) -> list[Finding]:
    """Every registered finding with its lifecycle state and streak; [] when nothing is stored."""
    if not home.lifecycle_db.exists():
        return []
    with lifecycle_connection(home) as conn:
        return _with_states(conn, stored_findings(conn))


def load_finding(home: Home, finding_id: str) -> Finding | None:
    """One registered finding with its state, or None."""
    if not home.lifecycle_db.exists():
        return None
    with lifecycle_connection(home) as conn:
        row = conn.execute("SELECT body FROM findings WHERE id = ?", (finding_id,)).fetchone()
        if row is None:
            return None
        return _with_states(conn, [Finding.model_validate(orjson.loads(row[0]))])[0]
