"""Attempts traced again: a later Phase 1 journal replaces the earlier records of its attempt.

The Phase 1 harness hands each attempt over as one new journal holding the
whole attempt (`records.append_records`, named `<time>-phase1-…`), its
session named after the attempt. An attempt is traced again in the same run
when one prompt was edited, a single doit target was rebuilt, or a loop goes
on after a kill; its capture journal is then written anew, and the new
records reach the home as a later journal with the same session.

Both journals tell the truth about a trace that happened, but only the later
one is the attempt the run kept (its trace file is the new one), so the index
counts the later records and drops the earlier: for a session held by a
Phase 1 journal, the rows of journals that sort before the last such journal
holding it are replaced (`owners`, `split`). A full rebuild and an incremental
refresh apply the same rule, so both give the same index.

Since event ids derive from the journal's life (`phase1.journal_life`), the
later records have ids of their own. Journals written before that derived
them from the attempt's name and position only, so the same id may name two
different calls; the later one is kept and the refresh says so in a warning
(`Replacement.warnings`), where otherwise it would refuse the conflict.

A limit: a trace that made no tool call hands over no journal (a call
record cannot say "this session had none"), so it replaces nothing, and the
earlier trace of its attempt still counts.

Passive capture journals are never replaced: each proxy process is a session
of its own, in one journal, and a repeated event id there is still a repeat
or a conflict, as `index.py` says.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from operator import itemgetter

from mcpipechekr.findings.evidence.journal_rows import CONTENT, SOURCE, Row

PHASE1_KIND = "phase1"
"""The writer kind in the name of a journal that holds whole attempts (`records.journal_name`)."""
_WHOLE_SESSIONS = re.compile(r"[0-9]{8}T[0-9]{6}\.[0-9]{6}Z-" + PHASE1_KIND + r"-[0-9]+-[0-9a-f]+\.jsonl")
_SESSION = itemgetter(1)


def holds_whole_attempts(journal: str) -> bool:
    """Whether a journal (by its file name) was written by the Phase 1 hand-off, whole attempts at once."""
    return _WHOLE_SESSIONS.fullmatch(journal) is not None


def owners(journals: Iterable[tuple[str, Sequence[Row]]]) -> dict[str, str]:
    """Session → the last Phase 1 journal holding it, for every session of the Phase 1 journals given.

    `journals` are (name, rows) in name order.
    """
    found: dict[str, str] = {}
    for name, rows in journals:
        if holds_whole_attempts(name):
            found.update(dict.fromkeys(map(_SESSION, rows), name))
    return found


def replaced(row: Row, owner_of: dict[str, str]) -> bool:
    """Whether a later Phase 1 journal holds this row's session: the row is an earlier trace of it."""
    owner = owner_of.get(row[1])
    return owner is not None and row[SOURCE] < owner


def split(name: str, rows: list[Row], owner_of: dict[str, str]) -> tuple[list[Row], list[Row]]:
    """The rows of journal `name` that count, and those a later Phase 1 journal replaces."""
    if not owner_of or not any(owner_of.get(session, "") > name for session in set(map(_SESSION, rows))):
        return rows, []
    kept, dropped = [], []
    for row in rows:
        (dropped if replaced(row, owner_of) else kept).append(row)
    return kept, dropped


@dataclass
class Replacement:
    """What replacing earlier traces did: rows dropped, how many were the same record again, warnings."""

    replaced: int = 0
    """Rows dropped for a later trace of their attempt (identical repeats not counted)."""
    attempts: set[str] = field(default_factory=set)
    """Sessions whose earlier rows were dropped."""
    repeats: int = 0
    """Dropped rows identical to a row kept: the same journal handed over twice."""
    warnings: list[str] = field(default_factory=list)

    def account(self, dropped: Iterable[Row], kept: Iterable[Row]) -> None:
        """Count `dropped` rows against the `kept` ones that replace them (matched by event id)."""
        dropped = list(dropped)
        if not dropped:
            return
        wanted = {row[0] for row in dropped}
        by_id: dict[str, Row] = {row[0]: row for row in kept if row[0] in wanted}
        reused: dict[tuple[str, str], int] = {}
        for row in dropped:
            later = by_id.get(row[0])
            if later is not None and tuple(later[CONTENT]) == tuple(row[CONTENT]):
                self.repeats += 1
                continue
            self.replaced += 1
            self.attempts.add(row[1])
            if later is not None:
                pair = (str(row[SOURCE]), str(later[SOURCE]))
                reused[pair] = reused.get(pair, 0) + 1
        for (earlier, later_source), count in sorted(reused.items()):
            self.warnings.append(
                f"journal {later_source} reuses {count} event id(s) of journal {earlier} for other calls "
                "(an attempt traced again, recorded before event ids told the two traces apart); "
                f"the records of {later_source} are kept"
            )
