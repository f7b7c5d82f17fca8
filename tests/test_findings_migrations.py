"""lifecycle.db's versioned schema: new files, files from before versioning, reruns, newer files, races."""

from __future__ import annotations

import sqlite3
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from mcpipechekr.errors import UserError
from mcpipechekr.findings.home import Home
from mcpipechekr.findings.lifecycle.migrations import (
    LATEST,
    MIGRATIONS,
    m001_initial,
    migrate,
    schema_version,
)
from mcpipechekr.findings.lifecycle.states import claim_fix, current_state, last_probe, lifecycle_db

FID = "finding-00112233445566aa"

COLUMNS = {
    "lifecycle_events": [
        "seq",
        "finding_id",
        "at",
        "kind",
        "from_state",
        "to_state",
        "streak",
        "binding",
        "regression",
        "detail",
    ],
    "verifications": [
        "run_id",
        "finding_id",
        "at",
        "passed",
        "reason",
        "binding",
        "binding_json",
        "probe",
        "attempts",
        "credited",
        "origin",
    ],
    "findings": ["id", "origin", "bug_id", "body", "sightings", "registered_at", "updated_at"],
    "annotations": ["id", "event_id", "kind", "note", "created_at", "status", "finding_id"],
    "accepted_cases": ["finding_id", "case_sha", "probe", "accepted_at"],
    "finding_owners": ["finding_id", "server", "source", "since"],
}
INDEXES = {"lifecycle_events_finding", "annotations_event", "verifications_finding"}


def schema(db: sqlite3.Connection) -> list[tuple[str, str]]:
    return db.execute("SELECT name, sql FROM sqlite_master ORDER BY name").fetchall()


def tables(db: sqlite3.Connection) -> dict[str, list[str]]:
    names = [
        row[0]
        for row in db.execute(
            "SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite_%'"
        )
    ]
    return {name: [col[1] for col in db.execute(f"PRAGMA table_info({name})")] for name in names}


def v1_file(home: Home) -> None:
    """lifecycle.db as the code before versioning left it: m001's tables, user_version 0, a claim."""
    home.root.mkdir(parents=True, exist_ok=True)
    db = sqlite3.connect(home.lifecycle_db, isolation_level=None)
    try:
        db.execute("PRAGMA journal_mode=WAL")
        m001_initial(db)
        db.execute(
            "INSERT INTO lifecycle_events (finding_id, at, kind, from_state, to_state, streak, binding, "
            "regression, detail) VALUES (?, '2026-01-02T03:04:05+00:00', 'claim', 'open', 'fix-claimed', "
            "0, NULL, 0, 'abc123')",
            (FID,),
        )
        assert schema_version(db) == 0
    finally:
        db.close()


def test_a_new_database_migrates_to_exactly_the_expected_columns() -> None:
    db = sqlite3.connect(":memory:", isolation_level=None)
    assert migrate(db) == LATEST == len(MIGRATIONS)
    assert schema_version(db) == LATEST
    assert tables(db) == COLUMNS
    indexes = {row[0] for row in db.execute("SELECT name FROM sqlite_master WHERE type = 'index'")}
    assert INDEXES <= indexes


def test_rerunning_migrate_changes_nothing() -> None:
    db = sqlite3.connect(":memory:", isolation_level=None)
    migrate(db)
    before = schema(db)
    assert migrate(db) == 0
    assert schema(db) == before
    assert schema_version(db) == LATEST


def test_a_file_from_before_versioning_is_version_1_and_keeps_its_rows(tmp_path: Path) -> None:
    home = Home(tmp_path / "home")
    v1_file(home)
    assert current_state(home, FID) == ("fix-claimed", 0)
    with lifecycle_db(home) as db:
        assert schema_version(db) == LATEST
        assert tables(db) == COLUMNS
        assert db.execute("SELECT detail FROM lifecycle_events").fetchall() == [("abc123",)]
    claim_fix(home, FID, "def456")  # and it is written to as before
    assert current_state(home, FID) == ("fix-claimed", 0)


def test_verifications_from_before_origins_keep_their_effect_and_read_loop_or_unknown(tmp_path: Path) -> None:
    home = Home(tmp_path / "home")
    v1_file(home)
    with sqlite3.connect(home.lifecycle_db) as db:
        for run, probe in (("run-1", "run-evaluation"), ("cli-1", "/p/m.yaml#c")):
            db.execute(
                "INSERT INTO verifications (run_id, finding_id, at, passed, reason, binding, binding_json, "
                "probe, attempts, credited) VALUES (?, ?, '2026-01-02T03:04:05+00:00', 1, NULL, 'b', '{}', "
                "?, 1, 1)",
                (run, FID, probe),
            )
    with lifecycle_db(home) as db:
        rows = db.execute("SELECT run_id, origin, credited FROM verifications ORDER BY run_id").fetchall()
    assert rows == [("cli-1", "unknown", 1), ("run-1", "loop", 1)]
    assert last_probe(home, FID) == "/p/m.yaml#c"


def test_a_file_where_only_the_lifecycle_ran_gains_the_stores_tables(tmp_path: Path) -> None:
    """Before versioning, the store's tables appeared on the store's first open, not the lifecycle's."""
    home = Home(tmp_path / "home")
    v1_file(home)
    with sqlite3.connect(home.lifecycle_db) as db:
        db.execute("DROP TABLE findings")
        db.execute("DROP TABLE annotations")
    with lifecycle_db(home) as db:
        assert tables(db) == COLUMNS
        assert db.execute("SELECT COUNT(*) FROM lifecycle_events").fetchone() == (1,)


def test_a_file_newer_than_the_code_is_refused_untouched(tmp_path: Path) -> None:
    home = Home(tmp_path / "home")
    v1_file(home)
    with sqlite3.connect(home.lifecycle_db) as db:
        db.execute(f"PRAGMA user_version = {LATEST + 1}")
    with pytest.raises(UserError) as raised:
        current_state(home, FID)
    message = raised.value.message
    assert str(home.lifecycle_db) in message
    assert f"schema version {LATEST + 1}" in message
    assert "Upgrade MCPipeChekr" in message
    with sqlite3.connect(home.lifecycle_db) as db:
        assert schema_version(db) == LATEST + 1
        assert "verifications_finding" not in {name for name, _ in schema(db)}


def test_a_failing_migration_leaves_the_file_as_it_was(monkeypatch: pytest.MonkeyPatch) -> None:
    def broken(db: sqlite3.Connection) -> None:
        db.execute("CREATE TABLE half_done (x)")
        raise RuntimeError("boom")

    db = sqlite3.connect(":memory:", isolation_level=None)
    migrate(db)
    before = schema(db)
    monkeypatch.setattr("mcpipechekr.findings.lifecycle.migrations.MIGRATIONS", [*MIGRATIONS, broken])
    monkeypatch.setattr("mcpipechekr.findings.lifecycle.migrations.LATEST", LATEST + 1)
    with pytest.raises(RuntimeError, match="boom"):
        migrate(db)
    assert schema(db) == before
    assert schema_version(db) == LATEST


# Each child imports everything first, says so, waits for the go file, then opens every
# home in the same order as the others: they race on each new file.
RACER = textwrap.dedent(
    """
    import sys, time
    from pathlib import Path
    from mcpipechekr.findings.home import Home
    from mcpipechekr.findings.lifecycle.states import lifecycle_db

    go, homes = Path(sys.argv[1]), sys.argv[2:]
    print("ready", flush=True)
    deadline = time.monotonic() + 30
    while not go.exists():
        if time.monotonic() > deadline:
            sys.exit("no go file")
        time.sleep(0.001)
    for root in homes:
        with lifecycle_db(Home(Path(root))):
            pass
    """
)


@pytest.mark.slow
def test_processes_opening_a_new_file_at_once_all_succeed(tmp_path: Path) -> None:
    homes = [str(tmp_path / f"home-{n}") for n in range(20)]
    go = tmp_path / "go"
    racers = [
        subprocess.Popen(
            [sys.executable, "-c", RACER, str(go), *homes],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        for _ in range(3)
    ]
    try:
        for racer in racers:
            assert racer.stdout is not None
            assert racer.stdout.readline().strip() == "ready"
        go.touch()
        results = [racer.communicate(timeout=60) for racer in racers]
    finally:
        for racer in racers:
            if racer.poll() is None:
                racer.kill()
                racer.wait()
    assert [racer.returncode for racer in racers] == [0, 0, 0], [err for _, err in results]
    for root in homes:
        with sqlite3.connect(Path(root) / "lifecycle.db") as db:
            assert schema_version(db) == LATEST
            assert tables(db) == COLUMNS
