"""Locks between journal writers and the indexer (POSIX `flock`).

Writers (capture proxies, the Phase 1 harness) hold `journals.lock` *shared*
only while they write one record or one new journal: many write at once, and
none waits on another. The indexer takes it *exclusive* just long enough to
note every journal's size; whatever is appended afterwards lies past the size
it reads up to and waits for the next run. So a writer never waits for an
index refresh, only for the moment its sizes are taken.

Two indexers are kept apart by a second lock, `index.lock`, held exclusively
for the whole refresh: the second one waits, then finds the work done.

The lock files are created on first use and never removed (removing a lock
file while another process holds it would let a third one lock a new file).
"""

from __future__ import annotations

import fcntl
import os
from collections.abc import Iterator
from contextlib import AbstractContextManager, contextmanager
from pathlib import Path

from mcpipechekr.findings.home import Home


def _open(path: Path) -> int:
    path.parent.mkdir(parents=True, exist_ok=True)
    return os.open(path, os.O_RDWR | os.O_CREAT, 0o600)


class JournalLock:
    """`journals.lock`, opened once and reused: the passive proxy locks it for every record it writes."""

    def __init__(self, home: Home):
        self.path = home.lock_file
        self._fd: int | None = _open(self.path)

    @contextmanager
    def shared(self) -> Iterator[None]:
        """Held by a writer around one write; any number of writers hold it together."""
        with self._held(fcntl.LOCK_SH):
            yield

    @contextmanager
    def exclusive(self) -> Iterator[None]:
        """Held by the indexer while it takes the journals' sizes: no record is half written then."""
        with self._held(fcntl.LOCK_EX):
            yield

    @contextmanager
    def _held(self, mode: int) -> Iterator[None]:
        if self._fd is None:
            raise RuntimeError("the journal lock is closed")
        fcntl.flock(self._fd, mode)
        try:
            yield
        finally:
            fcntl.flock(self._fd, fcntl.LOCK_UN)

    def close(self) -> None:
        fd, self._fd = self._fd, None
        if fd is not None:
            os.close(fd)

    def __enter__(self) -> JournalLock:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()


@contextmanager
def _exclusive(path: Path) -> Iterator[None]:
    """Hold an exclusive lock on `path` (created if missing), waiting for any holder."""
    fd = _open(path)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        yield
    finally:
        os.close(fd)  # closing releases the lock


def indexer_lock(home: Home) -> AbstractContextManager[None]:
    """One index refresh at a time per home; a second refresh waits for the first."""
    return _exclusive(home.root / "index.lock")


def lifecycle_setup_lock(home: Home) -> AbstractContextManager[None]:
    """Held while an opener switches lifecycle.db to WAL and migrates it; openers of a ready file skip it.

    Why a lock of our own: switching a new file to WAL needs SQLite's exclusive
    lock and fails at once ("database is locked") instead of waiting when
    another process touches the file at that moment, so two commands opening a
    new home together would otherwise race. Migrations themselves are safe
    without it (`migrations.migrate` re-reads the version under `BEGIN IMMEDIATE`).
    """
    return _exclusive(home.root / "lifecycle.lock")
