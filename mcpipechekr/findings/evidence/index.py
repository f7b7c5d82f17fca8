"""index.db: the journals as SQLite tables, derived, rebuildable, refreshed incrementally.

Tables (`calls`, `failure_windows`, `meta`, `checkpoints`; DDL in
`index_db.py`) are read by promote and the findings commands through
`index_db.open_index`, which refuses an index that is missing, corrupt or
incomplete (`EvidenceUnavailable`, exit 3).
Nothing in index.db is authoritative: lifecycle.db holds what cannot be
derived, so deleting index.db and running `index` again loses nothing.

Journals are read in name order (their names start with their creation time)
as one log. A checkpoint per journal records how many bytes were indexed and
the SHA-256 of exactly those bytes: content, never file times. A refresh:

- re-hashes every checkpointed prefix; a journal that is gone, shorter, or
  whose indexed bytes differ forces a full rebuild, as does a new journal
  that sorts before the last one indexed or new records in a journal other
  than the last one (an append to an earlier file): the log changed before
  its end, and an incremental result could then differ from a rebuild;
- otherwise parses only the bytes past the checkpoints (the last journal's
  tail and any new journals) in one transaction. The re-hashing runs on
  threads meanwhile (it is most of the work, and needs no GIL); the
  transaction commits only once every prefix proved unchanged, and rolls
  back for a full rebuild when one did not;
- leaves an incomplete last line (no newline yet) for the next run;
- refuses, with the file and line, a complete line that is not a valid
  `CallRecord`, one over `MAX_RECORD_BYTES`, or an event id already indexed
  with different content (the same content again is skipped): nothing is
  committed, the previous index stays as it was.

An attempt traced again in the same run reaches the home as a later Phase 1
journal with the same session: its records replace the earlier ones, in an
incremental refresh as in a rebuild (`retraced.py`), so the attempt counts
once, and a rebuild succeeds on every set of journals the harness wrote, even
those from before re-traced attempts got event ids of their own.

A full rebuild writes a new file beside index.db (`.index.db.tmp-<pid>-<random>`,
the naming of `artifacts/atomic.py`) and renames it over the old one, so
readers see the old index or the new one, never a half-built one. A rebuild
killed outright (SIGKILL, a power loss) cannot remove its file; the next
refresh does, first thing, holding the indexer lock: no other refresh can be
writing one then, so every such file is a dead one's (`_remove_leftovers`).
It inserts the rows in one transaction, then builds the indexes (sorting
once is cheaper than keeping them in order row by row), with no rollback
journal and no syncs until the finished file is synced before the rename.

Whether a refresh can be incremental is decided in `index_plan.py`, the new
bytes become rows in `index_tails.py` (lines parsed by `journal_rows.py`),
and failure windows are derived in `windows.py`, for every session that got
new calls.
"""

from __future__ import annotations

import contextlib
import os
import sqlite3
import time
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from operator import itemgetter
from pathlib import Path
from typing import Literal

from mcpipechekr._util.collector import collector_paused
from mcpipechekr._util.stops import database_error_line, is_storage_failure
from mcpipechekr.artifacts.atomic import TMP_MARKER, fsync_dir, temp_name_for
from mcpipechekr.errors import UserError
from mcpipechekr.findings.errors import JournalRejected
from mcpipechekr.findings.evidence.index_db import (
    CALL_INDEXES,
    DDL,
    SCHEMA_VERSION,
    WINDOW_INDEXES,
    counts,
)
from mcpipechekr.findings.evidence.index_plan import Checkpoint, Journal, Plan, Tail, plan_refresh, snapshot
from mcpipechekr.findings.evidence.index_tails import Parsed, conflict, dedupe, drop_retraced, parse_tail
from mcpipechekr.findings.evidence.journal_rows import CALL_COLUMNS, CONTENT, SOURCE, Row
from mcpipechekr.findings.evidence.retraced import Replacement
from mcpipechekr.findings.evidence.windows import (
    INPUT_SQL,
    ORDER_SQL,
    WINDOW_COLUMNS,
    WindowInput,
    failure_windows,
)
from mcpipechekr.findings.home import Home
from mcpipechekr.findings.locking import indexer_lock

BATCH = 5_000
_HASH_THREADS = 4

_COLUMNS = ", ".join(CALL_COLUMNS)
_INSERT_NEW_CALL = f"INSERT INTO calls ({_COLUMNS}) VALUES ({', '.join('?' * len(CALL_COLUMNS))})"
_INSERT_CALL = f"INSERT OR IGNORE INTO calls ({_COLUMNS}) VALUES ({', '.join('?' * len(CALL_COLUMNS))})"
_INSERT_WINDOW = "INSERT INTO failure_windows VALUES (?, ?, ?, ?, ?, ?, ?)"


@dataclass
class IndexStats:
    """What a refresh did; `mode` is `full`, `incremental` or `unchanged`."""

    mode: Literal["full", "incremental", "unchanged"]
    reason: str | None = None
    journals: int = 0
    parsed_records: int = 0
    parsed_bytes: int = 0
    added: int = 0
    duplicates: int = 0
    pending_bytes: int = 0
    calls: int = 0
    windows: int = 0
    seconds: float = 0.0
    replaced: int = 0
    """Records dropped because a later journal holds a new trace of their attempt."""
    retraced: int = 0
    """Attempts whose earlier records were replaced."""
    leftovers: int = 0
    """Temporary files of killed rebuilds removed before this refresh."""
    warnings: list[str] = field(default_factory=list)
    """Lines for the user: what was indexed differently from how its journal reads alone."""

    def summary(self) -> str:
        """One line for the CLI."""
        if self.mode == "unchanged":
            head = f"index is up to date ({self.journals} journal(s))"
        else:
            why = f", {self.reason}" if self.reason else ""
            head = (
                f"indexed {self.added} new call record(s) from {self.journals} journal(s) "
                f"({self.mode}{why}; {self.parsed_bytes} bytes parsed"
                + (f", {self.duplicates} repeated record(s) skipped" if self.duplicates else "")
                + (
                    f", {self.replaced} record(s) of {self.retraced} attempt(s) traced again replaced"
                    if self.replaced
                    else ""
                )
                + ")"
            )
        tail = f"; the index holds {self.calls} call(s) and {self.windows} failure window(s)"
        pending = f"; {self.pending_bytes} byte(s) of an unfinished record wait" if self.pending_bytes else ""
        leftovers = ""
        if self.leftovers:
            leftovers = f"; removed {self.leftovers} temporary file(s) of an interrupted rebuild"
        return head + tail + pending + leftovers


def refresh_index(home: Home, rebuild: bool = False) -> IndexStats:
    """Bring index.db up to date with the journals (see the module docstring); returns what it did.

    Raises JournalRejected (exit 2) for a journal record that cannot be
    indexed; the previous index is then left exactly as it was.
    """
    started = time.perf_counter()
    home.root.mkdir(parents=True, exist_ok=True)
    workers = min(os.cpu_count() or 1, _HASH_THREADS)
    with (
        indexer_lock(home),
        _bulk_settings(),
        ThreadPoolExecutor(workers, thread_name_prefix="index-hash") as pool,
    ):
        leftovers = _remove_leftovers(home)
        journals = snapshot(home)
        plan = Plan("full", "rebuild requested") if rebuild else plan_refresh(home, journals, pool)
        outcome: IndexStats | Plan = plan
        if plan.mode == "incremental":
            outcome = _incremental(home, plan)  # or a full plan, when indexed bytes turned out changed
        if isinstance(outcome, IndexStats):
            stats = outcome
        elif outcome.mode == "full":
            if outcome.prefixes is not None:
                outcome.prefixes.cancel()
            stats = _full(home, journals, outcome.reason)
        else:
            stats = IndexStats("unchanged")
            with contextlib.closing(sqlite3.connect(home.index_db)) as connection:
                stats.calls, stats.windows = counts(connection)
    stats.journals = len(journals)
    stats.leftovers = leftovers
    stats.seconds = time.perf_counter() - started
    return stats


@contextlib.contextmanager
def _bulk_settings() -> Iterator[None]:
    """Two process-wide settings a refresh changes while it runs, and puts back.

    - No cyclic garbage collection: a refresh makes no reference cycles, but
      it makes a tuple per record, and every few hundred allocations the
      collector would walk them (and everything else the process holds).
    - `None` has an adapter in `sqlite3`'s registry. Python 3.11's `sqlite3`
      binds int, float and str directly but looks every other value up as an
      adaptable object, and for `None` that lookup ends in a formatted
      AttributeError; a record has up to three NULL columns, and the lookups
      were a tenth of a full index's work (half of it with the adapter, which
      hands `None` back to be bound as NULL just as before).
    """
    with collector_paused():
        previous = sqlite3.adapters.get(_NONE_ADAPTER_KEY)
        sqlite3.adapters[_NONE_ADAPTER_KEY] = _none_as_is
        try:
            yield
        finally:
            if previous is None:
                sqlite3.adapters.pop(_NONE_ADAPTER_KEY, None)
            else:
                sqlite3.adapters[_NONE_ADAPTER_KEY] = previous


_NONE_ADAPTER_KEY = (type(None), sqlite3.PrepareProtocol)


def _none_as_is(value: None) -> None:
    return value


def _remove_leftovers(home: Home) -> int:
    """Delete the temporary files of rebuilds that were killed; returns how many there were.

    Called with the indexer lock held: only a refresh writes these files, and
    only while it holds that lock, so none of them belongs to a live one.
    """
    prefix = f".{home.index_db.name}{TMP_MARKER}"
    removed = 0
    for entry in os.scandir(home.index_db.parent):
        if entry.name.startswith(prefix) and entry.is_file(follow_symlinks=False):
            with contextlib.suppress(FileNotFoundError):
                os.unlink(entry.path)
                removed += 1
    return removed


def _delete_retraced(
    connection: sqlite3.Connection, owner_of: dict[str, str], rows: list[Row], replacement: Replacement
) -> int:
    """Delete the indexed rows that new Phase 1 journals replace; returns how many were identical to
    a new row (they are inserted again, and count as repeats, not as new records)."""
    if not owner_of:
        return 0
    connection.execute("CREATE TEMP TABLE IF NOT EXISTS retraced (session TEXT PRIMARY KEY, source TEXT)")
    connection.execute("DELETE FROM retraced")
    connection.executemany("INSERT INTO retraced VALUES (?, ?)", owner_of.items())
    earlier = " FROM calls AS c JOIN temp.retraced AS r ON c.session = r.session WHERE c.source < r.source"
    columns = ", ".join(f"c.{name}" for name in CALL_COLUMNS)
    stored = connection.execute(f"SELECT {columns}{earlier}").fetchall()
    if not stored:
        return 0
    connection.execute(f"DELETE FROM calls WHERE rowid IN (SELECT c.rowid{earlier})")
    before = replacement.repeats
    replacement.account(stored, rows)
    return replacement.repeats - before


def _add_to_existing(connection: sqlite3.Connection, home: Home, rows: list[Row]) -> int:
    """Insert into an index that already holds calls; returns identical repeats, refuses conflicting ones."""
    repeats = 0
    for start in range(0, len(rows), BATCH):
        batch = rows[start : start + BATCH]
        before = connection.total_changes
        connection.executemany(_INSERT_CALL, batch)
        if connection.total_changes - before == len(batch):
            continue
        for row in batch:
            stored = connection.execute(
                f"SELECT {_COLUMNS} FROM calls WHERE event_id = ?", (row[0],)
            ).fetchone()
            if tuple(stored[SOURCE:]) == row[SOURCE:]:
                continue  # inserted just now
            if tuple(stored[CONTENT]) != row[CONTENT]:
                raise conflict(home, row, tuple(stored))
            repeats += 1
    return repeats


def _save_checkpoint(connection: sqlite3.Connection, name: str, checkpoint: Checkpoint) -> None:
    connection.execute(
        "INSERT OR REPLACE INTO checkpoints (file, size, sha256, lines) VALUES (?, ?, ?, ?)",
        (name, checkpoint.size, checkpoint.sha256, checkpoint.lines),
    )


def _parse_all(tails: list[Tail], stats: IndexStats) -> list[Parsed]:
    parsed = []
    for tail in tails:
        part = parse_tail(tail)
        stats.parsed_records += len(part.rows)
        stats.parsed_bytes += part.parsed_bytes
        stats.pending_bytes += part.pending_bytes
        parsed.append(part)
    return parsed


_WINDOW_FIELDS = itemgetter(*(CALL_COLUMNS.index(name) for name in WINDOW_COLUMNS))


def _window_input(rows: list[Row]) -> list[WindowInput]:
    """The windows' input from rows in memory, in `windows.ORDER_SQL` order."""
    projected = list(map(_WINDOW_FIELDS, rows))
    projected.sort()
    return projected


def _full(home: Home, journals: list[Journal], reason: str | None) -> IndexStats:
    """Build a new index beside the old one and rename it into place only when it is complete.

    Rows are deduplicated in memory, so the build needs no lookups, and the
    indexes are built after the rows are in. The file is written with no
    rollback journal and no syncs: until the rename nothing reads it, and a
    failed build is deleted. It is synced once, complete, before the rename.
    """
    stats = IndexStats("full", reason)
    tails = [Tail(journal, 0, 0) for journal in journals]
    parsed = _parse_all(tails, stats)
    _, replacement = drop_retraced(parsed)
    rows, stats.duplicates = dedupe(home, parsed)
    _note(stats, replacement)
    target = home.index_db
    tmp = target.parent / temp_name_for(target)
    try:
        connection = sqlite3.connect(tmp, isolation_level=None, check_same_thread=False)
        try:
            connection.execute("PRAGMA journal_mode = OFF")
            connection.execute("PRAGMA synchronous = OFF")
            connection.execute("PRAGMA cache_size = -131072")  # 128 MiB: the build never waits on its file
            connection.executescript(DDL)
            connection.execute("BEGIN")
            connection.executemany(_INSERT_NEW_CALL, rows)
            connection.execute("COMMIT")
            with ThreadPoolExecutor(2, thread_name_prefix="index-build") as pool:
                # While the windows are worked out here, SQLite sorts the calls' indexes without the GIL
                # and the rows written so far head for the disk.
                flushing = pool.submit(_sync, tmp)
                indexing = pool.submit(connection.executescript, CALL_INDEXES)
                windows = list(failure_windows(_window_input(rows)))
                indexing.result()
                flushing.result()
            connection.execute("BEGIN")
            connection.executemany(_INSERT_WINDOW, windows)
            for part in parsed:
                _save_checkpoint(connection, part.tail.journal.name, part.checkpoint())
            connection.execute("COMMIT")
            connection.executescript(WINDOW_INDEXES)
            connection.executemany(
                "INSERT INTO meta (key, value) VALUES (?, ?)",
                [("schema", SCHEMA_VERSION), ("complete", "1")],
            )
            stats.added = len(rows)
            stats.calls, stats.windows = counts(connection)
        finally:
            connection.close()
        _sync(tmp)
        with contextlib.suppress(FileNotFoundError):
            os.unlink(f"{target}-journal")  # a crashed refresh's rollback journal belongs to the old file
        os.replace(tmp, target)
        fsync_dir(target.parent)
    except sqlite3.Error as exc:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(tmp)
        if is_storage_failure(exc):  # a full disk names the file, not the temporary one
            raise UserError(database_error_line(exc, target)) from exc
        raise
    except BaseException:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(tmp)
        raise
    return stats


def _note(stats: IndexStats, replacement: Replacement) -> None:
    stats.duplicates += replacement.repeats
    stats.replaced = replacement.replaced
    stats.retraced = len(replacement.attempts)
    stats.warnings.extend(replacement.warnings)


def _sync(path: Path) -> None:
    with open(path, "rb") as handle:
        os.fsync(handle.fileno())


def _incremental(home: Home, plan: Plan) -> IndexStats | Plan:
    """Parse only the tails and add them in one transaction; a rejected record rolls everything back.

    The indexed bytes are still being re-hashed meanwhile (`Prefixes`): the
    transaction commits only once they proved unchanged. Otherwise it rolls
    back and the plan becomes a full rebuild, which is returned instead, as
    it is when a record is refused in a log that changed before its end.
    """
    assert plan.prefixes is not None
    prefixes = plan.prefixes
    stats = IndexStats("incremental")
    try:
        parsed = _parse_all(plan.tails, stats)
        owner_of, replacement = drop_retraced(parsed)
        rows, repeats = dedupe(home, parsed)
    except JournalRejected:
        rebuild = prefixes.changed()
        if rebuild is not None:
            return rebuild
        raise
    connection = sqlite3.connect(home.index_db, isolation_level=None)
    try:
        # Room for every page the refresh changes: a full cache would spill, syncing the journal each time.
        connection.execute("PRAGMA cache_size = -65536")
        # The rollback journal stays (its header zeroed) rather than being created and deleted each time.
        connection.execute("PRAGMA journal_mode = PERSIST")
        connection.execute("BEGIN IMMEDIATE")
        try:
            again = _delete_retraced(connection, owner_of, rows, replacement)
            known = _add_to_existing(connection, home, rows)
            _rederive_windows(connection, sorted({row[1] for row in rows}))
            rebuild = prefixes.changed()
            if rebuild is not None:
                connection.execute("ROLLBACK")
                return rebuild
            for part in parsed:
                name = part.tail.journal.name
                prefix = prefixes.digest(name) if part.digest is None else None
                _save_checkpoint(connection, name, part.checkpoint(prefix))
            connection.execute("COMMIT")
        except JournalRejected:
            connection.execute("ROLLBACK")
            rebuild = prefixes.changed()
            if rebuild is not None:
                return rebuild
            raise
        except BaseException:
            connection.execute("ROLLBACK")
            raise
        stats.added = len(rows) - known - again
        stats.duplicates = repeats + known
        _note(stats, replacement)
        stats.calls, stats.windows = counts(connection)
    finally:
        connection.close()
    return stats


def _rederive_windows(connection: sqlite3.Connection, sessions: list[str]) -> None:
    """Recompute the failure windows of the sessions that got new calls (a window may now have recovered)."""
    connection.execute("CREATE TEMP TABLE IF NOT EXISTS touched (session TEXT PRIMARY KEY)")
    connection.execute("DELETE FROM touched")
    connection.executemany("INSERT INTO touched VALUES (?)", ((session,) for session in sessions))
    connection.execute("DELETE FROM failure_windows WHERE session IN (SELECT session FROM touched)")
    rows = connection.execute(
        INPUT_SQL + " WHERE session IN (SELECT session FROM touched)" + ORDER_SQL
    ).fetchall()
    connection.executemany(_INSERT_WINDOW, failure_windows(rows))
