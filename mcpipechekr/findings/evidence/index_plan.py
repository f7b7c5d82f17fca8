"""What a refresh of index.db must read: the journals now, their checkpoints, and whether a rebuild is due.

Apart from the refresh itself (`index.py`) because deciding is read-only: it
compares a snapshot of the journals with the checkpoints, and re-hashes the
indexed bytes on threads (`Prefixes`) while the refresh goes on, so a
journal changed before its end is found before anything is committed.
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import sqlite3
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from mcpipechekr.findings.evidence.index_db import incomplete
from mcpipechekr.findings.home import Home
from mcpipechekr.findings.locking import JournalLock

_HASH_BLOCK = 1 << 20


@dataclass(frozen=True)
class Journal:
    """A journal as the snapshot found it: its size then is where this refresh stops reading."""

    name: str
    path: Path
    size: int


@dataclass(frozen=True)
class Checkpoint:
    """What index.db holds of one journal: its first `size` bytes (`lines` lines), by their SHA-256."""

    size: int
    sha256: str
    lines: int


@dataclass
class Tail:
    """The bytes of one journal to parse: from `start` (after `lines` lines) to the snapshot size."""

    journal: Journal
    start: int
    lines: int


@dataclass
class Plan:
    """What a refresh does: a full rebuild (`reason` says why), the `tails` to add, or nothing."""

    mode: Literal["full", "incremental", "unchanged"]
    reason: str | None
    tails: list[Tail] = field(default_factory=list)
    prefixes: Prefixes | None = None


def snapshot(home: Home) -> list[Journal]:
    """Every journal and its size, taken while no writer is mid-record; sorted by name."""
    if not home.journals.is_dir():
        return []
    with JournalLock(home) as lock, lock.exclusive():
        found = []
        for entry in os.scandir(home.journals):
            if entry.name.startswith(".") or not entry.name.endswith(".jsonl") or not entry.is_file():
                continue
            found.append(Journal(entry.name, Path(entry.path), entry.stat().st_size))
    return sorted(found, key=lambda journal: journal.name)


def plan_refresh(home: Home, journals: list[Journal], pool: ThreadPoolExecutor) -> Plan:
    """Full, incremental or nothing to do; the reason says what forced a full rebuild.

    The indexed bytes are re-hashed on `pool` while the rest of the refresh
    goes on: a plan other than a full rebuild holds their `Prefixes`, which
    the incremental refresh (`index.py`) checks before it commits (and an unchanged plan here).
    """
    if not home.index_db.exists():
        return Plan("full", "no index yet")
    try:
        with contextlib.closing(sqlite3.connect(home.index_db)) as connection:
            why = incomplete(connection)
            if why:
                return Plan("full", f"the index {why}")
            checkpoints = {
                name: Checkpoint(size, digest, lines)
                for name, size, digest, lines in connection.execute(
                    "SELECT file, size, sha256, lines FROM checkpoints"
                )
            }
    except sqlite3.Error as exc:
        return Plan("full", f"the index could not be read ({exc})")
    by_name = {journal.name: journal for journal in journals}
    for name in sorted(checkpoints):
        if name not in by_name:
            return Plan("full", f"journal {name} was removed")
    last = max(checkpoints, default=None)
    prefixes = Prefixes(
        pool,
        [
            (journal, checkpoints[journal.name])
            for journal in journals
            if journal.name in checkpoints and journal.size >= checkpoints[journal.name].size
        ],
    )
    tails: list[Tail] = []
    for journal in journals:
        checkpoint = checkpoints.get(journal.name)
        if checkpoint is None:
            if last is not None and journal.name < last:
                return prefixes.rebuild(journal.name, f"new journal {journal.name} sorts before indexed ones")
            tails.append(Tail(journal, 0, 0))
            continue
        if journal.size < checkpoint.size:
            return prefixes.rebuild(journal.name, f"journal {journal.name} was truncated")
        if journal.size > checkpoint.size:
            if journal.name != last and _has_newline(journal.path, checkpoint.size, journal.size):
                return prefixes.rebuild(
                    journal.name, f"journal {journal.name} grew but is not the last one indexed"
                )
            tails.append(Tail(journal, checkpoint.size, checkpoint.lines))
    if not any(_has_newline(tail.journal.path, tail.start, tail.journal.size) for tail in tails):
        return prefixes.changed() or Plan("unchanged", None)
    return Plan("incremental", None, tails, prefixes)


class Prefixes:
    """The SHA-256 of every journal's indexed bytes, computed on threads while the refresh goes on.

    Re-hashing what was indexed is most of an incremental refresh's work, and
    reading and hashing both run outside the GIL, so it overlaps with parsing
    the new lines and writing them to the index.
    """

    def __init__(self, pool: ThreadPoolExecutor, prefixes: list[tuple[Journal, Checkpoint]]) -> None:
        self._expected = {journal.name: checkpoint.sha256 for journal, checkpoint in prefixes}
        self._digests: dict[str, Future[Any]] = {
            journal.name: pool.submit(_hash_prefix, journal.path, checkpoint.size)
            for journal, checkpoint in prefixes
        }

    def changed(self, through: str | None = None) -> Plan | None:
        """A full rebuild for the first journal (up to `through`, in name order) whose indexed bytes
        changed; None when none did."""
        for name in sorted(self._digests):
            if through is not None and name > through:
                break
            digest = self._digests[name].result()
            if digest is None or digest.hexdigest() != self._expected[name]:
                return Plan("full", f"indexed bytes of journal {name} changed", prefixes=self)
        return None

    def rebuild(self, through: str, reason: str) -> Plan:
        """A full rebuild for `reason`, found at journal `through`, unless an earlier journal changed
        (reading the log in order would have found that first)."""
        return self.changed(through) or Plan("full", reason, prefixes=self)

    def digest(self, name: str) -> Any:
        """The hashlib object over `name`'s indexed bytes, to continue over what is read after them."""
        return self._digests[name].result()

    def cancel(self) -> None:
        """Drop the hashing not started yet: a full rebuild hashes everything it reads anyway."""
        for future in self._digests.values():
            future.cancel()


def _hash_prefix(path: Path, size: int) -> Any:
    """SHA-256 of the first `size` bytes (a hashlib object, to continue over the tail), None if shorter."""
    digest = hashlib.sha256()
    remaining = size
    with open(path, "rb") as handle:
        while remaining:
            chunk = handle.read(min(_HASH_BLOCK, remaining))
            if not chunk:
                return None
            digest.update(chunk)
            remaining -= len(chunk)
    return digest


def _has_newline(path: Path, start: int, end: int) -> bool:
    """Whether bytes [start, end) hold a complete record (read in blocks; tails are usually small)."""
    with open(path, "rb") as handle:
        handle.seek(start)
        remaining = end - start
        while remaining > 0:
            chunk = handle.read(min(_HASH_BLOCK, remaining))
            if not chunk:
                return False
            if b"\n" in chunk:
                return True
            remaining -= len(chunk)
    return False
