"""The versioned schema of lifecycle.db: ordered migrations, applied on every open.

index.db can be rebuilt from the journals, so it is simply discarded when its
schema changes; lifecycle.db holds what cannot be derived again (registered
findings, annotations, lifecycle moves, verification evidence), so its schema
only ever moves forward, one migration at a time, keeping every row.

Each migration is a function `mNNN_what_it_does(db)` registered with
`@migration`; the registration order is the order they run in, and a
migration, once released, is never edited (a change is a new migration).

The applied version is SQLite's `PRAGMA user_version`, not a table of applied
names: the migrations are one linear sequence, so a number says everything; it
is read from the file header without a table to create first; it is written in
the same transaction as the migrations it counts, so both commit or neither
does; and a file made before versioning already reads 0, which is exactly
"no migration recorded".

`migrate(db)` runs on every open (`lifecycle.states.lifecycle_db`) and is cheap when
nothing is pending: one header read. Otherwise it takes the write lock with
`BEGIN IMMEDIATE`, reads the version again under it and applies only what is
still pending, so two processes opening a new file at once serialize and the
second finds the work done. SQLite allows DDL inside a transaction: a
migration that fails leaves the file as it was.

A file written before versioning (user_version 0, with the tables of that
time) is version 1 as it stands: m001 is exactly that schema, created with
`IF NOT EXISTS`, so on such a file it adds only the tables the old code would
have created on a later open (a home where only the lifecycle ran has no
`findings` table yet) and changes nothing that exists. A file newer than this
code (a version above the last migration) is refused rather than written by
code that does not know its schema.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Callable

from mcpipechekr.errors import UserError

Migration = Callable[[sqlite3.Connection], None]

MIGRATIONS: list[Migration] = []
"""Every migration in the order it runs; migration N (1-based) brings a file to version N."""


def migration(fn: Migration) -> Migration:
    """Register `fn` as the next migration; its position in this module is its version."""
    MIGRATIONS.append(fn)
    return fn


@migration
def m001_initial(db: sqlite3.Connection) -> None:
    """The schema as it was before versioning: the lifecycle's tables and the store's."""
    db.execute(
        """CREATE TABLE IF NOT EXISTS lifecycle_events (
    seq INTEGER PRIMARY KEY AUTOINCREMENT,
    finding_id TEXT NOT NULL,
    at TEXT NOT NULL,
    kind TEXT NOT NULL,             -- claim | verification | manual-close
    from_state TEXT NOT NULL,
    to_state TEXT NOT NULL,
    streak INTEGER NOT NULL,
    binding TEXT,                   -- fingerprint the streak counts under
    regression INTEGER NOT NULL DEFAULT 0,
    detail TEXT                     -- commit, run id or the manual-closure note
)"""
    )
    db.execute("CREATE INDEX IF NOT EXISTS lifecycle_events_finding ON lifecycle_events (finding_id, seq)")
    db.execute(
        """CREATE TABLE IF NOT EXISTS verifications (
    run_id TEXT NOT NULL,
    finding_id TEXT NOT NULL,
    at TEXT NOT NULL,
    passed INTEGER NOT NULL,
    reason TEXT,                    -- a token such as error-returned; never raw text
    binding TEXT NOT NULL,
    binding_json TEXT NOT NULL,     -- the binding's fields: hashes, target, versions
    probe TEXT NOT NULL,            -- manifest:case, or run-evaluation
    attempts INTEGER NOT NULL,
    credited INTEGER NOT NULL,      -- 1 when the pass extended or started a streak
    PRIMARY KEY (run_id, finding_id)
)"""
    )
    db.execute(
        """CREATE TABLE IF NOT EXISTS findings (
    id TEXT PRIMARY KEY,
    origin TEXT NOT NULL,
    bug_id TEXT,
    body TEXT NOT NULL,
    sightings TEXT NOT NULL DEFAULT '{}',
    registered_at TEXT NOT NULL,
    updated_at TEXT NOT NULL
)"""
    )
    db.execute(
        """CREATE TABLE IF NOT EXISTS annotations (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    event_id TEXT NOT NULL,
    kind TEXT NOT NULL,
    note TEXT NOT NULL,
    created_at TEXT NOT NULL,
    status TEXT NOT NULL DEFAULT 'unknown',
    finding_id TEXT
)"""
    )
    db.execute("CREATE INDEX IF NOT EXISTS annotations_event ON annotations(event_id)")


@migration
def m002_verifications_by_finding(db: sqlite3.Connection) -> None:
    """Index verifications by finding.

    Their primary key starts with the run id, so `last_probe` (once per
    followed finding on every loop run) scanned the whole table, which grows
    with every run.
    """
    db.execute("CREATE INDEX verifications_finding ON verifications (finding_id, at)")


@migration
def m003_verification_origin(db: sqlite3.Connection) -> None:
    """Record who started each verification: `cli`, `loop` or `serve` (see `lifecycle/states.py`).

    Only runs the harness started on the project's own target may move a
    finding; a run started through `mcpipechekr serve` is kept as advisory
    evidence. A run recorded before origins were kept is `loop` when it was a
    run evaluation (only the loop records those) and `unknown` otherwise: a
    person's `verify` and the loop's reruns of a case cannot be told apart
    afterwards. Those rows keep every effect they had.
    """
    db.execute("ALTER TABLE verifications ADD COLUMN origin TEXT NOT NULL DEFAULT 'unknown'")
    db.execute("UPDATE verifications SET origin = 'loop' WHERE probe = 'run-evaluation'")


@migration
def m004_case_acceptance_and_owners(db: sqlite3.Connection) -> None:
    """Keep which cases a person accepted and which server owns each finding (`lifecycle/trust.py`).

    A case an agent wrote (through `mcpipechekr serve`, or any file anyone can
    edit) proves nothing until a person has read it and accepted it; a
    verification is evidence about one server only. Findings registered before
    this migration have no owner yet: the first counted verification names it.
    """
    db.execute(
        """CREATE TABLE accepted_cases (
    finding_id TEXT NOT NULL,
    case_sha TEXT NOT NULL,         -- sha256 of the case as validated (credit.case_sha)
    probe TEXT NOT NULL,            -- manifest#case where it was read when accepted
    accepted_at TEXT NOT NULL,
    PRIMARY KEY (finding_id, case_sha)
)"""
    )
    db.execute(
        """CREATE TABLE finding_owners (
    finding_id TEXT PRIMARY KEY,
    server TEXT NOT NULL,           -- the server's name
    source TEXT NOT NULL,           -- where its code comes from (findings/server_identity.py)
    since TEXT NOT NULL
)"""
    )


LATEST = len(MIGRATIONS)
"""The version a file has once every migration this code knows has run."""


def schema_version(db: sqlite3.Connection) -> int:
    """The file's applied version: 0 for a new file or one made before versioning."""
    return int(db.execute("PRAGMA user_version").fetchone()[0])


def migrate(db: sqlite3.Connection) -> int:
    """Bring the file to `LATEST` and return the versions applied now (0 when none was pending).

    Safe to rerun and to race: pending migrations run in one `BEGIN IMMEDIATE`
    transaction that re-reads the version first. Call it on a connection with
    no transaction open. Raises `UserError` for a file newer than this code.
    """
    if _checked(db, schema_version(db)) == LATEST:
        return 0
    db.execute("BEGIN IMMEDIATE")
    try:
        start = _checked(db, schema_version(db))
        for fn in MIGRATIONS[start:]:
            fn(db)
        db.execute(f"PRAGMA user_version = {LATEST:d}")
    except BaseException:
        db.execute("ROLLBACK")
        raise
    db.execute("COMMIT")
    return LATEST - start


def _checked(db: sqlite3.Connection, version: int) -> int:
    if version > LATEST:
        raise UserError(
            f"{_filename(db)} has schema version {version}, newer than this MCPipeChekr knows "
            f"(up to {LATEST}): it was written by a newer MCPipeChekr. Upgrade MCPipeChekr to use it."
        )
    return version


def _filename(db: sqlite3.Connection) -> str:
    for _seq, name, file in db.execute("PRAGMA database_list"):
        if name == "main":
            return file or "the in-memory lifecycle database"
    return "lifecycle.db"
