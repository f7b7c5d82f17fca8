"""What a verification must be to count: a case a person accepted, run against the finding's own server.

Two forgeries this closes. A case is only as good as its expectation: an
agent that writes a case expecting the error a broken server gives (through
`mcpipechekr serve`, or by editing any file) would see it pass three times and
close the finding while the server is still broken. And a verification is
evidence about one server: counted for the finding of another server in the
same home, runs of a healthy `victim` close the findings of `otherserver`.

So lifecycle.db keeps two more things (schema: `migrations.m004`):

- `accepted_cases`: the cases a person accepted for a finding, by the hash of
  the case as validated (`credit.case_sha`). `mcpipechekr verify
  --accept-case` shows the case and asks, at a terminal only. A case whose
  text changes after that is another case, proposed again. A run of a case
  nobody accepted is recorded and counts for nothing.
- `finding_owners`: the server (`server_identity.ServerKey`) a finding belongs
  to, set when a run's bug report registers it, else by the first verification
  that counts, whose server must then bear the finding's name (config.yaml's,
  or the one it gives itself at initialize, which is what capture records).
  From then on a run counts only on a server of the same source: names are
  labels a person or a server picks, the source is where the code comes from,
  so a server reached as `-- python server.py` and as config.yaml's `notes`
  is one server, and `victim` is never `otherserver`.
"""

from __future__ import annotations

import sqlite3

from mcpipechekr.artifacts._base import utc_now
from mcpipechekr.findings.home import Home
from mcpipechekr.findings.lifecycle.database import lifecycle_db
from mcpipechekr.findings.server_identity import ServerKey


def accept_case(home: Home, finding_id: str, case_sha: str, probe: str) -> bool:
    """Record that a person accepted this case for this finding; False when it was accepted already."""
    with lifecycle_db(home) as connection:
        cursor = connection.execute(
            "INSERT OR IGNORE INTO accepted_cases (finding_id, case_sha, probe, accepted_at) "
            "VALUES (?, ?, ?, ?)",
            (finding_id, case_sha, probe, utc_now().isoformat()),
        )
        return cursor.rowcount == 1


def case_accepted(home: Home, finding_id: str, case_sha: str) -> bool:
    """Whether a person accepted this case (by its hash) for this finding."""
    if not home.lifecycle_db.exists():
        return False
    with lifecycle_db(home) as connection:
        return case_accepted_on(connection, finding_id, case_sha)


def case_accepted_on(connection: sqlite3.Connection, finding_id: str, case_sha: str) -> bool:
    row = connection.execute(
        "SELECT 1 FROM accepted_cases WHERE finding_id = ? AND case_sha = ?", (finding_id, case_sha)
    ).fetchone()
    return row is not None


def owner_on(connection: sqlite3.Connection, finding_id: str) -> ServerKey | None:
    """The server a finding belongs to, None while nothing has named it."""
    row = connection.execute(
        "SELECT server, source FROM finding_owners WHERE finding_id = ?", (finding_id,)
    ).fetchone()
    return None if row is None else ServerKey(row[0], row[1])


def other_server(
    connection: sqlite3.Connection, finding_id: str, server: ServerKey, names: frozenset[str] = frozenset()
) -> bool:
    """Whether a run of `server` (also known as `names`) is about another server than the finding's."""
    owner = owner_on(connection, finding_id)
    return not same_server(owner, _registered_server(connection, finding_id), server, names)


def same_server(
    owner: ServerKey | None, registered: str | None, server: ServerKey, names: frozenset[str] = frozenset()
) -> bool:
    """Whether `server` (also known as `names`) is the finding's: the owner's source when it has an
    owner, else the name it was registered under (any, when it has none)."""
    if owner is not None:
        return owner.source == server.source
    return registered is None or registered in {server.name, *names}


def _registered_server(connection: sqlite3.Connection, finding_id: str) -> str | None:
    row = connection.execute(
        "SELECT json_extract(body, '$.server') FROM findings WHERE id = ?", (finding_id,)
    ).fetchone()
    return row[0] if row is not None and isinstance(row[0], str) else None


def claim_owner_on(connection: sqlite3.Connection, finding_id: str, key: ServerKey) -> ServerKey:
    """Name `key` the finding's server unless one is named already; returns the owner.

    The name kept is the finding's own where it has one, so that messages speak of it as it is listed.
    """
    connection.execute(
        "INSERT OR IGNORE INTO finding_owners (finding_id, server, source, since) VALUES (?, ?, ?, ?)",
        (
            finding_id,
            _registered_server(connection, finding_id) or key.name,
            key.source,
            utc_now().isoformat(),
        ),
    )
    owner = owner_on(connection, finding_id)
    assert owner is not None
    return owner


def owners(home: Home) -> dict[str, ServerKey]:
    """Every finding whose server is known, and that server."""
    if not home.lifecycle_db.exists():
        return {}
    with lifecycle_db(home) as connection:
        rows = connection.execute("SELECT finding_id, server, source FROM finding_owners").fetchall()
    return {row[0]: ServerKey(row[1], row[2]) for row in rows}
