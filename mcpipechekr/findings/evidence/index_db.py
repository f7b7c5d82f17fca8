"""index.db's tables, and opening it to read: what promote and the findings commands rely on.

The schema is here, apart from the refresh that writes it (`index.py`), so
that readers depend on the tables alone. `open_index` refuses an index that is
missing, corrupt or incomplete (`EvidenceUnavailable`, exit 3), with the same
test (`incomplete`) a refresh uses to decide on a full rebuild.
"""

from __future__ import annotations

import sqlite3

from mcpipechekr.findings.errors import EvidenceUnavailable
from mcpipechekr.findings.home import Home

SCHEMA_VERSION = "1"

DDL = """
CREATE TABLE IF NOT EXISTS calls (
    event_id TEXT NOT NULL,
    session TEXT NOT NULL,
    seq INTEGER NOT NULL,
    at TEXT NOT NULL,
    server TEXT NOT NULL,
    tool TEXT NOT NULL,
    template_id TEXT,
    arg_shape TEXT NOT NULL,
    outcome TEXT NOT NULL,
    err_code TEXT,
    retryable INTEGER,
    latency_ms REAL,
    request_bytes INTEGER NOT NULL,
    response_bytes INTEGER,
    probe INTEGER NOT NULL,
    source TEXT NOT NULL,
    line INTEGER NOT NULL
);
CREATE TABLE IF NOT EXISTS failure_windows (
    event_id TEXT PRIMARY KEY,
    session TEXT NOT NULL,
    server TEXT NOT NULL,
    tool TEXT NOT NULL,
    template_id TEXT,
    turns INTEGER NOT NULL,
    recovered INTEGER NOT NULL
);
CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT);
CREATE TABLE IF NOT EXISTS checkpoints (
    file TEXT PRIMARY KEY,
    size INTEGER NOT NULL,
    sha256 TEXT NOT NULL,
    lines INTEGER NOT NULL
);
"""
CALL_INDEXES = """
CREATE UNIQUE INDEX IF NOT EXISTS calls_by_event ON calls (event_id);
CREATE INDEX IF NOT EXISTS calls_by_session ON calls (session, seq);
CREATE INDEX IF NOT EXISTS calls_by_group ON calls (server, tool, template_id);
"""
WINDOW_INDEXES = """
CREATE INDEX IF NOT EXISTS windows_by_session ON failure_windows (session);
"""
INDEXES = CALL_INDEXES + WINDOW_INDEXES
"""Built after a full build's rows are in: sorting once is cheaper than keeping a B-tree in order row by
row. `calls_by_event` makes event ids unique (an incremental refresh relies on it, `INSERT OR IGNORE`)."""


def open_index(home: Home) -> sqlite3.Connection:
    """A read-only connection to a complete index.db; EvidenceUnavailable when there is none to read."""
    path = home.index_db
    if not path.is_file():
        raise EvidenceUnavailable(path, "no index yet")
    try:
        connection = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
    except sqlite3.Error as exc:
        raise EvidenceUnavailable(path, f"cannot be opened ({exc})") from None
    try:
        why = incomplete(connection)
    except sqlite3.Error as exc:
        connection.close()
        raise EvidenceUnavailable(path, f"is corrupt or not an index ({exc})") from None
    if why:
        connection.close()
        raise EvidenceUnavailable(path, why)
    return connection


def incomplete(connection: sqlite3.Connection) -> str | None:
    """Why a connected database is not a usable index, or None."""
    tables = {row[0] for row in connection.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}
    missing = {"calls", "failure_windows", "meta", "checkpoints"} - tables
    if missing:
        return f"is not a complete index (no table {', '.join(sorted(missing))})"
    meta = dict(connection.execute("SELECT key, value FROM meta").fetchall())
    if meta.get("schema") != SCHEMA_VERSION:
        return f"was written by another version (schema {meta.get('schema')!r}, expected {SCHEMA_VERSION!r})"
    if meta.get("complete") != "1":
        return "is incomplete (a refresh did not finish)"
    return None


def counts(connection: sqlite3.Connection) -> tuple[int, int]:
    """How many calls and failure windows the index holds."""
    calls = connection.execute("SELECT COUNT(*) FROM calls").fetchone()[0]
    windows = connection.execute("SELECT COUNT(*) FROM failure_windows").fetchone()[0]
    return calls, windows
