"""Opening lifecycle.db: WAL mode, the current schema, short IMMEDIATE transactions.

Every module of the lifecycle opens the file through `lifecycle_db`, so each
open migrates a file left by an older version (`migrations.py`) and a full
disk is told as the file it could not write.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Iterator
from contextlib import contextmanager

from mcpipechekr._util.stops import database_error_line, is_storage_failure
from mcpipechekr.errors import UserError
from mcpipechekr.findings.home import Home
from mcpipechekr.findings.lifecycle.migrations import LATEST, migrate, schema_version
from mcpipechekr.findings.locking import lifecycle_setup_lock

BUSY_TIMEOUT_S = 30.0
"""How long a connection waits for another writer's transaction before failing."""


@contextmanager
def lifecycle_db(home: Home, *, autocommit: bool = True) -> Iterator[sqlite3.Connection]:
    """lifecycle.db in WAL mode, migrated to the current schema (`migrations.py`); closed on exit.

    Autocommit mode (the default): callers open their own `BEGIN IMMEDIATE`
    when they read and then write, so two verifiers of one finding cannot both
    extend a streak. `autocommit=False` keeps sqlite3's implicit transactions,
    for writers that wrap each write in `with conn:` (the store).
    """
    home.root.mkdir(parents=True, exist_ok=True)
    try:
        connection = sqlite3.connect(
            home.lifecycle_db, timeout=BUSY_TIMEOUT_S, isolation_level=None if autocommit else ""
        )
        try:
            if not _ready(connection):
                with lifecycle_setup_lock(home):
                    connection.execute("PRAGMA journal_mode=WAL")
                    migrate(connection)
            yield connection
        finally:
            connection.close()
    except sqlite3.Error as exc:
        if not is_storage_failure(exc):
            raise
        raise UserError(database_error_line(exc, home.lifecycle_db)) from exc  # a full disk names the file


def _ready(connection: sqlite3.Connection) -> bool:
    """In WAL mode and at the current schema version: the usual open, which takes no lock."""
    mode = connection.execute("PRAGMA journal_mode").fetchone()[0]
    return mode == "wal" and schema_version(connection) == LATEST


@contextmanager
def transaction(connection: sqlite3.Connection) -> Iterator[sqlite3.Connection]:
    """`BEGIN IMMEDIATE` … `COMMIT`, rolled back on any exception: a read-then-write that no other
    writer can interleave."""
    connection.execute("BEGIN IMMEDIATE")
    try:
        yield connection
    except BaseException:
        connection.execute("ROLLBACK")
        raise
    connection.execute("COMMIT")
