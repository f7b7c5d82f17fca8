"""Journal tails as rows, before anything is written: refused, replaced and repeated records settled.

Apart from the refresh (`index.py`) because both a full rebuild and an
incremental refresh parse this way, in memory, and only then write: a damaged
line (`JournalRejected`) leaves the index as it was.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from itertools import chain
from operator import itemgetter
from typing import Any

from mcpipechekr.findings.errors import JournalRejected
from mcpipechekr.findings.evidence.index_plan import Checkpoint, Tail
from mcpipechekr.findings.evidence.journal_rows import CONTENT, LINE, SOURCE, Row, parse_lines
from mcpipechekr.findings.evidence.records import MAX_RECORD_BYTES
from mcpipechekr.findings.evidence.retraced import Replacement, owners, split
from mcpipechekr.findings.home import Home


@dataclass
class Parsed:
    """One tail's rows, and what its checkpoint needs."""

    tail: Tail
    rows: list[Row]
    parsed_bytes: int
    new_lines: int
    pending_bytes: int
    digest: Any  # hashlib object over the tail's complete lines when it starts its journal, else None
    complete: bytes | None  # otherwise the lines, to hash once the prefix's hash is known

    def checkpoint(self, prefix: Any = None) -> Checkpoint:
        """The checkpoint after these lines; `prefix` hashes the bytes before them, if there are any."""
        digest = self.digest
        if digest is None:
            digest = prefix.copy()
            digest.update(self.complete)
        return Checkpoint(
            self.tail.start + self.parsed_bytes, digest.hexdigest(), self.tail.lines + self.new_lines
        )


def parse_tail(tail: Tail) -> Parsed:
    """The rows of one journal's complete new lines; JournalRejected on a damaged one."""
    journal = tail.journal
    with open(journal.path, "rb") as handle:
        handle.seek(tail.start)
        data = handle.read(journal.size - tail.start)
    end = data.rfind(b"\n") + 1
    complete, pending = data[:end], data[end:]
    if len(pending) > MAX_RECORD_BYTES:
        raise JournalRejected(
            journal.path,
            tail.lines + complete.count(b"\n") + 1,
            f"an unfinished record is already {len(pending)} bytes, over the {MAX_RECORD_BYTES}-byte limit",
        )
    rows = parse_lines(complete, journal.path, tail.lines)
    fresh = tail.start == 0
    return Parsed(
        tail,
        rows,
        len(complete),
        complete.count(b"\n"),
        len(pending),
        hashlib.sha256(complete) if fresh else None,
        None if fresh else complete,
    )


def drop_retraced(parsed: list[Parsed]) -> tuple[dict[str, str], Replacement]:
    """Drop the rows a later Phase 1 journal among `parsed` replaces (`retraced.py`).

    Returns each Phase 1 session's owner among them (an incremental refresh
    also drops the indexed rows they replace) and what was dropped.
    """
    owner_of = owners((part.tail.journal.name, part.rows) for part in parsed)
    replacement = Replacement()
    if not owner_of:
        return owner_of, replacement
    dropped: list[Row] = []
    for part in parsed:
        part.rows, gone = split(part.tail.journal.name, part.rows, owner_of)
        dropped.extend(gone)
    replacement.account(dropped, chain.from_iterable(part.rows for part in parsed))
    return owner_of, replacement


def dedupe(home: Home, parsed: list[Parsed]) -> tuple[list[Row], int]:
    """The rows with each event id once, and how many identical repeats were dropped.

    A repeat with different content is refused, naming the later line and the first.
    """
    rows = list(chain.from_iterable(part.rows for part in parsed))
    if len(set(map(itemgetter(0), rows))) == len(rows):
        return rows, 0  # the usual case, settled by one set of ids
    seen: dict[str, Row] = {}
    repeats = 0
    for part in parsed:
        for row in part.rows:
            first = seen.setdefault(row[0], row)
            if first is row:
                continue
            if first[CONTENT] != row[CONTENT]:
                raise conflict(home, row, first)
            repeats += 1
    return list(seen.values()), repeats


def conflict(home: Home, row: Row, first: Row) -> JournalRejected:
    return JournalRejected(
        home.journals / row[SOURCE],
        row[LINE],
        f"event id {row[0]} is already recorded with different content ({first[SOURCE]}, line {first[LINE]})",
    )
